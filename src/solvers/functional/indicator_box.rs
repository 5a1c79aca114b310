//! Indicators of boxes (pointwise bounds) and their conjugates, the box support functions.

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional};
use crate::operator::Scratch;
use crate::{Element, Error, Pointwise, Result, Scalar, Space};

fn check_bounds(lo: f64, hi: f64, name: &str) -> Result<()> {
    if !(lo <= hi) || lo == f64::INFINITY || hi == f64::NEG_INFINITY {
        return Err(Error::invalid(format!(
            "{name}: needs bounds lo <= hi with lo < ∞ and hi > −∞, got [{lo}, {hi}]"
        )));
    }
    Ok(())
}

/// The indicator of the box `{x : lo ≤ x ≤ hi}` (pointwise): 0 inside, `+∞` outside.
///
/// Infinite bounds are allowed (`IndicatorBox::new(space, 0.0, f64::INFINITY)` is the
/// non-negativity constraint). Proximal operator: the projection `clamp(x, lo, hi)`, exact;
/// conjugate: the support function [`IndicatorBoxConvexConj`].
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{Functional, IndicatorBox};
/// let s = rn::<f64>(&[3])?;
/// let f = IndicatorBox::new(s.clone(), -1.0, 1.0)?;
/// let x = s.element_from_vec(vec![-3.0, 0.5, 2.0])?;
/// assert_eq!(f.value(&x)?, f64::INFINITY);
/// let p = f.proximal(1.0, &x)?;
/// assert_eq!(p.as_slice()?, &[-1.0, 0.5, 1.0]);
/// assert_eq!(f.value(&p)?, 0.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct IndicatorBox<T: Scalar> {
    space: Space<T>,
    lo: f64,
    hi: f64,
    tmp: Scratch<T>,
}

impl<T: Scalar> IndicatorBox<T> {
    /// The indicator of `[lo, hi]` (pointwise) on `space`.
    pub fn new(space: Space<T>, lo: f64, hi: f64) -> Result<Self> {
        check_bounds(lo, hi, "IndicatorBox")?;
        Ok(Self {
            tmp: Scratch::new(space.clone()),
            space,
            lo,
            hi,
        })
    }

    /// The bounds `(lo, hi)`.
    pub fn bounds(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }

    fn clamp(&self) -> Pointwise<T> {
        Pointwise::Clamp(T::of(self.lo), T::of(self.hi))
    }
}

impl<T: Scalar> Functional<T> for IndicatorBox<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.tmp.with(|t| {
            self.space.pointwise(self.clamp(), x, t)?;
            Ok(if self.space.dist(x, t)? > 0.0 {
                f64::INFINITY
            } else {
                0.0
            })
        })
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "IndicatorBox")?;
        check_io(&self.space, x, out, "IndicatorBox proximal")?;
        self.space.pointwise(self.clamp(), x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(IndicatorBoxConvexConj::new(
            self.space.clone(),
            self.lo,
            self.hi,
        )?))
    }
    fn name(&self) -> String {
        format!("IndicatorBox[{}, {}]", self.lo, self.hi)
    }
}

/// The support function of the box `[lo, hi]`, the conjugate of [`IndicatorBox`]:
/// `f(y) = sup_{lo ≤ x ≤ hi} ⟨x, y⟩ = ∫ hi · max(y, 0) + lo · min(y, 0)`, `+∞` where an
/// infinite bound meets a value of the matching sign.
///
/// Proximal operator `prox_{σ f}(y) = y − clamp(y, σ lo, σ hi)`. With `lo = −1`, `hi = 1` this
/// is the L1 norm.
pub struct IndicatorBoxConvexConj<T: Scalar> {
    space: Space<T>,
    lo: f64,
    hi: f64,
    tmp: Scratch<T>,
}

impl<T: Scalar> IndicatorBoxConvexConj<T> {
    /// The support function of `[lo, hi]` on `space`.
    pub fn new(space: Space<T>, lo: f64, hi: f64) -> Result<Self> {
        check_bounds(lo, hi, "IndicatorBoxConvexConj")?;
        Ok(Self {
            tmp: Scratch::new(space.clone()),
            space,
            lo,
            hi,
        })
    }
}

impl<T: Scalar> Functional<T> for IndicatorBoxConvexConj<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, y: &Element<T>) -> Result<f64> {
        self.tmp.with(|t| {
            let mut v = 0.0;
            // ∫ max(y, 0) ≥ 0 and ∫ min(y, 0) ≤ 0 are zero only when no entry has that sign.
            self.space
                .pointwise(Pointwise::MaxScalar(T::zero()), y, t)?;
            let pos = self.space.integral(t)?;
            if pos > 0.0 {
                if self.hi.is_infinite() {
                    return Ok(f64::INFINITY);
                }
                v += self.hi * pos;
            }
            self.space
                .pointwise(Pointwise::MinScalar(T::zero()), y, t)?;
            let neg = self.space.integral(t)?;
            if neg < 0.0 {
                if self.lo.is_infinite() {
                    return Ok(f64::INFINITY);
                }
                v += self.lo * neg;
            }
            Ok(v)
        })
    }
    fn proximal_into(&self, sigma: f64, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "IndicatorBoxConvexConj")?;
        check_io(&self.space, y, out, "IndicatorBoxConvexConj proximal")?;
        let clamp = Pointwise::Clamp(T::of(sigma * self.lo), T::of(sigma * self.hi));
        self.space.pointwise(clamp, y, out)?;
        self.space.axpby(T::one(), y, -T::one(), out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(IndicatorBox::new(
            self.space.clone(),
            self.lo,
            self.hi,
        )?))
    }
    fn name(&self) -> String {
        format!("IndicatorBoxConvexConj[{}, {}]", self.lo, self.hi)
    }
}

/// The indicator of the non-negative elements `{x : x ≥ 0}` (the box `[0, ∞)`).
///
/// Proximal operator `max(x, 0)`; conjugate the indicator of `{y : y ≤ 0}`.
pub struct IndicatorNonnegativity<T: Scalar> {
    inner: IndicatorBox<T>,
}

impl<T: Scalar> IndicatorNonnegativity<T> {
    /// The non-negativity constraint on `space`.
    pub fn new(space: Space<T>) -> Self {
        Self {
            inner: IndicatorBox {
                tmp: Scratch::new(space.clone()),
                space,
                lo: 0.0,
                hi: f64::INFINITY,
            },
        }
    }
}

impl<T: Scalar> Functional<T> for IndicatorNonnegativity<T> {
    fn domain(&self) -> &Space<T> {
        self.inner.domain()
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.inner.value(x)
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "IndicatorNonnegativity")?;
        check_io(&self.inner.space, x, out, "IndicatorNonnegativity proximal")?;
        self.inner
            .space
            .pointwise(Pointwise::MaxScalar(T::zero()), x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        self.inner.convex_conj()
    }
    fn name(&self) -> String {
        "IndicatorNonnegativity".into()
    }
}

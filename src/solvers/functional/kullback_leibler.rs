//! The Kullback–Leibler divergence to a prior, and its convex conjugate.

use std::sync::Arc;

use super::helpers::{any_above, check_io, check_sigma};
use super::{Func, Functional};
use crate::operator::Scratch;
use crate::{Element, Error, Pointwise, Pointwise2, Result, Scalar, Space};

/// Checks that the prior belongs to the space and is finite and non-negative; `None` is the
/// prior 1.
fn make_prior<T: Scalar>(
    space: &Space<T>,
    prior: Option<Element<T>>,
    name: &str,
) -> Result<Arc<Element<T>>> {
    let g = match prior {
        Some(g) => g,
        None => return Ok(Arc::new(space.one()?)),
    };
    space.check_member(&g, format_args!("{name}: prior"))?;
    let n = space.norm(&g)?;
    let mut t = space.zero()?;
    space.pointwise(Pointwise::MinScalar(T::zero()), &g, &mut t)?;
    if !n.is_finite() || space.integral(&t)? < 0.0 {
        return Err(Error::invalid(format!(
            "{name}: the prior must be finite and non-negative"
        )));
    }
    Ok(Arc::new(g))
}

/// ODL's Kullback–Leibler functional with prior `g ≥ 0`:
/// `KL(x) = ∫ x − g + g ln(g/x)` for `x ≥ 0` (with `0 ln 0 = 0`; `+∞` where `x = 0 < g`), and
/// `+∞` if some `x < 0`. Without a prior, `g = 1`.
///
/// It is the negative Poisson log-likelihood of data `g` up to a constant (the data term for
/// emission tomography). Gradient `1 − g/x`; proximal operator
/// `prox_{σ KL}(x) = ((x − σ) + √((x − σ)² + 4σg)) / 2`; conjugate
/// [`KullbackLeiblerConvexConj`].
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{Functional, KullbackLeibler};
/// let s = rn::<f64>(&[2])?;
/// let g = s.element_from_vec(vec![1.0, 2.0])?;
/// let kl = KullbackLeibler::new(s.clone(), Some(g.try_clone()?))?;
/// assert_eq!(kl.value(&g)?, 0.0); // minimal at x = g
/// assert_eq!(kl.value(&s.element_from_vec(vec![1.0, -1.0])?)?, f64::INFINITY);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct KullbackLeibler<T: Scalar> {
    space: Space<T>,
    prior: Arc<Element<T>>,
    tmp: Scratch<T>,
}

impl<T: Scalar> KullbackLeibler<T> {
    /// The KL divergence to `prior` (non-negative; `None` means 1) on `space`.
    pub fn new(space: Space<T>, prior: Option<Element<T>>) -> Result<Self> {
        let prior = make_prior(&space, prior, "KullbackLeibler")?;
        Ok(Self::from_parts(space, prior))
    }

    fn from_parts(space: Space<T>, prior: Arc<Element<T>>) -> Self {
        Self {
            tmp: Scratch::new(space.clone()),
            space,
            prior,
        }
    }

    /// The prior `g`.
    pub fn prior(&self) -> &Element<T> {
        &self.prior
    }
}

impl<T: Scalar> Functional<T> for KullbackLeibler<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.tmp.with(|t| {
            self.space
                .pointwise2(Pointwise2::KlDiv, &self.prior, x, t)?;
            self.space.integral(t)
        })
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let s = &self.space;
        s.pointwise2(Pointwise2::DivOrZero, &self.prior, x, out)?;
        s.scale(-T::one(), out)?;
        s.pointwise_inplace(Pointwise::AddScalar(T::one()), out)
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "KullbackLeibler")?;
        check_io(&self.space, x, out, "KullbackLeibler proximal")?;
        let s = &self.space;
        self.tmp.with(|t| {
            s.pointwise(Pointwise::AddScalar(T::of(-sigma)), x, out)?; // d = x − σ
            s.pointwise(Pointwise::Square, out, t)?;
            s.axpby(T::of(4.0 * sigma), &self.prior, T::one(), t)?;
            s.pointwise_inplace(Pointwise::Sqrt, t)?; // √(d² + 4σg)
            s.axpby(T::of(0.5), t, T::of(0.5), out)
        })
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(KullbackLeiblerConvexConj::from_parts(
            self.space.clone(),
            Arc::clone(&self.prior),
        )))
    }
    fn name(&self) -> String {
        "KullbackLeibler".into()
    }
}

/// The convex conjugate of [`KullbackLeibler`] with prior `g`:
/// `KL*(y) = −∫ g ln(1 − y)` when all `y ≤ 1` (so `+∞` if `y = 1` where `g > 0`), and `+∞` if
/// some `y > 1`.
///
/// Gradient `g / (1 − y)`; proximal operator (ODL's `proximal_convex_conj_kl`)
/// `prox_{σ KL*}(y) = (1 + y − √((y − 1)² + 4σg)) / 2`: the dual step of PDHG with a
/// Poisson data term.
pub struct KullbackLeiblerConvexConj<T: Scalar> {
    space: Space<T>,
    prior: Arc<Element<T>>,
    tmp: Scratch<T>,
    tmp2: Scratch<T>,
}

impl<T: Scalar> KullbackLeiblerConvexConj<T> {
    /// The conjugate of the KL divergence to `prior` (non-negative; `None` means 1).
    pub fn new(space: Space<T>, prior: Option<Element<T>>) -> Result<Self> {
        let prior = make_prior(&space, prior, "KullbackLeiblerConvexConj")?;
        Ok(Self::from_parts(space, prior))
    }

    fn from_parts(space: Space<T>, prior: Arc<Element<T>>) -> Self {
        Self {
            tmp: Scratch::new(space.clone()),
            tmp2: Scratch::new(space.clone()),
            space,
            prior,
        }
    }

    /// The prior `g`.
    pub fn prior(&self) -> &Element<T> {
        &self.prior
    }

    /// `t = 1 − y`.
    fn one_minus(&self, y: &Element<T>, t: &mut Element<T>) -> Result<()> {
        self.space.scaled(-T::one(), y, t)?;
        self.space
            .pointwise_inplace(Pointwise::AddScalar(T::one()), t)
    }
}

impl<T: Scalar> Functional<T> for KullbackLeiblerConvexConj<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, y: &Element<T>) -> Result<f64> {
        let s = &self.space;
        self.tmp.with(|t| {
            if any_above(s, y, T::one(), t)? {
                return Ok(f64::INFINITY);
            }
            self.one_minus(y, t)?;
            self.tmp2.with(|u| {
                // g ln(1 − y), 0 where g = 0, −∞ where y = 1 < g
                s.pointwise2(Pointwise2::XLogY, &self.prior, t, u)?;
                Ok(-s.integral(u)?)
            })
        })
    }
    fn gradient_into(&self, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_io(&self.space, y, out, "KullbackLeiblerConvexConj gradient")?;
        self.tmp.with(|t| {
            self.one_minus(y, t)?;
            self.space.divide(&self.prior, t, out)
        })
    }
    fn proximal_into(&self, sigma: f64, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "KullbackLeiblerConvexConj")?;
        check_io(&self.space, y, out, "KullbackLeiblerConvexConj proximal")?;
        let s = &self.space;
        self.tmp.with(|t| {
            s.pointwise(Pointwise::AddScalar(-T::one()), y, out)?; // d = y − 1
            s.pointwise(Pointwise::Square, out, t)?;
            s.axpby(T::of(4.0 * sigma), &self.prior, T::one(), t)?;
            s.pointwise_inplace(Pointwise::Sqrt, t)?; // √(d² + 4σg)
            s.axpby(T::of(-0.5), t, T::of(0.5), out)?; // (d − √…)/2
            s.pointwise_inplace(Pointwise::AddScalar(T::one()), out)
        })
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(KullbackLeibler::from_parts(
            self.space.clone(),
            Arc::clone(&self.prior),
        )))
    }
    fn name(&self) -> String {
        "KullbackLeiblerConvexConj".into()
    }
}

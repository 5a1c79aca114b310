//! Pieces shared by the functionals: argument checks, the pointwise magnitude of tensor and
//! vector fields, and set-membership tests made of vector operations.

use crate::operator::{Operator, Scratch};
use crate::{Element, Error, Pointwise, PointwiseNorm, Result, Scalar, Space};

/// Errors unless the proximal step `sigma` is finite and positive.
pub(super) fn check_sigma(sigma: f64, name: &str) -> Result<()> {
    if sigma.is_finite() && sigma > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{name}: the proximal step must be finite and positive, got {sigma}"
        )))
    }
}

/// Errors unless `x` and `out` belong to `space`.
pub(super) fn check_io<T: Scalar>(
    space: &Space<T>,
    x: &Element<T>,
    out: &Element<T>,
    name: &str,
) -> Result<()> {
    space.check_member(x, format_args!("{name}: input"))?;
    space.check_member(out, format_args!("{name}: output"))
}

/// How far outside a unit ball a point may lie, relative to the radius, and still count as
/// inside: a few rounding units, so that projections computed in floating point belong to the
/// ball.
pub(super) fn ball_slack<T: Scalar>() -> f64 {
    8.0 * T::EPS
}

/// Whether some entry of `x` exceeds `bound` (NaN entries are ignored); `tmp` is overwritten.
pub(super) fn any_above<T: Scalar>(
    space: &Space<T>,
    x: &Element<T>,
    bound: T,
    tmp: &mut Element<T>,
) -> Result<bool> {
    // min(x, bound) differs from x exactly where x > bound.
    space.pointwise(Pointwise::MinScalar(bound), x, tmp)?;
    Ok(space.dist(x, tmp)? > 0.0)
}

/// The pointwise magnitude of the elements of a tensor space (`|x|`) or of a power space of a
/// tensor space (the Euclidean norm over the components, `|x|₂`), with the operations that
/// scale a field by a scalar field.
pub(super) struct Magnitude<T: Scalar> {
    space: Space<T>,
    field: Space<T>,
    norm: Option<PointwiseNorm<T>>,
    tmp: Scratch<T>,
}

impl<T: Scalar> Magnitude<T> {
    pub(super) fn new(space: &Space<T>, name: &str) -> Result<Self> {
        let norm = if space.is_product() {
            Some(PointwiseNorm::new(space.clone(), 2.0).map_err(|e| {
                Error::invalid(format!(
                    "{name} needs a tensor space or a power space of one, got {space}: {e}"
                ))
            })?)
        } else {
            None
        };
        let field = match &norm {
            Some(n) => n.range().clone(),
            None => space.clone(),
        };
        Ok(Self {
            space: space.clone(),
            tmp: Scratch::new(field.clone()),
            field,
            norm,
        })
    }

    /// The space of the magnitude field.
    pub(super) fn field_space(&self) -> &Space<T> {
        &self.field
    }

    /// A cached temporary of the field space.
    pub(super) fn with_field<R>(&self, f: impl FnOnce(&mut Element<T>) -> Result<R>) -> Result<R> {
        self.tmp.with(f)
    }

    /// `m = |x|` pointwise.
    pub(super) fn compute(&self, x: &Element<T>, m: &mut Element<T>) -> Result<()> {
        match &self.norm {
            Some(n) => n.apply_into(x, m),
            None => self.space.abs(x, m),
        }
    }

    /// `out = w · x` with the scalar field `w` multiplying every component.
    pub(super) fn scale_by(
        &self,
        w: &Element<T>,
        x: &Element<T>,
        out: &mut Element<T>,
    ) -> Result<()> {
        match &self.norm {
            Some(_) => {
                self.space.check_member(x, "pointwise scaling")?;
                self.space.check_member(out, "pointwise scaling")?;
                for (xk, ok) in x.parts()?.iter().zip(out.parts_mut()?) {
                    self.field.multiply(w, xk, ok)?;
                }
                Ok(())
            }
            None => self.space.multiply(w, x, out),
        }
    }

    /// `out = x / w` with the scalar field `w` dividing every component (0 where `w = 0`).
    pub(super) fn divide_by(
        &self,
        x: &Element<T>,
        w: &Element<T>,
        out: &mut Element<T>,
    ) -> Result<()> {
        use crate::Pointwise2::DivOrZero;
        match &self.norm {
            Some(_) => {
                self.space.check_member(x, "pointwise division")?;
                self.space.check_member(out, "pointwise division")?;
                for (xk, ok) in x.parts()?.iter().zip(out.parts_mut()?) {
                    self.field.pointwise2(DivOrZero, xk, w, ok)?;
                }
                Ok(())
            }
            None => self.space.pointwise2(DivOrZero, x, w, out),
        }
    }
}

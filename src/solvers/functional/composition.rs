//! A functional composed with a linear operator.

use super::{Func, Functional};
use crate::operator::{check_same_space, Scratch};
use crate::{Element, Error, LinOp, Result, Scalar, Space};

/// The functional `x ↦ f(A x)` for a linear operator `A` whose range is `f`'s domain.
///
/// Value and gradient `A* ∇f(A x)` are available; the proximal operator and the convex
/// conjugate are not (they need to invert `A`): the proximal solvers
/// ([`pdhg`](fn@crate::solvers::iterative::pdhg), …) take `f` and `A` separately instead.
pub struct FunctionalComposition<T: Scalar> {
    f: Func<T>,
    op: LinOp<T>,
    adjoint: LinOp<T>,
    ax: Scratch<T>,
    grad: Scratch<T>,
}

impl<T: Scalar> FunctionalComposition<T> {
    /// `x ↦ f(A x)`; errors unless `A`'s range is `f`'s domain.
    pub fn new(f: Func<T>, op: LinOp<T>) -> Result<Self> {
        check_same_space(f.domain(), op.range(), "FunctionalComposition")?;
        Ok(Self {
            adjoint: op.adjoint()?,
            ax: Scratch::new(op.range().clone()),
            grad: Scratch::new(op.range().clone()),
            f,
            op,
        })
    }
}

impl<T: Scalar> Functional<T> for FunctionalComposition<T> {
    fn domain(&self) -> &Space<T> {
        self.op.domain()
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.ax.with(|y| {
            self.op.apply_into(x, y)?;
            self.f.value(y)
        })
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.ax.with(|y| {
            self.op.apply_into(x, y)?;
            self.grad.with(|g| {
                self.f.gradient_into(y, g)?;
                self.adjoint.apply_into(g, out)
            })
        })
    }
    fn proximal_into(&self, _sigma: f64, _x: &Element<T>, _out: &mut Element<T>) -> Result<()> {
        Err(Error::Unsupported(format!(
            "the proximal operator of {} is not available: pass the functional and the \
             operator separately to a primal-dual solver (pdhg, admm_linearized, \
             douglas_rachford_pd)",
            self.name()
        )))
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Err(Error::Unsupported(format!(
            "the convex conjugate of {} is not available",
            self.name()
        )))
    }
    fn name(&self) -> String {
        format!("{} ∘ {}", self.f.name(), self.op.name())
    }
}

//! Finite-difference operators with ODL's conventions: forward differences with zero padding for
//! the gradient, `Divergence = −Gradient*` (backward differences), and the zero-padded
//! second-difference Laplacian.

use std::sync::Arc;

use crate::backend::StencilBatch;
use crate::operator::batch::check_batch_elements;
use crate::operator::{
    BatchedOperator, LinOp, LinearOperator, LinearOperatorExt, NormCache, Operator,
};
use crate::storage::Storage;
use crate::{Element, Error, Result, Scalar, Space};

/// Cell sides of a tensor space: the partition's, or 1 for a plain `rn`.
fn steps<T: Scalar>(space: &Space<T>) -> Result<Vec<f64>> {
    let nd = space.ndim()?;
    Ok(space.cell_sides().unwrap_or_else(|_| vec![1.0; nd]))
}

/// The stencil `kind` of a batch of `batch` entries of `domain` in `x` into `out` (each one
/// tensor of its space's [`Space::batch_shape`], on the spaces' device), in one pass.
#[allow(clippy::too_many_arguments)]
fn apply_stencil_batch<T: Scalar>(
    kind: StencilBatch,
    (domain, range): (&Space<T>, &Space<T>),
    x: &Element<T>,
    out: &mut Element<T>,
    batch: usize,
    w: &[f64],
    centre: f64,
) -> Result<()> {
    let what = format!("{kind:?} of a batch of {batch}");
    check_batch_elements(&what, (domain, range), x, out, batch)?;
    x.storage(&what)?
        .stencil_batch(kind, out.storage_mut(&what)?, w, centre)
}

fn tensor_space<T: Scalar>(space: &Space<T>, what: &str) -> Result<()> {
    if space.is_product() {
        return Err(Error::invalid(format!(
            "{what} needs a tensor space, got {space}"
        )));
    }
    // Differences across a share's border need the neighbouring ranks' cells (a halo).
    if space.across().is_some() {
        return Err(Error::Unsupported(format!(
            "{what} on a rank's share of a distributed space ({space}): the differences at the \
             share's borders need the neighbouring ranks' cells; partition by views (the \
             volume is then whole on every rank)"
        )));
    }
    Ok(())
}

/// The spatial gradient `X → X^d`, forward differences with zero padding:
/// `(∇x)_k[i] = (x[i + e_k] − x[i]) / h_k`, where `x = 0` outside the grid.
///
/// ```
/// use rodl::{uniform_discr, Gradient, Operator};
/// let s = uniform_discr::<f64>(&[0.0], &[4.0], &[4])?;
/// let g = Gradient::new(s.clone())?;
/// let x = s.element_from_fn(|p| p[0])?; // 0.5, 1.5, 2.5, 3.5
/// let dx = g.apply(&x)?;
/// assert_eq!(dx.part(0)?.as_slice()?, &[1.0, 1.0, 1.0, -3.5]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct Gradient<T: Scalar> {
    domain: Space<T>,
    range: Space<T>,
    norm: NormCache,
}

impl<T: Scalar> Gradient<T> {
    /// The gradient on a tensor space (cell sides 1 for `rn`).
    pub fn new(domain: Space<T>) -> Result<Self> {
        tensor_space(&domain, "Gradient")?;
        let range = domain.power(domain.ndim()?)?;
        Ok(Self {
            domain,
            range,
            norm: NormCache::new(),
        })
    }
}

impl<T: Scalar> Operator<T> for Gradient<T> {
    fn domain(&self) -> &Space<T> {
        &self.domain
    }
    fn range(&self) -> &Space<T> {
        &self.range
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let w: Vec<f64> = steps(&self.domain)?.iter().map(|h| 1.0 / h).collect();
        let mut outs = out.part_storages_mut("Gradient: output")?;
        x.storage("Gradient: input")?.gradient(&mut outs, &w)
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        Some(self)
    }
}

impl<T: Scalar> BatchedOperator<T> for Gradient<T> {
    fn max_batch(&self) -> usize {
        usize::MAX
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        let w: Vec<f64> = steps(&self.domain)?.iter().map(|h| 1.0 / h).collect();
        let spaces = (&self.domain, &self.range);
        apply_stencil_batch(StencilBatch::Gradient, spaces, x, out, batch, &w, 0.0)
    }
}

impl<T: Scalar> LinearOperator<T> for Gradient<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        let div: LinOp<T> = Arc::new(Divergence::new(self.domain.clone())?);
        Ok(div.neg())
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.norm)
    }
}

/// The divergence `X^d → X`, defined as `−∇*` (so backward differences):
/// `(div g)[i] = Σ_k (g_k[i] − g_k[i − e_k]) / h_k`, where `g_k = 0` before the grid.
pub struct Divergence<T: Scalar> {
    domain: Space<T>,
    range: Space<T>,
    norm: NormCache,
}

impl<T: Scalar> Divergence<T> {
    /// The divergence into the tensor space `range` (from `range^d`).
    pub fn new(range: Space<T>) -> Result<Self> {
        tensor_space(&range, "Divergence")?;
        let domain = range.power(range.ndim()?)?;
        Ok(Self {
            domain,
            range,
            norm: NormCache::new(),
        })
    }
}

impl<T: Scalar> Operator<T> for Divergence<T> {
    fn domain(&self) -> &Space<T> {
        &self.domain
    }
    fn range(&self) -> &Space<T> {
        &self.range
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let w: Vec<f64> = steps(&self.range)?.iter().map(|h| 1.0 / h).collect();
        let parts = x.part_storages("Divergence: input")?;
        Storage::divergence(&parts, out.storage_mut("Divergence: output")?, &w)
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        Some(self)
    }
}

impl<T: Scalar> BatchedOperator<T> for Divergence<T> {
    fn max_batch(&self) -> usize {
        usize::MAX
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        let w: Vec<f64> = steps(&self.range)?.iter().map(|h| 1.0 / h).collect();
        let spaces = (&self.domain, &self.range);
        apply_stencil_batch(StencilBatch::Divergence, spaces, x, out, batch, &w, 0.0)
    }
}

impl<T: Scalar> LinearOperator<T> for Divergence<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        let grad: LinOp<T> = Arc::new(Gradient::new(self.range.clone())?);
        Ok(grad.neg())
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.norm)
    }
}

/// The Laplacian `X → X` with zero padding:
/// `(Δx)[i] = Σ_k (x[i + e_k] − 2 x[i] + x[i − e_k]) / h_k²`, `x = 0` outside the grid.
/// Self-adjoint.
pub struct Laplacian<T: Scalar> {
    space: Space<T>,
    norm: NormCache,
}

impl<T: Scalar> Laplacian<T> {
    /// The Laplacian on a tensor space (cell sides 1 for `rn`).
    pub fn new(space: Space<T>) -> Result<Self> {
        tensor_space(&space, "Laplacian")?;
        Ok(Self {
            space,
            norm: NormCache::new(),
        })
    }
}

impl<T: Scalar> Operator<T> for Laplacian<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn range(&self) -> &Space<T> {
        &self.space
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let (w, centre) = self.weights()?;
        x.storage("Laplacian: input")?
            .laplacian(out.storage_mut("Laplacian: output")?, &w, centre)
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        Some(self)
    }
}

impl<T: Scalar> Laplacian<T> {
    /// The neighbours' weights `1/h_k²` and the centre's `Σ_k −2/h_k²`.
    fn weights(&self) -> Result<(Vec<f64>, f64)> {
        let h = steps(&self.space)?;
        let centre: f64 = h.iter().map(|h| -2.0 / (h * h)).sum();
        Ok((h.iter().map(|h| 1.0 / (h * h)).collect(), centre))
    }
}

impl<T: Scalar> BatchedOperator<T> for Laplacian<T> {
    fn max_batch(&self) -> usize {
        usize::MAX
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        let (w, centre) = self.weights()?;
        let spaces = (&self.space, &self.space);
        apply_stencil_batch(StencilBatch::Laplacian, spaces, x, out, batch, &w, centre)
    }
}

impl<T: Scalar> LinearOperator<T> for Laplacian<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(Laplacian::new(self.space.clone())?))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.norm)
    }
}

// ---------------------------------------------------------------------------------- factories

impl<T: Scalar> Gradient<T> {
    /// The factory of the gradient on `domain` (range: its power space); errors unless `domain`
    /// describes a tensor space.
    ///
    /// ```
    /// use rodl::factory::{LinFactory, SpaceDesc};
    /// use rodl::{check_adjoint, Device, Gradient, Operator};
    /// let grad: LinFactory<f64> = Gradient::factory(SpaceDesc::uniform_discr(&[0.0; 2], &[1.0; 2], &[8, 8])?)?;
    /// assert_eq!(grad.range(), &grad.domain().power(2));
    /// let op = grad.build(Device::Cpu)?;
    /// assert!(check_adjoint(op.as_ref(), 2, 0)?.max_rel_error < 1e-12);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn factory(domain: crate::factory::SpaceDesc) -> Result<crate::factory::LinFactory<T>> {
        let desc = format!("Gradient on {domain}");
        crate::factory::Factory::on_space(domain, desc, |s| {
            Ok(Arc::new(Gradient::new(s)?) as LinOp<T>)
        })
    }
}

impl<T: Scalar> Divergence<T> {
    /// The factory of the divergence into `range` (domain: its power space); errors unless
    /// `range` describes a tensor space.
    pub fn factory(range: crate::factory::SpaceDesc) -> Result<crate::factory::LinFactory<T>> {
        let desc = format!("Divergence into {range}");
        crate::factory::Factory::on_space(range, desc, |s| {
            Ok(Arc::new(Divergence::new(s)?) as LinOp<T>)
        })
    }
}

impl<T: Scalar> Laplacian<T> {
    /// The factory of the Laplacian on `space`; errors unless it describes a tensor space.
    pub fn factory(space: crate::factory::SpaceDesc) -> Result<crate::factory::LinFactory<T>> {
        let desc = format!("Laplacian on {space}");
        crate::factory::Factory::on_space(space, desc, |s| {
            Ok(Arc::new(Laplacian::new(s)?) as LinOp<T>)
        })
    }
}

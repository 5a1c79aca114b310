//! Finite-difference operators with ODL's conventions: forward differences with zero padding for
//! the gradient, `Divergence = −Gradient*` (backward differences), and the zero-padded
//! second-difference Laplacian.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Axis, Slice, Zip};

use crate::backend::cuda::DeviceTensor;
use crate::operator::{LinOp, LinearOperator, LinearOperatorExt, NormCache, Operator};
use crate::{Element, Error, Result, Scalar, Space};

/// Cell sides of a tensor space: the partition's, or 1 for a plain `rn`.
fn steps<T: Scalar>(space: &Space<T>) -> Result<Vec<f64>> {
    let nd = space.ndim()?;
    Ok(space.cell_sides().unwrap_or_else(|_| vec![1.0; nd]))
}

fn tensor_space<T: Scalar>(space: &Space<T>, what: &str) -> Result<()> {
    if space.is_product() {
        return Err(Error::invalid(format!(
            "{what} needs a tensor space, got {space}"
        )));
    }
    Ok(())
}

/// Below this many elements a loop runs on the calling thread: waking rayon's workers costs far
/// more than the loop itself on small grids (tens of µs against well under one).
const PAR_MIN_LEN: usize = 1 << 14;

/// `Zip::par_for_each` for large zips, `Zip::for_each` for small ones.
macro_rules! zip_for_each {
    ($zip:expr, $f:expr) => {{
        let zip = $zip;
        if zip.size() >= PAR_MIN_LEN {
            zip.par_for_each($f)
        } else {
            zip.for_each($f)
        }
    }};
}

/// `out = (x[i+1] − x[i]) / h` along `axis`, with `x[n] = 0`.
fn forward_diff<T: Scalar>(x: ArrayViewD<T>, axis: usize, inv_h: T, mut out: ArrayViewMutD<T>) {
    let ax = Axis(axis);
    let n = x.len_of(ax);
    let (lo, last) = out.view_mut().split_at(ax, n - 1);
    zip_for_each!(
        Zip::from(lo)
            .and(x.slice_axis(ax, Slice::from(1..)))
            .and(x.slice_axis(ax, Slice::from(..n - 1))),
        |o, &a, &b| *o = (a - b) * inv_h
    );
    zip_for_each!(
        Zip::from(last).and(x.slice_axis(ax, Slice::from(n - 1..))),
        |o, &b| *o = -b * inv_h
    );
}

/// `out += (g[i] − g[i−1]) / h` along `axis`, with `g[−1] = 0`.
fn backward_diff_add<T: Scalar>(
    g: ArrayViewD<T>,
    axis: usize,
    inv_h: T,
    mut out: ArrayViewMutD<T>,
) {
    let ax = Axis(axis);
    let n = g.len_of(ax);
    let (first, rest) = out.view_mut().split_at(ax, 1);
    zip_for_each!(
        Zip::from(first).and(g.slice_axis(ax, Slice::from(..1))),
        |o, &a| *o += a * inv_h
    );
    zip_for_each!(
        Zip::from(rest)
            .and(g.slice_axis(ax, Slice::from(1..)))
            .and(g.slice_axis(ax, Slice::from(..n - 1))),
        |o, &a, &b| *o += (a - b) * inv_h
    );
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
        let h = steps(&self.domain)?;
        if x.device().is_cuda() {
            let w: Vec<f64> = h.iter().map(|h| 1.0 / h).collect();
            let mut outs = out.cuda_parts_mut("Gradient: output")?;
            return DeviceTensor::gradient(x.cuda_tensor("Gradient: input")?, &mut outs, &w);
        }
        let xa = x.as_array()?;
        for (k, o) in out.parts_mut()?.iter_mut().enumerate() {
            forward_diff(xa.view(), k, T::of(1.0 / h[k]), o.as_array_mut()?);
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
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
        let h = steps(&self.range)?;
        if out.device().is_cuda() {
            let w: Vec<f64> = h.iter().map(|h| 1.0 / h).collect();
            let parts = x.cuda_parts("Divergence: input")?;
            return DeviceTensor::divergence(
                &parts,
                out.cuda_tensor_mut("Divergence: output")?,
                &w,
            );
        }
        let mut o = out.as_array_mut()?;
        o.fill(T::zero());
        for (k, g) in x.parts()?.iter().enumerate() {
            backward_diff_add(g.as_array()?, k, T::of(1.0 / h[k]), o.view_mut());
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
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
        let h = steps(&self.space)?;
        let centre: f64 = h.iter().map(|h| -2.0 / (h * h)).sum();
        if x.device().is_cuda() {
            let w: Vec<f64> = h.iter().map(|h| 1.0 / (h * h)).collect();
            return DeviceTensor::laplacian(
                x.cuda_tensor("Laplacian: input")?,
                out.cuda_tensor_mut("Laplacian: output")?,
                &w,
                centre,
            );
        }
        let xa = x.as_array()?;
        let mut o = out.as_array_mut()?;
        let c = T::of(centre);
        zip_for_each!(Zip::from(&mut o).and(&xa), |o, &x| *o = c * x);
        for (k, hk) in h.iter().enumerate() {
            let ax = Axis(k);
            let n = xa.len_of(ax);
            let w = T::of(1.0 / (hk * hk));
            zip_for_each!(
                Zip::from(o.slice_axis_mut(ax, Slice::from(..n - 1)))
                    .and(xa.slice_axis(ax, Slice::from(1..))),
                |o, &a| *o += w * a
            );
            zip_for_each!(
                Zip::from(o.slice_axis_mut(ax, Slice::from(1..)))
                    .and(xa.slice_axis(ax, Slice::from(..n - 1))),
                |o, &a| *o += w * a
            );
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
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
        let probe = Gradient::<T>::new(domain.build(crate::Device::Cpu)?)?;
        let range = crate::factory::SpaceDesc::of(probe.range());
        let desc = format!("Gradient on {domain}");
        let s = domain.clone();
        Ok(crate::factory::Factory::from_fn(
            domain,
            range,
            desc,
            move |d| {
                let op: LinOp<T> = Arc::new(Gradient::new(s.build(d)?)?);
                Ok(op)
            },
        ))
    }
}

impl<T: Scalar> Divergence<T> {
    /// The factory of the divergence into `range` (domain: its power space); errors unless
    /// `range` describes a tensor space.
    pub fn factory(range: crate::factory::SpaceDesc) -> Result<crate::factory::LinFactory<T>> {
        let probe = Divergence::<T>::new(range.build(crate::Device::Cpu)?)?;
        let domain = crate::factory::SpaceDesc::of(probe.domain());
        let desc = format!("Divergence into {range}");
        let s = range.clone();
        Ok(crate::factory::Factory::from_fn(
            domain,
            range,
            desc,
            move |d| {
                let op: LinOp<T> = Arc::new(Divergence::new(s.build(d)?)?);
                Ok(op)
            },
        ))
    }
}

impl<T: Scalar> Laplacian<T> {
    /// The factory of the Laplacian on `space`; errors unless it describes a tensor space.
    pub fn factory(space: crate::factory::SpaceDesc) -> Result<crate::factory::LinFactory<T>> {
        Laplacian::<T>::new(space.build(crate::Device::Cpu)?)?;
        let desc = format!("Laplacian on {space}");
        let s = space.clone();
        Ok(crate::factory::Factory::from_fn(
            space.clone(),
            space,
            desc,
            move |d| {
                let op: LinOp<T> = Arc::new(Laplacian::new(s.build(d)?)?);
                Ok(op)
            },
        ))
    }
}

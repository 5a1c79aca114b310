//! The ray transform: line integrals of a volume along the rays of a geometry.

use std::sync::Arc;

use super::backend::Backend;
use super::cpu as joseph;
use super::geometry::Geometry;
use super::grid::Grid;
use crate::operator::NormCache;
use crate::{Device, Element, Error, Result, Scalar, Space};

struct Inner<T: Scalar> {
    domain: Space<T>,
    range: Space<T>,
    geometry: Geometry,
    grid: Grid,
    exec: Exec,
    /// `w_range / w_domain`: the factor turning the transpose into the weighted adjoint.
    adjoint_scale: f64,
    norm: NormCache,
}

enum Exec {
    Cpu(Arc<rayon::ThreadPool>),
    #[cfg(feature = "cuda")]
    Cuda(super::cuda::CudaRay),
}

/// The ray transform `A`: a volume ↦ its line integrals (world units) along the rays of a
/// geometry, discretised with Joseph's method (linear interpolation along each ray's dominant
/// axis). Its [`adjoint`](crate::LinearOperator::adjoint) is the exact transpose of the same model,
/// scaled to the weighted inner products as ODL does: `A* = (w_data / w_volume) Aᵀ`.
///
/// The range is the data space over (angles × detector) with weight `Δθ · Δu (· Δv)`.
///
/// ```
/// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
/// use rodl::{check_adjoint, uniform_discr, LinearOperator, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
/// let geometry = parallel_beam_geometry(&space, Some(20))?;
/// let ray = RayTransform::new(space.clone(), geometry, Backend::default())?;
/// let sino = ray.apply(&space.one()?)?;
/// assert_eq!(sino.shape().unwrap(), &[20, 47]);
/// assert!(check_adjoint(&ray, 2, 1)?.max_rel_error < 1e-13);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct RayTransform<T: Scalar> {
    inner: Arc<Inner<T>>,
}

/// The adjoint of a [`RayTransform`] (the exact, weighted transpose: back-projection).
pub struct RayBackProjection<T: Scalar> {
    inner: Arc<Inner<T>>,
}

impl<T: Scalar> RayTransform<T> {
    /// A ray transform on the discretised volume `domain` for `geometry`, computing on
    /// `backend`.
    ///
    /// Errors when the domain is not a discretised space of the geometry's dimension, when the
    /// backend cannot be used, or when a CUDA domain's device differs from the backend's.
    pub fn new(domain: Space<T>, geometry: Geometry, backend: Backend) -> Result<Self> {
        let part = domain.partition().map_err(|_| {
            Error::invalid(format!(
                "the ray transform needs a discretised (uniform_discr) volume, got {domain}"
            ))
        })?;
        if part.ndim() != geometry.ndim() {
            return Err(Error::Geometry(format!(
                "a {}D geometry needs a {}D volume, got {domain}",
                geometry.ndim(),
                geometry.ndim()
            )));
        }
        let mut grid = Grid {
            shape: [1; 3],
            min: [0.0; 3],
            h: [1.0; 3],
            inv_h: [1.0; 3],
        };
        for k in 0..part.ndim() {
            grid.shape[k] = part.shape()[k];
            grid.min[k] = part.min_pt()[k];
            grid.h[k] = part.cell_side(k);
            grid.inv_h[k] = 1.0 / grid.h[k];
        }
        let range = Space::<T>::from_partition(geometry.data_partition().clone());
        let range = if domain.device() == Device::Cpu {
            range
        } else {
            range.with_device(domain.device())?
        };
        let exec = match &backend {
            Backend::Cpu(opts) => {
                if domain.device() != Device::Cpu {
                    return Err(Error::DeviceMismatch {
                        context: "RayTransform: CPU backend".into(),
                        expected: "cpu".into(),
                        got: domain.device().to_string(),
                    });
                }
                let mut b = rayon::ThreadPoolBuilder::new();
                if let Some(n) = opts.threads {
                    if n == 0 {
                        return Err(Error::invalid("CPU backend: threads must be at least 1"));
                    }
                    b = b.num_threads(n);
                }
                let pool = b
                    .build()
                    .map_err(|e| Error::invalid(format!("cannot start the thread pool: {e}")))?;
                Exec::Cpu(Arc::new(pool))
            }
            Backend::Cuda(opts) => {
                if let Device::Cuda(d) = domain.device() {
                    if d != opts.device {
                        return Err(Error::DeviceMismatch {
                            context: "RayTransform: CUDA options vs domain".into(),
                            expected: format!("cuda:{d}"),
                            got: format!("cuda:{}", opts.device),
                        });
                    }
                }
                Device::Cuda(opts.device).check_available()?;
                Self::cuda_exec(opts.device, &geometry, &grid)?
            }
        };
        let adjoint_scale = range.weight()? / domain.weight()?;
        Ok(Self {
            inner: Arc::new(Inner {
                domain,
                range,
                geometry,
                grid,
                exec,
                adjoint_scale,
                norm: NormCache::new(),
            }),
        })
    }

    #[cfg(feature = "cuda")]
    fn cuda_exec(id: usize, geometry: &Geometry, grid: &Grid) -> Result<Exec> {
        if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
            return Err(Error::Unsupported(format!(
                "the CUDA ray transform computes in f32, not {}",
                T::NAME
            )));
        }
        Ok(Exec::Cuda(super::cuda::CudaRay::new(
            id,
            geometry.vec(),
            grid,
        )?))
    }

    #[cfg(not(feature = "cuda"))]
    fn cuda_exec(_id: usize, _geometry: &Geometry, _grid: &Grid) -> Result<Exec> {
        Err(Error::CudaUnavailable(
            "rodl was built without the `cuda` feature (rebuild with `--features cuda`)".into(),
        ))
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.inner.geometry
    }
}

impl<T: Scalar> Inner<T> {
    fn forward(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        match &self.exec {
            Exec::Cpu(pool) => {
                let vol = x.as_slice()?;
                let sino = out.as_slice_mut()?;
                pool.install(|| joseph::forward(self.geometry.vec(), &self.grid, vol, sino));
                Ok(())
            }
            #[cfg(feature = "cuda")]
            Exec::Cuda(c) => gpu_apply(c, x, out, false),
        }
    }

    fn backward(&self, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        match &self.exec {
            Exec::Cpu(pool) => {
                let sino = y.as_slice()?;
                let vol = out.as_slice_mut()?;
                let tasks = 2 * pool.current_num_threads();
                pool.install(|| {
                    joseph::transpose(self.geometry.vec(), &self.grid, sino, vol, tasks)
                });
            }
            #[cfg(feature = "cuda")]
            Exec::Cuda(c) => gpu_apply(c, y, out, true)?,
        }
        self.domain.scale(T::of(self.adjoint_scale), out)
    }
}

/// Runs the GPU projector (`transpose`: the unscaled back-projection). Device elements stay on the
/// device; host elements are copied in and the result copied out (ODL-compatible).
#[cfg(feature = "cuda")]
fn gpu_apply<T: Scalar>(
    c: &super::cuda::CudaRay,
    x: &Element<T>,
    out: &mut Element<T>,
    transpose: bool,
) -> Result<()> {
    use super::cuda::{as_f32, as_f32_mut};
    use crate::backend::cuda::DeviceTensor;
    use crate::element::ElementKind;
    let run = |a: &DeviceTensor<T>, b: &mut DeviceTensor<T>| -> Result<()> {
        let (a, b) = (as_f32(a.slice())?, as_f32_mut(b.slice_mut())?);
        if transpose {
            c.transpose(a, b)
        } else {
            c.forward(a, b)
        }
    };
    match (&x.kind, &mut out.kind) {
        (ElementKind::Cuda(a), ElementKind::Cuda(b)) => run(a, b),
        (ElementKind::Host(a), ElementKind::Host(o)) => {
            let dev_in = DeviceTensor::from_host(c.device(), a.view())?;
            let mut dev_out = DeviceTensor::<T>::zeros(c.device(), o.shape())?;
            run(&dev_in, &mut dev_out)?;
            *o = dev_out.to_host()?;
            Ok(())
        }
        _ => Err(Error::DeviceMismatch {
            context: "RayTransform (CUDA)".into(),
            expected: format!("cuda:{}", c.device()),
            got: format!("{} and {}", x.device(), out.device()),
        }),
    }
}

crate::operator::forward_backward_pair!(RayTransform, RayBackProjection);

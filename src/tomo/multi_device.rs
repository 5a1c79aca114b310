//! One ray transform split across several devices by views.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use super::ray_factory::check_volume;
use super::{Backend, CpuOptions, Geometry, RayTransform};
use crate::factory::SpaceDesc;
use crate::operator::{NormCache, Scratch};
use crate::parallel::run_each;
use crate::{Device, Element, Error, LinOp, Result, Scalar, Space};

/// A ray transform whose views are split across several devices: one large problem on several
/// GPUs (or, for testing, several CPU entries).
///
/// It is described like [`RayTransform::factory`]: the volume ([`SpaceDesc`]), the geometry
/// and the CPU options. Each device gets a contiguous range of views
/// ([`Geometry::select_views`]) and its own [`RayTransform`] of that sub-geometry, built at
/// construction on the device ([`Backend::for_device`]), so a device that cannot be used is an
/// error here. The forward transform sends the volume to every device, each projects its
/// views, and the sinogram rows are gathered; the adjoint sends each device its rows of the
/// sinogram, each back-projects them, and the partial volumes are summed on the host, in device
/// order. Both run the devices concurrently, one host thread per device. The result equals the
/// single-device transform up to rounding, and the adjoint is exact (each part's is, and the
/// sub-geometries keep the data weighting).
///
/// **Domain and range are host spaces** (the volume and the full data space on the CPU). For a
/// GPU entry the volume or the sinogram rows are copied to the device explicitly
/// ([`Element::to_device`]) at each call and the result is copied back ([`Element::to_host`]);
/// a CPU entry computes on the host data without transfers. When the CPU options leave the
/// thread count open, the CPU entries share the machine's cores evenly.
///
/// ```
/// use rodl::factory::SpaceDescExt;
/// use rodl::tomo::{parallel_beam_geometry, Backend, CpuOptions, MultiDeviceRayTransform, RayTransform};
/// use rodl::{check_adjoint, uniform_discr, Device, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[24, 24])?;
/// let geometry = parallel_beam_geometry(&space, Some(10))?;
/// let cpu = CpuOptions::default();
/// let devices = [Device::Cpu, Device::Cpu, Device::Cpu];
/// let multi = MultiDeviceRayTransform::<f64>::new(space.desc(), geometry.clone(), cpu, &devices)?;
/// assert_eq!(multi.view_ranges(), &[0..4, 4..7, 7..10]);
/// let single = RayTransform::new(space.clone(), geometry, Backend::default())?;
/// let x = space.one()?;
/// let (a, b) = (multi.apply(&x)?, single.apply(&x)?);
/// assert!(multi.range().dist(&a, &b)? <= 1e-12 * multi.range().norm(&b)?);
/// assert!(check_adjoint(&multi, 2, 5)?.max_rel_error < 1e-12);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct MultiDeviceRayTransform<T: Scalar> {
    inner: Arc<Inner<T>>,
}

/// The adjoint of a [`MultiDeviceRayTransform`]: back-projection split across the same devices.
pub struct MultiDeviceBackProjection<T: Scalar> {
    inner: Arc<Inner<T>>,
}

struct Inner<T: Scalar> {
    volume: SpaceDesc,
    geometry: Geometry,
    cpu: CpuOptions,
    /// The volume, on the host.
    domain: Space<T>,
    /// The full data space, on the host.
    range: Space<T>,
    parts: Vec<Part<T>>,
    /// Scalars per view in the data.
    view_size: usize,
    norm: NormCache,
}

/// One device's share: its views and its transform of them.
struct Part<T: Scalar> {
    device: Device,
    views: Range<usize>,
    forward: LinOp<T>,
    backward: LinOp<T>,
    /// Projection output, on the device.
    sino: Scratch<T>,
    /// Back-projection input, in host memory.
    host_sino: Scratch<T>,
    /// Back-projection output, on the device (kept across calls).
    vol: Mutex<Option<Element<T>>>,
}

impl<T: Scalar> Part<T> {
    fn take_vol(&self) -> Result<Element<T>> {
        let cached = self.vol.lock().ok().and_then(|mut g| g.take());
        match cached {
            Some(v) => Ok(v),
            // Kept across calls: made on rodl's own streams.
            None => crate::backend::lasting(|| self.backward.range().zero()),
        }
    }

    fn put_vol(&self, v: Element<T>) {
        if let Ok(mut g) = self.vol.lock() {
            *g = Some(v);
        }
    }

    /// Projects the host volume `x` onto this part's views, writing the rows `out`.
    fn project(&self, x: &Element<T>, out: &mut [T]) -> Result<()> {
        self.sino.with(|y| {
            if self.device == Device::Cpu {
                self.forward.apply_into(x, y)?;
                out.copy_from_slice(y.as_slice()?);
            } else {
                let x_dev = x.to_device(self.device)?;
                self.forward.apply_into(&x_dev, y)?;
                out.copy_from_slice(y.to_host()?.as_slice()?);
            }
            Ok(())
        })
    }

    /// Back-projects this part's rows `rows` of the data. With `into`, the volume is written
    /// there and `None` returned; otherwise the partial volume is returned in host memory, with
    /// `true` when it is this part's cached buffer (to be given back with `put_vol`).
    fn back_project(
        &self,
        rows: &[T],
        into: Option<&mut Element<T>>,
    ) -> Result<Option<(Element<T>, bool)>> {
        self.host_sino.with(|y| {
            y.as_slice_mut()?.copy_from_slice(rows);
            if self.device == Device::Cpu {
                return match into {
                    Some(out) => {
                        self.backward.apply_into(y, out)?;
                        Ok(None)
                    }
                    None => {
                        let mut v = self.take_vol()?;
                        let r = self.backward.apply_into(y, &mut v);
                        if let Err(e) = r {
                            self.put_vol(v);
                            return Err(e);
                        }
                        Ok(Some((v, true)))
                    }
                };
            }
            let y_dev = y.to_device(self.device)?;
            let mut v = self.take_vol()?;
            let r = self
                .backward
                .apply_into(&y_dev, &mut v)
                .and_then(|_| v.to_host());
            self.put_vol(v);
            let host = r?;
            match into {
                Some(out) => {
                    out.as_slice_mut()?.copy_from_slice(host.as_slice()?);
                    Ok(None)
                }
                None => Ok(Some((host, false))),
            }
        })
    }
}

impl<T: Scalar> MultiDeviceRayTransform<T> {
    /// The ray transform on the discretised `volume` for `geometry` with its views split as
    /// evenly as possible across `devices` (earlier devices take the remainder); `cpu`: the
    /// options of the CPU entries. Builds one transform per device now.
    ///
    /// Errors when `volume` is not a discretised space of the geometry's dimension, when
    /// `devices` is empty, when there are more devices than views, or when a part cannot be
    /// built (device unavailable, f64 on a GPU, …).
    pub fn new(
        volume: SpaceDesc,
        geometry: Geometry,
        cpu: CpuOptions,
        devices: &[Device],
    ) -> Result<Self> {
        let n = geometry.vec().num_views();
        let k = devices.len().max(1);
        let counts: Vec<usize> = (0..devices.len())
            .map(|i| n / k + usize::from(i < n % k))
            .collect();
        Self::with_view_counts(volume, geometry, cpu, devices, &counts)
    }

    /// As [`MultiDeviceRayTransform::new`] with `counts[i]` consecutive views on `devices[i]`
    /// (e.g. more views for a faster GPU). Every count must be at least 1 and they must add up
    /// to the number of views.
    pub fn with_view_counts(
        volume: SpaceDesc,
        geometry: Geometry,
        cpu: CpuOptions,
        devices: &[Device],
        counts: &[usize],
    ) -> Result<Self> {
        check_volume(&volume, &geometry)?;
        let n = geometry.vec().num_views();
        if devices.is_empty() {
            return Err(Error::invalid(
                "MultiDeviceRayTransform needs at least one device",
            ));
        }
        if counts.len() != devices.len() || counts.contains(&0) || counts.iter().sum::<usize>() != n
        {
            return Err(Error::invalid(format!(
                "MultiDeviceRayTransform: cannot split {n} views as {counts:?} across {} devices \
                 (every device needs at least one view)",
                devices.len()
            )));
        }
        let domain: Space<T> = volume.build(Device::Cpu)?;
        let range = Space::<T>::from_partition(geometry.data_partition().clone());
        let view_size = geometry.data_shape()[1..].iter().product();
        let cpu_entries = devices.iter().filter(|d| **d == Device::Cpu).count();
        let mut part_cpu = cpu.clone();
        if part_cpu.threads.is_none() && cpu_entries > 1 {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            part_cpu = CpuOptions {
                threads: Some((cores / cpu_entries).max(1)),
            };
        }
        let mut parts = Vec::with_capacity(devices.len());
        let mut start = 0;
        for (&device, &count) in devices.iter().zip(counts) {
            let views = start..start + count;
            start += count;
            let forward: LinOp<T> = Arc::new(RayTransform::new(
                volume.build(device)?,
                geometry.select_views(views.clone())?,
                Backend::for_device(device, &part_cpu),
            )?);
            let backward = forward.adjoint()?;
            let host_data = Space::<T>::from_partition(forward.range().partition()?.clone());
            parts.push(Part {
                device,
                views,
                sino: Scratch::new(forward.range().clone()),
                host_sino: Scratch::new(host_data),
                vol: Mutex::new(None),
                forward,
                backward,
            });
        }
        Ok(Self {
            inner: Arc::new(Inner {
                volume,
                geometry,
                cpu,
                domain,
                range,
                parts,
                view_size,
                norm: NormCache::new(),
            }),
        })
    }

    /// The devices, one entry per part.
    pub fn devices(&self) -> Vec<Device> {
        self.inner.parts.iter().map(|p| p.device).collect()
    }

    /// The views each device projects.
    pub fn view_ranges(&self) -> Vec<Range<usize>> {
        self.inner.parts.iter().map(|p| p.views.clone()).collect()
    }

    /// The description of the volume (the domain).
    pub fn volume(&self) -> &SpaceDesc {
        &self.inner.volume
    }

    /// The full geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.inner.geometry
    }

    /// The CPU options given at construction.
    pub fn cpu_options(&self) -> &CpuOptions {
        &self.inner.cpu
    }
}

fn worker_name<T: Scalar>(p: &Part<T>) -> String {
    format!("rodl-ray-{}", p.device)
}

impl<T: Scalar> Inner<T> {
    fn forward(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let mut rest = out.as_slice_mut()?;
        let mut work = Vec::with_capacity(self.parts.len());
        for p in &self.parts {
            let (head, tail) =
                std::mem::take(&mut rest).split_at_mut(p.views.len() * self.view_size);
            work.push((p, head));
            rest = tail;
        }
        run_each(work, |w| worker_name(w.0), |(p, rows)| p.project(x, rows))?;
        Ok(())
    }

    fn backward(&self, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let data = y.as_slice()?;
        // The first part back-projects straight into `out`, the others into their own buffers.
        let mut into = Some(&mut *out);
        let work: Vec<_> = self
            .parts
            .iter()
            .map(|p| {
                let rows = &data[p.views.start * self.view_size..p.views.end * self.view_size];
                (p, rows, into.take())
            })
            .collect();
        let partials = run_each(
            work,
            |w| worker_name(w.0),
            |(p, rows, into)| p.back_project(rows, into),
        )?;
        let mut result = Ok(());
        for (p, partial) in self.parts.iter().zip(partials) {
            if let Some((v, cached)) = partial {
                if result.is_ok() {
                    result = self.domain.axpby(T::one(), &v, T::one(), out);
                }
                if cached {
                    p.put_vol(v);
                }
            }
        }
        result
    }
}

crate::operator::forward_backward_pair!(MultiDeviceRayTransform, MultiDeviceBackProjection);

//! Data parallelism: one operator replica per device, each applied to its slice of a batch.

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::batch::{leaves, leaves_mut, split_rows, split_rows_mut};
use super::workers::run_each;
use crate::factory::{Factory, OperatorHandle, SpaceDesc};
use crate::operator::{NormCache, Scratch};
use crate::{Device, Element, Error, LinOp, LinearOperator, Op, Operator, Result, Scalar, Space};

/// An operator on batches that runs one replica of a factory's operator per device.
///
/// The domain and range are batch spaces ([`SpaceDesc::batched`]): the factory's domain and
/// range with a leading batch axis of length `B` on every tensor (unit weight along it, so the
/// inner product is the sum over the batch). **Batch elements live in host memory**: the batch
/// spaces are host spaces whatever the devices. [`stack`](Self::stack) makes a batch of `B`
/// elements and [`unstack`](Self::unstack) splits one. The batch is split into contiguous
/// chunks, one per device (as even as possible, or the sizes given to
/// [`with_chunks`](DataParallel::with_chunks); uneven splits and empty chunks are allowed).
///
/// At the first call that needs it, each device builds its replica with the factory
/// ([`Factory::build`]) and caches it: one build per device entry for the life of the operator
/// ([`build_counts`](Self::build_counts)). A device that cannot be used gives a clean error at
/// that first call (or at [`warm_up`](Self::warm_up)), never a panic. The same device may be
/// listed more than once (e.g. `[Cpu, Cpu]`): each entry gets its own replica.
///
/// A call runs the devices' chunks concurrently, one host thread per device with work (`std::
/// thread::scope`; a single busy device runs on the calling thread). Each thread applies its
/// replica to its batch elements one after the other: the element is copied out of the batch
/// into a cached host temporary; for a GPU it is then copied to the device explicitly
/// ([`Element::to_device`]), the replica computes there, and the result comes back explicitly
/// ([`Element::to_host`]) before it is written into its slot of the output batch. Replicas of
/// CPU entries compute on the host without extra transfers.
///
/// Built from a [`LinFactory`](crate::factory::LinFactory) (`O = LinOp<T>`, the default) it is
/// a [`LinearOperator`] whose adjoint is the data-parallel adjoint: it shares the replicas
/// (each device takes its replica's [`adjoint`](LinearOperator::adjoint), once) and is exact in
/// the batch spaces' inner products. From an [`OpFactory`](crate::factory::OpFactory)
/// (`O = Op<T>`) it is an [`Operator`].
///
/// If a call fails, the output's contents are unspecified.
///
/// ```
/// use rodl::factory::{LinFactory, SpaceDesc};
/// use rodl::parallel::DataParallel;
/// use rodl::{check_adjoint, Device, LinearOperator, Operator, ScalingOperator};
///
/// let scale: LinFactory<f64> = ScalingOperator::factory(SpaceDesc::rn(&[2]), 3.0);
/// // Five elements on two CPU "devices": chunks of 3 and 2.
/// let op = DataParallel::new(scale.clone(), &[Device::Cpu, Device::Cpu], 5)?;
/// assert_eq!(op.domain().shape()?, &[5, 2]);
/// let x = op.domain().element_from_vec((0..10).map(f64::from).collect())?;
/// let y = op.apply(&x)?;
/// assert_eq!(y.as_slice()?[9], 27.0);
/// assert_eq!(op.build_counts(), vec![1, 1]);
/// assert!(check_adjoint(&op, 2, 3)?.max_rel_error < 1e-12);
///
/// // A missing GPU is an error at first use, not a panic.
/// let bad = DataParallel::new(scale, &[Device::Cpu, Device::Cuda(7)], 4)?;
/// assert!(bad.apply(&bad.domain().zero()?).is_err());
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct DataParallel<T: Scalar, O = LinOp<T>> {
    core: Arc<Core<T>>,
    adjoint: bool,
    _o: PhantomData<fn() -> O>,
}

/// Builds a replica: the operator, and the linear operator when the factory is linear.
type BuildReplica<T> = dyn Fn(Device) -> Result<(Op<T>, Option<LinOp<T>>)> + Send + Sync;

struct Core<T: Scalar> {
    build: Box<BuildReplica<T>>,
    describe: String,
    linear: bool,
    slots: Vec<Slot<T>>,
    chunks: Vec<Range<usize>>,
    /// The leaf sizes of an element of the factory's domain and range.
    domain_sizes: Vec<usize>,
    range_sizes: Vec<usize>,
    /// The batch spaces (host).
    domain: Space<T>,
    range: Space<T>,
    /// The factory's domain and range on the host (for the per-element input temporaries).
    host_inner_domain: Space<T>,
    host_inner_range: Space<T>,
    norm: NormCache,
}

/// One device's share of a call: its index, its input rows and its output rows (per leaf).
type Share<'a, T> = (usize, Vec<&'a [T]>, Vec<&'a mut [T]>);

/// One device entry: its replica (built once) and the replica's adjoint (taken once).
struct Slot<T: Scalar> {
    device: Device,
    forward: Mutex<Option<Arc<Replica<T>>>>,
    backward: Mutex<Option<Arc<Replica<T>>>>,
    builds: AtomicUsize,
}

/// A built operator on one device with its reusable temporaries.
struct Replica<T: Scalar> {
    op: Op<T>,
    lin: Option<LinOp<T>>,
    /// One input element in host memory.
    input: Scratch<T>,
    /// One output element on the device.
    output: Scratch<T>,
}

impl<T: Scalar> Replica<T> {
    fn new(op: Op<T>, lin: Option<LinOp<T>>, host_input: Space<T>) -> Self {
        let output = Scratch::new(op.range().clone());
        Self {
            op,
            lin,
            input: Scratch::new(host_input),
            output,
        }
    }
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    // The guarded state is an `Option` that is only ever replaced whole: a panic elsewhere
    // cannot leave it half-written, so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `[0, n)` split into `k` contiguous ranges whose lengths differ by at most one.
fn even_chunks(n: usize, k: usize) -> Vec<usize> {
    (0..k).map(|i| n / k + usize::from(i < n % k)).collect()
}

impl<T: Scalar, O: OperatorHandle<Scalar = T>> DataParallel<T, O> {
    /// The data-parallel operator of `factory` on batches of `batch` elements, split as evenly
    /// as possible across `devices` (earlier devices take the remainder). A linear factory
    /// gives a linear operator; a general one (e.g. a non-linear factory) a general operator.
    ///
    /// Nothing is built yet. Errors when `devices` is empty or `batch` is 0.
    ///
    /// ```
    /// use rodl::factory::{OpFactory, SpaceDesc};
    /// use rodl::parallel::DataParallel;
    /// use rodl::{Device, Operator, PointwiseNorm};
    /// let norm: OpFactory<f32> = PointwiseNorm::factory(SpaceDesc::rn(&[3]).power(2), 2.0)?;
    /// let op = DataParallel::new(norm, &[Device::Cpu, Device::Cpu], 4)?;
    /// let field = op.domain().full(3.0)?; // a product: two batches of shape [4, 3]
    /// assert_eq!(op.apply(&field)?.as_slice()?, &[18f32.sqrt(); 12]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn new(factory: Factory<O>, devices: &[Device], batch: usize) -> Result<Self> {
        Self::with_chunks(factory, devices, &even_chunks(batch, devices.len()))
    }

    /// As [`DataParallel::new`] with `chunks[i]` batch elements on `devices[i]` (the batch size
    /// is their sum; a device with 0 elements is never built).
    pub fn with_chunks(factory: Factory<O>, devices: &[Device], chunks: &[usize]) -> Result<Self> {
        let info = FactoryInfo {
            domain: factory.domain().clone(),
            range: factory.range().clone(),
            describe: factory.describe().to_string(),
            linear: factory.is_linear(),
        };
        let build = move |d: Device| -> Result<(Op<T>, Option<LinOp<T>>)> {
            Ok(factory.build(d)?.into_parts())
        };
        let core = Core::new(info, Box::new(build), devices, chunks)?;
        Ok(Self {
            core: Arc::new(core),
            adjoint: false,
            _o: PhantomData,
        })
    }
}

impl<T: Scalar, O> DataParallel<T, O> {
    /// The devices, one entry per replica.
    pub fn devices(&self) -> Vec<Device> {
        self.core.slots.iter().map(|s| s.device).collect()
    }

    /// The batch elements each device works on.
    pub fn chunks(&self) -> &[Range<usize>] {
        &self.core.chunks
    }

    /// The number of elements in a batch.
    pub fn batch_size(&self) -> usize {
        self.core.chunks.last().map_or(0, |c| c.end)
    }

    /// How many times each device entry has built its replica with the factory (0 before its
    /// first use, 1 after; the adjoint shares these replicas).
    pub fn build_counts(&self) -> Vec<usize> {
        self.core
            .slots
            .iter()
            .map(|s| s.builds.load(Ordering::Relaxed))
            .collect()
    }

    /// The batch of `elements`: host elements of the factory's domain give an element of the
    /// batched domain, host elements of its range one of the batched range (the input of the
    /// adjoint). Exactly [`batch_size`](Self::batch_size) elements, in batch order.
    ///
    /// ```
    /// use rodl::factory::{LinFactory, SpaceDesc};
    /// use rodl::parallel::DataParallel;
    /// use rodl::{rn, Device, Gradient, Operator};
    /// let grad: LinFactory<f64> = Gradient::factory(SpaceDesc::rn(&[4]))?;
    /// let op = DataParallel::new(grad, &[Device::Cpu, Device::Cpu], 3)?;
    /// let images: Vec<_> = (0..3)
    ///     .map(|k| rn::<f64>(&[4])?.element_from_vec(vec![f64::from(k); 4]))
    ///     .collect::<rodl::Result<_>>()?;
    /// let batch = op.stack(&images)?; // shape [3, 4]
    /// let grads = op.unstack(&op.apply(&batch)?)?; // three elements of (ℝ⁴)¹
    /// assert_eq!(grads.len(), 3);
    /// assert_eq!(op.unstack(&batch)?[2].as_slice()?, &[2.0; 4]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn stack(&self, elements: &[Element<T>]) -> Result<Element<T>> {
        let c = &*self.core;
        let n = self.batch_size();
        let on_range = elements
            .first()
            .is_some_and(|x| c.host_inner_domain.check_member(x, "").is_err())
            && c.host_inner_range.check_member(&elements[0], "").is_ok();
        if on_range {
            super::batch::stack(&c.host_inner_range, &c.range, &c.range_sizes, n, elements)
        } else {
            super::batch::stack(
                &c.host_inner_domain,
                &c.domain,
                &c.domain_sizes,
                n,
                elements,
            )
        }
    }

    /// The elements of the batch `x` (a host element of the batched domain or of the batched
    /// range), in batch order: elements of the factory's domain or of its range.
    pub fn unstack(&self, x: &Element<T>) -> Result<Vec<Element<T>>> {
        let c = &*self.core;
        let n = self.batch_size();
        let on_range = c.domain.check_member(x, "").is_err() && c.range.check_member(x, "").is_ok();
        if on_range {
            super::batch::unstack(&c.host_inner_range, &c.range, &c.range_sizes, n, x)
        } else {
            super::batch::unstack(&c.host_inner_domain, &c.domain, &c.domain_sizes, n, x)
        }
    }

    /// Builds the replicas of all devices with work now (concurrently), so that a device that
    /// cannot be used is reported here rather than at the first call.
    pub fn warm_up(&self) -> Result<()> {
        let core = &*self.core;
        let busy: Vec<usize> = (0..core.slots.len())
            .filter(|&i| !core.chunks[i].is_empty())
            .collect();
        let name = |&i: &usize| format!("rodl-build-{}", core.slots[i].device);
        run_each(busy, name, |i| {
            let slot = &core.slots[i];
            if self.adjoint {
                slot.backward(core)
            } else {
                slot.forward(core)
            }
            .map(|_| ())
        })?;
        Ok(())
    }
}

/// What a data-parallel operator needs to know of its factory, before anything is built.
struct FactoryInfo {
    domain: SpaceDesc,
    range: SpaceDesc,
    describe: String,
    linear: bool,
}

impl<T: Scalar> Core<T> {
    fn new(
        info: FactoryInfo,
        build: Box<BuildReplica<T>>,
        devices: &[Device],
        chunks: &[usize],
    ) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::invalid("DataParallel needs at least one device"));
        }
        if chunks.len() != devices.len() {
            return Err(Error::invalid(format!(
                "DataParallel: {} chunk sizes for {} devices",
                chunks.len(),
                devices.len()
            )));
        }
        let batch: usize = chunks.iter().sum();
        if batch == 0 {
            return Err(Error::invalid("DataParallel: the batch must not be empty"));
        }
        let domain = info.domain.batched(batch)?.build(Device::Cpu)?;
        let range = info.range.batched(batch)?.build(Device::Cpu)?;
        let host_inner_domain = info.domain.build(Device::Cpu)?;
        let host_inner_range = info.range.build(Device::Cpu)?;
        let mut start = 0;
        let ranges = chunks
            .iter()
            .map(|&n| {
                start += n;
                start - n..start
            })
            .collect();
        let slots = devices
            .iter()
            .map(|&device| Slot {
                device,
                forward: Mutex::new(None),
                backward: Mutex::new(None),
                builds: AtomicUsize::new(0),
            })
            .collect();
        Ok(Self {
            build,
            describe: info.describe,
            linear: info.linear,
            slots,
            chunks: ranges,
            domain_sizes: info.domain.leaf_sizes(),
            range_sizes: info.range.leaf_sizes(),
            domain,
            range,
            host_inner_domain,
            host_inner_range,
            norm: NormCache::new(),
        })
    }

    /// Applies the replicas (or their adjoints) to the batch `x`, writing `out`.
    fn run(&self, adjoint: bool, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let (in_sizes, out_sizes) = if adjoint {
            (&self.range_sizes, &self.domain_sizes)
        } else {
            (&self.domain_sizes, &self.range_sizes)
        };
        let mut ins = Vec::new();
        leaves(x, &mut ins)?;
        let mut outs = Vec::new();
        leaves_mut(out, &mut outs)?;
        let ins = split_rows(ins, in_sizes, &self.chunks);
        let outs = split_rows_mut(outs, out_sizes, &self.chunks);
        let work: Vec<Share<'_, T>> = ins
            .into_iter()
            .zip(outs)
            .enumerate()
            .filter(|(i, _)| !self.chunks[*i].is_empty())
            .map(|(i, (a, b))| (i, a, b))
            .collect();
        let name = |w: &Share<'_, T>| format!("rodl-data-parallel-{}", self.slots[w.0].device);
        run_each(work, name, |(i, ins, outs)| {
            self.run_slot(i, adjoint, &ins, outs, in_sizes, out_sizes)
        })?;
        Ok(())
    }

    /// One device's share: its replica applied to each of its batch elements.
    fn run_slot(
        &self,
        i: usize,
        adjoint: bool,
        ins: &[&[T]],
        mut outs: Vec<&mut [T]>,
        in_sizes: &[usize],
        out_sizes: &[usize],
    ) -> Result<()> {
        let slot = &self.slots[i];
        let rep = if adjoint {
            slot.backward(self)?
        } else {
            slot.forward(self)?
        };
        let device = slot.device;
        let count = self.chunks[i].len();
        rep.input.with(|xin| {
            rep.output.with(|yout| {
                for b in 0..count {
                    let mut dst = Vec::new();
                    leaves_mut(xin, &mut dst)?;
                    for ((d, src), &n) in dst.into_iter().zip(ins).zip(in_sizes) {
                        d.copy_from_slice(&src[b * n..(b + 1) * n]);
                    }
                    let host_out;
                    let result = if device == Device::Cpu {
                        rep.op.apply_into(xin, yout)?;
                        &*yout
                    } else {
                        let x_dev = xin.to_device(device)?;
                        rep.op.apply_into(&x_dev, yout)?;
                        host_out = yout.to_host()?;
                        &host_out
                    };
                    let mut src = Vec::new();
                    leaves(result, &mut src)?;
                    for ((d, s), &n) in outs.iter_mut().zip(src).zip(out_sizes) {
                        d[b * n..(b + 1) * n].copy_from_slice(s);
                    }
                }
                Ok(())
            })
        })
    }
}

impl<T: Scalar> Slot<T> {
    /// The replica of this device, built on first use.
    fn forward(&self, core: &Core<T>) -> Result<Arc<Replica<T>>> {
        let mut g = lock(&self.forward);
        if let Some(r) = &*g {
            return Ok(r.clone());
        }
        // The factory checks what it built against its descriptions and the device.
        let (op, lin) = (core.build)(self.device)?;
        self.builds.fetch_add(1, Ordering::Relaxed);
        let r = Arc::new(Replica::new(op, lin, core.host_inner_domain.clone()));
        *g = Some(r.clone());
        Ok(r)
    }

    /// The adjoint of this device's replica, taken on first use.
    fn backward(&self, core: &Core<T>) -> Result<Arc<Replica<T>>> {
        let mut g = lock(&self.backward);
        if let Some(r) = &*g {
            return Ok(r.clone());
        }
        let fwd = self.forward(core)?;
        let lin = fwd.lin.as_ref().ok_or_else(|| {
            Error::NotLinear(format!("DataParallel: {} has no adjoint", fwd.op.name()))
        })?;
        let adj = lin.adjoint()?;
        let r = Arc::new(Replica::new(
            adj.clone(),
            Some(adj),
            core.host_inner_range.clone(),
        ));
        *g = Some(r.clone());
        Ok(r)
    }
}

impl<T: Scalar, O> Operator<T> for DataParallel<T, O> {
    fn domain(&self) -> &Space<T> {
        if self.adjoint {
            &self.core.range
        } else {
            &self.core.domain
        }
    }
    fn range(&self) -> &Space<T> {
        if self.adjoint {
            &self.core.domain
        } else {
            &self.core.range
        }
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.core.run(self.adjoint, x, out)
    }
    fn is_linear(&self) -> bool {
        self.core.linear
    }
    fn name(&self) -> String {
        let devices: Vec<String> = self.devices().iter().map(|d| d.to_string()).collect();
        format!(
            "DataParallel({}{} on [{}])",
            self.core.describe,
            if self.adjoint { "*" } else { "" },
            devices.join(", ")
        )
    }
}

impl<T: Scalar> LinearOperator<T> for DataParallel<T, LinOp<T>> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(DataParallel::<T, LinOp<T>> {
            core: self.core.clone(),
            adjoint: !self.adjoint,
            _o: PhantomData,
        }))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.core.norm)
    }
}

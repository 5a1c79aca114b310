//! Other libraries' GPU memory as rodl's: applying an operator to tensors that PyTorch, CuPy or
//! JAX own (e.g. through DLPack), in place on their device and on their stream.
//!
//! [`apply_to_cuda_memory`] wraps the caller's device buffers as elements of the operator's
//! (device-resident) domain and range for the duration of the call — no copy to the host or
//! within the device — and orders rodl's work after the work queued so far on the caller's
//! stream, and the caller's stream after rodl's, with CUDA events: neither the host nor the
//! device is synchronised, and no global state changes.
//!
//! # Graph capture
//!
//! * **On the caller's stream.** A call whose stream is being captured into a CUDA graph
//!   (`torch.cuda.graph`, `cudaStreamBeginCapture`) records rodl's kernels, copies and
//!   temporaries into that graph; replays compute what the buffers hold then.
//! * **On another thread, in global mode.** While any thread captures in *global* mode (the
//!   default of `cudaStreamBeginCapture` and of `torch.cuda.graph`), the driver forbids
//!   allocations, frees and host waits on every other thread. A rodl call on another thread
//!   that meets such a capture fails at once with [`Error::GraphCapture`], which names the
//!   mode and the remedy; it neither waits nor retries, and it does not fail later calls once
//!   the capture has ended. (The capture itself is invalidated by the driver, as it is by any
//!   forbidden call there.)
//! * **On another thread, in `thread_local` or `relaxed` mode.** rodl runs beside the capture
//!   as at any other time, and the capture stays valid. This is the remedy: in PyTorch,
//!   `torch.cuda.graph(g, capture_error_mode="thread_local")`.

use crate::backend::cuda::Cuda;
use crate::backend::Runtime;
use crate::element::ElementKind;
use crate::storage::Storage;
use crate::{Device, Element, Error, Operator, Result, Scalar, Space};

/// A borrowed element: gives its memory back (never frees it) when dropped, also on errors.
/// `at` holds the device address of each of its tensors (one, or one per part of a product).
struct Borrowed<T: Scalar> {
    elem: Option<Element<T>>,
    at: Vec<u64>,
}

impl<T: Scalar> Borrowed<T> {
    /// An element of `space` at `ptr`: a tensor, or for a product space of tensor spaces its
    /// parts one after the other (the parts stacked along a leading axis, as the Python package
    /// lays out such an element).
    ///
    /// # Safety
    /// As [`DeviceTensor::borrow_raw`](crate::backend::cuda::DeviceTensor::borrow_raw), for
    /// `space.size()` values at `ptr`.
    unsafe fn new(id: usize, ptr: u64, space: &Space<T>) -> Result<Self> {
        if !space.is_product() {
            // SAFETY: forwarded to the caller.
            return unsafe { Self::of_batch(id, ptr, space, None) };
        }
        let bytes = std::mem::size_of::<T>() as u64;
        let mut parts = Vec::new();
        let mut at = Vec::new();
        let mut next = ptr;
        for p in space.parts()? {
            let part = if p.is_product() {
                Err(Error::Unsupported(
                    "apply_to_cuda_memory: nested product spaces".into(),
                ))
            } else {
                // SAFETY: the part's values lie within the element's (the caller's promise),
                // the parts one after the other.
                p.shape()
                    .and_then(|shape| unsafe { Storage::borrow_cuda(id, next, shape) })
            };
            match part {
                Ok(s) => {
                    parts.push(Element::tensor(s));
                    at.push(next);
                    next += p.size() as u64 * bytes;
                }
                Err(e) => {
                    // Give back what was borrowed so far (never free the caller's memory).
                    parts.into_iter().for_each(|e| {
                        release(e);
                    });
                    return Err(e);
                }
            }
        }
        Ok(Self {
            elem: Some(Element::product(parts)),
            at,
        })
    }

    /// A tensor of `space`'s shape, or `batch` elements of `space` as one tensor
    /// ([`Space::batch_shape`]: a leading batch axis, and a parts axis for a power space).
    ///
    /// # Safety
    /// As [`Borrowed::new`], for the whole batch.
    unsafe fn of_batch(
        id: usize,
        ptr: u64,
        space: &Space<T>,
        batch: Option<usize>,
    ) -> Result<Self> {
        let shape = match batch {
            Some(k) => space.batch_shape(k)?,
            None => space.shape()?.to_vec(),
        };
        // SAFETY: forwarded to the caller.
        let s = unsafe { Storage::borrow_cuda(id, ptr, &shape)? };
        Ok(Self {
            elem: Some(Element::tensor(s)),
            at: vec![ptr],
        })
    }

    fn get(&self) -> &Element<T> {
        self.elem.as_ref().expect("present until dropped")
    }

    fn get_mut(&mut self) -> &mut Element<T> {
        self.elem.as_mut().expect("present until dropped")
    }

    /// Gives the memory back; whether every tensor of the element still held the memory it
    /// was given (an operator that replaced a part's storage did not write into the caller's
    /// memory).
    fn release(mut self) -> bool {
        let mut held = Vec::new();
        if let Some(e) = self.elem.take() {
            release_into(e, &mut held);
        }
        held.len() == self.at.len() && held.iter().zip(&self.at).all(|(h, a)| *h == Some(*a))
    }
}

/// Gives every tensor of `e` back; the device address each held at the end, in order.
fn release_into<T: Scalar>(e: Element<T>, held: &mut Vec<Option<u64>>) {
    match e.kind {
        ElementKind::Tensor(s) => held.push(s.release_borrowed()),
        ElementKind::Product(parts) => parts.into_iter().for_each(|p| release_into(p, held)),
    }
}

/// Gives every tensor of `e` back.
fn release<T: Scalar>(e: Element<T>) {
    release_into(e, &mut Vec::new());
}

impl<T: Scalar> Drop for Borrowed<T> {
    fn drop(&mut self) {
        if let Some(e) = self.elem.take() {
            release(e);
        }
    }
}

/// Applies `op` to `batch` inputs stored one after the other (C order, each of the domain's
/// shape) at device address `input`, writing the `batch` results one after the other at
/// `output` — in one pass per chunk of [`BatchedOperator::max_batch`](crate::BatchedOperator)
/// entries where the operator has a [batched form](Operator::batched), else entry by entry — on
/// the GPU of the operator's domain and range, **on the caller's CUDA `stream`** (0: the legacy
/// default stream): every kernel, copy and temporary allocation of the call is queued there, in
/// the stream's order, with no synchronisation of host or device (rodl's own stream is ordered
/// with it by events, for the tables an operator uploaded when it was built). `op`'s domain and range must be on the same CUDA device
/// (build the operator for that device, e.g. with a [factory](crate::factory)); each batch
/// entry is one application. An element of a product space of tensor spaces (the range of a
/// `Gradient`, say) is its parts one after the other, as the Python package stacks them along
/// a leading axis.
///
/// Errors (before touching the memory) for spaces that are not on one CUDA device, nested
/// product spaces, and a build without the `cuda` feature; errors of the operator are returned
/// as they are, with the output unspecified.
///
/// # Safety
/// `input` must address `batch × domain.size()` values of `T` and `output` `batch ×
/// range.size()` values of `T`, both live allocations of that device's primary context that
/// do not overlap; `stream` must be a live stream of that context (or 0). The memory must stay
/// allocated until the work queued on `stream` after this call has run (the usual contract of
/// stream-ordered memory, which PyTorch's caching allocator keeps for tensors used on their
/// current stream).
pub unsafe fn apply_to_cuda_memory<T: Scalar>(
    op: &dyn Operator<T>,
    input: u64,
    output: u64,
    batch: usize,
    stream: u64,
) -> Result<()> {
    let (domain, range) = (op.domain(), op.range());
    let id = match (domain.device(), range.device()) {
        (Device::Cuda(a), Device::Cuda(b)) if a == b => a,
        (d, r) => {
            return Err(Error::device_mismatch(
                "apply_to_cuda_memory: the operator's domain and range",
                "one CUDA device (build the operator for the tensors' device)",
                format!("{d} and {r}"),
            ))
        }
    };
    for s in [domain, range] {
        if s.is_product() && s.parts()?.iter().any(Space::is_product) {
            return Err(Error::Unsupported(
                "apply_to_cuda_memory: nested product spaces".into(),
            ));
        }
    }
    let (n_in, n_out) = (domain.size(), range.size());
    let bytes = std::mem::size_of::<T>() as u64;
    let end = |base: u64, n: usize| {
        (batch as u64)
            .checked_mul(n as u64)
            .and_then(|k| k.checked_mul(bytes))
            .and_then(|b| base.checked_add(b))
            .ok_or_else(|| Error::invalid("apply_to_cuda_memory: the batch overflows addresses"))
    };
    end(input, n_in)?;
    end(output, n_out)?;
    let written = |y: Borrowed<T>| -> Result<()> {
        if !y.release() {
            return Err(Error::invalid(format!(
                "apply_to_cuda_memory: {} did not write into the output it was given",
                op.name()
            )));
        }
        Ok(())
    };
    let mut run = || -> Result<()> {
        if let Some(batched) = op.batched() {
            // Whole batches in one pass, in chunks of at most `max_batch` entries.
            let max = batched.max_batch().max(1);
            let mut done = 0;
            while done < batch {
                let k = (batch - done).min(max);
                let at_in = input + (done * n_in) as u64 * bytes;
                let at_out = output + (done * n_out) as u64 * bytes;
                // SAFETY: within the caller's buffers (sizes checked above, validity promised).
                let x = unsafe { Borrowed::of_batch(id, at_in, domain, Some(k))? };
                let mut y = unsafe { Borrowed::of_batch(id, at_out, range, Some(k))? };
                batched.apply_batch(x.get(), y.get_mut(), k)?;
                x.release();
                written(y)?;
                done += k;
            }
            return Ok(());
        }
        for b in 0..batch as u64 {
            let at_in = input + b * n_in as u64 * bytes;
            let at_out = output + b * n_out as u64 * bytes;
            // SAFETY: within the caller's buffers (sizes checked above, validity promised).
            let x = unsafe { Borrowed::new(id, at_in, domain)? };
            let mut y = unsafe { Borrowed::new(id, at_out, range)? };
            op.apply_into(x.get(), y.get_mut())?;
            x.release();
            written(y)?;
        }
        Ok(())
    };
    // SAFETY: the caller guarantees the stream.
    unsafe { Cuda::run_on_stream(id, stream, &mut run) }
}

/// Runs `f` on the caller's CUDA memory lent as one element: the `shape`-shaped values of type
/// `T` (C order) at device address `ptr` of GPU `id`, **on the caller's CUDA `stream`** (0: the
/// legacy default stream), ordered with it as [`apply_to_cuda_memory`] is (no synchronisation
/// of host or device beyond what `f` itself does, e.g. reading a count back). For the
/// functions on elements that work in place — the preprocessing of
/// [`crate::preprocess`] such as [`FlatField::apply_element`](crate::preprocess::FlatField::apply_element)
/// or [`remove_stripes_sorting_element`](crate::preprocess::remove_stripes_sorting_element):
/// the results are left in the caller's memory, with no copy to the host.
///
/// An `f` that replaced the element's storage (instead of writing into it) is an error: its
/// results would not be in the caller's memory.
///
/// # Safety
/// `ptr` must address `shape`'s product of values of type `T`, a live allocation of GPU `id`'s
/// primary context that nothing else reads or writes during the call other than through work
/// ordered on `stream`; `stream` must be a live stream of that context (or 0); the memory must
/// stay allocated until the work queued on `stream` after this call has run.
pub unsafe fn with_cuda_memory<T: Scalar, R>(
    id: usize,
    ptr: u64,
    shape: &[usize],
    stream: u64,
    f: impl FnOnce(&mut Element<T>) -> Result<R>,
) -> Result<R> {
    shape
        .iter()
        .try_fold(1usize, |n, &k| n.checked_mul(k))
        .and_then(|n| n.checked_mul(std::mem::size_of::<T>()))
        .and_then(|b| ptr.checked_add(b as u64))
        .ok_or_else(|| Error::invalid("with_cuda_memory: the tensor's size overflows addresses"))?;
    let mut f = Some(f);
    let mut result = None;
    let mut run = || -> Result<()> {
        // SAFETY: the caller's memory, as promised.
        let s = unsafe { Storage::borrow_cuda(id, ptr, shape)? };
        let mut x = Borrowed {
            elem: Some(Element::tensor(s)),
            at: vec![ptr],
        };
        let f = f
            .take()
            .ok_or_else(|| Error::invalid("with_cuda_memory: run twice"))?;
        let r = f(x.get_mut())?;
        if !x.release() {
            return Err(Error::invalid(
                "with_cuda_memory: the function replaced the element's memory instead of writing into it",
            ));
        }
        result = Some(r);
        Ok(())
    };
    // SAFETY: the caller guarantees the stream.
    unsafe { Cuda::run_on_stream(id, stream, &mut run)? };
    result.ok_or_else(|| Error::invalid("with_cuda_memory: the function did not run"))
}

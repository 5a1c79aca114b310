//! Other libraries' GPU memory as rodl's: applying an operator to tensors that PyTorch, CuPy or
//! JAX own (e.g. through DLPack), in place on their device, ordered on their stream.
//!
//! [`apply_to_cuda_memory`] wraps the caller's device buffers as elements of the operator's
//! (device-resident) domain and range for the duration of the call — no copy to the host or
//! within the device — and orders rodl's work after the work queued so far on the caller's
//! stream, and the caller's stream after rodl's, with CUDA events: neither the host nor the
//! device is synchronised, and no global state changes.

use crate::backend::cuda::Cuda;
use crate::backend::Runtime;
use crate::element::ElementKind;
use crate::storage::Storage;
use crate::{Device, Element, Error, Operator, Result, Scalar, Space};

/// A borrowed element: gives its memory back (never frees it) when dropped, also on errors.
struct Borrowed<T: Scalar>(Option<Element<T>>);

impl<T: Scalar> Borrowed<T> {
    /// # Safety
    /// As [`DeviceTensor::borrow_raw`](crate::backend::cuda::DeviceTensor::borrow_raw).
    unsafe fn new(id: usize, ptr: u64, space: &Space<T>) -> Result<Self> {
        // SAFETY: forwarded to the caller.
        unsafe { Self::of_batch(id, ptr, space, None) }
    }

    /// A tensor of `space`'s shape, or of `batch` of them (a leading batch axis).
    ///
    /// # Safety
    /// As [`Borrowed::new`], for the whole batch.
    unsafe fn of_batch(
        id: usize,
        ptr: u64,
        space: &Space<T>,
        batch: Option<usize>,
    ) -> Result<Self> {
        let mut shape: Vec<usize> = batch.into_iter().collect();
        shape.extend_from_slice(space.shape()?);
        // SAFETY: forwarded to the caller.
        let s = unsafe { Storage::borrow_cuda(id, ptr, &shape)? };
        Ok(Self(Some(Element::tensor(s))))
    }

    fn get(&self) -> &Element<T> {
        self.0.as_ref().expect("present until dropped")
    }

    fn get_mut(&mut self) -> &mut Element<T> {
        self.0.as_mut().expect("present until dropped")
    }

    /// Gives the memory back; the device address the element held at the end.
    fn release(mut self) -> Option<u64> {
        self.0.take().and_then(release)
    }
}

fn release<T: Scalar>(e: Element<T>) -> Option<u64> {
    match e.kind {
        ElementKind::Tensor(s) => s.release_borrowed(),
        ElementKind::Product(parts) => {
            // Never built here; give every part back all the same.
            parts.into_iter().for_each(|p| {
                release(p);
            });
            None
        }
    }
}

impl<T: Scalar> Drop for Borrowed<T> {
    fn drop(&mut self) {
        if let Some(e) = self.0.take() {
            release(e);
        }
    }
}

/// Applies `op` to `batch` inputs stored one after the other (C order, each of the domain's
/// shape) at device address `input`, writing the `batch` results one after the other at
/// `output` — in one pass per chunk of [`BatchedOperator::max_batch`](crate::BatchedOperator)
/// entries where the operator has a [batched form](Operator::batched), else entry by entry — on the GPU of the operator's domain and range, ordered after the work queued on
/// the caller's CUDA `stream` (0: the default stream) and with that stream waiting for the
/// result (events, no synchronisation). `op`'s domain and range must be tensor spaces on the
/// same CUDA device (build the operator for that device, e.g. with a
/// [factory](crate::factory)); each batch entry is one application.
///
/// Errors (before touching the memory) for spaces that are not on one CUDA device, product
/// spaces, and a build without the `cuda` feature; errors of the operator are returned as they
/// are, with the output unspecified.
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
            return Err(Error::DeviceMismatch {
                context: "apply_to_cuda_memory: the operator's domain and range".into(),
                expected: "one CUDA device (build the operator for the tensors' device)".into(),
                got: format!("{d} and {r}"),
            })
        }
    };
    if domain.is_product() || range.is_product() {
        return Err(Error::Unsupported(
            "apply_to_cuda_memory: operators on product spaces".into(),
        ));
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
    let written = |y: Borrowed<T>, at: u64| -> Result<()> {
        if y.release() != Some(at) {
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
                written(y, at_out)?;
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
            written(y, at_out)?;
        }
        Ok(())
    };
    // SAFETY: the caller guarantees the stream.
    unsafe { Cuda::ordered_with_stream(id, stream, &mut run) }
}

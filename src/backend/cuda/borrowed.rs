//! Work queued on another library's CUDA stream: while [`run_on`] runs a closure, every stream
//! lookup of that device on the calling thread ([`DeviceCtx::stream`](super::DeviceCtx::stream))
//! answers the borrowed stream, so kernels, copies, stream-ordered allocations and their frees,
//! and cuFFT's transforms all go there, in the caller's order.
//!
//! # Why it is safe
//!
//! * **What rodl queued before** on its own stream (the tables uploaded at construction, work of
//!   earlier calls) comes first: the borrowed stream waits for an event of rodl's stream before
//!   the closure runs.
//! * **What rodl queues after** on its own stream (frees of buffers the call used, later calls on
//!   other streams, which begin by waiting for rodl's stream) comes after: rodl's stream waits for
//!   an event of the borrowed stream when the closure returns. Calls on two borrowed streams of a
//!   device are therefore ordered one after the other wherever they share a buffer.
//! * **Buffers that outlive the call** (caches filled on first use: a composite operator's
//!   temporary, the reduction scratch, cuFFT's plans for batches) must not be freed on a stream
//!   that may be gone by then: they are made inside [`lasting`], which queues their allocation on
//!   rodl's own stream and then orders the borrowed stream after it. Temporaries freed within the
//!   call are freed on the borrowed stream, in order with their last use.
//!
//! * **CUDA graph capture.** While the lent stream is being captured (PyTorch's
//!   `torch.cuda.graph`), rodl's work is recorded into the graph like the caller's: events of
//!   rodl's own stream cannot be part of the graph, so the waits for it become host waits for
//!   rodl's own stream (which holds only rodl's construction-time work), and rodl's stream is not
//!   tied to the captured work. The buffers an operator made when it was built must outlive the
//!   graph's replays, as any captured tensor must.
//!
//! The borrowing is per thread: work that a call hands to other threads runs on rodl's stream.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

use super::driver_error::driver_err;
use crate::Result;

/// A stream lent for one device: the device ordinal, the borrowed stream, rodl's own stream, and
/// whether the borrowed stream is being captured into a CUDA graph.
struct Lent {
    id: usize,
    stream: Arc<CudaStream>,
    own: Arc<CudaStream>,
    capturing: bool,
}

/// Makes `stream` wait for the work queued so far on `own`: by an event, or while `stream` is
/// being captured into a graph (where an event of rodl's stream would not be part of the graph)
/// by waiting on the host for `own`, which holds only rodl's own work.
fn after_own(stream: &CudaStream, own: &CudaStream, capturing: bool) -> Result<()> {
    if capturing {
        // rodl's stream takes no part in the capture.
        relaxed(|| {
            own.synchronize()
                .map_err(driver_err("waiting for rodl's stream"))
        })
    } else {
        stream
            .join(own)
            .map_err(driver_err("ordering the caller's stream after rodl's"))
    }
}

/// Runs `wait` (a host wait) with this thread's capture mode relaxed: a host wait counts as
/// unsafe during a global-mode capture on any thread; the old mode is put back afterwards.
fn relaxed(wait: impl FnOnce() -> Result<()>) -> Result<()> {
    use cudarc::driver::sys;
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: a valid pointer to a mode; the old mode is put back below.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
        .result()
        .map_err(driver_err("relaxing the capture mode"))?;
    let waited = wait();
    // SAFETY: as above.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
        .result()
        .map_err(driver_err("restoring the capture mode"))?;
    waited
}

/// Whether `stream` (not the legacy default stream, which cannot be captured) is being
/// captured into a CUDA graph.
fn is_capturing(stream: &CudaStream, raw: u64) -> Result<bool> {
    use cudarc::driver::sys::CUstreamCaptureStatus as S;
    if raw == 0 {
        return Ok(false);
    }
    // SAFETY: a live stream (the caller's promise to `run_on`).
    let status = unsafe { cudarc::driver::result::stream::is_capturing(stream.cu_stream()) }
        .map_err(driver_err("querying the caller's stream"))?;
    match status {
        S::CU_STREAM_CAPTURE_STATUS_NONE => Ok(false),
        S::CU_STREAM_CAPTURE_STATUS_ACTIVE => Ok(true),
        _ => Err(crate::Error::Cuda(
            "the caller's stream is in an invalidated CUDA graph capture".into(),
        )),
    }
}

thread_local! {
    /// The streams lent on this thread, innermost last.
    static LENT: RefCell<Vec<Lent>> = const { RefCell::new(Vec::new()) };
    /// How many [`lasting`] scopes are open on this thread (inside one, rodl's own stream is used).
    static LASTING: Cell<usize> = const { Cell::new(0) };
}

/// The stream lent for device `id` on this thread, if any (none inside [`lasting`]).
pub(super) fn current(id: usize) -> Option<Arc<CudaStream>> {
    if LASTING.with(Cell::get) > 0 {
        return None;
    }
    LENT.with(|l| {
        l.borrow()
            .iter()
            .rev()
            .find(|b| b.id == id)
            .map(|b| Arc::clone(&b.stream))
    })
}

/// Whether the stream lent for device `id` on this thread is being captured into a CUDA graph
/// (false when none is lent, and inside [`lasting`]).
pub(super) fn current_is_capturing(id: usize) -> bool {
    if LASTING.with(Cell::get) > 0 {
        return false;
    }
    LENT.with(|l| {
        l.borrow()
            .iter()
            .rev()
            .find(|b| b.id == id)
            .is_some_and(|b| b.capturing)
    })
}

/// Orders the work queued next on `stream` after `event` (recorded on any stream of the
/// device): a stream wait; during a graph capture of `stream`, where waiting on an event
/// recorded outside the capture is not allowed, a host wait for the event instead (in relaxed
/// capture mode: [`relaxed`]).
pub(super) fn order_after(stream: &CudaStream, event: &CudaEvent, capturing: bool) -> Result<()> {
    if !capturing {
        return stream
            .wait(event)
            .map_err(driver_err("ordering a stream after an event"));
    }
    relaxed(|| {
        event
            .synchronize()
            .map_err(driver_err("waiting for an event"))
    })
}

/// Takes the innermost lent stream off this thread's list when dropped (also on unwinding).
struct Return;

impl Drop for Return {
    fn drop(&mut self) {
        LENT.with(|l| {
            l.borrow_mut().pop();
        });
    }
}

/// Runs `f` with device `id`'s work on this thread queued on the stream `raw` of context `ctx`,
/// ordered after rodl's stream `own` and before what `own` gets next (see the module docs).
///
/// # Safety
/// `raw` must be a live stream of `ctx` (or null, the legacy default stream) that stays alive
/// until the work queued on it is done.
pub(super) unsafe fn run_on(
    id: usize,
    ctx: &Arc<CudaContext>,
    own: &Arc<CudaStream>,
    raw: u64,
    f: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    // SAFETY: the caller guarantees the stream; the wrapper never destroys it.
    let stream = unsafe { ctx.wrap_borrowed_stream(raw as cudarc::driver::sys::CUstream) };
    let capturing = is_capturing(&stream, raw)?;
    after_own(&stream, own, capturing)?;
    let result = {
        LENT.with(|l| {
            l.borrow_mut().push(Lent {
                id,
                stream: Arc::clone(&stream),
                own: Arc::clone(own),
                capturing,
            })
        });
        let _back = Return;
        f()
    };
    // Whatever f did, rodl's later work comes after the work it queued (in a graph capture the
    // work is only recorded; the graph's owner orders its replays).
    if !capturing {
        own.join(&stream)
            .map_err(driver_err("ordering rodl's stream after the caller's"))?;
    }
    result
}

/// Runs `f`, whose device buffers outlive the current call, with rodl's own streams; then every
/// stream lent on this thread waits for what `f` queued there. Outside a lent stream, just `f`.
pub(crate) fn lasting<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    let lent: Vec<(Arc<CudaStream>, Arc<CudaStream>, bool)> = LENT.with(|l| {
        l.borrow()
            .iter()
            .map(|b| (Arc::clone(&b.stream), Arc::clone(&b.own), b.capturing))
            .collect()
    });
    if lent.is_empty() {
        return f();
    }
    struct Close;
    impl Drop for Close {
        fn drop(&mut self) {
            LASTING.with(|c| c.set(c.get().saturating_sub(1)));
        }
    }
    LASTING.with(|c| c.set(c.get() + 1));
    let close = Close;
    let r = f();
    drop(close);
    for (stream, own, capturing) in lent {
        after_own(&stream, &own, capturing)?;
    }
    r
}

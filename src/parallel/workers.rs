//! Running one job per device on scoped host threads.

use std::thread::ScopedJoinHandle;

use crate::{Error, Result};

/// Runs `f` on every item — on the calling thread when there is one item, otherwise
/// concurrently, one scoped thread per item named `name(item)` — and returns the results in
/// item order, or the first error in item order. A worker's panic is re-raised.
pub(crate) fn run_each<I, R, F>(items: Vec<I>, name: impl Fn(&I) -> String, f: F) -> Result<Vec<R>>
where
    I: Send,
    R: Send,
    F: Fn(I) -> Result<R> + Sync,
{
    if items.len() <= 1 {
        return items.into_iter().map(f).collect();
    }
    let f = &f;
    std::thread::scope(|s| {
        let mut handles: Vec<ScopedJoinHandle<'_, Result<R>>> = Vec::with_capacity(items.len());
        let mut spawn_err = None;
        for item in items {
            let spawned = std::thread::Builder::new()
                .name(name(&item))
                .spawn_scoped(s, move || f(item));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_err = Some(Error::invalid(format!("cannot start a worker thread: {e}")));
                    break;
                }
            }
        }
        let mut out = Vec::with_capacity(handles.len());
        let mut first = spawn_err;
        for h in handles {
            match h.join() {
                Ok(Ok(r)) => out.push(r),
                Ok(Err(e)) => {
                    first.get_or_insert(e);
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        first.map_or(Ok(out), Err)
    })
}

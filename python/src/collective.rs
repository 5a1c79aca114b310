//! Collective calls from Python: an operator or space whose elements are one rank's share of a
//! distributed computation (`rodl.distributed`) makes every call collective, so the checks of
//! the Python arguments are agreed across the ranks before any communication starts. Bad
//! input on one rank then raises `rodl.DistributedError` naming it on every rank, instead of
//! leaving the others waiting in a collective that it never joins.

use pyo3::prelude::*;
use rodl::{Across, LinOp, Scalar, Space};

use crate::errors::to_py;

/// The ranks an operator's calls are collective over: those of its domain's or range's share
/// (`None` for an operator of one process).
pub fn across_of_op<T: Scalar>(op: &LinOp<T>) -> Option<Across> {
    across_of(op.domain()).or_else(|| across_of(op.range()))
}

/// The ranks a space's reductions are collective over (`None` for a space of one process).
pub fn across_of<T: Scalar>(space: &Space<T>) -> Option<Across> {
    space.across().cloned()
}

/// The rank's outcome `local` of its checks, agreed across `across` (collective): `local`
/// itself when every rank succeeded, else `rodl.DistributedError` naming the lowest failing
/// rank and its exception, the same on every rank. Without `across`, `local` as it is.
pub fn agreed<V>(py: Python<'_>, across: Option<&Across>, local: PyResult<V>) -> PyResult<V> {
    let Some(a) = across else { return local };
    let outcome = match &local {
        Ok(_) => Ok(()),
        Err(e) => Err(rodl::Error::Distributed {
            rank: a.rank(),
            message: describe(py, e),
        }),
    };
    py.detach(|| a.agree(outcome)).map_err(to_py)?;
    local
}

/// Collective: a `rodl.DistributedError` on every rank unless all ranks pass the same `count`
/// (the batch length of an application, which fixes how many collectives follow).
pub fn same_count(
    py: Python<'_>,
    across: Option<&Across>,
    count: usize,
    what: &str,
) -> PyResult<()> {
    let Some(a) = across else { return Ok(()) };
    let all = py
        .detach(|| a.gather_outcome(Ok(vec![count as f64])))
        .map_err(to_py)?;
    let counts: Vec<usize> = all
        .iter()
        .map(|v| v.first().copied().unwrap_or(0.0) as usize)
        .collect();
    match counts.iter().position(|&c| c != counts[0]) {
        None => Ok(()),
        Some(rank) => Err(to_py(rodl::Error::Distributed {
            rank,
            message: format!(
                "the ranks passed {what} of different lengths ({counts:?} in rank order): every \
                 rank must make the same calls"
            ),
        })),
    }
}

/// `"ValueError: message"` for the message other ranks see.
pub fn describe(py: Python<'_>, e: &PyErr) -> String {
    let name = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    format!("{name}: {msg}")
}

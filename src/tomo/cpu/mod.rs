//! CPU (rayon) projectors.

pub(crate) mod joseph;
pub(crate) mod ray;

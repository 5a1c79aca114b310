//! Execution strategies over several devices.
//!
//! [`DataParallel`] runs one replica of a factory's operator per device, each on its slice of a
//! batch ([`DataParallel::stack`] and [`DataParallel::unstack`] go between a batch and its
//! elements). The ray transform split by views across devices,
//! [`MultiDeviceRayTransform`](crate::tomo::MultiDeviceRayTransform), lives with the ray
//! transform and uses the same workers: one scoped host thread per device with work.

mod batch;
mod data_parallel;
mod workers;

pub use data_parallel::DataParallel;
pub(crate) use workers::run_each;

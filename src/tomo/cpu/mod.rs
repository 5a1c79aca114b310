//! CPU (rayon) projectors.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod bins2d;
#[cfg(target_arch = "x86_64")]
mod column3d;
#[cfg(target_arch = "x86_64")]
mod gather2d;
pub(crate) mod joseph;
mod kernels;
#[cfg(target_arch = "x86_64")]
mod lanes;
pub(crate) mod ray;
#[cfg(target_arch = "x86_64")]
mod ray_avx2;
#[cfg(target_arch = "x86_64")]
mod window2d;
#[cfg(target_arch = "x86_64")]
mod window3d;

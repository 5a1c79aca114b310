//! Preprocessing of scanner data before reconstruction: flat/dark normalisation
//! ([`FlatField`]), `−log` with a documented clamp ([`neg_log()`]), zinger removal
//! ([`remove_zingers`]), stripe (ring) removal ([`remove_stripes_sorting`], Vo et al. 2018) and
//! single-material phase retrieval ([`paganin()`], Paganin et al. 2002) and the centre of
//! rotation of parallel-beam ([`find_centre_parallel`]) and circular cone-beam scans
//! ([`find_centre_cone`]), whose result is a detector shift for the geometry, never a
//! resampling of the data.
//!
//! Every step works in place on host arrays in rodl's sinogram layout `[angle, u, v]` (or a
//! chunk of it: a range of views for the per-view steps, all views of a range of rows for the
//! stripe removal), in parallel with rayon, so a scan larger than memory is processed chunk by
//! chunk as it is read (see [`crate::io::for_each_chunk`]).
//!
//! The same steps on elements of a space, on any device — [`FlatField::apply_element`],
//! [`FlatField::apply_neg_log_element`] (fused), [`neg_log_element`],
//! [`remove_zingers_element`], [`remove_stripes_sorting_element`] — run on the host arrays for
//! a host space and as CUDA kernels on the device for a CUDA space (no host round trip), with
//! the host's results: bit for bit for the flat field, the zinger and stripe medians, within 1
//! ulp for `−log` (the device's `logf`). Phase retrieval ([`paganin()`]) and the centre stay
//! on the host.
//!
//! A typical pipeline:
//!
//! ```
//! use ndarray::Array3;
//! use rodl::io::Frames;
//! use rodl::preprocess::{neg_log, remove_stripes_sorting, FlatField, NEG_LOG_FLOOR};
//! let flats = Frames { data: Array3::from_elem([2, 8, 2], 1000.0), positions: None };
//! let darks = Frames { data: Array3::from_elem([2, 8, 2], 100.0), positions: None };
//! let mut p = Array3::from_elem([6, 8, 2], 550.0f32);
//! FlatField::new(&flats, &darks)?.apply(p.view_mut(), None)?; // transmission 0.5
//! neg_log(p.view_mut(), NEG_LOG_FLOOR);                        // line integrals
//! remove_stripes_sorting(p.view_mut(), 3)?;
//! assert!(p.iter().all(|&x| (x - std::f32::consts::LN_2).abs() < 1e-6));
//! # Ok::<(), rodl::Error>(())
//! ```

mod centre;
mod centre_cone;
mod flat_field;
mod neg_log;
mod paganin;
mod stripe;
mod zinger;

pub use centre::{find_centre_parallel, opposite_views, CentreEstimate, CentreOptions};
pub use centre_cone::{find_centre_cone, ConeCentreEstimate, ConeCentreOptions, ConeLengths};
pub use flat_field::{FlatField, FlatFieldReport};
pub use neg_log::{neg_log, neg_log_element, NEG_LOG_FLOOR};
pub use paganin::{paganin, wavelength_m, PaganinOptions, HC_KEV_M};
pub use stripe::{remove_stripes_sorting, remove_stripes_sorting_element};
pub use zinger::{remove_zingers, remove_zingers_element, ZingerOptions};

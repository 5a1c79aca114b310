//! `−log` of transmission, with a clamp for non-positive values.

use ndarray::{ArrayViewMut, Dimension, Zip};

/// The smallest transmission [`neg_log`] takes the logarithm of by default: `1e-6`, i.e. at
/// most `−ln(1e-6) ≈ 13.8` per ray.
pub const NEG_LOG_FLOOR: f32 = 1e-6;

/// Replaces each transmission `t` by the line integral `−ln(t)`, in place (in parallel).
///
/// Clamp: a value below `floor` — zero, negative (noise after dark subtraction) or NaN — is
/// replaced by `floor` first, so the result is at most `−ln(floor)` and always finite; `+∞`
/// gives `−∞`. Values above 1 (more counts than the flat) give negative line integrals and
/// are kept. `floor` must be positive and finite; use [`NEG_LOG_FLOOR`] unless the data call for
/// another.
///
/// ```
/// use ndarray::array;
/// use rodl::preprocess::{neg_log, NEG_LOG_FLOOR};
/// let mut t = array![1.0f32, 0.5, 0.0, -0.1];
/// neg_log(t.view_mut(), NEG_LOG_FLOOR);
/// assert_eq!(t[0], 0.0);
/// assert!((t[1] - std::f32::consts::LN_2).abs() < 1e-7);
/// assert_eq!(t[2], -NEG_LOG_FLOOR.ln());
/// assert_eq!(t[3], t[2]);
/// ```
pub fn neg_log<D: Dimension>(data: ArrayViewMut<'_, f32, D>, floor: f32) {
    let floor = checked_floor(floor);
    Zip::from(data).par_for_each(|x| {
        // `!(x >= floor)` is true for NaN too.
        let t = if !(*x >= floor) { floor } else { *x };
        *x = -t.ln();
    });
}

/// `floor` when it is positive and finite, else [`NEG_LOG_FLOOR`].
pub(crate) fn checked_floor(floor: f32) -> f32 {
    if floor.is_finite() && floor > 0.0 {
        floor
    } else {
        NEG_LOG_FLOOR
    }
}

/// [`neg_log`] on an element of a space (f32, any shape) on any device: on a GPU in one kernel
/// on the device (no host round trip). The device's `logf` is within 1 ulp of the host's, so
/// the results agree with the host's to 1 ulp (the clamp exactly).
///
/// ```
/// use rodl::preprocess::{neg_log_element, NEG_LOG_FLOOR};
/// use rodl::uniform_discr;
/// let space = uniform_discr::<f32>(&[0.0], &[1.0], &[3])?;
/// let mut t = space.element(ndarray::array![1.0f32, 0.5, 0.0].into_dyn())?;
/// neg_log_element(&mut t, NEG_LOG_FLOOR)?;
/// assert_eq!(t.as_slice()?[2], -NEG_LOG_FLOOR.ln());
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn neg_log_element(data: &mut crate::Element<f32>, floor: f32) -> crate::Result<()> {
    let floor = checked_floor(floor);
    match data.storage_mut("neg_log")? {
        crate::storage::Storage::Host(_) => {
            neg_log(data.as_array_mut()?, floor);
            Ok(())
        }
        crate::storage::Storage::Cuda(t) => crate::backend::cuda::preprocess::neg_log(t, floor),
    }
}

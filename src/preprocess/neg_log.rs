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
    let floor = if floor.is_finite() && floor > 0.0 {
        floor
    } else {
        NEG_LOG_FLOOR
    };
    Zip::from(data).par_for_each(|x| {
        // `!(x >= floor)` is true for NaN too.
        let t = if !(*x >= floor) { floor } else { *x };
        *x = -t.ln();
    });
}

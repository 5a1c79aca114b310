//! Parker's smooth step, the transition of the short-scan and helical weights.

use std::f64::consts::PI;

/// The smooth step of Parker weights: 0 below `−½`, `sin²(π/2 (b + ½))` in between, 1 above `½`.
pub(super) fn smooth_step(b: f64) -> f64 {
    if b <= -0.5 {
        0.0
    } else if b >= 0.5 {
        1.0
    } else {
        0.5 * (1.0 + (PI * b).sin())
    }
}

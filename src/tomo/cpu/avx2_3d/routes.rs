//! Routes of eight lanes' `c` taps into a sixteen-cell profile: for each pattern of steps (one or
//! two cells) between neighbouring lanes' lower taps, which lane's lower and upper tap lands in
//! each cell of the window.

use std::arch::x86_64::*;

/// For a pattern of seven steps between the lower `c` taps of neighbouring lanes (bit `q − 1`
/// set: lane `q`'s tap is two cells above lane `q − 1`'s, else one), the lane whose lower tap
/// (`lo`) and whose upper tap (`hi`) is each cell of a sixteen-cell window starting at lane 0's
/// lower tap, in two halves of eight; −1 where none.
#[derive(Clone, Copy)]
pub(super) struct Route {
    lo: [[i32; 8]; 2],
    hi: [[i32; 8]; 2],
}

impl Route {
    /// The lane indices of half `h` of the window (lower taps, upper taps).
    #[inline(always)]
    pub(super) unsafe fn lane_vectors(&self, h: usize) -> (__m256i, __m256i) {
        (
            _mm256_loadu_si256(self.lo[h].as_ptr() as *const __m256i),
            _mm256_loadu_si256(self.hi[h].as_ptr() as *const __m256i),
        )
    }
}

/// [`Route`]s of all 128 step patterns.
pub(super) static ROUTES: [Route; 128] = routes();

const fn routes() -> [Route; 128] {
    let mut t = [Route {
        lo: [[-1; 8]; 2],
        hi: [[-1; 8]; 2],
    }; 128];
    let mut p = 0;
    while p < 128 {
        let mut pos = 0;
        let mut q: i32 = 0;
        while q < 8 {
            if q > 0 {
                pos += 1 + ((p >> (q - 1)) & 1);
            }
            t[p].lo[pos / 8][pos % 8] = q;
            t[p].hi[(pos + 1) / 8][(pos + 1) % 8] = q;
            q += 1;
        }
        p += 1;
    }
    t
}

/// The step pattern of the lanes' lower taps `taps` (cell indices, or offsets from any common
/// origin: only the steps between neighbouring lanes count) for [`ROUTES`], or `None` when a
/// step is neither one nor two cells.
#[inline(always)]
pub(super) unsafe fn steps_pattern(taps: __m256i) -> Option<usize> {
    let prev = _mm256_permutevar8x32_epi32(taps, _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6));
    let d = _mm256_sub_epi32(taps, prev);
    let step = |n: i32| {
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(
            d,
            _mm256_set1_epi32(n),
        )))
    };
    let (one, two) = (step(1), step(2));
    ((one | two) & 0xfe == 0xfe).then_some((two >> 1) as usize)
}

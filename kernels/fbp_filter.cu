// rodl: the FBP filter on device data (src/tomo/fbp/cuda.rs): along the detector's u axis,
//   y[a, i, v] = post(a, i, v) * sum_j t[i - j] * pre(a, j, v) * x[a, j, v]
// for data [views, nu, nv] in C order (nv = 1 in 2D), with the Toeplitz taps t[d], d = -(nu-1) ..
// nu-1 (stored at d + nu - 1), computed on the host from the same FFT filter the CPU path applies,
// and the weights pre/post = uv[i * nv + v] * au[(a % nviews) * nu + i]. Sums are accumulated in
// double. A batch of entries is more columns: ncols = entries * views * nv, and view a of the data
// is view a % nviews of its entry.
//
// A column is one (view, v) pair: c = a * nv + v, so x[a, j, v] = x[(a * nu + j) * nv + v]. Each
// block computes a tile of TI outputs along u times TC columns, running over u in tiles of TJ
// inputs that are weighted once when loaded into shared memory. Two variants:
//   *_cols: thread x runs over columns (nv > 1: consecutive columns are adjacent in memory),
//   *_rows: thread x runs over u (nv = 1: u is the contiguous axis).

typedef long long i64;

#define TI 32
#define TJ 32
#define TC 32
#define TY 8
#define PER (TI / TY)

// Must match `FbpParams` in src/tomo/fbp/cuda.rs.
struct FbpParams {
    i64 ncols;   // entries * views * nv
    int nu;
    int nv;
    i64 nviews;  // views per entry
};

template <typename T, bool ROWS>
__device__ __forceinline__ void fbp_filter(const T* __restrict__ x, T* __restrict__ y,
                                           const double* __restrict__ taps,
                                           const double* __restrict__ pre_uv,
                                           const double* __restrict__ pre_au,
                                           const double* __restrict__ post_uv,
                                           const double* __restrict__ post_au, FbpParams p) {
    __shared__ double xs[TJ][TC + 1];
    __shared__ double ts[TI + TJ];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int nu = p.nu, nv = p.nv;
    const i64 c0 = (i64)blockIdx.x * TC;
    const int i0 = blockIdx.y * TI;
    double acc[PER];
#pragma unroll
    for (int k = 0; k < PER; ++k) acc[k] = 0.0;

    for (int j0 = 0; j0 < nu; j0 += TJ) {
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const int jj = ROWS ? tx : ty + TY * k;
            const int cc = ROWS ? ty + TY * k : tx;
            const int j = j0 + jj;
            const i64 c = c0 + cc;
            double v = 0.0;
            if (j < nu && c < p.ncols) {
                const i64 a = c / nv;
                const int iv = (int)(c - a * nv);
                v = (double)x[(a * nu + j) * nv + iv] * pre_uv[(i64)j * nv + iv] *
                    pre_au[(a % p.nviews) * nu + j];
            }
            xs[jj][cc] = v;
        }
        // ts[l] = t[d] with d = (i0 - j0) - (TJ - 1) + l, for l = 0 .. TI + TJ - 2.
        const int lin = ty * TC + tx;
        if (lin < TI + TJ - 1) {
            const int d = i0 - j0 - (TJ - 1) + lin;
            ts[lin] = (d > -nu && d < nu) ? taps[d + nu - 1] : 0.0;
        }
        __syncthreads();
#pragma unroll 8
        for (int jj = 0; jj < TJ; ++jj) {
#pragma unroll
            for (int k = 0; k < PER; ++k) {
                const int ii = ROWS ? tx : ty + TY * k;
                const int cc = ROWS ? ty + TY * k : tx;
                acc[k] += ts[ii - jj + TJ - 1] * xs[jj][cc];
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const int ii = ROWS ? tx : ty + TY * k;
        const int cc = ROWS ? ty + TY * k : tx;
        const int i = i0 + ii;
        const i64 c = c0 + cc;
        if (i < nu && c < p.ncols) {
            const i64 a = c / nv;
            const int iv = (int)(c - a * nv);
            const double w = post_uv[(i64)i * nv + iv] * post_au[(a % p.nviews) * nu + i];
            y[(a * nu + i) * nv + iv] = (T)(acc[k] * w);
        }
    }
}

#define FBP_KERNEL(NAME, T, ROWS)                                                              \
    extern "C" __global__ void __launch_bounds__(TC * TY)                                    \
        NAME(const T* __restrict__ x, T* __restrict__ y, const double* __restrict__ taps,   \
             const double* __restrict__ pre_uv, const double* __restrict__ pre_au,          \
             const double* __restrict__ post_uv, const double* __restrict__ post_au,        \
             FbpParams p) {                                                                 \
        fbp_filter<T, ROWS>(x, y, taps, pre_uv, pre_au, post_uv, post_au, p);               \
    }

FBP_KERNEL(fbp_filter_cols_f32, float, false)
FBP_KERNEL(fbp_filter_rows_f32, float, true)
FBP_KERNEL(fbp_filter_cols_f64, double, false)
FBP_KERNEL(fbp_filter_rows_f64, double, true)

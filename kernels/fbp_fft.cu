// rodl: the FBP filter on device data through cuFFT (src/tomo/fbp/cufft.rs). The data
// [views, nu, nv] (C order, nv = 1 in 2D) hold nrows = views * nv detector rows along u; row
// c = a * nv + v is x[(a * nu + u) * nv + v]. A batch of rows row0 .. row0 + batch is
//   1. gathered into the scratch buffer, one row of ld = 2 * nc reals per row (nc = len / 2 + 1,
//      the in-place real-to-complex layout), weighted by pre(a, u, v) and zero-padded to len,
//   2. transformed by cuFFT (real to complex, in place),
//   3. multiplied by the filter's real frequency response (`spectrum_*`, the host's samples,
//      the inverse transform's 1/len included; the imaginary parts of bin 0 and, for even len,
//      bin len/2 set to zero as on the host),
//   4. transformed back (complex to real, in place),
//   5. scattered into y with the weights post(a, u, v).
// The weights are pre/post = uv[u * nv + v] * au[(a % nviews) * nu + u] (double), as in
// fbp_filter.cu. A batch of entries is more rows: nrows = entries * views * nv, and view a of the
// data is view a % nviews of its entry.
// Rows of a batch past nrows are zeros in the scratch and never scattered.
//
// Two layouts of the gather and scatter:
//   *_cols (nv > 1): a tile of 32 rows x 32 u through shared memory, read with consecutive
//                    threads on consecutive v (contiguous in x), written along u;
//   *_rows (nv = 1): u is the contiguous axis of x too, one thread per element.

typedef long long i64;

#define TILE 32
#define TY 8

// Must match `FftParams` in src/tomo/fbp/cufft.rs.
struct FftParams {
    i64 nrows;   // entries * views * nv
    i64 row0;    // first row of this batch
    i64 batch;   // rows in the scratch buffer
    i64 nviews;  // views per entry
    int nu;
    int nv;
    int len;  // transform length
    int nc;   // complex bins, len / 2 + 1
    int ld;   // reals per scratch row, 2 * nc
    int pad;
};

__device__ __forceinline__ double weight(const double* __restrict__ uv,
                                         const double* __restrict__ au, i64 a, int u, int v,
                                         int nu, int nv, i64 nviews) {
    return uv[(i64)u * nv + v] * au[(a % nviews) * nu + u];
}

template <typename T, typename R>
__device__ __forceinline__ void gather_cols(const T* __restrict__ x, R* __restrict__ buf,
                                            const double* __restrict__ uv,
                                            const double* __restrict__ au, FftParams p) {
    __shared__ R tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const i64 l0 = (i64)blockIdx.x * TILE;  // first local row
    const int u0 = blockIdx.y * TILE;
#pragma unroll
    for (int k = 0; k < TILE / TY; ++k) {
        const int u = u0 + ty + TY * k;
        const i64 l = l0 + tx;
        const i64 c = p.row0 + l;
        R val = (R)0;
        if (u < p.nu && l < p.batch && c < p.nrows) {
            const i64 a = c / p.nv;
            const int v = (int)(c - a * p.nv);
            val = (R)((double)x[(a * p.nu + u) * p.nv + v] *
                      weight(uv, au, a, u, v, p.nu, p.nv, p.nviews));
        }
        tile[ty + TY * k][tx] = val;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE / TY; ++k) {
        const i64 l = l0 + ty + TY * k;
        const int u = u0 + tx;
        if (l < p.batch && u < p.ld) buf[l * p.ld + u] = tile[tx][ty + TY * k];
    }
}

template <typename T, typename R>
__device__ __forceinline__ void gather_rows(const T* __restrict__ x, R* __restrict__ buf,
                                            const double* __restrict__ uv,
                                            const double* __restrict__ au, FftParams p) {
    const i64 n = p.batch * p.ld;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 l = i / p.ld;
        const int u = (int)(i - l * p.ld);
        const i64 c = p.row0 + l;
        R val = (R)0;
        if (u < p.nu && c < p.nrows) {
            val = (R)((double)x[c * p.nu + u] * weight(uv, au, c, u, 0, p.nu, 1, p.nviews));
        }
        buf[i] = val;
    }
}

template <typename R>
__device__ __forceinline__ void spectrum(R* __restrict__ buf, const double* __restrict__ h,
                                         FftParams p) {
    const i64 n = p.batch * p.nc;
    const bool even = (p.len % 2) == 0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 l = i / p.nc;
        const int k = (int)(i - l * p.nc);
        const double w = h[k];
        R* z = buf + l * p.ld + 2 * k;
        z[0] = (R)((double)z[0] * w);
        z[1] = (k == 0 || (even && 2 * k == p.len)) ? (R)0 : (R)((double)z[1] * w);
    }
}

template <typename T, typename R>
__device__ __forceinline__ void scatter_cols(const R* __restrict__ buf, T* __restrict__ y,
                                             const double* __restrict__ uv,
                                             const double* __restrict__ au, FftParams p) {
    __shared__ R tile[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const i64 l0 = (i64)blockIdx.x * TILE;
    const int u0 = blockIdx.y * TILE;
#pragma unroll
    for (int k = 0; k < TILE / TY; ++k) {
        const i64 l = l0 + ty + TY * k;
        const int u = u0 + tx;
        tile[ty + TY * k][tx] = (l < p.batch && u < p.nu) ? buf[l * p.ld + u] : (R)0;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE / TY; ++k) {
        const int u = u0 + ty + TY * k;
        const i64 l = l0 + tx;
        const i64 c = p.row0 + l;
        if (u < p.nu && l < p.batch && c < p.nrows) {
            const i64 a = c / p.nv;
            const int v = (int)(c - a * p.nv);
            y[(a * p.nu + u) * p.nv + v] =
                (T)((double)tile[tx][ty + TY * k] * weight(uv, au, a, u, v, p.nu, p.nv, p.nviews));
        }
    }
}

template <typename T, typename R>
__device__ __forceinline__ void scatter_rows(const R* __restrict__ buf, T* __restrict__ y,
                                             const double* __restrict__ uv,
                                             const double* __restrict__ au, FftParams p) {
    const i64 n = p.batch * p.nu;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 l = i / p.nu;
        const int u = (int)(i - l * p.nu);
        const i64 c = p.row0 + l;
        if (c < p.nrows) {
            y[c * p.nu + u] =
                (T)((double)buf[l * p.ld + u] * weight(uv, au, c, u, 0, p.nu, 1, p.nviews));
        }
    }
}

#define FFT_KERNELS(SUFFIX, T, R)                                                             \
    extern "C" __global__ void __launch_bounds__(TILE * TY)                                 \
        fbp_fft_gather_cols_##SUFFIX(const T* __restrict__ x, R* __restrict__ buf,          \
                                     const double* __restrict__ uv,                         \
                                     const double* __restrict__ au, FftParams p) {          \
        gather_cols<T, R>(x, buf, uv, au, p);                                               \
    }                                                                                       \
    extern "C" __global__ void fbp_fft_gather_rows_##SUFFIX(                                \
        const T* __restrict__ x, R* __restrict__ buf, const double* __restrict__ uv,        \
        const double* __restrict__ au, FftParams p) {                                       \
        gather_rows<T, R>(x, buf, uv, au, p);                                               \
    }                                                                                       \
    extern "C" __global__ void fbp_fft_spectrum_##SUFFIX(R* __restrict__ buf,               \
                                                         const double* __restrict__ h,      \
                                                         FftParams p) {                     \
        spectrum<R>(buf, h, p);                                                             \
    }                                                                                       \
    extern "C" __global__ void __launch_bounds__(TILE * TY)                                 \
        fbp_fft_scatter_cols_##SUFFIX(const R* __restrict__ buf, T* __restrict__ y,         \
                                      const double* __restrict__ uv,                        \
                                      const double* __restrict__ au, FftParams p) {         \
        scatter_cols<T, R>(buf, y, uv, au, p);                                              \
    }                                                                                       \
    extern "C" __global__ void fbp_fft_scatter_rows_##SUFFIX(                               \
        const R* __restrict__ buf, T* __restrict__ y, const double* __restrict__ uv,        \
        const double* __restrict__ au, FftParams p) {                                       \
        scatter_rows<T, R>(buf, y, uv, au, p);                                              \
    }

FFT_KERNELS(f32, float, float)
FFT_KERNELS(f64, double, double)

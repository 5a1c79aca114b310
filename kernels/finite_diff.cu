// rodl: finite-difference operators on device tensors (Gradient, Divergence, Laplacian), with the
// conventions and the exact operation order of the host code in src/operator/default/finite_diff.rs:
//   gradient    (grad x)_k[i] = (x[i + e_k] - x[i]) * w_k,  or  -x[i] * w_k  on the last slice
//   divergence  (div g)[i]    = 0 + sum_k (g_k[i] - g_k[i - e_k]) * w_k,  g_k[i] * w_k on the first slice
//   laplacian   (lap x)[i]    = c * x[i] + sum_k (w_k * x[i + e_k] (if any) + w_k * x[i - e_k] (if any))
// with w_k = 1/h_k (1/h_k^2 for the Laplacian) and c = sum_k -2/h_k^2, all computed in double on the
// host and rounded to T here (as the host's T::of does).
//
// Compiled at run time with NVRTC and --fmad=false, so results equal the host's bit for bit.
// Arrays are C-ordered with up to FD_MAXD axes. A launch handles a batch of entries stored one
// after the other (n = batch * entry values): the stencils stay within an entry, and the parts of
// a gradient (its output) or of a divergence (its input) lie at ptr[k] + b * pstride for entry b
// (pstride = 0 for one entry). Each kernel has four instances
// `<name>_<f32|f64>_<u32|u64>`: the index type is u32 when the element count fits (faster
// division for the coordinates), u64 otherwise.

typedef unsigned long long u64;

#define FD_MAXD 8

// Must match `FdParams` in src/backend/cuda/ops.rs.
struct FdParams {
    u64 ptr[FD_MAXD];     // gradient: output parts; divergence: input parts; laplacian: unused
    u64 shape[FD_MAXD];
    u64 stride[FD_MAXD];
    double w[FD_MAXD];
    u64 n;                // number of elements (all entries)
    u64 entry;            // elements per entry
    u64 pstride;          // gradient / divergence: distance between two entries' parts
    double centre;        // laplacian only
    int ndim;
    int pad;
};

// Coordinates of flat index i (C order).
template <typename I>
__device__ __forceinline__ void coords(I i, const FdParams& p, I* c) {
    I rem = i;
#pragma unroll
    for (int k = FD_MAXD - 1; k > 0; --k) {
        if (k < p.ndim) {
            const I nk = (I)p.shape[k];
            const I q = rem / nk;
            c[k] = rem - q * nk;
            rem = q;
        }
    }
    c[0] = rem;
}

#define FD_LOOP(i, n)                                                                         \
    for (u64 i##_ = (u64)blockIdx.x * blockDim.x + threadIdx.x; i##_ < (n);                  \
         i##_ += (u64)blockDim.x * gridDim.x)

// The entry of flat index i and the index within it.
#define FD_ENTRY(i, b, j)                                                                     \
    const I b = i / (I)p.entry;                                                               \
    const I j = i - b * (I)p.entry

template <typename T, typename I>
__device__ __forceinline__ void grad_impl(const T* __restrict__ x, const FdParams& p) {
    FD_LOOP(i, p.n) {
        const I i = (I)i_;
        FD_ENTRY(i, b, j);
        const I at = b * (I)p.pstride + j;
        I c[FD_MAXD];
        coords<I>(j, p, c);
        const T xi = x[i];
#pragma unroll
        for (int k = 0; k < FD_MAXD; ++k) {
            if (k < p.ndim) {
                T* __restrict__ o = (T*)p.ptr[k];
                const T w = (T)p.w[k];
                if (c[k] + 1 < (I)p.shape[k]) {
                    o[at] = (x[i + (I)p.stride[k]] - xi) * w;
                } else {
                    o[at] = -xi * w;
                }
            }
        }
    }
}

template <typename T, typename I>
__device__ __forceinline__ void div_impl(T* __restrict__ out, const FdParams& p) {
    FD_LOOP(i, p.n) {
        const I i = (I)i_;
        FD_ENTRY(i, b, j);
        const I at = b * (I)p.pstride + j;
        I c[FD_MAXD];
        coords<I>(j, p, c);
        T acc = (T)0;
#pragma unroll
        for (int k = 0; k < FD_MAXD; ++k) {
            if (k < p.ndim) {
                const T* __restrict__ g = (const T*)p.ptr[k];
                const T w = (T)p.w[k];
                const T gi = g[at];
                if (c[k] > 0) {
                    acc += (gi - g[at - (I)p.stride[k]]) * w;
                } else {
                    acc += gi * w;
                }
            }
        }
        out[i] = acc;
    }
}

template <typename T, typename I>
__device__ __forceinline__ void lap_impl(const T* __restrict__ x, T* __restrict__ out,
                                         const FdParams& p) {
    const T centre = (T)p.centre;
    FD_LOOP(i, p.n) {
        const I i = (I)i_;
        FD_ENTRY(i, b, j);
        (void)b;
        I c[FD_MAXD];
        coords<I>(j, p, c);
        T acc = centre * x[i];
#pragma unroll
        for (int k = 0; k < FD_MAXD; ++k) {
            if (k < p.ndim) {
                const T w = (T)p.w[k];
                const I s = (I)p.stride[k];
                if (c[k] + 1 < (I)p.shape[k]) acc += w * x[i + s];
                if (c[k] > 0) acc += w * x[i - s];
            }
        }
        out[i] = acc;
    }
}

#define FD_INSTANTIATE(T, S, I, SI)                                                           \
    extern "C" __global__ void grad_##S##_##SI(const T* x, FdParams p) {                     \
        grad_impl<T, I>(x, p);                                                                \
    }                                                                                         \
    extern "C" __global__ void div_##S##_##SI(T* out, FdParams p) { div_impl<T, I>(out, p); } \
    extern "C" __global__ void lap_##S##_##SI(const T* x, T* out, FdParams p) {              \
        lap_impl<T, I>(x, out, p);                                                            \
    }

FD_INSTANTIATE(float, f32, unsigned int, u32)
FD_INSTANTIATE(float, f32, u64, u64)
FD_INSTANTIATE(double, f64, unsigned int, u32)
FD_INSTANTIATE(double, f64, u64, u64)

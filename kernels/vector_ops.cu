// rodl: elementwise vector operations and reductions on device tensors.
//
// Compiled at run time with NVRTC (see src/backend/cuda/context.rs), with --fmad=false so that every
// operation rounds exactly as the host code does (a*x + b*y is two products and one sum, as in Rust).
// Every kernel comes in an f32 and an f64 instance with extern "C" names `<name>_f32` / `<name>_f64`.
// Indices are 64-bit and all loops are grid-stride loops: sizes may exceed 2^31 elements.
// Scalar arguments are passed as double and converted to T in the kernel (exactly as the host
// converts them with T::of).

typedef unsigned long long u64;

// Grid-stride loop over [0, n), four indices per step in straight-line code so that the loads of
// several elements are in flight at once (the kernels are bound by memory latency otherwise).
template <typename F>
__device__ __forceinline__ void grid_for(u64 n, F body) {
    const u64 s = (u64)blockDim.x * gridDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * s < n; i += 4 * s) {
        body(i);
        body(i + s);
        body(i + 2 * s);
        body(i + 3 * s);
    }
    for (; i < n; i += s) body(i);
}

template <typename T>
__device__ __forceinline__ void lincomb_impl(T* __restrict__ out, const T* x, const T* y,
                                             double a, double b, u64 n) {
    const T ta = (T)a, tb = (T)b;
    grid_for(n, [&](u64 i) { out[i] = ta * x[i] + tb * y[i]; });
}

template <typename T>
__device__ __forceinline__ void mul_impl(T* __restrict__ out, const T* x, const T* y, u64 n) {
    grid_for(n, [&](u64 i) { out[i] = x[i] * y[i]; });
}

// out = f[i mod entry] * x[i]: one factor for every entry of a batch
template <typename T>
__device__ __forceinline__ void mul_rep_impl(T* __restrict__ out, const T* f, const T* x, u64 n,
                                             u64 entry) {
    grid_for(n, [&](u64 i) { out[i] = f[i % entry] * x[i]; });
}

template <typename T>
__device__ __forceinline__ void div_impl(T* __restrict__ out, const T* x, const T* y, u64 n) {
    grid_for(n, [&](u64 i) { out[i] = x[i] / y[i]; });
}

// y = a x + b y
template <typename T>
__device__ __forceinline__ void axpby_impl(const T* __restrict__ x, T* __restrict__ y, double a,
                                           double b, u64 n) {
    const T ta = (T)a, tb = (T)b;
    grid_for(n, [&](u64 i) { y[i] = ta * x[i] + tb * y[i]; });
}

template <typename T>
__device__ __forceinline__ void scale_impl(T* __restrict__ out, const T* __restrict__ x, double s,
                                           u64 n) {
    const T ts = (T)s;
    grid_for(n, [&](u64 i) { out[i] = ts * x[i]; });
}

template <typename T>
__device__ __forceinline__ void scale_inplace_impl(T* x, double s, u64 n) {
    const T ts = (T)s;
    grid_for(n, [&](u64 i) { x[i] *= ts; });
}

template <typename T>
__device__ __forceinline__ void abs_impl(T* __restrict__ out, const T* __restrict__ x, u64 n) {
    grid_for(n, [&](u64 i) { out[i] = fabs(x[i]); });
}

template <typename T>
__device__ __forceinline__ void fill_impl(T* x, double v, u64 n) {
    const T tv = (T)v;
    grid_for(n, [&](u64 i) { x[i] = tv; });
}

// ------------------------------------------------------------------------------- reductions
// Two passes, deterministic: `reduce_partial_*` writes one double per block, `reduce_final` sums
// those in one block. Accumulation is in double.

__device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block; the result is valid in thread 0. blockDim.x must be a multiple of 32.
__device__ __forceinline__ double block_sum(double v) {
    __shared__ double warp_part[32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) warp_part[warp] = v;
    __syncthreads();
    const unsigned nwarps = blockDim.x >> 5;
    if (warp == 0) {
        v = lane < nwarps ? warp_part[lane] : 0.0;
        v = warp_sum(v);
    }
    return v;
}

// op: 0 = inner (sum x y), 1 = squared norm (sum x^2), 2 = squared distance (sum (x-y)^2),
// 3 = sum (sum x).
template <typename T, int OP>
__device__ __forceinline__ double partial_loop(const T* x, const T* y, u64 n) {
    double acc = 0.0;
    grid_for(n, [&](u64 i) {
        const double a = (double)x[i];
        if (OP == 0) {
            acc += a * (double)y[i];
        } else if (OP == 1) {
            acc += a * a;
        } else if (OP == 2) {
            const double d = a - (double)y[i];
            acc += d * d;
        } else {
            acc += a;
        }
    });
    return acc;
}

template <typename T>
__device__ __forceinline__ void reduce_partial_impl(const T* x, const T* y, u64 n, int op,
                                                    double* __restrict__ partial) {
    double acc;
    switch (op) {
        case 0: acc = partial_loop<T, 0>(x, y, n); break;
        case 1: acc = partial_loop<T, 1>(x, y, n); break;
        case 2: acc = partial_loop<T, 2>(x, y, n); break;
        default: acc = partial_loop<T, 3>(x, y, n); break;
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// One block: out[0] = sum of partial[0..m].
extern "C" __global__ void reduce_final(const double* __restrict__ partial, u64 m,
                                        double* __restrict__ out) {
    double acc = 0.0;
    for (u64 i = threadIdx.x; i < m; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) out[0] = acc;
}

// ------------------------------------------------------------------------------- instances

#define INSTANTIATE(T, S)                                                                   \
    extern "C" __global__ void lincomb_##S(T* out, const T* x, const T* y, double a,       \
                                           double b, u64 n) {                               \
        lincomb_impl<T>(out, x, y, a, b, n);                                                \
    }                                                                                       \
    extern "C" __global__ void mul_##S(T* out, const T* x, const T* y, u64 n) {            \
        mul_impl<T>(out, x, y, n);                                                          \
    }                                                                                       \
    extern "C" __global__ void mul_rep_##S(T* out, const T* f, const T* x, u64 n, u64 entry) { \
        mul_rep_impl<T>(out, f, x, n, entry);                                               \
    }                                                                                       \
    extern "C" __global__ void div_##S(T* out, const T* x, const T* y, u64 n) {            \
        div_impl<T>(out, x, y, n);                                                          \
    }                                                                                       \
    extern "C" __global__ void axpby_##S(const T* x, T* y, double a, double b, u64 n) {    \
        axpby_impl<T>(x, y, a, b, n);                                                       \
    }                                                                                       \
    extern "C" __global__ void scale_##S(T* out, const T* x, double s, u64 n) {            \
        scale_impl<T>(out, x, s, n);                                                        \
    }                                                                                       \
    extern "C" __global__ void scale_inplace_##S(T* x, double s, u64 n) {                  \
        scale_inplace_impl<T>(x, s, n);                                                     \
    }                                                                                       \
    extern "C" __global__ void abs_##S(T* out, const T* x, u64 n) { abs_impl<T>(out, x, n); } \
    extern "C" __global__ void fill_##S(T* x, double v, u64 n) { fill_impl<T>(x, v, n); }  \
    extern "C" __global__ void reduce_partial_##S(const T* x, const T* y, u64 n, int op,   \
                                                  double* partial) {                        \
        reduce_partial_impl<T>(x, y, n, op, partial);                                       \
    }

INSTANTIATE(float, f32)
INSTANTIATE(double, f64)

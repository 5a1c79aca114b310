// rodl: elementwise maps of one or two tensors (rodl::Pointwise, rodl::Pointwise2).
//
// Compiled at run time with NVRTC (src/backend/cuda/pointwise.rs) with --fmad=false. The formulas
// are those of `map1` / `map2` in src/backend/host.rs, evaluated in the same order, so results
// agree with the host exactly for the arithmetic operations and to a few units in the last place
// for the transcendental ones (exp, log, pow). The opcodes are the discriminants of
// `MapOp` / `Map2Op` in src/backend/mod.rs. Parameters arrive as double and are converted to T,
// exactly as the host holds them. Indices are 64-bit; grid-stride loops.

typedef unsigned long long u64;

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

__device__ __forceinline__ float k_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double k_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float k_exp(float x) { return expf(x); }
__device__ __forceinline__ double k_exp(double x) { return exp(x); }
__device__ __forceinline__ float k_log(float x) { return logf(x); }
__device__ __forceinline__ double k_log(double x) { return log(x); }
__device__ __forceinline__ float k_pow(float x, float p) { return powf(x, p); }
__device__ __forceinline__ double k_pow(double x, double p) { return pow(x, p); }
__device__ __forceinline__ float k_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double k_inf(double) { return __longlong_as_double(0x7ff0000000000000ll); }

template <typename T, int OP>
__device__ __forceinline__ T map1(T x, T a, T b) {
    if (OP == 0) return x + a;
    if (OP == 1) return fmax(x, a);
    if (OP == 2) return fmin(x, a);
    if (OP == 3) return fmin(fmax(x, a), b);
    if (OP == 4) return k_sqrt(x);
    if (OP == 5) return k_exp(x);
    if (OP == 6) return k_log(x);
    if (OP == 7) return x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : x);
    if (OP == 8) return x * x;
    if (OP == 9) return (T)1 / x;
    if (OP == 10) {
        if (x > a) return x - a;
        if (x < -a) return x + a;
        return isnan(x) ? x : (T)0;
    }
    if (OP == 11) return k_pow(x, a);
    // OP == 12: Huber function of |x| with parameter a.
    const T m = fabs(x);
    return m <= a ? m * m / (a + a) : m - a * (T)0.5;
}

template <typename T, int OP>
__device__ __forceinline__ T map2(T x, T y) {
    if (OP == 0) return fmax(x, y);
    if (OP == 1) return fmin(x, y);
    if (OP == 2) return y != (T)0 ? x / y : (T)0;
    if (OP == 3) return x == (T)0 ? (T)0 : x * k_log(y);
    // OP == 4: x ln(x/y) - x + y with scipy's kl_div conventions.
    if (isnan(x) || isnan(y)) return x + y;
    if (x > (T)0 && y > (T)0) return x * k_log(x / y) - x + y;
    if (x == (T)0 && y >= (T)0) return y;
    return k_inf(x);
}

template <typename T, int OP>
__device__ __forceinline__ void map_loop(T* out, const T* x, T a, T b, u64 n) {
    grid_for(n, [&](u64 i) { out[i] = map1<T, OP>(x[i], a, b); });
}

template <typename T, int OP>
__device__ __forceinline__ void map2_loop(T* out, const T* x, const T* y, u64 n) {
    grid_for(n, [&](u64 i) { out[i] = map2<T, OP>(x[i], y[i]); });
}

// `out` may equal `x` (in-place maps): each entry is read before it is written, by one thread.
template <typename T>
__device__ __forceinline__ void map_impl(T* out, const T* x, int op, double da, double db, u64 n) {
    const T a = (T)da, b = (T)db;
    switch (op) {
        case 0: map_loop<T, 0>(out, x, a, b, n); break;
        case 1: map_loop<T, 1>(out, x, a, b, n); break;
        case 2: map_loop<T, 2>(out, x, a, b, n); break;
        case 3: map_loop<T, 3>(out, x, a, b, n); break;
        case 4: map_loop<T, 4>(out, x, a, b, n); break;
        case 5: map_loop<T, 5>(out, x, a, b, n); break;
        case 6: map_loop<T, 6>(out, x, a, b, n); break;
        case 7: map_loop<T, 7>(out, x, a, b, n); break;
        case 8: map_loop<T, 8>(out, x, a, b, n); break;
        case 9: map_loop<T, 9>(out, x, a, b, n); break;
        case 10: map_loop<T, 10>(out, x, a, b, n); break;
        case 11: map_loop<T, 11>(out, x, a, b, n); break;
        default: map_loop<T, 12>(out, x, a, b, n); break;
    }
}

template <typename T>
__device__ __forceinline__ void map2_impl(T* out, const T* x, const T* y, int op, u64 n) {
    switch (op) {
        case 0: map2_loop<T, 0>(out, x, y, n); break;
        case 1: map2_loop<T, 1>(out, x, y, n); break;
        case 2: map2_loop<T, 2>(out, x, y, n); break;
        case 3: map2_loop<T, 3>(out, x, y, n); break;
        default: map2_loop<T, 4>(out, x, y, n); break;
    }
}

#define INSTANTIATE(T, S)                                                                   \
    extern "C" __global__ void map_##S(T* out, const T* x, int op, double a, double b,     \
                                       u64 n) {                                             \
        map_impl<T>(out, x, op, a, b, n);                                                   \
    }                                                                                       \
    extern "C" __global__ void map_inplace_##S(T* x, int op, double a, double b, u64 n) {  \
        map_impl<T>(x, x, op, a, b, n);                                                     \
    }                                                                                       \
    extern "C" __global__ void map2_##S(T* out, const T* x, const T* y, int op, u64 n) {   \
        map2_impl<T>(out, x, y, op, n);                                                     \
    }

INSTANTIATE(float, f32)
INSTANTIATE(double, f64)

// rodl: elementwise maps of one or two tensors (rodl::Pointwise, rodl::Pointwise2).
//
// Compiled at run time with NVRTC (src/backend/cuda/pointwise.rs) with --fmad=false. The formulas
// come from the operation tables of src/backend/op.rs, written in the host's order of operations,
// so results agree with the host exactly for the arithmetic operations and to a few units in the
// last place for the transcendental ones (exp, log, pow). An unknown opcode does nothing.
// Parameters arrive as double and are converted to T, exactly as the host holds them. Indices are 64-bit; grid-stride loops.

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

// map1<T, OP>(x, a, b) and map2<T, OP>(x, y): generated from the operation tables of
// src/backend/op.rs (one entry per operation: name, opcode, host and GPU formula), which also
// define MAP1_OPS(F) / MAP2_OPS(F), the lists of opcodes.
RODL_MAP1
RODL_MAP2

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
#define CASE(N) \
    case N: map_loop<T, N>(out, x, a, b, n); break;
    switch (op) { MAP1_OPS(CASE) }
#undef CASE
}

template <typename T>
__device__ __forceinline__ void map2_impl(T* out, const T* x, const T* y, int op, u64 n) {
#define CASE(N) \
    case N: map2_loop<T, N>(out, x, y, n); break;
    switch (op) { MAP2_OPS(CASE) }
#undef CASE
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

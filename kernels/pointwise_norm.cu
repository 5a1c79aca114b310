// rodl: pointwise p-norm of a vector field, |g|_p[i] = (sum_k |g_k[i]|^p)^(1/p), with the exact
// operation order of the host code in src/operator/default/pointwise_norm.rs:
//   p = 1:   0 + |g_0| + |g_1| + ...            (in T)
//   p = 2:   sqrt(0 + g_0 g_0 + g_1 g_1 + ...)  (in T)
//   p = inf: max(0, |g_0|, |g_1|, ...)           (fmax ignores NaN like Rust's max)
//   other p: (sum_k |g_k|^p)^(1/p) in double, rounded to T
// Compiled at run time with NVRTC and --fmad=false. Instances `pnorm_f32`, `pnorm_f64`.

typedef unsigned long long u64;

#define PN_MAXP 16

// Must match `PnParams` in src/backend/cuda/ops.rs.
struct PnParams {
    u64 ptr[PN_MAXP];  // the parts g_k
    u64 n;             // elements per part
    double p;          // exponent (mode 3)
    int nparts;
    int mode;          // 0: p = 1, 1: p = 2, 2: p = inf, 3: other p
};

template <typename T>
__device__ __forceinline__ void pnorm_impl(T* __restrict__ out, const PnParams& q) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < q.n;
         i += (u64)blockDim.x * gridDim.x) {
        T r;
        if (q.mode == 3) {
            double s = 0.0;
            for (int k = 0; k < q.nparts; ++k) {
                s += pow(fabs((double)((const T*)q.ptr[k])[i]), q.p);
            }
            r = (T)pow(s, 1.0 / q.p);
        } else {
            T acc = (T)0;
            for (int k = 0; k < q.nparts; ++k) {
                const T g = ((const T*)q.ptr[k])[i];
                if (q.mode == 0) {
                    acc += fabs(g);
                } else if (q.mode == 1) {
                    acc += g * g;
                } else {
                    acc = fmax(acc, fabs(g));
                }
            }
            r = q.mode == 1 ? sqrt(acc) : acc;
        }
        out[i] = r;
    }
}

extern "C" __global__ void pnorm_f32(float* out, PnParams q) { pnorm_impl<float>(out, q); }
extern "C" __global__ void pnorm_f64(double* out, PnParams q) { pnorm_impl<double>(out, q); }

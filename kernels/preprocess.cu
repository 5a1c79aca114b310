// Preprocessing of projection data on the GPU (src/backend/cuda/preprocess.rs), the same
// definitions as the host code of src/preprocess/ (compiled with --fmad=false, so the f64
// flat-field arithmetic is the host's bit for bit):
//   flat_field_f32   (x − dark) / (flat − dark) in f64, the flat interpolated between two groups,
//                    optionally fused with −log (the clamp of neg_log)
//   neg_log_f32      −log(max(x, floor)) (NaN → floor)
//   zinger_f32       the median of a clipped square window (NaN left out) by rank counting in
//                    Rust's total order of f32, so that the median is the host's exactly
//   stripe_rank_f32, stripe_median_f32
//                    the sorting-based stripe removal: each value's rank in its column along
//                    the angle axis (a stable sort in the total order), the sorted columns,
//                    then the median along u of the sorted rows, put back at the value's place
// Layout: data [k, nu, nv] in C order (k = views or frames); all kernels are grid-stride loops.

typedef unsigned long long u64;

// Rust's f32::total_cmp as a signed integer key: ordered like the values, -0 < +0, NaNs at the
// ends by sign.
__device__ __forceinline__ int total_key(float v) {
    int k = __float_as_int(v);
    return k ^ (int)(((unsigned)(k >> 31)) >> 1);
}

__device__ __forceinline__ float neg_log_one(float x, float floor) {
    // `!(x >= floor)` is true for NaN too.
    const float t = !(x >= floor) ? floor : x;
    return -logf(t);
}

// groups: the flat groups' mean frames [g, npix] (f64); per_view: for each of the k views the
// first group, the second group and the weight of the second (f64 triplets).
extern "C" __global__ void flat_field_f32(float* __restrict__ x, const double* __restrict__ dark,
                                          const double* __restrict__ groups,
                                          const double* __restrict__ per_view, u64 k, u64 npix,
                                          int fuse_log, float floor, u64* __restrict__ bad) {
    const u64 n = k * npix;
    u64 local = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        const u64 j = i / npix;
        const u64 p = i - j * npix;
        const u64 ga = (u64)per_view[3 * j];
        const u64 gb = (u64)per_view[3 * j + 1];
        const double w = per_view[3 * j + 2];
        const double fa = groups[ga * npix + p];
        const double fb = groups[gb * npix + p];
        const double flat = w == 0.0 ? fa : (1.0 - w) * fa + w * fb;
        const double d = dark[p];
        const double den = flat - d;
        float t;
        if (den > 0.0 && isfinite(den)) {
            t = (float)(((double)x[i] - d) / den);
        } else {
            t = 1.0f;
            local += 1;
        }
        x[i] = fuse_log ? neg_log_one(t, floor) : t;
    }
    if (local) atomicAdd(bad, local);
}

extern "C" __global__ void neg_log_f32(float* __restrict__ x, u64 n, float floor) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        x[i] = neg_log_one(x[i], floor);
    }
}

// src: the frames before any replacement; dst: the frames to correct (a copy of src).
extern "C" __global__ void zinger_f32(const float* __restrict__ src, float* __restrict__ dst,
                                      u64 k, u64 nu, u64 nv, int r, float threshold,
                                      int both_signs, u64* __restrict__ replaced) {
    const u64 n = k * nu * nv;
    u64 local = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        const u64 f = i / (nu * nv);
        const long long iu = (long long)((i / nv) % nu);
        const long long iv = (long long)(i % nv);
        const float* frame = src + f * nu * nv;
        const long long a0 = iu - r < 0 ? 0 : iu - r;
        const long long a1 = iu + r + 1 > (long long)nu ? (long long)nu : iu + r + 1;
        const long long b0 = iv - r < 0 ? 0 : iv - r;
        const long long b1 = iv + r + 1 > (long long)nv ? (long long)nv : iv + r + 1;
        int len = 0;
        for (long long a = a0; a < a1; ++a)
            for (long long b = b0; b < b1; ++b) len += isnan(frame[a * nv + b]) ? 0 : 1;
        if (len == 0) continue;
        const int mid = len / 2;
        float med = 0.0f;
        bool found = false;
        for (long long a = a0; a < a1 && !found; ++a) {
            for (long long b = b0; b < b1 && !found; ++b) {
                const float c = frame[a * nv + b];
                if (isnan(c)) continue;
                const int kc = total_key(c);
                int less = 0, equal = 0;
                for (long long a2 = a0; a2 < a1; ++a2)
                    for (long long b2 = b0; b2 < b1; ++b2) {
                        const float y = frame[a2 * nv + b2];
                        if (isnan(y)) continue;
                        const int ky = total_key(y);
                        less += ky < kc ? 1 : 0;
                        equal += ky == kc ? 1 : 0;
                    }
                if (less <= mid && mid < less + equal) {
                    med = c;
                    found = true;
                }
            }
        }
        const float x = frame[iu * nv + iv];
        const float dd = x - med;
        if (dd > threshold || (both_signs && -dd > threshold)) {
            dst[i] = med;
            local += 1;
        }
    }
    if (local) atomicAdd(replaced, local);
}

// x: [na, nu, nv]; for each value its rank in its column (u, v) along the angle axis (a stable
// sort in the total order) and the sorted columns.
extern "C" __global__ void stripe_rank_f32(const float* __restrict__ x, float* __restrict__ sorted,
                                           unsigned* __restrict__ rank, u64 na, u64 nu, u64 nv) {
    const u64 plane = nu * nv;
    const u64 n = na * plane;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        const u64 a = i / plane;
        const u64 col = i - a * plane;
        const int key = total_key(x[i]);
        u64 r = 0;
        for (u64 b = 0; b < na; ++b) {
            const int kb = total_key(x[b * plane + col]);
            r += (kb < key || (kb == key && b < a)) ? 1 : 0;
        }
        rank[i] = (unsigned)r;
        sorted[r * plane + col] = x[i];
    }
}

// out[a, u, v] = the median (in the total order) of sorted[rank[a, u, v], u − h .. u + h, v]
// (clipped at the detector's edges).
extern "C" __global__ void stripe_median_f32(const float* __restrict__ sorted,
                                             const unsigned* __restrict__ rank,
                                             float* __restrict__ out, u64 na, u64 nu, u64 nv,
                                             int h) {
    const u64 plane = nu * nv;
    const u64 n = na * plane;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        const long long u = (long long)((i / nv) % nu);
        const u64 v = i % nv;
        const float* row = sorted + (u64)rank[i] * plane + v;
        const long long lo = u - h < 0 ? 0 : u - h;
        const long long hi = u + h + 1 > (long long)nu ? (long long)nu : u + h + 1;
        const int mid = (int)(hi - lo) / 2;
        float med = row[lo * nv];
        for (long long c = lo; c < hi; ++c) {
            const float cv = row[c * nv];
            const int kc = total_key(cv);
            int less = 0, equal = 0;
            for (long long d = lo; d < hi; ++d) {
                const int kd = total_key(row[d * nv]);
                less += kd < kc ? 1 : 0;
                equal += kd == kc ? 1 : 0;
            }
            if (less <= mid && mid < less + equal) {
                med = cv;
                break;
            }
        }
        out[i] = med;
    }
}

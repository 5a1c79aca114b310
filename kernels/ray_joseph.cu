// rodl: Joseph's method on the GPU, the same model as the CPU projector (src/tomo/cpu/ray.rs and
// kernels.rs): each ray is set up in double precision, then marched in single precision along
// its dominant axis (in index space) with (bi)linear interpolation in the other axes. At plane m
// the fractional indices are f = f0 + m*s (product and sum rounded separately: compiled with
// --fmad=false), the taps floor(f) and floor(f)+1 have weights 1-t and t, t = f - floor(f).
// The back-projection visits exactly the same taps with exactly the same weights, so it is the
// exact transpose of the forward projection (up to the order of the additions).
//
// Indices into volume and data are 64-bit.

typedef long long i64;
typedef unsigned long long u64;

// Must match `RayParams` in src/tomo/cuda.rs.
struct RayParams {
    i64 shape[3];
    double vmin[3];
    double h[3];
    int ndim;
    int nu;
    int nv;
    int nviews;
    int parallel;   // 1: src is a ray direction; 0: src is a source point
    int first_view; // views handled by this launch start here
};

struct Ray {
    int a;           // dominant axis
    int b, c;        // other axes (c == 2 unused in 2D)
    float fb0, sb, fc0, sc, w;
    int m0, m1;      // plane range [m0, m1)
};

__device__ __forceinline__ void plane_range(double f0, double s, i64 n, i64 n_a, double* lo, double* hi) {
    const double nf = (double)n;
    if (s == 0.0) {
        if (!(f0 > -1.0 && f0 < nf)) *lo = 1e300;
        return;
    }
    double t0 = (-1.0 - f0) / s, t1 = (nf - f0) / s;
    if (t0 > t1) { double t = t0; t0 = t1; t1 = t; }
    *lo = fmax(*lo, floor(t0));
    *hi = fmin(fmin(*hi, ceil(t1) + 1.0), (double)n_a);
}

// views: 12 doubles per view: src, det_center, det_u, det_v.
__device__ bool setup_ray(const RayParams& p, const double* __restrict__ views, int view, int iu, int iv, Ray& r) {
    const double* v = views + 12 * (i64)view;
    const double cu = (double)iu - 0.5 * ((double)p.nu - 1.0);
    const double cv = (double)iv - 0.5 * ((double)p.nv - 1.0);
    double q[3] = {0.0, 0.0, 0.0}, d[3] = {0.0, 0.0, 0.0};
    for (int k = 0; k < p.ndim; ++k) {
        q[k] = v[3 + k] + cu * v[6 + k] + cv * v[9 + k];
        d[k] = p.parallel ? v[k] : q[k] - v[k];
    }
    int a = 0;
    double best = -1.0;
    for (int k = 0; k < p.ndim; ++k) {
        const double s = fabs(d[k] / p.h[k]);
        if (s > best) { best = s; a = k; }
    }
    if (best <= 0.0) return false;
    const int b = (a == 0) ? 1 : 0;
    const int c = (a == 2) ? 1 : 2;
    const double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    const double w = p.h[a] * len / fabs(d[a]);
    const double t0 = (p.vmin[a] + 0.5 * p.h[a] - q[a]) / d[a];
    const double tm = p.h[a] / d[a];
    const double fb0 = (q[b] + t0 * d[b] - p.vmin[b]) / p.h[b] - 0.5;
    const double sb = tm * d[b] / p.h[b];
    double fc0 = 0.0, sc = 0.0;
    if (c < p.ndim) {
        fc0 = (q[c] + t0 * d[c] - p.vmin[c]) / p.h[c] - 0.5;
        sc = tm * d[c] / p.h[c];
    }
    const i64 n_a = p.shape[a];
    double lo = 0.0, hi = (double)n_a;
    plane_range(fb0, sb, p.shape[b], n_a, &lo, &hi);
    if (c < p.ndim) plane_range(fc0, sc, p.shape[c], n_a, &lo, &hi);
    if (!(lo < hi)) return false;
    r.a = a; r.b = b; r.c = c;
    r.fb0 = (float)fb0; r.sb = (float)sb; r.fc0 = (float)fc0; r.sc = (float)sc; r.w = (float)w;
    r.m0 = (int)lo; r.m1 = (int)hi;
    return true;
}

__device__ __forceinline__ void split(float f, i64* i, float* t) {
    const int k = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
    *i = k;
    *t = __fsub_rn(f, (float)k);
}

__device__ __forceinline__ i64 stride_of(const RayParams& p, int k) {
    // C order over (shape[0], shape[1], shape[2]) padded with 1s.
    if (k == 0) return p.shape[1] * p.shape[2];
    if (k == 1) return p.shape[2];
    return 1;
}

// Visits the in-grid taps of ray r at plane m: op(index, weight).
template <typename Op>
__device__ __forceinline__ void taps(const RayParams& p, const Ray& r, int m, Op op) {
    const float mf = (float)m;
    i64 ib; float tb;
    split(__fadd_rn(r.fb0, __fmul_rn(mf, r.sb)), &ib, &tb);
    const float wb[2] = {__fsub_rn(1.0f, tb), tb};
    const i64 nb = p.shape[r.b];
    const i64 sa = stride_of(p, r.a), sb = stride_of(p, r.b);
    const i64 base = (i64)m * sa;
    if (p.ndim == 2) {
        if (ib >= 0 && ib < nb) op(base + ib * sb, wb[0]);
        if (ib + 1 >= 0 && ib + 1 < nb) op(base + (ib + 1) * sb, wb[1]);
        return;
    }
    i64 ic; float tc;
    split(__fadd_rn(r.fc0, __fmul_rn(mf, r.sc)), &ic, &tc);
    const float wc[2] = {__fsub_rn(1.0f, tc), tc};
    const i64 nc = p.shape[r.c];
    const i64 sc = stride_of(p, r.c);
#pragma unroll
    for (int x = 0; x < 2; ++x) {
        const i64 jb = ib + x;
        if (jb < 0 || jb >= nb) continue;
#pragma unroll
        for (int y = 0; y < 2; ++y) {
            const i64 jc = ic + y;
            if (jc < 0 || jc >= nc) continue;
            op(base + jb * sb + jc * sc, __fmul_rn(wb[x], wc[y]));
        }
    }
}

// One thread per ray of views [first_view, first_view + count): sino[view, u, v] = w * sum.
// Threads of a warp take consecutive v (then u), so their volume reads are close together.
extern "C" __global__ void joseph_forward_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                              const double* __restrict__ views, RayParams p, int count) {
    const u64 per_view = (u64)p.nu * (u64)p.nv;
    const u64 total = per_view * (u64)count;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int view = p.first_view + (int)(g / per_view);
        const u64 rem = g % per_view;
        const int iu = (int)(rem / p.nv), iv = (int)(rem % p.nv);
        Ray r;
        float acc = 0.0f;
        if (setup_ray(p, views, view, iu, iv, r)) {
            for (int m = r.m0; m < r.m1; ++m) {
                taps(p, r, m, [&](i64 i, float wt) { acc = __fadd_rn(acc, __fmul_rn(wt, __ldg(vol + i))); });
            }
            acc = __fmul_rn(acc, r.w);
        }
        sino[(u64)view * per_view + rem] = acc;
    }
}

// The transpose, one thread per ray, scattering with atomic adds: vol += w * y * taps.
// `vol` must be zeroed before the first launch.
extern "C" __global__ void joseph_backward_atomic_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                                      const double* __restrict__ views, RayParams p, int count) {
    const u64 per_view = (u64)p.nu * (u64)p.nv;
    const u64 total = per_view * (u64)count;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int view = p.first_view + (int)(g / per_view);
        const u64 rem = g % per_view;
        const float y = sino[(u64)view * per_view + rem];
        if (y == 0.0f) continue;
        const int iu = (int)(rem / p.nv), iv = (int)(rem % p.nv);
        Ray r;
        if (!setup_ray(p, views, view, iu, iv, r)) continue;
        const float c = __fmul_rn(r.w, y);
        for (int m = r.m0; m < r.m1; ++m) {
            taps(p, r, m, [&](i64 i, float wt) { atomicAdd(vol + i, __fmul_rn(c, wt)); });
        }
    }
}

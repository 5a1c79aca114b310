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
    if (best <= 0.0) {
        r.a = -1;
        return false;
    }
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
    // Every field is set even for a ray that misses the volume: the gather back-projection reads
    // the per-detector-column fields (a, fb0, sb) of any ray of the column.
    r.a = a; r.b = b; r.c = c;
    r.fb0 = (float)fb0; r.sb = (float)sb; r.fc0 = (float)fc0; r.sc = (float)sc; r.w = (float)w;
    if (!(lo < hi)) return false;
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

// ------------------------------------------------------------------ forward, 32-bit indexing
// The same march as joseph_forward_f32 with the dimension fixed at compile time and 32-bit voxel
// indices (used when the volume has fewer than 2^31 voxels). Same taps, same weights, same order
// of the additions: the result is bit-identical to joseph_forward_f32.
template <int NDIM>
__device__ __forceinline__ void forward_i32(const float* __restrict__ vol, float* __restrict__ sino,
                                            const double* __restrict__ views, const RayParams& p, int count) {
    const unsigned per_view = (unsigned)p.nu * (unsigned)p.nv;
    const u64 total = (u64)per_view * (u64)count;
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const unsigned vloc = (unsigned)(g / per_view);
        const unsigned rem = (unsigned)(g - (u64)vloc * per_view);
        const int view = p.first_view + (int)vloc;
        const int iu = (int)(rem / (unsigned)p.nv), iv = (int)(rem % (unsigned)p.nv);
        Ray r;
        float acc = 0.0f;
        if (setup_ray(p, views, view, iu, iv, r)) {
            const int nb = sh[r.b], sa = st[r.a], sb = st[r.b];
            const int nc = NDIM == 3 ? sh[r.c] : 1, sc = NDIM == 3 ? st[r.c] : 0;
            for (int m = r.m0; m < r.m1; ++m) {
                const float mf = (float)m;
                int ib; float tb;
                {
                    const float f = __fadd_rn(r.fb0, __fmul_rn(mf, r.sb));
                    ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                    tb = __fsub_rn(f, (float)ib);
                }
                const float wb0 = __fsub_rn(1.0f, tb), wb1 = tb;
                const int base = m * sa + ib * sb;
                const bool b0 = ib >= 0 && ib < nb, b1 = ib + 1 >= 0 && ib + 1 < nb;
                if (NDIM == 2) {
                    if (b0) acc = __fadd_rn(acc, __fmul_rn(wb0, __ldg(vol + base)));
                    if (b1) acc = __fadd_rn(acc, __fmul_rn(wb1, __ldg(vol + base + sb)));
                } else {
                    int ic; float tc;
                    {
                        const float f = __fadd_rn(r.fc0, __fmul_rn(mf, r.sc));
                        ic = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                        tc = __fsub_rn(f, (float)ic);
                    }
                    const float wc0 = __fsub_rn(1.0f, tc), wc1 = tc;
                    const bool c0 = ic >= 0 && ic < nc, c1 = ic + 1 >= 0 && ic + 1 < nc;
                    const int i00 = base + ic * sc;
                    if (b0 && c0) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb0, wc0), __ldg(vol + i00)));
                    if (b0 && c1) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb0, wc1), __ldg(vol + i00 + sc)));
                    if (b1 && c0) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb1, wc0), __ldg(vol + i00 + sb)));
                    if (b1 && c1) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb1, wc1), __ldg(vol + i00 + sb + sc)));
                }
            }
            acc = __fmul_rn(acc, r.w);
        }
        sino[(u64)view * per_view + rem] = acc;
    }
}

extern "C" __global__ void joseph_forward2_i32_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                   const double* __restrict__ views, RayParams p, int count) {
    forward_i32<2>(vol, sino, views, p, count);
}

extern "C" __global__ void joseph_forward3_i32_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                   const double* __restrict__ views, RayParams p, int count) {
    forward_i32<3>(vol, sino, views, p, count);
}

// 2D forward with SEG threads per ray (adjacent lanes), each marching a contiguous share of the
// ray's planes; the partial sums are combined with shuffles. Same taps and weights as the other
// forwards; the order of the additions differs.
template <int SEG>
__device__ __forceinline__ void forward2_seg(const float* __restrict__ vol, float* __restrict__ sino,
                                             const double* __restrict__ views, const RayParams& p, int count) {
    const unsigned per_view = (unsigned)p.nu;
    const u64 total = (u64)per_view * (u64)count * SEG;
    const int sh[2] = {(int)p.shape[0], (int)p.shape[1]};
    const int st[2] = {sh[1], 1};
    // The grid-stride loop keeps whole warps together (the shuffles need every lane); blockDim is a
    // multiple of 32 and total a multiple of SEG, so the SEG lanes of a ray are all live or all not.
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g - threadIdx.x % 32 < total; g += (u64)gridDim.x * blockDim.x) {
        const bool live = g < total;
        const u64 ray = g / SEG;
        const int seg = (int)(g % SEG);
        float acc = 0.0f, w = 0.0f;
        const unsigned vloc = (unsigned)(ray / per_view);
        const unsigned iu = (unsigned)(ray - (u64)vloc * per_view);
        const int view = p.first_view + (int)vloc;
        Ray r;
        if (live && setup_ray(p, views, view, (int)iu, 0, r)) {
            w = r.w;
            const int nb = sh[r.b], sa = st[r.a], sb = st[r.b];
            const int len = r.m1 - r.m0;
            const int mlo = r.m0 + (len * seg) / SEG, mhi = r.m0 + (len * (seg + 1)) / SEG;
            for (int m = mlo; m < mhi; ++m) {
                const float f = __fadd_rn(r.fb0, __fmul_rn((float)m, r.sb));
                const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                const float tb = __fsub_rn(f, (float)ib);
                const int base = m * sa + ib * sb;
                if (ib >= 0 && ib < nb) acc = __fadd_rn(acc, __fmul_rn(__fsub_rn(1.0f, tb), __ldg(vol + base)));
                if (ib + 1 >= 0 && ib + 1 < nb) acc = __fadd_rn(acc, __fmul_rn(tb, __ldg(vol + base + sb)));
            }
        }
#pragma unroll
        for (int o = SEG / 2; o > 0; o >>= 1) acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, o, SEG));
        if (live && seg == 0) sino[(u64)view * per_view + iu] = __fmul_rn(acc, w);
    }
}

extern "C" __global__ void joseph_forward2_seg4_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                    const double* __restrict__ views, RayParams p, int count) {
    forward2_seg<4>(vol, sino, views, p, count);
}


// ------------------------------------------- 3D march in plane segments (L2-friendly order)
// One thread per (segment of SEGLEN planes, ray); consecutive threads take consecutive rays of
// the same segment, so the threads in flight at a time touch only a slab of the volume a few
// planes thick (which stays in L2) instead of the whole volume. The forward adds each segment's
// partial sum into the (zeroed) sinogram with an atomic add; the transpose scatters the segment's
// taps with atomic adds as the unsegmented kernels do. Same taps and weights as the other kernels.
template <bool FORWARD>
__device__ __forceinline__ void march_segments3(const float* __restrict__ in, float* __restrict__ out,
                                                const double* __restrict__ views, const RayParams& p, int count,
                                                int seglen) {
    const unsigned per_view = (unsigned)p.nu * (unsigned)p.nv;
    const u64 rays = (u64)per_view * (u64)count;
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    const int nmax = max(sh[0], max(sh[1], sh[2]));
    const int nseg = (nmax + seglen - 1) / seglen;
    const u64 total = rays * (u64)nseg;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int seg = (int)(g / rays);
        const u64 ray = g - (u64)seg * rays;
        const unsigned vloc = (unsigned)(ray / per_view);
        const unsigned rem = (unsigned)(ray - (u64)vloc * per_view);
        const int view = p.first_view + (int)vloc;
        const u64 sidx = (u64)view * per_view + rem;
        float c = 0.0f;
        if (!FORWARD) {
            c = in[sidx];
            if (c == 0.0f) continue;
        }
        const int iu = (int)(rem / (unsigned)p.nv), iv = (int)(rem % (unsigned)p.nv);
        Ray r;
        if (!setup_ray(p, views, view, iu, iv, r)) continue;
        const int mlo = max(r.m0, seg * seglen), mhi = min(r.m1, (seg + 1) * seglen);
        if (mlo >= mhi) continue;
        if (!FORWARD) c = __fmul_rn(r.w, c);
        const int nb = sh[r.b], sa = st[r.a], sb = st[r.b], nc = sh[r.c], sc = st[r.c];
        float acc = 0.0f;
        for (int m = mlo; m < mhi; ++m) {
            const float mf = (float)m;
            const float f = __fadd_rn(r.fb0, __fmul_rn(mf, r.sb));
            const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
            const float tb = __fsub_rn(f, (float)ib);
            const float wb0 = __fsub_rn(1.0f, tb), wb1 = tb;
            const float fc = __fadd_rn(r.fc0, __fmul_rn(mf, r.sc));
            const int ic = __float2int_rz(__fadd_rn(fc, 4.0f)) - 4;
            const float tc = __fsub_rn(fc, (float)ic);
            const float wc0 = __fsub_rn(1.0f, tc), wc1 = tc;
            const bool b0 = ib >= 0 && ib < nb, b1 = ib + 1 >= 0 && ib + 1 < nb;
            const bool c0 = ic >= 0 && ic < nc, c1 = ic + 1 >= 0 && ic + 1 < nc;
            const int i00 = m * sa + ib * sb + ic * sc;
            if (FORWARD) {
                if (b0 && c0) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb0, wc0), __ldg(in + i00)));
                if (b0 && c1) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb0, wc1), __ldg(in + i00 + sc)));
                if (b1 && c0) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb1, wc0), __ldg(in + i00 + sb)));
                if (b1 && c1) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb1, wc1), __ldg(in + i00 + sb + sc)));
            } else {
                if (b0 && c0) atomicAdd(out + i00, __fmul_rn(c, __fmul_rn(wb0, wc0)));
                if (b0 && c1) atomicAdd(out + i00 + sc, __fmul_rn(c, __fmul_rn(wb0, wc1)));
                if (b1 && c0) atomicAdd(out + i00 + sb, __fmul_rn(c, __fmul_rn(wb1, wc0)));
                if (b1 && c1) atomicAdd(out + i00 + sb + sc, __fmul_rn(c, __fmul_rn(wb1, wc1)));
            }
        }
        if (FORWARD) atomicAdd(out + sidx, __fmul_rn(acc, r.w));
    }
}


extern "C" __global__ void joseph_backward3_seg_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                                    const double* __restrict__ views, RayParams p, int count, int seglen) {
    march_segments3<false>(sino, vol, views, p, count, seglen);
}

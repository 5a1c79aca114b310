// rodl: Joseph's method on the GPU, the same model as the CPU projector (src/tomo/cpu/ray.rs and
// kernels.rs): each ray is set up in double precision, then marched in single precision along
// its dominant axis (in index space) with (bi)linear interpolation in the other axes. At plane m
// the fractional indices are f = f0 + m*s (product and sum rounded separately: compiled with
// --fmad=false), the taps floor(f) and floor(f)+1 have weights 1-t and t, t = f - floor(f).
// The back-projection visits exactly the same taps with exactly the same weights, so it is the
// exact transpose of the forward projection (up to the order of the additions).
//
// joseph_forward_f32 and joseph_backward_atomic_f32 index the volume and the data with 64 bits;
// the other kernels use 32-bit voxel indices (src/tomo/cuda.rs picks them when the volume allows).
// Which kernel runs when: the doc comments of CudaRay::forward / CudaRay::transpose in
// src/tomo/cuda.rs.

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
    int lo[3];      // the piece's first cell along each axis in the whole grid (0s for a whole volume)
    int row0;       // the chunked 3D kernels launch the detector rows [row0, row0 + rows) ...
    int rows;       // ... (0: all rows from row0 on); the other kernels every row
    int detector;   // 0: flat (12 doubles per view); 1: cylindrical, 2: spherical (26 per view)
    double radius;  // a curved detector's radius
    double lat0;    // a sphere's latitude of the frames' reference point (radians)
};

// Pieces (src/tomo/cuda_pieces.rs): a box of the volume's cells [lo[k], lo[k] + shape[k]) along each
// axis k (a slab along one axis, the whole range along the others) works in the whole grid's frame:
// vmin is the whole grid's corner, so every ray, plane and tap coordinate, and every voxel index, is
// the one of the unsplit transform (the same floats, bit for bit); only the bounds are the box's,
// and the host passes the box buffer's address shifted back by sum_k lo[k] * stride[k] (the strides
// of the box's own C-order buffer), so that whole-grid indices address the box's buffer. lo_of(p, k)
// is the first in-grid cell along axis k. A piece's chunked 3D launches may also be limited to a
// band of detector rows (row0, rows) that holds every ray reaching its box (chunk_ray).
__device__ __forceinline__ int lo_of(const RayParams& p, int k) { return p.lo[k]; }

// The detector rows the chunked 3D kernels launch from row0 on.
__device__ __forceinline__ int band_rows(const RayParams& p) { return p.rows > 0 ? p.rows : p.nv - p.row0; }

struct Ray {
    int a;           // dominant axis
    int b, c;        // other axes (c == 2 unused in 2D)
    float fb0, sb, fc0, sc, w;
    int m0, m1;      // plane range [m0, m1)
};

// Narrows the planes [*lo, *hi) to those where f = f0 + m*s can have a tap in the cells
// [first, first + n) (f in (first - 1, first + n), with a plane of margin each side).
__device__ __forceinline__ void plane_range(double f0, double s, i64 first, i64 n, double* lo, double* hi) {
    const double fa = (double)first, nf = (double)(first + n);
    if (s == 0.0) {
        if (!(f0 > fa - 1.0 && f0 < nf)) *lo = 1e300;
        return;
    }
    double t0 = (fa - 1.0 - f0) / s, t1 = (nf - f0) / s;
    if (t0 > t1) { double t = t0; t0 = t1; t1 = t; }
    *lo = fmax(*lo, floor(t0));
    *hi = fmin(*hi, ceil(t1) + 1.0);
}

// cos(x) - 1 without cancellation (src/tomo/geometry/detector.rs: cosm1).
__device__ __forceinline__ double cosm1(double x) {
    const double s = sin(0.5 * x);
    return -2.0 * s * s;
}

// The centre q of pixel (cu, cv) (centred indices) of view v on a curved detector, as
// src/tomo/geometry/detector.rs (Detector::pixel) evaluates it: the frame's reference point c,
// unit tangent e_u, unit axis e_v and outward normal n at v[12..24), the pitches (arc lengths)
// lu, lv at v[24], v[25]; the view's det_v at v[9..12).
__device__ __forceinline__ void curved_pixel(const RayParams& p, const double* v, double cu, double cv, double* q) {
    const double* c = v + 12;
    const double* eu = v + 15;
    const double* ev = v + 18;
    const double* n = v + 21;
    const double R = p.radius, su = cu * v[24];
    if (p.detector == 1) {
        // Cylinder: the in-plane part first, then the row (as the CPU: bit-identical columns).
        const double phi = su / R, a = R * sin(phi), m = R * cosm1(phi);
        for (int k = 0; k < p.ndim; ++k) q[k] = (c[k] + a * eu[k] + m * n[k]) + cv * v[9 + k];
    } else {
        // Sphere: longitude su / R, latitude sv / R.
        const double sv = cv * v[25] + p.lat0 * R;
        const double ph = su / R, th = sv / R, ct = cos(th);
        const double a = R * (ct * sin(ph)), b = R * sin(th), m = R * (ct * cosm1(ph) + cosm1(th));
        for (int k = 0; k < p.ndim; ++k) q[k] = c[k] + a * eu[k] + b * ev[k] + m * n[k];
    }
}

// views: 12 doubles per view: src, det_center, det_u, det_v; on a curved detector
// (p.detector > 0) 26: those 12, then the frame and the pitches (curved_pixel).
__device__ bool setup_ray(const RayParams& p, const double* __restrict__ views, int view, int iu, int iv, Ray& r) {
    const double* v = views + (p.detector ? 26 : 12) * (i64)view;
    const double cu = (double)iu - 0.5 * ((double)p.nu - 1.0);
    const double cv = (double)iv - 0.5 * ((double)p.nv - 1.0);
    double q[3] = {0.0, 0.0, 0.0}, d[3] = {0.0, 0.0, 0.0};
    if (p.detector) {
        curved_pixel(p, v, cu, cv, q);
        for (int k = 0; k < p.ndim; ++k) d[k] = q[k] - v[k];
    } else {
        for (int k = 0; k < p.ndim; ++k) {
            q[k] = v[3 + k] + cu * v[6 + k] + cv * v[9 + k];
            d[k] = p.parallel ? v[k] : q[k] - v[k];
        }
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
    const i64 first_a = lo_of(p, a);
    double lo = (double)first_a, hi = (double)(first_a + p.shape[a]);
    plane_range(fb0, sb, lo_of(p, b), p.shape[b], &lo, &hi);
    if (c < p.ndim) plane_range(fc0, sc, lo_of(p, c), p.shape[c], &lo, &hi);
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
    const i64 lb = lo_of(p, r.b), nb = lb + p.shape[r.b];
    const i64 sa = stride_of(p, r.a), sb = stride_of(p, r.b);
    const i64 base = (i64)m * sa;
    if (p.ndim == 2) {
        if (ib >= lb && ib < nb) op(base + ib * sb, wb[0]);
        if (ib + 1 >= lb && ib + 1 < nb) op(base + (ib + 1) * sb, wb[1]);
        return;
    }
    i64 ic; float tc;
    split(__fadd_rn(r.fc0, __fmul_rn(mf, r.sc)), &ic, &tc);
    const float wc[2] = {__fsub_rn(1.0f, tc), tc};
    const i64 lc = lo_of(p, r.c), nc = lc + p.shape[r.c];
    const i64 sc = stride_of(p, r.c);
#pragma unroll
    for (int x = 0; x < 2; ++x) {
        const i64 jb = ib + x;
        if (jb < lb || jb >= nb) continue;
#pragma unroll
        for (int y = 0; y < 2; ++y) {
            const i64 jc = ic + y;
            if (jc < lc || jc >= nc) continue;
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

// The transpose of `batch` entries (data and volumes one after the other, rays() values and
// shape[0] * shape[1] * shape[2] voxels apart), one thread per ray and entry, as
// joseph_backward_atomic_f32 does for one: the batched transpose of 2D geometries without the
// parallel-beam tables (fan beams). `vol` must be zeroed before the launch.
extern "C" __global__ void joseph_backward_atomic_batch_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                                            const double* __restrict__ views, RayParams p, int count,
                                                            int batch) {
    const u64 per_view = (u64)p.nu * (u64)p.nv;
    const u64 rays = per_view * (u64)count;
    const u64 voxels = (u64)p.shape[0] * (u64)p.shape[1] * (u64)p.shape[2];
    const u64 total = rays * (u64)batch;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const u64 entry = g / rays, ray = g - entry * rays;
        const int view = p.first_view + (int)(ray / per_view);
        const u64 rem = ray % per_view;
        const float y = sino[entry * (u64)p.nviews * per_view + (u64)view * per_view + rem];
        if (y == 0.0f) continue;
        const int iu = (int)(rem / p.nv), iv = (int)(rem % p.nv);
        Ray r;
        if (!setup_ray(p, views, view, iu, iv, r)) continue;
        const float c = __fmul_rn(r.w, y);
        float* out = vol + entry * voxels;
        for (int m = r.m0; m < r.m1; ++m) {
            taps(p, r, m, [&](i64 i, float wt) { atomicAdd(out + i, __fmul_rn(c, wt)); });
        }
    }
}

// The 2D march of one ray over planes [mlo, mhi) with 32-bit indices: the per-plane taps and
// weights of every kernel (f = fb0 + m*sb, rounded; taps floor(f), floor(f)+1 with weights 1-t, t),
// added to acc in plane order; taps outside the cells [lb, lb + nb) of axis b are dropped.
__device__ __forceinline__ float march2(const float* __restrict__ vol, const Ray& r, int lb, int nb, int sa, int sb,
                                        int mlo, int mhi, float acc) {
    const int hb = lb + nb;
    for (int m = mlo; m < mhi; ++m) {
        const float f = __fadd_rn(r.fb0, __fmul_rn((float)m, r.sb));
        const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
        const float tb = __fsub_rn(f, (float)ib);
        const int base = m * sa + ib * sb;
        if (ib >= lb && ib < hb) acc = __fadd_rn(acc, __fmul_rn(__fsub_rn(1.0f, tb), __ldg(vol + base)));
        if (ib + 1 >= lb && ib + 1 < hb) acc = __fadd_rn(acc, __fmul_rn(tb, __ldg(vol + base + sb)));
    }
    return acc;
}

// The taps and weights of a 3D ray at plane m (f = f0 + m*s rounded, taps floor(f), floor(f)+1 with
// weights 1-t, t along b and c), shared by every 3D kernel so that forward and transpose agree bit
// for bit: i00 is the volume index of tap (ib, ic); b0/b1/c0/c1 say which taps are in the grid.
struct Taps3 {
    int ib, ic, i00;
    float wb0, wb1, wc0, wc1;
    bool b0, b1, c0, c1;
};

// In the grid: cells [lb, lb + nb) along b and [lc, lc + nc) along c.
__device__ __forceinline__ Taps3 taps3(const Ray& r, int m, int lb, int nb, int lc, int nc, int sa, int sb, int sc) {
    Taps3 t;
    const float mf = (float)m;
    const float f = __fadd_rn(r.fb0, __fmul_rn(mf, r.sb));
    t.ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
    const float tb = __fsub_rn(f, (float)t.ib);
    t.wb0 = __fsub_rn(1.0f, tb);
    t.wb1 = tb;
    const float fc = __fadd_rn(r.fc0, __fmul_rn(mf, r.sc));
    t.ic = __float2int_rz(__fadd_rn(fc, 4.0f)) - 4;
    const float tc = __fsub_rn(fc, (float)t.ic);
    t.wc0 = __fsub_rn(1.0f, tc);
    t.wc1 = tc;
    t.b0 = t.ib >= lb && t.ib < lb + nb;
    t.b1 = t.ib + 1 >= lb && t.ib + 1 < lb + nb;
    t.c0 = t.ic >= lc && t.ic < lc + nc;
    t.c1 = t.ic + 1 >= lc && t.ic + 1 < lc + nc;
    t.i00 = m * sa + t.ib * sb + t.ic * sc;
    return t;
}

// The 3D march of one ray over planes [mlo, mhi) with 32-bit indices (first, sh, st: the grid's
// first cells, shape and strides): the per-plane taps and weights of every kernel, bilinear in
// (b, c), added to acc in plane order.
__device__ __forceinline__ float march3(const float* __restrict__ vol, const Ray& r, const int* first, const int* sh,
                                        const int* st, int mlo, int mhi, float acc) {
    const int nb = sh[r.b], sa = st[r.a], sb = st[r.b], nc = sh[r.c], sc = st[r.c];
    const int lb = first[r.b], lc = first[r.c];
    for (int m = mlo; m < mhi; ++m) {
        const Taps3 t = taps3(r, m, lb, nb, lc, nc, sa, sb, sc);
        if (t.b0 && t.c0) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(t.wb0, t.wc0), __ldg(vol + t.i00)));
        if (t.b0 && t.c1) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(t.wb0, t.wc1), __ldg(vol + t.i00 + sc)));
        if (t.b1 && t.c0) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(t.wb1, t.wc0), __ldg(vol + t.i00 + sb)));
        if (t.b1 && t.c1) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(t.wb1, t.wc1), __ldg(vol + t.i00 + sb + sc)));
    }
    return acc;
}

// Thread g of the chunked, segmented 3D order: (chunk of 32 detector rows, segment of planes,
// view, detector column, row in the chunk), so that a warp holds 32 rows of one column and the
// threads of consecutive blocks take neighbouring columns and views of the same chunk and
// segment. Launched with one block per 256 threads (no grid stride, src/tomo/cuda.rs), the blocks
// in flight then hold a few consecutive views whose taps lie in one slab (the segment's planes) of
// one band (the chunk's rows) of the volume, which L2 keeps. The chunks cover the launched rows
// [row0, row0 + band_rows(p)) (all rows for a whole transform). Returns false for rows past them.
struct ChunkRay {
    int seg, view, iu, iv;
};

__device__ __forceinline__ bool chunk_ray(const RayParams& p, int count, int nseg, u64 g, ChunkRay& o) {
    const u64 per_view = (u64)p.nu * 32u;
    const u64 per_seg = (u64)count * per_view;
    const u64 cs = g / per_seg;  // chunk * nseg + seg
    const u64 t = g - cs * per_seg;
    const int chunk = (int)(cs / (u64)nseg);
    o.seg = (int)(cs - (u64)chunk * (u64)nseg);
    const unsigned vloc = (unsigned)(t / per_view);
    const unsigned t2 = (unsigned)(t - (u64)vloc * per_view);
    o.view = p.first_view + (int)vloc;
    o.iu = (int)(t2 >> 5);
    const int row = chunk * 32 + (int)(t2 & 31u);
    o.iv = p.row0 + row;
    return row < band_rows(p) && o.iv < p.nv;
}

// ------------------------------------------------------------------ forward, 32-bit indexing
// The same march as joseph_forward_f32 with the dimension fixed at compile time and 32-bit voxel
// indices (used when the volume has fewer than 2^31 voxels). Same taps, same weights, same order
// of the additions: the result is bit-identical to joseph_forward_f32.
//
// CHUNK (3D, joseph_forward3_chunk_f32, harness only): the threads take the rays in the order of
// chunk_ray with one segment (chunk of 32 detector rows, view, column, row) instead of (view,
// column, row). Same rays, same sums (bit-identical); H200, cone_512: 285 -> 238 ms in a
// grid-stride launch, 227 ms in an ordered one; in segments of 128 planes
// (joseph_forward3_chunkseg_f32, the production forward) 174 ms (tools/kernel-harness/vec_probe.cu).
template <int NDIM, bool CHUNK>
__device__ __forceinline__ void forward_i32(const float* __restrict__ vol, float* __restrict__ sino,
                                            const double* __restrict__ views, const RayParams& p, int count) {
    const unsigned per_view = (unsigned)p.nu * (unsigned)p.nv;
    const u64 total = CHUNK ? (u64)((band_rows(p) + 31) / 32) * (u64)count * (u64)p.nu * 32u : (u64)per_view * (u64)count;
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    const int first[3] = {p.lo[0], p.lo[1], p.lo[2]};
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        unsigned vloc, rem;
        int iu, iv;
        if (CHUNK) {
            ChunkRay q;  // one segment: the order (chunk, view, column, row)
            if (!chunk_ray(p, count, 1, g, q)) continue;
            vloc = (unsigned)(q.view - p.first_view);
            iu = q.iu;
            iv = q.iv;
            rem = (unsigned)iu * (unsigned)p.nv + (unsigned)iv;
        } else {
            vloc = (unsigned)(g / per_view);
            rem = (unsigned)(g - (u64)vloc * per_view);
            iu = (int)(rem / (unsigned)p.nv);
            iv = (int)(rem % (unsigned)p.nv);
        }
        const int view = p.first_view + (int)vloc;
        Ray r;
        float acc = 0.0f;
        if (setup_ray(p, views, view, iu, iv, r)) {
            if (NDIM == 2) acc = march2(vol, r, first[r.b], sh[r.b], st[r.a], st[r.b], r.m0, r.m1, acc);
            else acc = march3(vol, r, first, sh, st, r.m0, r.m1, acc);
            acc = __fmul_rn(acc, r.w);
        }
        sino[(u64)view * per_view + rem] = acc;
    }
}

extern "C" __global__ void joseph_forward2_i32_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                   const double* __restrict__ views, RayParams p, int count) {
    forward_i32<2, false>(vol, sino, views, p, count);
}

extern "C" __global__ void joseph_forward3_i32_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                   const double* __restrict__ views, RayParams p, int count) {
    forward_i32<3, false>(vol, sino, views, p, count);
}

// Harness only. Threads: ceil(nv / 32) * 32 * nu * count (rows past nv idle).
extern "C" __global__ void joseph_forward3_chunk_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                     const double* __restrict__ views, RayParams p, int count) {
    forward_i32<3, true>(vol, sino, views, p, count);
}

// 3D forward in the chunked, segmented order of chunk_ray: one thread per (segment of seglen
// planes, ray); each adds its segment's partial sum, times w, into the sinogram, which must be
// zeroed first. The same taps and weights as the other forwards, summed per segment (the sums
// differ from the unsegmented ones at the rounding level).
// Threads: ceil(nv / 32) * 32 * nu * count * ceil(max(n0, n1, n2) / seglen).
// BATCH: `batch` entries one after the other (volumes of shape[0] * shape[1] * shape[2] voxels,
// data of nviews * nu * nv values), the threads of each entry in the order above, entry after
// entry.
template <bool BATCH>
__device__ __forceinline__ void forward3_chunkseg(const float* __restrict__ vol, float* __restrict__ sino,
                                                  const double* __restrict__ views, const RayParams& p, int count,
                                                  int seglen, int batch) {
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    const int first[3] = {p.lo[0], p.lo[1], p.lo[2]};
    const int nmax = max(sh[0], max(sh[1], sh[2]));
    const int nseg = (nmax + seglen - 1) / seglen;
    const u64 total = (u64)((band_rows(p) + 31) / 32) * (u64)nseg * (u64)count * (u64)p.nu * 32u;
    const u64 all = BATCH ? total * (u64)batch : total;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < all; g += (u64)gridDim.x * blockDim.x) {
        const u64 entry = BATCH ? g / total : 0;
        const u64 gl = BATCH ? g - entry * total : g;
        const float* v = BATCH ? vol + entry * (u64)sh[0] * (u64)sh[1] * (u64)sh[2] : vol;
        float* out = BATCH ? sino + entry * (u64)p.nviews * (u64)p.nu * (u64)p.nv : sino;
        ChunkRay q;
        if (!chunk_ray(p, count, nseg, gl, q)) continue;
        Ray r;
        if (!setup_ray(p, views, q.view, q.iu, q.iv, r)) continue;
        // Segments from the grid's first plane along the ray's axis.
        const int s0 = first[r.a] + q.seg * seglen;
        const int mlo = max(r.m0, s0), mhi = min(r.m1, s0 + seglen);
        if (mlo >= mhi) continue;
        const float acc = march3(v, r, first, sh, st, mlo, mhi, 0.0f);
        atomicAdd(out + ((u64)q.view * (u64)p.nu + (u64)q.iu) * (u64)p.nv + (u64)q.iv, __fmul_rn(acc, r.w));
    }
}

// Five blocks per multiprocessor requested (H200, cone_512: 174 ms; 178 ms with the default
// register allocation, 178 / 207 ms with six / eight).
extern "C" __global__ void __launch_bounds__(256, 5)
joseph_forward3_chunkseg_f32(const float* __restrict__ vol, float* __restrict__ sino, const double* __restrict__ views,
                             RayParams p, int count, int seglen) {
    forward3_chunkseg<false>(vol, sino, views, p, count, seglen, 1);
}

// The same over `batch` entries (the sinograms zeroed first).
extern "C" __global__ void __launch_bounds__(256, 5)
joseph_forward3_chunkseg_batch_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                   const double* __restrict__ views, RayParams p, int count, int seglen, int batch) {
    forward3_chunkseg<true>(vol, sino, views, p, count, seglen, batch);
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
            acc = march2(vol, r, lo_of(p, r.b), nb, sa, sb, mlo, mhi, acc);
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
    const int first[3] = {p.lo[0], p.lo[1], p.lo[2]};
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
        const int s0 = first[r.a] + seg * seglen;
        const int mlo = max(r.m0, s0), mhi = min(r.m1, s0 + seglen);
        if (mlo >= mhi) continue;
        if (!FORWARD) c = __fmul_rn(r.w, c);
        if (FORWARD) {
            atomicAdd(out + sidx, __fmul_rn(march3(in, r, first, sh, st, mlo, mhi, 0.0f), r.w));
            continue;
        }
        const int nb = sh[r.b], sa = st[r.a], sb = st[r.b], nc = sh[r.c], sc = st[r.c];
        for (int m = mlo; m < mhi; ++m) {
            const Taps3 t = taps3(r, m, first[r.b], nb, first[r.c], nc, sa, sb, sc);
            if (t.b0 && t.c0) atomicAdd(out + t.i00, __fmul_rn(c, __fmul_rn(t.wb0, t.wc0)));
            if (t.b0 && t.c1) atomicAdd(out + t.i00 + sc, __fmul_rn(c, __fmul_rn(t.wb0, t.wc1)));
            if (t.b1 && t.c0) atomicAdd(out + t.i00 + sb, __fmul_rn(c, __fmul_rn(t.wb1, t.wc0)));
            if (t.b1 && t.c1) atomicAdd(out + t.i00 + sb + sc, __fmul_rn(c, __fmul_rn(t.wb1, t.wc1)));
        }
    }
}


extern "C" __global__ void joseph_backward3_seg_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                                    const double* __restrict__ views, RayParams p, int count, int seglen) {
    march_segments3<false>(sino, vol, views, p, count, seglen);
}


// ------------------------------------------- 2D forward through a shared-memory slab (exact)
// The production 2D forward for volumes with 32-bit indices (src/tomo/cuda.rs): 256 threads per
// block, vgroup 8, seglen 64, wcap 80, segs_per_block 2, grid (ceil(count / 8), ceil(nu / 32),
// ceil(nseg / 2)) with nseg = ceil(max(n0, n1) / 64), and (64 * 84 + 64) * 4 = 21760 bytes of
// dynamic shared memory (under the 48 KB a launch gets without opting in). H200, parallel2d_512
// (tools/kernel-harness): 0.294 ms, against 0.466 ms for joseph_forward2_seg4_f32 (0.306 ms with
// all segments in one block).
//
// A block takes `vgroup` consecutive views x (blockDim.x / vgroup) consecutive detector cells (one
// ray per thread; a warp holds rays of one view when blockDim.x / vgroup is a multiple of 32) and
// the segments [blockIdx.z * segs_per_block, ...) of `seglen` planes. The block's axis A is the
// dominant axis of most of its rays. Per segment it stages into shared memory, for each plane m of
// axis A, a window of `wcap` cells of axis b = 1 - A starting at offs[m]: the window's lower edge
// follows the chord between the minima of the rays' f at the segment's first and last planes (f is
// affine in m, so the minimum over rays is concave and lies above that chord). Cells outside the
// grid are staged as 0. The slab is stored plane-major (row m holds the b cells), so the rays of a
// warp read neighbouring words whatever the view's axis; for views whose b axis is strided the
// staging loads 8 planes x 4 cells per warp (8 consecutive floats of a volume row per cell).
// Each thread then marches its ray over the segment with the production formulas (same taps, same
// weights, same products, planes in increasing order).
// Exact for any geometry (parallel or fan, any detector, any grid): the window only decides where
// a tap is read from, never which taps there are. A tap pair whose cells are not both in the
// window (w = ib - offs[m] outside [0, wcap - 1)) reads the volume directly with the bounds tests
// of the other kernels, and rays whose axis is not A (views near 45 degrees, fan beams) take the
// plain march. Staged zeros stand for taps outside the grid: they add (+/-)0 to the sum, i.e.
// contribute nothing. The staged rows cover every plane a ray of axis A visits in the segment
// (its planes lie below n_A, so m - M0 < nS).
// gridDim.z is zsegs blocks per batch entry (an entry's volume and sinogram follow the previous
// one's). With zsegs == 1 each ray's sum runs over all its planes in the production order and is
// stored (the result equals joseph_forward2_i32_f32's); otherwise the partial sums of the
// segments are added with atomics into the sinogram, which must then be zeroed first (H200
// harness: relative difference 5.5e-7 to the single-block sums).
// Dynamic shared memory: (seglen * (wcap + 4) + seglen) * 4 bytes; wcap a multiple of 8;
// blockDim.x a multiple of 32 and of vgroup, at most 256 (the launch bounds).
template <bool BATCH>
__device__ __forceinline__ void forward2_smem(const float* __restrict__ vol, float* __restrict__ sino,
                                              const double* __restrict__ views, const RayParams& p, int count,
                                              int seglen, int vgroup, int wcap, int segs_per_block, int zsegs) {
    extern __shared__ float slab_smem[];
    // BATCH: blockIdx.z = entry * zsegs + share of the segments, the entries of a batch one after
    // the other; otherwise blockIdx.z is the share (zsegs == gridDim.z).
    const int zseg = BATCH ? (int)(blockIdx.z % (unsigned)zsegs) : (int)blockIdx.z;
    if (BATCH) {
        const u64 entry = blockIdx.z / (unsigned)zsegs;
        vol += entry * (u64)p.shape[0] * (u64)p.shape[1];
        sino += entry * (u64)p.nviews * (u64)p.nu;
    }
    __shared__ float wmin[32][2];
    const int pitch = wcap + 4;  // 4 * odd: the 8 x 4 staging pattern hits 32 distinct banks
    float* tile = slab_smem;
    int* offs = (int*)(slab_smem + seglen * pitch);
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = (int)(blockDim.x >> 5);
    const int nray = (int)blockDim.x / vgroup;
    const int gl = tid / nray;
    const int vloc = (int)blockIdx.x * vgroup + gl;
    const int iu = (int)blockIdx.y * nray + (tid - gl * nray);
    const int sh[2] = {(int)p.shape[0], (int)p.shape[1]};
    const int st[2] = {sh[1], 1};
    const int nseg = (max(sh[0], sh[1]) + seglen - 1) / seglen;
    const int seg_begin = zseg * segs_per_block;
    const int seg_end = min(nseg, seg_begin + segs_per_block);
    const int view = p.first_view + vloc;
    const bool valid = vloc < count && iu < p.nu;
    Ray r;
    r.a = -1; r.b = 0; r.c = 0; r.fb0 = 0.0f; r.sb = 0.0f; r.fc0 = 0.0f; r.sc = 0.0f; r.w = 0.0f; r.m0 = 0; r.m1 = 0;
    const bool ok = valid && setup_ray(p, views, view, iu, 0, r);
    const int n1 = __syncthreads_count(ok && r.a == 1);
    const int nok = __syncthreads_count(ok);
    const int A = 2 * n1 > nok ? 1 : 0;
    const int nbA = sh[1 - A], saA = st[A], sbA = st[1 - A];
    // The grid's first cells along A and b (a piece of a split transform starts at lo).
    const int lA = lo_of(p, A), lbA = lo_of(p, 1 - A);
    const bool fast = ok && r.a == A;
    // A ray's segments start at the grid's first plane along its own axis.
    const int s_ray = ok ? lo_of(p, r.a) : 0;
    float acc = 0.0f;
    bool touched = false;
    for (int seg = seg_begin; nok > 0 && seg < seg_end; ++seg) {
        const int M0 = lA + seg * seglen;
        int mlo = 0, mhi = 0;
        if (ok) {
            mlo = max(r.m0, s_ray + seg * seglen);
            mhi = min(r.m1, s_ray + seg * seglen + seglen);
        }
        const bool act = ok && mlo < mhi;
        // Block-uniform; this barrier also ends the previous segment's reads of tile and offs.
        if (__syncthreads_count(act) == 0) continue;
        touched = touched || act;
        const int nS = min(seglen, lA + sh[A] - M0);  // >= 1 whenever a ray of axis A is active here
        const bool fa = fast && act;
        float fs = 3.0e38f, fe = 3.0e38f;
        if (fa) {
            fs = __fadd_rn(r.fb0, __fmul_rn((float)M0, r.sb));
            fe = __fadd_rn(r.fb0, __fmul_rn((float)(M0 + nS - 1), r.sb));
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            fs = fminf(fs, __shfl_xor_sync(0xffffffffu, fs, o));
            fe = fminf(fe, __shfl_xor_sync(0xffffffffu, fe, o));
        }
        if (lane == 0) {
            wmin[warp][0] = fs;
            wmin[warp][1] = fe;
        }
        __syncthreads();
        for (int k = tid; k < nS; k += (int)blockDim.x) {
            float ls = 3.0e38f, le = 3.0e38f;
            for (int q = 0; q < nwarps; ++q) {
                ls = fminf(ls, wmin[q][0]);
                le = fminf(le, wmin[q][1]);
            }
            if (!(ls < 1.0e30f && le < 1.0e30f)) { ls = 0.0f; le = 0.0f; }  // no ray of axis A here
            const float frac = nS > 1 ? (float)k / (float)(nS - 1) : 0.0f;
            const float lo = ls + (le - ls) * frac;
            offs[k] = max(lbA - 2, (int)floorf(lo) - 1);
        }
        __syncthreads();
        if (sbA == 1) {
            // b contiguous: a warp loads 32 consecutive cells of one plane.
            for (int e = tid; e < nS * wcap; e += (int)blockDim.x) {
                const int ml = e / wcap, w = e - ml * wcap;
                const int j = offs[ml] + w;
                tile[ml * pitch + w] = (j >= lbA && j < lbA + nbA) ? __ldg(vol + (M0 + ml) * saA + j) : 0.0f;
            }
        } else {
            // b strided: a warp loads 8 consecutive planes (contiguous in memory) x 4 cells.
            const int mg = (nS + 7) >> 3;
            const int ne = mg * 8 * wcap;
            for (int e = tid; e < ne; e += (int)blockDim.x) {
                const int q = e >> 5, ln = e & 31;
                const int ml = (q % mg) * 8 + (ln & 7);
                const int w = (q / mg) * 4 + (ln >> 3);
                if (ml >= nS) continue;
                const int j = offs[ml] + w;
                tile[ml * pitch + w] = (j >= lbA && j < lbA + nbA) ? __ldg(vol + (M0 + ml) * saA + j * sbA) : 0.0f;
            }
        }
        __syncthreads();
        // The lanes of a warp step through the union of their plane ranges together, so that at
        // each step they read the same slab row.
        int ulo = fa ? mlo : 0x7fffffff, uhi = fa ? mhi : -0x7fffffff;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            ulo = min(ulo, __shfl_xor_sync(0xffffffffu, ulo, o));
            uhi = max(uhi, __shfl_xor_sync(0xffffffffu, uhi, o));
        }
        if (fa) {
            for (int m = ulo; m < uhi; ++m) {
                if (m < mlo || m >= mhi) continue;
                const int ml = m - M0;
                const float f = __fadd_rn(r.fb0, __fmul_rn((float)m, r.sb));
                const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                const float tb = __fsub_rn(f, (float)ib);
                const int w = ib - offs[ml];
                if ((unsigned)w < (unsigned)(wcap - 1)) {
                    const float* cell = tile + ml * pitch + w;
                    acc = __fadd_rn(acc, __fmul_rn(__fsub_rn(1.0f, tb), cell[0]));
                    acc = __fadd_rn(acc, __fmul_rn(tb, cell[1]));
                } else {
                    const int base = m * saA + ib * sbA;
                    if (ib >= lbA && ib < lbA + nbA) acc = __fadd_rn(acc, __fmul_rn(__fsub_rn(1.0f, tb), __ldg(vol + base)));
                    if (ib + 1 >= lbA && ib + 1 < lbA + nbA) acc = __fadd_rn(acc, __fmul_rn(tb, __ldg(vol + base + sbA)));
                }
            }
        } else if (act) {
            // A ray along the other axis (views near 45 degrees, fan beams): the production march.
            const int nb = sh[r.b], sa = st[r.a], sb = st[r.b];
            acc = march2(vol, r, lo_of(p, r.b), nb, sa, sb, mlo, mhi, acc);
        }
    }
    if (!valid) return;
    const u64 sidx = (u64)view * (u64)p.nu + (u64)iu;
    if (zsegs == 1) sino[sidx] = ok ? __fmul_rn(acc, r.w) : 0.0f;
    else if (touched) atomicAdd(sino + sidx, __fmul_rn(acc, r.w));
}

extern "C" __global__ void __launch_bounds__(256)
joseph_forward2_smem_f32(const float* __restrict__ vol, float* __restrict__ sino, const double* __restrict__ views,
                         RayParams p, int count, int seglen, int vgroup, int wcap, int segs_per_block) {
    forward2_smem<false>(vol, sino, views, p, count, seglen, vgroup, wcap, segs_per_block, (int)gridDim.z);
}

// The same over a batch: gridDim.z = batch * zsegs.
extern "C" __global__ void __launch_bounds__(256)
joseph_forward2_smem_batch_f32(const float* __restrict__ vol, float* __restrict__ sino,
                               const double* __restrict__ views, RayParams p, int count, int seglen, int vgroup,
                               int wcap, int segs_per_block, int zsegs) {
    forward2_smem<true>(vol, sino, views, p, count, seglen, vgroup, wcap, segs_per_block, zsegs);
}


// One plane m of the warp-merged scatter (all 32 lanes call it together; `on`: the lane's ray
// is marching at plane m; c = w * y; prev_a: lane l-1's axis). See backward3_seg_warp below.
// Where a scattering transpose adds its contributions. FloatSum: float atomics into the volume
// (the default transposes: the sums' rounding depends on the order of the atomics, which varies
// from run to run). FixedSum: 64-bit fixed-point integer atomics into a scratch of 64-bit words
// at the scale `scale` (integer addition is associative, so the words hold the same bits in any
// order: the deterministic transposes, whose joseph_fixed_to_f32 turns the sums into floats).
// Each contribution is the same float product in both; FixedSum rounds it to a multiple of
// 1/scale (at most 2^-63 of the transpose's bound) and skips zeros.
struct FloatSum {
    float* p;
    static constexpr bool FIXED = false;
    static constexpr bool PACKED = false;
    __device__ __forceinline__ float q(float v) const { return v; }
    __device__ __forceinline__ FloatSum at(u64 off) const { return FloatSum{p + off}; }
    __device__ __forceinline__ void add(u64 i, float v) const { atomicAdd(p + i, v); }
    __device__ __forceinline__ bool vector_aligned() const { return (reinterpret_cast<u64>(p) & 15u) == 0u; }
};

struct FixedSum {
    unsigned long long* p;
    double scale;
    static constexpr bool FIXED = true;
    static constexpr bool PACKED = false;
    __device__ __forceinline__ FixedSum at(u64 off) const { return FixedSum{p + off, scale}; }
    __device__ __forceinline__ void add(u64 i, float v) const {
        if (v != 0.0f) atomicAdd(p + i, (unsigned long long)llrint((double)v * scale));
    }
    __device__ __forceinline__ bool vector_aligned() const { return true; }  // scalar adds only
};

// PackedSum: two neighbouring voxels' 32-bit fixed-point sums in one 64-bit word (voxel 2k in the
// low half, 2k + 1 in the high half), added with 64-bit integer atomics: the word is exact modulo
// 2^64, so with both true sums within [-2^31, 2^31) the low one is the word's sign-extended low
// half and the high one (word - low) / 2^32 (joseph_packed_to_f32). A voxel's sum is bounded by
// max|y| times that voxel's sum of the transpose's weights (the transpose of ones): `scale` puts
// that bound at most at 2^30, so the sums and every partial sum's rounding stay in range. A quad
// of the lean path is two such adds (half the fixed-point form's four).
__device__ __forceinline__ unsigned long long packed_lo(float v, double scale) {
    return (unsigned long long)(long long)__double2int_rn((double)v * scale);
}
__device__ __forceinline__ unsigned long long packed_hi(float v, double scale) {
    return (unsigned long long)((long long)__double2int_rn((double)v * scale) << 32);
}
struct PackedSum {
    unsigned long long* p;  // word k holds voxels 2k and 2k + 1
    double scale;
    static constexpr bool FIXED = false;
    static constexpr bool PACKED = true;
    __device__ __forceinline__ PackedSum at(u64 off) const { return PackedSum{p + off / 2, scale}; }
    __device__ __forceinline__ void add(u64 i, float v) const {
        if (v == 0.0f) return;
        const unsigned long long w = (i & 1u) ? packed_hi(v, scale) : packed_lo(v, scale);
        if (w != 0ull) atomicAdd(p + (i >> 1), w);
    }
    // Two quads' cells as two words (i even).
    __device__ __forceinline__ void add4(u64 i, float a, float b, float c, float d) const {
        const unsigned long long w0 = packed_lo(a, scale) + packed_hi(b, scale);
        const unsigned long long w1 = packed_lo(c, scale) + packed_hi(d, scale);
        if (w0 != 0ull) atomicAdd(p + (i >> 1), w0);
        if (w1 != 0ull) atomicAdd(p + (i >> 1) + 1, w1);
    }
    __device__ __forceinline__ bool vector_aligned() const { return true; }
};


// The scale 2^e for data whose largest magnitude has the bits `ymax_bits`, so that sums bounded
// by bound * max|y| stay below 2^62 (1 when the bound is not finite and positive).
__device__ __forceinline__ double fixed_scale(double bound, unsigned ymax_bits, int bits = 62) {
    const double b = bound * (double)__uint_as_float(ymax_bits);
    if (!(b > 0.0) || !(b < 1e300)) return 1.0;
    int e = 0;
    frexp(b, &e);  // b < 2^e
    return ldexp(1.0, bits - e);
}

template <bool COUNT, class Sum>
__device__ __forceinline__ void warp_merge_scatter(const Sum& vol, const Ray& r, int m, bool on, float c,
                                                   int lane, int prev_a, const int* first, const int* sh,
                                                   const int* st, unsigned long long* n_done,
                                                   unsigned long long* n_saved) {
    const unsigned full = 0xffffffffu;
    const int a = r.a;
    const int nb = sh[r.b], sa = a >= 0 ? st[a] : 0, sb = st[r.b], nc = sh[r.c], sc = st[r.c];
    int ib = 0, ic = 0, i00 = 0;
    bool b0 = false, b1 = false, c0 = false, c1 = false;
    float v00 = 0.0f, v01 = 0.0f, v10 = 0.0f, v11 = 0.0f;
    if (on) {
        const Taps3 t = taps3(r, m, first[r.b], nb, first[r.c], nc, sa, sb, sc);
        ib = t.ib;
        ic = t.ic;
        i00 = t.i00;
        b0 = t.b0;
        b1 = t.b1;
        c0 = t.c0;
        c1 = t.c1;
        v00 = __fmul_rn(c, __fmul_rn(t.wb0, t.wc0));
        v01 = __fmul_rn(c, __fmul_rn(t.wb0, t.wc1));
        v10 = __fmul_rn(c, __fmul_rn(t.wb1, t.wc0));
        v11 = __fmul_rn(c, __fmul_rn(t.wb1, t.wc1));
    }
    // All 32 lanes execute these.
    const int key_b = on ? ib : -0x7fffffff - 1;  // an idle lane matches no one
    const int prev_b = __shfl_up_sync(full, key_b, 1);
    const int prev_c = __shfl_up_sync(full, ic, 1);
    const float prev_v01 = __shfl_up_sync(full, v01, 1);
    const float prev_v11 = __shfl_up_sync(full, v11, 1);
    const bool take = on && lane > 0 && prev_a == a && prev_b == ib && prev_c + 1 == ic;
    const unsigned takers = __ballot_sync(full, take);
    const bool gave = (((takers >> 1) >> lane) & 1u) != 0u;  // lane l+1 took this lane's c+1 taps
    if (take) {
        // Lane l-1's taps (ib, ic + 1) and (ib + 1, ic + 1) are this lane's (ib, ic) and
        // (ib + 1, ic), with the same validity.
        v00 = __fadd_rn(v00, prev_v01);
        v10 = __fadd_rn(v10, prev_v11);
    }
    if (on) {
        if (b0 && c0) vol.add((u64)i00, v00);
        if (b0 && c1 && !gave) vol.add((u64)(i00 + sc), v01);
        if (b1 && c0) vol.add((u64)(i00 + sb), v10);
        if (b1 && c1 && !gave) vol.add((u64)(i00 + sb + sc), v11);
        if (COUNT) {
            const int nc1 = (b0 && c1 ? 1 : 0) + (b1 && c1 ? 1 : 0);
            *n_done += (unsigned long long)((b0 && c0 ? 1 : 0) + (b1 && c0 ? 1 : 0) + (gave ? 0 : nc1));
            *n_saved += (unsigned long long)(gave ? nc1 : 0);
        }
    }
}

// ------------------------------- 3D segmented transpose with warp aggregation of shared taps
// The production 3D transpose for volumes with 32-bit indices (src/tomo/cuda.rs): seglen 64, one
// thread per (segment, ray), 256 threads per block, grid-stride. H200 (tools/kernel-harness):
// cone_512 750 -> 709 ms, cone_256 48.8 -> 43.1 ms against joseph_backward3_seg_f32; relative
// difference 8.5e-7 to the atomic transpose (the same taps, summed in another order).
//
// march_segments3<false> (joseph_backward3_seg_f32) with the same thread order: consecutive lanes
// mostly hold consecutive detector rows iv of one column iu, which share the b tap at a plane and
// whose c taps are 1-2 cells apart. At each plane, when lane l's taps (ib, ic) are lane l-1's
// (ib, ic + 1) — the same voxels, with the same axis at the same plane — lane l adds lane l-1's
// c+1 contributions (both b rows) to its own c contributions and lane l-1 skips those two atomics.
// The merge is keyed on the voxels alone: lane l-1 must be marching (not idle, inside its plane
// range) at the warp's current plane m along the same axis a (hence the same b, c axes and
// strides) with the same ib and ic one lower, so the merged taps are the same voxels with the same
// in-grid tests, whatever rays the two lanes hold. A warp that spans two detector columns, two
// views or two segments, an nv that is not a multiple of 32, or idle lanes past the end (any
// thread count) only lose merges, never exactness. The lanes of a warp loop together over the
// union of their plane ranges (per-lane predicates for the planes outside a lane's range), so the
// full-mask shuffles see all 32 lanes; the grid-stride loop runs while the warp's first index is
// below the total, so whole warps leave it together (blockDim.x must be a multiple of 32). `vol`
// must be zeroed first. COUNT (harness only): stats[0] += atomics issued, stats[1] += saved.
template <bool COUNT>
__device__ __forceinline__ void backward3_seg_warp(const float* __restrict__ sino, float* __restrict__ vol,
                                                   const double* __restrict__ views, const RayParams& p, int count,
                                                   int seglen, unsigned long long* __restrict__ stats) {
    const unsigned full = 0xffffffffu;
    const unsigned per_view = (unsigned)p.nu * (unsigned)p.nv;
    const u64 rays = (u64)per_view * (u64)count;
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    const int first[3] = {p.lo[0], p.lo[1], p.lo[2]};
    const int nmax = max(sh[0], max(sh[1], sh[2]));
    const int nseg = (nmax + seglen - 1) / seglen;
    const u64 total = rays * (u64)nseg;
    const int lane = (int)(threadIdx.x & 31);
    unsigned long long n_done = 0, n_saved = 0;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g - (u64)lane < total; g += (u64)gridDim.x * blockDim.x) {
        Ray r;
        r.a = -1; r.b = 0; r.c = 0; r.fb0 = 0.0f; r.sb = 0.0f; r.fc0 = 0.0f; r.sc = 0.0f; r.w = 0.0f; r.m0 = 0; r.m1 = 0;
        int mlo = 0x7fffffff, mhi = -0x7fffffff;  // empty range for an idle lane
        float c = 0.0f;
        if (g < total) {
            const int seg = (int)(g / rays);
            const u64 ray = g - (u64)seg * rays;
            const unsigned vloc = (unsigned)(ray / per_view);
            const unsigned rem = (unsigned)(ray - (u64)vloc * per_view);
            const int view = p.first_view + (int)vloc;
            const float y = sino[(u64)view * per_view + rem];
            if (y != 0.0f) {
                const int iu = (int)(rem / (unsigned)p.nv), iv = (int)(rem % (unsigned)p.nv);
                if (setup_ray(p, views, view, iu, iv, r)) {
                    const int s0 = first[r.a] + seg * seglen;
                    const int lo = max(r.m0, s0), hi = min(r.m1, s0 + seglen);
                    if (lo < hi) {
                        mlo = lo;
                        mhi = hi;
                        c = __fmul_rn(r.w, y);
                    }
                }
            }
        }
        int ulo = mlo, uhi = mhi;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            ulo = min(ulo, __shfl_xor_sync(full, ulo, o));
            uhi = max(uhi, __shfl_xor_sync(full, uhi, o));
        }
        const int prev_a = __shfl_up_sync(full, r.a, 1);
        for (int m = ulo; m < uhi; ++m) {  // warp-uniform bounds
            warp_merge_scatter<COUNT>(FloatSum{vol}, r, m, m >= mlo && m < mhi, c, lane, prev_a, first, sh, st,
                                      &n_done, &n_saved);
        }
    }
    if (COUNT) {
        atomicAdd(stats, n_done);
        atomicAdd(stats + 1, n_saved);
    }
}

extern "C" __global__ void joseph_backward3_seg_warp_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                                         const double* __restrict__ views, RayParams p, int count,
                                                         int seglen) {
    backward3_seg_warp<false>(sino, vol, views, p, count, seglen, nullptr);
}


// ------------------------------- 3D transpose through per-warp shared profiles, vector atomics
// The production 3D transpose for volumes with 32-bit indices (src/tomo/cuda.rs): seglen 128, one
// thread per (segment, ray), 256 threads per block, threads in the order of chunk_ray (a warp
// holds the 32 rows of one chunk of one detector column), launched with one block per 256 threads
// so that the writes in flight stay in one slab of one band of the volume, which L2 holds.
// H200, cone_512 (tools/kernel-harness/vec_probe.cu): 713 ms with joseph_backward3_seg_warp_f32 ->
// 547 ms with this kernel in a grid-stride launch -> 224 ms in the ordered launch; cone_256 43.0
// -> 20.3 ms.
//
// Where the scatter's time went in the grid-stride launch (same probe, one plane per step): the
// warp's per-plane arithmetic without any write 172 ms; the same writes as plain float4 stores
// 509 ms; as float4 atomics 558 ms; as scalar atomics 1048 ms; Nsight Compute: 2.1 TB/s of DRAM
// traffic, L2 hit rate 52 %. The grid-stride loop (32 blocks per multiprocessor) spreads the
// blocks in flight over views far apart, whose slabs do not fit in L2 together; the ordered
// launch keeps them to a few neighbouring views. The warp merges its rays' taps in shared memory
// so that each touched voxel is written once per plane, with vector atomics (half the cost of
// scalar ones), and handles STEP = 4 planes per step (one synchronisation and a full-warp flush
// per two planes: 236 -> 224 ms).
//
// Lean path, taken by a warp when (warp-uniform tests over the planes [ulo, uhi) it marches):
// all 32 lanes hold rays with the same axis a != 2 (so c = 2, the contiguous axis) and
// bit-identical fb0 and sb (one detector column of a circular or helical cone, or of a parallel
// beam whose rows differ along the rotation axis: the rays share their b taps and weights), nc and
// the first cell along c (a piece's box) are multiples of 4 and the volume is 16-byte aligned, the c positions f_c grow from lane to lane by
// at least 1.001 cells at the first and the last plane (f_c is affine in m, so everywhere in
// between; the rounding of f_c is far below the margin, so the lanes' floors ic are distinct and
// increasing; |fc0| and |m sc| below 2048 bound that rounding), and lane 31's f_c is at most 58.5
// cells above lane 0's (so that ic - (ic_0 & ~3) + 1 stays below 64). The lean path takes ic as the
// exact floor of f_c: the other kernels' shifted truncation equals it for f_c >= -4, and for
// f_c < -4 both put the taps outside the grid, where they are dropped. Then, at each plane, each lane writes its two c contributions
// c * (1 - t_c) at ic and c * t_c at ic + 1 into a 64-cell profile with plain stores (all cells
// distinct; a lane whose ic is lane l-1's ic + 1 adds lane l-1's second contribution to its own
// first one, and lane l-1 does not store it), and 16 lanes add the profile's 16 quads, times the
// two row weights 1 - t_b and t_b, to rows ib and ib + 1 of the volume with float4 atomics
// (sm_90; four scalar atomics per quad before). Quads outside the grid (its first cell and nc along c are multiples
// of 4, so a quad is wholly in or out) and rows outside the grid along b are skipped, which drops exactly the taps
// the other kernels' bounds tests drop; lanes outside their plane range contribute 0. The taps
// and weights are the forward's; only the products are formed as (c * w_c) * w_b instead of
// c * (w_b * w_c), and the additions in another order: the transpose of the forward up to
// rounding, like the other transposes.
// Other warps (views near 45 degrees within a column's chunk, detector rows finer than the
// voxels, tilted axes, a partial last chunk) take warp_merge_scatter, the path of
// joseph_backward3_seg_warp_f32. `vol` must be zeroed first. stats (harness only, may be null):
// [0] += warp-planes of the lean path, [1] += of the other path.
// BATCH: `batch` entries one after the other, as forward3_chunkseg<true> (an entry's thread
// count is a multiple of 32, so a warp never spans two entries).
template <int STEP, bool BATCH, class Sum>
__device__ __forceinline__ void backward3_profile(const float* __restrict__ sino, const Sum sum_all,
                                                  const double* __restrict__ views, const RayParams& p, int count,
                                                  int seglen, unsigned long long* __restrict__ stats, int batch) {
    __shared__ __align__(16) float profiles[8][STEP * 64];
    const unsigned full = 0xffffffffu;
    const int lane = (int)(threadIdx.x & 31);
    float* prof = profiles[(threadIdx.x >> 5) & 7];
    for (int i = lane; i < STEP * 64; i += 32) prof[i] = 0.0f;
    __syncwarp();
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    const int first[3] = {p.lo[0], p.lo[1], p.lo[2]};
    const int nmax = max(sh[0], max(sh[1], sh[2]));
    const int nseg = (nmax + seglen - 1) / seglen;
    const u64 total = (u64)((band_rows(p) + 31) / 32) * (u64)nseg * (u64)count * (u64)p.nu * 32u;
    // Entries are voxels apart, a multiple of 4 when sh[2] is: all aligned alike.
    // A piece's box along axis 2 must also start at a multiple of 4, so that its quads are whole.
    const bool aligned = sum_all.vector_aligned() && (sh[2] & 3) == 0 && (first[2] & 3) == 0;
    unsigned long long n_lean = 0, n_other = 0;
    const u64 all = BATCH ? total * (u64)batch : total;
    for (u64 gg = blockIdx.x * (u64)blockDim.x + threadIdx.x; gg - (u64)lane < all; gg += (u64)gridDim.x * blockDim.x) {
        // The warp's entry (warp-uniform) and this thread's index within it.
        const u64 entry = BATCH ? (gg - (u64)lane) / total : 0;
        const u64 g = BATCH ? gg - entry * total : gg;
        const Sum vol = BATCH ? sum_all.at(entry * (u64)sh[0] * (u64)sh[1] * (u64)sh[2]) : sum_all;
        const float* data = BATCH ? sino + entry * (u64)p.nviews * (u64)p.nu * (u64)p.nv : sino;
        Ray r;
        r.a = -1; r.b = 0; r.c = 0; r.fb0 = 0.0f; r.sb = 0.0f; r.fc0 = 0.0f; r.sc = 0.0f; r.w = 0.0f; r.m0 = 0; r.m1 = 0;
        int mlo = 0x7fffffff, mhi = -0x7fffffff;  // empty range for an idle lane
        float c = 0.0f;
        ChunkRay q;
        const bool live = g < total && chunk_ray(p, count, nseg, g, q);
        if (live) {
            {
                // No data (`sino` null): the transpose of ones (the packed form's bound).
                const float y = data != nullptr ? data[((u64)q.view * (u64)p.nu + (u64)q.iu) * (u64)p.nv + (u64)q.iv]
                                                : 1.0f;
                // Set up every ray (also where y = 0: the lean test needs each lane's track).
                const bool hit = setup_ray(p, views, q.view, q.iu, q.iv, r);
                if (hit && y != 0.0f) {
                    const int s0 = first[r.a] + q.seg * seglen;
                    const int lo = max(r.m0, s0), hi = min(r.m1, s0 + seglen);
                    if (lo < hi) {
                        mlo = lo;
                        mhi = hi;
                        c = __fmul_rn(r.w, y);
                    }
                }
            }
        }
        int ulo = mlo, uhi = mhi;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            ulo = min(ulo, __shfl_xor_sync(full, ulo, o));
            uhi = max(uhi, __shfl_xor_sync(full, uhi, o));
        }
        if (ulo >= uhi) continue;  // warp-uniform
        const int a = r.a;
        // (The shuffles first: every lane must execute them.)
        const int a_0 = __shfl_sync(full, a, 0);
        const float fb0_0 = __shfl_sync(full, r.fb0, 0), sb_0 = __shfl_sync(full, r.sb, 0);
        bool lean = live && aligned && a >= 0 && a != 2 && a == a_0 &&
                    __float_as_uint(r.fb0) == __float_as_uint(fb0_0) && __float_as_uint(r.sb) == __float_as_uint(sb_0);
        {
            const float f_lo = __fadd_rn(r.fc0, __fmul_rn((float)ulo, r.sc));
            const float f_hi = __fadd_rn(r.fc0, __fmul_rn((float)(uhi - 1), r.sc));
            const float n_lo = __shfl_down_sync(full, f_lo, 1), n_hi = __shfl_down_sync(full, f_hi, 1);
            if (lane < 31 && !(n_lo - f_lo >= 1.001f && n_hi - f_hi >= 1.001f)) lean = false;
            // |fc0|, |m sc| < 2048: each f_c is then within 4e-4 of its exact affine value.
            if (!(fabsf(r.fc0) < 2048.0f && fabsf(__fmul_rn((float)uhi, r.sc)) < 2048.0f)) lean = false;
            const float span_lo = __shfl_sync(full, f_lo, 31) - __shfl_sync(full, f_lo, 0);
            const float span_hi = __shfl_sync(full, f_hi, 31) - __shfl_sync(full, f_hi, 0);
            if (!(span_lo <= 58.5f && span_hi <= 58.5f)) lean = false;
        }
        if (__all_sync(full, lean)) {
            if (stats != nullptr && lane == 0) n_lean += (unsigned long long)(uhi - ulo);
            const int nb = sh[r.b], sa = st[a], sb = st[r.b], nc = sh[2], lb = first[r.b], lc = first[2];
            // STEP planes per step: their profiles are written, then flushed by 16 lanes each.
            for (int m = ulo; m < uhi; m += STEP) {
                int ib_k[STEP], base_k[STEP];
                float tb_k[STEP];
#pragma unroll
                for (int k = 0; k < STEP; ++k) {
                    const int mk = m + k;
                    ib_k[k] = 0; base_k[k] = 0; tb_k[k] = 0.0f;
                    if (k > 0 && mk >= uhi) break;  // warp-uniform; past the tested planes
                    const float mf = (float)mk;
                    const float f = __fadd_rn(r.fb0, __fmul_rn(mf, r.sb));
                    const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                    // The exact floor (the other kernels' shifted truncation equals it for f >= -4;
                    // below, both give taps outside the grid): distinct for the lanes' distinct f.
                    const float fc = __fadd_rn(r.fc0, __fmul_rn(mf, r.sc));
                    const int ic = __float2int_rd(fc);
                    const float tc = __fsub_rn(fc, (float)ic);
                    const float ce = (mk >= mlo && mk < mhi) ? c : 0.0f;
                    const float v0 = __fmul_rn(ce, __fsub_rn(1.0f, tc)), v1 = __fmul_rn(ce, tc);
                    const int base = __shfl_sync(full, ic, 0) & ~3;
                    const int col = ic - base;
                    const int prev_col = __shfl_up_sync(full, col, 1);
                    const float prev_v1 = __shfl_up_sync(full, v1, 1);
                    const int next_col = __shfl_down_sync(full, col, 1);
                    const bool take = lane > 0 && prev_col + 1 == col;
                    const bool gave = lane < 31 && next_col == col + 1;
                    float* pk = prof + 64 * k;
                    pk[col] = take ? __fadd_rn(v0, prev_v1) : v0;
                    if (!gave) pk[col + 1] = v1;
                    ib_k[k] = ib;
                    base_k[k] = base;
                    tb_k[k] = __fsub_rn(f, (float)ib);
                }
                __syncwarp();
                // Flush: 16 lanes per plane, two planes per round.
#pragma unroll
                for (int rnd = 0; rnd < (STEP + 1) / 2; ++rnd) {
                    const int hi = STEP > 1 ? (lane >> 4) : 0;
                    const int k = 2 * rnd + hi;
                    const int ql = lane & 15;
                    if ((STEP > 1 || lane < 16) && k < STEP && m + k < uhi) {
                        const int kk = 2 * rnd + 1 < STEP ? 2 * rnd + 1 : 2 * rnd;
                        const int ib = hi ? ib_k[kk] : ib_k[2 * rnd];
                        const int base = hi ? base_k[kk] : base_k[2 * rnd];
                        const float tb = hi ? tb_k[kk] : tb_k[2 * rnd];
                        const float w0 = __fsub_rn(1.0f, tb);
                        if constexpr (Sum::FIXED) {
                            // Lane ql takes the cells ql + 16 j: each add instruction's lanes
                            // land on 16 consecutive voxels.
#pragma unroll
                            for (int j = 0; j < 4; ++j) {
                                const int cell = ql + 16 * j;
                                const float q = prof[64 * k + cell];
                                prof[64 * k + cell] = 0.0f;
                                const int gc = base + cell;
                                if (q == 0.0f || gc < lc || gc >= lc + nc) continue;
#pragma unroll
                                for (int x = 0; x < 2; ++x) {
                                    const int jb = ib + x;
                                    if (jb < lb || jb >= lb + nb) continue;
                                    vol.add((u64)((m + k) * sa + jb * sb + gc), __fmul_rn(q, x == 0 ? w0 : tb));
                                }
                            }
                        } else if constexpr (Sum::PACKED) {
                            float4* quad = reinterpret_cast<float4*>(prof + 64 * k) + ql;
                            const float4 q = *quad;
                            *quad = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                            const int gc = base + 4 * ql;
                            if (gc >= lc && gc < lc + nc && (q.x != 0.0f || q.y != 0.0f || q.z != 0.0f || q.w != 0.0f)) {
#pragma unroll
                                for (int x = 0; x < 2; ++x) {
                                    const int jb = ib + x;
                                    if (jb < lb || jb >= lb + nb) continue;
                                    const float wb = x == 0 ? w0 : tb;
                                    vol.add4((u64)((m + k) * sa + jb * sb + gc), __fmul_rn(q.x, wb), __fmul_rn(q.y, wb),
                                             __fmul_rn(q.z, wb), __fmul_rn(q.w, wb));
                                }
                            }
                        } else {
                            float4* quad = reinterpret_cast<float4*>(prof + 64 * k) + ql;
                            const float4 q = *quad;
                            *quad = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                            const int gc = base + 4 * ql;
                            if (gc >= lc && gc < lc + nc && (q.x != 0.0f || q.y != 0.0f || q.z != 0.0f || q.w != 0.0f)) {
                                float* dst = vol.p + ((m + k) * sa + ib * sb + gc);
#pragma unroll
                                for (int x = 0; x < 2; ++x) {
                                    const int jb = ib + x;
                                    if (jb < lb || jb >= lb + nb) continue;
                                    const float wb = x == 0 ? w0 : tb;
                                    const float4 d = make_float4(vol.q(__fmul_rn(q.x, wb)), vol.q(__fmul_rn(q.y, wb)),
                                                                 vol.q(__fmul_rn(q.z, wb)), vol.q(__fmul_rn(q.w, wb)));
                                    float* row = dst + x * sb;
#if __CUDA_ARCH__ >= 900
                                    atomicAdd(reinterpret_cast<float4*>(row), d);
#else
                                    atomicAdd(row, d.x);
                                    atomicAdd(row + 1, d.y);
                                    atomicAdd(row + 2, d.z);
                                    atomicAdd(row + 3, d.w);
#endif
                                }
                            }
                        }
                    }
                }
                __syncwarp();
            }
            continue;
        }
        if (stats != nullptr && lane == 0) n_other += (unsigned long long)(uhi - ulo);
        const int prev_a = __shfl_up_sync(full, a, 1);
        for (int m = ulo; m < uhi; ++m) {
            warp_merge_scatter<false, Sum>(vol, r, m, m >= mlo && m < mhi, c, lane, prev_a, first, sh, st, nullptr,
                                           nullptr);
        }
    }
    if (stats != nullptr && lane == 0) {
        atomicAdd(stats, n_lean);
        atomicAdd(stats + 1, n_other);
    }
}

extern "C" __global__ void __launch_bounds__(256)
joseph_backward3_profile_f32(const float* __restrict__ sino, float* __restrict__ vol, const double* __restrict__ views,
                             RayParams p, int count, int seglen) {
    backward3_profile<4, false>(sino, FloatSum{vol}, views, p, count, seglen, nullptr, 1);
}

// The same over `batch` entries (the volumes zeroed first).
extern "C" __global__ void __launch_bounds__(256)
joseph_backward3_profile_batch_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                   const double* __restrict__ views, RayParams p, int count, int seglen, int batch) {
    backward3_profile<4, true>(sino, FloatSum{vol}, views, p, count, seglen, nullptr, batch);
}

// The deterministic form (CudaOptions::deterministic): the same warps, profiles and products,
// added as 64-bit fixed-point integers into `acc` (zeroed; the volume's layout) at the scale
// fixed_scale(bound, *ymax) (FixedSum); joseph_fixed_to_f32 turns them into floats.
extern "C" __global__ void __launch_bounds__(256)
joseph_backward3_profile_fixed_f32(const float* __restrict__ sino, unsigned long long* __restrict__ acc,
                                   const double* __restrict__ views, RayParams p, int count, int seglen,
                                   double bound, const unsigned* __restrict__ ymax) {
    backward3_profile<4, false>(sino, FixedSum{acc, fixed_scale(bound, *ymax)}, views, p, count, seglen, nullptr, 1);
}

// The deterministic form with two voxels' 32-bit sums per 64-bit word (PackedSum) into `acc`
// (zeroed; (n + 1) / 2 words), at fixed_scale(bound, *ymax, 30) with `bound` at least every
// voxel's sum of weights (the transpose of ones); joseph_packed_to_f32 turns them into floats.
extern "C" __global__ void __launch_bounds__(256)
joseph_backward3_profile_packed_f32(const float* __restrict__ sino, unsigned long long* __restrict__ acc,
                                    const double* __restrict__ views, RayParams p, int count, int seglen,
                                    double bound, const unsigned* __restrict__ ymax) {
    backward3_profile<4, false>(sino, PackedSum{acc, fixed_scale(bound, *ymax, 30)}, views, p, count, seglen, nullptr,
                                1);
}

// Harness only: one plane per step (cone_512: 236 ms; two per step 225 ms; four 224 ms).
extern "C" __global__ void __launch_bounds__(256)
joseph_backward3_profile1_f32(const float* __restrict__ sino, float* __restrict__ vol, const double* __restrict__ views,
                              RayParams p, int count, int seglen) {
    backward3_profile<1, false>(sino, FloatSum{vol}, views, p, count, seglen, nullptr, 1);
}

// Harness only: the same, counting the warp-planes of each path into stats[0..2].
extern "C" __global__ void __launch_bounds__(256)
joseph_backward3_profile_count_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                   const double* __restrict__ views, RayParams p, int count, int seglen,
                                   unsigned long long* __restrict__ stats) {
    backward3_profile<4, false>(sino, FloatSum{vol}, views, p, count, seglen, stats, 1);
}

// ---------------------------------------------------------------------------------------------
// 2D parallel beams: the transpose over tiles of pixels.
//
// joseph_setup2_f32 sets every ray up once (setup_ray, as the forward kernels do) and keeps what
// the march of a 2D ray needs: Ray2 {fb0, m0, m1} and its weight w per ray, and View2 {a, sb, fb0
// of the first ray, the change of fb0 per detector cell} per view (the rays of a parallel view
// share their direction, hence their dominant axis a and step sb, bit for bit).
// joseph_weigh2_f32 forms c = w*y per ray. The transposes below then find, for their pixels and
// each view, the rays whose taps can reach them (a range of u from the first ray's fb0 and the
// per-cell change, widened by a margin that covers the rounding: gather2_range) and recompute each
// one's taps exactly as march2 does (f = fb0 + m*sb rounded, ib = floor(f), t = f - ib): the same
// taps, weights and products (w*y)*weight as the scattering transpose, with no atomics until a
// share of the views is added into the volume (each share's sum runs in a fixed order; the shares
// are added atomically, so their order may differ from run to run).

struct Ray2 {
    float fb0;
    int planes;  // m0 | m1 << 16 (planes below 32768)
};

struct View2 {
    int a;
    float sb, fb0_first, inv_dfb0;  // inv_dfb0: 1 / (change of fb0 per detector cell), 0 if none
};

extern "C" __global__ void joseph_setup2_f32(const double* __restrict__ views, RayParams p, Ray2* __restrict__ rays,
                                             float* __restrict__ weights, View2* __restrict__ info) {
    const u64 total = (u64)p.nviews * (u64)p.nu;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int view = (int)(g / (u64)p.nu);
        const int iu = (int)(g % (u64)p.nu);
        Ray r;
        const bool hit = setup_ray(p, views, view, iu, 0, r);
        Ray2 e;
        e.fb0 = r.fb0;
        e.planes = (hit && r.a >= 0) ? (r.m0 | (r.m1 << 16)) : 0;
        rays[g] = e;
        weights[g] = r.w;
        if (iu == 0) {
            View2 v;
            v.a = r.a;
            v.sb = r.sb;
            v.fb0_first = r.fb0;
            v.inv_dfb0 = 0.0f;
            if (p.nu > 1) {
                Ray last;
                setup_ray(p, views, view, p.nu - 1, 0, last);
                const double d = ((double)last.fb0 - (double)r.fb0) / (double)(p.nu - 1);
                if (d != 0.0) v.inv_dfb0 = (float)(1.0 / d);
            }
            info[view] = v;
        }
    }
}

// c = w * y per ray: the product the scattering transpose forms once per ray.
// `n` values: entries of `rays` values each (a batch of sinograms one after the other).
extern "C" __global__ void joseph_weigh2_f32(const float* __restrict__ sino, const float* __restrict__ weights,
                                             float* __restrict__ c, unsigned n, unsigned rays) {
    for (unsigned g = blockIdx.x * blockDim.x + threadIdx.x; g < n; g += gridDim.x * blockDim.x)
        c[g] = __fmul_rn(weights[g % rays], sino[g]);
}

// dst += src (n values): a forward piece whose kernel stores its sums, added into the rows it
// accumulates over the slabs of a split transform (src/tomo/cuda_pieces.rs).
extern "C" __global__ void joseph_add_f32(const float* __restrict__ src, float* __restrict__ dst, u64 n) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < n; g += (u64)gridDim.x * blockDim.x)
        dst[g] = __fadd_rn(dst[g], src[g]);
}

// The u range [*u0, *u1] of the rays of view v whose f at plane m can lie in [lo_f, hi_f). f is
// monotone in u, and fb0 affine in u up to rounding (a parallel view's rays are one ray shifted
// along the detector), so the affine estimate widened by a few ulps of the magnitudes involved
// (fb0, m*sb, their sum and this estimate, as u: times |1 / change of fb0 per cell|) holds every
// ray whose rounded f is in the range. All rays when the view's rays share their fb0.
__device__ __forceinline__ void gather2_range(const View2& v, int m, float lo_f, float hi_f, int nu, int* u0, int* u1) {
    if (v.inv_dfb0 == 0.0f) {
        *u0 = 0;
        *u1 = nu - 1;
        return;
    }
    const float base = v.fb0_first + (float)m * v.sb;
    const float mag = fabsf(v.fb0_first) + fabsf((float)m * v.sb) + fabsf(hi_f) + 2.0f;
    const float margin = (mag * 1.0e-6f + 1.0e-3f) * fabsf(v.inv_dfb0) + 0.01f;
    const float a = (lo_f - base) * v.inv_dfb0;
    const float b = (hi_f - base) * v.inv_dfb0;
    const float lo = fmaxf(fminf(a, b) - margin, -1.0f);
    const float hi = fminf(fmaxf(a, b) + margin, (float)nu);
    *u0 = max(0, (int)ceilf(lo));
    *u1 = min(nu - 1, (int)floorf(hi));
}

// vol = the transpose of one 2D parallel beam (batch 1), lanes as planes. Blocks of 8 warps own a
// tile of LANE2 x LANE2 pixels (blockIdx.x), blockIdx.y is a share of the views when split > 1 and
// blockIdx.z the batch entry. Each warp takes views warp, warp + 8, … of the share and keeps its own
// copy of the tile in shared memory. For a view, lane l owns the tile's plane ma + l (a row when
// the dominant axis is 0, a column when it is 1) and adds the products c*(1-t), c*t of the rays that
// reach it into its own plane's cells: no two threads add into one cell at once, plain
// shared-memory adds, no atomics. The warp stages the rays that can reach the tile (fb0, plane
// range, c = w*y formed here from the sinogram and the weights) in shared memory, and lane l steps
// through its own plane's range of them (the rays whose f at its plane can lie in [ja - 1, jb)):
// at each step the lanes sit at about the same cell k of their planes, so their adds fall into
// distinct banks (the copy's pitch is 33 words), and the warp makes as many steps as its longest
// range. A view whose rays to stage exceed LANES_STAGE (detector cells much finer than the pixels)
// takes the broadcast loop instead (lanes2_broadcast: the rays 32 at a time, by shuffles, every
// lane taking every one). The 8 copies are then summed per pixel in a fixed order and stored
// (split == 1: every pixel written once, no zeroing) or added into the zeroed volume.
// H200 (tools/kernel-harness/par2d_adjoint.cu), parallel2d_512 at split 8: 0.324 ms (0.327 ms with a
// separate weighting kernel before it), against 0.407 ms for the broadcast loop alone
// (lanes2_broadcast on every view: up to 32-way bank conflicts at views with sb near -1, a third to
// a half of the steps idle near 45 degrees) and 0.55 ms for the shared-atomic tile kernel before
// that. Tried and slower: carrying each ray's second product in a register into the next ray's
// first tap (one shared-memory add per ray instead of two; learned primal-dual operator 0.087
// against 0.078 ms), and loading the next view's rays into registers during the current view's
// adds (0.338 ms).
#define LANE2 32

// A view of joseph_backward2_lanes_f32 as a warp sees it for its tile: the planes [ma, mb) and
// cells [ja, jb) of the tile along the view's axes, the strides of a plane and a cell in the
// warp's copy of the tile, and the rays [u0, u1] whose f can lie in [ja - 1, jb) at the tile's
// first or last plane (f is affine in m, so those two bound every plane between; u0 > u1: none).
struct Lanes2View {
    int ma, mb, ja, jb, sm, sj, u0, u1;
};

__device__ __forceinline__ Lanes2View lanes2_view(const View2& v, int r0, int r1, int c0, int c1, int nu) {
    Lanes2View w;
    w.ma = v.a == 0 ? r0 : c0;
    w.mb = v.a == 0 ? r1 : c1;
    w.ja = v.a == 0 ? c0 : r0;
    w.jb = v.a == 0 ? c1 : r1;
    w.sm = v.a == 0 ? LANE2 + 1 : 1;
    w.sj = v.a == 0 ? 1 : LANE2 + 1;
    int w0, w1;
    gather2_range(v, w.ma, (float)w.ja - 1.0f, (float)w.jb, nu, &w.u0, &w.u1);
    gather2_range(v, w.mb - 1, (float)w.ja - 1.0f, (float)w.jb, nu, &w0, &w1);
    w.u0 = min(w.u0, w0);
    w.u1 = max(w.u1, w1);
    return w;
}

// Adds ray (fb0, plane range pl, c = w*y) into this lane's plane m of the tile copy `mine`
// (`at`: the plane's offset): the forward's taps floor(f), floor(f) + 1 of f = fb0 + m*sb with
// the products c*(1-t), c*t, for the taps among the tile's nj cells from ja.
__device__ __forceinline__ void lanes2_add(float* mine, const Lanes2View& w, int at, int m, float mf, float sb,
                                           float fb0, int pl, float cq) {
    if (m < (pl & 0xffff) || m >= (pl >> 16)) return;
    const float f = __fadd_rn(fb0, __fmul_rn(mf, sb));
    const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
    const float t = __fsub_rn(f, (float)ib);
    const int k = ib - w.ja, nj = w.jb - w.ja;
    if (k >= 0 && k < nj) mine[at + k * w.sj] = __fadd_rn(mine[at + k * w.sj], __fmul_rn(cq, __fsub_rn(1.0f, t)));
    if (k + 1 >= 0 && k + 1 < nj) mine[at + (k + 1) * w.sj] = __fadd_rn(mine[at + (k + 1) * w.sj], __fmul_rn(cq, t));
}

// The warp's rays [w.u0, w.u1] of one view, 32 at a time (a load per lane, then shuffles): each
// active lane adds every one into its plane m. All 32 lanes call it together. The products
// c = w*y are formed from the view's sinogram row srow and weights wrow.
// c = w*y of ray u of a view's rows (srow: the sinogram's, wrow: the weights').
__device__ __forceinline__ float lanes2_c(const float* __restrict__ srow, const float* __restrict__ wrow, int u) {
    return __fmul_rn(__ldg(wrow + u), __ldg(srow + u));
}

__device__ __forceinline__ void lanes2_broadcast(float* mine, const Lanes2View& w, const Ray2* __restrict__ row,
                                                 const float* __restrict__ srow, const float* __restrict__ wrow,
                                                 int lane, bool active, int at, int m, float sb) {
    const float mf = (float)m;
    for (int ub = w.u0; ub <= w.u1; ub += 32) {
        const int uu = ub + lane;
        Ray2 e;
        e.fb0 = 0.0f;
        e.planes = 0;
        float c = 0.0f;
        if (uu <= w.u1) {
            e = row[uu];
            c = lanes2_c(srow, wrow, uu);
        }
        const int cnt = min(32, w.u1 - ub + 1);
        for (int q = 0; q < cnt; ++q) {
            const float fb0 = __shfl_sync(0xffffffffu, e.fb0, q);
            const int pl = __shfl_sync(0xffffffffu, e.planes, q);
            const float cq = __shfl_sync(0xffffffffu, c, q);
            if (active) lanes2_add(mine, w, at, m, mf, sb, fb0, pl, cq);
        }
    }
}

// The 8 warps' copies of the tile [r0, r1) x [c0, c1) summed per pixel in a fixed order and
// stored (split == 1, or split < 0: the share's own volume) or added into the zeroed volume of n1
// columns.
__device__ __forceinline__ void lanes2_store(float (*acc)[LANE2][LANE2 + 1], int r0, int r1, int c0, int c1,
                                             int n1, float* __restrict__ vol, int split) {
    __syncthreads();
    for (int k = threadIdx.x; k < LANE2 * LANE2; k += blockDim.x) {
        const int i0 = r0 + k / LANE2, i1 = c0 + k % LANE2;
        if (i0 >= r1 || i1 >= c1) continue;
        float s = acc[0][k / LANE2][k % LANE2];
#pragma unroll
        for (int w = 1; w < 8; ++w) s = __fadd_rn(s, acc[w][k / LANE2][k % LANE2]);
        float* dst = vol + (u64)i0 * (u64)n1 + (u64)i1;
        if (split == 1 || split < 0) *dst = s;
        else atomicAdd(dst, s);
    }
}

// A block's tile of joseph_backward2_lanes_f32 (blockIdx.x: the tile, blockIdx.y: the view share,
// blockIdx.z: the batch entry): the pixels [r0, r1) x [c0, c1), the views [vb, ve), this thread's
// lane and warp, and the entry's data and volume. Zeroes the block's 8 tile copies `acc` first.
struct Lanes2Tile {
    int r0, r1, c0, c1, n1, vb, ve, lane, warp;
    const float* data;
    float* vol;
};

__device__ __forceinline__ Lanes2Tile lanes2_tile(const RayParams& p, int split, float (*acc)[LANE2][LANE2 + 1],
                                                  const float* data, float* vol) {
    Lanes2Tile t;
    const int n0 = (int)p.shape[0];
    t.n1 = (int)p.shape[1];
    const int tiles1 = (t.n1 + LANE2 - 1) / LANE2;
    t.r0 = (int)(blockIdx.x / (unsigned)tiles1) * LANE2;
    t.c0 = (int)(blockIdx.x % (unsigned)tiles1) * LANE2;
    t.r1 = min(t.r0 + LANE2, n0);
    t.c1 = min(t.c0 + LANE2, t.n1);
    const u64 entry = blockIdx.z;
    t.data = data + entry * (u64)p.nviews * (u64)p.nu;
    // split < 0 (deterministic): share k of -split writes its own volumes, [share][entry][pixel].
    const u64 part = split < 0 ? (u64)blockIdx.y * (u64)gridDim.z : 0u;
    t.vol = vol + (part + entry) * (u64)n0 * (u64)t.n1;
    float* flat = &acc[0][0][0];
    for (int k = threadIdx.x; k < 8 * LANE2 * (LANE2 + 1); k += blockDim.x) flat[k] = 0.0f;
    __syncthreads();
    t.lane = (int)(threadIdx.x & 31);
    t.warp = (int)(threadIdx.x >> 5);
    const int shares = split < 0 ? -split : split;
    t.vb = (int)(((long long)p.nviews * blockIdx.y) / shares);
    t.ve = (int)(((long long)p.nviews * (blockIdx.y + 1)) / shares);
    return t;
}

// The body of joseph_backward2_lanes_f32 with STAGE rays staged per warp and view (more go through
// lanes2_broadcast); the harness times other STAGE values (tools/kernel-harness/lanes_variants.cu).
template <int STAGE>
__device__ __forceinline__ void backward2_lanes(const float* __restrict__ sino, const float* __restrict__ weights,
                                                float* __restrict__ vol, const Ray2* __restrict__ rays,
                                                const View2* __restrict__ info, const RayParams& p, int split) {
    __shared__ float acc[8][LANE2][LANE2 + 1];
    // (fb0, c) of a staged ray side by side: one 64-bit load per step.
    __shared__ float2 st_fc[8][STAGE];
    __shared__ int st_pl[8][STAGE];
    const Lanes2Tile t = lanes2_tile(p, split, acc, sino, vol);
    const int nu = p.nu, lane = t.lane;
    float* mine = &acc[t.warp][0][0];
    float2* sf = st_fc[t.warp];
    int* sp = st_pl[t.warp];
    for (int view = t.vb + t.warp; view < t.ve; view += 8) {
        const View2 v = info[view];
        if (v.a < 0) continue;
        const Lanes2View w = lanes2_view(v, t.r0, t.r1, t.c0, t.c1, nu);
        if (w.u0 > w.u1) continue;  // warp-uniform
        const int m = w.ma + lane;
        const bool active = m < w.mb;
        const int at = lane * w.sm;
        const Ray2* row = rays + (u64)view * (u64)nu;
        const float* srow = t.data + (u64)view * (u64)nu;
        const float* wrow = weights + (u64)view * (u64)nu;
        const int n = w.u1 - w.u0 + 1;
        if (n > STAGE) {
            lanes2_broadcast(mine, w, row, srow, wrow, lane, active, at, m, v.sb);
            // The next view may run along the other axis, where this lane's cells are other
            // lanes' (rows become columns): order this view's adds before them (the shuffles
            // order the lanes' execution but not their shared-memory accesses; racecheck).
            __syncwarp();
            continue;
        }
        for (int i = lane; i < n; i += 32) {
            const Ray2 e = row[w.u0 + i];
            sf[i] = make_float2(e.fb0, lanes2_c(srow, wrow, w.u0 + i));
            sp[i] = e.planes;
        }
        // This lane's rays: those whose f at its plane can lie in [ja - 1, jb), within the union.
        int ua = 1, ub = 0;
        if (active) {
            gather2_range(v, m, (float)w.ja - 1.0f, (float)w.jb, nu, &ua, &ub);
            ua = max(ua, w.u0);
            ub = min(ub, w.u1);
        }
        int steps = max(0, ub - ua + 1);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) steps = max(steps, __shfl_xor_sync(0xffffffffu, steps, o));
        __syncwarp();
        const float mf = (float)m;
        for (int q = 0; q < steps; ++q) {
            const int i = ua + q - w.u0;
            if (ua + q <= ub) {
                const float2 fc = sf[i];
                lanes2_add(mine, w, at, m, mf, v.sb, fc.x, sp[i], fc.y);
            }
        }
        __syncwarp();  // the staging is reused by the next view
    }
    lanes2_store(acc, t.r0, t.r1, t.c0, t.c1, t.n1, t.vol, split);
}

// 64 rays staged per warp and view (40 KB of shared memory per block) and five blocks per
// multiprocessor requested (at most 51 registers), each staged ray's (fb0, c) read in one 64-bit
// load: H200, parallel2d_512 at 16 view shares 0.295 ms against 0.310 ms with 128 rays staged and
// four blocks (46 KB, 64 registers; ncu before the paired loads: 50 % occupancy, 0.84 warps issued
// per cycle and scheduler, an issue-bound kernel), and 0.321 ms with separate loads of fb0 and c;
// tools/kernel-harness/par2d_adjoint.cu.
extern "C" __global__ void __launch_bounds__(256, 5)
joseph_backward2_lanes_f32(const float* __restrict__ sino, const float* __restrict__ weights, float* __restrict__ vol,
                           const Ray2* __restrict__ rays, const View2* __restrict__ info, RayParams p, int split) {
    backward2_lanes<64>(sino, weights, vol, rays, info, p, split);
}

// ---------------------------------------------------------------------------------------------
// 2D parallel beams: the forward over tiles of pixels (joseph_forward2_tile_f32).
//
// A block stages a tile of FT2 x FT2 pixels in shared memory with a border of FT2H zero cells on
// every side (cells outside the grid are zero too), then marches, for each view of its share, the
// rays whose taps can reach the tile (gather2_range over the tile's first and last planes) over the
// tile's planes: lane l of a warp takes ray u0 + 32k + l, and each lane steps through its own
// range of planes, those where its f lies in [ja - 1, jb) (a tap in the tile's cells [ja, jb)),
// found from the affine f = fb0 + m*sb and widened by the rounding of f and of this estimate, so
// that it holds every such plane. At the planes of the margin f lies only a rounding error
// outside [ja - 1, jb), so both taps fall on staged cells (ja - 2 to jb), the ones outside the
// tile on the zero border: they add (+/-)0. Each tap is thus counted
// in exactly one tile, with the forward's own taps, weights and products (f = fb0 + m*sb rounded,
// taps floor(f), floor(f) + 1 as trunc(f + 4) - 4, weights 1 - t, t); the tiles' partial sums
// times w are added into the zeroed sinogram with atomics (their order, and so the last bits, may
// vary from run to run: not for the deterministic mode).
// The lanes of a warp hold neighbouring rays, which enter the tile a plane or more apart, so at a
// step they sit on distinct planes and near the same cell: with the odd pitch their reads fall into
// distinct banks whatever the view's axis. The integer part of g = f + 4 (0 < g < 2^23 here) comes
// from one addition rounded toward zero, g + 2^23, whose bits hold it, instead of two conversions.
// blockIdx.x: the tile, blockIdx.y: the view share (of split), blockIdx.z: the batch entry
// (volumes of shape[0] x shape[1] pixels and sinograms of nviews x nu values one after the other).
// Dynamic shared memory: ft2_smem_bytes(FT2) bytes. Blocks of 256 threads.
// H100 (tools/kernel-harness/par2d_forward.cu): parallel2d_512 0.168 ms (views split 17 ways;
// 0.159 ms at 16 or with 128-pixel tiles) against 0.289 ms for joseph_forward2_smem_f32; batch 8
// 1.10 against 2.18 ms; the learned primal-dual operator's 256² forward 0.048 against 0.088 ms.
#define FT2H 2

__host__ __device__ constexpr int ft2_side(int t) { return t + 2 * FT2H; }
__host__ __device__ constexpr int ft2_pitch(int t) { return t + 2 * FT2H + 1; }
__host__ __device__ constexpr unsigned ft2_smem_bytes(int t) { return (unsigned)(ft2_side(t) * ft2_pitch(t)) * 4u; }

// The march of one ray through the staged tile: `len` planes from `at` (the staged cell of cell 0
// of the ray's first plane, so that cell ib of plane k is at[k * SM + ib * SJ]), f from plane mf on.
template <int SM, int SJ>
__device__ __forceinline__ float tile2_march(const float* at, float fb0, float sb, float mf, int len) {
    float acc = 0.0f;
    for (int k = 0; k < len; ++k) {
        const float f = __fadd_rn(fb0, __fmul_rn(mf, sb));
        const float h = __fadd_rz(__fadd_rn(f, 4.0f), 8388608.0f);  // 2^23 + trunc(f + 4)
        const float tb = __fsub_rn(f, __fsub_rn(h, 8388612.0f));     // f - (trunc(f + 4) - 4)
        const float* c = at + (__float_as_int(h) - 0x4B000004) * SJ;  // cell trunc(f + 4) - 4
        acc = __fadd_rn(acc, __fmul_rn(__fsub_rn(1.0f, tb), c[0]));
        acc = __fadd_rn(acc, __fmul_rn(tb, c[SJ]));
        at += SM;
        mf = __fadd_rn(mf, 1.0f);
    }
    return acc;
}

template <int FT2>
__device__ __forceinline__ void forward2_tile(const float* __restrict__ vol, float* __restrict__ sino,
                                              const Ray2* __restrict__ rays, const float* __restrict__ weights,
                                              const View2* __restrict__ info, const RayParams& p, int split) {
    extern __shared__ float slab_smem[];
    constexpr int S = ft2_side(FT2), P = ft2_pitch(FT2);
    float* tile = slab_smem;
    const int n0 = (int)p.shape[0], n1 = (int)p.shape[1], nu = p.nu;
    const int tiles1 = (n1 + FT2 - 1) / FT2;
    const int r0 = (int)(blockIdx.x / (unsigned)tiles1) * FT2, c0 = (int)(blockIdx.x % (unsigned)tiles1) * FT2;
    const int r1 = min(r0 + FT2, n0), c1 = min(c0 + FT2, n1);
    const u64 entry = blockIdx.z;
    vol += entry * (u64)n0 * (u64)n1;
    sino += entry * (u64)p.nviews * (u64)nu;
    for (int k = (int)threadIdx.x; k < S * S; k += (int)blockDim.x) {
        const int i = r0 + k / S - FT2H, j = c0 + k % S - FT2H;
        const bool in = i >= r0 && i < r1 && j >= c0 && j < c1;
        tile[(k / S) * P + k % S] = in ? __ldg(vol + (u64)i * (u64)n1 + (u64)j) : 0.0f;
    }
    __syncthreads();
    const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x >> 5), nwarps = (int)(blockDim.x >> 5);
    const int vb = (int)(((long long)p.nviews * blockIdx.y) / split);
    const int ve = (int)(((long long)p.nviews * (blockIdx.y + 1)) / split);
    for (int view = vb + warp; view < ve; view += nwarps) {
        const View2 v = info[view];
        if (v.a < 0) continue;
        // The tile along the view's axes: planes [ma, mb), cells [ja, jb).
        const int ma = v.a == 0 ? r0 : c0, mb = v.a == 0 ? r1 : c1;
        const int ja = v.a == 0 ? c0 : r0, jb = v.a == 0 ? c1 : r1;
        int u0, u1, w0, w1;
        gather2_range(v, ma, (float)ja - 1.0f, (float)jb, nu, &u0, &u1);
        gather2_range(v, mb - 1, (float)ja - 1.0f, (float)jb, nu, &w0, &w1);
        u0 = min(u0, w0);
        u1 = max(u1, w1);
        const float sb = v.sb, asb = fabsf(sb);
        for (int ub = u0; ub <= u1; ub += 32) {
            const int u = ub + lane;
            if (u > u1) continue;
            const u64 ray = (u64)view * (u64)nu + (u64)u;
            const Ray2 e = rays[ray];
            int lo = max(ma, e.planes & 0xffff), hi = min(mb, e.planes >> 16);
            // The planes where f can lie in [ja - 1, jb): from the affine f, widened by a plane
            // and by the rounding of f and of this estimate (err: a few ulps of the magnitudes).
            const float err = (fabsf(e.fb0) + fabsf((float)mb * sb) + (float)(jb + 2)) * 2.0e-6f;
            if (asb > 0.0f) {
                const float ta = ((float)ja - 1.0f - e.fb0) / sb, tz = ((float)jb - e.fb0) / sb;
                const float margin = err / asb + (fabsf(ta) + fabsf(tz)) * 1.0e-6f;
                const float mlo = fmaxf(fminf(ta, tz) - margin, (float)ma - 1.0f);
                const float mhi = fminf(fmaxf(ta, tz) + margin, (float)mb + 1.0f);
                lo = max(lo, (int)ceilf(mlo));
                hi = min(hi, (int)floorf(mhi) + 1);
            } else if (!(e.fb0 >= (float)ja - 1.0f - err && e.fb0 < (float)jb + err)) {
                hi = lo;
            }
            if (lo >= hi) continue;
            float acc;
            if (v.a == 0) {
                const float* at = tile + (lo - ma + FT2H) * P + (FT2H - ja);
                acc = tile2_march<P, 1>(at, e.fb0, sb, (float)lo, hi - lo);
            } else {
                const float* at = tile + (lo - ma + FT2H) + (FT2H - ja) * P;
                acc = tile2_march<1, P>(at, e.fb0, sb, (float)lo, hi - lo);
            }
            atomicAdd(sino + ray, __fmul_rn(acc, weights[ray]));
        }
    }
}

// 64 x 64 pixels per tile (18.8 KB of shared memory).
extern "C" __global__ void __launch_bounds__(256)
joseph_forward2_tile_f32(const float* __restrict__ vol, float* __restrict__ sino, const Ray2* __restrict__ rays,
                         const float* __restrict__ weights, const View2* __restrict__ info, RayParams p, int split) {
    forward2_tile<64>(vol, sino, rays, weights, info, p, split);
}

// Tiles of 16 and 128 pixels: the CPU stand-in's test of the tiles' borders on small grids, and
// the kernel harness's comparison of tile sizes.
extern "C" __global__ void __launch_bounds__(256)
joseph_forward2_tile16_f32(const float* __restrict__ vol, float* __restrict__ sino, const Ray2* __restrict__ rays,
                           const float* __restrict__ weights, const View2* __restrict__ info, RayParams p, int split) {
    forward2_tile<16>(vol, sino, rays, weights, info, p, split);
}
extern "C" __global__ void __launch_bounds__(256)
joseph_forward2_tile128_f32(const float* __restrict__ vol, float* __restrict__ sino, const Ray2* __restrict__ rays,
                            const float* __restrict__ weights, const View2* __restrict__ info, RayParams p, int split) {
    forward2_tile<128>(vol, sino, rays, weights, info, p, split);
}

// vol[b] = the transpose of `batch` (1 to GATHER2_BATCH) 2D parallel beams, a pixel per thread:
// blocks of 16 x 16 threads own 16 x 16 pixels (blockIdx.x: columns, blockIdx.y: rows), blockIdx.z
// is a share of the views (split); the views' entries are staged in shared memory 256 at a time.
// For each view, the thread finds the rays whose taps reach its pixel (f in [j - 1, j + 1) at its
// plane m) and adds c*(1-t) or c*t for every entry of the batch: the search and the weights are
// paid once for the whole batch. Stored (split == 1, or split < 0: each share its own volumes) or
// added into the zeroed volumes.
// H200, the learned primal-dual operator (256², 360 x 384) at batch 8: 0.35 ms at split 4 against
// 0.82 ms for the tile kernel it replaces (tools/kernel-harness/par2d_adjoint.cu).
#define GATHER2_BATCH 8
extern "C" __global__ void __launch_bounds__(256)
joseph_backward2_gather_f32(const float* __restrict__ cw, float* __restrict__ vol, const Ray2* __restrict__ rays,
                            const View2* __restrict__ info, RayParams p, int split, int batch) {
    __shared__ View2 sv[256];
    const int n0 = (int)p.shape[0], n1 = (int)p.shape[1], nu = p.nu;
    const int i1 = blockIdx.x * 16 + (threadIdx.x & 15), i0 = blockIdx.y * 16 + (threadIdx.x >> 4);
    const bool inside = i0 < n0 && i1 < n1;
    const int shares = split < 0 ? -split : split;
    const int vb = (int)(((long long)p.nviews * blockIdx.z) / shares);
    const int ve = (int)(((long long)p.nviews * (blockIdx.z + 1)) / shares);
    const u64 per = (u64)p.nviews * (u64)nu;
    float acc[GATHER2_BATCH];
#pragma unroll
    for (int b = 0; b < GATHER2_BATCH; ++b) acc[b] = 0.0f;
    for (int c0 = vb; c0 < ve; c0 += 256) {
        const int cn = min(256, ve - c0);
        __syncthreads();
        if ((int)threadIdx.x < cn) sv[threadIdx.x] = info[c0 + threadIdx.x];
        __syncthreads();
        if (!inside) continue;
        for (int k = 0; k < cn; ++k) {
            const View2 v = sv[k];
            if (v.a < 0) continue;
            const int m = v.a == 0 ? i0 : i1, j = v.a == 0 ? i1 : i0;
            int u0, u1;
            gather2_range(v, m, (float)j - 1.0f, (float)j + 1.0f, nu, &u0, &u1);
            const u64 row = (u64)(c0 + k) * (u64)nu;
            for (int u = u0; u <= u1; ++u) {
                const Ray2 e = rays[row + u];
                if (m < (e.planes & 0xffff) || m >= (e.planes >> 16)) continue;
                const float f = __fadd_rn(e.fb0, __fmul_rn((float)m, v.sb));
                const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                const float t = __fsub_rn(f, (float)ib);
                float w;
                if (ib == j) w = __fsub_rn(1.0f, t);
                else if (ib + 1 == j) w = t;
                else continue;
#pragma unroll
                for (int b = 0; b < GATHER2_BATCH; ++b) {
                    if (b < batch) acc[b] = __fadd_rn(acc[b], __fmul_rn(__ldg(cw + b * per + row + u), w));
                }
            }
        }
    }
    if (!inside) return;
#pragma unroll
    for (int b = 0; b < GATHER2_BATCH; ++b) {
        if (b >= batch) break;
        // split < 0 (deterministic): share k of -split stores into its own volumes,
        // [share][entry][pixel] (summed in order by joseph_sum_parts_f32).
        const u64 vidx = split < 0 ? (u64)blockIdx.z * (u64)batch + (u64)b : (u64)b;
        float* at = vol + vidx * (u64)n0 * (u64)n1 + (u64)i0 * (u64)n1 + (u64)i1;
        if (split == 1 || split < 0) *at = acc[b];
        else atomicAdd(at, acc[b]);
    }
}


// ------------------------------------------- deterministic transposes (CudaOptions::deterministic)
// Bitwise reproducible from run to run, and still the exact transpose of the forward (the same
// taps and weights). Float atomics add in the order the threads happen to run, so the scattering
// transposes instead add fixed-point integers: each contribution c * weight is rounded to an
// integer at the scale 2^e and added to a 64-bit accumulator per voxel with integer atomics,
// which are associative, so the sums are the same bits in any order. The bound: a ray adds at
// most one tap (weight <= 1) to a voxel and its weight w <= w_max, so every voxel's sum is within
// K * max|y| with K = rays * w_max (host: CudaRay::fixed_bound); 2^e * K * max|y| < 2^62 keeps it
// in range. A contribution's rounding is 2^-(e+1); on cone_512 that is ~1e-13 of a typical voxel.
// joseph_absmax_f32 finds max|y| (the bits of |y| order as the floats do), joseph_fixed_to_f32
// turns the sums back into floats (NaN everywhere when the data are not finite, as no bound
// holds then).

// *out = max(*out, bits of |x[i]|) over n values; *out zeroed before the launch.
extern "C" __global__ void joseph_absmax_f32(const float* __restrict__ x, u64 n, unsigned* __restrict__ out) {
    unsigned m = 0u;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        m = max(m, __float_as_uint(x[i]) & 0x7fffffffu);
    if (m != 0u) atomicMax(out, m);
}

// The scattering transpose with fixed-point sums into acc (zeroed; n voxels of 64 bits, the
// volume's layout), any dimension, 64-bit indices, in segments of `seglen` planes: one thread per
// (segment, ray), in the chunked order of chunk_ray when `chunked` (3D, at least 32 rows: the
// threads in flight touch one slab of one band, which L2 holds), else (segment, view, column, row).
extern "C" __global__ void joseph_backward_fixed_f32(const float* __restrict__ sino, unsigned long long* __restrict__ acc,
                                                     const double* __restrict__ views, RayParams p, int count,
                                                     int seglen, int chunked, double bound,
                                                     const unsigned* __restrict__ ymax) {
    const double scale = fixed_scale(bound, *ymax);
    const u64 per_view = (u64)p.nu * (u64)p.nv;
    i64 nmax = 1;
    for (int k = 0; k < p.ndim; ++k) nmax = p.shape[k] > nmax ? p.shape[k] : nmax;
    const int nseg = (int)((nmax + seglen - 1) / seglen);
    const u64 rays = per_view * (u64)count;
    const u64 chunks = (u64)((band_rows(p) + 31) / 32);
    const u64 total = chunked ? chunks * (u64)nseg * (u64)count * (u64)p.nu * 32u : rays * (u64)nseg;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        int seg, view, iu, iv;
        if (chunked) {
            ChunkRay q;
            if (!chunk_ray(p, count, nseg, g, q)) continue;
            seg = q.seg; view = q.view; iu = q.iu; iv = q.iv;
        } else {
            seg = (int)(g / rays);
            const u64 ray = g - (u64)seg * rays;
            const u64 vloc = ray / per_view, rem = ray - vloc * per_view;
            view = p.first_view + (int)vloc;
            iu = (int)(rem / (u64)p.nv);
            iv = (int)(rem % (u64)p.nv);
        }
        const float y = sino[(u64)view * per_view + (u64)iu * (u64)p.nv + (u64)iv];
        if (y == 0.0f) continue;
        Ray r;
        if (!setup_ray(p, views, view, iu, iv, r)) continue;
        const int s0 = lo_of(p, r.a) + seg * seglen;
        const int mlo = max(r.m0, s0), mhi = min(r.m1, s0 + seglen);
        const float c = __fmul_rn(r.w, y);
        for (int m = mlo; m < mhi; ++m) {
            taps(p, r, m, [&](i64 i, float wt) {
                const double v = (double)__fmul_rn(c, wt) * scale;
                atomicAdd(acc + i, (unsigned long long)llrint(v));
            });
        }
    }
}

// vol[i] = acc[i] / 2^e (or vol[i] += that, with `accumulate`) for n voxels; NaN where the data
// were not finite.
extern "C" __global__ void joseph_fixed_to_f32(const unsigned long long* __restrict__ acc, float* __restrict__ vol,
                                               u64 n, double bound, const unsigned* __restrict__ ymax, int accumulate) {
    const unsigned bits = *ymax;
    const bool finite = bits < 0x7f800000u;
    const double scale = fixed_scale(bound, bits);
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const float v = finite ? (float)((double)(long long)acc[i] / scale) : __uint_as_float(0x7fc00000u);
        vol[i] = accumulate ? __fadd_rn(vol[i], v) : v;
    }
}

// vol[i] = voxel i's sum in acc (PackedSum's words) / 2^e (or vol[i] += that, with
// `accumulate`) for n voxels; NaN where the data were not finite.
extern "C" __global__ void joseph_packed_to_f32(const unsigned long long* __restrict__ acc, float* __restrict__ vol,
                                                u64 n, double bound, const unsigned* __restrict__ ymax,
                                                int accumulate) {
    const unsigned bits = *ymax;
    const bool finite = bits < 0x7f800000u;
    const double scale = fixed_scale(bound, bits, 30);
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const unsigned long long w = acc[i >> 1];
        const long long lo = (long long)(int)(unsigned)(w & 0xffffffffull);
        const long long s = (i & 1u) ? (long long)(w - (unsigned long long)lo) >> 32 : lo;
        const float v = finite ? (float)((double)s / scale) : __uint_as_float(0x7fc00000u);
        vol[i] = accumulate ? __fadd_rn(vol[i], v) : v;
    }
}

// dst[i] = the sum of `parts` partial volumes part[k * n + i], k = 0, 1, ... in that order (or
// dst[i] += it, with `accumulate`): the deterministic 2D transposes' view shares, written to their
// own volumes instead of added atomically (joseph_backward2_lanes_f32 and
// joseph_backward2_gather_f32 with a negative split).
extern "C" __global__ void joseph_sum_parts_f32(const float* __restrict__ part, float* __restrict__ dst, u64 n,
                                                int parts, int accumulate) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        float s = accumulate ? dst[i] : 0.0f;
        for (int k = 0; k < parts; ++k) s = __fadd_rn(s, part[(u64)k * n + i]);
        dst[i] = s;
    }
}

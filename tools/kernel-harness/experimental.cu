// Experimental transposes tried and measured (benches/README.md), not used by rodl. Included by
// ray_harness.cu after kernels/ray_joseph.cu.

// ------------------------------------------------- transpose as a gather over voxel columns
// For views whose rays keep their dominant axis a and their b coordinate (fb0, sb) along each
// detector column u — the detector's v axis has no x or y component and no ray runs mainly along
// z: circular and helical cone beam, parallel beam about z (the host checks this per view) — the
// transpose is computed voxel by voxel, without atomics: for voxel (i, j, k) and a view, the
// rays that tap it are those of the few detector columns u whose b coordinate at the voxel's
// plane is within one cell of the voxel (found from the geometry), and within each column the
// few rows v whose c coordinate is within one cell (c is affine in v along a column, so two rays
// of the column give the rows). Each candidate's tap weight is recomputed from the same float ray
// parameters with the forward's arithmetic, so the result is the forward's exact transpose.
//
// Pass 1 (joseph_column_table_f32), one thread per ray of the views [first, first + count):
//   ucol[view][u]     = (fb0, sb, a as int bits, 0)   of the ray (u, v = 0)
//   rays[view][u][v]  = (fc0, sc, w * y, 0)           (w * y = 0 for a ray that misses the volume)
// Pass 2 (joseph_gather_columns_f32): one warp per voxel column (i, j), each lane owning the
// voxels k = lane + 32 r of the column; vol = (accumulate ? vol : 0) + sum over the views.

// The weight of voxel index `j` in the two-tap interpolation at coordinate f, as the forward
// computes it; 0 when j is not one of the taps.
__device__ __forceinline__ float tap_weight(float f, int j) {
    const int i = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
    const float t = __fsub_rn(f, (float)i);
    return i == j ? __fsub_rn(1.0f, t) : (i + 1 == j ? t : 0.0f);
}

// Detector coordinate (in cells, from the centre) of the ray through the point (px, py) of the
// xy plane, for one view (cone/fan: through the source; parallel: along the ray direction).
__device__ __forceinline__ double column_through(const double* v, int parallel, double px, double py) {
    const double ux = v[6], uy = v[7];
    if (parallel) {
        const double dx = v[0], dy = v[1];
        const double cx = v[3] - px, cy = v[4] - py;
        return -(cx * dy - cy * dx) / (ux * dy - uy * dx);
    }
    const double ex = px - v[0], ey = py - v[1];
    const double cx = v[3] - v[0], cy = v[4] - v[1];
    return -(cx * ey - cy * ex) / (ux * ey - uy * ex);
}

// The range [ulo, uhi] of detector columns whose rays can tap column jb (axis b = 1 - a) at plane
// m (axis a) of a view; false when there is none. A margin of 0.05 cells covers the rounding.
__device__ __forceinline__ bool column_range(const double* v, const RayParams& p, int a, int m, int jb,
                                             int* ulo, int* uhi) {
    const int b = 1 - a;
    const double cu0 = 0.5 * ((double)p.nu - 1.0);
    const double pa = p.vmin[a] + ((double)m + 0.5) * p.h[a];
    const double pb0 = p.vmin[b] + ((double)jb - 0.5) * p.h[b];
    const double pb1 = p.vmin[b] + ((double)jb + 1.5) * p.h[b];
    double u0 = a == 0 ? column_through(v, p.parallel, pa, pb0) : column_through(v, p.parallel, pb0, pa);
    double u1 = a == 0 ? column_through(v, p.parallel, pa, pb1) : column_through(v, p.parallel, pb1, pa);
    if (u0 > u1) { const double t = u0; u0 = u1; u1 = t; }
    if (!(u1 - u0 < 1e9)) return false;
    *ulo = max(0, (int)ceil(u0 + cu0 - 0.05));
    *uhi = min(p.nu - 1, (int)floor(u1 + cu0 + 0.05));
    return *ulo <= *uhi;
}

extern "C" __global__ void joseph_column_table_f32(const float* __restrict__ sino, const double* __restrict__ views,
                                                   RayParams p, int count, float4* __restrict__ ucol,
                                                   float4* __restrict__ rays) {
    const u64 per_view = (u64)p.nu * (u64)p.nv;
    const u64 total = per_view * (u64)count;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int vloc = (int)(g / per_view);
        const u64 rem = g - (u64)vloc * per_view;
        const int view = p.first_view + vloc;
        const int iu = (int)(rem / p.nv), iv = (int)(rem % p.nv);
        Ray r;
        const bool ok = setup_ray(p, views, view, iu, iv, r);
        if (iv == 0) ucol[(u64)vloc * p.nu + iu] = make_float4(r.fb0, r.sb, __int_as_float(r.a), 0.0f);
        const float c = ok ? __fmul_rn(r.w, sino[(u64)view * per_view + rem]) : 0.0f;
        rays[g] = make_float4(r.fc0, r.sc, c, 0.0f);
    }
}

// KMAX >= ceil(nz / 32): the voxels a lane owns, kept in registers.
template <int KMAX>
__device__ __forceinline__ void gather_columns(float* __restrict__ vol, const double* __restrict__ views,
                                               const RayParams& p, int count, const float4* __restrict__ ucol,
                                               const float4* __restrict__ rays, int accumulate) {
    const int nx = (int)p.shape[0], ny = (int)p.shape[1], nz = (int)p.shape[2];
    const int nu = p.nu, nv = p.nv;
    const int lane = threadIdx.x & 31;
    const u64 ncols = (u64)nx * ny;
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    for (u64 col = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; col < ncols; col += warps) {
        const int i = (int)(col / ny), j = (int)(col % ny);
        float acc[KMAX];
#pragma unroll
        for (int r = 0; r < KMAX; ++r) acc[r] = 0.0f;
        for (int vloc = 0; vloc < count; ++vloc) {
            const double* v = views + 12 * (i64)(p.first_view + vloc);
            for (int a = 0; a < 2; ++a) {
                const int m = a == 0 ? i : j, jb = a == 0 ? j : i;
                int ulo, uhi;
                if (!column_range(v, p, a, m, jb, &ulo, &uhi)) continue;
                const float mf = (float)m;
                for (int u = ulo; u <= uhi; ++u) {
                    const float4 e = ucol[(u64)vloc * nu + u];
                    if (__float_as_int(e.z) != a) continue;
                    const float wb = tap_weight(__fadd_rn(e.x, __fmul_rn(mf, e.y)), jb);
                    if (wb == 0.0f) continue;
                    const float4* col_rays = rays + ((u64)vloc * nu + u) * nv;
                    // c(v) = fc0(v) + m sc(v) is affine in v: the rows within one cell of voxel k
                    // lie in ((k - 1 - c0) / s, (k + 1 - c0) / s), s the slope per row.
                    float c0 = 0.0f, inv = 0.0f;
                    if (nv > 1) {
                        const float4 qa = col_rays[0], qb = col_rays[nv - 1];
                        c0 = __fadd_rn(qa.x, __fmul_rn(mf, qa.y));
                        const float c1 = __fadd_rn(qb.x, __fmul_rn(mf, qb.y));
                        inv = (float)(nv - 1) / (c1 - c0);
                    }
                    const bool all_rows = !(fabsf(inv) < 1e30f);
                    const float eps = 0.01f + 1e-3f * fabsf(inv);
#pragma unroll
                    for (int r = 0; r < KMAX; ++r) {
                        const int k = lane + 32 * r;
                        if (k >= nz) break;
                        int vlo = 0, vhi = nv - 1;
                        if (!all_rows) {
                            float v0 = ((float)k - 1.0f - c0) * inv, v1 = ((float)k + 1.0f - c0) * inv;
                            if (v0 > v1) { const float t = v0; v0 = v1; v1 = t; }
                            vlo = max(0, (int)ceilf(v0 - eps));
                            vhi = min(nv - 1, (int)floorf(v1 + eps));
                        }
                        for (int iv = vlo; iv <= vhi; ++iv) {
                            const float4 q = col_rays[iv];
                            const float wc = tap_weight(__fadd_rn(q.x, __fmul_rn(mf, q.y)), k);
                            acc[r] = __fadd_rn(acc[r], __fmul_rn(q.z, __fmul_rn(wb, wc)));
                        }
                    }
                }
            }
        }
        float* out = vol + col * (u64)nz;
#pragma unroll
        for (int r = 0; r < KMAX; ++r) {
            const int k = lane + 32 * r;
            if (k >= nz) break;
            out[k] = accumulate ? __fadd_rn(out[k], acc[r]) : acc[r];
        }
    }
}

extern "C" __global__ void joseph_gather_columns8_f32(float* __restrict__ vol, const double* __restrict__ views,
                                                      RayParams p, int count, const float4* __restrict__ ucol,
                                                      const float4* __restrict__ rays, int accumulate) {
    gather_columns<8>(vol, views, p, count, ucol, rays, accumulate);
}

extern "C" __global__ void joseph_gather_columns16_f32(float* __restrict__ vol, const double* __restrict__ views,
                                                       RayParams p, int count, const float4* __restrict__ ucol,
                                                       const float4* __restrict__ rays, int accumulate) {
    gather_columns<16>(vol, views, p, count, ucol, rays, accumulate);
}

extern "C" __global__ void joseph_gather_columns32_f32(float* __restrict__ vol, const double* __restrict__ views,
                                                       RayParams p, int count, const float4* __restrict__ ucol,
                                                       const float4* __restrict__ rays, int accumulate) {
    gather_columns<32>(vol, views, p, count, ucol, rays, accumulate);
}


// ------------------------------------------------------- transpose as a gather (no atomics)
// For views whose rays keep their dominant axis a and their b coordinate (fb0, sb) along each
// detector column u (the detector's v axis has no x or y component and the rays never run
// mainly along z: circular and helical cone beam and parallel beam about z, and all 2D
// geometries), the transpose is computed voxel by voxel: the rays that tap voxel (i, j, k) at its
// plane are found from the geometry (a few detector columns u, then a few rows v in each), and
// their tap weights are recomputed with exactly the forward's arithmetic from the same float ray
// parameters. Each voxel is written by one thread: no atomics, deterministic.
//
// Pass 1 (joseph_gather_table_f32), one thread per ray of views [first, first + count):
//   ucol[view][u]     = (fb0, sb, a as int bits, 0)   from the ray (u, v = 0)
//   rayc[view][u][v]  = (fc0, sc)
//   yw[view][u][v]    = w * y (0 for a ray that misses the volume)
//   famflags[view]   |= 1 << a
// Pass 2 (joseph_gather{2,3}_f32), one thread per voxel: vol (+)= sum over those views.
extern "C" __global__ void joseph_gather_table_f32(const float* __restrict__ sino, const double* __restrict__ views,
                                                   RayParams p, int count, float4* __restrict__ ucol,
                                                   float2* __restrict__ rayc, float* __restrict__ yw,
                                                   int* __restrict__ famflags) {
    const u64 per_view = (u64)p.nu * (u64)p.nv;
    const u64 total = per_view * (u64)count;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int vloc = (int)(g / per_view);
        const u64 rem = g - (u64)vloc * per_view;
        const int view = p.first_view + vloc;
        const int iu = (int)(rem / p.nv), iv = (int)(rem % p.nv);
        Ray r;
        const bool ok = setup_ray(p, views, view, iu, iv, r);
        if (iv == 0) {
            ucol[(u64)vloc * p.nu + iu] = make_float4(r.fb0, r.sb, __int_as_float(r.a), 0.0f);
            if (r.a >= 0) atomicOr(famflags + vloc, 1 << r.a);
        }
        rayc[g] = make_float2(r.fc0, r.sc);
        yw[g] = ok ? __fmul_rn(r.w, sino[(u64)view * per_view + rem]) : 0.0f;
    }
}

template <int NDIM>
__device__ __forceinline__ void gather_impl(float* __restrict__ vol, const double* __restrict__ views, const RayParams& p,
                                            int count, const float4* __restrict__ ucol,
                                            const float2* __restrict__ rayc, const float* __restrict__ yw,
                                            const int* __restrict__ famflags, int accumulate) {
    const int nx = (int)p.shape[0], ny = (int)p.shape[1], nz = NDIM == 3 ? (int)p.shape[2] : 1;
    const u64 total = (u64)nx * ny * nz;
    const int nu = p.nu, nv = p.nv;
    const double cu0 = 0.5 * ((double)nu - 1.0);
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int k = NDIM == 3 ? (int)(g % nz) : 0;
        const u64 col = NDIM == 3 ? g / nz : g;
        const int j = (int)(col % ny), i = (int)(col / ny);
        float acc = 0.0f;
        for (int vloc = 0; vloc < count; ++vloc) {
            const int flags = famflags[vloc];
            const double* v = views + 12 * (i64)(p.first_view + vloc);
#pragma unroll
            for (int a = 0; a < 2; ++a) {
                if (!(flags & (1 << a))) continue;
                const int b = 1 - a;
                const int m = a == 0 ? i : j, jb = a == 0 ? j : i;
                const float mf = (float)m;
                // The columns whose b coordinate at plane m lies within (jb - 1, jb + 1).
                double pa = p.vmin[a] + ((double)m + 0.5) * p.h[a];
                double pb0 = p.vmin[b] + ((double)jb - 0.5) * p.h[b];
                double pb1 = p.vmin[b] + ((double)jb + 1.5) * p.h[b];
                double u0 = a == 0 ? column_through(v, p.parallel, pa, pb0) : column_through(v, p.parallel, pb0, pa);
                double u1 = a == 0 ? column_through(v, p.parallel, pa, pb1) : column_through(v, p.parallel, pb1, pa);
                if (u0 > u1) { const double t = u0; u0 = u1; u1 = t; }
                if (!(u1 - u0 < 1e9)) continue;  // NaN or a degenerate view: nothing to gather
                const int ulo = max(0, (int)ceil(u0 + cu0 - 0.05));
                const int uhi = min(nu - 1, (int)floor(u1 + cu0 + 0.05));
                for (int u = ulo; u <= uhi; ++u) {
                    const float4 e = ucol[(u64)vloc * nu + u];
                    if (__float_as_int(e.z) != a) continue;
                    const float wb = tap_weight(__fadd_rn(e.x, __fmul_rn(mf, e.y)), jb);
                    if (wb == 0.0f) continue;
                    const u64 ray0 = ((u64)vloc * nu + u) * nv;
                    if (NDIM == 2) {
                        acc = __fadd_rn(acc, __fmul_rn(yw[ray0], wb));
                        continue;
                    }
                    // Rows v whose c coordinate at plane m lies within (k - 1, k + 1): fc is affine
                    // in v along a column, so two rays give the range.
                    int vlo = 0, vhi = nv - 1;
                    if (nv > 1) {
                        const float2 qa = rayc[ray0], qb = rayc[ray0 + nv - 1];
                        const float fa = __fadd_rn(qa.x, __fmul_rn(mf, qa.y));
                        const float fbb = __fadd_rn(qb.x, __fmul_rn(mf, qb.y));
                        const float slope = (fbb - fa) / (float)(nv - 1);
                        if (slope != 0.0f) {
                            float v0 = ((float)k - 1.0f - fa) / slope, v1 = ((float)k + 1.0f - fa) / slope;
                            if (v0 > v1) { const float t = v0; v0 = v1; v1 = t; }
                            const float eps = 0.01f + 1e-3f / fabsf(slope);
                            vlo = max(0, (int)ceilf(v0 - eps));
                            vhi = min(nv - 1, (int)floorf(v1 + eps));
                        }
                    }
                    for (int iv = vlo; iv <= vhi; ++iv) {
                        const float2 q = rayc[ray0 + iv];
                        const float wc = tap_weight(__fadd_rn(q.x, __fmul_rn(mf, q.y)), k);
                        if (wc == 0.0f) continue;
                        acc = __fadd_rn(acc, __fmul_rn(yw[ray0 + iv], __fmul_rn(wb, wc)));
                    }
                }
            }
        }
        vol[g] = accumulate ? __fadd_rn(vol[g], acc) : acc;
    }
}

extern "C" __global__ void joseph_gather2_f32(float* __restrict__ vol, const double* __restrict__ views, RayParams p,
                                              int count, const float4* __restrict__ ucol,
                                              const float2* __restrict__ rayc, const float* __restrict__ yw,
                                              const int* __restrict__ famflags, int accumulate) {
    gather_impl<2>(vol, views, p, count, ucol, rayc, yw, famflags, accumulate);
}

extern "C" __global__ void joseph_gather3_f32(float* __restrict__ vol, const double* __restrict__ views, RayParams p,
                                              int count, const float4* __restrict__ ucol,
                                              const float2* __restrict__ rayc, const float* __restrict__ yw,
                                              const int* __restrict__ famflags, int accumulate) {
    gather_impl<3>(vol, views, p, count, ucol, rayc, yw, famflags, accumulate);
}

// Transpose for separable views, one block per voxel column (i, j) along z: the rays of the few
// detector columns u that tap the column at its plane add their two z taps into the column, kept
// in shared memory (nz floats), which is written to the volume once at the end. The tap weights
// are the forward's (same float ray parameters, same arithmetic).
extern "C" __global__ void joseph_colscatter3_f32(float* __restrict__ vol, const double* __restrict__ views,
                                                  RayParams p, int count, const float4* __restrict__ ucol,
                                                  const float2* __restrict__ rayc, const float* __restrict__ yw,
                                                  const int* __restrict__ famflags, int accumulate) {
    extern __shared__ float colbuf[];
    const int nx = (int)p.shape[0], ny = (int)p.shape[1], nz = (int)p.shape[2];
    const int nu = p.nu, nv = p.nv;
    const u64 ncols = (u64)nx * ny;
    for (u64 cidx = blockIdx.x; cidx < ncols; cidx += gridDim.x) {
        const int i = (int)(cidx / ny), j = (int)(cidx % ny);
        for (int k = threadIdx.x; k < nz; k += blockDim.x) colbuf[k] = 0.0f;
        __syncthreads();
        for (int vloc = 0; vloc < count; ++vloc) {
            const int flags = famflags[vloc];
            const double* v = views + 12 * (i64)(p.first_view + vloc);
            for (int a = 0; a < 2; ++a) {
                if (!(flags & (1 << a))) continue;
                const int m = a == 0 ? i : j, jb = a == 0 ? j : i;
                int ulo, uhi;
                if (!column_range(v, p, a, m, jb, &ulo, &uhi)) continue;
                const float mf = (float)m;
                for (int u = ulo; u <= uhi; ++u) {
                    const float4 e = ucol[(u64)vloc * nu + u];
                    if (__float_as_int(e.z) != a) continue;
                    const float wb = tap_weight(__fadd_rn(e.x, __fmul_rn(mf, e.y)), jb);
                    if (wb == 0.0f) continue;
                    const u64 ray0 = ((u64)vloc * nu + u) * nv;
                    int vlo = 0, vhi = nv - 1;
                    if (nv > 1) {
                        const float2 qa = rayc[ray0], qb = rayc[ray0 + nv - 1];
                        const float fa = __fadd_rn(qa.x, __fmul_rn(mf, qa.y));
                        const float fz = __fadd_rn(qb.x, __fmul_rn(mf, qb.y));
                        const float slope = (fz - fa) / (float)(nv - 1);
                        if (slope != 0.0f) {
                            float v0 = (-1.0f - fa) / slope, v1 = ((float)nz - fa) / slope;
                            if (v0 > v1) { const float t = v0; v0 = v1; v1 = t; }
                            const float eps = 0.01f + 1e-3f / fabsf(slope);
                            vlo = max(0, (int)ceilf(v0 - eps));
                            vhi = min(nv - 1, (int)floorf(v1 + eps));
                        }
                    }
                    for (int iv = vlo + (int)threadIdx.x; iv <= vhi; iv += blockDim.x) {
                        const float c = yw[ray0 + iv];
                        if (c == 0.0f) continue;
                        const float2 q = rayc[ray0 + iv];
                        const float f = __fadd_rn(q.x, __fmul_rn(mf, q.y));
                        const int ic = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                        const float t = __fsub_rn(f, (float)ic);
                        if (ic >= 0 && ic < nz) atomicAdd(colbuf + ic, __fmul_rn(c, __fmul_rn(wb, __fsub_rn(1.0f, t))));
                        if (ic + 1 >= 0 && ic + 1 < nz) atomicAdd(colbuf + ic + 1, __fmul_rn(c, __fmul_rn(wb, t)));
                    }
                }
            }
        }
        __syncthreads();
        float* out = vol + cidx * (u64)nz;
        for (int k = threadIdx.x; k < nz; k += blockDim.x) out[k] = accumulate ? __fadd_rn(out[k], colbuf[k]) : colbuf[k];
        __syncthreads();
    }
}


extern "C" __global__ void joseph_forward2_seg8_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                    const double* __restrict__ views, RayParams p, int count) {
    forward2_seg<8>(vol, sino, views, p, count);
}

// ------------------------------------------- transpose by volume tiles (shared memory, exact)
// The volume is cut into tiles; one block owns a tile at a time and accumulates in shared memory
// the taps that fall into it from every ray of the views [first, first + count) that passes
// near it, then adds the tile to the volume with plain stores (each voxel has one owner: no
// global atomics). Rays are read from a table written by joseph_ray_table_f32 (the forward's
// float parameters, so every tap and weight is the forward's). The rays near a tile are those whose
// detector coordinates lie in the projection of the tile's box grown by one voxel (a convex
// set, so the bounding box of its projected corners, plus a margin, holds them all).

// One ray of the table: the forward's parameters and c = w * y (0 for a ray that misses the volume
// or carries no data).
struct RayEntry {
    float fb0, sb, fc0, sc;
    float c;
    int a, m0, m1;
};

extern "C" __global__ void joseph_ray_table_f32(const float* __restrict__ sino, const double* __restrict__ views,
                                                RayParams p, int count, RayEntry* __restrict__ table) {
    const u64 per_view = (u64)p.nu * (u64)p.nv;
    const u64 total = per_view * (u64)count;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int vloc = (int)(g / per_view);
        const u64 rem = g - (u64)vloc * per_view;
        const int view = p.first_view + vloc;
        const float y = sino[(u64)view * per_view + rem];
        const int iu = (int)(rem / p.nv), iv = (int)(rem % p.nv);
        Ray r;
        RayEntry e;
        if (y != 0.0f && setup_ray(p, views, view, iu, iv, r)) {
            e.fb0 = r.fb0; e.sb = r.sb; e.fc0 = r.fc0; e.sc = r.sc;
            e.c = __fmul_rn(r.w, y);
            e.a = r.a; e.m0 = r.m0; e.m1 = r.m1;
        } else {
            e.fb0 = 0.0f; e.sb = 0.0f; e.fc0 = 0.0f; e.sc = 0.0f;
            e.c = 0.0f;
            e.a = 0; e.m0 = 0; e.m1 = 0;
        }
        table[g] = e;
    }
}

// Detector coordinates (in cells from the first cell's centre) of the ray through world point x
// for view v; false when the point cannot be projected (behind the source, parallel to the
// detector plane).
__device__ __forceinline__ bool project_point(const double* v, const RayParams& p, const double* x,
                                              double* du, double* dv) {
    const double cu0 = 0.5 * ((double)p.nu - 1.0), cv0 = 0.5 * ((double)p.nv - 1.0);
    if (p.ndim == 2) {
        // Detector line C + s U; ray through x with direction D (parallel) or from the source.
        const double dx = p.parallel ? v[0] : x[0] - v[0], dy = p.parallel ? v[1] : x[1] - v[1];
        const double ux = v[6], uy = v[7];
        const double den = ux * dy - uy * dx;
        if (den == 0.0) return false;
        if (!p.parallel) {
            // The detector must lie ahead of the source along the ray.
            const double cx = v[3] - v[0], cy = v[4] - v[1];
            if (cx * dx + cy * dy <= 0.0) return false;
        }
        const double rx = x[0] - v[3], ry = x[1] - v[4];
        // C + s U = x + t D  =>  s = (r x D) / (U x D)
        *du = (rx * dy - ry * dx) / den + cu0;
        *dv = 0.0;
        return true;
    }
    const double* U = v + 6;
    const double* V = v + 9;
    const double n[3] = {U[1] * V[2] - U[2] * V[1], U[2] * V[0] - U[0] * V[2], U[0] * V[1] - U[1] * V[0]};
    double d[3];
    for (int k = 0; k < 3; ++k) d[k] = p.parallel ? v[k] : x[k] - v[k];
    const double dn = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
    if (dn == 0.0) return false;
    // Hit point H = x + t d on the detector plane through C.
    const double t = ((v[3] - x[0]) * n[0] + (v[4] - x[1]) * n[1] + (v[5] - x[2]) * n[2]) / dn;
    if (!p.parallel && !(t > -1.0)) return false;  // x must lie between the source and the plane
    const double h[3] = {x[0] + t * d[0] - v[3], x[1] + t * d[1] - v[4], x[2] + t * d[2] - v[5]};
    // Solve h = s U + r V (least squares with the Gram matrix: exact for h in the plane).
    const double uu = U[0] * U[0] + U[1] * U[1] + U[2] * U[2];
    const double vv = V[0] * V[0] + V[1] * V[1] + V[2] * V[2];
    const double uv = U[0] * V[0] + U[1] * V[1] + U[2] * V[2];
    const double hu = h[0] * U[0] + h[1] * U[1] + h[2] * U[2];
    const double hv = h[0] * V[0] + h[1] * V[1] + h[2] * V[2];
    const double det = uu * vv - uv * uv;
    if (det == 0.0) return false;
    *du = (hu * vv - hv * uv) / det + cu0;
    *dv = (hv * uu - hu * uv) / det + cv0;
    return true;
}

template <int NDIM, int T0, int T1, int T2>
__device__ __forceinline__ void tile_transpose(float* __restrict__ vol, const double* __restrict__ views,
                                               const RayParams& p, int count, const RayEntry* __restrict__ table,
                                               float* tile) {
    __shared__ int win[2][4];
    // Views [v_begin, v_end) of the launch's `count` go to this block row (gridDim.y groups).
    const int per_group = (count + gridDim.y - 1) / gridDim.y;
    const int v_begin = blockIdx.y * per_group, v_end = min(count, v_begin + per_group);
    const int n[3] = {(int)p.shape[0], (int)p.shape[1], NDIM == 3 ? (int)p.shape[2] : 1};
    const int nt[3] = {(n[0] + T0 - 1) / T0, (n[1] + T1 - 1) / T1, (n[2] + T2 - 1) / T2};
    const int T[3] = {T0, T1, T2};
    const u64 ntiles = (u64)nt[0] * nt[1] * nt[2];
    const int ncorners = NDIM == 3 ? 8 : 4;
    for (u64 tid = blockIdx.x; tid < ntiles; tid += gridDim.x) {
        const int tc[3] = {(int)(tid / ((u64)nt[1] * nt[2])), (int)((tid / nt[2]) % nt[1]), (int)(tid % nt[2])};
        int lo[3], hi[3];
        for (int k = 0; k < 3; ++k) {
            lo[k] = tc[k] * T[k];
            hi[k] = min(lo[k] + T[k], n[k]);
        }
        for (int i = threadIdx.x; i < T0 * T1 * T2; i += blockDim.x) tile[i] = 0.0f;
        __syncthreads();
        for (int vloc = v_begin; vloc < v_end; ++vloc) {
            const double* v = views + 12 * (i64)(p.first_view + vloc);
            int* w = win[vloc & 1];  // double-buffered: one barrier per view
            if (threadIdx.x < 32) {
                // Lanes 0..ncorners-1 project the corners of the tile's box grown by one voxel
                // (index lo - 1 or hi on each axis); the bounding box of the projections, plus a
                // margin of one cell, is the window of detector cells whose rays can tap the tile.
                const int q = threadIdx.x;
                double du = 0.0, dv = 0.0;
                int ok = 1;
                if (q < ncorners) {
                    double x[3] = {0.0, 0.0, 0.0};
                    for (int k = 0; k < NDIM; ++k) {
                        const double idx = ((q >> k) & 1) ? (double)hi[k] : (double)lo[k] - 1.0;
                        x[k] = p.vmin[k] + (idx + 0.5) * p.h[k];
                    }
                    ok = project_point(v, p, x, &du, &dv) ? 1 : 0;
                }
                double umin = q < ncorners ? du : 1e300, umax = q < ncorners ? du : -1e300;
                double vmin = q < ncorners ? dv : 1e300, vmax = q < ncorners ? dv : -1e300;
                for (int o = 4; o > 0; o >>= 1) {
                    umin = fmin(umin, __shfl_xor_sync(0xffffffffu, umin, o));
                    umax = fmax(umax, __shfl_xor_sync(0xffffffffu, umax, o));
                    vmin = fmin(vmin, __shfl_xor_sync(0xffffffffu, vmin, o));
                    vmax = fmax(vmax, __shfl_xor_sync(0xffffffffu, vmax, o));
                    ok &= __shfl_xor_sync(0xffffffffu, ok, o);
                }
                if (q == 0) {
                    if (ok && umax - umin < 1e9 && vmax - vmin < 1e9) {
                        w[0] = (int)fmax(0.0, floor(umin) - 1.0);
                        w[1] = (int)fmin((double)p.nu - 1.0, ceil(umax) + 1.0);
                        w[2] = NDIM == 3 ? (int)fmax(0.0, floor(vmin) - 1.0) : 0;
                        w[3] = NDIM == 3 ? (int)fmin((double)p.nv - 1.0, ceil(vmax) + 1.0) : 0;
                    } else {
                        w[0] = 0; w[1] = p.nu - 1; w[2] = 0; w[3] = p.nv - 1;
                    }
                }
            }
            __syncthreads();
            const int ulo = w[0], vlo = w[2];
            const int nwu = w[1] - w[0] + 1, nwv = w[3] - w[2] + 1;
            const int nrays = nwu > 0 && nwv > 0 ? nwu * nwv : 0;
            for (int r = threadIdx.x; r < nrays; r += blockDim.x) {
                const int u = ulo + r / nwv, iv = vlo + r % nwv;
                const RayEntry e = table[((u64)vloc * p.nu + u) * p.nv + iv];
                if (e.c == 0.0f) continue;
                const int a = e.a, b = a == 0 ? 1 : 0, c = a == 2 ? 1 : 2;
                const int mlo = max(e.m0, lo[a]), mhi = min(e.m1, hi[a]);
                // Local strides of the tile for the ray's axes.
                const int ls[3] = {T1 * T2, T2, 1};
                for (int m = mlo; m < mhi; ++m) {
                    const float mf = (float)m;
                    const float f = __fadd_rn(e.fb0, __fmul_rn(mf, e.sb));
                    const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                    const float tb = __fsub_rn(f, (float)ib);
                    const float wb[2] = {__fsub_rn(1.0f, tb), tb};
                    const int base = (m - lo[a]) * ls[a];
                    if (NDIM == 2) {
#pragma unroll
                        for (int x = 0; x < 2; ++x) {
                            const int jb = ib + x;
                            if (jb >= lo[b] && jb < hi[b]) atomicAdd(tile + base + (jb - lo[b]) * ls[b], __fmul_rn(e.c, wb[x]));
                        }
                    } else {
                        const float fc = __fadd_rn(e.fc0, __fmul_rn(mf, e.sc));
                        const int ic = __float2int_rz(__fadd_rn(fc, 4.0f)) - 4;
                        const float tcw = __fsub_rn(fc, (float)ic);
                        const float wc[2] = {__fsub_rn(1.0f, tcw), tcw};
#pragma unroll
                        for (int x = 0; x < 2; ++x) {
                            const int jb = ib + x;
                            if (jb < lo[b] || jb >= hi[b]) continue;
#pragma unroll
                            for (int y = 0; y < 2; ++y) {
                                const int jc = ic + y;
                                if (jc < lo[c] || jc >= hi[c]) continue;
                                atomicAdd(tile + base + (jb - lo[b]) * ls[b] + (jc - lo[c]) * ls[c],
                                          __fmul_rn(e.c, __fmul_rn(wb[x], wc[y])));
                            }
                        }
                    }
                }
            }
        }
        __syncthreads();
        // Add the tile to the volume: one global atomic per voxel and group of views.
        const int e0 = hi[0] - lo[0], e1 = hi[1] - lo[1], e2 = hi[2] - lo[2];
        for (int i = threadIdx.x; i < T0 * T1 * T2; i += blockDim.x) {
            const int x = i / (T1 * T2), y = (i / T2) % T1, z = i % T2;
            if (x >= e0 || y >= e1 || z >= e2) continue;
            const u64 g = ((u64)(lo[0] + x) * n[1] + (lo[1] + y)) * n[2] + (lo[2] + z);
            if (tile[i] != 0.0f) atomicAdd(vol + g, tile[i]);
        }
        __syncthreads();
    }
}

extern "C" __global__ void joseph_tile2_f32(float* __restrict__ vol, const double* __restrict__ views, RayParams p,
                                            int count, const RayEntry* __restrict__ table) {
    __shared__ float tile[64 * 64];
    tile_transpose<2, 64, 64, 1>(vol, views, p, count, table, tile);
}

extern "C" __global__ void joseph_tile3_f32(float* __restrict__ vol, const double* __restrict__ views, RayParams p,
                                            int count, const RayEntry* __restrict__ table) {
    __shared__ float tile[16 * 16 * 32];
    tile_transpose<3, 16, 16, 32>(vol, views, p, count, table, tile);
}

extern "C" __global__ void joseph_forward3_seg_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                   const double* __restrict__ views, RayParams p, int count, int seglen) {
    march_segments3<true>(vol, sino, views, p, count, seglen);
}

// The transpose with 32-bit voxel indices and the dimension fixed at compile time: the same taps
// and weights as joseph_backward_atomic_f32 (and as the forwards), scattered with atomic adds.
// `vol` must be zeroed before the first launch.
template <int NDIM>
__device__ __forceinline__ void backward_i32(const float* __restrict__ sino, float* __restrict__ vol,
                                             const double* __restrict__ views, const RayParams& p, int count) {
    const unsigned per_view = (unsigned)p.nu * (unsigned)p.nv;
    const u64 total = (u64)per_view * (u64)count;
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const unsigned vloc = (unsigned)(g / per_view);
        const unsigned rem = (unsigned)(g - (u64)vloc * per_view);
        const int view = p.first_view + (int)vloc;
        const float y = sino[(u64)view * per_view + rem];
        if (y == 0.0f) continue;
        const int iu = (int)(rem / (unsigned)p.nv), iv = (int)(rem % (unsigned)p.nv);
        Ray r;
        if (!setup_ray(p, views, view, iu, iv, r)) continue;
        const float c = __fmul_rn(r.w, y);
        const int nb = sh[r.b], sa = st[r.a], sb = st[r.b];
        const int nc = NDIM == 3 ? sh[r.c] : 1, sc = NDIM == 3 ? st[r.c] : 0;
        for (int m = r.m0; m < r.m1; ++m) {
            const float mf = (float)m;
            const float f = __fadd_rn(r.fb0, __fmul_rn(mf, r.sb));
            const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
            const float tb = __fsub_rn(f, (float)ib);
            const float wb0 = __fsub_rn(1.0f, tb), wb1 = tb;
            const int base = m * sa + ib * sb;
            const bool b0 = ib >= 0 && ib < nb, b1 = ib + 1 >= 0 && ib + 1 < nb;
            if (NDIM == 2) {
                if (b0) atomicAdd(vol + base, __fmul_rn(c, wb0));
                if (b1) atomicAdd(vol + base + sb, __fmul_rn(c, wb1));
            } else {
                const float fc = __fadd_rn(r.fc0, __fmul_rn(mf, r.sc));
                const int ic = __float2int_rz(__fadd_rn(fc, 4.0f)) - 4;
                const float tc = __fsub_rn(fc, (float)ic);
                const float wc0 = __fsub_rn(1.0f, tc), wc1 = tc;
                const bool c0 = ic >= 0 && ic < nc, c1 = ic + 1 >= 0 && ic + 1 < nc;
                const int i00 = base + ic * sc;
                if (b0 && c0) atomicAdd(vol + i00, __fmul_rn(c, __fmul_rn(wb0, wc0)));
                if (b0 && c1) atomicAdd(vol + i00 + sc, __fmul_rn(c, __fmul_rn(wb0, wc1)));
                if (b1 && c0) atomicAdd(vol + i00 + sb, __fmul_rn(c, __fmul_rn(wb1, wc0)));
                if (b1 && c1) atomicAdd(vol + i00 + sb + sc, __fmul_rn(c, __fmul_rn(wb1, wc1)));
            }
        }
    }
}

extern "C" __global__ void joseph_backward2_i32_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                                    const double* __restrict__ views, RayParams p, int count) {
    backward_i32<2>(sino, vol, views, p, count);
}

extern "C" __global__ void joseph_backward3_i32_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                                    const double* __restrict__ views, RayParams p, int count) {
    backward_i32<3>(sino, vol, views, p, count);
}



// 2D forward in plane segments, lanes = consecutive detector cells of one segment; partial sums
// added into the zeroed sinogram with atomics.
extern "C" __global__ void joseph_forward2_segatomic_f32(const float* __restrict__ vol, float* __restrict__ sino,
                                                         const double* __restrict__ views, RayParams p, int count, int seglen) {
    const int nu = p.nu;
    const int sh[2] = {(int)p.shape[0], (int)p.shape[1]};
    const int st[2] = {sh[1], 1};
    const int nseg = (max(sh[0], sh[1]) + seglen - 1) / seglen;
    const u64 total = (u64)nu * nseg * count;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < total; g += (u64)gridDim.x * blockDim.x) {
        const int iu = (int)(g % nu);
        const u64 rest = g / nu;
        const int seg = (int)(rest % nseg);
        const int view = p.first_view + (int)(rest / nseg);
        Ray r;
        if (!setup_ray(p, views, view, iu, 0, r)) continue;
        const int mlo = max(r.m0, seg * seglen), mhi = min(r.m1, (seg + 1) * seglen);
        if (mlo >= mhi) continue;
        const int nb = sh[r.b], sa = st[r.a], sb = st[r.b];
        float acc = 0.0f;
        acc = march2(vol, r, lo_of(p, r.b), nb, sa, sb, mlo, mhi, acc);
        atomicAdd(sino + (u64)view * nu + iu, __fmul_rn(acc, r.w));
    }
}


// joseph_forward2_smem_f32 (2D forward through a shared-memory slab) and
// joseph_backward3_seg_warp_f32 (3D segmented transpose with warp aggregation) were promoted to
// kernels/ray_joseph.cu (which the harness includes first). The counting variant below uses that
// file's backward3_seg_warp<COUNT> template.

// joseph_backward3_seg_warp_f32 counting the atomics it issues and the ones it saves (stats: 2
// zeroed counters).
extern "C" __global__ void joseph_backward3_seg_warp_count_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                                               const double* __restrict__ views, RayParams p,
                                                               int count, int seglen,
                                                               unsigned long long* __restrict__ stats) {
    backward3_seg_warp<true>(sino, vol, views, p, count, seglen, stats);
}

// Superseded 2D parallel-beam transpose (production until the lanes and gather kernels of
// kernels/ray_joseph.cu replaced it; kept for tools/kernel-harness/par2d_adjoint.cu's comparison).
// vol = the transpose of the 2D parallel beam over tiles of TILE2 x TILE2 pixels owned by the
// blocks (blockIdx.x: the tile, blockIdx.y: a share of the views when split > 1, blockIdx.z: the
// batch entry). Each warp takes views warp, warp + 8, …; its lanes take the rays whose taps can
// reach the tile (a range of u from the affine model of fb0, with margins) and march
// each one through the tile's planes, adding the products (w*y)*weight of the scattering
// transpose into the tile in shared memory; the tile is then stored (split == 1: every pixel
// written once, no zeroing) or added into the zeroed volume (split > 1). Same taps, weights and
// products as the scattering transpose (joseph_backward_atomic_f32); only the order of the
// additions differs.
#define TILE2 16
extern "C" __global__ void __launch_bounds__(256)
joseph_backward2_tile_f32(const float* __restrict__ cw, float* __restrict__ vol, const Ray2* __restrict__ rays,
                          const View2* __restrict__ info, RayParams p, int split) {
    __shared__ float tile[TILE2][TILE2 + 1];
    const int n0 = (int)p.shape[0], n1 = (int)p.shape[1];
    const int nu = p.nu;
    const int tiles1 = (n1 + TILE2 - 1) / TILE2;
    const int r0 = (int)(blockIdx.x / (unsigned)tiles1) * TILE2, c0 = (int)(blockIdx.x % (unsigned)tiles1) * TILE2;
    const int r1 = min(r0 + TILE2, n0), c1 = min(c0 + TILE2, n1);
    const u64 batch = blockIdx.z;
    cw += batch * (u64)p.nviews * (u64)nu;
    vol += batch * (u64)n0 * (u64)n1;
    float* flat = &tile[0][0];
    for (int k = threadIdx.x; k < TILE2 * (TILE2 + 1); k += blockDim.x) flat[k] = 0.0f;
    __syncthreads();
    const int lane = (int)(threadIdx.x % 32), warp = (int)(threadIdx.x / 32), warps = (int)(blockDim.x / 32);
    const int vb = (int)(((long long)p.nviews * blockIdx.y) / split);
    const int ve = (int)(((long long)p.nviews * (blockIdx.y + 1)) / split);
    for (int view = vb + warp; view < ve; view += warps) {
        const View2 v = info[view];
        if (v.a < 0) continue;
        // Planes [ma, mb) and cells [ja, jb) of the tile along this view's axes; a tap at plane
        // m and cell j goes to flat[(m - ma) * sm + (j - ja) * sj].
        const int ma = v.a == 0 ? r0 : c0, mb = v.a == 0 ? r1 : c1;
        const int ja = v.a == 0 ? c0 : r0, jb = v.a == 0 ? c1 : r1;
        const int sm = v.a == 0 ? TILE2 + 1 : 1, sj = v.a == 0 ? 1 : TILE2 + 1;
        int u0 = 0, u1 = nu - 1;
        if (v.inv_dfb0 != 0.0f) {
            // A ray adds into cells [ja, jb) at plane m when f = fb0 + m*sb is in [ja - 1, jb).
            float lo = 3.0e38f, hi = -3.0e38f;
            for (int e = 0; e < 2; ++e) {
                const float base = v.fb0_first + (float)(e == 0 ? ma : mb - 1) * v.sb;
                const float a = ((float)ja - 1.0f - base) * v.inv_dfb0;
                const float b = ((float)jb - base) * v.inv_dfb0;
                lo = fminf(lo, fminf(a, b));
                hi = fmaxf(hi, fmaxf(a, b));
            }
            lo = fmaxf(lo - 0.05f, -1.0f);
            hi = fminf(hi + 0.05f, (float)nu);
            if (!(lo <= hi)) continue;
            u0 = max(0, (int)floorf(lo));
            u1 = min(nu - 1, (int)floorf(hi));
        }
        const Ray2* row = rays + (u64)view * (u64)nu;
        const float* crow = cw + (u64)view * (u64)nu;
        for (int u = u0 + lane; u <= u1; u += 32) {
            const Ray2 e = row[u];
            const int m_lo = max(ma, e.planes & 0xffff), m_hi = min(mb, e.planes >> 16);
            if (m_lo >= m_hi) continue;
            const float c = __ldg(crow + u);
            for (int m = m_lo; m < m_hi; ++m) {
                const float f = __fadd_rn(e.fb0, __fmul_rn((float)m, v.sb));
                const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                const float t = __fsub_rn(f, (float)ib);
                const int at = (m - ma) * sm, k = ib - ja;
                if (k >= 0 && k < jb - ja) atomicAdd(flat + at + k * sj, __fmul_rn(c, __fsub_rn(1.0f, t)));
                if (k + 1 >= 0 && k + 1 < jb - ja) atomicAdd(flat + at + (k + 1) * sj, __fmul_rn(c, t));
            }
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < TILE2 * TILE2; k += blockDim.x) {
        const int i0 = r0 + k / TILE2, i1 = c0 + k % TILE2;
        if (i0 >= r1 || i1 >= c1) continue;
        const float s = tile[k / TILE2][k % TILE2];
        float* at = vol + (u64)i0 * (u64)n1 + (u64)i1;
        if (split == 1) *at = s;
        else atomicAdd(at, s);
    }
}

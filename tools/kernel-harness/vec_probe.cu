// Probe of the 3D kernels of benches/README.md versions 7 and 8 on cone_256 and cone_512: the
// chunked forward and the per-warp profile transpose of kernels/ray_joseph.cu against the previous
// production kernels, and (with a second argument) the probe variants that located the
// transpose's cost: backward3_lean<MODE, CHUNK> below is the profile transpose (an earlier copy,
// with the shifted-truncation floor) whose writes are float4 atomics, four scalar atomics, plain
// stores or nothing; forward3_lean the forward through the same profile (slower).
// nvcc -O3 -std=c++17 -fmad=false -arch=sm_90 vec_probe.cu -o vec_probe && ./vec_probe [reps] [probes 0|1] [cone_256|cone_512]
#include "../../kernels/ray_joseph.cu"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "harness_data.h"
#include "harness_time.cuh"


// QuantSum (probe): float atomics of contributions rounded to integers at `scale`, whose
// sums stay within 2^24 (bound at most 2^23): every partial sum is exact, so the order does not
// matter; 24 bits of the bound.
struct QuantSum {
    float* p;
    double scale;
    static constexpr bool FIXED = false;
    static constexpr bool PACKED = false;
    __device__ __forceinline__ QuantSum at(u64 off) const { return QuantSum{p + off, scale}; }
    __device__ __forceinline__ float q(float v) const { return (float)__double2int_rn((double)v * scale); }
    __device__ __forceinline__ void add(u64 i, float v) const {
        const float t = q(v);
        if (t != 0.0f) atomicAdd(p + i, t);
    }
    __device__ __forceinline__ bool vector_aligned() const { return (reinterpret_cast<u64>(p) & 15u) == 0u; }
};

// Probe: float atomics of integer-rounded contributions (QuantSum) into `vol` (zeroed),
// at fixed_scale(bound, *ymax, 23); joseph_quant_to_f32 scales them back in place.
__global__ void __launch_bounds__(256)
joseph_backward3_profile_quant_f32(const float* __restrict__ sino, float* __restrict__ vol,
                                   const double* __restrict__ views, RayParams p, int count, int seglen,
                                   double bound, const unsigned* __restrict__ ymax) {
    backward3_profile<4, false>(sino, QuantSum{vol, fixed_scale(bound, *ymax, 23)}, views, p, count, seglen, nullptr,
                                1);
}

// Probe: vol[i] /= 2^e in place (QuantSum's integers back to the transpose's scale).
__global__ void joseph_quant_to_f32(float* __restrict__ vol, u64 n, double bound, const unsigned* __restrict__ ymax) {
    const unsigned bits = *ymax;
    const bool finite = bits < 0x7f800000u;
    const double scale = fixed_scale(bound, bits, 23);
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        vol[i] = finite ? (float)((double)vol[i] / scale) : __uint_as_float(0x7fc00000u);
}

// Lean transpose: a warp whose 32 rays share their b track (bit-identical fb0, sb: one detector
// column of a circular cone) and whose c positions are strictly increasing by more than one cell
// and fit a 64-cell window over its planes adds, per plane, its rays' c taps into a shared profile
// with plain stores (distinct cells; a lane takes its left neighbour's c+1 tap when it is its own
// c tap), then 16 lanes add the profile's quads times the two row weights with float4 atomics.
// Other warps take the general warp-merged path.
template <int MODE, bool CHUNK>
__global__ void __launch_bounds__(256) backward3_lean(const float* __restrict__ sino, float* __restrict__ vol,
                                                     const double* __restrict__ views, RayParams p, int count,
                                                     int seglen, unsigned long long* stats) {
    __shared__ __align__(16) float prof_all[8][64];
    const unsigned full = 0xffffffffu;
    const int lane = (int)(threadIdx.x & 31);
    float* P = prof_all[threadIdx.x >> 5];
    P[lane] = 0.0f; P[lane + 32] = 0.0f;
    __syncwarp();
    const unsigned per_view = (unsigned)p.nu * (unsigned)p.nv;
    const u64 rays = (u64)per_view * (u64)count;
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    const int nmax = max(sh[0], max(sh[1], sh[2]));
    const int nseg = (nmax + seglen - 1) / seglen;
    const int nchunk = (p.nv + 31) / 32;
    const u64 per_seg = (u64)count * (u64)p.nu * 32u;
    const u64 total = CHUNK ? (u64)nchunk * (u64)nseg * per_seg : rays * (u64)nseg;
    unsigned long long n_fast = 0, n_slow = 0;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g - (u64)lane < total; g += (u64)gridDim.x * blockDim.x) {
        Ray r;
        r.a = -1; r.b = 0; r.c = 0; r.fb0 = 0.0f; r.sb = 0.0f; r.fc0 = 0.0f; r.sc = 0.0f; r.w = 0.0f; r.m0 = 0; r.m1 = 0;
        int mlo = 0x7fffffff, mhi = -0x7fffffff;
        float c = 0.0f;
        bool valid = false;
        int seg = 0, iu = 0, iv = 0, view = 0;
        bool live = g < total;
        if (CHUNK) {
            const u64 cs = g / per_seg;                 // chunk * nseg + seg
            const u64 t = g - cs * per_seg;
            const int chunk = (int)(cs / (u64)nseg);
            seg = (int)(cs - (u64)chunk * (u64)nseg);
            const unsigned vloc = (unsigned)(t / ((u64)p.nu * 32u));
            const unsigned t2 = (unsigned)(t - (u64)vloc * ((u64)p.nu * 32u));
            view = p.first_view + (int)vloc;
            iu = (int)(t2 >> 5);
            iv = chunk * 32 + (int)(t2 & 31u);
            live = live && iv < p.nv;
        } else if (live) {
            seg = (int)(g / rays);
            const u64 ray = g - (u64)seg * rays;
            const unsigned vloc = (unsigned)(ray / per_view);
            const unsigned rem = (unsigned)(ray - (u64)vloc * per_view);
            view = p.first_view + (int)vloc;
            iu = (int)(rem / (unsigned)p.nv); iv = (int)(rem % (unsigned)p.nv);
        }
        if (live) {
            const float y = sino[((u64)view * (u64)p.nu + (u64)iu) * (u64)p.nv + (u64)iv];
            const bool hit = setup_ray(p, views, view, iu, iv, r);
            valid = r.a >= 0;
            if (hit && y != 0.0f) {
                const int lo = max(r.m0, seg * seglen), hi = min(r.m1, (seg + 1) * seglen);
                if (lo < hi) { mlo = lo; mhi = hi; c = __fmul_rn(r.w, y); }
            }
        }
        int ulo = mlo, uhi = mhi;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            ulo = min(ulo, __shfl_xor_sync(full, ulo, o));
            uhi = max(uhi, __shfl_xor_sync(full, uhi, o));
        }
        if (ulo >= uhi) continue;
        const int a = r.a;
        const int nb = sh[r.b], sa = a >= 0 ? st[a] : 0, sb = st[r.b], nc = sh[r.c], sc = st[r.c];
        // Warp-uniform test of the lean path over [ulo, uhi).
        const int a_0 = __shfl_sync(full, a, 0);
        const float fb0_0 = __shfl_sync(full, r.fb0, 0), sb_0 = __shfl_sync(full, r.sb, 0);
        bool ok = valid && a == a_0 && a != 2 && (nc & 3) == 0 &&
                  __float_as_uint(r.fb0) == __float_as_uint(fb0_0) && __float_as_uint(r.sb) == __float_as_uint(sb_0);
        {
            const float fA = __fadd_rn(r.fc0, __fmul_rn((float)ulo, r.sc));
            const float fB = __fadd_rn(r.fc0, __fmul_rn((float)(uhi - 1), r.sc));
            const float nA = __shfl_down_sync(full, fA, 1), nB = __shfl_down_sync(full, fB, 1);
            if (lane < 31 && !(nA - fA >= 1.001f && nB - fB >= 1.001f)) ok = false;
            const float lA = __shfl_sync(full, fA, 31) - __shfl_sync(full, fA, 0);
            const float lB = __shfl_sync(full, fB, 31) - __shfl_sync(full, fB, 0);
            if (!(lA <= 58.5f && lB <= 58.5f)) ok = false;
        }
        if (__all_sync(full, ok)) {
            if (stats && lane == 0) n_fast += (unsigned long long)(uhi - ulo);
            for (int m = ulo; m < uhi; ++m) {
                const float mf = (float)m;
                const float f = __fadd_rn(r.fb0, __fmul_rn(mf, r.sb));
                const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                const float tb = __fsub_rn(f, (float)ib);
                const float fc = __fadd_rn(r.fc0, __fmul_rn(mf, r.sc));
                const int ic = __float2int_rz(__fadd_rn(fc, 4.0f)) - 4;
                const float tc = __fsub_rn(fc, (float)ic);
                const float ce = (m >= mlo && m < mhi) ? c : 0.0f;
                const float v0 = __fmul_rn(ce, __fsub_rn(1.0f, tc)), v1 = __fmul_rn(ce, tc);
                const int base = __shfl_sync(full, ic, 0) & ~3;
                const int col = ic - base;
                const int pcol = __shfl_up_sync(full, col, 1);
                const float pv1 = __shfl_up_sync(full, v1, 1);
                const int ncol = __shfl_down_sync(full, col, 1);
                const bool take = lane > 0 && pcol + 1 == col;
                const bool gave = lane < 31 && ncol == col + 1;
                P[col] = take ? __fadd_rn(v0, pv1) : v0;
                if (!gave) P[col + 1] = v1;
                __syncwarp();
                if (lane < 16) {
                    float4* q4 = reinterpret_cast<float4*>(P) + lane;
                    const float4 val = *q4;
                    *q4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                    const int gc = base + 4 * lane;
                    if (gc >= 0 && gc < nc && (val.x != 0.0f || val.y != 0.0f || val.z != 0.0f || val.w != 0.0f)) {
                        const float wb0 = __fsub_rn(1.0f, tb);
                        float* dst = vol + m * sa + ib * sb + gc;
                        const float4 r0 = make_float4(__fmul_rn(val.x, wb0), __fmul_rn(val.y, wb0), __fmul_rn(val.z, wb0), __fmul_rn(val.w, wb0));
                        const float4 r1 = make_float4(__fmul_rn(val.x, tb), __fmul_rn(val.y, tb), __fmul_rn(val.z, tb), __fmul_rn(val.w, tb));
                        if (MODE == 4) {
                            if (ib >= 0 && ib < nb) atomicAdd(reinterpret_cast<float4*>(dst), r0);
                            if (ib + 1 >= 0 && ib + 1 < nb) atomicAdd(reinterpret_cast<float4*>(dst + sb), r1);
                        } else if (MODE == 1) {
                            if (ib >= 0 && ib < nb) { atomicAdd(dst, r0.x); atomicAdd(dst + 1, r0.y); atomicAdd(dst + 2, r0.z); atomicAdd(dst + 3, r0.w); }
                            if (ib + 1 >= 0 && ib + 1 < nb) { atomicAdd(dst + sb, r1.x); atomicAdd(dst + sb + 1, r1.y); atomicAdd(dst + sb + 2, r1.z); atomicAdd(dst + sb + 3, r1.w); }
                        } else if (MODE == 3) {
                            // plain (non-atomic) vector stores: the memory traffic without the atomic units
                            if (ib >= 0 && ib < nb) *reinterpret_cast<float4*>(dst) = r0;
                            if (ib + 1 >= 0 && ib + 1 < nb) *reinterpret_cast<float4*>(dst + sb) = r1;
                        } else {
                            if (r0.x + r1.w == 1234.5f) vol[0] = 1.0f;
                        }
                    }
                }
                __syncwarp();
            }
            continue;
        }
        if (stats && lane == 0) n_slow += (unsigned long long)(uhi - ulo);
        const int prev_a = __shfl_up_sync(full, a, 1);
        for (int m = ulo; m < uhi; ++m) {
            const bool on = m >= mlo && m < mhi;
            int ib = 0, ic = 0, i00 = 0;
            bool b0 = false, b1 = false, c0 = false, c1 = false;
            float v00 = 0.0f, v01 = 0.0f, v10 = 0.0f, v11 = 0.0f;
            if (on) {
                const float mf = (float)m;
                const float f = __fadd_rn(r.fb0, __fmul_rn(mf, r.sb));
                ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                const float tb = __fsub_rn(f, (float)ib);
                const float wb0 = __fsub_rn(1.0f, tb), wb1 = tb;
                const float fc = __fadd_rn(r.fc0, __fmul_rn(mf, r.sc));
                ic = __float2int_rz(__fadd_rn(fc, 4.0f)) - 4;
                const float tc = __fsub_rn(fc, (float)ic);
                const float wc0 = __fsub_rn(1.0f, tc), wc1 = tc;
                b0 = ib >= 0 && ib < nb; b1 = ib + 1 >= 0 && ib + 1 < nb;
                c0 = ic >= 0 && ic < nc; c1 = ic + 1 >= 0 && ic + 1 < nc;
                i00 = m * sa + ib * sb + ic * sc;
                v00 = __fmul_rn(c, __fmul_rn(wb0, wc0)); v01 = __fmul_rn(c, __fmul_rn(wb0, wc1));
                v10 = __fmul_rn(c, __fmul_rn(wb1, wc0)); v11 = __fmul_rn(c, __fmul_rn(wb1, wc1));
            }
            const int key_b = on ? ib : -0x7fffffff - 1;
            const int prev_b = __shfl_up_sync(full, key_b, 1);
            const int prev_c = __shfl_up_sync(full, ic, 1);
            const float prev_v01 = __shfl_up_sync(full, v01, 1);
            const float prev_v11 = __shfl_up_sync(full, v11, 1);
            const bool take = on && lane > 0 && prev_a == a && prev_b == ib && prev_c + 1 == ic;
            const unsigned takers = __ballot_sync(full, take);
            const bool gave = (((takers >> 1) >> lane) & 1u) != 0u;
            if (take) { v00 = __fadd_rn(v00, prev_v01); v10 = __fadd_rn(v10, prev_v11); }
            if (on) {
                if (b0 && c0) atomicAdd(vol + i00, v00);
                if (b0 && c1 && !gave) atomicAdd(vol + i00 + sc, v01);
                if (b1 && c0) atomicAdd(vol + i00 + sb, v10);
                if (b1 && c1 && !gave) atomicAdd(vol + i00 + sb + sc, v11);
            }
        }
    }
    if (stats && lane == 0) { atomicAdd(stats, n_fast); atomicAdd(stats + 1, n_slow); }
}

// Lean forward: the same warps (shared b track, c window of 64 cells over the warp's planes; no
// ordering needed). Per plane 16 lanes load the two rows' quads (float4), blend them with the row
// weights into a shared profile, and every lane interpolates its c taps from it. One ray per lane
// over all its planes; other warps march as joseph_forward3_i32_f32.
__global__ void __launch_bounds__(256) forward3_lean(const float* __restrict__ vol, float* __restrict__ sino,
                                                     const double* __restrict__ views, RayParams p, int count,
                                                     unsigned long long* stats) {
    __shared__ __align__(16) float prof_all[8][2][64];
    const unsigned full = 0xffffffffu;
    const int lane = (int)(threadIdx.x & 31);
    const unsigned per_view = (unsigned)p.nu * (unsigned)p.nv;
    const u64 total = (u64)per_view * (u64)count;
    const int sh[3] = {(int)p.shape[0], (int)p.shape[1], (int)p.shape[2]};
    const int st[3] = {sh[1] * sh[2], sh[2], 1};
    unsigned long long n_fast = 0, n_slow = 0;
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g - (u64)lane < total; g += (u64)gridDim.x * blockDim.x) {
        Ray r;
        r.a = -1; r.b = 0; r.c = 0; r.fb0 = 0.0f; r.sb = 0.0f; r.fc0 = 0.0f; r.sc = 0.0f; r.w = 0.0f; r.m0 = 0; r.m1 = 0;
        int mlo = 0x7fffffff, mhi = -0x7fffffff;
        bool valid = false;
        const unsigned vloc = (unsigned)(g / per_view);
        const unsigned rem = (unsigned)(g - (u64)vloc * per_view);
        const int view = p.first_view + (int)vloc;
        if (g < total) {
            const int iu = (int)(rem / (unsigned)p.nv), iv = (int)(rem % (unsigned)p.nv);
            if (setup_ray(p, views, view, iu, iv, r)) { mlo = r.m0; mhi = r.m1; }
            valid = r.a >= 0;
        }
        int ulo = mlo, uhi = mhi;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            ulo = min(ulo, __shfl_xor_sync(full, ulo, o));
            uhi = max(uhi, __shfl_xor_sync(full, uhi, o));
        }
        float acc = 0.0f;
        if (ulo < uhi) {
            const int a = r.a;
            const int nb = sh[r.b], sa = a >= 0 ? st[a] : 0, sb = st[r.b], nc = sh[r.c], sc = st[r.c];
            const int a_0 = __shfl_sync(full, a, 0);
            const float fb0_0 = __shfl_sync(full, r.fb0, 0), sb_0 = __shfl_sync(full, r.sb, 0);
            bool ok = valid && a == a_0 && a != 2 && (nc & 3) == 0 &&
                      __float_as_uint(r.fb0) == __float_as_uint(fb0_0) && __float_as_uint(r.sb) == __float_as_uint(sb_0);
            {
                const float fA = __fadd_rn(r.fc0, __fmul_rn((float)ulo, r.sc));
                const float fB = __fadd_rn(r.fc0, __fmul_rn((float)(uhi - 1), r.sc));
                float loA = fA, hiA = fA, loB = fB, hiB = fB;
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) {
                    loA = fminf(loA, __shfl_xor_sync(full, loA, o)); hiA = fmaxf(hiA, __shfl_xor_sync(full, hiA, o));
                    loB = fminf(loB, __shfl_xor_sync(full, loB, o)); hiB = fmaxf(hiB, __shfl_xor_sync(full, hiB, o));
                }
                if (!(hiA - loA <= 58.5f && hiB - loB <= 58.5f)) ok = false;
            }
            if (__all_sync(full, ok)) {
                if (stats && lane == 0) n_fast += (unsigned long long)(uhi - ulo);
                // window base: floor of the warp's minimum c at the plane (lane with min at either end)
                for (int m = ulo; m < uhi; ++m) {
                    float* P = prof_all[threadIdx.x >> 5][m & 1];
                    const float mf = (float)m;
                    const float f = __fadd_rn(r.fb0, __fmul_rn(mf, r.sb));
                    const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                    const float tb = __fsub_rn(f, (float)ib);
                    const float fc = __fadd_rn(r.fc0, __fmul_rn(mf, r.sc));
                    const int ic = __float2int_rz(__fadd_rn(fc, 4.0f)) - 4;
                    const float tc = __fsub_rn(fc, (float)ic);
                    int lo = ic;
#pragma unroll
                    for (int o = 16; o > 0; o >>= 1) lo = min(lo, __shfl_xor_sync(full, lo, o));
                    const int base = lo & ~3;
                    if (lane < 16) {
                        const int gc = base + 4 * lane;
                        float4 q0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), q1 = q0;
                        if (gc >= 0 && gc < nc) {
                            const float* src = vol + m * sa + ib * sb + gc;
                            if (ib >= 0 && ib < nb) q0 = __ldg(reinterpret_cast<const float4*>(src));
                            if (ib + 1 >= 0 && ib + 1 < nb) q1 = __ldg(reinterpret_cast<const float4*>(src + sb));
                        }
                        const float wb0 = __fsub_rn(1.0f, tb);
                        reinterpret_cast<float4*>(P)[lane] = make_float4(
                            __fadd_rn(__fmul_rn(wb0, q0.x), __fmul_rn(tb, q1.x)), __fadd_rn(__fmul_rn(wb0, q0.y), __fmul_rn(tb, q1.y)),
                            __fadd_rn(__fmul_rn(wb0, q0.z), __fmul_rn(tb, q1.z)), __fadd_rn(__fmul_rn(wb0, q0.w), __fmul_rn(tb, q1.w)));
                    }
                    __syncwarp();
                    if (m >= mlo && m < mhi) {
                        const int col = ic - base;
                        acc = __fadd_rn(acc, __fadd_rn(__fmul_rn(__fsub_rn(1.0f, tc), P[col]), __fmul_rn(tc, P[col + 1])));
                    }
                }
            } else {
                if (stats && lane == 0) n_slow += (unsigned long long)(uhi - ulo);
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
                    if (b0 && c0) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb0, wc0), __ldg(vol + i00)));
                    if (b0 && c1) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb0, wc1), __ldg(vol + i00 + sc)));
                    if (b1 && c0) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb1, wc0), __ldg(vol + i00 + sb)));
                    if (b1 && c1) acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(wb1, wc1), __ldg(vol + i00 + sb + sc)));
                }
            }
            acc = __fmul_rn(acc, r.w);
        }
        if (g < total) sino[(u64)view * per_view + rem] = acc;
    }
    if (stats && lane == 0) { atomicAdd(stats, n_fast); atomicAdd(stats + 1, n_slow); }
}



// Occupancy probes: the production kernels with more blocks per multiprocessor requested.
template <int MINB>
__global__ void __launch_bounds__(256, MINB) fwd_lb(const float* __restrict__ vol, float* __restrict__ sino,
                                                    const double* __restrict__ views, RayParams p, int count, int seglen) {
    forward3_chunkseg<false>(vol, sino, views, p, count, seglen, 1);
}
template <int MINB>
__global__ void __launch_bounds__(256, MINB) adj_lb(const float* __restrict__ sino, float* __restrict__ vol,
                                                    const double* __restrict__ views, RayParams p, int count, int seglen) {
    backward3_profile<4, false>(sino, FloatSum{vol}, views, p, count, seglen, nullptr, 1);
}

static int g_sms = 132;
static dim3 grid_for_n(unsigned long long n) {
    unsigned long long b = (n + 255) / 256;
    b = std::max(1ULL, std::min(b, (unsigned long long)g_sms * 32));
    return dim3((unsigned)b);
}

struct Case { std::string name; RayParams p; std::vector<double> views; };

static Case cone(const char* name, int n, int nviews, int nu, int nv) {
    Case c; c.name = name;
    memset(&c.p, 0, sizeof(c.p));
    for (int k = 0; k < 3; ++k) { c.p.shape[k] = n; c.p.vmin[k] = -1.0; c.p.h[k] = 2.0 / n; }
    c.p.ndim = 3; c.p.nu = nu; c.p.nv = nv; c.p.nviews = nviews; c.p.parallel = 0;
    const double du = 2 * 2.8284 / nu, dv = 2 * 2.8859 / nv;
    for (int k = 0; k < nviews; ++k) {
        const double th = 2 * M_PI * (k + 0.5) / nviews, cs = cos(th), sn = sin(th);
        double v[12] = {4 * sn, -4 * cs, 0, -4 * sn, 4 * cs, 0, du * cs, du * sn, 0, 0, 0, dv};
        c.views.insert(c.views.end(), v, v + 12);
    }
    return c;
}



static double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0; for (size_t i = 0; i < a.size(); ++i) s += (double)a[i] * b[i]; return s;
}

int main(int argc, char** argv) {
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0)); g_sms = prop.multiProcessorCount;
    printf("device %s, %d SMs\n", prop.name, g_sms);
    const int reps = argc > 1 ? atoi(argv[1]) : 3;
    std::vector<Case> cases = {cone("cone_256", 256, 360, 384, 256), cone("cone_512", 512, 512, 768, 512)};
    unsigned long long* dstats; CK(cudaMalloc(&dstats, 16));
    const std::string only = argc > 3 ? argv[3] : "";
    for (auto& c : cases) {
        if (!only.empty() && c.name != only) continue;
        const size_t nvol = (size_t)c.p.shape[0] * c.p.shape[1] * c.p.shape[2];
        const size_t nsino = (size_t)c.p.nu * c.p.nv * c.p.nviews;
        auto x = randv(nvol, 1), y = randv(nsino, 2);
        float *dx, *dy, *dsino, *dvol; double* dviews;
        CK(cudaMalloc(&dx, nvol * 4)); CK(cudaMalloc(&dvol, nvol * 4));
        CK(cudaMalloc(&dy, nsino * 4)); CK(cudaMalloc(&dsino, nsino * 4));
        CK(cudaMalloc(&dviews, c.views.size() * 8));
        CK(cudaMemcpy(dx, x.data(), nvol * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dy, y.data(), nsino * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dviews, c.views.data(), c.views.size() * 8, cudaMemcpyHostToDevice));
        RayParams p = c.p; p.first_view = 0; const int count = p.nviews;
        const dim3 gr = grid_for_n(nsino);
        auto f = [&] { joseph_forward3_i32_f32<<<gr, 256>>>(dx, dsino, dviews, p, count); };
        f(); CK(cudaDeviceSynchronize());
        const double tf = time_ms(f, reps);
        std::vector<float> s(nsino); CK(cudaMemcpy(s.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
        const double lhs = dot(s, y);
        auto b0 = [&] { CK(cudaMemsetAsync(dvol, 0, nvol * 4)); joseph_backward3_seg_warp_f32<<<gr, 256>>>(dy, dvol, dviews, p, count, 64); };
        b0(); CK(cudaDeviceSynchronize());
        const double tb0 = time_ms(b0, reps);
        std::vector<float> v0(nvol); CK(cudaMemcpy(v0.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
        printf("%s: forward i32 %.2f ms; warp transpose %.2f ms, adjoint err %.2e\n", c.name.c_str(), tf, tb0,
               fabs(lhs - dot(x, v0)) / fabs(lhs));
        auto run = [&](auto kern, const char* name, bool check) {
            for (int sl : {32, 64, 128}) {
                auto b = [&] { CK(cudaMemsetAsync(dvol, 0, nvol * 4)); kern<<<gr, 256>>>(dy, dvol, dviews, p, count, sl, nullptr); };
                b(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                const double t = time_ms(b, reps);
                CK(cudaMemset(dstats, 0, 16));
                kern<<<gr, 256>>>(dy, dvol, dviews, p, count, sl, dstats);
                CK(cudaDeviceSynchronize());
                unsigned long long st[2]; CK(cudaMemcpy(st, dstats, 16, cudaMemcpyDeviceToHost));
                if (check) {
                    b(); CK(cudaDeviceSynchronize());
                    std::vector<float> v(nvol); CK(cudaMemcpy(v.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                    printf("%s: %s seg %d: %.2f ms, rel to warp %.2e, adjoint err %.2e, fast/slow warp-planes %llu/%llu\n",
                           c.name.c_str(), name, sl, t, rel(v, v0), fabs(lhs - dot(x, v)) / fabs(lhs), st[0], st[1]);
                } else {
                    printf("%s: %s seg %d: %.2f ms (no result)\n", c.name.c_str(), name, sl, t);
                }
            }
        };
        {
            // production kernels (kernels/ray_joseph.cu)
            const unsigned long long nthreads = (unsigned long long)((c.p.nv + 31) / 32) * 32ULL * c.p.nu * count;
            auto fc = [&] { joseph_forward3_chunk_f32<<<grid_for_n(nthreads), 256>>>(dx, dsino, dviews, p, count); };
            fc(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
            const double t = time_ms(fc, reps);
            std::vector<float> s2(nsino); CK(cudaMemcpy(s2.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
            size_t nd = 0; for (size_t i = 0; i < nsino; ++i) nd += s2[i] != s[i];
            printf("%s: joseph_forward3_chunk_f32 %.2f ms, values differing from i32 %zu\n", c.name.c_str(), t, nd);
            {
                // no grid stride: one block per 256 threads, scheduled in index order
                auto fu = [&] { joseph_forward3_chunk_f32<<<dim3((unsigned)((nthreads + 255) / 256)), 256>>>(dx, dsino, dviews, p, count); };
                fu(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                const double tu = time_ms(fu, reps);
                CK(cudaMemcpy(s2.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
                size_t ndu = 0; for (size_t i = 0; i < nsino; ++i) ndu += s2[i] != s[i];
                printf("%s: joseph_forward3_chunk_f32, full grid: %.2f ms, values differing %zu\n", c.name.c_str(), tu, ndu);
                for (int sl : {128}) {
                    const int nseg = (int)((c.p.shape[0] + sl - 1) / sl);
                    auto fs = [&] { CK(cudaMemsetAsync(dsino, 0, nsino * 4)); joseph_forward3_chunkseg_f32<<<dim3((unsigned)((nthreads * nseg + 255) / 256)), 256>>>(dx, dsino, dviews, p, count, sl); };
                    fs(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                    const double tf = time_ms(fs, reps);
                    CK(cudaMemcpy(s2.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
                    printf("%s: joseph_forward3_chunkseg_f32, full grid, seg %d: %.2f ms, rel to i32 %.2e, adjoint err vs warp transpose %.2e\n",
                           c.name.c_str(), sl, tf, rel(s2, s), fabs(dot(s2, y) - dot(x, v0)) / fabs(dot(x, v0)));
                }
                for (int sl : {128}) {
                    const int nseg = (int)((c.p.shape[0] + sl - 1) / sl);
                    auto b1 = [&] { CK(cudaMemsetAsync(dvol, 0, nvol * 4)); joseph_backward3_profile1_f32<<<dim3((unsigned)((nthreads * nseg + 255) / 256)), 256>>>(dy, dvol, dviews, p, count, sl); };
                    b1(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                    printf("%s: joseph_backward3_profile1_f32 (one plane per step), full grid, seg %d: %.2f ms\n", c.name.c_str(), sl, time_ms(b1, reps));

                }
                {
                    const int nseg = (int)((c.p.shape[0] + 127) / 128);
                    const dim3 gg((unsigned)((nthreads * nseg + 255) / 256));
                    auto f5 = [&] { CK(cudaMemsetAsync(dsino, 0, nsino * 4)); fwd_lb<5><<<gg, 256>>>(dx, dsino, dviews, p, count, 128); };
                    auto f6 = [&] { CK(cudaMemsetAsync(dsino, 0, nsino * 4)); fwd_lb<6><<<gg, 256>>>(dx, dsino, dviews, p, count, 128); };
                    auto f8 = [&] { CK(cudaMemsetAsync(dsino, 0, nsino * 4)); fwd_lb<8><<<gg, 256>>>(dx, dsino, dviews, p, count, 128); };
                    auto a5 = [&] { CK(cudaMemsetAsync(dvol, 0, nvol * 4)); adj_lb<5><<<gg, 256>>>(dy, dvol, dviews, p, count, 128); };
                    auto a6 = [&] { CK(cudaMemsetAsync(dvol, 0, nvol * 4)); adj_lb<6><<<gg, 256>>>(dy, dvol, dviews, p, count, 128); };
                    f5(); f6(); f8(); a5(); a6();  // (warm-up) CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                    printf("%s: seg 128 with min blocks 5/6/8: forward %.2f / %.2f / %.2f ms; adjoint 5/6: %.2f / %.2f ms\n", c.name.c_str(),
                           time_ms(f5, reps), time_ms(f6, reps), time_ms(f8, reps), time_ms(a5, reps), time_ms(a6, reps));
                }
                for (int sl : {128}) {
                    const int nseg = (int)((c.p.shape[0] + sl - 1) / sl);
                    auto bu = [&] { CK(cudaMemsetAsync(dvol, 0, nvol * 4)); joseph_backward3_profile_f32<<<dim3((unsigned)((nthreads * nseg + 255) / 256)), 256>>>(dy, dvol, dviews, p, count, sl); };
                    bu(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                    const double tb = time_ms(bu, reps);
                    std::vector<float> v(nvol); CK(cudaMemcpy(v.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                    printf("%s: joseph_backward3_profile_f32, full grid, seg %d: %.2f ms, rel to warp %.2e\n", c.name.c_str(), sl, tb, rel(v, v0));
                }
            }
            for (int sl : {128}) {
                const int nseg = (int)((c.p.shape[0] + sl - 1) / sl);
                auto bp = [&] { CK(cudaMemsetAsync(dvol, 0, nvol * 4)); joseph_backward3_profile_f32<<<grid_for_n(nthreads * nseg), 256>>>(dy, dvol, dviews, p, count, sl); };
                bp(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                const double tb = time_ms(bp, reps);
                std::vector<float> v(nvol); CK(cudaMemcpy(v.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                CK(cudaMemset(dstats, 0, 16));
                joseph_backward3_profile_count_f32<<<grid_for_n(nthreads * nseg), 256>>>(dy, dvol, dviews, p, count, sl, dstats);
                CK(cudaDeviceSynchronize());
                unsigned long long st[2]; CK(cudaMemcpy(st, dstats, 16, cudaMemcpyDeviceToHost));
                printf("%s: joseph_backward3_profile_f32 seg %d: %.2f ms, rel to warp %.2e, adjoint err %.2e, lean/other warp-planes %llu/%llu\n",
                       c.name.c_str(), sl, tb, rel(v, v0), fabs(lhs - dot(x, v)) / fabs(lhs), st[0], st[1]);
                // The deterministic transpose as src/backend/cuda/ray.rs queues it: max|y|, the
                // fixed-point sums zeroed, the profile transpose in fixed point, the floats.
                unsigned long long* dacc; unsigned* dymax;
                CK(cudaMalloc(&dacc, nvol * 8)); CK(cudaMalloc(&dymax, 4));
                double hmax = 0.0; for (int k = 0; k < 3; ++k) hmax = std::max(hmax, c.p.h[k]);
                const double bound = 2.0 * (double)nsino * hmax * std::sqrt(3.0);
                auto bd = [&] {
                    CK(cudaMemsetAsync(dymax, 0, 4)); CK(cudaMemsetAsync(dacc, 0, nvol * 8));
                    joseph_absmax_f32<<<grid_for_n(nsino), 256>>>(dy, (u64)nsino, dymax);
                    joseph_backward3_profile_fixed_f32<<<dim3((unsigned)((nthreads * nseg + 255) / 256)), 256>>>(
                        dy, dacc, dviews, p, count, sl, bound, dymax);
                    joseph_fixed_to_f32<<<grid_for_n(nvol), 256>>>(dacc, dvol, (u64)nvol, bound, dymax, 0);
                };
                bd(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                const double td = time_ms(bd, reps);
                std::vector<float> d1(nvol), d2(nvol);
                CK(cudaMemcpy(d1.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                bd(); CK(cudaDeviceSynchronize());
                CK(cudaMemcpy(d2.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                const bool same = std::memcmp(d1.data(), d2.data(), nvol * 4) == 0;
                auto bo = [&] { CK(cudaMemsetAsync(dvol, 0, nvol * 4)); joseph_backward3_profile_f32<<<dim3((unsigned)((nthreads * nseg + 255) / 256)), 256>>>(dy, dvol, dviews, p, count, sl); };
                const double to = time_ms(bo, reps);
                printf("%s: deterministic profile transpose (fixed point) seg %d: %.2f ms against %.2f ms (%.2fx), two runs %s, rel to profile %.2e, adjoint err %.2e\n",
                       c.name.c_str(), sl, td, to, td / to, same ? "bit-identical" : "DIFFER", rel(d1, v),
                       fabs(lhs - dot(x, d1)) / fabs(lhs));
                // The packed form (two voxels' 32-bit sums per 64-bit word) and the quantized float
                // probe, both bounded by the largest voxel of the transpose of ones (computed
                // once, by the 64-bit fixed-point profile transpose).
                float* dones; unsigned* done_bits;
                CK(cudaMalloc(&dones, nsino * 4)); CK(cudaMalloc(&done_bits, 4));
                {
                    std::vector<float> h1(nsino, 1.0f);
                    CK(cudaMemcpy(dones, h1.data(), nsino * 4, cudaMemcpyHostToDevice));
                    const unsigned one = 0x3f800000u;
                    CK(cudaMemcpy(done_bits, &one, 4, cudaMemcpyHostToDevice));
                }
                auto tcov0 = std::chrono::steady_clock::now();
                CK(cudaMemsetAsync(dacc, 0, nvol * 8));
                joseph_backward3_profile_fixed_f32<<<dim3((unsigned)((nthreads * nseg + 255) / 256)), 256>>>(
                    dones, dacc, dviews, p, count, sl, bound, done_bits);
                joseph_fixed_to_f32<<<grid_for_n(nvol), 256>>>(dacc, dvol, (u64)nvol, bound, done_bits, 0);
                CK(cudaMemsetAsync(dymax, 0, 4));
                joseph_absmax_f32<<<grid_for_n(nvol), 256>>>(dvol, (u64)nvol, dymax);
                unsigned covbits = 0; CK(cudaMemcpy(&covbits, dymax, 4, cudaMemcpyDeviceToHost));
                const double tcov = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tcov0).count();
                float covmax; std::memcpy(&covmax, &covbits, 4);
                const double pbound = (double)covmax * (1.0 + 1.0 / 1024.0);
                printf("%s: transpose of ones: max %.6g (fixed-point bound %.6g, %.0fx), %.1f ms once\n", c.name.c_str(),
                       covmax, bound, bound / covmax, tcov);
                const dim3 pg((unsigned)((nthreads * nseg + 255) / 256));
                auto bk = [&] {
                    CK(cudaMemsetAsync(dymax, 0, 4)); CK(cudaMemsetAsync(dacc, 0, ((nvol + 1) / 2) * 8));
                    joseph_absmax_f32<<<grid_for_n(nsino), 256>>>(dy, (u64)nsino, dymax);
                    joseph_backward3_profile_packed_f32<<<pg, 256>>>(dy, dacc, dviews, p, count, sl, pbound, dymax);
                    joseph_packed_to_f32<<<grid_for_n(nvol), 256>>>(dacc, dvol, (u64)nvol, pbound, dymax, 0);
                };
                auto bq = [&] {
                    CK(cudaMemsetAsync(dymax, 0, 4)); CK(cudaMemsetAsync(dvol, 0, nvol * 4));
                    joseph_absmax_f32<<<grid_for_n(nsino), 256>>>(dy, (u64)nsino, dymax);
                    joseph_backward3_profile_quant_f32<<<pg, 256>>>(dy, dvol, dviews, p, count, sl, pbound, dymax);
                    joseph_quant_to_f32<<<grid_for_n(nvol), 256>>>(dvol, (u64)nvol, pbound, dymax);
                };
                for (int variant = 0; variant < 2; ++variant) {
                    auto go = [&] { if (variant == 0) bk(); else bq(); };
                    go(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                    const double tv = time_ms(go, reps);
                    CK(cudaMemcpy(d1.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                    go(); CK(cudaDeviceSynchronize());
                    CK(cudaMemcpy(d2.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                    const bool vs = std::memcmp(d1.data(), d2.data(), nvol * 4) == 0;
                    const double to2 = time_ms(bo, reps);
                    const Diff dd = diff(d1, v);
                    printf("%s: deterministic profile transpose (%s) seg %d: %.2f ms against %.2f ms (%.2fx), two runs %s, rel to profile %.2e (max %.2e), adjoint err %.2e\n",
                           c.name.c_str(), variant == 0 ? "packed 32-bit pairs" : "probe: integer floats, float4 atomics", sl,
                           tv, to2, tv / to2, vs ? "bit-identical" : "DIFFER", dd.l2, dd.max, fabs(lhs - dot(x, d1)) / fabs(lhs));
                }
                CK(cudaFree(dones)); CK(cudaFree(done_bits));
                CK(cudaFree(dacc)); CK(cudaFree(dymax));
            }
        }
        if (argc > 2 && atoi(argv[2]) != 0) {
            // where the transpose's time goes: the same warp arithmetic with other writes
            run(backward3_lean<4, true>, "probe: float4 atomics", true);
            run(backward3_lean<1, true>, "probe: four scalar atomics per quad", true);
            run(backward3_lean<3, true>, "probe: plain float4 stores (wrong result)", false);
            run(backward3_lean<0, true>, "probe: no writes (wrong result)", false);
            auto fl = [&] { forward3_lean<<<gr, 256>>>(dx, dsino, dviews, p, count, nullptr); };
            fl(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
            const double t = time_ms(fl, reps);
            std::vector<float> s2(nsino); CK(cudaMemcpy(s2.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
            printf("%s: probe: forward through a per-warp profile %.2f ms, rel to i32 %.2e\n", c.name.c_str(), t, rel(s2, s));
        }
        CK(cudaFree(dx)); CK(cudaFree(dvol)); CK(cudaFree(dy)); CK(cudaFree(dsino)); CK(cudaFree(dviews));
    }
    return 0;
}

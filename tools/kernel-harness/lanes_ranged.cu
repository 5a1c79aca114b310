// Harness candidate for the one-entry 2D parallel-beam transpose: joseph_backward2_lanes_f32 of
// kernels/ray_joseph.cu with a ray range per lane (included after that file).
//
// In joseph_backward2_lanes_f32 every lane of a warp takes the same ray at each step (a shuffle
// broadcast): the warp steps through the union of the rays that reach any plane of the tile,
// about (33 + 32 |sb|) / |change of f per cell| of them, while a plane is reached by about
// 33 / |change| — a third to a half of the steps are idle at views near 45 degrees. And the lanes'
// cells at one step, k = c + sb * l, fall into one shared-memory bank when sb is near -1 (the copy
// has a pitch of 33 words): up to 32-way conflicts on the adds.
//
// Here the warp stages the union's rays (fb0, plane range, c = w*y) in shared memory, and lane l
// steps through its own plane's range: at step q it takes ray ua(l) + q, where ua(l) is the first
// ray that can reach its plane. The lanes then sit at about the same cell k at each step, so their
// adds fall into distinct banks (addresses l * 33 + k, or k * 33 + l), and the warp makes
// max over lanes of its range's length steps. Views whose union exceeds the staging room (detector
// cells much finer than the pixels) take the broadcast loop. Same taps, weights and products as
// joseph_backward2_lanes_f32 (the same exact transpose); each plane's sum runs over the same rays
// in the same order, so the two kernels agree bit for bit at split 1.
#define LANES_STAGE 128
extern "C" __global__ void __launch_bounds__(256)
joseph_backward2_lanes_ranged_f32(const float* __restrict__ cw, float* __restrict__ vol, const Ray2* __restrict__ rays,
                                  const View2* __restrict__ info, RayParams p, int split) {
    __shared__ float acc[8][LANE2][LANE2 + 1];
    __shared__ float st_fb0[8][LANES_STAGE];
    __shared__ int st_pl[8][LANES_STAGE];
    __shared__ float st_c[8][LANES_STAGE];
    const int n0 = (int)p.shape[0], n1 = (int)p.shape[1], nu = p.nu;
    const int tiles1 = (n1 + LANE2 - 1) / LANE2;
    const int r0 = (int)(blockIdx.x / (unsigned)tiles1) * LANE2, c0 = (int)(blockIdx.x % (unsigned)tiles1) * LANE2;
    const int r1 = min(r0 + LANE2, n0), c1 = min(c0 + LANE2, n1);
    const u64 entry = blockIdx.z;
    cw += entry * (u64)p.nviews * (u64)nu;
    vol += entry * (u64)n0 * (u64)n1;
    float* flat = &acc[0][0][0];
    for (int k = threadIdx.x; k < 8 * LANE2 * (LANE2 + 1); k += blockDim.x) flat[k] = 0.0f;
    __syncthreads();
    const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x >> 5);
    float* mine = &acc[warp][0][0];
    float* sf = st_fb0[warp];
    int* sp = st_pl[warp];
    float* sc = st_c[warp];
    const int vb = (int)(((long long)p.nviews * blockIdx.y) / split);
    const int ve = (int)(((long long)p.nviews * (blockIdx.y + 1)) / split);
    for (int view = vb + warp; view < ve; view += 8) {
        const View2 v = info[view];
        if (v.a < 0) continue;
        const int ma = v.a == 0 ? r0 : c0, mb = v.a == 0 ? r1 : c1;
        const int ja = v.a == 0 ? c0 : r0, jb = v.a == 0 ? c1 : r1;
        const int sm = v.a == 0 ? LANE2 + 1 : 1, sj = v.a == 0 ? 1 : LANE2 + 1;
        int u0, u1, w0, w1;
        gather2_range(v, ma, (float)ja - 1.0f, (float)jb, nu, &u0, &u1);
        gather2_range(v, mb - 1, (float)ja - 1.0f, (float)jb, nu, &w0, &w1);
        u0 = min(u0, w0);
        u1 = max(u1, w1);
        if (u0 > u1) continue;  // warp-uniform
        const int m = ma + lane;
        const bool active = m < mb;
        const float mf = (float)m;
        const int at = lane * sm, nj = jb - ja;
        const Ray2* row = rays + (u64)view * (u64)nu;
        const float* crow = cw + (u64)view * (u64)nu;
        const int n = u1 - u0 + 1;
        if (n <= LANES_STAGE) {
            for (int i = lane; i < n; i += 32) {
                const Ray2 e = row[u0 + i];
                sf[i] = e.fb0;
                sp[i] = e.planes;
                sc[i] = __ldg(crow + u0 + i);
            }
            // This lane's rays: those whose f at its plane can lie in [ja - 1, jb), within the union.
            int ua = 1, ub = 0;
            if (active) {
                gather2_range(v, m, (float)ja - 1.0f, (float)jb, nu, &ua, &ub);
                ua = max(ua, u0);
                ub = min(ub, u1);
            }
            int steps = max(0, ub - ua + 1);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) steps = max(steps, __shfl_xor_sync(0xffffffffu, steps, o));
            __syncwarp();
            for (int q = 0; q < steps; ++q) {
                const int u = ua + q;
                if (u > ub) continue;
                const int i = u - u0;
                const int pl = sp[i];
                if (m < (pl & 0xffff) || m >= (pl >> 16)) continue;
                const float cq = sc[i];
                const float f = __fadd_rn(sf[i], __fmul_rn(mf, v.sb));
                const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                const float t = __fsub_rn(f, (float)ib);
                const int k = ib - ja;
                if (k >= 0 && k < nj) mine[at + k * sj] = __fadd_rn(mine[at + k * sj], __fmul_rn(cq, __fsub_rn(1.0f, t)));
                if (k + 1 >= 0 && k + 1 < nj)
                    mine[at + (k + 1) * sj] = __fadd_rn(mine[at + (k + 1) * sj], __fmul_rn(cq, t));
            }
            __syncwarp();  // the staging is reused by the next view
            continue;
        }
        // A union too wide to stage: the broadcast loop of joseph_backward2_lanes_f32.
        for (int ub = u0; ub <= u1; ub += 32) {
            const int uu = ub + lane;
            Ray2 e;
            e.fb0 = 0.0f;
            e.planes = 0;
            float c = 0.0f;
            if (uu <= u1) {
                e = row[uu];
                c = __ldg(crow + uu);
            }
            const int cnt = min(32, u1 - ub + 1);
            for (int q = 0; q < cnt; ++q) {
                const float fb0 = __shfl_sync(0xffffffffu, e.fb0, q);
                const int pl = __shfl_sync(0xffffffffu, e.planes, q);
                const float cq = __shfl_sync(0xffffffffu, c, q);
                if (!active || m < (pl & 0xffff) || m >= (pl >> 16)) continue;
                const float f = __fadd_rn(fb0, __fmul_rn(mf, v.sb));
                const int ib = __float2int_rz(__fadd_rn(f, 4.0f)) - 4;
                const float t = __fsub_rn(f, (float)ib);
                const int k = ib - ja;
                if (k >= 0 && k < nj) mine[at + k * sj] = __fadd_rn(mine[at + k * sj], __fmul_rn(cq, __fsub_rn(1.0f, t)));
                if (k + 1 >= 0 && k + 1 < nj)
                    mine[at + (k + 1) * sj] = __fadd_rn(mine[at + (k + 1) * sj], __fmul_rn(cq, t));
            }
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < LANE2 * LANE2; k += blockDim.x) {
        const int i0 = r0 + k / LANE2, i1 = c0 + k % LANE2;
        if (i0 >= r1 || i1 >= c1) continue;
        float s = acc[0][k / LANE2][k % LANE2];
#pragma unroll
        for (int w = 1; w < 8; ++w) s = __fadd_rn(s, acc[w][k / LANE2][k % LANE2]);
        float* dst = vol + (u64)i0 * (u64)n1 + (u64)i1;
        if (split == 1) *dst = s;
        else atomicAdd(dst, s);
    }
}

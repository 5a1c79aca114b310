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
    const Lanes2Tile t = lanes2_tile(p, split, acc, cw, vol);
    const int nu = p.nu, lane = t.lane;
    float* mine = &acc[t.warp][0][0];
    float* sf = st_fb0[t.warp];
    int* sp = st_pl[t.warp];
    float* sc = st_c[t.warp];
    for (int view = t.vb + t.warp; view < t.ve; view += 8) {
        const View2 v = info[view];
        if (v.a < 0) continue;
        const Lanes2View w = lanes2_view(v, t.r0, t.r1, t.c0, t.c1, nu);
        if (w.u0 > w.u1) continue;  // warp-uniform
        const int m = w.ma + lane;
        const bool active = m < w.mb;
        const int at = lane * w.sm;
        const Ray2* row = rays + (u64)view * (u64)nu;
        const float* crow = t.cw + (u64)view * (u64)nu;
        const int n = w.u1 - w.u0 + 1;
        if (n > LANES_STAGE) {
            // A union too wide to stage: the broadcast loop of joseph_backward2_lanes_f32.
            lanes2_broadcast(mine, w, row, crow, lane, active, at, m, v.sb);
            continue;
        }
        for (int i = lane; i < n; i += 32) {
            const Ray2 e = row[w.u0 + i];
            sf[i] = e.fb0;
            sp[i] = e.planes;
            sc[i] = __ldg(crow + w.u0 + i);
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
            if (ua + q <= ub) lanes2_add(mine, w, at, m, mf, v.sb, sf[i], sp[i], sc[i]);
        }
        __syncwarp();  // the staging is reused by the next view
    }
    lanes2_store(acc, t.r0, t.r1, t.c0, t.c1, t.n1, t.vol, split);
}

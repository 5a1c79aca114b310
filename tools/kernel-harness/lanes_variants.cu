// Variants of the one-entry 2D parallel-beam transpose joseph_backward2_lanes_f32 of
// kernels/ray_joseph.cu (included after that file): the superseded broadcast-only kernel and a
// prefetching variant (slower). Timed by par2d_adjoint.cu; checked bit for bit against production on
// the CPU stand-in (cpu/pieces_check.cpp).

// Superseded 2D parallel-beam transpose for one entry (production until the ranged staging of
// joseph_backward2_lanes_f32): every view through lanes2_broadcast, each lane taking every ray
// that can reach the tile (the products c = w*y formed from the sinogram and the weights, as in
// production). H200, parallel2d_512 at split 8: 0.40 ms (with a weighting kernel before it).
extern "C" __global__ void __launch_bounds__(256)
joseph_backward2_lanes_bcast_f32(const float* __restrict__ sino, const float* __restrict__ weights,
                                 float* __restrict__ vol, const Ray2* __restrict__ rays,
                                 const View2* __restrict__ info, RayParams p, int split) {
    __shared__ float acc[8][LANE2][LANE2 + 1];
    const Lanes2Tile t = lanes2_tile(p, split, acc, sino, vol);
    float* mine = &acc[t.warp][0][0];
    const int nu = p.nu;
    for (int view = t.vb + t.warp; view < t.ve; view += 8) {
        const View2 v = info[view];
        if (v.a < 0) continue;
        const Lanes2View w = lanes2_view(v, t.r0, t.r1, t.c0, t.c1, nu);
        const int m = w.ma + t.lane;
        lanes2_broadcast(mine, w, rays + (u64)view * (u64)nu, t.data + (u64)view * (u64)nu,
                         weights + (u64)view * (u64)nu, t.lane, m < w.mb, t.lane * w.sm, m, v.sb);
    }
    lanes2_store(acc, t.r0, t.r1, t.c0, t.c1, t.n1, t.vol, split);
}

// Tried and slower: joseph_backward2_lanes_f32 with the next view's set-up and staged rays loaded
// into registers (four per lane) while the current view is computed, so that their latency
// overlaps the adds. The same rays, steps and adds in the same order: bit for bit the production
// kernel. H200, parallel2d_512 at split 8: 0.338 ms against production's 0.324 ms.
extern "C" __global__ void __launch_bounds__(256)
joseph_backward2_lanes_prefetch_f32(const float* __restrict__ sino, const float* __restrict__ weights,
                                    float* __restrict__ vol, const Ray2* __restrict__ rays,
                                    const View2* __restrict__ info, RayParams p, int split) {
    __shared__ float acc[8][LANE2][LANE2 + 1];
    __shared__ float st_fb0[8][LANES_STAGE];
    __shared__ int st_pl[8][LANES_STAGE];
    __shared__ float st_c[8][LANES_STAGE];
    const Lanes2Tile t = lanes2_tile(p, split, acc, sino, vol);
    const int nu = p.nu, lane = t.lane;
    float* mine = &acc[t.warp][0][0];
    float* sf = st_fb0[t.warp];
    int* sp = st_pl[t.warp];
    float* sc = st_c[t.warp];
    constexpr int PER = LANES_STAGE / 32;
    View2 nv;
    Lanes2View nw;
    int nn = 0;
    Ray2 ne[PER];
    float nc[PER];
    auto fetch = [&](int vw) {
        nn = 0;
        nv = info[vw];
        if (nv.a < 0) return;
        nw = lanes2_view(nv, t.r0, t.r1, t.c0, t.c1, nu);
        if (nw.u0 > nw.u1) return;
        nn = nw.u1 - nw.u0 + 1;
        if (nn > LANES_STAGE) return;
        const Ray2* row = rays + (u64)vw * (u64)nu;
        const float* srow = t.data + (u64)vw * (u64)nu;
        const float* wrow = weights + (u64)vw * (u64)nu;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int i = lane + 32 * j;
            if (i < nn) {
                ne[j] = row[nw.u0 + i];
                nc[j] = lanes2_c(srow, wrow, nw.u0 + i);
            }
        }
    };
    int view = t.vb + t.warp;
    if (view < t.ve) fetch(view);
    for (; view < t.ve; view += 8) {
        const View2 v = nv;
        const Lanes2View w = nw;
        const int n = nn;
        if (n > 0 && n <= LANES_STAGE) {
#pragma unroll
            for (int j = 0; j < PER; ++j) {
                const int i = lane + 32 * j;
                if (i < n) {
                    sf[i] = ne[j].fb0;
                    sp[i] = ne[j].planes;
                    sc[i] = nc[j];
                }
            }
        }
        if (view + 8 < t.ve) fetch(view + 8);  // in flight during the adds below
        if (n == 0) continue;                   // warp-uniform
        const int m = w.ma + lane;
        const bool active = m < w.mb;
        const int at = lane * w.sm;
        if (n > LANES_STAGE) {
            lanes2_broadcast(mine, w, rays + (u64)view * (u64)nu, t.data + (u64)view * (u64)nu,
                             weights + (u64)view * (u64)nu, lane, active, at, m, v.sb);
            continue;
        }
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
        __syncwarp();  // the staging is rewritten for the next view
    }
    lanes2_store(acc, t.r0, t.r1, t.c0, t.c1, t.n1, t.vol, split);
}

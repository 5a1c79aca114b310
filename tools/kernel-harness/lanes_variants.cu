// Variants of the one-entry 2D parallel-beam transpose joseph_backward2_lanes_f32 of
// kernels/ray_joseph.cu (included after that file): the superseded broadcast-only kernel and the
// former staging of 128 rays. Timed by
// par2d_adjoint.cu; checked bit for bit against production on the CPU stand-in
// (cpu/pieces_check.cpp), and the production kernel's former staging of 128 rays. (A variant that loaded the next view's rays into registers during the
// current view's adds was slower, 0.338 against 0.324 ms, and is gone.)

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

// The production kernel's staging before it took 64 rays: 128 rays per warp and view (46 KB of
// shared memory per block, four blocks per multiprocessor). H200, parallel2d_512 at 16 view
// shares: 0.310 ms against production's 0.295 ms (both with the paired (fb0, c) loads; 0.321 ms
// without them). Bit for bit production wherever no view needs more than 64 rays.
extern "C" __global__ void __launch_bounds__(256)
joseph_backward2_lanes_s128_f32(const float* __restrict__ sino, const float* __restrict__ weights,
                                float* __restrict__ vol, const Ray2* __restrict__ rays,
                                const View2* __restrict__ info, RayParams p, int split) {
    backward2_lanes<128>(sino, weights, vol, rays, info, p, split);
}

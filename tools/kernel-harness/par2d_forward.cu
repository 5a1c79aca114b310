// The 2D parallel-beam forwards on parallel2d_512, the learned primal-dual operator and two odd
// shapes, at batch 1 and 8: the production shared-memory slab forward (joseph_forward2_smem_f32,
// the library's block shape), four threads per ray (joseph_forward2_seg4_f32) and the tile
// forward (joseph_forward2_tile_f32 and its 16- and 128-pixel instances) at several view
// splits, each against joseph_forward2_i32_f32 (one thread per ray, the production order of the
// additions), with the adjoint identity against the lanes transpose, timed with CUDA events
// (median of the repetitions, the zeroing of the sinogram included where a kernel adds).
// nvcc -O3 -std=c++17 -fmad=false -arch=sm_90 par2d_forward.cu -o par2d_forward
// ./par2d_forward [repetitions]
#include "../../kernels/ray_joseph.cu"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>
#include "harness_data.h"
#include "harness_time.cuh"
#include "harness_par2d.h"

int main(int argc, char** argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 200;
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaFuncSetAttribute(joseph_forward2_tile128_f32, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)ft2_smem_bytes(128)));
    const std::vector<Par2dSpec> specs = par2d_specs();
    for (const Par2dSpec& s : specs) {
        Par2d c = par2d(s.n0, s.n1, s.nviews, s.nu, s.span, s.th0, s.th1);
        RayParams p = c.p;
        const int nviews = p.nviews, nu = p.nu;
        const size_t rays = (size_t)nviews * nu, npix = (size_t)s.n0 * s.n1;
        const int B = 8;
        const Par2dDevice dev = par2d_upload(c);
        double* dviews = dev.views;
        Ray2* dr = dev.rays;
        float* dw = dev.weights;
        View2* di = dev.info;
        const std::vector<float> hx = randv(npix * B, 3), hy = randv(rays, 7);
        float *dx, *dy, *dsino, *dref, *dadj;
        CK(cudaMalloc(&dx, npix * B * 4)); CK(cudaMalloc(&dy, rays * 4));
        CK(cudaMalloc(&dsino, rays * B * 4)); CK(cudaMalloc(&dref, rays * B * 4)); CK(cudaMalloc(&dadj, npix * 4));
        CK(cudaMemcpy(dx, hx.data(), npix * B * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dy, hy.data(), rays * 4, cudaMemcpyHostToDevice));
        // reference: one thread per ray, entry by entry
        for (int b = 0; b < B; ++b)
            joseph_forward2_i32_f32<<<(unsigned)((rays + 255) / 256), 256>>>(dx + b * npix, dref + b * rays, dviews, p, nviews);
        // the adjoint: the lanes transpose of y (one entry)
        CK(cudaMemset(dadj, 0, npix * 4));
        {
            const unsigned tiles = (unsigned)(((s.n0 + 31) / 32) * ((s.n1 + 31) / 32));
            joseph_backward2_lanes_f32<<<dim3(tiles, 4, 1), 256>>>(dy, dw, dadj, dr, di, p, 4);
        }
        CK(cudaDeviceSynchronize());
        std::vector<float> ref(rays * B), adj(npix);
        CK(cudaMemcpy(ref.data(), dref, rays * B * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(adj.data(), dadj, npix * 4, cudaMemcpyDeviceToHost));
        double xaty = 0; for (size_t i = 0; i < npix; ++i) xaty += (double)hx[i] * adj[i];
        auto smem = [&](int batch) {
            const int seglen = 64, vgroup = 8, wcap = 80, spb = 2;
            const int nseg = (std::max(s.n0, s.n1) + seglen - 1) / seglen, zsegs = (nseg + spb - 1) / spb;
            const unsigned shm = (unsigned)((seglen * (wcap + 4) + seglen) * 4);
            if (zsegs > 1) CK(cudaMemsetAsync(dsino, 0, rays * batch * 4));
            const dim3 grid((unsigned)((nviews + vgroup - 1) / vgroup), (unsigned)((nu + 31) / 32), (unsigned)(zsegs * batch));
            if (batch == 1) joseph_forward2_smem_f32<<<grid, 256, shm>>>(dx, dsino, dviews, p, nviews, seglen, vgroup, wcap, spb);
            else joseph_forward2_smem_batch_f32<<<grid, 256, shm>>>(dx, dsino, dviews, p, nviews, seglen, vgroup, wcap, spb, zsegs);
        };
        auto seg4 = [&](int batch) {
            for (int b = 0; b < batch; ++b)
                joseph_forward2_seg4_f32<<<(unsigned)((4 * rays + 255) / 256), 256>>>(dx + b * npix, dsino + b * rays, dviews, p, nviews);
        };
        // split 0: the library's choice (about 8 blocks per multiprocessor, at least 8 views a share).
        auto tile = [&](int batch, int t, int split) {
            const unsigned tiles = (unsigned)(((s.n0 + t - 1) / t) * ((s.n1 + t - 1) / t));
            if (split == 0) {
                const long long want = 8LL * sms, blocks = (long long)tiles * batch;
                split = (int)std::min<long long>(std::max(1, nviews / 8), std::max(1LL, (want + blocks - 1) / blocks));
            }
            CK(cudaMemsetAsync(dsino, 0, rays * batch * 4));
            const dim3 grid(tiles, split, batch);
            if (t == 64) joseph_forward2_tile_f32<<<grid, 256, ft2_smem_bytes(64)>>>(dx, dsino, dr, dw, di, p, split);
            else if (t == 128) joseph_forward2_tile128_f32<<<grid, 256, ft2_smem_bytes(128)>>>(dx, dsino, dr, dw, di, p, split);
            else joseph_forward2_tile16_f32<<<grid, 256, ft2_smem_bytes(16)>>>(dx, dsino, dr, dw, di, p, split);
        };
        printf("== %s: %d x %d, %d views x %d cells\n", s.name, s.n0, s.n1, nviews, nu);
        auto check = [&](const char* name, int batch, const std::function<void()>& f) {
            f(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
            std::vector<float> got(rays * batch);
            CK(cudaMemcpy(got.data(), dsino, rays * batch * 4, cudaMemcpyDeviceToHost));
            const std::vector<float> r(ref.begin(), ref.begin() + rays * batch);
            double axy = 0; for (size_t i = 0; i < rays; ++i) axy += (double)got[i] * hy[i];
            const double t = time_ms(f, reps, 3);
            const Diff d = diff(got, r);
            printf("  %-34s batch %d: %8.4f ms  rel L2 %.2e  max %.2e  adjoint %.2e\n", name, batch, t, d.l2, d.max,
                   std::fabs(axy - xaty) / std::fabs(xaty));
        };
        for (int batch : {1, B}) {
            check("smem slab (production)", batch, [&] { smem(batch); });
            if (batch == 1) check("four threads per ray", batch, [&] { seg4(batch); });
            char nm[64];
            for (int t : {64, 128, 16})
                for (int split : {0, 4, 8, 16, 32}) {
                    if (t != 64 && split != 0) continue;
                    snprintf(nm, sizeof nm, "tile %d, split %s%d", t, split ? "" : "auto ", split);
                    check(nm, batch, [&] { tile(batch, t, split); });
                }
        }
        dev.release();
        CK(cudaFree(dx)); CK(cudaFree(dy)); CK(cudaFree(dsino)); CK(cudaFree(dref)); CK(cudaFree(dadj));
    }
    return 0;
}

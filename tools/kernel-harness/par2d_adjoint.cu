// The 2D parallel-beam transposes on parallel2d_512, the learned primal-dual operator and two odd
// shapes: the production kernels of kernels/ray_joseph.cu (joseph_backward2_lanes_f32 for one
// entry, joseph_backward2_gather_f32 for batches), the superseded broadcast-only lanes kernel and
// the former staging of 128 rays (lanes_variants.cu) and the shared-atomic tile
// kernel of experimental.cu, at batch 1 and 8 and several view splits, each checked against the
// atomic scattering transpose (same products, other order of the additions) and timed with CUDA
// events (median of the repetitions; the weighting kernel where one is needed and any zeroing
// included).
// nvcc -O3 -std=c++17 -fmad=false -arch=sm_90 par2d_adjoint.cu -o par2d_adjoint
#include "../../kernels/ray_joseph.cu"
#include "experimental.cu"
#include "lanes_variants.cu"

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
        std::vector<float> hy = randv(rays * B, 7);
        float *dy, *dc, *dvol, *dref;
        CK(cudaMalloc(&dy, rays * B * 4)); CK(cudaMalloc(&dc, rays * B * 4));
        CK(cudaMalloc(&dvol, npix * B * 4)); CK(cudaMalloc(&dref, npix * B * 4));
        CK(cudaMemcpy(dy, hy.data(), rays * B * 4, cudaMemcpyHostToDevice));
        // reference: the atomic scattering transpose, entry by entry
        CK(cudaMemset(dref, 0, npix * B * 4));
        RayParams pv = p;
        for (int b = 0; b < B; ++b)
            joseph_backward_atomic_f32<<<(unsigned)((rays + 255) / 256), 256>>>(dy + b * rays, dref + b * npix, dviews, pv, nviews);
        CK(cudaDeviceSynchronize());
        std::vector<float> ref(npix * B);
        CK(cudaMemcpy(ref.data(), dref, npix * B * 4, cudaMemcpyDeviceToHost));
        auto weigh = [&](int batch) {
            const unsigned n = (unsigned)(rays * batch);
            joseph_weigh2_f32<<<std::min<unsigned>((n + 255) / 256, sms * 32), 256>>>(dy, dw, dc, n, (unsigned)rays);
        };
        auto tile = [&](int batch) {
            const unsigned tiles = (unsigned)(((s.n0 + 15) / 16) * ((s.n1 + 15) / 16));
            const unsigned long long want = 2ull * 8 * sms, blocks = (unsigned long long)tiles * batch;
            const int max_split = (int)std::min<long long>(16, std::max<long long>(1, nviews / 8));
            int split = (int)std::min<unsigned long long>(max_split, std::max<unsigned long long>(1, (want + blocks - 1) / blocks));
            weigh(batch);
            if (split > 1) CK(cudaMemsetAsync(dvol, 0, npix * batch * 4));
            joseph_backward2_tile_f32<<<dim3(tiles, split, batch), 256>>>(dc, dvol, dr, di, p, split);
        };
        auto gather = [&](int batch, int split) {
            weigh(batch);
            if (split > 1) CK(cudaMemsetAsync(dvol, 0, npix * batch * 4));
            dim3 grid((s.n1 + 15) / 16, (s.n0 + 15) / 16, split);
            joseph_backward2_gather_f32<<<grid, 256>>>(dc, dvol, dr, di, p, split, batch);
        };
        // The lanes kernels form c = w*y themselves (no weighting kernel); variant 0 production,
        // 1 broadcast-only.
        auto lanes = [&](int batch, int split, int variant) {
            if (split > 1) CK(cudaMemsetAsync(dvol, 0, npix * batch * 4));
            const unsigned tiles = (unsigned)(((s.n0 + 31) / 32) * ((s.n1 + 31) / 32));
            const dim3 grid(tiles, split, batch);
            if (variant == 1) joseph_backward2_lanes_bcast_f32<<<grid, 256>>>(dy, dw, dvol, dr, di, p, split);
            else if (variant == 2) joseph_backward2_lanes_s128_f32<<<grid, 256>>>(dy, dw, dvol, dr, di, p, split);
            else joseph_backward2_lanes_f32<<<grid, 256>>>(dy, dw, dvol, dr, di, p, split);
        };
        printf("== %s: %d x %d, %d views x %d cells\n", s.name, s.n0, s.n1, nviews, nu);
        auto check = [&](const char* name, int batch, const std::function<void()>& f) {
            f(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
            std::vector<float> got(npix * batch);
            CK(cudaMemcpy(got.data(), dvol, npix * batch * 4, cudaMemcpyDeviceToHost));
            std::vector<float> r(ref.begin(), ref.begin() + npix * batch);
            const double t = time_ms(f, reps, 3);
            const Diff d = diff(got, r);
            printf("  %-28s batch %d: %8.4f ms  rel L2 %.2e  max %.2e\n", name, batch, t, d.l2, d.max);
        };
        for (int batch : {1, 8}) {
            check("tile (superseded)", batch, [&] { tile(batch); });
            for (int split : {1, 2, 4, 8, 16}) {
                char nm[64];
                const char* names[3] = {"lanes", "lanes broadcast-only", "lanes stage 128 (before)"};
                for (int variant = 0; variant < 3; ++variant) {
                    snprintf(nm, sizeof nm, "%s split %d", names[variant], split);
                    check(nm, batch, [&] { lanes(batch, split, variant); });
                }
                if (batch > 1 && split <= 4) {
                    snprintf(nm, sizeof nm, "gather split %d", split);
                    check(nm, batch, [&] { gather(batch, split); });
                }
            }
        }
        dev.release();
        CK(cudaFree(dy)); CK(cudaFree(dc)); CK(cudaFree(dvol)); CK(cudaFree(dref));
    }
    return 0;
}

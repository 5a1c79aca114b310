// Stand-alone CUDA harness for kernels/ray_joseph.cu: times the forward and transpose variants on
// the benchmark geometries and checks them against each other (bit equality of the forwards, the
// gather against the atomic transpose, and the adjoint identity <Ax, y> = <x, A^T y>).
// Build on a CUDA machine: nvcc -O3 -std=c++17 -fmad=false -arch=sm_90 ray_harness.cu -o ray_harness
#include "../../kernels/ray_joseph.cu"
#include "experimental.cu"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "harness_data.h"
#include "harness_time.cuh"


static int g_sms = 132;
static dim3 grid_for_n(unsigned long long n) {
    unsigned long long b = (n + 255) / 256;
    b = std::max(1ULL, std::min(b, (unsigned long long)g_sms * 32));
    return dim3((unsigned)b);
}

struct Case {
    std::string name;
    RayParams p;
    std::vector<double> views;
};

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

static Case par2d(const char* name, int n, int nviews, int nu) {
    Case c; c.name = name;
    memset(&c.p, 0, sizeof(c.p));
    for (int k = 0; k < 2; ++k) { c.p.shape[k] = n; c.p.vmin[k] = -1.0; c.p.h[k] = 2.0 / n; }
    c.p.shape[2] = 1; c.p.vmin[2] = 0; c.p.h[2] = 1;
    c.p.ndim = 2; c.p.nu = nu; c.p.nv = 1; c.p.nviews = nviews; c.p.parallel = 1;
    const double du = 2 * sqrt(2.0) / nu;
    for (int k = 0; k < nviews; ++k) {
        const double th = M_PI * (k + 0.5) / nviews, cs = cos(th), sn = sin(th);
        double v[12] = {-sn, cs, 0, 0, 0, 0, du * cs, du * sn, 0, 0, 0, 0};
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
    std::vector<Case> cases;
    std::string only = argc > 1 ? argv[1] : "";
    cases.push_back(par2d("parallel2d_512", 512, 512, 727));
    cases.push_back(cone("cone_64", 64, 60, 96, 64));
    cases.push_back(cone("cone_256", 256, 360, 384, 256));
    cases.push_back(cone("cone_512", 512, 512, 768, 512));
    const int reps = argc > 2 ? atoi(argv[2]) : 3;
    const int chunk_cap = argc > 3 ? atoi(argv[3]) : 32;
    for (auto& c : cases) {
        if (!only.empty() && only != "all" && c.name.find(only) == std::string::npos) continue;
        const size_t nvol = (size_t)c.p.shape[0] * c.p.shape[1] * c.p.shape[2];
        const size_t per_view = (size_t)c.p.nu * c.p.nv, nsino = per_view * c.p.nviews;
        auto x = randv(nvol, 1), y = randv(nsino, 2);
        float *dx, *dy, *dsino, *dvol; double* dviews;
        CK(cudaMalloc(&dx, nvol * 4)); CK(cudaMalloc(&dvol, nvol * 4));
        CK(cudaMalloc(&dy, nsino * 4)); CK(cudaMalloc(&dsino, nsino * 4));
        CK(cudaMalloc(&dviews, c.views.size() * 8));
        CK(cudaMemcpy(dx, x.data(), nvol * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dy, y.data(), nsino * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dviews, c.views.data(), c.views.size() * 8, cudaMemcpyHostToDevice));
        RayParams p = c.p; p.first_view = 0; int count = p.nviews;
        dim3 gr = grid_for_n(nsino), gv = grid_for_n(nvol);
        // forward, old
        auto f_old = [&] { joseph_forward_f32<<<gr, 256>>>(dx, dsino, dviews, p, count); };
        f_old(); CK(cudaDeviceSynchronize());
        double t_fold = time_ms(f_old, reps);
        std::vector<float> s_old(nsino); CK(cudaMemcpy(s_old.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
        auto f_new = [&] {
            if (p.ndim == 2) joseph_forward2_i32_f32<<<gr, 256>>>(dx, dsino, dviews, p, count);
            else joseph_forward3_i32_f32<<<gr, 256>>>(dx, dsino, dviews, p, count);
        };
        f_new(); CK(cudaDeviceSynchronize());
        double t_fnew = time_ms(f_new, reps);
        std::vector<float> s_new(nsino); CK(cudaMemcpy(s_new.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
        size_t ndiff = 0; for (size_t i = 0; i < nsino; ++i) ndiff += s_old[i] != s_new[i];
        printf("%s forward: old %.3f ms, i32 %.3f ms, differing values %zu\n", c.name.c_str(), t_fold, t_fnew, ndiff);
        if (p.ndim == 2) {
            std::vector<float> s_seg(nsino);
            auto f4 = [&] { joseph_forward2_seg4_f32<<<grid_for_n(nsino * 4), 256>>>(dx, dsino, dviews, p, count); };
            f4(); CK(cudaDeviceSynchronize());
            double t4 = time_ms(f4, reps);
            CK(cudaMemcpy(s_seg.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
            double r4 = rel(s_seg, s_old);
            auto f8 = [&] { joseph_forward2_seg8_f32<<<grid_for_n(nsino * 8), 256>>>(dx, dsino, dviews, p, count); };
            f8(); CK(cudaDeviceSynchronize());
            double t8 = time_ms(f8, reps);
            CK(cudaMemcpy(s_seg.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
            double r8 = rel(s_seg, s_old);
            printf("%s forward: seg4 %.3f ms (rel %.2e), seg8 %.3f ms (rel %.2e)\n", c.name.c_str(), t4, r4, t8, r8);
            for (int sl : {32, 64, 128, 256}) {
                const int nseg = (512 + sl - 1) / sl;
                auto fa = [&] {
                    CK(cudaMemsetAsync(dsino, 0, nsino * 4));
                    joseph_forward2_segatomic_f32<<<grid_for_n(nsino * nseg), 256>>>(dx, dsino, dviews, p, count, sl);
                };
                fa(); CK(cudaDeviceSynchronize());
                double ta = time_ms(fa, reps);
                CK(cudaMemcpy(s_seg.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
                printf("%s forward: segments of %d planes with atomics %.3f ms (rel %.2e)\n", c.name.c_str(), sl, ta, rel(s_seg, s_old));
            }
        }
        // transpose, atomic
        auto b_at = [&] {
            CK(cudaMemsetAsync(dvol, 0, nvol * 4));
            joseph_backward_atomic_f32<<<gr, 256>>>(dy, dvol, dviews, p, count);
        };
        b_at(); CK(cudaDeviceSynchronize());
        double t_bat = time_ms(b_at, reps);
        std::vector<float> v_at(nvol); CK(cudaMemcpy(v_at.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
        {
            auto b_i32 = [&] {
                CK(cudaMemsetAsync(dvol, 0, nvol * 4));
                if (p.ndim == 2) joseph_backward2_i32_f32<<<gr, 256>>>(dy, dvol, dviews, p, count);
                else joseph_backward3_i32_f32<<<gr, 256>>>(dy, dvol, dviews, p, count);
            };
            b_i32(); CK(cudaDeviceSynchronize());
            double t = time_ms(b_i32, reps);
            std::vector<float> v_i(nvol); CK(cudaMemcpy(v_i.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
            printf("%s transpose: atomic i32 %.3f ms, vs atomic rel %.3e\n", c.name.c_str(), t, rel(v_i, v_at));
        }
        if (p.ndim == 2) {
            // forward through a shared-memory slab (experimental.cu): a few block shapes; spb 0 = one
            // block over all segments of its rays (plain stores), otherwise atomics into a zeroed sinogram
            struct SmemCfg { int vgroup, seglen, wcap, spb; };
            const SmemCfg cfgs[] = {{8, 64, 80, 0}, {4, 64, 104, 0}, {8, 32, 80, 0}, {8, 128, 80, 0}, {8, 64, 80, 1}, {8, 64, 80, 2}};
            const int nmax = (int)std::max(p.shape[0], p.shape[1]);
            const double r_at = dot(x, v_at);
            std::vector<float> s_sm(nsino);
            for (const SmemCfg& k : cfgs) {
                const int nseg = (nmax + k.seglen - 1) / k.seglen;
                const int spb = k.spb > 0 ? k.spb : nseg;
                const int nray = 256 / k.vgroup;
                const dim3 gsm((unsigned)((count + k.vgroup - 1) / k.vgroup), (unsigned)((p.nu + nray - 1) / nray),
                               (unsigned)((nseg + spb - 1) / spb));
                const size_t shm = ((size_t)k.seglen * (k.wcap + 4) + k.seglen) * 4;
                CK(cudaFuncSetAttribute(joseph_forward2_smem_f32, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
                const bool atomics = gsm.z > 1;
                auto fsm = [&] {
                    if (atomics) CK(cudaMemsetAsync(dsino, 0, nsino * 4));
                    joseph_forward2_smem_f32<<<gsm, 256, shm>>>(dx, dsino, dviews, p, count, k.seglen, k.vgroup, k.wcap, spb);
                };
                CK(cudaMemset(dsino, 0, nsino * 4));
                fsm(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                double t = time_ms(fsm, reps);
                CK(cudaMemcpy(s_sm.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
                size_t nd = 0; for (size_t i = 0; i < nsino; ++i) nd += s_sm[i] != s_new[i];
                const double l = dot(s_sm, y);
                printf("%s forward: smem slab, %d views x %d cells per block, %d planes x %d cells staged, %d of %d segments per block%s: %.3f ms,"
                       " vs i32 rel %.2e (%zu values differ), adjoint rel err vs atomic transpose %.3e\n",
                       c.name.c_str(), k.vgroup, nray, k.seglen, k.wcap, spb, nseg, atomics ? " (atomics)" : "", t,
                       rel(s_sm, s_new), nd, fabs(l - r_at) / fabs(l));
                fflush(stdout);
            }
        }
        if (p.ndim == 3) {
            for (int sl : {8, 16, 32, 64}) {
                auto fs = [&] {
                    CK(cudaMemsetAsync(dsino, 0, nsino * 4));
                    joseph_forward3_seg_f32<<<gr, 256>>>(dx, dsino, dviews, p, count, sl);
                };
                fs(); CK(cudaDeviceSynchronize());
                double tf = time_ms(fs, reps);
                std::vector<float> s_s(nsino); CK(cudaMemcpy(s_s.data(), dsino, nsino * 4, cudaMemcpyDeviceToHost));
                auto bs = [&] {
                    CK(cudaMemsetAsync(dvol, 0, nvol * 4));
                    joseph_backward3_seg_f32<<<gr, 256>>>(dy, dvol, dviews, p, count, sl);
                };
                bs(); CK(cudaDeviceSynchronize());
                double tb = time_ms(bs, reps);
                std::vector<float> v_s(nvol); CK(cudaMemcpy(v_s.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                const double l = dot(s_s, y), r_s = dot(x, v_s);
                printf("%s segments of %d planes: forward %.3f ms (vs i32 rel %.2e), transpose %.3f ms (vs atomic rel %.2e), adjoint rel err %.3e\n",
                       c.name.c_str(), sl, tf, rel(s_s, s_new), tb, rel(v_s, v_at), fabs(l - r_s) / fabs(l));
                fflush(stdout);
                // the same segments with warp aggregation of the taps that neighbouring rows share
                auto bw = [&] {
                    CK(cudaMemsetAsync(dvol, 0, nvol * 4));
                    joseph_backward3_seg_warp_f32<<<gr, 256>>>(dy, dvol, dviews, p, count, sl);
                };
                bw(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                double tw = time_ms(bw, reps);
                std::vector<float> v_w(nvol); CK(cudaMemcpy(v_w.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                const double l_w = dot(s_new, y), r_w = dot(x, v_w);
                unsigned long long* dstats;
                CK(cudaMalloc(&dstats, 2 * sizeof(unsigned long long)));
                CK(cudaMemset(dstats, 0, 2 * sizeof(unsigned long long)));
                CK(cudaMemset(dvol, 0, nvol * 4));
                joseph_backward3_seg_warp_count_f32<<<gr, 256>>>(dy, dvol, dviews, p, count, sl, dstats);
                CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
                unsigned long long cnt[2];
                CK(cudaMemcpy(cnt, dstats, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
                CK(cudaFree(dstats));
                std::vector<float> v_wc(nvol); CK(cudaMemcpy(v_wc.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                const unsigned long long all_taps = cnt[0] + cnt[1];
                printf("%s segments of %d planes: warp-aggregated transpose %.3f ms (vs atomic rel %.2e, counting variant rel %.2e),"
                       " adjoint rel err vs i32 forward %.3e; atomics issued %llu, saved %llu (%.1f%% of %llu taps)\n",
                       c.name.c_str(), sl, tw, rel(v_w, v_at), rel(v_wc, v_at), fabs(l_w - r_w) / fabs(l_w), cnt[0], cnt[1],
                       all_taps ? 100.0 * (double)cnt[1] / (double)all_taps : 0.0, all_taps);
                fflush(stdout);
            }
        }
        if (getenv("SKIP_COLS")) goto after_cols;
        // transpose, column gather
        if (p.ndim == 3) {
            const int gchunk = std::min(chunk_cap, count);
            float4 *ucol4, *rays4;
            CK(cudaMalloc(&ucol4, (size_t)gchunk * p.nu * 16)); CK(cudaMalloc(&rays4, (size_t)gchunk * per_view * 16));
            const unsigned long long ncols = (unsigned long long)p.shape[0] * p.shape[1];
            const int nz = (int)p.shape[2];
            auto b_col = [&] {
                for (int v0 = 0; v0 < count; v0 += gchunk) {
                    const int n = std::min(gchunk, count - v0);
                    RayParams q = p; q.first_view = v0;
                    joseph_column_table_f32<<<grid_for_n((size_t)n * per_view), 256>>>(dy, dviews, q, n, ucol4, rays4);
                    dim3 g((unsigned)std::min<unsigned long long>((ncols * 32 + 255) / 256, (unsigned long long)g_sms * 64));
                    if (nz <= 256) joseph_gather_columns8_f32<<<g, 256>>>(dvol, dviews, q, n, ucol4, rays4, v0 > 0);
                    else if (nz <= 512) joseph_gather_columns16_f32<<<g, 256>>>(dvol, dviews, q, n, ucol4, rays4, v0 > 0);
                    else joseph_gather_columns32_f32<<<g, 256>>>(dvol, dviews, q, n, ucol4, rays4, v0 > 0);
                }
            };
            b_col(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
            double t = time_ms(b_col, reps);
            std::vector<float> v_c(nvol); CK(cudaMemcpy(v_c.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
            const double l = dot(s_new, y), r_c = dot(x, v_c);
            printf("%s transpose: column gather %.3f ms (chunk %d), vs atomic rel %.3e, adjoint rel err %.3e\n",
                   c.name.c_str(), t, gchunk, rel(v_c, v_at), fabs(l - r_c) / fabs(l));
            fflush(stdout);
            CK(cudaFree(ucol4)); CK(cudaFree(rays4));
        }
after_cols:
        if (getenv("SKIP_TILES")) goto after_tiles;
        // transpose, tiles
        {
            const int tchunk = std::min(chunk_cap, count);
            RayEntry* table;
            CK(cudaMalloc(&table, (size_t)tchunk * per_view * sizeof(RayEntry)));
            const int T[3] = {p.ndim == 2 ? 64 : 16, p.ndim == 2 ? 64 : 16, p.ndim == 2 ? 1 : 32};
            unsigned long long ntiles = 1;
            for (int k = 0; k < 3; ++k) ntiles *= (p.shape[k] + T[k] - 1) / T[k];
            const int groups_env = getenv("GROUPS") ? atoi(getenv("GROUPS")) : 0;
            auto b_tile = [&] {
                CK(cudaMemsetAsync(dvol, 0, nvol * 4));
                for (int v0 = 0; v0 < count; v0 += tchunk) {
                    const int n = std::min(tchunk, count - v0);
                    RayParams q = p; q.first_view = v0;
                    joseph_ray_table_f32<<<grid_for_n((size_t)n * per_view), 256>>>(dy, dviews, q, n, table);
                    int groups = groups_env > 0 ? groups_env : (int)std::max<long long>(1, std::min<long long>(n, (8LL * g_sms * 4 + ntiles - 1) / ntiles));
                    dim3 grid((unsigned)ntiles, (unsigned)groups);
                    if (p.ndim == 2) joseph_tile2_f32<<<grid, 256>>>(dvol, dviews, q, n, table);
                    else joseph_tile3_f32<<<grid, 256>>>(dvol, dviews, q, n, table);
                }
            };
            b_tile(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
            double t = time_ms(b_tile, reps);
            std::vector<float> v_t(nvol); CK(cudaMemcpy(v_t.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
            const double l = dot(s_new, y), r_t = dot(x, v_t);
            printf("%s transpose: tiles %.3f ms (chunk %d), vs atomic rel %.3e, adjoint rel err %.3e\n",
                   c.name.c_str(), t, tchunk, rel(v_t, v_at), fabs(l - r_t) / fabs(l));
            fflush(stdout);
            CK(cudaFree(table));
        }
after_tiles:
        if (getenv("SKIP_GATHER")) { CK(cudaFree(dx)); CK(cudaFree(dy)); CK(cudaFree(dsino)); CK(cudaFree(dvol)); CK(cudaFree(dviews)); continue; }
        // transpose, gather
        const int chunk = std::min(chunk_cap, count);
        float4* ucol; float2* rayc; float* yw; int* flags;
        CK(cudaMalloc(&ucol, (size_t)chunk * p.nu * 16)); CK(cudaMalloc(&rayc, (size_t)chunk * per_view * 8));
        CK(cudaMalloc(&yw, (size_t)chunk * per_view * 4)); CK(cudaMalloc(&flags, chunk * 4));
        double t_table = 0;
        auto b_ga = [&] {
            for (int v0 = 0; v0 < count; v0 += chunk) {
                const int n = std::min(chunk, count - v0);
                RayParams q = p; q.first_view = v0;
                CK(cudaMemsetAsync(flags, 0, chunk * 4));
                joseph_gather_table_f32<<<grid_for_n((size_t)n * per_view), 256>>>(dy, dviews, q, n, ucol, rayc, yw, flags);
                if (p.ndim == 2) joseph_gather2_f32<<<gv, 256>>>(dvol, dviews, q, n, ucol, rayc, yw, flags, v0 > 0);
                else joseph_gather3_f32<<<gv, 256>>>(dvol, dviews, q, n, ucol, rayc, yw, flags, v0 > 0);
            }
        };
        b_ga(); CK(cudaDeviceSynchronize());
        double t_bga = time_ms(b_ga, reps);
        {
            auto tab = [&] {
                for (int v0 = 0; v0 < count; v0 += chunk) {
                    const int n = std::min(chunk, count - v0);
                    RayParams q = p; q.first_view = v0;
                    joseph_gather_table_f32<<<grid_for_n((size_t)n * per_view), 256>>>(dy, dviews, q, n, ucol, rayc, yw, flags);
                }
            };
            t_table = time_ms(tab, reps);
        }
        std::vector<float> v_ga(nvol); CK(cudaMemcpy(v_ga.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
        if (p.ndim == 3) {
            for (int cc : {8, 16, 32}) {
                if (cc > chunk) break;
                auto b_cs = [&] {
                    for (int v0 = 0; v0 < count; v0 += cc) {
                        const int n = std::min(cc, count - v0);
                        RayParams q = p; q.first_view = v0;
                        CK(cudaMemsetAsync(flags, 0, chunk * 4));
                        joseph_gather_table_f32<<<grid_for_n((size_t)n * per_view), 256>>>(dy, dviews, q, n, ucol, rayc, yw, flags);
                        const unsigned long long ncols = (unsigned long long)p.shape[0] * p.shape[1];
                        joseph_colscatter3_f32<<<(unsigned)std::min<unsigned long long>(ncols, (unsigned long long)g_sms * 16), 256, p.shape[2] * 4>>>(dvol, dviews, q, n, ucol, rayc, yw, flags, v0 > 0);
                    }
                };
                b_cs(); CK(cudaDeviceSynchronize());
                double t = time_ms(b_cs, reps);
                std::vector<float> v_cs(nvol); CK(cudaMemcpy(v_cs.data(), dvol, nvol * 4, cudaMemcpyDeviceToHost));
                const double lhs2 = dot(s_new, y), r_cs = dot(x, v_cs);
                printf("%s transpose: column scatter %.3f ms (chunk %d), vs atomic rel %.3e, adjoint rel err %.3e\n",
                       c.name.c_str(), t, cc, rel(v_cs, v_at), fabs(lhs2 - r_cs) / fabs(lhs2));
                fflush(stdout);
            }
        }
        const double lhs = dot(s_new, y), r_at = dot(x, v_at), r_ga = dot(x, v_ga);
        printf("%s transpose: atomic %.3f ms, gather %.3f ms (tables %.3f ms), chunk %d; gather vs atomic rel %.3e;"
               " adjoint rel err atomic %.3e gather %.3e\n",
               c.name.c_str(), t_bat, t_bga, t_table, chunk, rel(v_ga, v_at), fabs(lhs - r_at) / fabs(lhs), fabs(lhs - r_ga) / fabs(lhs));
        fflush(stdout);
        CK(cudaFree(ucol)); CK(cudaFree(rayc)); CK(cudaFree(yw)); CK(cudaFree(flags));
        CK(cudaFree(dx)); CK(cudaFree(dy)); CK(cudaFree(dsino)); CK(cudaFree(dvol)); CK(cudaFree(dviews));
    }
    return 0;
}

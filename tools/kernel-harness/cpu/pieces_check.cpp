// Runs the ray-transform kernels of kernels/ray_joseph.cu on the CPU (cuda_cpu.h) at small sizes:
// whole volumes against a reference copy of the kernels (e.g. the last commit's), and a transform
// split into slabs along axis 0 against the whole one, in the whole-grid frame of the pieces
// (kernels/ray_joseph.cu) and in the slab frame the reference copy may use; for 3D also in slabs
// along axis 2 whose chunked kernels launch only the detector rows that can see them (the bands of
// src/tomo/geometry/footprint.rs, repeated here). Build and run with
// tools/kernel-harness/cpu/run.sh.
#include "cuda_cpu.h"

#include <cstdio>
#include "harness_data.h"
#include <string>

struct Geo {
    std::string name;
    long long shape[3];
    double vmin[3], h[3];
    int ndim, nu, nv, parallel;
    std::vector<double> views;
    // A curved detector (the current kernels only): 1 cylindrical, 2 spherical, with 26 doubles
    // per view (kernels/ray_joseph.cu: curved_pixel).
    int detector = 0;
    double radius = 0.0, lat0 = 0.0;
    size_t stride() const { return detector ? 26 : 12; }
    size_t nviews() const { return views.size() / stride(); }
};

namespace cur {
typedef ::Geo Geo;
#include "k_cur.cu"
#include "lanes_variants_cur.cu"
#define WITH_LO3
#define CURRENT_KERNELS
#include "ops.inc"
#undef WITH_LO3
#undef CURRENT_KERNELS
}  // namespace cur

namespace ref {
typedef ::Geo Geo;
#include "k_ref.cu"
#if defined(REF_HAS_LO3)
#define WITH_LO3
#elif defined(REF_HAS_LO0)
#define WITH_LO0
#endif
#ifdef REF_LANES_FUSED
#define LANES_FUSED
#endif
#include "ops.inc"
#undef WITH_LO0
#undef WITH_LO3
#undef LANES_FUSED
}  // namespace ref

static Geo grid(const char* name, int ndim, std::vector<int> n, std::vector<double> lo, std::vector<double> hi) {
    Geo g;
    g.name = name;
    g.ndim = ndim;
    for (int k = 0; k < 3; ++k) {
        g.shape[k] = k < ndim ? n[k] : 1;
        g.vmin[k] = k < ndim ? lo[k] : 0.0;
        g.h[k] = k < ndim ? (hi[k] - lo[k]) / n[k] : 1.0;
    }
    return g;
}

static Geo par2d(int n0, int n1, int views, int nu, double span) {
    Geo g = grid("parallel 2D", 2, {n0, n1}, {-1.0, -0.9}, {1.0, 0.9});
    g.nu = nu; g.nv = 1; g.parallel = 1;
    for (int k = 0; k < views; ++k) {
        const double th = M_PI * (k + 0.5) / views, c = cos(th), s = sin(th), du = span / nu;
        double v[12] = {-s, c, 0, 0.01, -0.02, 0, du * c, du * s, 0, 0, 0, 0};
        g.views.insert(g.views.end(), v, v + 12);
    }
    return g;
}

static Geo fan2d(int n0, int n1, int views, int nu) {
    Geo g = grid("fan 2D", 2, {n0, n1}, {-1.0, -1.0}, {1.0, 1.0});
    g.nu = nu; g.nv = 1; g.parallel = 0;
    for (int k = 0; k < views; ++k) {
        const double th = 2 * M_PI * (k + 0.3) / views, c = cos(th), s = sin(th), du = 6.0 / nu;
        double v[12] = {3 * s, -3 * c, 0, -2 * s, 2 * c, 0, du * c, du * s, 0, 0, 0, 0};
        g.views.insert(g.views.end(), v, v + 12);
    }
    return g;
}

static Geo cone(const char* name, std::vector<int> n, int views, int nu, int nv, double tilt, double height = 4.0) {
    Geo g = grid(name, 3, n, {-1.0, -0.9, -1.1}, {1.0, 0.9, 1.1});
    g.nu = nu; g.nv = nv; g.parallel = 0;
    for (int k = 0; k < views; ++k) {
        const double th = 2 * M_PI * (k + 0.5) / views, c = cos(th), s = sin(th);
        const double du = 5.0 / nu, dv = height / nv;
        double v[12] = {4 * s, -4 * c, 0.05, -3 * s, 3 * c, 0, du * c, du * s, du * tilt, -dv * tilt * s, dv * tilt * c, dv};
        g.views.insert(g.views.end(), v, v + 12);
    }
    return g;
}

static Geo par3d(std::vector<int> n, int views, int nu, int nv) {
    Geo g = grid("parallel 3D", 3, n, {-1.0, -1.0, -1.0}, {1.0, 1.0, 1.0});
    g.nu = nu; g.nv = nv; g.parallel = 1;
    for (int k = 0; k < views; ++k) {
        const double th = M_PI * (k + 0.5) / views, c = cos(th), s = sin(th);
        const double du = 3.0 / nu, dv = 2.6 / nv;
        double v[12] = {-s, c, 0, 0, 0, 0.01, du * c, du * s, 0, 0, 0, dv};
        g.views.insert(g.views.end(), v, v + 12);
    }
    return g;
}

// A circular cone scan with a cylindrical (detector 1) or spherical (2) detector of radius R about
// the source (the frame at the centre pixel, as VecGeometry::with_detector makes it): source at
// distance 4, centre pixel at distance 3 beyond the axis, arc pitches lu, lv; `fan` for the 2D arc.
static Geo curved(const char* name, int detector, bool fan, std::vector<int> n, int views, int nu, int nv) {
    Geo g = fan ? grid(name, 2, {n[0], n[1]}, {-1.0, -1.0}, {1.0, 1.0})
                : grid(name, 3, n, {-1.0, -0.9, -1.1}, {1.0, 0.9, 1.1});
    g.nu = nu; g.nv = fan ? 1 : nv; g.parallel = 0;
    g.detector = detector; g.radius = 7.0; g.lat0 = 0.0;
    const double lu = 5.0 / nu, lv = fan ? 0.0 : 3.0 / nv;
    for (int k = 0; k < views; ++k) {
        const double th = 2 * M_PI * (k + 0.5) / views, c = cos(th), s = sin(th);
        // src, det_center, det_u (pitch-scaled tangent), det_v; then the frame: centre, e_u, e_v,
        // outward normal (away from the source), pitches.
        const double v[26] = {4 * s, -4 * c, 0.05, -3 * s, 3 * c, 0, lu * c, lu * s, 0, 0, 0, lv,
                              -3 * s, 3 * c, 0, c, s, 0, 0, 0, 1, -s, c, 0, lu, lv};
        g.views.insert(g.views.end(), v, v + 26);
    }
    return g;
}

// The detector rows that can see the box [lo, hi] (world coordinates) in any view of `g`, widened by
// a row each side: src/tomo/geometry/footprint.rs (VecGeometry::rows_through) for the stand-in.
// Returns {0, nv} where the projection does not apply.
static std::pair<int, int> rows_through(const Geo& g, const double lo[3], const double hi[3]) {
    const std::pair<int, int> all = {0, g.nv};
    auto dot = [](const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; };
    double mn = INFINITY, mx = -INFINITY;
    if (g.detector) return all;  // as VecGeometry::rows_through for curved detectors
    for (size_t v = 0; v < g.nviews(); ++v) {
        const double* w = g.views.data() + 12 * v;
        const double *src = w, *c = w + 3, *du = w + 6, *dv = w + 9;
        const double n[3] = {du[1] * dv[2] - du[2] * dv[1], du[2] * dv[0] - du[0] * dv[2], du[0] * dv[1] - du[1] * dv[0]};
        const double uu = dot(du, du), uv = dot(du, dv), vv = dot(dv, dv), det = uu * vv - uv * uv;
        if (!(std::fabs(det) > 1e-300)) return all;
        for (int corner = 0; corner < 8; ++corner) {
            double p[3], q[3];
            for (int k = 0; k < 3; ++k) p[k] = (corner >> k & 1) ? hi[k] : lo[k];
            if (g.parallel) {
                const double dn = dot(src, n);
                if (!(std::fabs(dn) > 1e-300)) return all;
                const double cp[3] = {c[0] - p[0], c[1] - p[1], c[2] - p[2]};
                const double t = dot(cp, n) / dn;
                for (int k = 0; k < 3; ++k) q[k] = p[k] + t * src[k];
            } else {
                const double ps[3] = {p[0] - src[0], p[1] - src[1], p[2] - src[2]};
                const double cs[3] = {c[0] - src[0], c[1] - src[1], c[2] - src[2]};
                const double to_p = dot(ps, n), to_det = dot(cs, n), lambda = to_det / to_p;
                if (!(lambda > 0 && std::isfinite(lambda) && to_p * to_det > 0)) return all;
                for (int k = 0; k < 3; ++k) q[k] = src[k] + lambda * ps[k];
            }
            const double d[3] = {q[0] - c[0], q[1] - c[1], q[2] - c[2]};
            const double wu = dot(d, du), wv = dot(d, dv);
            const double row = (uu * wv - uv * wu) / det + 0.5 * (g.nv - 1.0);
            if (!std::isfinite(row)) return all;
            mn = std::min(mn, row);
            mx = std::max(mx, row);
        }
    }
    const double first = std::max(0.0, std::ceil(mn - 1.0)), last = std::min(g.nv - 1.0, std::floor(mx + 1.0));
    if (last < first) return {0, 0};
    return {(int)first, (int)last + 1};
}

// The transform in slabs along axis 2 (`slabs`, cell ranges), each piece's chunked kernels over the
// rows that can see its slab (widened by a cell each side), against the whole one (`sc`, `vc`):
// the slab gathered from the volume and the transpose scattered back, as src/tomo/cuda_pieces.rs
// does. Returns the worst relative L2 of the forward and the transpose.
static std::pair<double, double> slabs_along_axis2(const Geo& g, const std::vector<float>& x, const std::vector<float>& y,
                                                   const std::vector<float>& sc, const std::vector<float>& vc,
                                                   const std::vector<std::pair<int, int>>& slabs, int* launched) {
    const int n0 = (int)g.shape[0], n1 = (int)g.shape[1], n2 = (int)g.shape[2];
    const size_t nsino = sc.size();
    std::vector<float> fsum(nsino, 0.0f), adj(vc.size(), 0.0f), part(nsino);
    *launched = 0;
    for (auto [a, b] : slabs) {
        const int t = b - a;
        std::vector<float> xs((size_t)n0 * n1 * t), vs(xs.size());
        for (size_t r = 0; r < (size_t)n0 * n1; ++r)
            std::copy(x.begin() + r * n2 + a, x.begin() + r * n2 + b, xs.begin() + r * t);
        double lo[3], hi[3];
        for (int k = 0; k < 3; ++k) {
            const int c0 = k == 2 ? a : 0, c1 = k == 2 ? b : (int)g.shape[k];
            lo[k] = g.vmin[k] + (c0 - 1.0) * g.h[k];
            hi[k] = g.vmin[k] + (c1 + 1.0) * g.h[k];
        }
        const auto band = rows_through(g, lo, hi);
        *launched += band.second - band.first;
        cur::RayParams q = cur::params_box(g, 2, a, t, band.first, band.second - band.first);
        if (band.second > band.first) {
            cur::forward(q, g.views.data(), xs.data(), part.data(), cur::Fwd::Production);
            cur::transpose(q, g.views.data(), y.data(), vs.data(), cur::Fwd::Production);
        } else {  // no ray sees the slab (src/tomo/cuda.rs: an unseen piece)
            std::fill(part.begin(), part.end(), 0.0f);
            std::fill(vs.begin(), vs.end(), 0.0f);
        }
        for (size_t i = 0; i < nsino; ++i) fsum[i] += part[i];
        for (size_t r = 0; r < (size_t)n0 * n1; ++r)
            std::copy(vs.begin() + r * t, vs.begin() + (r + 1) * t, adj.begin() + r * n2 + a);
    }
    return {diff(fsum, sc).l2, diff(adj, vc).l2};
}

// A batch of `batch` entries through the batched forward `fwd` and transpose `adj` against one
// entry at a time through the production kernels; prints both differences, true when they are
// within 1e-6.
template <class F, class B>
static bool batch_matches_entries(const cur::RayParams& p, const Geo& g, int batch, F fwd, B adj, const char* what) {
    const size_t nvox = (size_t)(p.shape[0] * p.shape[1] * p.shape[2]), nsino = cur::rays_of(p);
    const std::vector<float> xs = randv(nvox * batch, 13 + batch), ys = randv(nsino * batch, 17 + batch);
    std::vector<float> fb(nsino * batch), fe(nsino * batch), tb(nvox * batch), te(nvox * batch);
    fwd(p, g.views.data(), xs.data(), fb.data(), batch);
    adj(p, g.views.data(), ys.data(), tb.data(), batch);
    for (int e = 0; e < batch; ++e) {
        std::vector<float> xe(xs.begin() + e * nvox, xs.begin() + (e + 1) * nvox), se(nsino), ve(nvox);
        cur::forward(p, g.views.data(), xe.data(), se.data(), cur::Fwd::Production);
        cur::transpose(p, g.views.data(), ys.data() + e * nsino, ve.data(), cur::Fwd::Production);
        std::copy(se.begin(), se.end(), fe.begin() + e * nsino);
        std::copy(ve.begin(), ve.end(), te.begin() + e * nvox);
    }
    const Diff bf = diff(fb, fe), bt = diff(tb, te);
    printf("  batch %d in one launch vs one entry at a time: forward %.1e, %s transpose %.1e\n", batch, bf.l2, what,
           bt.l2);
    return bf.l2 <= 1e-6 && bt.l2 <= 1e-6;
}

// The deterministic transpose (CudaOptions::deterministic: joseph_absmax_f32,
// joseph_backward_fixed_f32, joseph_fixed_to_f32, as src/tomo/cuda.rs launches them) of `y` twice:
// the two results must be the same bits (the stand-in's host threads run in no fixed order, so a
// float-atomic transpose differs between runs), and within 1e-6 of the production transpose `vc`.
static bool fixed_transpose_check(const Geo& g, const std::vector<float>& y, const std::vector<float>& vc) {
    const cur::RayParams p = cur::params(g, 0, (int)g.shape[0]);
    const size_t nvox = vc.size(), nsino = y.size();
    const double hmax = std::max(g.h[0], std::max(g.h[1], g.ndim == 3 ? g.h[2] : 0.0));
    const double bound = 2.0 * (double)nsino * hmax * std::sqrt((double)g.ndim);
    const int chunked = g.ndim == 3 && g.nv >= 32;
    const cur::u64 threads = chunked ? cur::chunked(p) * cur::segments(p, 128) : (cur::u64)nsino * cur::segments(p, 128);
    auto run = [&](std::vector<float>& out) {
        std::vector<unsigned long long> acc(nvox, 0ull);
        unsigned ymax = 0u;
        cpu_cuda::launch(cur::stride_grid(nsino), dim3(256), 0, cur::joseph_absmax_f32, y.data(), (cur::u64)nsino, &ymax);
        cpu_cuda::launch(cur::stride_grid(threads), dim3(256), 0, cur::joseph_backward_fixed_f32, y.data(), acc.data(),
                         g.views.data(), p, p.nviews, 128, chunked, bound, (const unsigned*)&ymax);
        cpu_cuda::launch(cur::stride_grid(nvox), dim3(256), 0, cur::joseph_fixed_to_f32, (const unsigned long long*)acc.data(),
                         out.data(), (cur::u64)nvox, bound, (const unsigned*)&ymax, 0);
    };
    std::vector<float> a(nvox), b(nvox);
    run(a);
    run(b);
    const bool same = std::memcmp(a.data(), b.data(), nvox * sizeof(float)) == 0;
    const Diff d = diff(a, vc);
    printf("  deterministic transpose: two runs %s; vs production %.1e (max %.1e)\n", same ? "bit-identical" : "DIFFER",
           d.l2, d.max);
    bool ok = same && d.l2 <= 1e-6;
    if (g.ndim == 3) {
        // 3D: the profile transpose with fixed-point sums (joseph_backward3_profile_fixed_f32), as
        // src/backend/cuda/ray.rs launches it for volumes with 32-bit indices.
        const cur::u64 pthreads = cur::chunked(p) * cur::segments(p, cur::seglen3);
        auto run_profile = [&](std::vector<float>& out) {
            std::vector<unsigned long long> acc(nvox, 0ull);
            unsigned ymax = 0u;
            cpu_cuda::launch(cur::stride_grid(nsino), dim3(256), 0, cur::joseph_absmax_f32, y.data(), (cur::u64)nsino,
                             &ymax);
            cpu_cuda::launch(cur::stride_grid(pthreads), dim3(256), 0, cur::joseph_backward3_profile_fixed_f32, y.data(),
                             acc.data(), g.views.data(), p, p.nviews, cur::seglen3, bound, (const unsigned*)&ymax);
            cpu_cuda::launch(cur::stride_grid(nvox), dim3(256), 0, cur::joseph_fixed_to_f32,
                             (const unsigned long long*)acc.data(), out.data(), (cur::u64)nvox, bound,
                             (const unsigned*)&ymax, 0);
        };
        std::vector<float> c(nvox), e(nvox);
        run_profile(c);
        run_profile(e);
        const bool psame = std::memcmp(c.data(), e.data(), nvox * sizeof(float)) == 0;
        const Diff pd = diff(c, vc);
        printf("  deterministic profile transpose: two runs %s; vs production %.1e (max %.1e)\n",
               psame ? "bit-identical" : "DIFFER", pd.l2, pd.max);
        ok = ok && psame && pd.l2 <= 1e-6;
        // The packed form (joseph_backward3_profile_packed_f32, two voxels' 32-bit sums per
        // word): its bound is the largest voxel of the transpose of ones, taken from the 64-bit
        // fixed-point profile transpose as src/backend/cuda/ray.rs does.
        std::vector<float> ones(nsino, 1.0f), cov(nvox);
        {
            std::vector<unsigned long long> acc(nvox, 0ull);
            const unsigned one = 0x3f800000u;
            cpu_cuda::launch(cur::stride_grid(pthreads), dim3(256), 0, cur::joseph_backward3_profile_fixed_f32,
                             (const float*)ones.data(), acc.data(), g.views.data(), p, p.nviews, cur::seglen3, bound,
                             &one);
            cpu_cuda::launch(cur::stride_grid(nvox), dim3(256), 0, cur::joseph_fixed_to_f32,
                             (const unsigned long long*)acc.data(), cov.data(), (cur::u64)nvox, bound, &one, 0);
        }
        double cmax = 0.0;
        for (float v : cov) cmax = std::max(cmax, (double)v);
        const double pbound = cmax * (1.0 + 1.0 / 1024.0);
        auto run_packed = [&](std::vector<float>& out) {
            std::vector<unsigned long long> acc((nvox + 1) / 2, 0ull);
            unsigned ymax = 0u;
            cpu_cuda::launch(cur::stride_grid(nsino), dim3(256), 0, cur::joseph_absmax_f32, y.data(), (cur::u64)nsino,
                             &ymax);
            cpu_cuda::launch(cur::stride_grid(pthreads), dim3(256), 0, cur::joseph_backward3_profile_packed_f32,
                             y.data(), acc.data(), g.views.data(), p, p.nviews, cur::seglen3, pbound,
                             (const unsigned*)&ymax);
            cpu_cuda::launch(cur::stride_grid(nvox), dim3(256), 0, cur::joseph_packed_to_f32,
                             (const unsigned long long*)acc.data(), out.data(), (cur::u64)nvox, pbound,
                             (const unsigned*)&ymax, 0);
        };
        std::vector<float> f(nvox), h(nvox);
        run_packed(f);
        run_packed(h);
        const bool ksame = std::memcmp(f.data(), h.data(), nvox * sizeof(float)) == 0;
        const Diff kd = diff(f, vc);
        printf("  deterministic packed transpose: two runs %s; vs production %.1e (max %.1e)\n",
               ksame ? "bit-identical" : "DIFFER", kd.l2, kd.max);
        ok = ok && ksame && kd.l2 <= 1e-6;
    }
    return ok;
}

int main() {
    std::vector<Geo> cases = {
        par2d(40, 36, 24, 50, 3.0),
        par2d(40, 36, 12, 400, 3.0),  // cells far finer than the pixels: the ranged lanes' broadcast path
        par2d(70, 45, 10, 24, 2.8),   // cells coarser than the pixels; 64-pixel tiles cut both axes
        fan2d(33, 29, 18, 40),
        cone("cone 3D", {20, 18, 24}, 10, 30, 32, 0.0),
        cone("cone 3D, tilted detector", {19, 17, 16}, 8, 26, 32, 0.15),
        par3d({16, 20, 24}, 8, 28, 32),
        cone("cone 3D, 20 rows (no chunks)", {14, 12, 10}, 6, 20, 20, 0.0),
        cone("cone 3D, rows coarser than the voxels (lean transpose)", {20, 18, 24}, 10, 30, 32, 0.0, 8.0),
        curved("fan 2D, arc detector", 1, true, {33, 29}, 18, 40, 1),
        curved("cone 3D, cylindrical detector", 1, false, {20, 18, 24}, 10, 30, 32),
        curved("cone 3D, spherical detector", 2, false, {19, 17, 16}, 8, 26, 32),
    };
    bool ok = true;
    double worst_fwd = 0, worst_adj = 0;
    // Second pass: the 3D cases with segments of 4 planes in the current kernels (several
    // segments per ray, most of them pruned before the set-up on a slab).
    for (int pass = 0; pass < 2; ++pass)
    for (const Geo& g : cases) {
        if (pass == 1 && g.ndim != 3) continue;
        // PIECES_ONLY=text: only the cases whose name holds it (a quicker run while developing).
        if (const char* only = getenv("PIECES_ONLY"); only && g.name.find(only) == std::string::npos) continue;
        cur::seglen3 = pass == 0 ? 128 : 4;
        if (pass == 1) printf("-- segments of %d planes:\n", cur::seglen3);
        const int n0 = (int)g.shape[0];
        const size_t slice = (size_t)(g.shape[1] * g.shape[2]), nvox = slice * n0;
        const size_t nsino = g.nviews() * (size_t)g.nu * g.nv;
        const std::vector<float> x = randv(nvox, 3), y = randv(nsino, 5);
        const std::vector<std::pair<int, int>> slabs = {{0, n0 / 4}, {n0 / 4, n0 / 2 + 1}, {n0 / 2 + 1, n0}};
        printf("== %s: %lld x %lld x %lld, %zu views x %d x %d\n", g.name.c_str(), g.shape[0], g.shape[1], g.shape[2],
               g.nviews(), g.nu, g.nv);
        for (auto which : {cur::Fwd::Production, cur::Fwd::Wide}) {
            if (pass == 1 && which == cur::Fwd::Wide) continue;  // the 64-bit kernels have no segments
            const char* wn = which == cur::Fwd::Production ? "production kernels" : "64-bit kernels";
            const auto rw = which == cur::Fwd::Production ? ref::Fwd::Production : ref::Fwd::Wide;
            // whole: current vs reference
            std::vector<float> sc(nsino), sr(nsino), vc(nvox), vr(nvox);
            std::vector<float> xv = x;
            cur::RayParams pc = cur::params(g, 0, n0);
            ref::RayParams pr = ref::params(g, 0, n0);
            cur::forward(pc, g.views.data(), xv.data(), sc.data(), which);
            if (!g.detector) ref::forward(pr, g.views.data(), xv.data(), sr.data(), rw);
            cur::transpose(pc, g.views.data(), y.data(), vc.data(), which);
            if (!g.detector) ref::transpose(pr, g.views.data(), y.data(), vr.data(), rw);
            const Diff wf = diff(sc, sr), wa = diff(vc, vr);
            if (pass == 0 && g.ndim == 3 && g.nv >= 32 && which == cur::Fwd::Production) {
                // The batched chunked forward and profile transpose.
                ok = batch_matches_entries(pc, g, 2, cur::forward3_batch, cur::transpose3_batch, "profile") && ok;
            }
            if (pass == 0 && g.ndim == 3 && which == cur::Fwd::Production) {
                // Which paths of the profile transpose ran (warp-planes), on the whole and on a slab.
                for (auto [a, b] : {std::pair<int, int>{0, n0}, std::pair<int, int>{n0 / 4, n0 / 2 + 1}}) {
                    cur::RayParams q = cur::params(g, a, b - a);
                    std::vector<float> tmp((size_t)(b - a) * slice, 0.0f);
                    unsigned long long stats[2] = {0, 0};
                    cpu_cuda::launch(cur::stride_grid(cur::chunked(q) * cur::segments(q, 128)), dim3(256), 0,
                                     cur::joseph_backward3_profile_count_f32, y.data(), cur::kvol(q, tmp.data()),
                                     g.views.data(), q, q.nviews, 128, stats);
                    printf("  profile transpose on cells [%d, %d): lean warp-planes %llu, other %llu\n", a, b, stats[0], stats[1]);
                }
            }
            const double dot_ax_y = [&] { double s = 0; for (size_t i = 0; i < nsino; ++i) s += (double)sc[i] * y[i]; return s; }();
            const double dot_x_aty = [&] { double s = 0; for (size_t i = 0; i < nvox; ++i) s += (double)x[i] * vc[i]; return s; }();
            if (!g.detector)
            printf("  %s, whole vs reference: forward %.1e (max %.1e), transpose %.1e (max %.1e); "
                   "<Ax,y> - <x,A^T y>: %.1e relative\n",
                   wn, wf.l2, wf.max, wa.l2, wa.max, std::fabs(dot_ax_y - dot_x_aty) / std::fabs(dot_ax_y));
            // The reference copy may not know curved detectors: only its flat cases compare.
            if (!g.detector && (wf.max > 1e-6 || wa.l2 > 1e-6)) ok = false;
            if (g.detector) {
                // Instead: the production kernels against the 64-bit ones, and the adjoint identity.
                std::vector<float> sw(nsino), vw(nvox);
                cur::forward(pc, g.views.data(), xv.data(), sw.data(), cur::Fwd::Wide);
                cur::transpose(pc, g.views.data(), y.data(), vw.data(), cur::Fwd::Wide);
                const Diff cf = diff(sc, sw), ca = diff(vc, vw);
                const double adj = std::fabs(dot_ax_y - dot_x_aty) / std::fabs(dot_ax_y);
                printf("  curved, %s vs 64-bit kernels: forward %.1e (max %.1e), transpose %.1e; "
                       "<Ax,y> - <x,A^T y>: %.1e relative\n", wn, cf.l2, cf.max, ca.l2, adj);
                if (cf.max > 1e-6 || ca.l2 > 1e-6 || adj > 1e-5) ok = false;
            }
            if (pass == 0 && which == cur::Fwd::Production && !(g.parallel && g.ndim == 2)) ok = fixed_transpose_check(g, y, vc) && ok;
            if (g.ndim == 2 && which == cur::Fwd::Production) {
                // The batched forward and scattering transpose (fan beams' batched path).
                ok = batch_matches_entries(pc, g, 3, cur::forward2_batch, cur::transpose_atomic_batch, "scattering") && ok;
            }
            if (g.ndim == 2 && g.parallel && which == cur::Fwd::Production) {
                // The tile forward (tiles of 64 and 16 pixels, views in 1 or 3 shares, a batch of
                // 2) against the production forward: the same taps, other order of the additions.
                for (int tile : {64, 16})
                    for (int split : {1, 3}) {
                        const int batch = 2;
                        std::vector<float> xs(nvox * batch), st(nsino * batch), se(nsino * batch);
                        std::copy(x.begin(), x.end(), xs.begin());
                        const std::vector<float> x2 = randv(nvox, 13);
                        std::copy(x2.begin(), x2.end(), xs.begin() + nvox);
                        cur::forward2_tile(pc, g.views.data(), xs.data(), st.data(), batch, split, tile);
                        for (int e = 0; e < batch; ++e) {
                            std::vector<float> xe(xs.begin() + e * nvox, xs.begin() + (e + 1) * nvox);
                            cur::forward(pc, g.views.data(), xe.data(), se.data() + e * nsino, which);
                        }
                        const Diff dt = diff(st, se);
                        printf("  tile forward, %d-pixel tiles, %d view shares, batch %d, vs production %.1e (max %.1e)\n",
                               tile, split, batch, dt.l2, dt.max);
                        if (!(dt.l2 <= 1e-6 && dt.max <= 1e-6)) ok = false;
                    }
                std::vector<float> vl(nvox), vlr(nvox);
                cur::transpose2_lanes(pc, g.views.data(), y.data(), vl.data(), 2);
                ref::transpose2_lanes(pr, g.views.data(), y.data(), vlr.data(), 2);
                const Diff dl = diff(vl, vc), dlr = diff(vl, vlr);
                printf("  lanes transpose vs atomic %.1e (max %.1e), vs reference lanes %.1e\n", dl.l2, dl.max, dlr.l2);
                if (dl.l2 > 1e-6 || dlr.l2 > 1e-6) ok = false;
                // The superseded broadcast-only kernel gives production's results bit for bit at
                // split 1 (each plane's sum over the same rays in the same order), and to rounding
                // at split 2 (the shares' atomic order).
                for (int split : {1, 2}) {
                    std::vector<float> v0(nvox), v1(nvox);
                    cur::transpose2_lanes(pc, g.views.data(), y.data(), v0.data(), split);
                    cur::transpose2_lanes(pc, g.views.data(), y.data(), v1.data(), split, 1);
                    const Diff db = diff(v1, v0);
                    printf("  lanes, split %d: broadcast-only vs production %.1e (max %.1e)\n", split, db.l2, db.max);
                    if ((split == 1 && db.max != 0.0) || db.l2 > 1e-6) ok = false;
                    std::vector<float> v2(nvox);
                    cur::transpose2_lanes(pc, g.views.data(), y.data(), v2.data(), split, 2);
                    const Diff d64 = diff(v2, v0);
                    printf("  lanes, split %d: staging 128 rays vs production %.1e (max %.1e)\n", split, d64.l2, d64.max);
                    if ((split == 1 && d64.max != 0.0) || d64.l2 > 1e-6) ok = false;
                }
                // A batch of 3 through the gather kernel, views split 2 ways, against the atomic
                // transpose entry by entry.
                const int batch = 3;
                const std::vector<float> ys = randv(nsino * batch, 11);
                std::vector<float> vb(nvox * batch), ve(nvox * batch);
                cur::transpose2_gather(pc, g.views.data(), ys.data(), vb.data(), batch, 2);
                for (int e = 0; e < batch; ++e) {
                    std::vector<float> one(nvox);
                    cur::transpose(pc, g.views.data(), ys.data() + e * nsino, one.data(), which);
                    std::copy(one.begin(), one.end(), ve.begin() + e * nvox);
                }
                const Diff dg = diff(vb, ve);
                printf("  gather transpose, batch %d, vs atomic entry by entry %.1e (max %.1e)\n", batch, dg.l2, dg.max);
                if (dg.l2 > 1e-6) ok = false;
            }
            if (pass == 0 && g.ndim == 3 && which == cur::Fwd::Production) {
                // Slabs along axis 2 with bands of rows: at odd borders (the transpose's scalar
                // path) and at multiples of 4 (its vector path on the slab). Once, with the
                // production segments (the bands do not depend on them).
                const int n2 = (int)g.shape[2];
                const int q4 = n2 / 4 / 4 * 4;
                for (const auto& sl : {std::vector<std::pair<int, int>>{{0, n2 / 4}, {n2 / 4, n2 / 2 + 1}, {n2 / 2 + 1, n2}},
                                       std::vector<std::pair<int, int>>{{0, q4}, {q4, 2 * q4}, {2 * q4, n2}}}) {
                    if (sl[0].second <= 0 || sl[1].second <= sl[1].first) continue;
                    int launched = 0;
                    const auto [ef, ea] = slabs_along_axis2(g, x, y, sc, vc, sl, &launched);
                    printf("  %d slabs along axis 2 [%d, %d, %d, %d) vs whole: forward %.1e, transpose %.1e (%d of %d rows "
                           "launched)\n",
                           (int)sl.size(), sl[0].first, sl[1].first, sl[2].first, sl[2].second, ef, ea, launched,
                           (int)sl.size() * g.nv);
                    worst_fwd = std::max(worst_fwd, ef);
                    worst_adj = std::max(worst_adj, ea);
                    if (ef > 1e-6 || ea > 1e-6) ok = false;
                }
                if (q4 > 0) {
                    // Which paths of the profile transpose ran on the aligned middle slab.
                    cur::RayParams q = cur::params_box(g, 2, q4, q4, 0, 0);
                    std::vector<float> tmp((size_t)(g.shape[0] * g.shape[1]) * q4, 0.0f);
                    unsigned long long stats[2] = {0, 0};
                    cpu_cuda::launch(cur::stride_grid(cur::chunked(q) * cur::segments(q, 128)), dim3(256), 0,
                                     cur::joseph_backward3_profile_count_f32, y.data(), cur::kvol(q, tmp.data()),
                                     g.views.data(), q, q.nviews, 128, stats);
                    printf("  profile transpose on cells [%d, %d) along axis 2: lean warp-planes %llu, other %llu\n", q4,
                           2 * q4, stats[0], stats[1]);
                }
            }
            // pieces: forward summed over slabs, transpose per slab, against the whole
            for (int frame = 0; frame < (g.detector ? 1 : 2); ++frame) {
                std::vector<float> fsum(nsino, 0.0f), adj(nvox, 0.0f), part(nsino);
                for (auto [a, b] : slabs) {
                    std::vector<float> xs(x.begin() + a * slice, x.begin() + b * slice), vs((size_t)(b - a) * slice);
                    if (frame == 0) {
                        cur::RayParams q = cur::params(g, a, b - a);
                        cur::forward(q, g.views.data(), xs.data(), part.data(), which);
                        cur::transpose(q, g.views.data(), y.data(), vs.data(), which);
                    } else {
                        ref::RayParams q = ref::params(g, a, b - a);
                        ref::forward(q, g.views.data(), xs.data(), part.data(), rw);
                        ref::transpose(q, g.views.data(), y.data(), vs.data(), rw);
                    }
                    for (size_t i = 0; i < nsino; ++i) fsum[i] += part[i];
                    std::copy(vs.begin(), vs.end(), adj.begin() + a * slice);
                }
                const Diff pf = diff(fsum, frame == 0 ? sc : sr), pa = diff(adj, frame == 0 ? vc : vr);
                printf("  %s, 3 slabs vs whole, %s: forward %.1e (max %.1e), transpose %.1e (max %.1e)\n", wn,
                       frame == 0 ? "whole-grid frame (current)" : "slab frame (reference)", pf.l2, pf.max, pa.l2, pa.max);
                if (frame == 0) {
                    worst_fwd = std::max(worst_fwd, pf.l2);
                    worst_adj = std::max(worst_adj, pa.l2);
                    if (pf.l2 > 1e-6 || pa.l2 > 1e-6) ok = false;
                }
            }
        }
    }
    printf("SUMMARY: %s; pieces vs whole, worst relative L2: forward %.1e, transpose %.1e\n", ok ? "ok" : "FAILED",
           worst_fwd, worst_adj);
    return ok ? 0 : 1;
}

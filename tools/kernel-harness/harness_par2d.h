// Shared by the 2D parallel-beam harness programs (par2d_adjoint.cu, par2d_forward.cu): the
// cases' geometries. Include after kernels/ray_joseph.cu (RayParams).
#pragma once
#include <cmath>
#include <cstring>
#include <vector>
#include "harness_time.cuh"

struct Par2d { RayParams p; std::vector<double> views; };

// A 2D parallel beam over [-1, 1]² with n0 x n1 pixels: nviews angles evenly in (th0, th1), nu
// detector cells over `span`, the detector shifted off the centre a little.
static Par2d par2d(int n0, int n1, int nviews, int nu, double span, double th0, double th1) {
    Par2d c; memset(&c.p, 0, sizeof(c.p));
    const int sh[2] = {n0, n1};
    for (int k = 0; k < 2; ++k) { c.p.shape[k] = sh[k]; c.p.vmin[k] = -1.0; c.p.h[k] = 2.0 / sh[k]; }
    c.p.shape[2] = 1; c.p.h[2] = 1;
    c.p.ndim = 2; c.p.nu = nu; c.p.nv = 1; c.p.nviews = nviews; c.p.parallel = 1;
    const double du = span / nu;
    for (int k = 0; k < nviews; ++k) {
        const double th = th0 + (th1 - th0) * (k + 0.5) / nviews, cs = cos(th), sn = sin(th);
        double v[12] = {-sn, cs, 0, 0.013, -0.007, 0, du * cs, du * sn, 0, 0, 0, 0};
        c.views.insert(c.views.end(), v, v + 12);
    }
    return c;
}

// The cases: parallel2d_512, the learned primal-dual operator's, and two odd shapes (detector
// cells far finer, and far coarser, than the pixels).
struct Par2dSpec { const char* name; int n0, n1, nviews, nu; double span, th0, th1; };
static std::vector<Par2dSpec> par2d_specs() {
    return {
        {"parallel2d_512", 512, 512, 512, 727, 2 * sqrt(2.0), 0, M_PI},
        {"lpd_256 (360 x 384)", 256, 256, 360, 384, 2 * sqrt(2.0), 0, M_PI},
        {"odd 97x131, 45 views, fine det 900", 97, 131, 45, 900, 3.0, 0.1, 2.9},
        {"coarse det 64, 200x180", 200, 180, 30, 64, 3.5, -1.0, 2.0},
    };
}

// A case's views and ray tables (joseph_setup2_f32) on the device.
struct Par2dDevice {
    double* views;
    Ray2* rays;
    float* weights;
    View2* info;
    void release() const { CK(cudaFree(views)); CK(cudaFree(rays)); CK(cudaFree(weights)); CK(cudaFree(info)); }
};
static Par2dDevice par2d_upload(const Par2d& c) {
    const RayParams& p = c.p;
    const size_t rays = (size_t)p.nviews * p.nu;
    Par2dDevice d;
    CK(cudaMalloc(&d.views, c.views.size() * 8));
    CK(cudaMemcpy(d.views, c.views.data(), c.views.size() * 8, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d.rays, rays * 8)); CK(cudaMalloc(&d.weights, rays * 4)); CK(cudaMalloc(&d.info, p.nviews * 16));
    joseph_setup2_f32<<<(unsigned)((rays + 255) / 256), 256>>>(d.views, p, d.rays, d.weights, d.info);
    CK(cudaGetLastError());
    return d;
}

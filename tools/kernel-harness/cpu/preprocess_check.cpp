// Runs one kernel of kernels/preprocess.cu on the CPU stand-in (cuda_cpu.h) on raw little-endian
// files, for tests/kernels_on_cpu.rs (which compares the results with rodl's host functions):
//   preprocess_check flat   K NPIX FUSE FLOOR x.f32 dark.f64 groups.f64 per_view.f64 out.f32
//   preprocess_check neglog N FLOOR x.f32 out.f32
//   preprocess_check zinger K NU NV R THRESHOLD BOTH x.f32 out.f32
//   preprocess_check stripe NA NU NV H x.f32 out.f32
// Prints the kernel's counter (bad pixels, pixels replaced; 0 otherwise).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_cpu.h"
using std::isfinite;
using std::isnan;

#include "preprocess_cur.cu"

template <class T>
static std::vector<T> load(const char* path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<T> v(b.size() / sizeof(T));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
    return v;
}

template <class T>
static void save(const char* path, const std::vector<T>& v) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    const std::string what = argv[1];
    const dim3 grid(3), block(64);
    u64 counter = 0;
    auto u = [&](int i) { return (u64)std::strtoull(argv[i], nullptr, 10); };
    auto f = [&](int i) { return std::strtof(argv[i], nullptr); };
    if (what == "flat" && argc == 11) {
        auto x = load<float>(argv[6]);
        auto dark = load<double>(argv[7]);
        auto groups = load<double>(argv[8]);
        auto pv = load<double>(argv[9]);
        cpu_cuda::launch(grid, block, 0, flat_field_f32, x.data(), (const double*)dark.data(),
                         (const double*)groups.data(), (const double*)pv.data(), u(2), u(3),
                         (int)u(4), f(5), &counter);
        save(argv[10], x);
    } else if (what == "neglog" && argc == 6) {
        auto x = load<float>(argv[4]);
        cpu_cuda::launch(grid, block, 0, neg_log_f32, x.data(), u(2), f(3));
        save(argv[5], x);
    } else if (what == "zinger" && argc == 10) {
        auto x = load<float>(argv[8]);
        std::vector<float> out = x;
        cpu_cuda::launch(grid, block, 0, zinger_f32, (const float*)x.data(), out.data(), u(2), u(3),
                         u(4), (int)u(5), f(6), (int)u(7), &counter);
        save(argv[9], out);
    } else if (what == "stripe" && argc == 8) {
        auto x = load<float>(argv[6]);
        std::vector<float> sorted(x.size()), out(x.size());
        std::vector<unsigned> rank(x.size());
        cpu_cuda::launch(grid, block, 0, stripe_rank_f32, (const float*)x.data(), sorted.data(),
                         rank.data(), u(2), u(3), u(4));
        cpu_cuda::launch(grid, block, 0, stripe_median_f32, (const float*)sorted.data(),
                         (const unsigned*)rank.data(), out.data(), u(2), u(3), u(4), (int)u(5));
        save(argv[7], out);
    } else {
        std::fprintf(stderr, "bad arguments\n");
        return 2;
    }
    std::printf("%llu\n", counter);
    return 0;
}

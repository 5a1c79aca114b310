// Shared by the harness programs: reproducible random data and relative differences (plain C++,
// also built without CUDA by cpu/pieces_check.cpp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

// n values uniform in [-1, 1) from a 64-bit LCG seeded with `seed`.
static std::vector<float> randv(size_t n, unsigned seed) {
    std::vector<float> v(n);
    unsigned long long s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (size_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    return v;
}

// ||a - b|| / ||b|| (l2) and max |a - b| / max |b| (max).
struct Diff {
    double l2, max;
};
static Diff diff(const std::vector<float>& a, const std::vector<float>& b) {
    double n = 0, d = 0, mx = 0, mb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double e = (double)a[i] - b[i];
        n += e * e;
        d += (double)b[i] * b[i];
        mx = std::max(mx, std::fabs(e));
        mb = std::max(mb, std::fabs((double)b[i]));
    }
    return {std::sqrt(n / std::max(d, 1e-300)), mx / std::max(mb, 1e-300)};
}
static double rel(const std::vector<float>& a, const std::vector<float>& b) { return diff(a, b).l2; }

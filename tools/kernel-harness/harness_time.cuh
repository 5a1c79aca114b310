// Shared by the CUDA harness programs: the error check and CUDA-event timing.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

// The median over `reps` runs of f() timed with CUDA events on the default stream, after
// `warmup` untimed runs.
template <typename F>
static double time_ms(F f, int reps, int warmup = 0) {
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int r = 0; r < warmup; ++r) f();
    std::vector<float> ts;
    for (int r = 0; r < reps; ++r) {
        CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
    return ts[ts.size() / 2];
}

// A CPU stand-in for the CUDA features that kernels/ray_joseph.cu uses, so that its kernels run
// (slowly, at small sizes) on a machine without a GPU: every thread of a block is a std::thread,
// blocks run one after the other, __syncthreads and the warp operations are barriers over the
// block's or the warp's threads, shared memory is static storage (one block at a time), atomics
// are compare-and-swap loops. The float intrinsics are IEEE operations in round-to-nearest
// (compile with -ffp-contract=off, as the kernels are compiled with --fmad=false), so the
// arithmetic matches the GPU's bit for bit; the order of atomic additions does not.
//
// Only full-warp masks, blocks of whole warps and barriers reached by every live thread (as the
// kernels are written) are supported. Exited threads leave the barriers, as on the GPU.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

using std::max;
using std::min;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct float4 {
    float x, y, z, w;
};
struct float2 {
    float x, y;
};
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float2 make_float2(float a, float b) { return {a, b}; }

inline thread_local uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

namespace cpu_cuda {
struct Block {
    std::unique_ptr<std::barrier<>> block;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    std::vector<uint64_t> slots;  // 32 per warp
    std::atomic<int> count{0};
};
inline Block* g_block = nullptr;
inline std::vector<unsigned char> g_dynamic_smem;
inline thread_local int t_warp = 0, t_lane = 0;

inline std::barrier<>& warp_barrier() { return *g_block->warps[t_warp]; }

template <class T>
inline uint64_t bits(T v) {
    static_assert(sizeof(T) <= 8, "shuffle of a value over 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
inline T unbits(uint64_t b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}
// Every lane publishes v, then reads lane `src`'s value.
template <class T>
inline T exchange(T v, int src) {
    uint64_t* s = g_block->slots.data() + 32 * t_warp;
    s[t_lane] = bits(v);
    warp_barrier().arrive_and_wait();
    const T r = unbits<T>(s[src]);
    warp_barrier().arrive_and_wait();
    return r;
}
}  // namespace cpu_cuda

inline void* cpu_dynamic_smem() { return cpu_cuda::g_dynamic_smem.data(); }

inline void __syncthreads() { cpu_cuda::g_block->block->arrive_and_wait(); }
inline int __syncthreads_count(int pred) {
    auto& b = *cpu_cuda::g_block;
    b.block->arrive_and_wait();
    if (pred) b.count.fetch_add(1);
    b.block->arrive_and_wait();
    const int r = b.count.load();
    b.block->arrive_and_wait();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) b.count.store(0);
    return r;
}
inline void __syncwarp(unsigned = 0xffffffffu) { cpu_cuda::warp_barrier().arrive_and_wait(); }

template <class T>
inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
    const int lane = cpu_cuda::t_lane;
    return cpu_cuda::exchange(v, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int o, int width = 32) {
    const int lane = cpu_cuda::t_lane;
    const int s = lane ^ o;
    return cpu_cuda::exchange(v, (s & ~(width - 1)) == (lane & ~(width - 1)) ? s : lane);
}
template <class T>
inline T __shfl_up_sync(unsigned, T v, int d, int width = 32) {
    const int lane = cpu_cuda::t_lane;
    const int s = lane - d;
    return cpu_cuda::exchange(v, s >= (lane & ~(width - 1)) ? s : lane);
}
template <class T>
inline T __shfl_down_sync(unsigned, T v, int d, int width = 32) {
    const int lane = cpu_cuda::t_lane;
    const int s = lane + d;
    return cpu_cuda::exchange(v, s < (lane & ~(width - 1)) + width ? s : lane);
}
inline unsigned __ballot_sync(unsigned, int pred) {
    uint64_t* s = cpu_cuda::g_block->slots.data() + 32 * cpu_cuda::t_warp;
    s[cpu_cuda::t_lane] = pred ? 1 : 0;
    cpu_cuda::warp_barrier().arrive_and_wait();
    unsigned r = 0;
    for (int l = 0; l < 32; ++l) r |= (s[l] ? 1u : 0u) << l;
    cpu_cuda::warp_barrier().arrive_and_wait();
    return r;
}
inline int __all_sync(unsigned m, int pred) { return __ballot_sync(m, pred) == 0xffffffffu; }
inline int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0u; }

inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
// a + b rounded toward zero (the exact sum in double, then cut toward zero to a float).
inline float __fadd_rz(float a, float b) {
    const double d = (double)a + (double)b;
    float r = (float)d;
    if (std::fabs((double)r) > std::fabs(d)) r = std::nextafter(r, 0.0f);
    return r;
}
inline int __float2int_rz(float a) { return (int)a; }
inline int __float2int_rd(float a) { return (int)std::floor(a); }
inline int __double2int_rn(double a) { return (int)std::nearbyint(a); }  // the default mode: to nearest even
inline unsigned __float_as_uint(float a) { return cpu_cuda::unbits<unsigned>(cpu_cuda::bits(a)); }
inline float __uint_as_float(unsigned a) { return cpu_cuda::unbits<float>(cpu_cuda::bits(a)); }
inline int __float_as_int(float a) { return cpu_cuda::unbits<int>(cpu_cuda::bits(a)); }
inline float __int_as_float(int a) { return cpu_cuda::unbits<float>(cpu_cuda::bits(a)); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
template <class T>
inline T __ldg(const T* p) { return *p; }
using std::ceil;
using std::fabs;
using std::floor;
using std::sqrt;
inline float fminf(float a, float b) { return std::fmin(a, b); }
inline float fmaxf(float a, float b) { return std::fmax(a, b); }
inline float floorf(float a) { return std::floor(a); }
inline float ceilf(float a) { return std::ceil(a); }
inline float fabsf(float a) { return std::fabs(a); }

inline float atomicAdd(float* p, float v) {
    uint32_t* q = reinterpret_cast<uint32_t*>(p);
    uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
    for (;;) {
        const float nv = cpu_cuda::unbits<float>(old) + v;
        uint32_t want = (uint32_t)cpu_cuda::bits(nv);
        if (__atomic_compare_exchange_n(q, &old, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return cpu_cuda::unbits<float>(old);
    }
}
inline double atomicAdd(double* p, double v) {
    uint64_t* q = reinterpret_cast<uint64_t*>(p);
    uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
    for (;;) {
        const double nv = cpu_cuda::unbits<double>(old) + v;
        if (__atomic_compare_exchange_n(q, &old, cpu_cuda::bits(nv), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return cpu_cuda::unbits<double>(old);
    }
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline unsigned atomicMax(unsigned* p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
inline unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
inline int atomicOr(int* p, int v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
inline long long clock64() { return 0; }

namespace cpu_cuda {
// Runs kernel(args...) over grid x block threads: blocks in turn, the threads of a block at once.
template <class F, class... A>
void launch(dim3 grid, dim3 block, size_t smem, F kernel, A... args) {
    gridDim = grid;
    blockDim = block;
    const unsigned nthreads = block.x * block.y * block.z;
    if (nthreads % 32 != 0) throw std::runtime_error("blocks of whole warps only");
    g_dynamic_smem.assign(std::max<size_t>(smem, 16), 0);
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                Block b;
                b.block = std::make_unique<std::barrier<>>(nthreads);
                for (unsigned w = 0; w < nthreads / 32; ++w) b.warps.push_back(std::make_unique<std::barrier<>>(32));
                b.slots.assign(nthreads, 0);
                g_block = &b;
                std::vector<std::thread> ts;
                ts.reserve(nthreads);
                for (unsigned t = 0; t < nthreads; ++t) {
                    ts.emplace_back([&, t] {
                        blockIdx.x = bx;
                        blockIdx.y = by;
                        blockIdx.z = bz;
                        threadIdx.x = t % block.x;
                        threadIdx.y = (t / block.x) % block.y;
                        threadIdx.z = t / (block.x * block.y);
                        t_warp = (int)(t / 32);
                        t_lane = (int)(t % 32);
                        kernel(args...);
                        b.warps[t_warp]->arrive_and_drop();
                        b.block->arrive_and_drop();
                    });
                }
                for (auto& th : ts) th.join();
                g_block = nullptr;
            }
}
}  // namespace cpu_cuda

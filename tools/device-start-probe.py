#!/usr/bin/env python3
"""Where a fresh process's GPU start goes (issue #34 item 4: the tool's `set-up`).

Times, through ctypes on the driver and NVRTC, each step a rodl process takes before its first
kernel: cuInit, the primary context, loading NVRTC, compiling kernels/ray_joseph.cu to PTX and to
a cubin, loading the PTX (the driver compiles it to machine code, or finds it in its own JIT
cache) and the cubin as modules, pinning 128 MiB of host memory, and the context's release.
Run it twice: the second run shows the driver's JIT cache warm.

    python3 tools/device-start-probe.py [--arch 90]
"""
import ctypes
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lib(*names):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    sys.exit(f"none of {names} loads")


def check(rc, what):
    if rc != 0:
        sys.exit(f"{what} failed: {rc}")


def main():
    arch = sys.argv[sys.argv.index("--arch") + 1] if "--arch" in sys.argv else "90"
    out = []

    def step(name, f):
        t = time.perf_counter()
        r = f()
        out.append((name, time.perf_counter() - t))
        return r

    cuda = step("dlopen libcuda", lambda: lib("libcuda.so.1", "libcuda.so"))
    step("cuInit", lambda: check(cuda.cuInit(0), "cuInit"))
    ctx = ctypes.c_void_p()
    step("primary context", lambda: (check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0), "retain"),
                                     check(cuda.cuCtxSetCurrent(ctx), "set current")))
    nvrtc = step("dlopen libnvrtc", lambda: lib("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                                "/usr/local/cuda/lib64/libnvrtc.so"))
    src = open(os.path.join(ROOT, "kernels", "ray_joseph.cu"), "rb").read()

    def compile_(opts, cubin):
        prog = ctypes.c_void_p()
        check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, b"ray_joseph.cu", 0, None, None), "create")
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
        if rc != 0:
            n = ctypes.c_size_t()
            nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            log = ctypes.create_string_buffer(n.value)
            nvrtc.nvrtcGetProgramLog(prog, log)
            sys.exit(log.value.decode(errors="replace")[-2000:])
        n = ctypes.c_size_t()
        get_size, get = ((nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if cubin
                         else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX))
        check(get_size(prog, ctypes.byref(n)), "size")
        buf = ctypes.create_string_buffer(n.value)
        check(get(prog, buf), "get")
        return buf

    base = [b"--fmad=false", b"--std=c++17"]
    ptx = step("NVRTC to PTX", lambda: compile_([f"--gpu-architecture=compute_{arch}".encode()] + base, False))
    cubin = step("NVRTC to cubin", lambda: compile_([f"--gpu-architecture=sm_{arch}".encode()] + base, True))
    mod = ctypes.c_void_p()
    step(f"load PTX ({len(ptx.raw) / 1e6:.2f} MB)", lambda: check(cuda.cuModuleLoadData(ctypes.byref(mod), ptx), "load ptx"))
    mod2 = ctypes.c_void_p()
    step(f"load cubin ({len(cubin.raw) / 1e6:.2f} MB)",
         lambda: check(cuda.cuModuleLoadData(ctypes.byref(mod2), cubin), "load cubin"))
    fn = ctypes.c_void_p()
    step("get a function (PTX module)",
         lambda: check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"joseph_backward3_profile_f32"), "fn"))
    fn2 = ctypes.c_void_p()
    step("get a function (cubin module)",
         lambda: check(cuda.cuModuleGetFunction(ctypes.byref(fn2), mod2, b"joseph_backward3_profile_f32"), "fn"))
    host = ctypes.c_void_p()
    step("pin 128 MiB (cuMemHostAlloc)", lambda: check(cuda.cuMemHostAlloc(ctypes.byref(host), 128 << 20, 0), "pin"))
    step("free pinned", lambda: check(cuda.cuMemFreeHost(host), "free pinned"))
    step("unload modules", lambda: (cuda.cuModuleUnload(mod), cuda.cuModuleUnload(mod2)))
    step("release the context", lambda: check(cuda.cuDevicePrimaryCtxRelease(0), "release"))
    for name, s in out:
        print(f"{name:<34} {s * 1e3:9.1f} ms")


if __name__ == "__main__":
    main()

"""ASTRA's host-array cone-beam figures next to rodl's `cuda/cone_512_host` bench.

cone_512 as in benches/common: 512³ over [-1, 1]³, 512 angles over [0, 2π), flat detector
768 × 512 over [-2.8284, 2.8284] × [-2.8859, 2.8859], source and detector radius 4. Times
`astra.create_sino3d_gpu` (forward) and `astra.create_backprojection3d_gpu` (back-projection)
on NumPy arrays in host memory, ASTRA's own splitting included; optionally with ASTRA's GPU
memory capped (`astra.set_gpu_index(0, memory=...)`). Prints one line per figure, medians of
`--repeat` calls after one warm-up call.

    python3 benches/python/astra_host.py [--n 512] [--repeat 3] [--memory-mib 0]
"""

import argparse
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory-mib", type=int, default=0)
    a = ap.parse_args()
    import astra

    if a.memory_mib:
        astra.set_gpu_index(0, memory=a.memory_mib << 20)
    n = a.n
    nu, nv, views = 3 * n // 2, n, n
    vol_geom = astra.create_vol_geom(n, n, n, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0)
    angles = np.linspace(0.0, 2.0 * np.pi, views, endpoint=False) + np.pi / views
    proj_geom = astra.create_proj_geom(
        "cone", 2 * 2.8284 / nu, 2 * 2.8859 / nv, nv, nu, angles, 4.0, 4.0
    )
    rng = np.random.default_rng(1)
    vol = rng.standard_normal((n, n, n), dtype=np.float32)
    sino = rng.standard_normal((nv, views, nu), dtype=np.float32)

    def timed(f):
        f()  # warm-up
        ts = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        return float(np.median(ts)), ts

    def fwd():
        i, _ = astra.create_sino3d_gpu(vol, proj_geom, vol_geom)
        astra.data3d.delete(i)

    def adj():
        i, _ = astra.create_backprojection3d_gpu(sino, proj_geom, vol_geom)
        astra.data3d.delete(i)

    cap = f", GPU memory {a.memory_mib} MiB" if a.memory_mib else ""
    m, ts = timed(fwd)
    print(f"astra cone_{n} host forward{cap}: median {m * 1e3:.1f} ms of {[round(t * 1e3, 1) for t in ts]}")
    m, ts = timed(adj)
    print(f"astra cone_{n} host back-projection{cap}: median {m * 1e3:.1f} ms of {[round(t * 1e3, 1) for t in ts]}")


if __name__ == "__main__":
    main()

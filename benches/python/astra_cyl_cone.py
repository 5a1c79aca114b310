"""rodl's cylindrical-detector cone beam next to ASTRA 2.5's ``cyl_cone_vec`` on one GPU
(issue #35 item 5): accuracy against each other (and the flat ``cone_vec`` pair for scale) and
GPU-resident times, both through PyTorch CUDA tensors (rodl: ``rodl.torch.apply``; ASTRA:
``astra.experimental.direct_FP3D/BP3D``). Geometry: cone_512's sampling (512³ over [-1, 1]³,
512 views over a full turn, a 768 × 512 detector, source and detector radius 4), the detector
an arc of radius 8 about the focal spot (arc-length pitch = the flat pitch). Medians of
``--repeat`` calls after a warm-up.

    python3 benches/python/astra_cyl_cone.py [--n 512] [--accuracy-n 128] [--repeat 5]
"""

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python" / "tests"))
from test_astra_gpu import astra_setup, compare, cone_vectors  # noqa: E402


def timed(f, repeat):
    import torch

    f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--accuracy-n", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    import astra
    import astra.experimental as ae
    import torch

    import rodl
    import rodl.torch as rt

    m = a.accuracy_n
    for name, radius in [("flat cone_vec", None), ("cyl_cone_vec R=8", 8.0)]:
        for pitch in [0.0, 0.5]:
            fwd, scale, bp = compare(m, m, radius, pitch)
            print(f"accuracy {m}³, {m} views, {name}, pitch {pitch}: forward rel. diff {fwd:.3e}, "
                  f"ASTRA/rodl scale {scale:.5f}, back-projection rel. diff (best scale) {bp:.3e}", flush=True)

    n = a.n
    space, vectors, shape = cone_vectors(n, n)
    dev = torch.device("cuda:0")
    x = torch.rand((n, n, n), device=dev)
    for name, radius in [("flat", None), ("cyl", 8.0)]:
        curvature = None if radius is None else (radius, None)
        g = rodl.Geometry.from_vectors("point", shape, vectors, det_curvature_radius=curvature)
        for det in [False, True]:
            ray = rodl.Factory.ray_transform(space, g, deterministic=det).build("cuda:0")
            y = torch.rand((n,) + tuple(shape), device=dev)
            tf = timed(lambda: rt.apply(ray, x), a.repeat)
            tb = timed(lambda: rt.apply(ray.adjoint, y), a.repeat)
            label = "deterministic" if det else "default"
            print(f"rodl cone_{n} {name} ({label}): forward {tf:.1f} ms, adjoint {tb:.1f} ms", flush=True)
            del ray, y
            torch.cuda.empty_cache()
        vol_geom, proj_geom, _, _ = astra_setup(space, vectors, shape, radius)
        pid = astra.create_projector("cuda3d", proj_geom, vol_geom)
        vol = x.contiguous()
        proj = torch.zeros((shape[1], n, shape[0]), device=dev)
        tf = timed(lambda: ae.direct_FP3D(pid, vol, proj), a.repeat)
        tb = timed(lambda: ae.direct_BP3D(pid, vol, proj), a.repeat)
        print(f"ASTRA 2.5 cone_{n} {name} ({'cyl_cone_vec' if radius else 'cone_vec'}, direct, GPU-resident): "
              f"forward {tf:.1f} ms, back-projection {tb:.1f} ms", flush=True)
        astra.projector.delete(pid)
        del proj
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

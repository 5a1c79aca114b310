"""2D fan-beam FBP on the CPU: rodl against ODL 1.0 (``astra_cpu``), on ODL's own fan-beam FBP
example (``filtered_backprojection_fan_2d.py``): a 300² volume over [-20, 20]², 360 angles over
[0, 2π), a flat detector of 512 cells over [-40, 40], source and detector radius 40, float32.

rodl converts ODL's ray transform (``rodl.from_odl``) and reconstructs with its exact fan-beam
FBP (one filter pass and one back-projection weighted by the source distance); ODL's
``fbp_op`` back-projects with ASTRA on the CPU. Prints the median wall time of ``--repeat``
calls after one warm-up (alternating, so that both see the same load), on NumPy arrays (ODL:
its space elements), and both
reconstructions' PSNR against the phantom.

    pip install ./python odl astra-toolbox
    python3 benches/python/fan_fbp_vs_odl.py [--repeat 10] [--filter Ram-Lak] [--threads N]
"""

import argparse
import time

import numpy as np


def median_ms(fs, repeat):
    """Medians of ``repeat`` calls of each function in ``fs``, after one warm-up call each; the
    calls alternate, so that both see the same load on a shared machine."""
    for f in fs:
        f()
    t = [[] for _ in fs]
    for _ in range(repeat):
        for k, f in enumerate(fs):
            s = time.perf_counter()
            f()
            t[k].append(time.perf_counter() - s)
    return [1e3 * float(np.median(v)) for v in t]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--filter", default="Ram-Lak")
    ap.add_argument("--threads", type=int, default=None, help="rodl's CPU threads (default: one per core)")
    a = ap.parse_args()
    import odl
    import odl.applications.tomo as tomo

    import rodl

    space = odl.uniform_discr([-20, -20], [20, 20], [300, 300], dtype="float32")
    geometry = tomo.FanBeamGeometry(
        odl.uniform_partition(0, 2 * np.pi, 360),
        odl.uniform_partition(-40, 40, 512),
        src_radius=40,
        det_radius=40,
    )
    A = tomo.RayTransform(space, geometry, impl="astra_cpu")
    phantom = odl.phantom.shepp_logan(space, modified=True)
    data = A(phantom)
    odl_fbp = tomo.fbp_op(A, filter_type=a.filter)

    ray = rodl.from_odl(A, threads=a.threads)
    fbp = rodl.fbp_op(ray, filter_type=a.filter)
    y = data.asarray()

    truth = phantom.asarray()
    ours, theirs = fbp(y), odl_fbp(data).asarray()
    t_ours, t_theirs = median_ms([lambda: fbp(y), lambda: odl_fbp(data)], a.repeat)
    print(
        f"fan FBP 300², 360 × 512 ({a.filter}): rodl ({a.threads or 'all'} threads) {t_ours:.1f} ms, ODL {odl.__version__} "
        f"(astra_cpu) {t_theirs:.1f} ms ({t_theirs / t_ours:.2f}x); PSNR rodl "
        f"{rodl.psnr(ours, truth):.2f} dB, ODL {rodl.psnr(theirs.astype(np.float32), truth):.2f} dB"
    )


if __name__ == "__main__":
    main()

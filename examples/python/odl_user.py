"""An ODL user's switch to rodl: the same space and geometry, FBP and CGLS on NumPy arrays,
timed next to ODL (astra_cpu) when ODL is installed.

    pip install ./python odl astra-toolbox && python examples/python/odl_user.py
"""

import time

import numpy as np
import odl
import odl.applications.tomo as tomo

import rodl


def timed(f, repeat=5):
    f()
    t = time.perf_counter()
    for _ in range(repeat):
        f()
    return (time.perf_counter() - t) / repeat


space = odl.uniform_discr([-1, -1], [1, 1], [256, 256], dtype="float32")
A = tomo.RayTransform(space, tomo.parallel_beam_geometry(space, 360), impl="astra_cpu")
phantom = odl.phantom.shepp_logan(space, modified=True)
data = A(phantom).asarray()

ray = rodl.from_odl(A)                      # the one line that switches
fbp = rodl.fbp_op(ray, filter_type="Hann")
x = ray.domain.zero()
rodl.cgls(ray, x, data, niter=10)
print(f"PSNR: FBP {rodl.psnr(fbp(data), phantom.asarray()):.1f} dB, CGLS {rodl.psnr(x, phantom.asarray()):.1f} dB")

odl_fbp = tomo.fbp_op(A, filter_type="Hann")
y = A.range.element(data)
for name, ours, theirs in [
    ("forward", lambda: ray(x), lambda: A(A.domain.element(x))),
    ("adjoint", lambda: ray.adjoint(data), lambda: A.adjoint(y)),
    ("FBP", lambda: fbp(data), lambda: odl_fbp(y)),
    ("CGLS x10", lambda: rodl.cgls(ray, ray.domain.zero(), data, niter=10),
     lambda: odl.solvers.conjugate_gradient_normal(A, A.domain.zero(), y, niter=10)),
]:
    a, b = timed(ours, 3), timed(theirs, 3)
    print(f"{name:9s} rodl {1e3 * a:8.1f} ms   ODL+ASTRA {1e3 * b:8.1f} ms   ({b / a:.1f}x)")

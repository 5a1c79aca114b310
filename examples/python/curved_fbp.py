"""Curved ODL geometries through rodl: ODL 1.0 describes curved detectors
(``det_curvature_radius``) but cannot project or reconstruct them with ASTRA (odl#1602);
``rodl.from_odl`` converts them view by view, and rodl's FBP and FDK reconstruct them.

1. A fan beam whose detector is an arc about the source (equiangular, as on clinical
   scanners): FBP, next to the same scan with a flat detector of matching sampling.
2. A circular cone beam with a cylindrical detector about the source: FDK.
3. The fan-beam arc as a short scan (π + fan angle), with Parker weights (``parker=q``; ODL's
   ``fbp_op`` has none by default, nor has rodl's).

    pip install ./python odl && python examples/python/curved_fbp.py
"""

import numpy as np
import odl
import odl.applications.tomo as tomo

import rodl

R, D = 4.0, 4.0  # source and detector distance from the rotation axis

# 1. Fan beam, arc detector about the source: the detector partition is in fan angle.
space = odl.uniform_discr([-1, -1], [1, 1], [256, 256], dtype="float32")
phantom = odl.phantom.shepp_logan(space, modified=True).asarray()
half = 1.1 * np.arcsin(1.0 / R)  # the fan covers the unit disc
angles = odl.uniform_partition(0, 2 * np.pi, 360)
arc = tomo.FanBeamGeometry(
    angles, odl.uniform_partition(-half, half, 512), src_radius=R, det_radius=D,
    det_curvature_radius=R + D,
)
geometry = rodl.from_odl(arc)  # ODL's det_point_position for every pixel, as rodl's
ray = rodl.RayTransform(rodl.from_odl(space), geometry)
data = ray(phantom)  # ODL cannot compute this (no ASTRA projector for curved detectors)
rec = rodl.fbp_op(ray, filter_type="Hann")(data)

# The same fan with a flat detector of matching sampling (the same fan angles at its ends).
w = (R + D) * np.tan(half)
flat = tomo.FanBeamGeometry(angles, odl.uniform_partition(-w, w, 512), src_radius=R, det_radius=D)
ray_flat = rodl.from_odl(tomo.RayTransform(space, flat, impl="astra_cpu"))
rec_flat = rodl.fbp_op(ray_flat, filter_type="Hann")(ray_flat(phantom))
print(
    f"fan beam, arc detector: FBP PSNR {rodl.psnr(rec, phantom):.2f} dB "
    f"(flat detector of matching sampling: {rodl.psnr(rec_flat, phantom):.2f} dB)"
)

# 2. Cone beam, cylindrical detector about the source (its axis along the rotation axis):
# partition in (fan angle, height).
space3 = odl.uniform_discr([-1, -1, -1], [1, 1, 1], [64, 64, 64], dtype="float32")
phantom3 = odl.phantom.shepp_logan(space3, modified=True).asarray()
height = 1.3 * (R + D) / (R - 1.0)
cyl = tomo.ConeBeamGeometry(
    odl.uniform_partition(0, 2 * np.pi, 180),
    odl.uniform_partition([-half, -height], [half, height], [128, 96]),
    src_radius=R, det_radius=D, det_curvature_radius=(R + D, None),
)
ray3 = rodl.RayTransform(rodl.from_odl(space3), rodl.from_odl(cyl))
rec3 = rodl.fbp_op(ray3, filter_type="Hann")(ray3(phantom3))
mid = slice(24, 40)  # FDK is exact in the source's plane; compare the central slab
print(f"cone beam, cylindrical detector: FDK PSNR {rodl.psnr(rec3[..., mid], phantom3[..., mid]):.2f} dB "
      "(central 16 slices)")

# 3. The arc as a short scan: π + fan angle (+ a little), Parker weights asked for.
short = tomo.FanBeamGeometry(
    odl.uniform_partition(0, np.pi + 2 * half + 0.1, 220), odl.uniform_partition(-half, half, 512),
    src_radius=R, det_radius=D, det_curvature_radius=R + D,
)
ray_s = rodl.RayTransform(rodl.from_odl(space), rodl.from_odl(short))
rec_s = rodl.fbp_op(ray_s, filter_type="Hann", parker=0.25)(ray_s(phantom))
print(f"fan beam, arc detector, short scan with Parker weights: FBP PSNR {rodl.psnr(rec_s, phantom):.2f} dB")

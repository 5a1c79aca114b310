"""rodl as a backend of ODL's ``RayTransform``: ``impl='rodl'``.

    import odl, odl.applications.tomo as tomo
    import rodl.odl                      # registers impl='rodl' (rodl.odl.register() again is harmless)
    A = tomo.RayTransform(space, geometry, impl="rodl")

ODL keeps its operator, its spaces and its algebra; rodl computes the projections and their
exact adjoints (ODL's ``RayBackProjection`` calls ``call_backward``), on the CPU or, for a space
on ``cuda:N``, on that GPU (``RodlImpl(..., backend="cuda:0")`` or ``register(backend=...)``
chooses). Spaces backed by NumPy or by PyTorch (``impl='pytorch'``) both work (the data cross
as host arrays), real or complex (real and imaginary parts are projected one after the other). What rodl cannot represent (spherical detectors off their equator, non-uniform partitions,
Euler angles) raises ``NotImplementedError`` when the operator is first used, naming what is missing.
"""

from typing import Optional

import numpy as np

from ._odl import _geometry, _space
from ._rodl import RayTransform

__all__ = ["RodlImpl", "register"]


def _host(x) -> np.ndarray:
    """An ODL element's (or array's) values as a NumPy array, without a copy where it can."""
    a = x.asarray() if hasattr(x, "asarray") else x
    if hasattr(a, "detach"):  # a torch tensor (ODL's 'pytorch' backend)
        a = a.detach().cpu().numpy()
    return np.asarray(a)


def _backend_for(space, backend: Optional[str]) -> str:
    if backend is not None:
        return backend
    device = str(getattr(space, "device", "cpu") or "cpu")
    return device if device.startswith("cuda") else "cpu"


class RodlImpl:
    """ODL's ray-transform backend interface (``call_forward``, ``call_backward``) on rodl's
    ``RayTransform``, built as ODL builds a backend: ``RodlImpl(geometry, vol_space=...,
    proj_space=...)``. ``backend`` (``"cpu"``, ``"cuda:N"``; default: the space's device) and
    ``threads`` are rodl's."""

    def __init__(self, geometry, vol_space, proj_space, backend: Optional[str] = None, threads=None):
        self.geometry = geometry
        self._vol_space = vol_space
        self._proj_space = proj_space
        # A complex space computes on its real space, real and imaginary parts one after the
        # other (as ODL's own backends do).
        self._complex = bool(getattr(vol_space, "is_complex", False))
        real = vol_space.real_space if self._complex else vol_space
        self._ray = RayTransform(
            _space(real),
            _geometry(geometry),
            backend=_backend_for(vol_space, backend),
            threads=threads,
        )
        if tuple(self._ray.range.shape) != tuple(proj_space.shape):
            raise ValueError(
                f"rodl.odl: the data space of the geometry has shape {tuple(self._ray.range.shape)}, "
                f"ODL's projection space {tuple(proj_space.shape)}"
            )

    @property
    def vol_space(self):
        """ODL's volume space."""
        return self._vol_space

    @property
    def proj_space(self):
        """ODL's projection (data) space."""
        return self._proj_space

    @property
    def ray_transform(self) -> RayTransform:
        """The rodl operator that computes."""
        return self._ray

    @staticmethod
    def _out(space, y, out):
        if out is None:
            return space.element(y)
        out[:] = space.element(y)
        return out

    def _apply(self, op, x):
        a = _host(x)
        if np.iscomplexobj(a):
            return op(np.ascontiguousarray(a.real)) + 1j * op(np.ascontiguousarray(a.imag))
        return op(a)

    def call_forward(self, x, out=None, **kwargs):
        """The projection of the volume ``x`` (into ``out`` when given)."""
        return self._out(self._proj_space, self._apply(self._ray, x), out)

    def call_backward(self, x, out=None, **kwargs):
        """The exact adjoint (back-projection) of the data ``x`` (into ``out`` when given)."""
        return self._out(self._vol_space, self._apply(self._ray.adjoint, x), out)


def register(name: str = "rodl", backend: Optional[str] = None, threads=None) -> type:
    """Registers rodl under ``impl=name`` in ODL's ray-transform registry
    (``odl.applications.tomo.operators.ray_trafo.RAY_TRAFO_IMPLS``) and returns the class ODL
    builds; ``backend``/``threads`` fix rodl's backend for every operator of that name."""
    from odl.applications.tomo.operators import ray_trafo

    impl: type = RodlImpl
    if backend is not None or threads is not None:

        class Bound(RodlImpl):
            """``RodlImpl`` with this registration's backend options."""

            def __init__(self, geometry, vol_space, proj_space):
                super().__init__(geometry, vol_space, proj_space, backend=backend, threads=threads)

        Bound.__name__ = Bound.__qualname__ = f"RodlImpl[{name}]"
        impl = Bound
    # ODL falls back to the last registered impl when none is asked for: keep its own default.
    impls: dict = ray_trafo.RAY_TRAFO_IMPLS  # ODL types it by its first entry
    default = list(impls.items())
    impls.clear()
    impls[name.lower()] = impl
    for k, v in default:
        if k != name.lower():
            impls[k] = v
    return impl


register()

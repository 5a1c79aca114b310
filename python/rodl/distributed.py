"""The ray transform over the ranks of an MPI job, from mpi4py's communicator.

One process per rank runs the same script (``mpirun -np 4 python script.py``); each builds
the same operator and holds its share of the data (by views) or of the volume and the data
(by slabs along ``z``), as NumPy arrays::

    from mpi4py import MPI
    import numpy as np, rodl, rodl.distributed

    space = rodl.uniform_discr([-1, -1, -1], [1, 1, 1], [64, 64, 64])
    geometry = rodl.cone_beam_geometry(space, 4.0, 4.0, num_angles=90)
    op = rodl.distributed.RayTransform(space, geometry, comm=MPI.COMM_WORLD, partition="slabs")
    data = whole_data[op.range_slice]       # this rank's share (or read only that part)
    x = op.domain.zero()                    # this rank's slab
    rodl.cgls(op, x, data, niter=20)        # every rank: the single-process iterates

``op(x)`` and ``op.adjoint(y)`` take and return this rank's share; ``op.domain``/``op.range``
reduce over the ranks (``inner``, ``norm``, ``dist``), so ``rodl.cgls``, ``rodl.landweber``,
``rodl.sirt``, ``rodl.mlem`` and ``rodl.pdhg_tv`` (by views) run unchanged. Every call is
collective; bad input on one rank raises :class:`DistributedError` on every rank.

Needs the package built with its ``mpi`` feature (``MATURIN_PEP517_ARGS="--features mpi" pip
install ./python``, over the system MPI) and mpi4py built against the same MPI; importing this
module raises ImportError otherwise.
"""

from . import _rodl

if not _rodl.MPI_BUILT:
    raise ImportError(
        "rodl.distributed: this rodl was built without MPI. Build the Python package from source "
        "with its `mpi` feature, over the system MPI (on Debian `apt-get install libopenmpi-dev "
        'openmpi-bin libclang-dev`): MATURIN_PEP517_ARGS="--features mpi" pip install ./python; '
        "and install mpi4py built against the same MPI (pip install mpi4py)"
    )

try:
    from mpi4py import MPI  # noqa: F401  (initialises MPI, whose handle rodl adopts)
except ImportError as e:
    raise ImportError(
        "rodl.distributed needs mpi4py, built against the MPI that rodl links: pip install mpi4py"
    ) from e

from ._rodl import DistributedError, DistributedRayTransform

#: ``rodl.distributed.RayTransform(space, geometry, comm=None, partition="views", counts=None,
#: backend="cpu", ...)``: see :class:`rodl._rodl.DistributedRayTransform`.
RayTransform = DistributedRayTransform

__all__ = ["DistributedError", "DistributedRayTransform", "RayTransform"]

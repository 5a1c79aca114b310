"""One rank of the distributed tests (python/tests/test_distributed.py), started by
``mpirun -np N python distributed_worker.py CASE``.

``compare``: for both partitions, even and uneven counts (a rank with nothing), the
distributed ray transform against the single-process ``rodl.RayTransform`` (computed on every
rank): forward, adjoint, adjointness in the shares' inner products, CGLS, PDHG-TV by views;
the same on a sub-communicator (``comm.Split``), and float32. Rank 0 prints one JSON line
``RESULT {...}`` of the worst figures over the ranks.

``agree``: bad input on one rank (an unknown partition at construction, a share of the wrong
shape in ``op(x)``, in ``op.adjoint(y)``, in ``range.inner`` and in ``rodl.cgls``, a callback
that raises) must raise ``rodl.DistributedError`` naming that rank on every rank; each rank
prints ``CAUGHT <case> <message>`` and the job goes on to the next case.

``uncaught``: as ``agree``'s first case without catching: every rank ends with the error.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

import rodl
import rodl.distributed as rd

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
case = sys.argv[1]

space = rodl.uniform_discr([-1, -1, -1], [1, 1, 1], [10, 8, 6])
geometry = rodl.cone_beam_geometry(space, 4.0, 4.0, num_angles=7)
ray = rodl.RayTransform(space, geometry, threads=1)


def uneven(n):
    """Counts of n with a rank that holds nothing (the middle one, or the last of two)."""
    if size == 2:
        return [n, 0]
    c = [0] * size
    c[0] = n - n // 2
    c[-1] = n // 2
    return c


def worst(value):
    return comm.allreduce(float(value), op=MPI.MAX)


def rel_max(a, b):
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-300)


if case == "compare":
    rng = np.random.default_rng(7)
    x = rng.random(space.shape)
    y = rng.random(ray.range.shape)
    fx, aty = ray(x), ray.adjoint(y)
    xr = space.zero()
    rodl.cgls(ray, xr, fx, niter=6)
    xt = space.zero()
    rodl.pdhg_tv(ray, xt, fx, lam=0.01, niter=5)
    out = {}
    for partition in ("views", "slabs"):
        n = geometry.data_shape[0] if partition == "views" else space.shape[2]
        for label, counts in (("even", None), ("uneven", uneven(n))):
            op = rd.RayTransform(space, geometry, partition=partition, counts=counts, threads=1)
            xs, ys = x[op.domain_slice], y[op.range_slice]
            assert tuple(op.domain_shape) == xs.shape, (op.domain_shape, xs.shape)
            assert tuple(op.range_shape) == ys.shape, (op.range_shape, ys.shape)
            f, b = op(xs), op.adjoint(ys)
            lhs, rhs = op.range.inner(f, ys), op.domain.inner(xs, b)
            x0 = op.domain.zero()
            info = rodl.cgls(op, x0, fx[op.range_slice], niter=6)
            tv = None
            if partition == "views":  # TV needs the whole volume on every rank
                x1 = op.domain.zero()
                rodl.pdhg_tv(op, x1, fx[op.range_slice], lam=0.01, niter=5)
                tv = worst(rel_max(x1, xt))
            report = rodl.check_adjoint(op, trials=3)
            # The same report on every rank (a collective check).
            same = comm.allgather(report["max_rel_error"])
            out[f"{partition}-{label}"] = {
                "check_adjoint": worst(report["max_rel_error"]),
                "check_adjoint_same_on_ranks": len(set(same)) == 1,
                "pdhg_tv": tv,
                "counts": op.counts,
                "forward": worst(rel_max(f, fx[op.range_slice]) if f.size else 0.0),
                "adjoint": worst(rel_max(b, aty[op.domain_slice]) if b.size else 0.0),
                "adjointness": worst(abs(lhs - rhs) / abs(lhs)),
                "inner_vs_one_process": worst(abs(lhs - ray.range.inner(fx, y)) / abs(lhs)),
                "cgls": worst(rel_max(x0, xr[op.domain_slice]) if x0.size else 0.0),
                "cgls_iterations": info["iterations"],
            }
    # A sub-communicator (ranks split by parity): each group is a job of its own.
    sub = comm.Split(color=rank % 2, key=rank)
    op = rd.RayTransform(space, geometry, comm=sub, partition="slabs", threads=1)
    assert (op.rank, op.size) == (sub.Get_rank(), sub.Get_size()), (op.rank, op.size)
    f = op(x[op.domain_slice])
    x0 = op.domain.zero()
    rodl.cgls(op, x0, fx[op.range_slice], niter=6)
    out["slabs-split"] = {
        "forward": worst(rel_max(f, fx[op.range_slice]) if f.size else 0.0),
        "cgls": worst(rel_max(x0, xr[op.domain_slice]) if x0.size else 0.0),
    }
    del op
    sub.Free()
    # float32: the same partitions, to float32's rounding.
    s32 = rodl.uniform_discr([-1, -1, -1], [1, 1, 1], [10, 8, 6], dtype="float32")
    r32 = rodl.RayTransform(s32, geometry, threads=1)
    x32 = x.astype(np.float32)
    f32 = r32(x32)
    for partition in ("views", "slabs"):
        op = rd.RayTransform(s32, geometry, partition=partition, threads=1)
        f = op(x32[op.domain_slice])
        assert f.dtype == np.float32
        out[f"{partition}-float32"] = {"forward": worst(rel_max(f, f32[op.range_slice]))}
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)

elif case == "agree":
    bad = size - 1  # the rank that gets the bad input
    op = rd.RayTransform(space, geometry, partition="slabs", threads=1)
    xs = op.domain.one()
    ys = op.range.one()

    def wrong(a):
        return a if rank != bad else np.zeros(tuple(s + 1 for s in a.shape))

    cases = {
        "construct": lambda: rd.RayTransform(
            space, geometry, partition="views" if rank != bad else "viewz", threads=1
        ),
        "forward": lambda: op(wrong(xs)),
        "adjoint": lambda: op.adjoint(wrong(ys)),
        "inner": lambda: op.range.inner(ys, wrong(ys)),
        "cgls": lambda: rodl.cgls(op, op.domain.zero(), wrong(ys), niter=3),
        "callback": lambda: rodl.cgls(
            op, op.domain.zero(), ys, niter=3, callback=(lambda x: 1 / 0) if rank == bad else None
        ),
        "batch": lambda: op(np.stack([xs] * (2 if rank == bad else 1))),
    }
    for name, call in cases.items():
        try:
            call()
        except rodl.DistributedError as e:
            print(f"CAUGHT {name} rank {rank}: {e}", flush=True)
        else:
            print(f"MISSED {name} rank {rank}", flush=True)
    # The operator still works after the failures (every rank left each collective alike).
    f = op(xs)
    print(f"AFTER rank {rank} {op.range.norm(f):.12e}", flush=True)

elif case == "uncaught":
    rd.RayTransform(space, geometry, partition="views" if rank != 1 else "viewz", threads=1)
    print(f"MISSED rank {rank}", flush=True)

"""rodl.distributed under mpirun (2 and 3 ranks, CPU backend): the distributed ray transform
against one process, both partitions, even and uneven counts, and bad input on one rank.

Each test starts ``mpirun --oversubscribe -np N`` on ``scripts/distributed_worker.py`` with a
time limit (a hang fails the test). Skipped when the package was built without its ``mpi``
feature, or mpi4py or mpirun is missing (CI has all three: ``.ci/run``).
"""

import importlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import rodl

WORKER = pathlib.Path(__file__).parent / "scripts" / "distributed_worker.py"
LIMIT = 120  # seconds per job: generous for a loaded 2-core machine; a hang ends here


def _skip_reason():
    if not rodl.MPI_BUILT:
        return 'rodl built without its `mpi` feature (MATURIN_PEP517_ARGS="--features mpi")'
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install mpi4py)"
    if shutil.which("mpirun") is None:
        return "mpirun is not on the PATH (Debian: apt-get install openmpi-bin)"
    return None


needs_mpi = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def mpirun(ranks, case, tmp):
    """Runs the worker on `ranks` ranks; the completed process and each rank's stdout and
    stderr, read from Open MPI's per-rank files (the merged streams may interleave lines).
    A hang fails the test."""
    env = dict(os.environ, OMP_NUM_THREADS="1", RAYON_NUM_THREADS="1")
    out = pathlib.Path(tmp) / f"np{ranks}-{case}"
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--output-filename", str(out)]
    cmd += ["-np", str(ranks), sys.executable, str(WORKER), case]
    try:
        job = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"mpirun -np {ranks} {case}: no end after {LIMIT} s (a hang)\n{e.stdout}\n{e.stderr}")

    def read(rank, stream, merged):
        # Open MPI 4 writes DIR/<job>/rank.<r>/<stream>; elsewhere, the merged stream.
        files = sorted(out.glob(f"*/rank.{rank}/{stream}"))
        return files[-1].read_text() if files else merged

    job.rank_stdout = [read(r, "stdout", job.stdout) for r in range(ranks)]
    job.rank_stderr = [read(r, "stderr", job.stderr) for r in range(ranks)]
    return job


_results = {}


def compare(ranks, tmp):
    """The worst figures of the `compare` job on `ranks` ranks (one job per rank count)."""
    if ranks not in _results:
        job = mpirun(ranks, "compare", tmp)
        assert job.returncode == 0, job.stdout + job.stderr
        lines = [ln for ln in job.rank_stdout[0].splitlines() if ln.startswith("RESULT ")]
        assert len(lines) == 1, job.stdout + job.stderr
        _results[ranks] = json.loads(lines[0][len("RESULT "):])
    return _results[ranks]


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("partition", ["views", "slabs"])
@pytest.mark.parametrize("counts", ["even", "uneven"])
def test_equals_one_process(ranks, partition, counts, tmp_path_factory):
    r = compare(ranks, tmp_path_factory.mktemp("mpi"))[f"{partition}-{counts}"]
    if counts == "uneven":
        assert 0 in r["counts"], r
    assert r["forward"] <= 1e-10, r
    assert r["adjoint"] <= 1e-10, r
    assert r["adjointness"] <= 1e-12, r
    assert r["inner_vs_one_process"] <= 1e-10, r
    assert r["cgls"] <= 1e-10, r
    assert r["cgls_iterations"] == 6, r
    assert r["check_adjoint"] <= 1e-12 and r["check_adjoint_same_on_ranks"], r
    if partition == "views":
        assert r["pdhg_tv"] <= 1e-10, r


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_sub_communicator_and_float32(ranks, tmp_path_factory):
    r = compare(ranks, tmp_path_factory.mktemp("mpi"))
    assert r["slabs-split"]["forward"] <= 1e-10, r["slabs-split"]
    assert r["slabs-split"]["cgls"] <= 1e-10, r["slabs-split"]
    for partition in ("views", "slabs"):
        assert r[f"{partition}-float32"]["forward"] <= 1e-5, r


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_bad_input_on_one_rank_fails_on_every_rank(ranks, tmp_path):
    job = mpirun(ranks, "agree", tmp_path)
    out = job.stdout + job.stderr
    assert job.returncode == 0, out
    assert "MISSED" not in out, out
    bad = ranks - 1
    for rank, text in enumerate(job.rank_stdout):
        for case in ("construct", "forward", "adjoint", "inner", "cgls", "callback", "batch"):
            lines = [ln for ln in text.splitlines() if ln.startswith(f"CAUGHT {case} rank {rank}:")]
            assert len(lines) == 1, (case, rank, text)
            # Every rank's message names the rank that failed.
            assert lines[0].split(":", 1)[1].startswith(f" rank {bad}: "), (case, lines[0])
    after = {ln.split()[-1] for t in job.rank_stdout for ln in t.splitlines() if ln.startswith("AFTER")}
    assert len(after) == 1, out  # the same whole-data norm on every rank afterwards


@needs_mpi
def test_uncaught_error_ends_every_rank_with_its_message(tmp_path):
    job = mpirun(3, "uncaught", tmp_path)
    assert job.returncode != 0
    assert "MISSED" not in job.stdout
    for err in job.rank_stderr:
        assert "DistributedError: rank 1: ValueError: unknown partition" in err, job.rank_stderr


def test_module_import_says_how_to_build_without_mpi():
    if rodl.MPI_BUILT:
        pytest.skip("this build has MPI")
    with pytest.raises(ImportError, match="--features mpi"):
        importlib.import_module("rodl.distributed")

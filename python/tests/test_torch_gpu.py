"""rodl.torch on a GPU (marker ``gpu``; fails where no GPU can be used)."""

import numpy as np
import pytest

import rodl

torch = pytest.importorskip("torch")
rt = pytest.importorskip("rodl.torch")

pytestmark = pytest.mark.gpu


def setup(n=64, angles=60):
    s = rodl.uniform_discr([-1, -1], [1, 1], [n, n], dtype="float32")
    f = rodl.Factory.ray_transform(s, rodl.parallel_beam_geometry(s, angles))
    return s, f


def rel(a, b):
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return float((a - b).norm() / b.norm())


def test_cuda_matches_cpu_forward_and_backward():
    s, f = setup()
    for factory in [f, f.adjoint, rodl.Factory.fbp(s, rodl.parallel_beam_geometry(s, 60), "Hann")]:
        m = rt.OperatorModule.from_op_factory(factory)
        shape = tuple(m.operator_for("cpu").domain_shape)
        x = torch.randn((3, 2) + shape)
        xg = x.cuda().requires_grad_()
        xc = x.clone().requires_grad_()
        yg, yc = m(xg), m(xc)
        assert yg.device.type == "cuda" and rel(yg, yc) < 1e-5
        w = torch.randn_like(yc)
        (yg * w.cuda()).sum().backward()
        (yc * w).sum().backward()
        assert rel(xg.grad, xc.grad) < 1e-5
    assert set(m.build_counts()) == {"cpu", "cuda:0"}


def test_exact_transpose_on_the_gpu():
    torch.manual_seed(0)
    s, f = setup()
    m = rt.OperatorModule.from_op_factory(f)
    x = torch.randn(4, 64, 64, device="cuda", requires_grad=True)
    y = torch.randn((4,) + tuple(f.range_shape), device="cuda")
    (m(x) * y).sum().backward()
    ax = m(x.detach()).double()
    lhs = (ax * y.double()).sum()
    rhs = (x.detach().double() * x.grad.double()).sum()
    # float32 rounding, measured against the sizes of the vectors (the inner products of random
    # vectors cancel, so their own size is no scale), as rodl's check_adjoint does
    scale = max(float(ax.norm() * y.double().norm()), float(x.detach().double().norm() * x.grad.double().norm()))
    assert abs(float(lhs - rhs)) <= 1e-6 * scale


def test_second_stream_and_no_host_copy():
    s, f = setup()
    m = rt.OperatorModule.from_op_factory(f)
    x = torch.randn(8, 64, 64, device="cuda")
    ref = m(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = m(x)
        z = y * 2  # queued after rodl's work on the same stream
    side.synchronize()
    torch.testing.assert_close(y, ref)
    torch.testing.assert_close(z, 2 * ref)


def test_side_stream_runs_in_that_streams_order():
    """The side stream is held back by a long kernel queued before rodl's call: rodl's work
    waits for it on that stream (the input is written by the held-back stream), and the default
    stream is not held back."""
    s, f = setup()
    m = rt.OperatorModule.from_op_factory(f)
    x = torch.randn(8, 64, 64, device="cuda")
    ref = m(x)
    src = torch.zeros_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU cycles
        src.copy_(x)
        y = m(src)
    # the default stream is free meanwhile
    t = torch.cuda.Event(enable_timing=False)
    t.record(torch.cuda.current_stream())
    t.synchronize()
    assert not side.query()
    side.synchronize()
    torch.testing.assert_close(y, ref)


def test_cuda_graph_capture_and_replay():
    """rodl's kernels are captured into a CUDA graph with the network's (they are queued on the
    capturing stream): replays compute what the static input holds then."""
    s, f = setup()
    for factory in [f, f.adjoint, rodl.Factory.fbp(s, rodl.parallel_beam_geometry(s, 60), "Hann")]:
        m = rt.OperatorModule.from_op_factory(factory)
        shape = tuple(m.operator_for("cuda:0").domain_shape)
        static_x = torch.randn((4,) + shape, device="cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up, as torch.cuda.graph asks
            for _ in range(2):
                m(static_x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_y = m(static_x) * 2
        for _ in range(2):
            new = torch.randn_like(static_x)
            static_x.copy_(new)
            g.replay()
            torch.testing.assert_close(static_y, 2 * m(new))


def _beside_a_capture(mode, work):
    """Runs ``work()`` here while another thread captures a CUDA graph in ``mode``; returns what
    it gave (or raised) and whether the capture made a graph that replays."""
    import threading

    begun, done = threading.Barrier(2), threading.Barrier(2)
    made = []

    def capture():
        buf = torch.zeros(256, device="cuda")
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g, capture_error_mode=mode):
                buf.mul_(2)
                begun.wait()
                done.wait()
            g.replay()
            torch.cuda.synchronize()
            made.append(True)
        except RuntimeError:
            made.append(False)

    t = threading.Thread(target=capture)
    t.start()
    begun.wait()
    try:
        r = work()
    except Exception as e:  # returned for the test to check
        r = e
    done.wait()
    t.join()
    return r, made[0]


def test_a_global_capture_on_another_thread_is_a_clear_error():
    """While another thread captures in global mode (torch.cuda.graph's default), a rodl call that
    must allocate fails at once with rodl.GraphCaptureError naming the remedy; the next call after
    the capture works.

    The check runs in a process of its own: the driver invalidates the other thread's capture (as
    it does for any call that is unsafe during a global capture), and after an invalidated capture
    torch keeps its CUDA generator in the capture's state, so that later random tensors of the
    process fail ("Offset increment outside graph capture", seen under pytest-xdist)."""
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import numpy as np
        import rodl
        from test_torch_gpu import _beside_a_capture
        s = rodl.uniform_discr([-1, -1], [1, 1], [32, 32], dtype="float32")
        ray = rodl.RayTransform(s, rodl.parallel_beam_geometry(s, 20), backend="cuda:0")
        x = rodl.shepp_logan(s)
        want = ray(x)
        r, _ = _beside_a_capture("global", lambda: ray(x))
        assert isinstance(r, rodl.GraphCaptureError), r
        assert "thread_local" in str(r) and "global mode" in str(r), str(r)
        np.testing.assert_allclose(ray(x), want, rtol=1e-6)
        print("ok")
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stdout + run.stderr


def test_a_thread_local_capture_on_another_thread_leaves_rodl_running():
    s = rodl.uniform_discr([-1, -1], [1, 1], [32, 32], dtype="float32")
    cpu = rodl.RayTransform(s, rodl.parallel_beam_geometry(s, 20))
    ray = rodl.RayTransform(s, rodl.parallel_beam_geometry(s, 20), backend="cuda:0")
    x = rodl.shepp_logan(s)
    r, made = _beside_a_capture("thread_local", lambda: ray(x))
    assert not isinstance(r, Exception), r
    assert np.linalg.norm(r - cpu(x)) <= 1e-5 * np.linalg.norm(cpu(x))
    assert made, "the thread-local capture was invalidated"


def test_module_moved_between_devices_and_same_gpu_twice():
    s, f = setup()
    m = rt.OperatorModule.from_op_factory(f)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 1, 3, padding=1), m)
    x = torch.randn(2, 1, 64, 64)
    y_cpu = net(x)
    net.to("cuda:0")
    y_gpu = net(x.cuda())
    assert rel(y_gpu, y_cpu) < 1e-5
    dp = torch.nn.DataParallel(net, device_ids=[0])
    dp(x.cuda())
    assert m.build_counts() == {"cpu": 1, "cuda:0": 1}


def test_torch_compile_on_the_gpu():
    s, f = setup()
    m = rt.OperatorModule.from_op_factory(f)
    x = torch.randn(2, 64, 64, device="cuda", requires_grad=True)
    c = torch.compile(m, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(c(x), m(x))
    c(x).sum().backward()
    assert x.grad.device.type == "cuda"


def test_memory_stays_flat():
    s, f = setup(32, 20)
    m = rt.OperatorModule.from_op_factory(f)
    x = torch.randn(4, 32, 32, device="cuda", requires_grad=True)
    m(x).sum().backward()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    for _ in range(2000):
        x.grad = None
        m(x).sum().backward()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before


def test_wrong_device_dtype_shape():
    s, f = setup()
    m = rt.OperatorModule.from_op_factory(f)
    op0 = m.operator_for("cuda:0")
    with pytest.raises(ValueError, match="built for cuda:0"):
        rt.apply(op0, torch.randn(64, 64))
    with pytest.raises(TypeError, match="float32"):
        m(torch.randn(64, 64, device="cuda", dtype=torch.float64))
    with pytest.raises(ValueError, match="shape"):
        m(torch.randn(3, 3, device="cuda"))


def test_concurrent_first_use_builds_once_per_device():
    """Replicas of nn.DataParallel call the module from one thread per device at once: the
    first use on a device builds its operator once, whichever thread gets there first."""
    import threading

    s, f = setup(32, 20)
    m = rt.OperatorModule.from_op_factory(f)
    x = torch.randn(2, 32, 32, device="cuda")
    outs, errors = [], []

    def call():
        try:
            outs.append(m(x))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert m.build_counts() == {"cuda:0": 1}
    for y in outs:
        torch.testing.assert_close(y, outs[0])
    # a second module on the same GPU builds its own replica
    m2 = rt.OperatorModule.from_op_factory(f)
    torch.testing.assert_close(m2(x), outs[0])
    assert m2.build_counts() == {"cuda:0": 1}


def test_distributed_data_parallel_one_process_per_gpu():
    """DistributedDataParallel with one process on its GPU (NCCL, world size 1 here): the
    module builds on the process's device; gradients flow through rodl's op."""
    import os
    import socket

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        s, f = setup(32, 20)
        net = torch.nn.Sequential(torch.nn.Conv2d(1, 1, 3, padding=1), rt.OperatorModule.from_op_factory(f)).cuda()
        ddp = DistributedDataParallel(net, device_ids=[0])
        x = torch.randn(2, 1, 32, 32, device="cuda")
        loss = ddp(x).pow(2).mean()
        loss.backward()
        assert net[0].weight.grad is not None and torch.isfinite(net[0].weight.grad).all()
        assert net[1].build_counts() == {"cuda:0": 1}
    finally:
        dist.destroy_process_group()


def test_product_space_operators_on_cuda_tensors():
    # Gradient's range and its adjoint's domain are product spaces: their parts stacked along a
    # leading axis, used in place on the GPU like tensor spaces.
    s = rodl.uniform_discr([-1, -1], [1, 1], [32, 40], dtype="float32")
    g = rodl.Factory.gradient(s)
    for factory in [g, g.adjoint, g.adjoint @ g]:
        m = rt.OperatorModule.from_op_factory(factory)
        shape = tuple(m.operator_for("cpu").domain_shape)
        x = torch.randn((3,) + shape)
        xg = x.cuda().requires_grad_()
        xc = x.clone().requires_grad_()
        yg, yc = m(xg), m(xc)
        assert yg.device.type == "cuda" and yg.shape == yc.shape and rel(yg, yc) < 1e-5
        w = torch.randn_like(yc)
        (yg * w.cuda()).sum().backward()
        (yc * w).sum().backward()
        assert rel(xg.grad, xc.grad) < 1e-5

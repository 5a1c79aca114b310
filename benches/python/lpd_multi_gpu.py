"""The learned primal-dual training step of `lpd_anchor.py` on several GPUs, with rodl's
OperatorModule built from a factory (one operator per GPU, built on first use there):

    python3 lpd_multi_gpu.py dp  [GPUS]   # nn.DataParallel, batch 8 per GPU
    python3 lpd_multi_gpu.py ddp [GPUS]   # DistributedDataParallel, one process per GPU, batch 8 each

GPUS (default: every visible GPU) is how many GPUs to use; each mode first runs one GPU as the
baseline, then GPUS of them, and prints ms per step, samples per second and the speed-up in
throughput. The data-parallel results are checked against one GPU on the same samples (the
network's output for a fixed batch, relative difference).
"""
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lpd_anchor import LPD, N, NA, B  # noqa: E402  (the anchor's network and sizes)

ND = int(1.5 * N)


def operator_modules():
    import rodl
    import rodl.torch as rt

    space = rodl.uniform_discr([-1, -1], [1, 1], [N, N], dtype="float32")
    rho = 2 ** 0.5
    geom = rodl.Parallel2dGeometry((0.0, np.pi, NA), (-rho, rho, ND))
    factory = rodl.Factory.ray_transform(space, geom)
    return (rt.OperatorModule.from_op_factory(factory),
            rt.OperatorModule.from_op_factory(factory.adjoint))


def timed_steps(model, y, target, reps=10, sync=None):
    opt = torch.optim.Adam(model.parameters(), 1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(y), target)
        loss.backward()
        opt.step()

    sync = sync or torch.cuda.synchronize
    for _ in range(3):
        step()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        step()
    sync()
    return (time.perf_counter() - t) / reps * 1e3


def data_parallel(gpus):
    torch.manual_seed(0)
    fwd, adj = operator_modules()
    base = LPD(fwd, adj).to("cuda:0")
    results = {}
    for n in sorted({1, gpus}):
        ids = list(range(n))
        model = torch.nn.DataParallel(base, device_ids=ids) if n > 1 else base
        y = torch.rand((B * n, 1, NA, ND), device="cuda:0")
        target = torch.rand((B * n, 1, N, N), device="cuda:0")
        ms = timed_steps(model, y, target, sync=lambda: [torch.cuda.synchronize(i) for i in ids])
        results[n] = ms
        print(f"DataParallel on {n} GPU(s), batch {B * n}: {ms:.1f} ms/step, "
              f"{B * n / ms * 1e3:.0f} samples/s", flush=True)
    if gpus > 1:
        speedup = (B * gpus / results[gpus]) / (B / results[1])
        print(f"DataParallel throughput on {gpus} GPUs: {speedup:.2f}x one GPU", flush=True)
        with torch.no_grad():
            y = torch.rand((B * gpus, 1, NA, ND), device="cuda:0")
            one = base(y)
            many = torch.nn.DataParallel(base, device_ids=list(range(gpus)))(y)
            rel = ((one - many).norm() / one.norm()).item()
        print(f"DataParallel output against one GPU: relative difference {rel:.1e}", flush=True)
    print("build counts:", fwd.build_counts(), adj.build_counts(), flush=True)


def _ddp_worker(rank, world, port, out):
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.manual_seed(0)
    fwd, adj = operator_modules()
    model = torch.nn.parallel.DistributedDataParallel(
        LPD(fwd, adj).to(f"cuda:{rank}"), device_ids=[rank])
    g = torch.Generator(device=f"cuda:{rank}").manual_seed(rank)
    y = torch.rand((B, 1, NA, ND), device=f"cuda:{rank}", generator=g)
    target = torch.rand((B, 1, N, N), device=f"cuda:{rank}", generator=g)
    ms = timed_steps(model, y, target)
    t = torch.tensor([ms], device=f"cuda:{rank}")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        out.put(t.item())
    dist.barrier()
    dist.destroy_process_group()


def distributed(gpus):
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    results = {}
    for n in sorted({1, gpus}):
        q = ctx.SimpleQueue()
        mp.start_processes(_ddp_worker, args=(n, 29500 + n, q), nprocs=n, start_method="spawn")
        ms = q.get()
        results[n] = ms
        print(f"DistributedDataParallel, {n} process(es), batch {B} each: {ms:.1f} ms/step, "
              f"{B * n / ms * 1e3:.0f} samples/s", flush=True)
    if gpus > 1:
        speedup = (B * gpus / results[gpus]) / (B / results[1])
        print(f"DistributedDataParallel throughput on {gpus} GPUs: {speedup:.2f}x one GPU",
              flush=True)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "dp"
    gpus = int(sys.argv[2]) if len(sys.argv) > 2 else torch.cuda.device_count()
    if gpus < 1 or gpus > torch.cuda.device_count():
        sys.exit(f"lpd_multi_gpu: {gpus} GPUs asked, {torch.cuda.device_count()} visible")
    print("torch", torch.__version__, torch.cuda.get_device_name(0), f"{gpus} GPU(s)", flush=True)
    {"dp": data_parallel, "ddp": distributed}[mode](gpus)


if __name__ == "__main__":
    main()

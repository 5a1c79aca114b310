"""Learned primal-dual reconstruction (Adler & Öktem 2018) trained with rodl's ray transform
inside the network, on simulated Shepp–Logan data: random ellipse phantoms around the modified
Shepp–Logan, their parallel-beam sinograms with 5 % Gaussian noise. Prints the loss, the PSNR of
the batch and the time per training step; runs on the GPU when there is one.

    pip install ./python torch && python examples/python/learned_primal_dual.py [--steps 200]

The operator comes from a factory, so the same module runs on the CPU, on any GPU and under
``nn.DataParallel``; on a GPU the tensors never leave the device (DLPack, the caller's stream).
"""

import argparse
import time

import numpy as np
import torch

import rodl
import rodl.torch as rt

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=None, help="image size (default 256 on a GPU, 64 on the CPU)")
parser.add_argument("--angles", type=int, default=None)
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--steps", type=int, default=100)
parser.add_argument("--iterations", type=int, default=5, help="unrolled primal-dual iterations")
args = parser.parse_args()

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
N = args.size or (256 if device.type == "cuda" else 64)
NA = args.angles or (360 if device.type == "cuda" else 60)
CH = 32

space = rodl.uniform_discr([-1, -1], [1, 1], [N, N], dtype="float32")
geometry = rodl.parallel_beam_geometry(space, NA)
factory = rodl.Factory.ray_transform(space, geometry)
fwd = rt.OperatorModule.from_op_factory(factory)
adj = rt.OperatorModule.from_op_factory(factory.adjoint)
# Scale the operator to norm ~1 so that the network sees well-scaled inputs.
opnorm = rodl.RayTransform(space, geometry).norm(iterations=20)


class Block(torch.nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(cin, CH, 3, padding=1), torch.nn.PReLU(),
            torch.nn.Conv2d(CH, CH, 3, padding=1), torch.nn.PReLU(),
            torch.nn.Conv2d(CH, cout, 3, padding=1),
        )

    def forward(self, x):
        return self.net(x)


class LearnedPrimalDual(torch.nn.Module):
    def __init__(self, iterations):
        super().__init__()
        self.dual = torch.nn.ModuleList([Block(3, 1) for _ in range(iterations)])
        self.primal = torch.nn.ModuleList([Block(2, 1) for _ in range(iterations)])

    def forward(self, y):
        x = torch.zeros((y.shape[0], 1, N, N), device=y.device)
        h = torch.zeros_like(y)
        for d, p in zip(self.dual, self.primal):
            h = h + d(torch.cat([h, fwd(x) / opnorm, y], 1))
            x = x + p(torch.cat([x, adj(h) / opnorm], 1))
        return x


rng = np.random.default_rng(0)
base = rodl.shepp_logan(space)
points = np.stack(np.meshgrid(np.linspace(-1, 1, N), np.linspace(-1, 1, N), indexing="ij"), -1)


def sample_batch(b):
    """Shepp–Logan with a few random ellipses added: images, noisy sinograms (both tensors)."""
    images = np.repeat(base[None], b, 0)
    for k in range(b):
        for _ in range(rng.integers(1, 4)):
            c = rng.uniform(-0.5, 0.5, 2)
            r = rng.uniform(0.05, 0.25, 2)
            images[k][(((points - c) / r) ** 2).sum(-1) < 1] += rng.uniform(-0.2, 0.2)
    x = torch.from_numpy(images[:, None]).to(device)
    with torch.no_grad():
        y = fwd(x) / opnorm
        y = y + 0.05 * y.abs().mean() * torch.randn_like(y)
    return x, y


model = LearnedPrimalDual(args.iterations).to(device)
opt = torch.optim.Adam(model.parameters(), 1e-3)
print(f"device {device}, {N}x{N}, {NA} angles, batch {args.batch}, {args.iterations} unrolled iterations")
x_test, y_test = sample_batch(args.batch)
for step in range(1, args.steps + 1):
    x, y = sample_batch(args.batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(y), x)
    loss.backward()
    opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    ms = 1e3 * (time.perf_counter() - t)
    if step % 10 == 0 or step == 1:
        with torch.no_grad():
            rec = model(y_test).cpu().numpy()
        psnr = np.mean([rodl.psnr(rec[k, 0], x_test[k, 0].cpu().numpy()) for k in range(args.batch)])
        print(f"step {step:4d}  loss {loss.item():.3e}  test PSNR {psnr:5.2f} dB  {ms:7.1f} ms/step")

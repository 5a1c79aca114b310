"""(Copied from the project's shared anchors, with a rodl variant added: `python3 lpd_anchor.py [astra|rodl]`.)

Learned primal-dual training step on a GPU: a learned primal-dual-style network with the ray transform inside,
trained with PyTorch, batch B. Anchors: ODL 1.0's OperatorModule over ASTRA (ODL's PyTorch spaces on
cuda:0), and ASTRA's direct GPU-resident calls in a per-sample loop (the best that exists in Python today).
Prints ms per training step (forward + backward), and the network alone (operator replaced by a free
stand-in of the same shapes) so that the operator's share is visible."""
import time, sys, traceback, numpy as np, torch
torch.backends.cudnn.benchmark = True
dev = torch.device('cuda:0')
N, NA, B, ITERS, CH = 256, 360, 8, 5, 32

def timeit(step, reps=10):
    for _ in range(3): step()
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(reps): step()
    torch.cuda.synchronize(); return (time.perf_counter() - t) / reps * 1e3

class Block(torch.nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Conv2d(cin, CH, 3, padding=1), torch.nn.PReLU(),
                                       torch.nn.Conv2d(CH, CH, 3, padding=1), torch.nn.PReLU(),
                                       torch.nn.Conv2d(CH, cout, 3, padding=1))
    def forward(self, x): return self.net(x)

class LPD(torch.nn.Module):
    """Learned primal-dual (Adler & Oktem 2018), ITERS unrolled iterations, one channel of memory."""
    def __init__(self, fwd, adj):
        super().__init__()
        self.fwd, self.adj = fwd, adj
        self.dual = torch.nn.ModuleList([Block(3, 1) for _ in range(ITERS)])
        self.primal = torch.nn.ModuleList([Block(2, 1) for _ in range(ITERS)])
    def forward(self, y):
        x = torch.zeros((y.shape[0], 1, N, N), device=y.device)
        h = torch.zeros_like(y)
        for k in range(ITERS):
            h = h + self.dual[k](torch.cat([h, self.fwd(x), y], 1))
            x = x + self.primal[k](torch.cat([x, self.adj(h)], 1))
        return x

def train_step_fn(model, y, target):
    opt = torch.optim.Adam(model.parameters(), 1e-4)
    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(y), target)
        loss.backward(); opt.step()
    return step

def rodl_section(y, target):
    """rodl's OperatorModule from a factory: the whole batch per call, on the tensors' GPU and
    stream (DLPack), the backward the exact transpose."""
    import rodl, rodl.torch as rt
    ND = y.shape[-1]
    space = rodl.uniform_discr([-1, -1], [1, 1], [N, N], dtype='float32')
    rho = 2 ** 0.5  # ODL's parallel_beam_geometry detector half-width for [-1, 1]^2
    geom = rodl.Parallel2dGeometry((0.0, np.pi, NA), (-rho, rho, ND))
    factory = rodl.Factory.ray_transform(space, geom)
    fwd, adj = rt.OperatorModule.from_op_factory(factory), rt.OperatorModule.from_op_factory(factory.adjoint)
    print(f'rodl OperatorModule (factory, DLPack): {timeit(train_step_fn(LPD(fwd, adj).to(dev), y, target)):.1f} ms/step', flush=True)
    x1 = torch.rand((B, 1, N, N), device=dev)
    print(f'  rodl OperatorModule alone, batch {B}: forward {timeit(lambda: fwd(x1), 20):.3f} ms, adjoint {timeit(lambda: adj(y), 20):.3f} ms', flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == 'rodl':
        y = torch.rand((B, 1, NA, int(1.5 * N)), device=dev); target = torch.rand((B, 1, N, N), device=dev)
        print('torch', torch.__version__, torch.cuda.get_device_name(0), flush=True)
        ND = y.shape[-1]
        free_fwd = lambda x: torch.nn.functional.interpolate(x, size=(NA, ND))
        free_adj = lambda h: torch.nn.functional.interpolate(h, size=(N, N))
        print(f'network alone (B={B}, {N}^2, {NA} angles x {ND}): {timeit(train_step_fn(LPD(free_fwd, free_adj).to(dev), y, target)):.1f} ms/step', flush=True)
        rodl_section(y, target)
        return
    skip_odl = len(sys.argv) > 1 and sys.argv[1] == 'astra'
    print('torch', torch.__version__, torch.cuda.get_device_name(0), flush=True)
    y = torch.rand((B, 1, NA, int(1.5 * N)), device=dev); target = torch.rand((B, 1, N, N), device=dev)
    ND = y.shape[-1]
    # the network alone: free stand-ins with the right shapes (a strided slice / pad)
    free_fwd = lambda x: torch.nn.functional.interpolate(x, size=(NA, ND))
    free_adj = lambda h: torch.nn.functional.interpolate(h, size=(N, N))
    print(f'network alone (B={B}, {N}^2, {NA} angles x {ND}): {timeit(train_step_fn(LPD(free_fwd, free_adj).to(dev), y, target)):.1f} ms/step', flush=True)
    # ODL 1.0 OperatorModule on pytorch spaces, ASTRA backend
    try:
        if skip_odl: raise ImportError('skipped')
        import odl
        from odl.contrib.torch import OperatorModule
        tomo = odl.applications.tomo
        space = odl.uniform_discr([-1, -1], [1, 1], [N, N], dtype='float32', impl='pytorch', device='cuda:0')
        geom = tomo.parallel_beam_geometry(space, num_angles=NA, det_shape=ND)
        A = tomo.RayTransform(space, geom, impl='astra_cuda')
        fwd, adj = OperatorModule(A), OperatorModule(A.adjoint)
        print(f'ODL OperatorModule + astra_cuda: {timeit(train_step_fn(LPD(fwd, adj).to(dev), y, target), 5):.1f} ms/step', flush=True)
        x1 = torch.rand((B, 1, N, N), device=dev)
        t = timeit(lambda: fwd(x1), 5); t2 = timeit(lambda: adj(y), 5)
        print(f'  ODL OperatorModule alone, batch {B}: forward {t:.2f} ms, adjoint {t2:.2f} ms', flush=True)
    except Exception:
        traceback.print_exc()
    # ASTRA direct (GPU-resident, DLPack), per-sample loop: 2D via a 3D parallel geometry with one slice
    try:
        import astra, astra.experimental as ae
        vg = astra.create_vol_geom(N, N, 1)
        ang = np.linspace(0, np.pi, NA, endpoint=False)
        pg = astra.create_proj_geom('parallel3d', 1.0 * N / (ND / 1.5) , 1.0, 1, ND, ang)
        pid = astra.create_projector('cuda3d', pg, vg)
        class AstraFP(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = torch.empty((x.shape[0], 1, NA, ND), device=x.device)
                for b in range(x.shape[0]):
                    vol = x[b, 0].detach().reshape(1, N, N).contiguous(); p = torch.zeros((1, NA, ND), device=x.device)
                    ae.direct_FP3D(pid, vol, p); out[b, 0] = p[0]
                return out
            @staticmethod
            def backward(ctx, g): return AstraBP.apply(g)
        class AstraBP(torch.autograd.Function):
            @staticmethod
            def forward(ctx, h):
                out = torch.empty((h.shape[0], 1, N, N), device=h.device)
                for b in range(h.shape[0]):
                    p = h[b, 0].detach().reshape(1, NA, ND).contiguous(); vol = torch.zeros((1, N, N), device=h.device)
                    ae.direct_BP3D(pid, vol, p); out[b, 0] = vol[0]
                return out
            @staticmethod
            def backward(ctx, g): return AstraFP.apply(g)
        print(f'ASTRA direct (GPU-resident, per-sample loop): {timeit(train_step_fn(LPD(AstraFP.apply, AstraBP.apply).to(dev), y, target)):.1f} ms/step', flush=True)
        x1 = torch.rand((B, 1, N, N), device=dev)
        print(f'  ASTRA direct alone, batch {B}: forward {timeit(lambda: AstraFP.apply(x1)):.2f} ms, adjoint {timeit(lambda: AstraBP.apply(y)):.2f} ms', flush=True)
    except Exception:
        traceback.print_exc()
    try:
        rodl_section(y, target)
    except Exception:
        traceback.print_exc()

if __name__ == '__main__':
    main()

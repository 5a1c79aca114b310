"""One process of the compile-cache test (python/tests/test_torch.py): compiles a module that
calls an OperatorModule, runs forward and backward, and prints the largest relative difference of
the gradient from 2·(w_d/w_r)·A*(A x) computed with NumPy. Between forward and backward another
rodl operator of the transpose's shape is used eagerly, so that a handle of the compiled graph
that named another operator in the process that compiled it would give a wrong gradient here."""

import json
import sys

import numpy as np
import torch

import rodl
import rodl.torch as rt

s = rodl.uniform_discr([-1, -1], [1, 1], [16, 16], dtype="float32")
factory = rodl.Factory.ray_transform(s, rodl.parallel_beam_geometry(s, 12))
layer = rt.OperatorModule.from_op_factory(factory)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return (self.layer(x) ** 2).sum()


net = torch.compile(Net())
x = torch.from_numpy(np.random.default_rng(7).standard_normal((2, 16, 16)).astype("float32"))
x.requires_grad_()
loss = net(x)
# Another operator from sinograms to images, used eagerly between forward and backward.
other = rt.OperatorModule.from_op_factory(3.0 * factory.adjoint)
other(torch.zeros((1,) + tuple(factory.range_shape)))
loss.backward()

A = factory.build("cpu")
w = A.domain.weighting / A.range.weighting
xn = x.detach().numpy()
want = np.stack([2 * w * A.adjoint(A(v)) for v in xn])
err = float(np.abs(x.grad.numpy() - want).max() / np.abs(want).max())
print(json.dumps({"max_rel_error": err}))
sys.exit(0)

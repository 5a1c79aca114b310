"""rodl's linear operators inside PyTorch: autograd with the exact adjoint, on the tensor's own
device and stream, built per device from a factory.

    import rodl, rodl.torch
    space = rodl.uniform_discr([-1, -1], [1, 1], [256, 256], dtype="float32")
    factory = rodl.Factory.ray_transform(space, rodl.parallel_beam_geometry(space, 360))
    layer = rodl.torch.OperatorModule.from_op_factory(factory)
    sino = layer(images)          # images: (*batch, 256, 256) on the CPU or any GPU

``torch.ops.rodl.apply`` is a registered custom operator (``torch.library.custom_op``) whose
backward applies the operator's exact transpose for tensors — its adjoint in rodl's weighted
spaces times ``w_domain / w_range``, as ODL's ``OperatorModule`` does — through the same custom
operator, so double backward works and
``torch.compile`` keeps it in the graph. On a GPU the tensors are used in place through DLPack
(no host copy): the operator runs on the tensor's device and on the caller's current CUDA
stream — its kernels, copies and temporaries are queued there, in that stream's order, so
``torch.cuda.graph`` captures them too — and nothing synchronises the device or the host. On the CPU the tensors are shared with NumPy without a copy.

Backend options travel with the factory (``rodl.Factory.ray_transform(space, geometry,
threads=4, memory_budget=2 << 30)``, ``OperatorModule(factory, deterministic=True)``,
``RayTransform(space, geometry, ...)`` here): each device's operator is built with the options
of its kind. **Determinism**: while ``torch.use_deterministic_algorithms(True)`` is on, a
module builds its GPU operators with ``deterministic=True`` (bitwise reproducible forwards and
exact transposes; ``factory_for(device)`` shows the factory it builds from), and a module
holding a fixed GPU ray transform built without it raises ``RuntimeError`` (a warning with
``warn_only=True``), as PyTorch's own non-deterministic operations do. On the CPU every rodl
kernel is deterministic already (each voxel and each ray is summed by one thread in a fixed
order), so nothing changes there.

This module imports ``torch``; ``import rodl`` alone does not.
"""

import itertools
import secrets
import threading
import warnings
import weakref
from typing import Any, Dict, Optional, Union

import numpy as np
import torch

from ._rodl import Factory, Geometry, Operator, Space
from ._rodl import RayTransform as _RayTransform

__all__ = ["OperatorModule", "RayTransform", "apply", "operator_handle"]

# Handles. ``torch.compile`` bakes an operator's handle into its graph as a constant, and torch's
# on-disk caches (FX graph, AOTAutograd) give that graph to later processes whose graph has the
# same text. So a handle must never name one operator in one process and another operator (or
# none) in a process that can load the graph: handles are even numbers above a random base drawn
# once per process (2^-40 chance that two processes share one), so a graph traced in one process
# is never the graph of another, and the caches cannot hand it over. The transpose of handle ``h``
# is ``h ^ 1``, built on first use from the operator behind ``h`` (a backward graph names it as
# a constant too). Registering takes no lock, so that ``torch.compile(fullgraph=True)`` traces
# through ``apply`` (dict updates and ``next`` on a counter are atomic under the GIL).
_BASE = (1 << 61) | (secrets.randbits(40) << 20)
_counter = itertools.count(1)
_operators: Dict[int, Operator] = {}
_by_identity: Dict[int, int] = {}
# Modules by key, for the constant-result lookup that torch.compile traces (weak: a module
# that is gone needs no lookup; keys are never reused).
_modules: "weakref.WeakValueDictionary[int, OperatorModule]" = weakref.WeakValueDictionary()
_module_keys = itertools.count(1)


def operator_handle(op: Operator) -> int:
    """The integer handle under which ``torch.ops.rodl.apply`` finds ``op`` in this process
    (registered once; the operator stays alive for the life of the process). Handles are unique
    to their process: a compiled graph that torch's caches carry to another process never
    matches that process's graphs."""
    return _handle_of(op)


@torch._dynamo.assume_constant_result
def _handle_of(op: Operator) -> int:
    key = id(op)
    h = _by_identity.get(key)
    if h is not None and _operators.get(h) is op:
        return h
    h = _BASE + (next(_counter) << 1)
    _operators[h] = op
    _by_identity[key] = h
    return h


def _transpose_handle(h: int) -> int:
    """The handle of the operator's transpose in the Euclidean inner product of tensors, which
    is what autograd needs: ``(w_domain / w_range) · op.adjoint`` for rodl's weighted spaces
    (ODL's ``OperatorModule`` scales its adjoint the same way). The transpose of the transpose
    is the operator itself."""
    return h ^ 1


def _resolve(h: int) -> Operator:
    """The operator of handle ``h`` (a transpose is built on first use)."""
    op = _operators.get(h)
    if op is not None:
        return op
    base = _operators.get(h ^ 1) if h & 1 else None
    if base is None:
        raise RuntimeError(
            f"rodl.torch: no operator has the handle {h} in this process. A graph compiled in "
            "another process (torch's FX-graph or AOTAutograd cache) names an operator of that "
            "process; rodl's handles are unique to their process, so such a graph should not "
            "load here: clear the cache (TORCHINDUCTOR_CACHE_DIR) and report this"
        )
    ratio = base.domain.weighting / base.range.weighting
    adj = base.adjoint
    return _operators.setdefault(h, adj if ratio == 1.0 else ratio * adj)


_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _check(op: Operator, x: torch.Tensor) -> tuple:
    want = _DTYPES[op.dtype.name]
    if x.dtype != want:
        raise TypeError(f"rodl operator computes in {want}, got a {x.dtype} tensor")
    dshape = tuple(op.domain_shape)
    d = len(dshape)
    if x.dim() < d or tuple(x.shape[x.dim() - d:]) != dshape:
        raise ValueError(
            f"rodl operator takes tensors of shape (*batch, {', '.join(map(str, dshape))}), "
            f"got {tuple(x.shape)}"
        )
    return tuple(x.shape[: x.dim() - d]) + tuple(op.range_shape)


def _eager(op: Operator, x: torch.Tensor) -> torch.Tensor:
    out_shape = _check(op, x)
    if x.device.type == "cpu":
        if op.device != "cpu":
            raise ValueError(f"a CPU tensor for an operator built for {op.device}")
        xn = x.detach().contiguous().numpy()
        if op.domain.is_product or op.range.is_product:
            # rodl batches tensor spaces itself; product-space elements go one by one
            d = len(op.domain_shape)
            flat = xn.reshape((-1,) + xn.shape[xn.ndim - d:])
            y = np.stack([op(v) for v in flat]) if len(flat) else np.empty((0,) + tuple(op.range_shape), xn.dtype)
        else:
            y = op(xn)
        return torch.from_numpy(y).reshape(out_shape)
    if x.device.type != "cuda":
        raise ValueError(f"rodl runs on CPU and CUDA tensors, got a tensor on {x.device}")
    dev = f"cuda:{x.device.index}"
    if op.device != dev:
        raise ValueError(f"a tensor on {dev} for an operator built for {op.device}")
    xc = x.detach().contiguous()
    out = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    # DLPack's stream argument: 1 names the legacy default stream (0 is not allowed there).
    dl = stream if stream != 0 else 1
    op._apply_dlpack(xc.__dlpack__(stream=dl), out.__dlpack__(stream=dl), stream)
    return out


@torch.library.custom_op("rodl::apply", mutates_args=())
def _apply(x: torch.Tensor, handle: int) -> torch.Tensor:
    return _eager(_resolve(handle), x)


@_apply.register_fake
def _apply_fake(x: torch.Tensor, handle: int) -> torch.Tensor:
    return x.new_empty(_check(_resolve(handle), x))


def _setup_context(ctx, inputs, output):
    ctx.handle = inputs[1]


def _backward(ctx, grad):
    return torch.ops.rodl.apply(grad.contiguous(), _transpose_handle(ctx.handle)), None


_apply.register_autograd(_backward, setup_context=_setup_context)


def apply(op: Operator, x: torch.Tensor) -> torch.Tensor:
    """``op(x)`` on a tensor of shape ``(*batch, *op.domain_shape)``, differentiable (the
    gradient is the operator's exact transpose). ``op`` runs as it was built: under
    ``torch.use_deterministic_algorithms(True)`` build a GPU ray transform with
    ``deterministic=True`` (or use an ``OperatorModule`` of a factory, which does)."""
    return torch.ops.rodl.apply(x, operator_handle(op))


class _Cache:
    """One built operator per device, shared by a module's replicas (``nn.DataParallel`` copies
    the module, not this)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.handles: Dict[str, int] = {}
        self.builds: Dict[str, int] = {}


def _deterministic() -> bool:
    return torch.are_deterministic_algorithms_enabled()


def _check_fixed_deterministic(op: Operator, device: str) -> None:
    """Under ``torch.use_deterministic_algorithms(True)``, a fixed GPU ray transform built
    without ``deterministic=True`` is refused (warned about with ``warn_only=True``)."""
    if not isinstance(op, _RayTransform) or op.options["deterministic"]:
        return
    msg = (
        f"rodl.torch: a ray transform on {device} built without deterministic=True, while "
        "torch.use_deterministic_algorithms(True) is on: build it with deterministic=True, or "
        "build the OperatorModule from a factory (it then builds a deterministic one itself)"
    )
    if torch.is_deterministic_algorithms_warn_only_enabled():
        warnings.warn(msg, UserWarning, stacklevel=4)
    else:
        raise RuntimeError(msg)


class OperatorModule(torch.nn.Module):
    """A rodl linear operator as a PyTorch module (ODL's ``OperatorModule``).

    Built from a factory (``OperatorModule.from_op_factory(rodl.Factory.ray_transform(...))``),
    it builds the operator for each device on first use there and keeps it, so one module works
    on the CPU, on any GPU, under ``nn.DataParallel`` (replicas share the cache), under
    DistributedDataParallel (one process per GPU) and after ``model.to('cuda:1')``. Built from one
    operator, it runs on that operator's device only. Inputs are ``(*batch, *domain_shape)``
    tensors of the operator's dtype (float32; float64 on the CPU); non-contiguous inputs are
    made contiguous.

    Keyword options (``threads``, ``memory_budget``, ``deterministic``; see
    ``rodl.Factory.with_options``) replace the factory's own backend options. While
    ``torch.use_deterministic_algorithms(True)`` is on, GPU operators are built with
    ``deterministic=True`` (see the module's documentation).
    """

    def __init__(self, operator: Union[Factory, Operator], **options: Any):
        super().__init__()
        self.factory: Optional[Factory]
        self.fixed: Optional[Operator]
        if isinstance(operator, Factory):
            self.factory = operator.with_options(**options) if options else operator
            self.fixed = None
        elif isinstance(operator, Operator):
            if options:
                raise TypeError(
                    "backend options are given to the operator's constructor; an OperatorModule "
                    f"takes them only with a rodl.Factory (got {', '.join(sorted(options))})"
                )
            self.factory = None
            self.fixed = operator
        else:
            raise TypeError(
                f"OperatorModule needs a rodl.Factory or rodl.Operator, got {type(operator).__name__}"
            )
        self._cache = _Cache()
        self._key = next(_module_keys)
        _modules[self._key] = self

    @classmethod
    def from_op_factory(cls, factory: Factory, **options: Any) -> "OperatorModule":
        """The module that builds ``factory``'s operator on each device it meets (with the
        backend ``options`` in place of the factory's own, where given)."""
        return cls(factory, **options)

    def factory_for(self, device: Union[str, torch.device]) -> Optional[Factory]:
        """The factory the operator for ``device`` is built from (``None`` for a module of one
        operator): the module's, with ``deterministic=True`` for a GPU while
        ``torch.use_deterministic_algorithms(True)`` is on."""
        return self._factory_for(torch.device(device), _deterministic())

    def _factory_for(self, device: torch.device, deterministic: bool) -> Optional[Factory]:
        f = self.factory
        if f is None or device.type != "cuda" or not deterministic:
            return f
        opts = f.options
        if opts is None or opts["deterministic"]:
            return f
        return f.with_options(deterministic=True)

    def operator_for(self, device: Union[str, torch.device]) -> Operator:
        """The operator for ``device`` (built on first use when the module has a factory)."""
        return _resolve(self._handle(torch.device(device), _deterministic()))

    def build_counts(self) -> Dict[str, int]:
        """How often each device's operator was built (1 per device once used; a GPU's
        deterministic operator counts as ``'cuda:N (deterministic)'``)."""
        return dict(self._cache.builds)

    def _handle(self, device: torch.device, deterministic: bool = False) -> int:
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        det = deterministic and device.type == "cuda"
        name = str(device)
        key = name + (" (deterministic)" if det else "")
        h = self._cache.handles.get(key)
        if h is not None:
            return h
        with self._cache.lock:
            h = self._cache.handles.get(key)
            if h is None:
                if self.fixed is not None:
                    if self.fixed.device != name:
                        raise ValueError(
                            f"this OperatorModule holds an operator built for {self.fixed.device}, "
                            f"not {name}: build the module from a factory to run on any device"
                        )
                    if det:
                        _check_fixed_deterministic(self.fixed, name)
                    op = self.fixed
                else:
                    factory = self._factory_for(device, det)
                    assert factory is not None  # one of the two is set in __init__
                    op = factory.build(name)
                    self._cache.builds[key] = self._cache.builds.get(key, 0) + 1
                h = operator_handle(op)
                self._cache.handles[key] = h
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        handle = _module_handle(self._key, x.device.type, x.device.index, _deterministic())
        return torch.ops.rodl.apply(x, handle)

    def extra_repr(self) -> str:
        src = self.factory if self.factory is not None else self.fixed
        return repr(src)


class RayTransform(OperatorModule):
    """The ray transform of ``space`` and ``geometry`` as a module: an ``OperatorModule`` of
    ``rodl.Factory.ray_transform(space, geometry, threads=, memory_budget=, deterministic=)``,
    built on each device it meets with the options of that device's kind (``threads`` on the
    CPU; ``memory_budget`` and ``deterministic`` on a GPU)."""

    def __init__(
        self,
        space: Space,
        geometry: Geometry,
        threads: Optional[int] = None,
        memory_budget: Optional[int] = None,
        deterministic: bool = False,
    ):
        super().__init__(
            Factory.ray_transform(
                space,
                geometry,
                threads=threads,
                memory_budget=memory_budget,
                deterministic=deterministic,
            )
        )


@torch._dynamo.assume_constant_result
def _module_handle(key: int, device_type: str, device_index, deterministic: bool) -> int:
    # Under torch.compile the handle is found (and the operator built) while tracing and is a
    # constant of the graph; the tensor's device and torch's deterministic flag are part of the
    # graph's guards.
    device = torch.device(device_type) if device_index is None else torch.device(device_type, device_index)
    return _modules[key]._handle(device, deterministic)

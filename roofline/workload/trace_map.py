"""Recorded torch calls -> ops of the IR: a table of pure handlers on shapes, no torch needed.

roofline.workload.trace records each aten op (and the few functions caught whole) as a `Call` holding only shapes,
dtypes and which parameter a tensor is. Each handler here turns one kind of call into ops, fvcore style:
the table maps an op name to its handler, a decorator refuses duplicate registrations, and a call no
handler claims is counted in `unsupported` by name, so a model with ops we cannot cost says so instead of
looking cheaper than it is. View ops (reshape, transpose...) are free; a run of them inside one module
becomes one free Reshape op so that the table shows where the data was rearranged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from typing import Any

from roofline.workload import ops as ir
from roofline.workload.ops.base import MODEL_INPUT, Dataflow, Op


@dataclass(frozen=True)
class TensorInfo:
    """A tensor as the tracer saw it: shape, dtype name, the parameter it is (or is a view of), and which
    activation memory it is (views and in-place results share their source's)."""

    shape: tuple[int, ...]
    dtype: str
    param: str | None = None
    storage: int | None = None
    """The tracer's number for the tensor's storage; None for parameters and buffers (not activations)."""

    @property
    def numel(self) -> int:
        return prod(self.shape)


@dataclass(frozen=True)
class Call:
    """One recorded call: 'aten.<op>' for dispatched ops, the functional's name for calls caught whole."""

    op: str
    module: str
    """Qualified name of the innermost module that made the call ('' for the root's own forward)."""
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    outputs: tuple[TensorInfo, ...] = ()

    def arg(self, index: int, name: str, default: Any = None) -> Any:
        """Argument by position or keyword, as aten schemas allow both."""
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default)


Handler = Callable[[Call, str], list[Op]]
_HANDLERS: dict[str, Handler] = {}


def handles(*ops: str) -> Callable[[Handler], Handler]:
    """Register a handler for op names ('aten.relu', 'linear'); a name claimed twice is a bug."""

    def register(fn: Handler) -> Handler:
        for op in ops:
            if op in _HANDLERS:
                raise ValueError(f"two trace handlers for {op}")
            _HANDLERS[op] = fn
        return fn

    return register


VIEW_OPS = frozenset({
    "t", "transpose", "permute", "view", "_unsafe_view", "reshape", "expand", "detach", "alias",
    "unsqueeze", "squeeze", "select", "slice", "as_strided", "_reshape_alias", "unflatten", "flatten",
    "numpy_T", "split", "split_with_sizes", "chunk", "unbind", "view_as", "expand_as", "lift_fresh",
})
"""Aten ops that only change metadata (shape, strides, offset) of an existing tensor."""

ALLOCATIONS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})
"""Uninitialised allocations: no element is read or written, so nothing to cost."""


def map_calls(calls: list[Call]) -> tuple[list[Op], dict[str, int], Dataflow]:
    """Ops in execution order, {op name: occurrences} of the calls no handler maps, and the dataflow: each op
    reads the ops that last wrote the storages of its tensor arguments (MODEL_INPUT for the input), and is
    in place when its result is the storage of its first tensor argument."""
    ops: list[Op] = []
    unsupported: dict[str, int] = {}
    names: dict[str, int] = {}
    containers = _containers(calls)
    pending_view: Call | None = None
    owned: set[str] = set()
    writer: dict[int, str | None] = {}
    """storage -> the op that last wrote it; None when a call that maps to no op made it."""
    reads: dict[str, tuple[str, ...]] = {}
    inplace: set[str] = set()
    for call in calls:
        short = _short(call.op)
        if short in VIEW_OPS:
            pending_view = pending_view if pending_view and pending_view.module == call.module else call
            if pending_view is call:
                op = ir.Reshape(_unique(names, containers, call, "reshape"),
                                numel=call.outputs[0].numel if call.outputs else 0)
                ops.append(op)
                reads[op.name] = _read(call, writer)
            continue
        pending_view = None
        handler = None if short in ALLOCATIONS else _HANDLERS.get(call.op) or _HANDLERS.get(f"aten.{short}")
        produced = handler(call, _unique(names, containers, call, short.lstrip("_"))) if handler else None
        if produced is None:
            if short not in ALLOCATIONS:
                unsupported[call.op] = unsupported.get(call.op, 0) + 1
            writer.update({t.storage: None for t in call.outputs if t.storage is not None})
            continue
        for op in _tie(produced, call, owned):
            ops.append(op)
            reads[op.name] = _read(call, writer)
            arguments = _activations(call)
            if call.outputs and arguments and call.outputs[0].storage == arguments[0].storage:
                inplace.add(op.name)
            writer.update({t.storage: op.name for t in call.outputs if t.storage is not None})
    return ops, unsupported, Dataflow(reads, frozenset(inplace))


def _read(call: Call, writer: dict[int, str | None]) -> tuple[str, ...]:
    """The ops whose results a call reads, in argument order, once each; a storage no call wrote is the input."""
    names = (writer.get(t.storage, MODEL_INPUT) for t in _activations(call))
    return tuple(dict.fromkeys(n for n in names if n is not None))


def _activations(call: Call) -> list[TensorInfo]:
    """The call's activation arguments (not parameters or buffers), lists such as cat's included, in order."""
    out: list[TensorInfo] = []
    for value in (*call.args, *call.kwargs.values()):
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, TensorInfo) and item.storage is not None:
                out.append(item)
    return out


def _tie(produced: list[Op], call: Call, owned: set[str]) -> list[Op]:
    """Mark a Linear whose weight an earlier op already owns (GPT-2's lm_head reuses the token embedding), so
    shared parameters are counted once; then record the call's parameters as owned."""
    params = {t.param for t in _tensors((*call.args, *call.kwargs.values())) if t.param}
    out = [dataclasses.replace(op, tied=True) if isinstance(op, ir.Linear) and params & owned else op
           for op in produced]
    owned.update(params)
    return out


def _short(op: str) -> str:
    """'aten.relu_' -> 'relu': in-place variants cost what the out-of-place op costs."""
    name = op.removeprefix("aten.")
    return name[:-1] if name.endswith("_") and not name.startswith("_") else name


def _containers(calls: list[Call]) -> set[str]:
    """Modules that contain other modules which made calls ('' for the root, 'layer1.0' for a block)."""
    out: set[str] = set()
    for call in calls:
        parts = call.module.split(".") if call.module else []
        out.update(".".join(parts[:i]) for i in range(len(parts)))
    return out


def _unique(names: dict[str, int], containers: set[str], call: Call, short: str) -> str:
    """A leaf module's op takes the module's qualified name ('features.0.0'); an op a container makes in
    its own forward (a block's residual add) gets the op name appended ('layer1.0.add'); repeats (a ReLU
    module called twice) get '#2', '#3', so every layer name is unique."""
    base = call.module
    if call.module in containers:
        base = f"{call.module}.{short}" if call.module else short
    seen = names.get(base, 0) + 1
    names[base] = seen
    return base if seen == 1 else f"{base}#{seen}"


def _tensors(values: Any) -> list[TensorInfo]:
    return [v for v in values if isinstance(v, TensorInfo)]


def _rows(shape: tuple[int, ...]) -> tuple[int, int]:
    """(batch, tokens) of a Linear input (..., features): batch first, every middle dim a token."""
    if len(shape) <= 1:
        return 1, 1
    return shape[0], prod(shape[1:-1])


@handles("aten.convolution")
def _convolution(call: Call, name: str) -> list[Op] | None:
    # convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    x, w, b = call.arg(0, "input"), call.arg(1, "weight"), call.arg(2, "bias")
    transposed = call.arg(6, "transposed", False)
    if transposed or len(w.shape) not in (3, 4):
        return None
    stride, pad, dilation = (list(call.arg(i, key)) for i, key in ((3, "stride"), (4, "padding"), (5, "dilation")))
    if len(w.shape) == 3:
        # A 1-D convolution over (N, C, L) is a 2-D one over (N, C, 1, L) with a 1 x R kernel.
        n, c, length = x.shape
        h, wd, r, s = 1, length, 1, w.shape[2]
        stride, pad, dilation = [1, *stride], [0, *pad], [1, *dilation]
    else:
        n, c, h, wd = x.shape
        r, s = w.shape[2], w.shape[3]
    return [ir.Conv2d(name, n=n, c=c, h=h, w=wd, k=w.shape[0], r=r, s=s, stride=tuple(stride),
                      pad=tuple(pad), dilation=tuple(dilation), groups=call.arg(8, "groups", 1),
                      bias=b is not None)]


@handles("linear")
def _linear(call: Call, name: str) -> list[Op] | None:
    # F.linear(input (..., in), weight (out, in), bias (out,) | None), caught before it lowers to t + addmm.
    x, w, b = call.arg(0, "input"), call.arg(1, "weight"), call.arg(2, "bias")
    batch, tokens = _rows(x.shape)
    if w.param is None:
        ops: list[Op] = [ir.Gemm(name, m=batch * tokens, n=w.shape[0], k=w.shape[-1], b_layout="n_k")]
        if b is not None:
            ops.append(ir.Elementwise(f"{name}.bias", numel=batch * tokens * w.shape[0], inputs=2, op="add"))
        return ops
    return [ir.Linear(name, batch=batch, in_features=w.shape[-1], out_features=w.shape[0],
                      bias=b is not None and b.param is not None, tokens=tokens)]


@handles("aten.mm", "aten.addmm")
def _mm(call: Call, name: str) -> list[Op] | None:
    # mm(a (m, k), b (k, n)); addmm(bias, a, b) adds a bias broadcast over (m, n).
    bias = call.args[0] if call.op == "aten.addmm" else None
    a, b = call.args[-2:] if bias is None else call.args[1:3]
    (m, k), n = a.shape, b.shape[1]
    if b.param is not None or a.param is not None:
        # x @ W^T (the lowered linear) or W @ x: the parameter's two sides are the layer's features.
        rows, features_out = (m, n) if b.param is not None else (n, m)
        has_bias = bias is not None and bias.param is not None
        ops: list[Op] = [ir.Linear(name, batch=rows, in_features=k, out_features=features_out, bias=has_bias,
                                   tokens=1)]
        if bias is not None and not has_bias:
            ops.append(ir.Elementwise(f"{name}.bias", numel=m * n, inputs=2, op="add"))
        return ops
    ops = [ir.Gemm(name, m=m, n=n, k=k, count=1)]
    if bias is not None:
        ops.append(ir.Elementwise(f"{name}.bias", numel=m * n, inputs=2, op="add"))
    return ops


@handles("aten.bmm", "aten.baddbmm")
def _bmm(call: Call, name: str) -> list[Op] | None:
    # bmm(a (count, m, k), b (count, k, n)); baddbmm(input, a, b) adds input to the product.
    a, b = call.args[-2:] if call.op == "aten.bmm" else call.args[1:3]
    count, m, k = a.shape
    n = b.shape[2]
    ops: list[Op] = [ir.Gemm(name, m=m, n=n, k=k, count=count)]
    if call.op == "aten.baddbmm":
        ops.append(ir.Elementwise(f"{name}.add", numel=count * m * n, inputs=2, op="add"))
    return ops


@handles("aten.native_batch_norm", "aten._native_batch_norm_legit", "aten._native_batch_norm_legit_no_training",
         "aten.batch_norm", "aten._native_batch_norm_legit_functional")
def _batch_norm(call: Call, name: str) -> list[Op] | None:
    # batch_norm(input (N, C, *spatial), weight (C,) | None, bias (C,) | None, running_mean, running_var, ...)
    x, w = call.arg(0, "input"), call.arg(1, "weight")
    n, c = x.shape[0], x.shape[1]
    return [ir.BatchNorm(name, n=n, c=c, spatial=prod(x.shape[2:]), affine=w is not None)]


@handles("aten.native_layer_norm", "aten.layer_norm")
def _layer_norm(call: Call, name: str) -> list[Op] | None:
    # layer_norm(input (..., *normalized_shape), normalized_shape, weight, bias, eps)
    x, normalized, w = call.arg(0, "input"), call.arg(1, "normalized_shape"), call.arg(2, "weight")
    features = prod(normalized)
    return [ir.LayerNorm(name, rows=x.numel // features, features=features, affine=w is not None)]


_ACTIVATIONS = {"relu": "relu", "hardswish": "hardswish", "hardsigmoid": "hardsigmoid", "gelu": "gelu",
                "silu": "silu", "sigmoid": "sigmoid", "tanh": "tanh"}
"""aten op -> activation function name of the IR."""


@handles(*(f"aten.{op}" for op in _ACTIVATIONS), "aten.hardtanh")
def _activation(call: Call, name: str) -> list[Op] | None:
    x = call.arg(0, "input")
    op = _short(call.op)
    if op == "hardtanh":
        # hardtanh(x, 0, 6) is ReLU6, the only clamp the IR names.
        if (call.arg(1, "min_val", -1.0), call.arg(2, "max_val", 1.0)) != (0.0, 6.0):
            return None
        return [ir.Activation(name, numel=x.numel, fn="relu6")]
    if op == "gelu" and call.arg(1, "approximate", "none") == "tanh":
        return [ir.Activation(name, numel=x.numel, fn="gelu_tanh")]
    return [ir.Activation(name, numel=x.numel, fn=_ACTIVATIONS[op])]


@handles("aten.add", "aten.mul", "aten.sub", "aten.div")
def _elementwise(call: Call, name: str) -> list[Op] | None:
    # Scalars (x * 0.5) read nothing from memory; broadcast operands are read once at their own size,
    # but the IR's Elementwise reads every input at the output's size, which is the upper bound.
    out = call.outputs[0]
    inputs = len(_tensors(call.args[:2]))
    return [ir.Elementwise(name, numel=out.numel, inputs=inputs, op=_short(call.op))]


@handles("aten.max_pool2d_with_indices", "aten.max_pool2d", "aten.avg_pool2d")
def _pool(call: Call, name: str) -> list[Op] | None:
    # {max,avg}_pool2d(input (N, C, H, W), kernel_size, stride=kernel_size, padding=0, ...); the output's
    # shape already holds padding, dilation and ceil_mode, so p and q are taken from it
    x, out = call.arg(0, "input"), call.outputs[0]
    if len(x.shape) != 4:
        return None
    kernel = _pair(call.arg(1, "kernel_size"))
    stride = _pair(call.arg(2, "stride") or kernel)
    return [ir.Pool2d(name, n=x.shape[0], c=x.shape[1], h=x.shape[2], w=x.shape[3], p=out.shape[2],
                      q=out.shape[3], r=kernel[0], s=kernel[1], stride=stride,
                      mode="avg" if _short(call.op) == "avg_pool2d" else "max")]


@handles("aten._adaptive_avg_pool2d", "aten.adaptive_avg_pool2d")
def _adaptive_avg_pool(call: Call, name: str) -> list[Op] | None:
    x, out = call.arg(0, "input"), call.outputs[0]
    if len(x.shape) != 4:
        return None
    return [ir.AdaptiveAvgPool2d(name, n=x.shape[0], c=x.shape[1], h=x.shape[2], w=x.shape[3],
                                 p=out.shape[2], q=out.shape[3])]


@handles("aten.mean", "aten.sum", "aten.amax", "aten.amin")
def _reduce(call: Call, name: str) -> list[Op] | None:
    # mean over the last two dims of an (N, C, H, W) tensor is how adaptive_avg_pool2d(1) lowers.
    x, out = call.arg(0, "input"), call.outputs[0]
    dims = call.arg(1, "dim")
    if _short(call.op) == "mean" and len(x.shape) == 4 and dims is not None \
            and sorted(d % 4 for d in dims) == [2, 3]:
        return [ir.AdaptiveAvgPool2d(name, n=x.shape[0], c=x.shape[1], h=x.shape[2], w=x.shape[3], p=1, q=1)]
    return [ir.Reduce(name, numel_in=x.numel, numel_out=out.numel)]


def _pair(value: Any) -> tuple[int, int]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return (values[0], values[-1])


@handles("aten._softmax", "aten._safe_softmax", "aten.softmax")
def _softmax(call: Call, name: str) -> list[Op] | None:
    # softmax(input, dim): rows are everything but dim.
    x = call.arg(0, "input")
    dim = call.arg(1, "dim") % len(x.shape)
    return [ir.Softmax(name, rows=x.numel // x.shape[dim], cols=x.shape[dim])]


@handles("scaled_dot_product_attention")
def _attention(call: Call, name: str) -> list[Op] | None:
    # sdpa(query (B, H, L, E), key (B, H, S, E), value (B, H, S, Ev)); only the 4-D form is mapped.
    q, k = call.args[:2]
    if len(q.shape) != 4:
        return None
    batch, heads, seq_q, head_dim = q.shape
    return [ir.Attention(name, batch=batch, heads=heads, seq_q=seq_q, seq_kv=k.shape[2], head_dim=head_dim,
                         causal=bool(call.kwargs.get("is_causal", False)),
                         dropout_p=float(call.kwargs.get("dropout_p", 0.0)))]


@handles("aten.embedding")
def _embedding(call: Call, name: str) -> list[Op] | None:
    # embedding(weight (V, D), indices (...)) -> (..., D)
    w, idx = call.arg(0, "weight"), call.arg(1, "indices")
    return [ir.Embedding(name, num_embeddings=w.shape[0], dim=w.shape[1], tokens=idx.numel)]


@handles("dropout")
def _dropout(call: Call, name: str) -> list[Op] | None:
    x = call.arg(0, "input")
    return [ir.Dropout(name, numel=x.numel, p=call.arg(1, "p", 0.5))]


@handles("aten.cat")
def _cat(call: Call, name: str) -> list[Op] | None:
    tensors = _tensors(call.arg(0, "tensors"))
    return [ir.Concat(name, numel=call.outputs[0].numel, inputs=len(tensors))]


@handles("aten.clone", "aten._to_copy", "aten.copy")
def _copy(call: Call, name: str) -> list[Op] | None:
    # A real copy: reads and writes every element once (a transposed tensor made contiguous, a cast).
    return [ir.Elementwise(name, numel=call.outputs[0].numel, inputs=1, op="copy")]

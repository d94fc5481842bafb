"""A running activation shape plus the ops that produced it: what every pure-Python builder appends to.

The builders mirror the forward of the torch modules in roofline.workload.zoo.modules call by call, naming each op
the way roofline.workload.trace names what it records: a leaf module's op takes the module's qualified name, an op
a container makes in its own forward takes '<container>.<op>' ('layer1.0.add'), and a name used again
gets '#2', '#3' ('layer1.0.relu#2' for BasicBlock's ReLU module called twice). Shapes exclude the batch
dimension, so the batch may be a sympy Symbol: counts are products with it, never int() of it.

Each op also records what it reads (`Dataflow`): by default the current tensor, the result of the last op
that wrote it; a view leaves the current tensor where it is (it is the same memory), an in-place op
(`nn.ReLU(inplace=True)`, `out += x`) writes into it. Blocks that read a tensor from earlier (a residual
add, a squeeze-and-excitation gate) keep its name (`current`) and pass it.
"""

from __future__ import annotations

from math import prod

from roofline.errors import ShapeError
from roofline.workload import ops as ir
from roofline.workload.ops.base import MODEL_INPUT, Dataflow, Num, Op


class Graph:
    """Ops in execution order and the shape (without batch) of the tensor the last one produced."""

    def __init__(self, model: str, batch: Num, shape: tuple[int, ...]) -> None:
        self.model = model
        self.batch = batch
        self.shape = shape
        self.ops: list[Op] = []
        self._used: dict[str, int] = {}
        self.current = MODEL_INPUT
        """Name of the op that last wrote the tensor the next op reads."""
        self.reads: dict[str, tuple[str, ...]] = {}
        self.inplace: set[str] = set()

    @property
    def dataflow(self) -> Dataflow:
        return Dataflow(dict(self.reads), frozenset(self.inplace))

    @property
    def numel(self) -> Num:
        """Elements of the current activation, batch included."""
        return self.batch * prod(self.shape)

    def name(self, base: str) -> str:
        """`base`, or `base#k` the k-th time it is used, as the tracer names repeated calls of one module."""
        seen = self._used.get(base, 0) + 1
        self._used[base] = seen
        return base if seen == 1 else f"{base}#{seen}"

    def add(self, op: Op, shape: tuple[int, ...] | None = None, reads: tuple[str, ...] | None = None,
            inplace: bool = False) -> Op:
        """Append `op`, reading `reads` (default: the current tensor); unless it is a view, its result becomes
        the current tensor."""
        self.ops.append(op)
        self.reads[op.name] = reads if reads is not None else (self.current,)
        if inplace:
            self.inplace.add(op.name)
        if not op.is_free:
            self.current = op.name
        if shape is not None:
            self.shape = shape
        return op

    def conv(self, name: str, out: int, kernel: int, stride: int = 1, groups: int = 1, bias: bool = False,
             pad: int | None = None) -> None:
        """Conv2d on the current (c, h, w); padding defaults to 'same' for odd kernels at stride 1."""
        c, h, w = self.shape
        pad = (kernel - 1) // 2 if pad is None else pad
        try:
            op = ir.Conv2d(self.name(name), n=self.batch, c=c, h=h, w=w, k=out, r=kernel, s=kernel,
                           stride=stride, pad=pad, groups=groups, bias=bias)
        except ValueError as exc:
            raise ShapeError(f"{self.model}: {name} gets a {h}x{w} input: {exc}") from None
        self.add(op, (out, op.p, op.q))

    def batch_norm(self, name: str) -> None:
        c, h, w = self.shape
        self.add(ir.BatchNorm(self.name(name), n=self.batch, c=c, spatial=h * w))

    def act(self, name: str, fn: str, inplace: bool = False) -> None:
        self.add(ir.Activation(self.name(name), numel=self.numel, fn=fn), inplace=inplace)

    def max_pool(self, name: str, kernel: int, stride: int, pad: int = 0) -> None:
        c, h, w = self.shape
        try:
            op = ir.Pool2d(self.name(name), n=self.batch, c=c, h=h, w=w, r=kernel, s=kernel, stride=stride,
                           pad=pad, mode="max")
        except ValueError as exc:
            raise ShapeError(f"{self.model}: {name} gets a {h}x{w} input: {exc}") from None
        self.add(op, (c, op.p, op.q))

    def adaptive_avg_pool(self, name: str, size: int) -> None:
        c, h, w = self.shape
        self.add(ir.AdaptiveAvgPool2d(self.name(name), n=self.batch, c=c, h=h, w=w, p=size, q=size), (c, size, size))

    def flatten(self, name: str) -> None:
        self.shape = (prod(self.shape),)
        self.add(ir.Reshape(self.name(name), numel=self.numel))

    def view(self, name: str, shape: tuple[int, ...], reads: tuple[str, ...] | None = None) -> None:
        """A run of view ops (view, transpose, slice, expand) of the current tensor, or of `reads` (() for a
        buffer's, which no op wrote): metadata only."""
        self.add(ir.Reshape(self.name(name), numel=self.batch * prod(shape)), shape, reads=reads)

    def linear(self, name: str, out: int, bias: bool = True) -> None:
        """nn.Linear on (..., features): every dimension between batch and features is a token."""
        *tokens, features = self.shape
        self.add(ir.Linear(self.name(name), batch=self.batch, in_features=features, out_features=out, bias=bias,
                           tokens=prod(tokens)), (*tokens, out))

    def dropout(self, name: str, p: float, inplace: bool = False) -> None:
        self.add(ir.Dropout(self.name(name), numel=self.numel, p=p), inplace=inplace)

    def elementwise(self, name: str, op: str = "add", inputs: int = 2, other: str | None = None,
                    inplace: bool = False) -> None:
        """`op` of the current tensor and `other` (a name kept from earlier; default the current tensor again,
        as `x * x`); in place writes into the current tensor (`out += x`)."""
        reads = (self.current, self.current if other is None else other)[:inputs]
        self.add(ir.Elementwise(self.name(name), numel=self.numel, inputs=inputs, op=op), reads=reads,
                 inplace=inplace)

    def layer_norm(self, name: str) -> None:
        *rows, features = self.shape
        self.add(ir.LayerNorm(self.name(name), rows=self.batch * prod(rows), features=features))

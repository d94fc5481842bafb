"""The op IR's contract: what every op must say about itself for the cost and memory models.

Counts are plain Python arithmetic on shapes, so passing a sympy Symbol as the batch size (or sequence
length) yields sympy expressions and passing ints yields ints: one formula, two uses, no duplication.
A FLOP is one floating-point add or multiply; a MAC (multiply-accumulate) is two FLOPs.

Three passes exist: `forward`; `backward_input` (gradient with respect to the op's input, dX);
`backward_weight` (gradient with respect to its parameters, dW). For GEMM-like ops each backward pass costs
as much as the forward, so backward = 2 x forward.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

Num = Any
"""An int, a float, or a sympy expression in the batch size B (and sequence length S)."""

BACKWARD_PASSES = ("backward_input", "backward_weight")
"""The gradient passes: the input's gradient and the weights' (each op says what each costs)."""
PASSES = ("forward", *BACKWARD_PASSES)


@dataclass(frozen=True)
class GemmView:
    """The op as `count` independent products C[m, n] = A[m, k] @ B[k, n].

    Convolutions use the implicit-GEMM view (m = N*P*Q output pixels, n = output channels per group,
    k = input channels per group x R x S); grouped and depthwise convolutions have count = groups;
    batched matmuls have count = batch x heads. The cost model tiles m x n for wave quantization and
    checks m, n, k against tensor-core alignment.
    """

    m: Num
    n: Num
    k: Num
    count: Num = 1
    operands_across: int = 0
    """How many of A and B are stored with the reduction dimension k not contiguous ("MN-major"), as the
    framework hands them to the library: 0 for x @ W^T with nn.Linear's (out, in) weight, 1 for a matmul of two
    contiguous tensors (B is [k, n]) and for dX = dY W, 2 for a weight gradient dW = dY^T X. Only a TF32
    product on a GPU is priced by it (`roofline.model.costmodel`)."""

    @property
    def flops(self) -> Num:
        return 2 * self.m * self.n * self.k * self.count

    @property
    def equivalent_n(self) -> float:
        """Side of the square GEMM with this product's operand reuse: 2mnk FLOPs over mk + kn + mn elements
        equals 2n^3 over 3n^2 at n = 3mnk / (mk + kn + mn). A skinny product (m = 64, n = 2048, k = 512: 167)
        reuses its operands like a small square one, whatever its volume (cube root: 406)."""
        m, n, k = float(self.m), float(self.n), float(self.k)
        return 3 * m * n * k / (m * k + k * n + m * n)


@dataclass(frozen=True)
class Traffic:
    """Elements one pass must read and write at least once (compulsory DRAM traffic), by role.

    Activations are stored at the precision's storage dtype; weights at the weight dtype; the split lets
    mixed precision charge each at its own size.
    """

    activations_read: Num = 0
    activations_written: Num = 0
    weights_read: Num = 0
    weights_written: Num = 0

    def bytes(self, activation_bytes: float, weight_bytes: float) -> Num:
        return ((self.activations_read + self.activations_written) * activation_bytes
                + (self.weights_read + self.weights_written) * weight_bytes)

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(self.activations_read + other.activations_read,
                       self.activations_written + other.activations_written,
                       self.weights_read + other.weights_read,
                       self.weights_written + other.weights_written)


PER_PASS_QUERIES = ("flops", "traffic", "gemm_views")
"""Op methods that are pure functions of the op's fields and the pass, remembered per op instance: the advisor
prices one workload at every precision, and a step reads each pass's traffic twice (written bytes, then the
cost), so a sweep asked them 4-8 times each (a third of `advise --train`'s time)."""


def _remembered(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` answered once per op and arguments. Ops are not changed after they are built (a renamed or
    reshaped op is a new one, `dataclasses.replace`), so an answer stays right for the op's life; a list
    answer is handed out as a copy, so no caller can change the remembered one."""
    query = method.__name__

    @functools.wraps(method)
    def remembered(self: Op, *args: Any) -> Any:
        answers = self.__dict__.get("_answers")
        if answers is None:
            answers = self.__dict__["_answers"] = {}
        key = (query, args)
        try:
            answer = answers[key]
        except KeyError:
            answer = answers[key] = method(self, *args)
        return list(answer) if type(answer) is list else answer

    return remembered


@dataclass
class Op(ABC):
    """One operation of a model at a given batch size; subclasses hold their shapes as fields."""

    name: str

    kind: str = field(init=False, default="op")
    """Family used for grouping and for the cost model's choice of mechanism: 'gemm', 'conv2d', 'pool',
    'norm', 'activation', 'elementwise', 'softmax', 'attention', 'embedding', 'dropout', 'reshape'."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for query in PER_PASS_QUERIES:
            method = cls.__dict__.get(query)
            if method is not None and not getattr(method, "__wrapped__", None):
                setattr(cls, query, _remembered(method))

    def shape_key(self) -> tuple[Any, ...]:
        """The op's type and fields but its name: two ops with equal keys cost the same (`model.step.op_costs`)."""
        key = self.__dict__.get("_shape_key")
        if key is None:
            key = self.__dict__["_shape_key"] = (type(self), *(getattr(self, f.name) for f in fields(self)
                                                                 if f.name != "name"))
        return key

    @abstractmethod
    def flops(self, pass_: str) -> Num:
        """FLOPs of one pass (0 where the pass does not exist, e.g. backward_weight without weights)."""

    @abstractmethod
    def traffic(self, pass_: str) -> Traffic:
        """Compulsory element traffic of one pass."""

    def params(self) -> Num:
        """Trainable parameters (elements)."""
        return 0

    def param_sizes(self) -> list[Num]:
        """Elements of each parameter tensor (weight, bias...): optimizers and AMP casts launch per tensor, and
        each gradient is an allocation of its own."""
        return [self.params()] if self.params() else []

    def param_tensors(self) -> int:
        return len(self.param_sizes())

    def saved_elements(self) -> Num:
        """Activation elements kept from forward for backward (0 when the op needs none)."""
        return 0

    def output_elements(self) -> Num:
        """Elements of the op's output tensor (the next op's input)."""
        raise NotImplementedError

    def gemm_views(self, pass_: str) -> list[GemmView]:
        """GEMM view(s) of one pass, or [] for ops that are not matrix products."""
        return []

    def launches(self, pass_: str) -> int:
        """Kernels (GPU) or dispatched framework ops (CPU) one pass costs in eager PyTorch."""
        if pass_ == "forward":
            return 0 if self.is_free else 1
        if pass_ == "backward_weight" and self.params() == 0:
            return 0
        return 0 if self.is_free else 1

    @property
    def is_free(self) -> bool:
        """True for ops that are metadata only (a view/reshape): no bytes, no launch."""
        return False

    @property
    def kernel(self) -> str:
        """Which kernel runs the op, finer than `kind` where calibration measures kernels apart
        ('pool:max', 'norm:eval', 'activation:gelu'); the key of a measured streaming rate."""
        return self.kind

    def kernel_key(self, pass_: str) -> str:
        """The key of the measured streaming rate that applies to `pass_`: the forward kernel's, or for the
        gradient passes its backward kernel's ('norm:train:backward'), a different loop with its own rate
        (`roofline.measure.probes.kernels`)."""
        return self.kernel if pass_ == "forward" else f"{self.kernel}:backward"

    @property
    def saves_input(self) -> bool:
        """True when what saved_elements() counts is the op's input tensor (a conv, a linear layer, a norm)."""
        return False

    @property
    def saves_output(self) -> bool:
        """True when it is the op's output (ReLU's backward needs only the result, so autograd keeps that)."""
        return False

    def for_inference(self) -> Op | None:
        """The op as `model.eval()` runs it: None when eval mode skips it (dropout), a cheaper variant when
        eval mode changes the algorithm (batch norm with running statistics), else the op itself."""
        return self

    def shapes(self) -> str:
        """Human-readable shapes for tables, e.g. '1x3x224x224 -> 1x64x112x112 (k=7x7, s=2)'."""
        return ""

    def bytes(self, pass_: str, activation_bytes: float, weight_bytes: float) -> Num:
        return self.traffic(pass_).bytes(activation_bytes, weight_bytes)


MODEL_INPUT = ""
"""What `Dataflow.reads` calls the step's input: a tensor the caller holds for the whole step."""


@dataclass(frozen=True)
class Dataflow:
    """Which results each op reads, and which ops write their result into their first input: what decides when
    eager PyTorch frees a tensor (once its last reader has run), and so what the C allocator hands back and
    takes again (`roofline.model.cpu_runtime.heap_requests`). A read names the op that last wrote the tensor
    (MODEL_INPUT for the
    step's input); a view (a free op) and an in-place op's result are the tensor they were made from, so a
    tensor lives until the last reader of any of its names."""

    reads: dict[str, tuple[str, ...]]
    """op name -> names of the ops whose results it reads, in argument order."""
    inplace: frozenset[str] = frozenset()

    def source(self, name: str, present: set[str]) -> str:
        """The op whose result `name` is, reading through ops a pass leaves out (dropout in eval mode)."""
        while name not in present and name != MODEL_INPUT and self.reads.get(name):
            name = self.reads[name][0]
        return name

    def storages(self, ops: list[Op]) -> dict[str, str]:
        """Op name -> the op whose result's memory it is: a view or an in-place op's result is the tensor it was
        made from (MODEL_INPUT for a view of nothing the step allocated, a reshape of the input ids); every
        other op's result is its own."""
        present = {op.name for op in ops}
        storage = {MODEL_INPUT: MODEL_INPUT}
        for op in ops:
            reads = self.reads.get(op.name, ())
            if op.is_free or op.name in self.inplace:
                storage[op.name] = storage.get(self.source(reads[0], present), MODEL_INPUT) if reads else MODEL_INPUT
            else:
                storage[op.name] = op.name
        return storage

    @classmethod
    def chain(cls, ops: list[Op]) -> Dataflow:
        """Each op reads the one before it (the first reads the input), none in place: a plain feed-forward
        stack, what a workload that records no dataflow is taken to be."""
        names = [MODEL_INPUT, *(op.name for op in ops)]
        return cls({op.name: (names[i],) for i, op in enumerate(ops)})


@dataclass
class Workload:
    """A model at one batch size: its ops in execution order plus what the tracer could not map."""

    name: str
    batch: Num
    ops: list[Op]
    input_bytes: Num
    """Bytes of one batch of inputs as the host holds them (fp32 images, int64 token ids)."""
    unsupported: dict[str, int] = field(default_factory=dict)
    """Op type -> occurrences the tracer saw but could not map; reported, never silently zero."""
    description: str = ""
    dataflow: Dataflow | None = None
    """Which results each op reads; None: a plain stack (`Dataflow.chain`)."""

    def flow(self) -> Dataflow:
        return self.dataflow if self.dataflow is not None else Dataflow.chain(self.ops)

    def params(self) -> Num:
        return sum(op.params() for op in self.ops)

    def flops(self, pass_: str = "forward") -> Num:
        return sum(op.flops(pass_) for op in self.ops)

    def inference_ops(self) -> list[Op]:
        """The ops `model.eval()` runs, each in its eval-mode form."""
        return [op for op in (o.for_inference() for o in self.ops) if op is not None]

"""Ops that touch each element a constant number of times: activations, arithmetic, dropout, reductions,
concatenation and views. All are memory-bound on every device we model; their FLOP counts (a
transcendental such as exp or erf counted as one FLOP) only place them on the roofline."""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.workload.ops._shape import positive
from roofline.workload.ops.base import Num, Op, Traffic

ACTIVATION_FLOPS = {
    "relu": 1,          # max(x, 0)
    "relu6": 2,         # min(max(x, 0), 6)
    "hardsigmoid": 4,   # min(max(x + 3, 0), 6) / 6
    "hardswish": 5,     # x * hardsigmoid(x)
    "sigmoid": 4,       # 1 / (1 + exp(-x))
    "tanh": 1,          # one transcendental
    "silu": 5,          # x * sigmoid(x)
    "gelu": 8,          # 0.5 x (1 + erf(x / sqrt 2)): scale, erf, add, two multiplies, and erf's own polynomial
    "gelu_tanh": 9,     # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): x^3 (2), 4 multiplies, 2 adds, tanh
    "cube": 2,          # torch.pow(x, 3): x * x * x
}
"""Forward FLOPs per element of each activation; backward costs about as many (the derivative reuses them)."""

OUTPUT_SAVING = frozenset({"relu", "sigmoid", "tanh"})
"""Activations whose derivative is a function of the output, so autograd saves the output, not the input."""

SAME_KERNEL = {"gelu_tanh": "gelu"}
"""Activations PyTorch runs with another's kernel, whose measured streaming rate they share: GELU's tanh
approximation is a mode of the same kernel (aten gelu(approximate='tanh'), GeluCUDAKernelImpl)."""

BACKWARD_KERNELS = {"cube": (4, 3, 3)}
"""(elements read, elements written, kernels) per element of an activation's backward where it is not one
kernel reading dY and the saved tensor and writing dX: torch.pow(x, 3)'s gradient is pow_backward's
`grad * (3 * x.pow(2))` (PyTorch's derivatives.yaml, pow.Tensor_Scalar), x.pow(2), times 3, times dY."""

ARITHMETIC = ("add", "sub", "mul", "div", "copy")


@dataclass
class Activation(Op):
    """y = f(x) elementwise. Backward reads dY and the saved input (or output) and writes dX."""

    numel: Num
    fn: str
    kind: str = field(init=False, default="activation")

    def __post_init__(self) -> None:
        positive(numel=self.numel)
        if self.fn not in ACTIVATION_FLOPS:
            raise ValueError(f"unknown activation {self.fn!r}; known: {', '.join(ACTIVATION_FLOPS)}")

    @property
    def saves_input(self) -> bool:
        return not self.saves_output

    @property
    def saves_output(self) -> bool:
        return self.fn in OUTPUT_SAVING

    @property
    def kernel(self) -> str:
        return f"activation:{SAME_KERNEL.get(self.fn, self.fn)}"

    def flops(self, pass_: str) -> Num:
        return ACTIVATION_FLOPS[self.fn] * self.numel if pass_ != "backward_weight" else 0

    def traffic(self, pass_: str) -> Traffic:
        if pass_ == "forward":
            return Traffic(activations_read=self.numel, activations_written=self.numel)
        if pass_ == "backward_input":
            read, written, _ = BACKWARD_KERNELS.get(self.fn, (2, 1, 1))
            return Traffic(activations_read=read * self.numel, activations_written=written * self.numel)
        return Traffic()

    def launches(self, pass_: str) -> int:
        if pass_ == "backward_input" and self.fn in BACKWARD_KERNELS:
            return BACKWARD_KERNELS[self.fn][2]
        return super().launches(pass_)

    def saved_elements(self) -> Num:
        return self.numel

    def output_elements(self) -> Num:
        return self.numel

    def shapes(self) -> str:
        return f"{self.numel} ({self.fn})"


@dataclass
class Elementwise(Op):
    """Arithmetic over `inputs` tensors of `numel` elements each (a broadcast operand is charged at full size,
    an upper bound), or `copy`: a cast or a layout change that reads and writes every element once.

    Backward: an add passes dY through to each input without a kernel (autograd hands over the same tensor);
    sub negates one of them; mul and div by another tensor need that operand, so they read dY and the saved
    inputs and write one gradient per tensor input; mul and div by a Python number (`inputs=1`: x * 0.5, the
    attention scores' 1/sqrt(d)) save no tensor (PyTorch's derivatives.yaml, mul.Scalar and div.Scalar: the
    gradient is grad * other) and read dY alone; a copy is copied back.
    """

    numel: Num
    inputs: int = 2
    op: str = "add"
    kind: str = field(init=False, default="elementwise")

    def __post_init__(self) -> None:
        positive(numel=self.numel, inputs=self.inputs)
        if self.op not in ARITHMETIC:
            raise ValueError(f"unknown elementwise op {self.op!r}; known: {', '.join(ARITHMETIC)}")

    @property
    def kernel(self) -> str:
        return f"elementwise:{self.op}"

    def flops(self, pass_: str) -> Num:
        if self.op == "copy" or pass_ == "backward_weight":
            return 0
        if pass_ == "forward":
            return max(1, self.inputs - 1) * self.numel
        return {"add": 0, "sub": self.numel, "mul": self.inputs * self.numel,
                "div": 3 * self.inputs * self.numel}[self.op]

    def traffic(self, pass_: str) -> Traffic:
        n = self.numel
        if pass_ == "forward":
            return Traffic(activations_read=self.inputs * n, activations_written=n)
        if pass_ == "backward_weight" or self.op == "add":
            return Traffic()
        if self.op in ("sub", "copy") or self.inputs == 1:
            return Traffic(activations_read=n, activations_written=n)
        return Traffic(activations_read=(1 + self.inputs) * n, activations_written=self.inputs * n)

    def launches(self, pass_: str) -> int:
        if pass_ == "forward":
            return 1
        if pass_ == "backward_weight" or self.op == "add":
            return 0
        return self.inputs if self.op in ("mul", "div") else 1

    def saved_elements(self) -> Num:
        return self.inputs * self.numel if self.op in ("mul", "div") and self.inputs > 1 else 0

    def output_elements(self) -> Num:
        return self.numel

    def shapes(self) -> str:
        return f"{self.inputs} x {self.numel} ({self.op})"


@dataclass
class Dropout(Op):
    """Training-only: zero each element with probability p and scale the rest by 1/(1-p); in eval mode it is
    the identity and costs nothing (`for_inference` is None). The 1-byte keep-mask is written forward and read
    backward; it is charged as a quarter of an fp32 element per activation element."""

    numel: Num
    p: float = 0.1
    kind: str = field(init=False, default="dropout")

    def __post_init__(self) -> None:
        positive(numel=self.numel)
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"dropout p={self.p} must be in [0, 1)")

    def for_inference(self) -> None:
        return None

    def _mask(self) -> Num:
        return self.numel / 4

    def flops(self, pass_: str) -> Num:
        return {"forward": 2 * self.numel, "backward_input": self.numel}.get(pass_, 0)

    def traffic(self, pass_: str) -> Traffic:
        if pass_ == "forward":
            return Traffic(activations_read=self.numel, activations_written=self.numel + self._mask())
        if pass_ == "backward_input":
            return Traffic(activations_read=self.numel + self._mask(), activations_written=self.numel)
        return Traffic()

    def saved_elements(self) -> Num:
        return self._mask()

    def output_elements(self) -> Num:
        return self.numel

    def shapes(self) -> str:
        return f"{self.numel} (p={self.p})"


@dataclass
class Reduce(Op):
    """Sum (or mean, max) of `numel_in` elements down to `numel_out`: one add per input element.
    Backward broadcasts dY back to the input's shape."""

    numel_in: Num
    numel_out: Num = 1
    kind: str = field(init=False, default="reduce")

    def __post_init__(self) -> None:
        positive(numel_in=self.numel_in, numel_out=self.numel_out)

    def flops(self, pass_: str) -> Num:
        return self.numel_in if pass_ == "forward" else 0

    def traffic(self, pass_: str) -> Traffic:
        if pass_ == "forward":
            return Traffic(activations_read=self.numel_in, activations_written=self.numel_out)
        if pass_ == "backward_input":
            return Traffic(activations_read=self.numel_out, activations_written=self.numel_in)
        return Traffic()

    def output_elements(self) -> Num:
        return self.numel_out

    def shapes(self) -> str:
        return f"{self.numel_in} -> {self.numel_out}"


@dataclass
class Concat(Op):
    """torch.cat of `inputs` tensors into one of `numel` elements: every element read and written once.
    Backward slices dY into views, which costs nothing."""

    numel: Num
    inputs: int = 2
    kind: str = field(init=False, default="concat")

    def __post_init__(self) -> None:
        positive(numel=self.numel, inputs=self.inputs)

    def flops(self, pass_: str) -> Num:
        return 0

    def traffic(self, pass_: str) -> Traffic:
        if pass_ == "forward":
            return Traffic(activations_read=self.numel, activations_written=self.numel)
        return Traffic()

    def launches(self, pass_: str) -> int:
        return 1 if pass_ == "forward" else 0

    def output_elements(self) -> Num:
        return self.numel

    def shapes(self) -> str:
        return f"{self.inputs} tensors -> {self.numel}"


@dataclass
class Reshape(Op):
    """A view (flatten, transpose, reshape of a contiguous tensor): metadata only, no bytes, no kernel."""

    numel: Num
    kind: str = field(init=False, default="reshape")

    def flops(self, pass_: str) -> Num:
        return 0

    def traffic(self, pass_: str) -> Traffic:
        return Traffic()

    @property
    def is_free(self) -> bool:
        return True

    def output_elements(self) -> Num:
        return self.numel

    def shapes(self) -> str:
        return f"{self.numel} (view)"

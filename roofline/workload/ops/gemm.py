"""Matrix products: a product of two activations (Gemm) and a layer with a weight matrix (Linear)."""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.workload.ops._shape import positive
from roofline.workload.ops.base import GemmView, Num, Op, Traffic


@dataclass
class Gemm(Op):
    """`count` products C[m, n] = A[m, k] @ B[k, n] of two activations (attention scores, a user's matmul).

    Both operands are activations, so backward computes dA = dC B^T and dB = A^T dC, two products the size
    of the forward, and both count as backward_input (there is no weight to update). A and dC are row-major;
    `b_layout` is how B is stored: "k_n" (a contiguous [k, n] tensor, as a matmul of two contiguous tensors gets
    it) or "n_k" (the transposed view of a contiguous [n, k] tensor, as F.linear's weight).
    """

    m: Num
    n: Num
    k: Num
    count: Num = 1
    b_layout: str = "k_n"
    kind: str = field(init=False, default="gemm")

    def __post_init__(self) -> None:
        positive(m=self.m, n=self.n, k=self.k, count=self.count)
        if self.b_layout not in ("k_n", "n_k"):
            raise ValueError(f"{self.name}: b_layout '{self.b_layout}': expected k_n or n_k")

    def gemm_views(self, pass_: str) -> list[GemmView]:
        # forward reduces over k, along which a [k, n] B is not contiguous; dA = dC B^T over n, along which an
        # [n, k] B is not; dB = A^T dC over m, along which neither A nor dC is
        b_across = int(self.b_layout == "k_n")
        if pass_ == "forward":
            return [GemmView(self.m, self.n, self.k, self.count, b_across)]
        if pass_ == "backward_input":
            return [GemmView(self.m, self.k, self.n, self.count, 1 - b_across),
                    GemmView(self.k, self.n, self.m, self.count, 2)]
        return []

    def flops(self, pass_: str) -> Num:
        return sum(v.flops for v in self.gemm_views(pass_))

    def traffic(self, pass_: str) -> Traffic:
        a, b, c = self.m * self.k * self.count, self.k * self.n * self.count, self.m * self.n * self.count
        if pass_ == "forward":
            return Traffic(activations_read=a + b, activations_written=c)
        if pass_ == "backward_input":
            return Traffic(activations_read=c + a + b, activations_written=a + b)
        return Traffic()

    def saved_elements(self) -> Num:
        return (self.m * self.k + self.k * self.n) * self.count

    def output_elements(self) -> Num:
        return self.m * self.n * self.count

    def launches(self, pass_: str) -> int:
        return {"forward": 1, "backward_input": 2}.get(pass_, 0)

    def shapes(self) -> str:
        lead = f"{self.count}x" if self.count != 1 else ""
        return f"{lead}[{self.m}x{self.k}] @ [{self.k}x{self.n}]"


@dataclass
class Linear(Op):
    """y = x W^T + b over (batch x tokens) rows: one GEMM with m = batch*tokens, n = out, k = in.

    Forward 2 m n k FLOPs; dX = dY W and dW = dY^T X are each the same size, hence backward = 2 x forward.
    The bias add (m n FLOPs) is fused into the GEMM epilogue by cuBLAS/oneDNN: counted in flops(), not a launch.
    A `tied` layer multiplies by a weight another op owns (GPT-2's lm_head reuses the token embedding): it
    computes and back-propagates the same, but the parameters, their gradient and optimizer state are counted
    once, with the owner. `weight_layout` is how the weight is stored: nn.Linear's (out, in), or (in, out) as
    GPT-2's Conv1D keeps it; the FLOPs and bytes are the same, the rows a few-row product streams are not.
    """

    batch: Num
    in_features: int
    out_features: int
    bias: bool = True
    tokens: Num = 1
    tied: bool = False
    weight_layout: str = "out_in"
    kind: str = field(init=False, default="gemm")

    def __post_init__(self) -> None:
        positive(batch=self.batch, in_features=self.in_features, out_features=self.out_features,
                 tokens=self.tokens)
        if self.weight_layout not in ("out_in", "in_out"):
            raise ValueError(f"{self.name}: weight_layout '{self.weight_layout}': expected out_in or in_out")

    def weight_rows(self) -> tuple[str, int]:
        """(layout, elements per stored row) of the weight: rows of `in_features` for (out, in), of
        `out_features` for (in, out)."""
        return self.weight_layout, self.in_features if self.weight_layout == "out_in" else self.out_features

    @property
    def rows(self) -> Num:
        return self.batch * self.tokens

    def gemm_views(self, pass_: str) -> list[GemmView]:
        m, n, k = self.rows, self.out_features, self.in_features
        # the forward reduces over `in`, along which an (in, out) weight is not contiguous; dX = dY W over `out`,
        # along which an (out, in) one is not; dW = dY^T X over the rows, along which neither dY nor X is
        stored_in_out = int(self.weight_layout == "in_out")
        return {"forward": [GemmView(m, n, k, 1, stored_in_out)],
                "backward_input": [GemmView(m, k, n, 1, 1 - stored_in_out)],
                "backward_weight": [GemmView(n, k, m, 1, 2)]}[pass_]

    @property
    def saves_input(self) -> bool:
        return True

    def flops(self, pass_: str) -> Num:
        bias = self.rows * self.out_features if self.bias and pass_ != "backward_input" else 0
        return self.gemm_views(pass_)[0].flops + bias

    def traffic(self, pass_: str) -> Traffic:
        x, y = self.rows * self.in_features, self.rows * self.out_features
        w = self.in_features * self.out_features
        b = self.out_features if self.bias else 0
        if pass_ == "forward":
            return Traffic(activations_read=x, activations_written=y, weights_read=w + b)
        if pass_ == "backward_input":
            return Traffic(activations_read=y, activations_written=x, weights_read=w)
        return Traffic(activations_read=y + x, weights_written=w + b)

    def params(self) -> Num:
        weight = 0 if self.tied else self.in_features * self.out_features
        return weight + (self.out_features if self.bias else 0)

    def param_sizes(self) -> list[Num]:
        weight = [] if self.tied else [self.in_features * self.out_features]
        return weight + ([self.out_features] if self.bias else [])

    def saved_elements(self) -> Num:
        return self.rows * self.in_features

    def launches(self, pass_: str) -> int:
        """The bias gradient is a column sum of dY, a kernel of its own beside the dW GEMM."""
        return 2 if pass_ == "backward_weight" and self.bias else 1

    def output_elements(self) -> Num:
        return self.rows * self.out_features

    def shapes(self) -> str:
        rows = f"{self.batch}x{self.tokens}" if self.tokens != 1 else f"{self.batch}"
        return f"{rows}x{self.in_features} -> {rows}x{self.out_features}"

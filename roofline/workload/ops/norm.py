"""Normalization: BatchNorm over (n, c, spatial) and LayerNorm over (rows, features).

Both are memory-bound by two orders of magnitude, so FLOP counts only place them on the roofline.
Per element, forward: statistics (sum and sum of squares: 3 FLOPs) then the normalize-and-affine
y = x a + b with a, b folded per channel (2 FLOPs); backward: the two reductions sum(dY) and
sum(dY x_hat) (3 FLOPs) and dX = a (dY - mean(dY) - x_hat mean(dY x_hat)) (5 FLOPs). PyTorch computes
the parameter gradients inside the same backward kernel, so backward_weight adds no launch and no FLOP,
only the 2 x c gradient writes. In eval mode the statistics are the running ones and the forward is the
2-FLOP affine; the 3-FLOP difference does not change a memory-bound time.

Traffic: LayerNorm's rows (hundreds to a few thousand features) fit on chip, so one kernel reads each row
once forward and once backward. BatchNorm's statistics span n x spatial elements per channel, far more
than fits on chip, so training runs two kernels each way (PyTorch's batch_norm_collect_statistics then
batch_norm_elemt; backward_reduce then backward_elemt): x is read twice forward, dY and x twice backward.
Eval mode is one affine pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from roofline.workload.ops._shape import positive
from roofline.workload.ops.base import Num, Op, Traffic

FORWARD_FLOPS_PER_ELEMENT = 5
BACKWARD_FLOPS_PER_ELEMENT = 8


@dataclass
class _Norm(Op):
    """Shared accounting: `numel` elements normalized, `channels` affine parameters of each kind.

    Subclasses declare `affine` after their shape fields so that constructors read (shapes..., affine).
    """

    kind: str = field(init=False, default="norm")

    @property
    def numel(self) -> Num:
        raise NotImplementedError

    @property
    def channels(self) -> int:
        raise NotImplementedError

    @property
    def saves_input(self) -> bool:
        return True

    def flops(self, pass_: str) -> Num:
        per = {"forward": FORWARD_FLOPS_PER_ELEMENT, "backward_input": BACKWARD_FLOPS_PER_ELEMENT}.get(pass_, 0)
        return per * self.numel

    def _reads(self, pass_: str) -> int:
        """Times the pass reads its activation operands: x forward; dY and x backward (see module doc)."""
        return {"forward": 1, "backward_input": 2}.get(pass_, 0)

    def _kernels(self, pass_: str) -> int:
        return 1

    def traffic(self, pass_: str) -> Traffic:
        weights = 2 * self.channels if self.affine else 0
        if pass_ == "backward_weight":
            return Traffic(weights_written=weights)
        return Traffic(activations_read=self._reads(pass_) * self.numel, activations_written=self.numel,
                       weights_read=weights)

    def params(self) -> Num:
        return 2 * self.channels if self.affine else 0

    def param_sizes(self) -> list[Num]:
        return [self.channels, self.channels] if self.affine else []

    def launches(self, pass_: str) -> int:
        return 0 if pass_ == "backward_weight" else self._kernels(pass_)

    def saved_elements(self) -> Num:
        return self.numel

    def output_elements(self) -> Num:
        return self.numel


@dataclass
class BatchNorm(_Norm):
    """Per-channel statistics over n x spatial: input (n, c, spatial) with spatial = H x W."""

    n: Num
    c: int
    spatial: int
    affine: bool = True
    training: bool = True
    """Batch statistics (two passes each way); False: eval mode, the running statistics' affine only."""

    def __post_init__(self) -> None:
        positive(n=self.n, c=self.c, spatial=self.spatial)

    @property
    def numel(self) -> Num:
        return self.n * self.c * self.spatial

    @property
    def kernel(self) -> str:
        return "norm:train" if self.training else "norm:eval"

    def for_inference(self) -> BatchNorm:
        return replace(self, training=False)

    def _reads(self, pass_: str) -> int:
        return (2 if self.training else 1) * super()._reads(pass_)

    def _kernels(self, pass_: str) -> int:
        return 2 if self.training else 1

    @property
    def channels(self) -> int:
        return self.c

    def shapes(self) -> str:
        return f"{self.n}x{self.c}x{self.spatial} (c={self.c})"


@dataclass
class LayerNorm(_Norm):
    """Per-row statistics over the last `features` elements of `rows` rows (tokens)."""

    rows: Num
    features: int
    affine: bool = True

    def __post_init__(self) -> None:
        positive(rows=self.rows, features=self.features)

    @property
    def kernel(self) -> str:
        return "norm:layer"

    @property
    def numel(self) -> Num:
        return self.rows * self.features

    @property
    def channels(self) -> int:
        return self.features

    def shapes(self) -> str:
        return f"{self.rows}x{self.features}"

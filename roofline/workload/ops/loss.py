"""A training step's loss where it costs as much as a layer: a language model's next-token cross-entropy over
its vocabulary (a classifier's over a thousand classes is a rounding error, and the zoo's classifiers leave it
out, as the live harness's cheap loss does)."""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.workload.ops._shape import positive
from roofline.workload.ops.base import Num, Op, Traffic

LOG_SOFTMAX_FORWARD_FLOPS = 4
"""Per element: the row's max, subtract, exp and sum (the log of the sum is per row)."""
LOG_SOFTMAX_BACKWARD_FLOPS = 3
"""Per element: exp of the log-probability, times the row's gradient sum, subtracted from the gradient."""


@dataclass
class CrossEntropy(Op):
    """Mean cross-entropy of `rows` rows of `classes` logits against integer targets, F.cross_entropy as PyTorch
    runs it: log_softmax writes the log-probabilities (kept for the backward), nll_loss gathers one per row. The
    backward's nll_loss gradient is a zero-filled rows x classes tensor with one entry per row set; log_softmax's
    backward reads it and the log-probabilities and writes the logits' gradient. Training only: an inference step
    returns the logits."""

    rows: Num
    classes: int
    kind: str = field(init=False, default="loss")

    def __post_init__(self) -> None:
        positive(rows=self.rows, classes=self.classes)

    @property
    def kernel(self) -> str:
        return "loss:cross_entropy"

    def for_inference(self) -> None:
        return None

    @property
    def numel(self) -> Num:
        return self.rows * self.classes

    def flops(self, pass_: str) -> Num:
        per = {"forward": LOG_SOFTMAX_FORWARD_FLOPS, "backward_input": LOG_SOFTMAX_BACKWARD_FLOPS}.get(pass_, 0)
        return per * self.numel

    def traffic(self, pass_: str) -> Traffic:
        if pass_ == "forward":
            return Traffic(activations_read=self.numel, activations_written=self.numel)
        if pass_ == "backward_input":
            return Traffic(activations_read=2 * self.numel, activations_written=2 * self.numel)
        return Traffic()

    def launches(self, pass_: str) -> int:
        return {"forward": 2, "backward_input": 2}.get(pass_, 0)

    def saved_elements(self) -> Num:
        return self.numel

    def output_elements(self) -> Num:
        return 1

    def shapes(self) -> str:
        return f"{self.rows}x{self.classes}"

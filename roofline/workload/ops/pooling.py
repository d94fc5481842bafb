"""Spatial pooling: windowed max/average (Pool2d) and adaptive average pooling to a fixed grid."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline.workload.ops._shape import pair, positive, window_out
from roofline.workload.ops.base import Num, Op, Traffic

POOL_MODES = ("max", "avg")


@dataclass
class Pool2d(Op):
    """Input (n, c, h, w), an r x s window at `stride` -> (n, c, p, q); one compare or add per window element.

    Max pooling saves its input and the argmax indices for backward (torch keeps both); backward zero-fills
    dX and scatters (max) or spreads (avg) dY into it.
    """

    n: Num
    c: int
    h: int
    w: int
    r: int
    s: int
    stride: Any = None
    pad: Any = 0
    mode: str = "max"
    p: int | None = None
    q: int | None = None
    kind: str = field(init=False, default="pool")

    def __post_init__(self) -> None:
        positive(n=self.n, c=self.c, h=self.h, w=self.w, r=self.r, s=self.s)
        if self.mode not in POOL_MODES:
            raise ValueError(f"pool mode {self.mode!r}: expected one of {', '.join(POOL_MODES)}")
        self.stride = pair(self.stride if self.stride is not None else (self.r, self.s))
        self.pad = pair(self.pad)
        if self.p is None:
            self.p = window_out(self.h, self.r, self.stride[0], self.pad[0])
        if self.q is None:
            self.q = window_out(self.w, self.s, self.stride[1], self.pad[1])

    def _io(self) -> tuple[Num, Num]:
        return self.n * self.c * self.h * self.w, self.n * self.c * self.p * self.q

    @property
    def saves_input(self) -> bool:
        return self.mode == "max"

    @property
    def kernel(self) -> str:
        return f"pool:{self.mode}"

    def flops(self, pass_: str) -> Num:
        y = self._io()[1]
        return {"forward": y * self.r * self.s, "backward_input": y}.get(pass_, 0)

    def traffic(self, pass_: str) -> Traffic:
        x, y = self._io()
        if pass_ == "forward":
            return Traffic(activations_read=x, activations_written=y)
        if pass_ == "backward_input":
            return Traffic(activations_read=2 * y if self.mode == "max" else y, activations_written=x)
        return Traffic()

    def saved_elements(self) -> Num:
        x, y = self._io()
        return x + y if self.mode == "max" else 0

    def output_elements(self) -> Num:
        return self._io()[1]

    def shapes(self) -> str:
        return (f"{self.n}x{self.c}x{self.h}x{self.w} -> {self.n}x{self.c}x{self.p}x{self.q} "
                f"({self.mode} {self.r}x{self.s}, s={self.stride[0]})")


@dataclass
class AdaptiveAvgPool2d(Op):
    """Average (n, c, h, w) into a p x q grid (global pooling when 1 x 1): each input element added once
    when the bins tile the input, plus one divide per output."""

    n: Num
    c: int
    h: int
    w: int
    p: int = 1
    q: int = 1
    kind: str = field(init=False, default="pool")

    def __post_init__(self) -> None:
        positive(n=self.n, c=self.c, h=self.h, w=self.w, p=self.p, q=self.q)

    def _io(self) -> tuple[Num, Num]:
        return self.n * self.c * self.h * self.w, self.n * self.c * self.p * self.q

    @property
    def kernel(self) -> str:
        return "pool:avg"

    def flops(self, pass_: str) -> Num:
        x, y = self._io()
        return {"forward": x + y, "backward_input": x}.get(pass_, 0)

    def traffic(self, pass_: str) -> Traffic:
        x, y = self._io()
        if pass_ == "forward":
            return Traffic(activations_read=x, activations_written=y)
        if pass_ == "backward_input":
            return Traffic(activations_read=y, activations_written=x)
        return Traffic()

    def output_elements(self) -> Num:
        return self._io()[1]

    def shapes(self) -> str:
        return f"{self.n}x{self.c}x{self.h}x{self.w} -> {self.n}x{self.c}x{self.p}x{self.q} (adaptive avg)"

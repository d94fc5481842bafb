"""2-D convolution (also 1-D as 1 x L), with groups, stride, padding and dilation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline.workload.ops._shape import pair, positive, window_out
from roofline.workload.ops.base import GemmView, Num, Op, Traffic

STEM_MAX_INPUT_CHANNELS = 4
"""A convolution reading at most this many input channels per group is a stem (an image's RGB or RGBA first
layer): too few channels to fill a SIMD block, so oneDNN reads such an input as it is and runs a kernel of its
own, which calibration measures on its own ('stem' shapes in `roofline.measure.probes.conv`)."""


@dataclass
class Conv2d(Op):
    """Input (n, c, h, w), k filters of (c/groups, r, s) -> output (n, k, p, q).

    MACs = n k p q (c/groups) r s, the count torchvision and fvcore publish; FLOPs = 2 x MACs plus n k p q
    bias adds. The GEMM views are the implicit-GEMM formulation cuDNN and oneDNN use: forward
    m = n p q pixels, n = k/groups filters, k = (c/groups) r s; data gradient m = n h w input pixels,
    n = c/groups, k = (k/groups) r s / (stride_h stride_w) taps reaching each input pixel; weight gradient
    m = k/groups, n = (c/groups) r s, k = n p q. All three have the forward's MAC count, so backward = 2 x forward.
    """

    n: Num
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: Any = 1
    pad: Any = 0
    dilation: Any = 1
    groups: int = 1
    bias: bool = True
    kind: str = field(init=False, default="conv2d")
    p: int = field(init=False)
    q: int = field(init=False)

    def __post_init__(self) -> None:
        positive(n=self.n, c=self.c, h=self.h, w=self.w, k=self.k, r=self.r, s=self.s, groups=self.groups)
        self.stride, self.pad, self.dilation = pair(self.stride), pair(self.pad), pair(self.dilation)
        if self.c % self.groups or self.k % self.groups:
            raise ValueError(f"channels c={self.c} and k={self.k} must both divide by groups={self.groups}")
        self.p = window_out(self.h, self.r, self.stride[0], self.pad[0], self.dilation[0])
        self.q = window_out(self.w, self.s, self.stride[1], self.pad[1], self.dilation[1])

    @property
    def macs(self) -> Num:
        return self.n * self.k * self.p * self.q * (self.c // self.groups) * self.r * self.s

    def gemm_views(self, pass_: str) -> list[GemmView]:
        cg, kg, g = self.c // self.groups, self.k // self.groups, self.groups
        if pass_ == "forward":
            return [GemmView(self.n * self.p * self.q, kg, cg * self.r * self.s, g)]
        if pass_ == "backward_input":
            taps = max(1, kg * self.r * self.s // (self.stride[0] * self.stride[1]))
            return [GemmView(self.n * self.h * self.w, cg, taps, g)]
        return [GemmView(kg, cg * self.r * self.s, self.n * self.p * self.q, g)]

    @property
    def depthwise(self) -> bool:
        """One filter per input channel: no channel reduction, so no GEMM; libraries run a direct stencil."""
        return self.groups > 1 and self.groups == self.c

    @property
    def stem(self) -> bool:
        """Few input channels per group (`STEM_MAX_INPUT_CHANNELS`): the stem rule, written here only."""
        return self.c // self.groups <= STEM_MAX_INPUT_CHANNELS

    @property
    def kernel(self) -> str:
        return "conv2d:depthwise" if self.depthwise else "conv2d"

    @property
    def saves_input(self) -> bool:
        return True

    def flops(self, pass_: str) -> Num:
        bias = self.n * self.k * self.p * self.q if self.bias and pass_ != "backward_input" else 0
        return 2 * self.macs + bias

    def traffic(self, pass_: str) -> Traffic:
        x, y = self.n * self.c * self.h * self.w, self.n * self.k * self.p * self.q
        weights = self.k * (self.c // self.groups) * self.r * self.s + (self.k if self.bias else 0)
        if pass_ == "forward":
            return Traffic(activations_read=x, activations_written=y, weights_read=weights)
        if pass_ == "backward_input":
            return Traffic(activations_read=y, activations_written=x, weights_read=weights)
        return Traffic(activations_read=y + x, weights_written=weights)

    def weight_share(self) -> float:
        """Weight elements over all the elements the forward pass reads and writes (input, weight, output): where
        a measured convolution efficiency sits between calibration shapes. The efficiency over a GEMM of equal
        reuse falls as this grows: oneDNN streams activations through a cached weight, or the weight past few
        activations (`roofline.measure.probes.conv`)."""
        t = self.traffic("forward")
        weights = float(t.weights_read)
        total = weights + float(t.activations_read + t.activations_written)
        return weights / total if total else 0.0

    def params(self) -> Num:
        return self.k * (self.c // self.groups) * self.r * self.s + (self.k if self.bias else 0)

    def param_sizes(self) -> list[Num]:
        return [self.k * (self.c // self.groups) * self.r * self.s] + ([self.k] if self.bias else [])

    def launches(self, pass_: str) -> int:
        """The bias gradient is a reduction of dY over n, p, q: one more kernel beside the weight gradient."""
        return 2 if pass_ == "backward_weight" and self.bias else 1

    def saved_elements(self) -> Num:
        return self.n * self.c * self.h * self.w

    def output_elements(self) -> Num:
        return self.n * self.k * self.p * self.q

    def shapes(self) -> str:
        extra = [f"k={self.r}x{self.s}"]
        if self.stride != (1, 1):
            extra.append(f"s={self.stride[0]}" if self.stride[0] == self.stride[1] else f"s={self.stride}")
        if self.groups > 1:
            extra.append("depthwise" if self.groups == self.c else f"g={self.groups}")
        return (f"{self.n}x{self.c}x{self.h}x{self.w} -> {self.n}x{self.k}x{self.p}x{self.q} "
                f"({', '.join(extra)})")

"""Convolution throughput on representative shapes, as a fraction of the fp32 GEMM peak.

The cost model prices a convolution as its FLOPs at the GEMM ceiling divided by the measured efficiency of
its kind: a 3x3 and a 1x1 convolution run as (implicit) GEMMs, a depthwise one has too little reuse to be
compute-bound, and a strided 7x7 stem on 3 input channels has short reduction loops.
FLOPs of a convolution: 2 x N x C_out x H_out x W_out x (C_in / groups) x K_h x K_w (a MAC = 2 FLOPs).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.bench.timing import Measurement, Timer


@dataclass(frozen=True)
class ConvShape:
    kind: str
    """'3x3', '1x1', 'depthwise', 'stem': the keys the cost model looks efficiencies up by."""
    batch: int
    c_in: int
    c_out: int
    size: int
    """Input height = width."""
    kernel: int
    stride: int = 1
    groups: int = 1

    @property
    def padding(self) -> int:
        return self.kernel // 2

    @property
    def out_size(self) -> int:
        return (self.size + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.c_out * self.out_size**2 * (self.c_in // self.groups) * self.kernel**2


SHAPES = (
    ConvShape("3x3", 4, 64, 64, 56, 3),
    ConvShape("1x1", 4, 256, 256, 28, 1),
    ConvShape("depthwise", 4, 256, 256, 28, 3, groups=256),
    ConvShape("stem", 4, 3, 64, 224, 7, stride=2),
)
"""ResNet-50's stage-1 3x3 and stage-2 1x1, MobileNet's depthwise 3x3, and the ResNet 7x7/2 stem."""


@dataclass(frozen=True)
class ConvResult:
    shape: ConvShape
    measurement: Measurement

    @property
    def flops_per_s(self) -> float:
        return self.measurement.best_rate


def measure(shape: ConvShape, device: str = "cpu", budget_s: float = 0.3) -> ConvResult:
    """Time one fp32 forward convolution of `shape` (torch, no autograd)."""
    import torch

    x = torch.randn(shape.batch, shape.c_in, shape.size, shape.size, device=device)
    w = torch.randn(shape.c_out, shape.c_in // shape.groups, shape.kernel, shape.kernel, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else None

    def call():
        with torch.no_grad():
            return torch.nn.functional.conv2d(x, w, stride=shape.stride, padding=shape.padding, groups=shape.groups)

    timer = Timer(call, label=f"conv {shape.kind}", work=shape.flops, work_unit="FLOP", budget_s=budget_s, sync=sync)
    return ConvResult(shape, timer.measure())


def efficiencies(results: list[ConvResult], fp32_gemm_peak_flops_per_s: float) -> dict[str, float]:
    """kind -> measured FLOP/s over the fp32 GEMM peak."""
    return {r.shape.kind: r.flops_per_s / fp32_gemm_peak_flops_per_s for r in results}

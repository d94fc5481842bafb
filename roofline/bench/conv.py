"""Convolution throughput on representative shapes, relative to what a GEMM of the same reuse reaches, and
the cost of converting NCHW activations to the layout the library's kernels want.

A 3x3, 1x1 or stem convolution runs as an implicit GEMM (m = N P Q, n = C_out, k = C_in R S); its
efficiency is its measured rate over the measured GEMM curve at the implicit GEMM's equivalent square size
(`GemmView.equivalent_n`), so one number per kind carries over to every size, as the GEMM curve does. A
depthwise convolution has no channel reduction to feed a GEMM: its efficiency is over the fp32 peak.
FLOPs of a convolution: 2 x N x C_out x H_out x W_out x (C_in / groups) x K_h x K_w (a MAC = 2 FLOPs).

Shapes are timed channels-last, the layout oneDNN's and cuDNN's fast kernels read natively, so an efficiency
is the kernel's own. An NCHW tensor is first converted (oneDNN reorders it to a channel-blocked layout and
the result back; ONEDNN_VERBOSE=1 shows both reorders around every NCHW convolution), a cost the cost model
adds from `layout_conversion`: the NCHW time less the channels-last time of the same depthwise convolution
(whose own work is small, so the difference is the conversion), per activation byte, for a tensor that
fits in the last-level cache and for one that does not (there the strided reorder runs from DRAM: 1.6 GB/s
here against 13 GB/s in cache).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from roofline.bench.timing import Measurement, Timer
from roofline.ceilings import GemmFit
from roofline.ops.base import GemmView


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

    @property
    def gemm(self) -> GemmView:
        """The implicit GEMM of the forward pass, as the op IR's Conv2d states it."""
        return GemmView(self.batch * self.out_size**2, self.c_out // self.groups,
                        self.c_in // self.groups * self.kernel**2, self.groups)


SHAPES = (
    ConvShape("3x3", 4, 64, 64, 56, 3),
    ConvShape("1x1", 4, 256, 256, 28, 1),
    ConvShape("1x1", 16, 16, 64, 64, 1),
    ConvShape("1x1", 16, 64, 24, 32, 1),
    ConvShape("depthwise", 4, 256, 256, 28, 3, groups=256),
    ConvShape("depthwise", 16, 72, 72, 32, 3, groups=72),
    ConvShape("depthwise", 16, 64, 64, 64, 3, stride=2, groups=64),
    ConvShape("stem", 4, 3, 64, 224, 7, stride=2),
)
"""ResNet-50's stage-1 3x3 and stage-2 1x1; MobileNetV3's narrow 1x1 expansions and projections and its
depthwise 3x3 at three stages (one strided); the ResNet 7x7/2 stem. Library kernels vary by shape (a 1x1
over 16 input channels, or a depthwise convolution over few, large planes, runs far below the GEMM
curve), so a kind's efficiency is the geometric mean over its shapes."""


@dataclass(frozen=True)
class ConvResult:
    shape: ConvShape
    measurement: Measurement
    """Forward, no autograd."""
    training: Measurement
    """Forward and backward (input and weight gradients) with autograd."""

    @property
    def flops_per_s(self) -> float:
        return self.measurement.best_rate

    @property
    def backward_s(self) -> float:
        """The backward's own time: a training step's fastest sample less the forward's."""
        return max(self.training.min - self.measurement.min, 1e-12)


def _operands(torch: Any, shape: ConvShape, device: str, channels_last: bool) -> tuple[Any, Any]:
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(shape.batch, shape.c_in, shape.size, shape.size, device=device).contiguous(memory_format=fmt)
    w = torch.randn(shape.c_out, shape.c_in // shape.groups, shape.kernel, shape.kernel, device=device)
    return x, w.contiguous(memory_format=fmt)


def measure(shape: ConvShape, device: str = "cpu", budget_s: float = 0.3) -> ConvResult:
    """Time one fp32 convolution of `shape`, channels-last: forward without autograd, and forward + backward."""
    import torch

    x, w = _operands(torch, shape, device, channels_last=True)
    sync = torch.cuda.synchronize if device == "cuda" else None

    def conv(a: Any, b: Any) -> Any:
        return torch.nn.functional.conv2d(a, b, stride=shape.stride, padding=shape.padding, groups=shape.groups)

    def call():
        with torch.no_grad():
            return conv(x, w)

    xg, wg = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    grad = torch.randn_like(call())

    def train():
        conv(xg, wg).backward(grad)

    forward = Timer(call, label=f"conv {shape.kind}", work=shape.flops, work_unit="FLOP", budget_s=budget_s,
                    sync=sync).measure()
    training = Timer(train, label=f"conv {shape.kind} forward+backward", work=3 * shape.flops, work_unit="FLOP",
                     budget_s=budget_s, sync=sync).measure()
    return ConvResult(shape, forward, training)


def efficiencies(results: list[ConvResult], fp32_fit: GemmFit | None,
                 fp32_peak_flops_per_s: float) -> dict[str, float]:
    """kind -> the convolution's measured rate over the fitted GEMM model's rate at the shape's equivalent size
    (the fit's fixed cost per call taken out); depthwise: measured FLOP/s over the fp32 peak. 'kind:backward'
    holds the same for the two gradient passes, which libraries run with other (often slower) kernels."""
    by_kind: dict[str, list[float]] = {}
    for r in results:
        # backward: input and weight gradients, each the forward's FLOPs, timed together
        for key, flops, seconds in ((r.shape.kind, r.shape.flops, r.measurement.min),
                                    (f"{r.shape.kind}:backward", 2 * r.shape.flops, r.backward_s)):
            if r.shape.kind == "depthwise" or fp32_fit is None:
                value = flops / seconds / fp32_peak_flops_per_s
            else:
                work_s = max(seconds - fp32_fit.t0_s, 1e-12)
                value = flops / work_s / fp32_fit.rate(r.shape.gemm.equivalent_n)
            by_kind.setdefault(key, []).append(value)
    return {kind: math.prod(values) ** (1 / len(values)) for kind, values in by_kind.items()}


CONVERSION_CHANNELS = 16
CONVERSION_SIDE = 64
"""The probe: a depthwise 3x3 over 16 channels of 64 x 64 (MobileNetV3's first block)."""


@dataclass(frozen=True)
class ConversionRate:
    level: str
    """'cache': the tensors and their converted copies fit in the last-level cache; 'dram': they do not."""
    activation_bytes: float
    """Input and output of the probe convolution."""
    nchw: Measurement
    channels_last: Measurement

    @property
    def bytes_per_s(self) -> float:
        extra = self.nchw.median - self.channels_last.median
        return self.activation_bytes / extra if extra > 0 else float("inf")


def conversion_batches(llc_bytes: float) -> dict[str, int]:
    """Probe batch per level: the activations and their converted copies (2 x (input + output)) fill a
    quarter of the last-level cache for 'cache', and twice it for 'dram'."""
    per_sample = 2 * 2 * CONVERSION_CHANNELS * CONVERSION_SIDE**2 * 4
    return {"cache": max(1, int(llc_bytes / 4 // per_sample)), "dram": max(1, int(2 * llc_bytes // per_sample))}


def layout_conversion(llc_bytes: float, device: str = "cpu", budget_s: float = 0.3) -> list[ConversionRate]:
    """Bytes per second of NCHW <-> channel-blocked conversion, in cache and from DRAM (see the module doc)."""
    import torch

    out = []
    for level, batch in conversion_batches(llc_bytes).items():
        shape = ConvShape("depthwise", batch, CONVERSION_CHANNELS, CONVERSION_CHANNELS, CONVERSION_SIDE, 3,
                          groups=CONVERSION_CHANNELS)
        timed = {}
        for channels_last in (False, True):
            x, w = _operands(torch, shape, device, channels_last)
            with torch.no_grad():
                timed[channels_last] = Timer(
                    lambda x=x, w=w: torch.nn.functional.conv2d(x, w, padding=1, groups=CONVERSION_CHANNELS),
                    label=f"conv layout {level} {'channels-last' if channels_last else 'NCHW'}",
                    work=shape.flops, work_unit="FLOP", budget_s=budget_s).measure()
        moved = 4.0 * batch * CONVERSION_CHANNELS * CONVERSION_SIDE**2 * 2
        out.append(ConversionRate(level, moved, timed[False], timed[True]))
    return out

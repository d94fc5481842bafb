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
    channels_last: bool = True
    """Timed in the layout fast kernels read natively; False for the NCHW depthwise probes (see `key`)."""

    @property
    def key(self) -> str:
        """The efficiency key: the kind, with ':nchw' for a shape timed in NCHW."""
        return self.kind if self.channels_last else f"{self.kind}:nchw"

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
    ConvShape("3x3", 1, 256, 256, 7, 3),
    ConvShape("1x1", 4, 256, 256, 28, 1),
    ConvShape("1x1", 16, 16, 64, 64, 1),
    ConvShape("1x1", 16, 64, 24, 32, 1),
    ConvShape("1x1", 8, 96, 576, 4, 1),
    ConvShape("1x1", 8, 48, 144, 7, 1),
    ConvShape("depthwise", 4, 256, 256, 28, 3, groups=256),
    ConvShape("depthwise", 16, 72, 72, 32, 3, groups=72),
    ConvShape("depthwise", 16, 64, 64, 64, 3, stride=2, groups=64),
    ConvShape("depthwise", 8, 240, 240, 7, 5, groups=240),
    ConvShape("stem", 4, 3, 64, 224, 7, stride=2),
    ConvShape("stem", 1, 3, 16, 112, 3, stride=2),
    ConvShape("depthwise", 16, 72, 72, 32, 3, groups=72, channels_last=False),
    ConvShape("depthwise", 16, 64, 64, 64, 3, stride=2, groups=64, channels_last=False),
    ConvShape("depthwise", 8, 240, 240, 7, 5, groups=240, channels_last=False),
    ConvShape("depthwise", 64, 576, 576, 4, 5, groups=576, channels_last=False),
    ConvShape("depthwise", 1, 576, 576, 4, 5, groups=576, channels_last=False),
    ConvShape("depthwise", 1, 72, 72, 28, 3, stride=2, groups=72, channels_last=False),
)
"""ResNet-50's stage-1 and ResNet-18's last-stage 3x3; ResNet-50's stage-2 1x1; MobileNetV3's narrow 1x1
expansions and projections, from its first stages to its last (4 x 4 pixels), and its depthwise 3x3 and 5x5
at four stages (one strided); the ResNet 7x7/2 and MobileNetV3 3x3/2 stems. Each kind spans small and large
shapes, so that its fixed cost per call and its efficiency are fitted apart (`fit_fixed_and_efficiency`).
Depthwise convolutions are also timed in NCHW ('depthwise:nchw'): there PyTorch's CPU backward runs another,
far slower kernel (3 to 25x its channels-last time here, growing with channels x taps), not a layout
conversion around the same one, so it is measured as its own kind."""


def shapes(quick: bool = False) -> tuple[ConvShape, ...]:
    """SHAPES, or for a quick calibration each key's smallest and largest shape: the two ends the fixed cost
    and the efficiency are fitted from."""
    if not quick:
        return SHAPES
    keep: set[ConvShape] = set()
    for key in {sh.key for sh in SHAPES}:
        same = sorted((sh for sh in SHAPES if sh.key == key), key=lambda sh: sh.flops)
        keep.update((same[0], same[-1]))
    return tuple(sh for sh in SHAPES if sh in keep)


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

    x, w = _operands(torch, shape, device, channels_last=shape.channels_last)
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

    forward = Timer(call, label=f"conv {shape.key}", work=shape.flops, work_unit="FLOP", budget_s=budget_s,
                    sync=sync).measure()
    training = Timer(train, label=f"conv {shape.key} forward+backward", work=3 * shape.flops, work_unit="FLOP",
                     budget_s=budget_s, sync=sync).measure()
    return ConvResult(shape, forward, training)


def _ideal_s(shape: ConvShape, flops: float, fp32_fit: GemmFit | None, fp32_peak_flops_per_s: float) -> float:
    """Seconds the work would take at efficiency 1: at the fitted GEMM rate for the implicit GEMM's equivalent
    size, or at the fp32 peak for a depthwise convolution (no GEMM to compare with)."""
    if shape.kind == "depthwise" or fp32_fit is None:
        return flops / fp32_peak_flops_per_s
    return flops / fp32_fit.rate(shape.gemm.equivalent_n)


def fit_fixed_and_efficiency(points: list[tuple[float, float]], default_fixed_s: float) -> tuple[float, float]:
    """(fixed seconds per call, efficiency) of t = t0 + ideal / efficiency over (ideal_s, measured_s) points, by
    least squares on relative residuals; Hockney's model again, per convolution kind. A call's fixed cost at
    a realistic size (thread fork and join, the library's own setup) exceeds a one-element call's, which is
    all a tiny-layer probe sees. With one point, or an unphysical fit, t0 is `default_fixed_s` (the GEMM fit's)
    and the efficiency the geometric mean of ideal / (t - t0)."""
    if len({round(x, 12) for x, _ in points}) >= 2:
        rows = [(1 / t, x / t) for x, t in points]  # t0 and b = 1 / efficiency, each residual over t
        saa = sum(a * a for a, _ in rows)
        sab = sum(a * b for a, b in rows)
        sbb = sum(b * b for _, b in rows)
        sa = sum(a for a, _ in rows)
        sb = sum(b for _, b in rows)
        det = saa * sbb - sab * sab
        if det > 0:
            t0 = (sa * sbb - sb * sab) / det
            inverse = (saa * sb - sab * sa) / det
            if t0 >= 0 and inverse > 0:
                return t0, 1 / inverse
    ratios = [x / max(t - default_fixed_s, 1e-12) for x, t in points]
    return default_fixed_s, math.prod(ratios) ** (1 / len(ratios))


def efficiencies(results: list[ConvResult], fp32_fit: GemmFit | None,
                 fp32_peak_flops_per_s: float) -> tuple[dict[str, float], dict[str, float]]:
    """(kind -> efficiency, kind -> fixed seconds per call): the convolution's rate over the fitted GEMM
    model's rate at the shape's equivalent size (depthwise: over the fp32 peak), and its fixed cost per call,
    fitted per kind over its shapes. 'kind:backward' holds the same for the two gradient passes together,
    which libraries run with other (often slower) kernels."""
    by_kind: dict[str, list[tuple[float, float]]] = {}
    for r in results:
        # backward: input and weight gradients, each the forward's FLOPs, timed together
        for key, flops, seconds in ((r.shape.key, r.shape.flops, r.measurement.min),
                                    (f"{r.shape.key}:backward", 2 * r.shape.flops, r.backward_s)):
            by_kind.setdefault(key, []).append((_ideal_s(r.shape, flops, fp32_fit, fp32_peak_flops_per_s), seconds))
    default = fp32_fit.t0_s if fp32_fit else 0.0
    fits = {kind: fit_fixed_and_efficiency(points, default) for kind, points in by_kind.items()}
    return {k: eff for k, (_, eff) in fits.items()}, {k: t0 for k, (t0, _) in fits.items()}


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

"""Convolution throughput on representative shapes, relative to what a GEMM of the same reuse reaches, and
the cost of converting NCHW activations to the layout the library's kernels want.

A 3x3, 1x1 or stem convolution runs as an implicit GEMM (m = N P Q, n = C_out, k = C_in R S); its
efficiency is its measured rate over the measured GEMM curve at the implicit GEMM's equivalent square size
(`GemmView.equivalent_n`). That ratio is not one number per kind: it falls as the weight's share of the
convolution's traffic grows. Where activations dominate (ResNet's first stages), oneDNN's kernels stream them
through a weight held in the core's caches and beat a square GEMM of equal reuse (1.6-1.9x here); where the
weight dominates (the last stages at a small batch, a 9.4 MB weight against 0.5 MB of activations), the
kernel streams the weight like a few-rows product and reaches 0.88 of it (3x3 at batch 8, measured). So each
kind is timed at shapes spanning that share, and the cost model follows a trend fitted over them
(`roofline.model.ceilings.ConvEfficiencyFit`, `roofline.workload.ops.conv.Conv2d.weight_share`). A
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
from dataclasses import dataclass, replace
from typing import Any

from roofline.measure.timing import Measurement, Timer, interleaved, rotated
from roofline.model.ceilings import GemmFit
from roofline.workload.ops.base import GemmView
from roofline.workload.ops.conv import Conv2d


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
    """Timed in the layout fast kernels read natively; False for the NCHW depthwise and stem probes (see `key`)."""

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
    def op(self) -> Conv2d:
        """The shape as the op IR states it (bias-free, as timed)."""
        return Conv2d("probe", n=self.batch, c=self.c_in, h=self.size, w=self.size, k=self.c_out, r=self.kernel,
                      s=self.kernel, stride=self.stride, pad=self.padding, groups=self.groups, bias=False)

    @property
    def weight_share(self) -> float:
        return self.op.weight_share()

    @property
    def gemm(self) -> GemmView:
        """The implicit GEMM of the forward pass, as the op IR's Conv2d states it."""
        return GemmView(self.batch * self.out_size**2, self.c_out // self.groups,
                        self.c_in // self.groups * self.kernel**2, self.groups)


SHAPES = (
    ConvShape("3x3", 4, 64, 64, 56, 3),
    ConvShape("3x3", 8, 128, 128, 14, 3),
    ConvShape("3x3", 8, 512, 512, 4, 3),
    ConvShape("1x1", 4, 256, 256, 28, 1),
    ConvShape("1x1", 8, 512, 2048, 4, 1),
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
    ConvShape("stem", 4, 3, 64, 224, 7, stride=2, channels_last=False),
    ConvShape("stem", 1, 3, 16, 112, 3, stride=2, channels_last=False),
)
"""3x3: ResNet-50's stage 1, ResNet-18's stages 2 and 4 at 112 px and batch 8 (weight shares 0.02, 0.27, 0.95; all on
oneDNN's path, see `roofline.model.cpu_runtime.backend.cpu_conv_backend`: a batch-1 shape would run PyTorch's
fallback and say nothing of oneDNN); 1x1: ResNet-50's stage-2 and stage-4 (0.04, 0.75) and MobileNetV3's narrow
expansions and projections, from its first stages to its last (4 x 4 pixels); its depthwise 3x3 and 5x5 at four
stages (one strided); the ResNet 7x7/2 and MobileNetV3 3x3/2 stems. Depthwise convolutions are also timed in NCHW
('depthwise:nchw'): there PyTorch's CPU backward runs another, far slower kernel (3 to 25x its channels-last time
here, growing with channels x taps), not a layout conversion around the same one, so it is measured as its own kind.
The stems too ('stem:nchw'): oneDNN reads a first layer's few input channels in NCHW where they lie, faster than
channels-last (`roofline.model.conv_cost.NCHW_NATIVE_KINDS`)."""

FIXED_PROBES = (
    ConvShape("1x1", 8, 16, 16, 1, 1),
    ConvShape("3x3", 8, 16, 16, 4, 3),
    ConvShape("depthwise", 8, 16, 16, 4, 3, groups=16),
    ConvShape("stem", 8, 3, 16, 8, 3, stride=2),
)
"""The least work each kind can do on the library's path (batch 8 keeps PyTorch off its batch-1 fallback, see
`roofline.model.cpu_runtime.backend.cpu_conv_backend`), timed in both layouts: the per-call cost every such convolution
pays however small. Here it is 50-65 us channels-last and 90-100 us NCHW, against 8 us for the same work on
the fallback path: each oneDNN primitive (weight reorder, convolution, and for NCHW the two activation
reorders) runs as its own parallel region, and PyTorch's wrapper prepares them per call."""

EFFICIENCY_MIN_WORK_SHARE = 0.5
"""A shape sets its kind's efficiency only where the work is at least this share of its time, so that an error
in the fixed cost does not become an error in the efficiency; with no such shape, all of the kind's shapes."""


def shapes(quick: bool = False) -> tuple[ConvShape, ...]:
    """SHAPES, or for a quick calibration each key's shapes of the lowest and the highest weight share (the
    ends its efficiency is interpolated between)."""
    if not quick:
        return SHAPES
    ends: set[ConvShape] = set()
    for key in {sh.key for sh in SHAPES}:
        kind = [sh for sh in SHAPES if sh.key == key]
        ends |= {min(kind, key=lambda sh: sh.weight_share), max(kind, key=lambda sh: sh.weight_share)}
    return tuple(sh for sh in SHAPES if sh in ends)


@dataclass(frozen=True)
class ConvResult:
    shape: ConvShape
    measurement: Measurement
    """Forward, no autograd."""
    training: Measurement
    """Forward and backward (input and weight gradients) with autograd."""

    @property
    def flops_per_s(self) -> float:
        return self.measurement.rate

    @property
    def backward_s(self) -> float:
        """The backward's own time: a training step's median less the forward's."""
        return max(self.training.median - self.measurement.median, 1e-12)


def _operands(torch: Any, shape: ConvShape, device: str, channels_last: bool) -> tuple[Any, Any]:
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(shape.batch, shape.c_in, shape.size, shape.size, device=device).contiguous(memory_format=fmt)
    w = torch.randn(shape.c_out, shape.c_in // shape.groups, shape.kernel, shape.kernel, device=device)
    return x, w.contiguous(memory_format=fmt)


def _timers(shape: ConvShape, device: str, budget_s: float, cold: bool) -> tuple[Timer, Timer]:
    """(forward without autograd, forward + backward) timers of one fp32 convolution of `shape` in its layout;
    `cold`: each call after `timing.evict_private_caches`, as a layer of a model is called."""
    import torch

    from roofline.measure.timing import evict_private_caches

    x, w = _operands(torch, shape, device, channels_last=shape.channels_last)
    sync = torch.cuda.synchronize if device == "cuda" else None
    setup = evict_private_caches() if cold else None

    def conv(a: Any, b: Any) -> Any:
        return torch.nn.functional.conv2d(a, b, stride=shape.stride, padding=shape.padding, groups=shape.groups)

    def call():
        with torch.no_grad():
            return conv(x, w)

    xg, wg = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    grad = torch.randn_like(call())

    def train():
        conv(xg, wg).backward(grad)

    return (Timer(call, label=f"conv {shape.key}", work=shape.flops, work_unit="FLOP", budget_s=budget_s,
                  sync=sync, setup=setup),
            Timer(train, label=f"conv {shape.key} forward+backward", work=3 * shape.flops, work_unit="FLOP",
                  budget_s=budget_s, sync=sync, setup=setup))


def measure(shape: ConvShape, device: str = "cpu", budget_s: float = 0.3) -> ConvResult:
    """Time one fp32 convolution of `shape` in its layout: forward without autograd, and forward + backward."""
    forward, training = _timers(shape, device, budget_s, cold=False)
    return ConvResult(shape, forward.measure(), training.measure())


def fixed_costs(device: str = "cpu", budget_s: float = 0.2) -> tuple[dict[str, Measurement], dict[str, Measurement]]:
    """Per-call times of each kind's `FIXED_PROBES` shape, dispatch included, channels-last ('kind') and over
    NCHW tensors ('kind:nchw'), forward alone and forward + backward ('...:training'), as two sets of
    measurements: in context, each call cold and in rotation with the other probes (`timing.rotated`), as a
    model calls its layers, which predictions charge; back to back, the state `measure` times the efficiency
    shapes in, which `efficiency_points` takes out of them (measured here: 50-110 us in context against 20-60 us
    back to back; taking the first out of back-to-back times left some 1x1 shapes with almost no work).
    `per_pass` turns either set into seconds per pass."""
    cold: dict[str, Timer] = {}
    warm: dict[str, Timer] = {}
    for probe in FIXED_PROBES:
        for channels_last in (True, False):
            shape = replace(probe, channels_last=channels_last)
            cold[shape.key], cold[f"{shape.key}:training"] = _timers(shape, device, budget_s, cold=device == "cpu")
            warm[shape.key], warm[f"{shape.key}:training"] = _timers(shape, device, budget_s, cold=False)
    in_context = rotated(cold) if device == "cpu" else interleaved(cold)
    back_to_back = interleaved(warm) if device == "cpu" else in_context
    return in_context, back_to_back


def per_pass(measured: dict[str, Measurement]) -> dict[str, float]:
    """'key' -> forward seconds and 'key:backward' -> (forward + backward) - forward, from `fixed_costs`."""
    out: dict[str, float] = {}
    for key, m in measured.items():
        if not key.endswith(":training"):
            out[key] = m.median
            out[f"{key}:backward"] = max(measured[f"{key}:training"].median - m.median, 1e-12)
    return out


def _ideal_s(shape: ConvShape, flops: float, fp32_fit: GemmFit | None, fp32_peak_flops_per_s: float) -> float:
    """Seconds the work would take at efficiency 1: at the fitted GEMM rate for the implicit GEMM's equivalent
    size, or at the fp32 peak for a depthwise convolution (no GEMM to compare with)."""
    if shape.kind == "depthwise" or fp32_fit is None:
        return flops / fp32_peak_flops_per_s
    return flops / fp32_fit.rate(shape.gemm.equivalent_n)


def kept_efficiencies(points: list[tuple[float, float, float]], fixed_s: float) -> list[tuple[float, float]]:
    """(weight share, ideal seconds / work seconds) from (weight share, ideal seconds, measured seconds) of a
    kind's shapes and its measured fixed cost, for the shapes whose work, their time less the fixed cost, is
    at least EFFICIENCY_MIN_WORK_SHARE of it (all of them when none is)."""
    work = [(share, ideal, t - fixed_s, t) for share, ideal, t in points]
    kept = [(share, ideal / w) for share, ideal, w, t in work if w >= EFFICIENCY_MIN_WORK_SHARE * t]
    return kept or [(share, ideal / max(w, 1e-12)) for share, ideal, w, _ in work]


def efficiency_points(results: list[ConvResult], fixed: dict[str, float], fp32_fit: GemmFit | None,
                      fp32_peak_flops_per_s: float) -> dict[str, list[tuple[float, float]]]:
    """Kind -> (weight share, efficiency) of each kept shape, by share: the convolution's rate over the fitted
    GEMM model's rate at the shape's equivalent size (depthwise: over the fp32 peak), once the kind's
    measured fixed cost per call is taken out. 'kind:backward' holds the same for the two gradient passes
    together, which libraries run with other (often slower) kernels."""
    by_kind: dict[str, list[tuple[float, float, float]]] = {}
    for r in results:
        # backward: input and weight gradients, each the forward's FLOPs, timed together
        for key, flops, seconds in ((r.shape.key, r.shape.flops, r.measurement.median),
                                    (f"{r.shape.key}:backward", 2 * r.shape.flops, r.backward_s)):
            ideal = _ideal_s(r.shape, flops, fp32_fit, fp32_peak_flops_per_s)
            by_kind.setdefault(key, []).append((r.shape.weight_share, ideal, seconds))
    return {kind: sorted(kept_efficiencies(points, fixed.get(kind, 0.0))) for kind, points in by_kind.items()}


def summary(points: dict[str, list[tuple[float, float]]]) -> dict[str, float]:
    """Kind -> the geometric mean of its points' efficiencies: the one figure a calibration prints per kind,
    and what predictions use from a profile calibrated before the points were recorded."""
    return {kind: math.prod(e for _, e in pts) ** (1 / len(pts)) for kind, pts in points.items()}


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


DRAM_CONVERSION_LLC_MULTIPLE = 8
"""The 'dram' probe's activations and copies span this many last-level caches. At twice the cache (the first
choice) part of each reorder still hit it: two back-to-back quick calibrations read 45.6 and 17.9 GB/s, while
NCHW against channels-last convolutions of 50-130 MB at batch 32 showed 3.2-4.4 GB/s (LOG.md, eighth session)."""


def conversion_batches(llc_bytes: float) -> dict[str, int]:
    """Probe batch per level: the activations and their converted copies (2 x (input + output)) fill a
    quarter of the last-level cache for 'cache', and DRAM_CONVERSION_LLC_MULTIPLE caches for 'dram'."""
    per_sample = 2 * 2 * CONVERSION_CHANNELS * CONVERSION_SIDE**2 * 4
    return {"cache": max(1, int(llc_bytes / 4 // per_sample)),
            "dram": max(1, int(DRAM_CONVERSION_LLC_MULTIPLE * llc_bytes // per_sample))}


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

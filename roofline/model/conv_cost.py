"""What a convolution's measured figures say about it: which efficiency and fixed cost apply (by kind, layout
and direction), what a CPU convolution over NCHW tensors spends converting them to oneDNN's layout, and what a
GPU convolution's bias costs in a kernel of its own."""

from __future__ import annotations

from roofline.model.ceilings import Ceilings
from roofline.model.context import CostContext
from roofline.model.notes import Note
from roofline.workload.ops.base import Op
from roofline.workload.ops.conv import Conv2d


def conv_kind(op: Conv2d) -> str:
    """Which measured convolution efficiency applies: 'depthwise', '1x1', 'stem' or '3x3'."""
    if op.depthwise:
        return "depthwise"
    if op.r == 1 and op.s == 1:
        return "1x1"
    if op.stem:
        return "stem"
    return "3x3"


def efficiency_key(c: Ceilings, kind: str, pass_: str) -> str | None:
    """The measured convolution efficiency that applies: the kind's backward figure for gradient passes when
    calibration measured one (CPU depthwise backward runs 3.5-5x its forward's time), else the kind's."""
    if pass_ != "forward" and f"{kind}:backward" in c.conv_efficiency:
        return f"{kind}:backward"
    return kind if kind in c.conv_efficiency else None


def _fixed_key(kind: str, pass_: str, c: Ceilings, ctx: CostContext) -> str:
    """The measured fixed cost that applies: per kind, layout (':nchw' on a CPU without channels_last: two
    more reorder primitives per call) and direction (':backward' for the gradient passes)."""
    layout = ":nchw" if not c.is_gpu and not ctx.channels_last else ""
    return f"{kind}{layout}{':backward' if pass_ != 'forward' else ''}"


def conv_fixed_s(kind: str, pass_: str, call_s: float, ctx: CostContext, slow2d: bool) -> float:
    """A convolution call's measured fixed cost beyond the per-call host time charged separately; the two
    gradient passes were timed as one call (PyTorch's convolution_backward), so each takes half. PyTorch's
    batch-1 fallback (`slow2d`, see `cpu_conv_backend`) is one BLAS call: the GEMM fit's fixed cost applies."""
    c = ctx.ceilings
    fit_fixed = max(0.0, c.gemm_fit.t0_s - c.dispatch_s) if c.gemm_fit else 0.0
    if slow2d:
        return fit_fixed
    table = c.conv_fixed_warm_s if ctx.warm_calls and c.conv_fixed_warm_s else c.conv_fixed_s
    fixed = table.get(_fixed_key(kind, pass_, c, ctx))
    if fixed is None:
        return fit_fixed if kind != "depthwise" else 0.0
    return max(0.0, fixed - call_s) / (2 if pass_ != "forward" else 1)


NCHW_NATIVE_KINDS = ("stem",)
"""Kinds oneDNN runs over NCHW tensors without converting the input first: a first layer's few input channels
are read where they lie. Timed in NCHW as their own kind (':nchw', `roofline.measure.probes.conv.SHAPES`),
because there the NCHW convolution is not the channels-last one between two conversions: the 7x7/2 stem at
batch 8 runs in 11.3 ms over NCHW against 15.5 ms channels-last on the 2-core machine of benchmarks/LOG.md."""


def measured_kind(kind: str, c: Ceilings, ctx: CostContext, pass_: str) -> str:
    """The kind whose measured efficiency prices this convolution: '<kind>:nchw' where the CPU convolution
    over NCHW tensors was timed as its own kernel (the conversions, if any, are then in the figure), else
    `kind`, the channels-last kernel that `layout_conversion_s` adds the conversions to.

    Depthwise: only the gradient passes (PyTorch runs another, far slower kernel there); the forward over
    NCHW is the channels-last kernel between two conversions. The stem (`NCHW_NATIVE_KINDS`): every pass."""
    if c.is_gpu or ctx.channels_last:
        return kind
    nchw = f"{kind}:nchw"
    if kind == "depthwise":
        measured = pass_ != "forward" and f"{nchw}:backward" in c.conv_efficiency
    else:
        measured = kind in NCHW_NATIVE_KINDS and efficiency_key(c, nchw, pass_) is not None
    return nchw if measured else kind


def layout_conversion_s(op: Op, pass_: str, act_bytes: float, ctx: CostContext, onednn: bool) -> float:
    """Seconds a CPU convolution run by oneDNN (`onednn`, see `cpu_conv_backend`) over NCHW tensors spends
    converting them to its channel-blocked layout and back: separate reorder kernels before and after the
    convolution, so the time adds to it. The rate is calibration's, from the last-level cache when the
    tensors and their converted copies fit there."""
    c = ctx.ceilings
    rates = c.layout_conversion_bytes_per_s
    if not onednn or ctx.channels_last or not rates:
        return 0.0
    if isinstance(op, Conv2d) and measured_kind(conv_kind(op), c, ctx, pass_) != conv_kind(op):
        return 0.0  # measured in NCHW, conversions included
    llc = c.levels[-2].capacity_bytes if len(c.levels) > 1 else 0.0
    rate = rates.get("cache" if 2 * act_bytes <= llc else "dram")
    return act_bytes / rate if rate else 0.0


BIAS_ADD_KERNEL = "conv:bias"
"""The runtime profile's key for the kernel that adds a cuDNN convolution's bias (':nchw' over NCHW tensors)."""


def bias_add(op: Op, pass_: str, ctx: CostContext) -> tuple[float, float, Note | None]:
    """(device seconds, host seconds, note) of the kernel PyTorch runs after a cuDNN convolution to add its bias:
    cuDNN's convolution takes none, so `_convolution` (aten/src/ATen/native/Convolution.cpp, ConvBackend::Cudnn)
    follows it with `output.add_(reshape_bias(input.dim(), bias))`, a broadcast elementwise kernel that reads and
    writes the whole output, queued after the convolution's own kernels, so its time adds to theirs. On the
    project's H100 (benchmarks/results/gpu-live-h100-vgg.json) VGG-16's 13 biases took 2.56 ms of a 8.60 ms
    inference step at batch 64, as long as its ReLUs and max pools together. Its rate is the runtime profile's
    measured one where it has one, else the DRAM level's; its host time is one elementwise call. A CPU's
    oneDNN and the backward passes (the bias gradient is its own op) have none."""
    c = ctx.ceilings
    if not (isinstance(op, Conv2d) and op.bias and c.is_gpu and pass_ == "forward"):
        return 0.0, 0.0, None
    element_bytes = ctx.activation_bytes if ctx.output_bytes is None else ctx.output_bytes
    moved = 2.0 * float(op.output_elements()) * element_bytes
    rate = ctx.kernel_rate(BIAS_ADD_KERNEL)[1]
    seconds = max(moved / (rate or c.levels[-1].bandwidth_bytes_per_s), c.launch_s)
    host = c.dispatch_s_by_kind.get("elementwise", c.dispatch_s) * ctx.host_call_factor
    note = Note("bias add", f"PyTorch adds the bias in a kernel of its own after cuDNN's convolution "
                f"({moved / 1e6:.3g} MB read and written, {seconds * 1e3:.3g} ms)")
    return seconds, host, note

"""Op x hardware x precision -> time, and what bounds it.

Every op pass costs max(compute time, memory time) on the device, with a floor of one kernel's minimum
duration on a GPU, plus the host's per-op dispatch cost (which the async rule in `step.py` overlaps with
device work on a GPU and adds to it on a CPU). Each mechanism is named where it is applied:

- tensor-core path: only for dtypes the profile lists, at a rate scaled by how much of the required operand
  alignment the GEMM's leading dimensions (n, k; channels for convolutions) meet: unaligned operands force
  narrower vector loads (8191 fp16 elements can only be loaded 2 bytes at a time instead of 16);
- tile quantization (GPU): a thread block computes a whole tm x tn output tile even where the matrix ends;
- wave quantization (GPU and CPU): tiles are dealt out to SMs / cores in waves, and the last wave may be
  partly idle; split-K recovers parallelism for short, deep products;
- hierarchical memory: compulsory bytes at the level that holds the working set (eager frameworks write
  each op's output to memory; the next op finds it in cache when it fits), GEMM panel re-reads at L2;
  weights at the level that holds their reuse distance, the whole step's footprint;
- depthwise convolutions have no channel reduction to feed a GEMM and run as a direct stencil on the
  vector units;
- layout: tensor-core convolutions run in NHWC; given PyTorch's default NCHW tensors, cuDNN transposes
  each convolution's activations in and out (NVIDIA, "Tensor Layouts In Memory: NCHW vs NHWC",
  https://docs.nvidia.com/deeplearning/performance/dl-performance-convolutional/index.html), one read and
  one write of every activation operand, unless the model runs channels_last;
- calibration: Hockney's model fitted to the measured GEMM curve (a fixed cost per call, a rate growing
  with operand reuse) and measured convolution efficiencies replace the tile model; a
  measured streaming rate of a non-GEMM kernel (CPU max pooling over NCHW is a scalar loop) caps its
  forward pass, and its backward kernel's rate its gradient passes (measured here: GELU's backward 10.5 GB/s,
  LayerNorm's 12.7 GB/s, in cache); measured per-kind dispatch replaces the single tiny-op figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from roofline.model.ceilings import Ceilings, Level, skinny_rate
from roofline.workload.ops.base import GemmView, Op

LOAD_ALIGNMENT_BYTES = 16
"""Widest vector load a tensor-core GEMM kernel issues (128-bit LDG/LDS); alignment_elements x dtype
bytes equals this on every NVIDIA profile shipped. Fewer aligned bytes -> proportionally more loads."""
SPLIT_K_MIN_DEPTH = 64
"""Split-K halves a product's depth k while the tiles leave units idle, but keeps each slice at least this deep.
The model's own bound, not a measured or published figure: the reduction of the partial sums is not priced,
so this floor is what stops split-K from cutting a shallow product into slices too thin to pay for it."""
QUANTIZATION_NOTE_RATIO = 1.25
"""A GEMM gets a note on its tile and wave quantization when that costs more than this times its ideal time
(display only: it changes no time)."""


@dataclass(frozen=True)
class OpCost:
    """The predicted cost of one pass of one op, and why."""

    name: str
    kind: str
    pass_: str
    flops: float
    bytes: float
    compute_s: float
    memory_s: float
    host_s: float
    """Host-side framework dispatch (+ launch) time for this op pass."""
    device_s: float
    """Device-side time: max(compute, memory) with the kernel floor on GPUs."""
    bound: str
    """'compute', 'memory:<level>' or 'overhead'."""
    path: str
    """Which units ran it: 'tensor cores fp16', 'CUDA cores fp32', 'SIMD fp32', 'none'."""
    notes: tuple[str, ...] = ()
    launches: int = 0
    queued: bool = False
    """True on a GPU: the host queues kernels and runs ahead, so host and device time overlap."""
    fresh_bytes: float = 0.0
    """Bytes this pass's allocations took in fresh pages, first-touched (CPU; see `with_first_touch`)."""

    @property
    def time_s(self) -> float:
        """The op in isolation: host and device overlap on a GPU (queued), add up on a CPU."""
        return max(self.device_s, self.host_s) if self.queued else self.device_s + self.host_s


@dataclass(frozen=True)
class CostContext:
    """Model-level facts one op's cost depends on."""

    ceilings: Ceilings
    activation_bytes: int
    """Bytes per activation element at this precision."""
    weight_bytes: int
    """Bytes per weight element the kernels read (fp16 copies under AMP)."""
    weight_reuse_bytes: float = 0.0
    """Bytes a step touches between two uses of one weight (all weights and every activation the step
    writes): a weight is read once per step, so it stays in the smallest level that holds all of them; an
    LRU cache cycled through more than it holds keeps none of it."""
    channels_last: bool = False
    """Activations stored NHWC (`model.to(memory_format=torch.channels_last)`), as tensor-core kernels want."""
    notes: list[str] = field(default_factory=list)


def _aligned_fraction(dims: list[int], align: int) -> float:
    """Largest power-of-two divisor (<= align) common to all dims, as a fraction of align."""
    a = align
    while a > 1 and any(int(d) % a for d in dims):
        a //= 2
    return a / align


def _alignment_dims(op: Op, view: GemmView) -> list[int]:
    """The dimensions whose alignment decides load width: channels for convolutions, n and k for GEMMs."""
    if op.kind == "conv2d":
        groups = op.groups  # type: ignore[attr-defined]
        return [op.c // groups, op.k // groups]  # type: ignore[attr-defined]
    return [view.n, view.k]


def gemm_rate(op: Op, view: GemmView, ctx: CostContext) -> tuple[float, str, list[str]]:
    """Peak FLOP/s available to this GEMM view: tensor path scaled by alignment, else vector path."""
    c = ctx.ceilings
    notes: list[str] = []
    if c.matrix_flops_per_s is None:
        return c.vector_flops_per_s, f"{'CUDA cores' if c.is_gpu else 'SIMD'} {c.compute_dtype}", notes
    rate = c.matrix_flops_per_s
    path = f"{'tensor cores' if c.is_gpu else 'matrix units'} {c.compute_dtype}"
    if c.alignment_elements:
        dims = _alignment_dims(op, view)
        fraction = _aligned_fraction(dims, c.alignment_elements)
        if fraction < 1.0:
            scaled = rate * fraction
            element_bytes = LOAD_ALIGNMENT_BYTES // c.alignment_elements
            if scaled < c.vector_flops_per_s:
                notes.append(f"dims {dims} not multiples of {c.alignment_elements}: tensor cores unusable, "
                             f"{c.vector_flops_per_s / 1e12:.1f} TFLOP/s CUDA-core path")
                return c.vector_flops_per_s, f"CUDA cores {c.compute_dtype}", notes
            notes.append(f"dims {dims} not multiples of {c.alignment_elements} ({c.alignment_elements * element_bytes}"
                         f" B): loads {int(fraction * LOAD_ALIGNMENT_BYTES)} B wide, tensor rate x{fraction:g}")
            rate = scaled
    return rate, path, notes


def _panel_bytes(view: GemmView, tile: tuple[int, int], element_bytes: float) -> float:
    """L2 -> SM traffic of a tiled GEMM: each output tile streams its A panel (tm x k) and B panel (k x tn),
    so A is read ceil(n / tn) times and B ceil(m / tm) times."""
    m, n, k = float(view.m), float(view.n), float(view.k)
    return (m * k * math.ceil(n / tile[1]) + k * n * math.ceil(m / tile[0])) * float(view.count) * element_bytes


def gemm_compute_s(view: GemmView, rate: float, ctx: CostContext) -> tuple[float, tuple[int, int], int, float]:
    """Time of the GEMM under tile and wave quantization; returns (seconds, tile, split-K factor, L2 bytes).

    The tile is the one that minimises max(compute, L2 panel traffic): small tiles waste fewer wave slots
    but re-read the operands more often, the trade-off a GEMM library's heuristic makes. CPUs have no
    wave quantization across cores beyond partial blocks, and their panel traffic is not modelled (0).
    """
    c = ctx.ceilings
    m, n, k, count = int(view.m), int(view.n), int(view.k), int(view.count)
    if min(m, n, k, count) <= 0:
        return 0.0, (0, 0), 1, 0.0
    per_unit = rate / c.units
    l2 = next((lv for lv in c.levels if lv.name == "L2"), None) if c.is_gpu else None
    best = (math.inf, math.inf, (0, 0), 1, 0.0)
    for tm, tn in c.tiles:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * count
        split = 1
        while tiles * split * 2 <= c.units and k // (split * 2) >= SPLIT_K_MIN_DEPTH:
            split *= 2
        waves = math.ceil(tiles * split / c.units)
        if c.is_gpu:
            tile_flops = 2 * tm * tn * math.ceil(k / split)
        else:
            tile_flops = 2 * min(tm, m) * min(tn, n) * math.ceil(k / split)
        t = waves * tile_flops / per_unit
        panel = _panel_bytes(view, (tm, tn), ctx.activation_bytes) if l2 is not None else 0.0
        limit = max(t, panel / l2.bandwidth_bytes_per_s) if l2 is not None else t
        if limit < best[0]:
            best = (limit, t, (tm, tn), split, panel)
    return best[1], best[2], best[3], best[4]


def _level_for(levels: tuple[Level, ...], working_set: float, is_gpu: bool) -> Level:
    """The smallest level holding the working set; a GPU's L1 does not persist across kernels."""
    for level in levels[:-1]:
        if is_gpu and level.name == "L1":
            continue
        if working_set <= level.capacity_bytes:
            return level
    return levels[-1]


def conv_kind(op: Op) -> str:
    """Which measured convolution efficiency applies: 'depthwise', '1x1', 'stem' or '3x3'."""
    if op.depthwise:  # type: ignore[attr-defined]
        return "depthwise"
    if op.r == 1 and op.s == 1:  # type: ignore[attr-defined]
        return "1x1"
    if op.stem:  # type: ignore[attr-defined]
        return "stem"
    return "3x3"


def _efficiency_key(c: Ceilings, kind: str, pass_: str) -> str | None:
    """The measured convolution efficiency that applies: the kind's backward figure for gradient passes when
    calibration measured one (CPU depthwise backward runs 3.5-5x its forward's time), else the kind's."""
    if pass_ != "forward" and f"{kind}:backward" in c.conv_efficiency:
        return f"{kind}:backward"
    return kind if kind in c.conv_efficiency else None


MKLDNN_MIN_ELEMENTS = 20480
"""PyTorch takes its oneDNN convolution for a batch-1, 1x1-or-3x3 input only above this many input elements
(ConvParams::use_mkldnn, aten/src/ATen/native/Convolution.cpp: 'for some case, native is faster')."""


def cpu_conv_backend(op: Op, threads: int) -> str:
    """Which PyTorch CPU kernel runs an fp32 convolution: 'mkldnn' (oneDNN, a fixed cost of several primitive
    calls, see `roofline.measure.probes.conv.FIXED_PROBES`) or 'slow2d' (im2col and one BLAS product, a plain call).
    ConvParams::use_mkldnn: oneDNN when (strided or dilated or batch >= 16 or not 1x1 or more than one
    thread) and (grouped or a kernel larger than 3x3 in both sides or batch > 1 or more than 20480 input
    elements); checked against torch._C._select_conv_backend on torch 2.13."""
    stride, dilation = tuple(op.stride), tuple(op.dilation)  # type: ignore[attr-defined]
    r, s, n = op.r, op.s, op.n  # type: ignore[attr-defined]
    one_by_one = r == 1 and s == 1
    takes = stride != (1, 1) or dilation != (1, 1) or n >= 16 or not one_by_one or threads > 1
    worth = (op.groups > 1 or (r > 3 and s > 3) or n > 1  # type: ignore[attr-defined]
             or n * op.c * op.h * op.w > MKLDNN_MIN_ELEMENTS)  # type: ignore[attr-defined]
    return "mkldnn" if takes and worth else "slow2d"


def _fixed_key(kind: str, pass_: str, c: Ceilings, ctx: CostContext) -> str:
    """The measured fixed cost that applies: per kind, layout (':nchw' on a CPU without channels_last: two
    more reorder primitives per call) and direction (':backward' for the gradient passes)."""
    layout = ":nchw" if not c.is_gpu and not ctx.channels_last else ""
    return f"{kind}{layout}{':backward' if pass_ != 'forward' else ''}"


def _conv_fixed_s(kind: str, pass_: str, call_s: float, ctx: CostContext, slow2d: bool) -> float:
    """A convolution call's measured fixed cost beyond the per-call host time charged separately; the two
    gradient passes were timed as one call (PyTorch's convolution_backward), so each takes half. PyTorch's
    batch-1 fallback (`slow2d`, see `cpu_conv_backend`) is one BLAS call: the GEMM fit's fixed cost applies."""
    c = ctx.ceilings
    fit_fixed = max(0.0, c.gemm_fit.t0_s - c.dispatch_s) if c.gemm_fit else 0.0
    if slow2d:
        return fit_fixed
    fixed = c.conv_fixed_s.get(_fixed_key(kind, pass_, c, ctx))
    if fixed is None:
        return fit_fixed if kind != "depthwise" else 0.0
    return max(0.0, fixed - call_s) / (2 if pass_ != "forward" else 1)


def skinny_gemm_rate(view: GemmView, c: Ceilings) -> tuple[float, str] | None:
    """The measured rate for a view whose smallest dimension a measured surface covers (1 to 64), at the
    geometric mean of the other two dimensions, with the note that says which; None otherwise. A short
    inner dimension (a weight gradient at a small batch) writes a large output from little work and has
    its own surface; a few rows or columns (a small batch through a layer) stream the weight: the few-rows
    surface."""
    small = min(view.m, view.n, view.k)
    outer = view.k == small and view.k < min(view.m, view.n) and bool(c.outer_gemm)
    surface = c.outer_gemm if outer else c.skinny_gemm
    if not surface or small <= 0:
        return None
    rate = skinny_rate(surface, float(small), math.sqrt(float(view.m) * float(view.n) * float(view.k) / small))
    if rate is None:
        return None
    what = f"inner dimension {small}: measured outer-product" if outer else f"{small}-row product: measured skinny-GEMM"
    return rate, f"{what} rate {rate / 1e9:.3g} GFLOP/s"


def _depthwise_kind(c: Ceilings, ctx: CostContext, pass_: str) -> str:
    """'depthwise:nchw' for the gradient passes over NCHW tensors on a CPU calibrated in that layout (PyTorch
    runs another, far slower kernel there, conversion included), else 'depthwise': the forward over NCHW is
    the channels-last kernel between two layout conversions, which `layout_conversion_s` adds."""
    nchw = (pass_ != "forward" and not c.is_gpu and not ctx.channels_last
            and "depthwise:nchw:backward" in c.conv_efficiency)
    return "depthwise:nchw" if nchw else "depthwise"


def layout_conversion_s(op: Op, pass_: str, act_bytes: float, ctx: CostContext, onednn: bool) -> float:
    """Seconds a CPU convolution run by oneDNN (`onednn`, see `cpu_conv_backend`) over NCHW tensors spends
    converting them to its channel-blocked layout and back: separate reorder kernels before and after the
    convolution, so the time adds to it. The rate is calibration's, from the last-level cache when the
    tensors and their converted copies fit there."""
    c = ctx.ceilings
    rates = c.layout_conversion_bytes_per_s
    if not onednn or ctx.channels_last or not rates:
        return 0.0
    if op.depthwise and _depthwise_kind(c, ctx, pass_) == "depthwise:nchw":  # type: ignore[attr-defined]
        return 0.0  # measured in NCHW, conversion included
    llc = c.levels[-2].capacity_bytes if len(c.levels) > 1 else 0.0
    rate = rates.get("cache" if 2 * act_bytes <= llc else "dram")
    return act_bytes / rate if rate else 0.0


def op_cost(op: Op, pass_: str, ctx: CostContext) -> OpCost:
    """Predict one pass of one op."""
    c = ctx.ceilings
    flops = float(op.flops(pass_))
    traffic = op.traffic(pass_)
    act_bytes = float((traffic.activations_read + traffic.activations_written) * ctx.activation_bytes)
    w_bytes = float((traffic.weights_read + traffic.weights_written) * ctx.weight_bytes)
    launches = op.launches(pass_)
    if op.is_free or (flops == 0 and act_bytes + w_bytes == 0):
        return OpCost(op.name, op.kind, pass_, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "free", "none", (), 0, c.is_gpu)
    notes: list[str] = []
    by_kind = c.dispatch_s_by_kind
    call_s = by_kind.get(op.kernel, by_kind.get(op.kind, c.dispatch_s))
    views = op.gemm_views(pass_)
    depthwise = op.kind == "conv2d" and conv_kind(op) == "depthwise"
    compute_s = 0.0
    l2_bytes = 0.0
    cpu_conv = op.kind == "conv2d" and not c.is_gpu
    onednn = cpu_conv and cpu_conv_backend(op, c.threads) == "mkldnn"
    slow2d = cpu_conv and not onednn
    if slow2d:
        notes.append("PyTorch's batch-1 fallback convolution: im2col and one BLAS product, no oneDNN call")
    if views and not depthwise:
        path = ""
        for view in views:
            rate, path, why = gemm_rate(op, view, ctx)
            notes.extend(why)
            kind = conv_kind(op) if op.kind == "conv2d" else None
            skinny = skinny_gemm_rate(view, c) if kind is None and not why else None
            if skinny:
                # the surface was timed per torch call, dispatch included, which host_s charges already
                notes.append(skinny[1])
                compute_s += max(view.flops / skinny[0] - c.dispatch_s, view.flops / rate)
            elif c.gemm_fit and not why:
                fit, reuse = c.gemm_fit, view.equivalent_n
                key = _efficiency_key(c, kind, pass_) if kind and not slow2d else None
                efficiency = 1.0
                if key:
                    share = op.weight_share()  # type: ignore[attr-defined]
                    efficiency = c.conv_efficiency_at(key, share)
                    notes.append(f"measured {key} convolution: {efficiency:.0%} of a GEMM of equal reuse "
                                 f"(n = {reuse:.0f}; weight share {share:.2f})")
                # fixed costs per call include the dispatch that host_s charges already
                fixed = _conv_fixed_s(kind, pass_, call_s, ctx, slow2d) if kind else max(0.0, fit.t0_s - c.dispatch_s)
                t = fixed + view.flops / (fit.rate(reuse) * efficiency)
                compute_s += max(t, view.flops / rate)
            else:
                t, tile, split, panel = gemm_compute_s(view, rate, ctx)
                compute_s += t
                l2_bytes += panel
                useful = view.flops / rate
                if t > QUANTIZATION_NOTE_RATIO * useful:
                    notes.append(f"tile {tile[0]}x{tile[1]}{f' split-K {split}' if split > 1 else ''}: "
                                 f"quantization costs {t / useful:.2f}x the ideal time")
    else:
        rate = c.vector_flops_per_s
        key = _efficiency_key(c, _depthwise_kind(c, ctx, pass_), pass_) if depthwise else None
        fixed = 0.0
        if key:
            efficiency = c.conv_efficiency_at(key, op.weight_share())  # type: ignore[attr-defined]
            rate *= efficiency
            fixed = _conv_fixed_s("depthwise", pass_, call_s, ctx, slow2d)
            notes.append(f"measured {key} efficiency {efficiency:.0%}")
        elif depthwise:
            notes.append("depthwise: no channel reduction, direct stencil on vector units")
        path = f"{'CUDA cores' if c.is_gpu else 'SIMD'} {c.compute_dtype}"
        compute_s = fixed + (flops / rate if rate else 0.0)
    if op.kind == "conv2d" and c.is_gpu and path.startswith("tensor") and not depthwise and not ctx.channels_last:
        transposed = 2 * act_bytes
        notes.append(f"NCHW tensors: cuDNN transposes {transposed / 1e6:.3g} MB to NHWC and back for tensor cores "
                     "(use channels_last)")
        act_bytes += transposed
    act_level = _level_for(c.levels, act_bytes + w_bytes, c.is_gpu)
    weight_level = _level_for(c.levels, max(ctx.weight_reuse_bytes, w_bytes), c.is_gpu)
    memory_s = act_bytes / act_level.bandwidth_bytes_per_s + w_bytes / weight_level.bandwidth_bytes_per_s
    level_name = act_level.name if act_bytes >= w_bytes else weight_level.name
    kernel_rate = c.kernel_bytes_per_s.get(op.kernel_key(pass_)) if not views else None
    if kernel_rate and (act_bytes + w_bytes) / kernel_rate > memory_s:
        memory_s = (act_bytes + w_bytes) / kernel_rate
        level_name = "kernel"
        notes.append(f"measured {op.kernel_key(pass_)} kernel streams {kernel_rate / 1e9:.3g} GB/s, below its "
                     "memory level")
    l2 = next((lv for lv in c.levels if lv.name == "L2"), None)
    if l2 is not None and l2_bytes / l2.bandwidth_bytes_per_s > memory_s:
        memory_s = l2_bytes / l2.bandwidth_bytes_per_s
        level_name = "L2"
    host_s = call_s * launches
    launch_s = c.launch_s * launches if c.is_gpu else 0.0
    layout_s = layout_conversion_s(op, pass_, act_bytes, ctx, onednn)
    if layout_s:
        notes.append(f"NCHW activations: {act_bytes / 1e6:.3g} MB converted to the blocked layout and back "
                     f"({layout_s * 1e3:.3g} ms; use channels_last)")
    work_s = max(compute_s, memory_s) + layout_s
    device_s = max(work_s, launch_s)
    if max(host_s, launch_s) > work_s:
        bound = "overhead"
    elif layout_s > max(compute_s, memory_s):
        bound = "memory:layout"
    elif compute_s >= memory_s:
        bound = "compute"
    else:
        bound = f"memory:{level_name}"
    return OpCost(op.name, op.kind, pass_, flops, act_bytes + w_bytes, compute_s, memory_s, host_s, device_s,
                  bound, path, tuple(dict.fromkeys(notes)), launches, c.is_gpu)


def with_first_touch(cost: OpCost, fresh_bytes: float, bytes_per_s: float) -> OpCost:
    """`cost` with the fresh pages its requests took in the step (`roofline.model.cpu_runtime.allocator`)
    first-touched at the
    measured rate. Faults stall the thread that writes the page, so they add to the op's time rather than hide
    under max(compute, memory); the bound says so where they are the larger part."""
    if fresh_bytes <= 0:
        return cost
    fault_s = fresh_bytes / bytes_per_s
    bound = "memory:fresh pages" if fault_s > max(cost.device_s, cost.host_s) else cost.bound
    note = (f"{fresh_bytes / 2**20:.3g} MiB first-touched in fresh pages at {bytes_per_s / 1e9:.2g} GB/s "
            f"({fault_s * 1e3:.3g} ms)")
    return replace(cost, device_s=cost.device_s + fault_s, fresh_bytes=fresh_bytes, bound=bound,
                   notes=(*cost.notes, note))

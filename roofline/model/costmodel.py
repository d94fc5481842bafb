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
- convolution algorithm (GPU): a 3x3 stride-1 convolution on the CUDA cores (fp32, or fp16 without tensor
  cores) runs as cuDNN's Winograd F(4x4, 3x3) where that is faster: 4x fewer multiplications, with its
  transforms' traffic (`_winograd_s`);
- layout: tensor-core convolutions run in NHWC; given PyTorch's default NCHW tensors, cuDNN transposes
  them in kernels of their own before and after the convolution (NVIDIA, "Tensor Layouts In Memory: NCHW vs
  NHWC", https://docs.nvidia.com/deeplearning/performance/dl-performance-convolutional/index.html), whose
  time adds to the convolution's, unless the model runs channels_last (see `_transpose_s`);
- calibration: Hockney's model fitted to the measured GEMM curve (a fixed cost per call, a rate growing
  with operand reuse) and measured convolution efficiencies replace the tile model; a
  measured streaming rate of a non-GEMM kernel (CPU max pooling over NCHW is a scalar loop) caps its
  forward pass, and its backward kernel's rate its gradient passes (measured here: GELU's backward 10.5 GB/s,
  LayerNorm's 12.7 GB/s, in cache); measured per-kind dispatch replaces the single tiny-op figure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.model.ceilings import Level
from roofline.model.context import CostContext
from roofline.model.conv_cost import (
    bias_add,
    conv_fixed_s,
    conv_kind,
    efficiency_key,
    layout_conversion_s,
    measured_kind,
)
from roofline.model.cpu_runtime.backend import cpu_conv_backend
from roofline.model.gemm_cost import (
    QUANTIZATION_NOTE_RATIO,
    TILE_DEPTH_OVERHEAD,
    gemm_compute_s,
    gemm_rate,
    kernel_fixed_s,
    skinny_gemm_rate,
    streams_weight,
    tile_depth_overhead,
)
from roofline.model.notes import Note
from roofline.model.winograd import winograd_plan
from roofline.workload.ops.base import GemmView, Op
from roofline.workload.ops.conv import Conv2d
from roofline.workload.ops.gemm import Gemm, Linear


@dataclass
class OpCost:
    """The predicted cost of one pass of one op, and why. Not frozen, though nothing changes one after it is
    made (`dataclasses.replace` makes a changed copy): a frozen dataclass sets each of the 16 fields through
    `object.__setattr__`, and building costs was a tenth of `advise --train`'s time (benchmarks/LOG.md)."""

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
    notes: tuple[Note, ...] = ()
    launches: int = 0
    queued: bool = False
    """True on a GPU: the host queues kernels and runs ahead, so host and device time overlap."""
    fresh_bytes: float = 0.0
    """Bytes this pass's allocations took in fresh pages, first-touched (CPU; see `with_first_touch`)."""

    def renamed(self, name: str) -> OpCost:
        """The same cost under another op's name (a repeated layer of one shape): a copy of the fields as they
        are, without `dataclasses.replace`'s re-construction, which was a tenth of a sweep's time."""
        twin = object.__new__(OpCost)
        twin.__dict__.update(self.__dict__, name=name)
        return twin

    @property
    def time_s(self) -> float:
        """The op in isolation: host and device overlap on a GPU (queued), add up on a CPU."""
        return max(self.device_s, self.host_s) if self.queued else self.device_s + self.host_s


def _level_for(levels: tuple[Level, ...], working_set: float, is_gpu: bool) -> Level:
    """The smallest level holding the working set; a GPU's L1 does not persist across kernels."""
    for level in levels[:-1]:
        if is_gpu and level.name == "L1":
            continue
        if working_set <= level.capacity_bytes:
            return level
    return levels[-1]


def _gemm_view_s(op: Op, view: GemmView, pass_: str, ctx: CostContext, call_s: float, slow2d: bool,
                 notes: list[Note], cold_weight: bool = False) -> tuple[float, float, str]:
    """(seconds, L2 panel bytes, path) of one GEMM view: a measured skinny or outer-product surface for a
    product that has one, else Hockney's fit to the calibrated GEMM curve (times a convolution kind's measured
    efficiency), else the peak under tile and wave quantization."""
    c = ctx.ceilings
    rate, path, why = gemm_rate(op, view, ctx)
    notes.extend(why)
    kind = conv_kind(op) if isinstance(op, Conv2d) else None
    rows = op.weight_rows() if isinstance(op, Linear) and pass_ == "forward" else None
    skinny = skinny_gemm_rate(view, c, cold_weight, rows) if kind is None and not why else None
    if skinny:
        # the surface was timed per torch call, dispatch included, which host_s charges already
        notes.append(Note("measured rate", skinny[1]))
        return max(view.flops / skinny[0] - c.dispatch_s, view.flops / rate), 0.0, path
    if c.gemm_fit and not why:
        fit, reuse = c.gemm_fit, view.equivalent_n
        key = efficiency_key(c, measured_kind(kind, c, ctx, pass_), pass_) if kind and not slow2d else None
        efficiency = 1.0
        if key and isinstance(op, Conv2d):
            share = op.weight_share()
            efficiency = c.conv_efficiency_at(key, share)
            notes.append(Note("measured convolution", f"measured {key} convolution: {efficiency:.0%} of a "
                              f"GEMM of equal reuse (n = {reuse:.0f}; weight share {share:.2f})"))
        # fixed costs per call include the dispatch that host_s charges already
        fixed = conv_fixed_s(kind, pass_, call_s, ctx, slow2d) if kind else max(0.0, fit.t0_s - c.dispatch_s)
        t = fixed + view.flops / (fit.rate(reuse) * efficiency)
        if key:
            # a measured convolution is its own kernel, not the GEMM whose best rate is `rate`: oneDNN's direct
            # convolutions run faster than the library's sgemm does (200 against 147 GFLOP/s on the 2-core
            # AVX2 machine of benchmarks/LOG.md); the measured efficiency, clamped to the shares calibration
            # timed, and the fit's asymptote bound it
            return t, 0.0, path
        return max(t, view.flops / rate), 0.0, path
    t, tile, split, panel = gemm_compute_s(view, rate, ctx, tile_depth_overhead(op, ctx),
                                           simt=path.startswith("CUDA cores"),
                                           library_product=isinstance(op, (Gemm, Linear)))
    t += kernel_fixed_s(op, view, ctx)
    useful = view.flops / rate
    if t > QUANTIZATION_NOTE_RATIO * useful:
        notes.append(Note("quantization", f"tile {tile[0]}x{tile[1]}"
                          f"{f' split-K {split}' if split > 1 else ''}: "
                          f"quantization costs {t / useful:.2f}x the ideal time"))
    return t, panel, path


def _vector_s(op: Op, pass_: str, ctx: CostContext, flops: float, call_s: float, slow2d: bool,
              notes: list[Note]) -> tuple[float, str]:
    """(seconds, path) of an op with no GEMM form, or a depthwise convolution: the vector units' rate, times
    the measured depthwise efficiency (and plus its fixed cost) where calibration has one."""
    c = ctx.ceilings
    depthwise = isinstance(op, Conv2d) and op.depthwise
    rate = c.vector_flops_per_s
    key = efficiency_key(c, measured_kind("depthwise", c, ctx, pass_), pass_) if depthwise else None
    fixed = 0.0
    if key and isinstance(op, Conv2d):
        efficiency = c.conv_efficiency_at(key, op.weight_share())
        rate *= efficiency
        fixed = conv_fixed_s("depthwise", pass_, call_s, ctx, slow2d)
        notes.append(Note("measured convolution", f"measured {key} efficiency {efficiency:.0%}"))
    elif depthwise:
        notes.append(Note("depthwise", "depthwise: no channel reduction, direct stencil on vector units"))
    path = f"{'CUDA cores' if c.is_gpu else 'SIMD'} {c.compute_dtype}"
    return fixed + (flops / rate if rate else 0.0), path


def _operand_layout_s(op: Op, view: GemmView, seconds: float, path: str, ctx: CostContext,
                      notes: list[Note]) -> float:
    """A matrix product's `seconds` given how its operands are stored.

    Tensor cores take an operand with its reduction dimension contiguous ("K-major"); the hardware transposes
    one that is not on its way from shared memory only for 16-bit types (PTX ISA: `ldmatrix`'s `.trans` loads
    `.b16` elements; "the transpose operation is only supported for the wgmma.mma_async variants with .f16/
    .bf16 types", https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#asynchronous-warpgroup-
    level-matrix-instructions-wgmma-mma-async). One such operand costs nothing measurable: a matmul of two
    contiguous tensors (B stored [k, n]) is what the sustained TF32 rate and XLA's H100 table were measured on.
    A TF32 product with both (`GemmView.operands_across` = 2: a weight gradient dW = dY^T X) runs at the runtime
    profile's measured share of its priced rate (`Ceilings.tf32_across_share`: 0.50 on the H100, from its BERT
    step's profile), or on the CUDA cores where they are faster: TF32 only allows cuBLAS tensor-core kernels, and
    its fp32 CUDA-core kernels read any layout (a GeForce board's TF32 peak is its fp32 peak). Convolutions are
    not priced by it: cuDNN's implicit-GEMM kernels gather their operands through their own iterators, and their
    TF32 weight gradients were not measured apart."""
    c = ctx.ceilings
    if view.operands_across < 2 or path != "tensor cores tf32" or not c.is_gpu or isinstance(op, Conv2d):
        return seconds
    across_s = seconds / c.tf32_across_share
    cores_s = view.flops / c.vector_flops_per_s
    if cores_s < across_s:
        notes.append(Note("operand layout", "TF32 product with both operands stored across its reduction (a weight "
                          f"gradient): the CUDA cores' fp32 path ({c.vector_flops_per_s / 1e12:.3g} TFLOP/s) is "
                          f"faster than tensor cores at {c.tf32_across_share:.0%} of their rate"))
        return cores_s
    notes.append(Note("operand layout", f"TF32 product with both operands stored across its reduction (a weight "
                      f"gradient): {c.tf32_across_share:.0%} of the rate, measured (16-bit products transpose "
                      "them in hardware)"))
    return across_s


def _compute_s(op: Op, views: list[GemmView], pass_: str, ctx: CostContext, flops: float, call_s: float,
               slow2d: bool, notes: list[Note], cold_weight: bool = False) -> tuple[float, float, str]:
    """(seconds, L2 panel bytes, path) of the arithmetic: the GEMM views' times summed, else the vector path."""
    if not views or (isinstance(op, Conv2d) and op.depthwise):
        seconds, path = _vector_s(op, pass_, ctx, flops, call_s, slow2d, notes)
        return seconds, 0.0, path
    compute_s, l2_bytes, path = 0.0, 0.0, ""
    for view in views:
        t, panel, path = _gemm_view_s(op, view, pass_, ctx, call_s, slow2d, notes, cold_weight)
        compute_s += _operand_layout_s(op, view, t, path, ctx, notes)
        l2_bytes += panel
    return compute_s, l2_bytes, path


def _transpose_s(op: Op, ctx: CostContext, path: str, read_bytes: float, written_bytes: float,
                 notes: list[Note]) -> float:
    """Seconds cuDNN spends transposing an NCHW convolution's tensors to NHWC and back for tensor cores.

    cuDNN converts between NCHW and NHWC when tensor cores run the convolution ("The cuDNN library may use
    padding, folding, and NCHW-to-NHWC transformations to call the Tensor Core operations", cuDNN Developer
    Guide, Legacy API: https://docs.nvidia.com/deeplearning/cudnn/developer/legacy-api.html). The
    transformations are kernels of their own, queued before and after the convolution's on the same stream
    (`nchwToNhwcKernel`, `nhwcToNchwKernel` in profiles of NCHW fp16 steps), so their time adds to the
    convolution's instead of hiding under its arithmetic: one read and one write of each transposed operand,
    streamed from the level that holds it and its copy. 16-bit products transpose what they read and what they
    write; TF32 products on Ampere and later read NHWC and write NCHW themselves (cuDNN's
    `sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw` kernels in profiles of fp32 NCHW steps),
    so only what they read is transposed."""
    c = ctx.ceilings
    if not (isinstance(op, Conv2d) and c.is_gpu and path.startswith("tensor") and not op.depthwise
            and not ctx.channels_last):
        return 0.0
    transposed = 2 * (read_bytes + (0.0 if path.endswith("tf32") else written_bytes))
    level = _level_for(c.levels, transposed, c.is_gpu)
    seconds = transposed / level.bandwidth_bytes_per_s
    notes.append(Note("layout transpose", f"NCHW tensors: cuDNN transposes {transposed / 1e6:.3g} MB to NHWC and "
                      f"back for tensor cores in kernels of their own ({seconds * 1e3:.3g} ms; use channels_last)"))
    return seconds


@dataclass(frozen=True)
class _Winograd:
    """One pass as cuDNN's non-fused Winograd runs it."""

    seconds: float
    compute_s: float
    """The products' arithmetic."""
    memory_s: float
    """The products' operands and results and the transforms' reads and writes, streamed one after another."""
    level: str
    note: str


def _winograd_s(op: Op, pass_: str, path: str, ctx: CostContext) -> _Winograd | None:
    """The pass run as cuDNN's non-fused Winograd (`roofline.model.winograd`), or None where it has none: a
    GPU's convolution on the CUDA cores in fp32, or in fp16 where no tensor core takes it (PyTorch describes a
    half convolution with float arithmetic, `ConvolutionDescriptor::set` in aten/src/ATen/cudnn/Descriptors.h:
    cuDNN's PSEUDO_HALF_CONFIG, which the non-fused Winograd supports with FLOAT_CONFIG); tensor-core
    convolutions run as implicit GEMM. The products and their operands' traffic take what any product takes
    (tile and wave quantization, the level holding them); the transforms are kernels of their own before and
    after them, so their traffic adds."""
    c = ctx.ceilings
    if not (c.is_gpu and isinstance(op, Conv2d) and path in ("CUDA cores fp32", "CUDA cores fp16")):
        return None
    plan = winograd_plan(op, pass_)
    if plan is None:
        return None
    element = ctx.activation_bytes
    # the products are a batched GEMM, not an implicit-GEMM convolution: they pay a GEMM's depth overhead
    compute_s, _, _, panel = gemm_compute_s(plan.products, c.vector_flops_per_s, ctx, TILE_DEPTH_OVERHEAD)
    product_bytes, transform_bytes = plan.product_elements * element, plan.transform_elements * element
    operands_s = product_bytes / _level_for(c.levels, product_bytes, True).bandwidth_bytes_per_s
    products_s = max(compute_s, operands_s, panel / c.l2.bandwidth_bytes_per_s if c.l2 else 0.0)
    transform_level = _level_for(c.levels, transform_bytes, True)
    transforms_s = transform_bytes / transform_level.bandwidth_bytes_per_s
    seconds = products_s + transforms_s
    note = (f"cuDNN's Winograd F(4x4, 3x3): {plan.products.count} products of {plan.products.m}x"
            f"{plan.products.n}x{plan.products.k} ({plan.products.flops / 1e9:.3g} GFLOP, 4x fewer multiplications) "
            f"and {transform_bytes / 1e6:.3g} MB of transforms, {seconds * 1e3:.3g} ms")
    return _Winograd(seconds, compute_s, operands_s + transforms_s, transform_level.name, note)


def _memory_s(op: Op, has_views: bool, pass_: str, ctx: CostContext, act_bytes: float, w_bytes: float,
              weight_level: Level, l2_bytes: float, notes: list[Note], weight_share: float = 1.0) -> tuple[float, str]:
    """(seconds, level) of the traffic: activations from the smallest level holding the op's working set,
    weights from `weight_level` (the one holding the step between two uses) at `weight_share` of its rate (a
    product that streams its weight from DRAM: `Ceilings.streaming_share`); a measured kernel rate or the
    GEMM panels' L2 traffic where either is slower."""
    c = ctx.ceilings
    act_level = _level_for(c.levels, act_bytes + w_bytes, c.is_gpu)
    memory_s = (act_bytes / act_level.bandwidth_bytes_per_s
                + w_bytes / (weight_level.bandwidth_bytes_per_s * weight_share))
    level_name = act_level.name if act_bytes >= w_bytes else weight_level.name
    key, kernel_rate = ctx.kernel_rate(op.kernel, op.kernel_key(pass_)[len(op.kernel):]) if not has_views \
        else ("", None)
    if kernel_rate and (act_bytes + w_bytes) / kernel_rate > memory_s:
        memory_s = (act_bytes + w_bytes) / kernel_rate
        level_name = "kernel"
        notes.append(Note("kernel rate", f"measured {key} kernel streams {kernel_rate / 1e9:.3g} GB/s, "
                          "below its memory level"))
        if key.startswith(f"{op.kernel}:native"):
            notes.append(Note("native kernel", "PyTorch runs this BatchNorm on its native kernels: cuDNN's takes "
                              "no bfloat16 input, and a float16 one only with fp32 scale and shift (a model held in "
                              "16 bits, or bf16 autocast's activations); fp16 autocast keeps cuDNN's"))
    l2 = c.l2
    if l2 is not None and l2_bytes / l2.bandwidth_bytes_per_s > memory_s:
        memory_s = l2_bytes / l2.bandwidth_bytes_per_s
        level_name = "L2"
    return memory_s, level_name


def _bound(compute_s: float, memory_s: float, layout_s: float, work_s: float, host_s: float, launch_s: float,
           level_name: str) -> str:
    if max(host_s, launch_s) > work_s:
        return "overhead"
    if layout_s > max(compute_s, memory_s):
        return "memory:layout"
    if compute_s >= memory_s:
        return "compute"
    return f"memory:{level_name}"


def op_cost(op: Op, pass_: str, ctx: CostContext) -> OpCost:
    """Predict one pass of one op: compute time, memory time, host time, then the layout conversions around a
    convolution over NCHW tensors (oneDNN's reorders on a CPU, cuDNN's transposes on a GPU), kernels of their own
    whose time adds to the device's work, and the bound that decides."""
    c = ctx.ceilings
    flops = float(op.flops(pass_))
    traffic = op.traffic(pass_)
    read_bytes = float(traffic.activations_read * ctx.activation_bytes)
    written_bytes = float(traffic.activations_written
                          * (ctx.activation_bytes if ctx.output_bytes is None else ctx.output_bytes))
    act_bytes = read_bytes + written_bytes
    w_bytes = float((traffic.weights_read + traffic.weights_written) * ctx.weight_bytes)
    launches = op.launches(pass_)
    if op.is_free or (flops == 0 and act_bytes + w_bytes == 0):
        return OpCost(op.name, op.kind, pass_, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "free", "none", (), 0, c.is_gpu)
    notes: list[Note] = []
    by_kind = {} if ctx.warm_calls else c.dispatch_s_by_kind
    call_s = by_kind.get(op.kernel, by_kind.get(op.kind, c.dispatch_s))
    onednn = isinstance(op, Conv2d) and not c.is_gpu and cpu_conv_backend(op, c.threads) == "mkldnn"
    slow2d = isinstance(op, Conv2d) and not c.is_gpu and not onednn
    if slow2d:
        notes.append(Note("fallback convolution",
                          "PyTorch's batch-1 fallback convolution: im2col and one BLAS product, no oneDNN call"))
    views = op.gemm_views(pass_)
    weight_level = _level_for(c.levels, max(ctx.weight_reuse_bytes, w_bytes), c.is_gpu)
    cold_weight = w_bytes > 0 and weight_level is c.levels[-1]
    compute_s, l2_bytes, path = _compute_s(op, views, pass_, ctx, flops, call_s, slow2d, notes, cold_weight)
    transpose_s = _transpose_s(op, ctx, path, read_bytes, written_bytes, notes)
    streaming = bool(views) and streams_weight(op, c, cold_weight)
    memory_s, level_name = _memory_s(op, bool(views), pass_, ctx, act_bytes, w_bytes, weight_level, l2_bytes,
                                   notes, c.streaming_share if streaming else 1.0)
    if streaming:
        # a product that streams its weight from DRAM pays its kernels' fixed time on top (`streams_weight`)
        memory_s += c.streaming_fixed_s * len(views)
    host_s = call_s * launches * ctx.host_call_factor
    launch_s = c.launch_s * launches if c.is_gpu else 0.0
    conversion_s = layout_conversion_s(op, pass_, act_bytes, ctx, onednn)
    if conversion_s:
        notes.append(Note("layout conversion", f"NCHW activations: {act_bytes / 1e6:.3g} MB converted to the "
                          f"blocked layout and back ({conversion_s * 1e3:.3g} ms; use channels_last)"))
    layout_s = conversion_s + transpose_s
    work_s = max(compute_s, memory_s) + layout_s
    winograd = _winograd_s(op, pass_, path, ctx)
    if winograd is not None and winograd.seconds < work_s:
        notes.append(Note("convolution algorithm", f"{winograd.note} against {work_s * 1e3:.3g} ms direct"))
        work_s, compute_s, memory_s = winograd.seconds, winograd.compute_s, winograd.memory_s
        level_name = winograd.level
    bias_s, bias_host_s, bias_note = bias_add(op, pass_, ctx)
    if bias_note:
        notes.append(bias_note)
        work_s += bias_s
        host_s += bias_host_s
    bound = _bound(compute_s, memory_s, layout_s, work_s, host_s, launch_s, level_name)
    return OpCost(op.name, op.kind, pass_, flops, act_bytes + w_bytes, compute_s, memory_s, host_s,
                  max(work_s, launch_s), bound, path, tuple(dict.fromkeys(notes)), launches, c.is_gpu)


def with_first_touch(cost: OpCost, fresh_bytes: float, bytes_per_s: float, charged: bool = True) -> OpCost:
    """`cost` with the fresh pages its requests took in the step (`roofline.model.cpu_runtime.allocator`)
    first-touched at the measured rate. Faults stall the thread that writes the page, so they add to the op's
    time rather than hide under max(compute, memory); the bound says so where they are the larger part.
    Not `charged` (a steady heap is priced): the pages a default glibc heap would take are only noted, as the
    bound a process without the allocator advice adds."""
    if fresh_bytes <= 0:
        return cost
    fault_s = fresh_bytes / bytes_per_s
    touched = (f"{fresh_bytes / 2**20:.3g} MiB first-touched in fresh pages at {bytes_per_s / 1e9:.2g} GB/s "
               f"({fault_s * 1e3:.3g} ms)")
    if not charged:
        return replace(cost, notes=(*cost.notes, Note("first touch", f"steady heap priced; with glibc's default "
                                                      f"heap up to {touched} more per call")))
    bound = "memory:fresh pages" if fault_s > max(cost.device_s, cost.host_s) else cost.bound
    return replace(cost, device_s=cost.device_s + fault_s, fresh_bytes=fresh_bytes, bound=bound,
                   notes=(*cost.notes, Note("first touch", touched)))

"""One training or inference step: every op pass costed, then the host/device timeline assembled.

The async rule: on a GPU the host only queues kernels, so a step costs max(host time, device time) and
the slower side sets the pace; a synchronization point (`loss.item()`, printing a tensor) makes the host
wait for the device, costing one round trip each and, at the step boundary, ending the overlap of one
step's host work with the previous step's device work. On a CPU the same thread dispatches and computes,
so host and compute add up. The input batch crosses the host link each step; with pinned memory and
`non_blocking=True` the copy overlaps compute, from pageable memory it does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from roofline.errors import RooflineError
from roofline.hardware.runtime import EAGER_CUDA, load_runtime
from roofline.hardware.schema import GpuProfile, Profile
from roofline.model.autocast import autocast_context_for, cast_weights, with_casts
from roofline.model.autograd_kernels import backward_kernels
from roofline.model.ceilings import Ceilings, ceilings_for
from roofline.model.context import ContextFor, CostContext
from roofline.model.costmodel import OpCost, op_cost, with_first_touch
from roofline.model.cpu_runtime.heap_requests import first_touch_bytes
from roofline.model.data_placement import placement_of
from roofline.model.fp32_math import DEFAULT_FP32_MATH, get_fp32_math
from roofline.model.host_dma import staged_bytes_per_s
from roofline.model.memory import MemoryBreakdown, default_reserve_bytes, memory_breakdown
from roofline.model.notes import Note
from roofline.model.step_plan import StepPlan, plan_for
from roofline.workload.ops.attention import ATTENTION_PATHS, with_eager_attention
from roofline.workload.ops.base import Op, Workload
from roofline.workload.ops.conv import Conv2d
from roofline.workload.ops.gelu_new import with_gelu_new
from roofline.workload.precision import PRECISIONS, Precision

OPTIMIZER_TRAFFIC = {
    # name: (fp32 tensors read, fp32 tensors written, FLOPs per parameter, ops per parameter tensor)
    "sgd": (2, 1, 2, 1),  # w -= lr * g
    "momentum": (3, 2, 4, 2),  # buf = mu * buf + g; w -= lr * buf
    "adam": (4, 3, 12, 8),  # m, v moving averages, bias correction, w -= lr * m / (sqrt(v) + eps)
    # Adam as a Python loop of one-tensor ops, BertAdam in NVIDIA DeepLearningExamples'
    # PyTorch/LanguageModeling/BERT/optimization.py: m.mul_, m.add_, v.mul_, v.addcmul_, v.sqrt(), + eps,
    # m / denom, weight_decay * w, update +=, lr * update, -update, w.add_: 12 kernels, each reading and writing
    # whole tensors (17 fp32 reads, 12 writes per parameter)
    "adam-unfused": (17, 12, 12, 12),
    # SGD with momentum as torch.optim's single-tensor loop (`_single_tensor_sgd`, what SGD runs on CUDA before
    # PyTorch 2.1 defaulted to the foreach path: pytorch/pytorch#92306 and #95862): per parameter d_p = g + wd * w
    # (or Nesterov's g + mu * buf), buf.mul_(mu), buf.add_(d_p), w.add_(d_p, alpha=-lr): four kernels, each over
    # whole tensors (7 fp32 reads, 4 writes)
    "momentum-unfused": (7, 4, 6, 4),
}
"""Per-parameter work of one optimizer update, from the update rules in torch.optim's single-tensor loops."""

PER_TENSOR_OPTIMIZERS = frozenset({"adam-unfused", "momentum-unfused"})
"""Optimizers that launch each of their kernels once per parameter tensor from Python (no foreach batching):
their host time is one layer call's dispatch per kernel, not the measured foreach loop."""

FOREACH_MAX_TENSORS_PER_LAUNCH = 48
"""On CUDA, torch.optim's foreach path batches parameter tensors into multi-tensor-apply launches; the
depth-4 launch (Adam) takes up to 48 tensors (depth_to_max_tensors in ATen's MultiTensorApply.cuh)."""

GRAD_SCALER_SYNC_POINTS = 1
"""An fp16 AMP training step on a GPU synchronizes once even when the user's loop never does: GradScaler.step
reads the inf/NaN flags of the unscaled gradients with `.item()` before it lets the optimizer step
(torch/amp/grad_scaler.py, `_maybe_opt_step`), so the host waits for the backward pass to finish and the next
step's forward cannot be queued under it. A bf16 one (`amp-bf16`) has no scaler: bfloat16 keeps fp32's exponent
range."""


def copy_rate(c: Ceilings, pinned: bool) -> float:
    """Bytes per second of the input's host-to-device copy: the link's rate from pinned memory; from pageable
    memory the measured pageable rate, else the link's behind a staging memcpy (`host_dma.staged_bytes_per_s`)."""
    if pinned:
        return c.host_link_bytes_per_s
    return c.host_link_pageable_bytes_per_s or staged_bytes_per_s(c.host_link_bytes_per_s)


@dataclass(frozen=True)
class StepOptions:
    train: bool = False
    optimizer: str = "sgd"
    pinned: bool = False
    """Input batch in pinned host memory, copied with non_blocking=True (overlaps the host's work; on the device
    it runs between the kernels of the stream it is issued on)."""
    prefetch: bool = False
    """The loader copies the next batch on a stream of its own while this step computes (NVIDIA
    DeepLearningExamples' PrefetchedWrapper: `with torch.cuda.stream(stream): next_input.cuda(non_blocking=True)`,
    then `current_stream().wait_stream(stream)`; DALI's pipeline hands over batches already on the device): the
    copy overlaps the device's work too, and only a copy longer than the step shows."""
    sync_points: int = 0
    """Host-device synchronizations per step the user's loop has (`.item()`, printing a tensor)."""
    include_transfer: bool = True
    reserve_bytes: float | None = None
    channels_last: bool = False
    """Convolution activations in NHWC, so tensor-core convolutions need no layout transposes."""
    norm_reads: int = 0
    """Host reads of the gradients' global norm between the backward pass and the update: a norm kernel over
    the fp32 gradients whose result `.item()` brings to the host, so the host waits for the backward to drain
    before it queues the update (NVIDIA DeepLearningExamples' BERT run_squad.py: GradientClipper.step reads
    multi_tensor_l2norm's result, then BertAdam.step reads it again)."""
    runtime: str | None = EAGER_CUDA
    """The framework runtime whose measured costs price a GPU step (`roofline.hardware.runtime`): host time per
    layer call, kernel streaming rates, sustained GEMM shares, GradScaler and the training loop's Python. None:
    the datasheet roofline alone, as the cost model's closed-form tests use it."""
    heap_kept: bool = False
    """CPU: the process keeps its C heap (cpu_runtime.heap_setting), so no request takes fresh pages."""
    fp32_math: str = DEFAULT_FP32_MATH
    """Which fp32 products run on TF32 tensor cores where the GPU has them (`roofline.model.fp32_math`): the
    current PyTorch default takes convolutions there and leaves matrix products in IEEE fp32."""
    autocast: bool = True
    """`amp` on a GPU as torch.autocast runs it (`roofline.model.autocast`): fp32 weights and input, the ops on
    autocast's lists cast to their dtypes (an fp32 LayerNorm, residual stream and softmax), each cast a kernel.
    False: the model itself in 16-bit with fp32 master weights in the optimizer (apex's O2, `model.half()` with a
    master copy): every activation 16-bit, no per-op casts."""
    attention: str = "fused"
    """How self-attention runs (`ATTENTION_PATHS`): one fused kernel (scaled_dot_product_attention), or the
    eager kernels of an implementation that writes the scores out (`with_eager_attention`)."""
    gelu_new: bool = False
    """The tanh-approximated GELU as Hugging Face's `gelu_new` computes it, eight kernels of a Python formula
    (`roofline.workload.ops.gelu_new`), instead of one fused kernel (nn.GELU(approximate='tanh'))."""
    zero_grad_to_none: bool = True
    """`optimizer.zero_grad()` drops the gradients (set_to_none, the default from PyTorch 2.0 on: pytorch#92731);
    False: it zeroes each gradient with a kernel of its own (`p.grad.zero_()`, the default before 2.0), one
    launch and one fp32 write of every weight per step."""
    forward_only: bool = False
    """An inference-like step that runs the module in training mode: the forward pass alone, with BatchNorm's
    batch statistics and dropout on, and no backward or update (Torch7's cnn-benchmarks time `model:forward`
    of a module left in its default training mode). Meaningful with `train=False`."""
    alone: bool = False
    """The workload is one op called back to back on its own, as a script timing it in a loop calls it
    (`predict --op`), not a layer among others: its code, the dispatcher's paths and its data stay in the
    core's caches, so calls cost calibration's back-to-back figures, and its heap is steady: no first-touch
    faults are charged. Under glibc's default policy whether a call faults its output in again is the
    process's history (a 3x3 convolution at batch 8 measured 8.8 ms with the heap kept and 14.3-16.3 ms in
    fresh default processes, 13-16 MiB faulted per call), so the replayed fresh pages are noted as the bound a
    default process adds, which the allocator advice removes."""

    @property
    def data(self) -> str:
        """Where the input comes from, as `--data` names it (`roofline.model.data_placement`)."""
        return placement_of(self.include_transfer, self.pinned, self.prefetch)


@dataclass(frozen=True)
class StepPrediction:
    """A predicted step, its parts, and the per-op costs behind them."""

    model: str
    device: str
    batch_size: int
    precision: str
    train: bool
    step_time_s: float
    host_s: float
    device_s: float
    transfer_s: float
    sync_s: float
    optimizer_s: float
    amp_cast_s: float
    memory: MemoryBreakdown
    capacity_bytes: float
    ops: list[OpCost] = field(repr=False)
    ceilings: Ceilings = field(repr=False)

    @property
    def samples_per_s(self) -> float:
        return self.batch_size / self.step_time_s if self.step_time_s > 0 else math.inf

    @property
    def fits(self) -> bool:
        return self.memory.total <= self.capacity_bytes

    @property
    def flops(self) -> float:
        return sum(o.flops for o in self.ops)

    @property
    def bytes(self) -> float:
        return sum(o.bytes for o in self.ops)

    @property
    def fresh_bytes(self) -> float:
        """Bytes the step writes into freshly mapped pages (CPU first-touch page faults)."""
        return sum(o.fresh_bytes for o in self.ops)

    def time_by_bound(self) -> dict[str, float]:
        """Device-side time per bound class ('compute', 'memory:<level>', 'overhead')."""
        shares: dict[str, float] = {}
        for o in self.ops:
            if o.bound == "free":
                continue
            shares[o.bound] = shares.get(o.bound, 0.0) + o.time_s
        return shares


def drained_pipeline_s(costs: list[OpCost]) -> float:
    """Step time when the device starts idle and the step ends in a sync: op i can start only once the
    host has queued it and op i-1 has finished, so finish_i = max(finish_{i-1}, queued_i) + device_i. A
    synchronization inside the step (kind `sync`) makes the host wait for everything queued before it."""
    queued = finish = 0.0
    for o in costs:
        if o.kind == SYNC_KIND:
            queued = max(queued, finish)
        queued += o.host_s
        finish = max(finish, queued) + o.device_s
    return max(finish, queued)


SYNC_KIND = "sync"


def _sync_cost(name: str, c: Ceilings, why: str) -> OpCost:
    """A host-device synchronization inside the step: the host waits, then pays the round trip."""
    return OpCost(name, SYNC_KIND, "update", 0.0, 0.0, 0.0, 0.0, c.sync_s, 0.0, "overhead", "host",
                  (Note("synchronization", why),), 0, True)


def op_costs(plan: StepPlan, ctx: CostContext, context_for: ContextFor | None = None) -> list[OpCost]:
    """Every pair of the plan, in execution order, each in `context_for(op, pass)` (default `ctx`): each distinct
    (pass, shape) is priced once per context and renamed for its other occurrences."""
    priced: dict[tuple[int, int], OpCost] = {}
    out = []
    for (pass_, op), at in zip(plan.pairs, plan.slot, strict=True):
        context = context_for(op, pass_) if context_for else ctx
        cost = priced.get((at, id(context)))
        if cost is None:
            cost = priced[(at, id(context))] = op_cost(plan.distinct[at][1], pass_, context)
        out.append(cost if cost.name == op.name else cost.renamed(op.name))
    return out


def tf32_context_for(profile: Profile, precision: Precision, options: StepOptions,
                     ctx: CostContext) -> ContextFor | None:
    """Where an fp32 step's products run, op by op (`roofline.model.fp32_math`): convolutions and matrix
    products the mode sends to TF32 are priced with the profile's TF32 tensor-core ceilings, everything else
    (a depthwise convolution has no reduction for a tensor core either) with fp32's; None when nothing moves
    (another precision, a device without TF32 tensor cores, or IEEE fp32 asked for)."""
    math = get_fp32_math(options.fp32_math)
    if (precision.name != "fp32" or not isinstance(profile, GpuProfile) or "tf32" not in profile.tensor_cores
            or not (math.convolutions_tf32 or math.matmuls_tf32)):
        return None
    tf32 = replace(ctx, ceilings=ceilings_for(profile, PRECISIONS["tf32"], options.runtime))

    def context_for(op: Op, pass_: str) -> CostContext:
        if isinstance(op, Conv2d):
            return tf32 if math.convolutions_tf32 and not op.depthwise else ctx
        return tf32 if math.matmuls_tf32 and op.gemm_views("forward") else ctx

    return context_for


def _param_tensors(workload: Workload) -> int:
    return sum(op.param_tensors() for op in workload.ops)


def _bulk_cost(name: str, flops: float, read_b: float, written_b: float, launches: int,
               c: Ceilings, kind: str = "cast") -> OpCost:
    """A memory-streaming pass over all parameters (optimizer update, gradient zeroing, AMP weight casts)."""
    nbytes = read_b + written_b
    memory_s = nbytes / c.dram.bandwidth_bytes_per_s
    compute_s = flops / c.vector_flops_per_s if c.vector_flops_per_s else 0.0
    host_s = launches * c.dispatch_s
    launch_s = c.launch_s * launches if c.is_gpu else 0.0
    device_s = max(compute_s, memory_s, launch_s)
    bound = "overhead" if max(host_s, launch_s) > max(compute_s, memory_s) else (
        "compute" if compute_s > memory_s else "memory:DRAM")
    return OpCost(name, "optimizer" if name == "optimizer" else kind, "update", flops, nbytes, compute_s,
                  memory_s, host_s, device_s, bound, "vector", (), launches, c.is_gpu)


def as_run(workload: Workload, options: StepOptions) -> Workload:
    """`workload` with the kernels its implementation launches where the options name one that does not run
    the zoo's fused kernels: eager attention's scores, gelu_new's formula."""
    if options.attention not in ATTENTION_PATHS:
        raise RooflineError(f"attention '{options.attention}': expected one of {', '.join(ATTENTION_PATHS)}")
    if options.attention == "eager":
        workload = with_eager_attention(workload)
    if options.gelu_new:
        workload = with_gelu_new(workload)
    return workload


def step_memory(workload: Workload, is_gpu: bool, precision: Precision, options: StepOptions) -> MemoryBreakdown:
    """What one step holds on the device: the part of a prediction a memory-fit search needs, without the time
    (on a CPU the time replays the step's heap requests, tens of milliseconds for a training step)."""
    return _memory(as_run(workload, options), is_gpu, precision, options)


def _memory(run: Workload, is_gpu: bool, precision: Precision, options: StepOptions) -> MemoryBreakdown:
    """`step_memory` of a workload already `as_run`."""
    reserve = options.reserve_bytes if options.reserve_bytes is not None else default_reserve_bytes(is_gpu)
    cast_params = cast_weights(run.ops)[0] if _under_autocast(is_gpu, precision, options) else None
    return memory_breakdown(run, precision, options.train, options.optimizer, reserve, cast_params)


def _under_autocast(is_gpu: bool, precision: Precision, options: StepOptions) -> bool:
    """Whether the step runs under torch.autocast (`StepOptions.autocast`): mixed precision on a GPU, fp32
    master weights beside 16-bit compute."""
    return is_gpu and options.autocast and precision.master_weight_bytes > precision.storage_bytes


def predict_step(workload: Workload, profile: Profile, precision: Precision,
                 options: StepOptions | None = None) -> StepPrediction:
    """Predict the time and memory of one step of `workload` on `profile` at `precision`."""
    opts = options or StepOptions()
    workload = as_run(workload, opts)
    c = ceilings_for(profile, precision, opts.runtime)
    params = float(workload.params())
    amp = precision.master_weight_bytes > precision.storage_bytes
    loss_scaled = amp and precision.compute_dtype == "fp16"
    weight_bytes = precision.storage_bytes
    plan = plan_for(workload, opts.train, opts.forward_only)
    reuse = params * weight_bytes + plan.written_bytes(precision.storage_bytes, weight_bytes)
    training_gpu = opts.train and c.is_gpu and opts.runtime is not None
    factor = load_runtime(opts.runtime).training_host_factor.value if training_gpu else 1.0
    ctx = CostContext(c, precision.storage_bytes, weight_bytes, weight_reuse_bytes=reuse,
                      channels_last=opts.channels_last, host_call_factor=factor, warm_calls=opts.alone,
                      native_norm=c.is_gpu and precision.storage_bytes == 2
                      and (not amp or precision.compute_dtype == "bf16"))
    context_for = tf32_context_for(profile, precision, opts, ctx)
    autocast = None
    if _under_autocast(c.is_gpu, precision, opts):
        context_for, autocast = autocast_context_for(workload, plan, ctx, opts.runtime)
    costs = op_costs(plan, ctx, context_for)
    if autocast is not None:
        costs = with_casts(costs, plan, autocast, ctx, opts.train)
    if opts.train and c.is_gpu:
        param_bytes = precision.master_weight_bytes if autocast is not None else precision.storage_bytes
        costs.extend(backward_kernels(workload, plan, context_for or (lambda op, pass_: ctx), param_bytes))
    if c.page_fault_bytes_per_s and c.cpu_runtime is not None and c.cpu_runtime.glibc_heap and not opts.heap_kept:
        fresh = first_touch_bytes(plan.pairs, workload.flow(), opts.train, ctx, c.cpu_runtime.page_bytes)
        costs = [with_first_touch(cost, b, c.page_fault_bytes_per_s, charged=not opts.alone)
                 for cost, b in zip(costs, fresh, strict=True)]
    ptensors = _param_tensors(workload)
    optimizer_s = amp_cast_s = 0.0
    scaler = loss_scaled and opts.train and c.is_gpu and opts.runtime is not None
    barriers = (GRAD_SCALER_SYNC_POINTS if scaler else 0) + (opts.norm_reads if opts.train and c.is_gpu else 0)
    if opts.train:
        for i in range(opts.norm_reads):
            costs.append(_bulk_cost("gradient norm", 2 * params, 4 * params, 0.0,
                                    math.ceil(ptensors / FOREACH_MAX_TENSORS_PER_LAUNCH), c))
            if c.is_gpu:
                costs.append(_sync_cost(f"gradient norm .item() #{i + 1}", c, "the host reads the gradients' "
                                        "norm: it waits for the backward pass before it queues the update"))
        if scaler:
            # GradScaler's unscale and inf/NaN check reads and writes every fp32 gradient (multi-tensor launches),
            # issued from C++: device time only, priced by its bytes (a multiply and a compare per element)
            unscale = _bulk_cost("GradScaler unscale", params, 4 * params, 4 * params,
                                 math.ceil(ptensors / FOREACH_MAX_TENSORS_PER_LAUNCH), c, kind="optimizer")
            costs.append(replace(unscale, host_s=0.0, compute_s=0.0))
            costs.append(_sync_cost("GradScaler .item()", c, "GradScaler reads the inf/NaN flags before the "
                                    "optimizer may step: the host waits for the backward pass"))
        reads, writes, flops_pp, ops_pt = OPTIMIZER_TRAFFIC[opts.optimizer]
        looped = opts.optimizer in PER_TENSOR_OPTIMIZERS or not c.is_gpu
        launches = ops_pt * (ptensors if looped else math.ceil(ptensors / FOREACH_MAX_TENSORS_PER_LAUNCH))
        opt = _bulk_cost("optimizer", flops_pp * params, reads * 4 * params, writes * 4 * params, launches, c)
        if c.is_gpu and opts.runtime:
            loop = load_runtime(opts.runtime).training_loop_host_s
            per_kernel = c.dispatch_s_by_kind.get("elementwise", c.dispatch_s)
            opt = replace(opt, host_s=launches * per_kernel if looped else loop.optimizer_step.seconds(ptensors))
            around = loop.zero_grad.seconds(ptensors) + (loop.grad_scaler.seconds(ptensors) if scaler else 0.0)
            note = Note("training loop", f"Python over {ptensors} parameter tensors: zero_grad"
                        f"{' and GradScaler' if scaler else ''}, {around * 1e3:.3g} ms of host time")
            costs.append(OpCost("zero_grad and GradScaler" if scaler else "zero_grad", "loop", "update", 0.0, 0.0, 0.0,
                                0.0, around, 0.0, "overhead", "host", (note,), 0, True))
        costs.append(opt)
        optimizer_s = opt.time_s
        if not opts.zero_grad_to_none:
            zeroing = _bulk_cost("zero_grad kernels", 0.0, 0.0, 4 * params, ptensors, c, kind="optimizer")
            if c.is_gpu and opts.runtime:
                zeroing = replace(zeroing, host_s=ptensors * c.dispatch_s_by_kind.get("elementwise", c.dispatch_s))
            costs.append(zeroing)
            optimizer_s += zeroing.time_s
    if amp:
        cast_params, cast_tensors = cast_weights(plan.ops) if autocast is not None else (params, ptensors)
        cast = _bulk_cost("amp weight casts", 0.0, cast_params * precision.master_weight_bytes,
                          cast_params * precision.storage_bytes, cast_tensors, c)
        costs.append(cast)
        amp_cast_s = cast.time_s
        if autocast is not None and opts.train:
            # each cast weight's 16-bit gradient is cast back to the fp32 parameter's (ToCopyBackward), by autograd's
            # engine: device time, no host time of its own
            back = replace(_bulk_cost("amp weight-gradient casts", 0.0, cast_params * precision.storage_bytes,
                                      cast_params * precision.master_weight_bytes, cast_tensors, c), host_s=0.0)
            costs.append(back)
            amp_cast_s += back.time_s
    host_s = sum(o.host_s for o in costs)
    device_s = sum(o.device_s for o in costs)
    sync_points = opts.sync_points + barriers
    sync_s = sync_points * c.sync_s
    transfer_s = 0.0
    if c.is_gpu and opts.include_transfer and c.host_link_bytes_per_s:
        transfer_s = float(workload.input_bytes) / copy_rate(c, opts.pinned)
    if c.is_gpu:
        copy_on_critical_path = 0.0 if opts.pinned or opts.prefetch else transfer_s
        copy_on_stream = transfer_s if opts.pinned and not opts.prefetch else 0.0
        device_total = device_s + copy_on_stream
        if sync_points:
            # the syncs inside the step are in the pipeline (their host time), the loop's own at its end
            step = drained_pipeline_s(costs) + opts.sync_points * c.sync_s + copy_on_critical_path + copy_on_stream
        else:
            # a copy from pageable memory is synchronous and stream-ordered: it starts once the kernels queued
            # before it (the previous step's) have finished and the host waits for it, so nothing overlaps it
            step = max(host_s, device_total) + copy_on_critical_path
        step = max(step, transfer_s)
    else:
        step = host_s + device_s + sync_s
    memory = _memory(workload, c.is_gpu, precision, opts)
    return StepPrediction(workload.name, profile.name, int(workload.batch), precision.name, opts.train, step,
                          host_s, device_s, transfer_s, sync_s, optimizer_s, amp_cast_s, memory,
                          profile.memory.capacity_bytes.value, costs, c)

"""What CUDA autocast (`torch.autocast("cuda")`, the `amp` precision on a GPU) stores each tensor of a step in,
and the casts it runs: a model under autocast keeps fp32 weights and an fp32 input, and only the ops on
autocast's lists change dtype (https://docs.pytorch.org/docs/stable/amp.html, "Autocast Op Reference"):

- ops on the float16 list (linear, matmul, bmm, the convolutions, scaled_dot_product_attention) cast every
  fp32 input to fp16 and write fp16;
- ops on the float32 list (layer_norm, softmax among them) cast every fp16 input to fp32 and write fp32;
- every other op runs in its inputs' dtype, two of different dtypes promoting to the wider (PyTorch's type
  promotion): an embedding writes its fp32 table's rows, a residual add of an fp16 sublayer output to an fp32
  stream writes fp32, BatchNorm keeps its input's dtype (cuDNN takes fp16 data with fp32 parameters).

So a transformer's residual stream stays fp32 under autocast (its embeddings and LayerNorms write fp32), each of
its products casts its fp32 input to fp16 (the query, key and value projections each their own copy: autocast
caches the casts of weights, not of activations), and its LayerNorms stream 4-byte elements. The profiled BERT-base
AMP inference step on the lent H100 (benchmarks/results/gpu-live-h100.json, breakdown, batch 128 x 128) ran
196 copy kernels (1.67 ms of 10.23), its LayerNorms in 1.28 ms where 2-byte elements would take 0.88, and its
residual adds in 1.46 ms. Each cast is a kernel of its own; in training its backward casts the gradient back,
and autograd casts the gradient an op of a wider dtype hands to a narrower input to that input's dtype (a copy
kernel: torch/csrc/autograd/engine.cpp, validate_outputs), as the fp32 residual add does for its fp16 sublayer
output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.model.ceilings import RUNTIME_PROVENANCE, runtime_figures
from roofline.model.context import ContextFor, CostContext
from roofline.model.costmodel import OpCost, op_cost
from roofline.model.step_plan import StepPlan
from roofline.workload.ops.attention import Embedding
from roofline.workload.ops.base import MODEL_INPUT, Num, Op, Workload
from roofline.workload.ops.norm import BatchNorm
from roofline.workload.ops.pointwise import Elementwise

HALF_BYTES = 2
FLOAT_BYTES = 4
LOWER_PRECISION_KINDS = frozenset({"gemm", "conv2d", "attention"})
"""Op kinds on autocast's CUDA float16 list: linear, addmm, matmul, mm, bmm, baddbmm, the convolutions,
scaled_dot_product_attention."""
FLOAT32_KERNELS = frozenset({"norm:layer", "softmax", "loss:cross_entropy"})
"""Kernels on autocast's CUDA float32 list: layer_norm, softmax, cross_entropy (log_softmax, nll_loss)."""
PROMOTING_KINDS = frozenset({"elementwise", "concat"})
"""Ops of several tensor inputs, which write the widest of their dtypes."""


@dataclass(frozen=True)
class Cast:
    """A copy autocast makes of one input of `consumer`: `numel` elements from `from_bytes` to `to_bytes`."""

    consumer: str
    numel: Num
    from_bytes: int
    to_bytes: int


@dataclass(frozen=True)
class AutocastFlow:
    """Per op of a step: bytes per element of what its forward reads (after autocast's casts) and writes, and the
    casts autocast runs before it."""

    reads: dict[str, float]
    writes: dict[str, int]
    casts: dict[str, tuple[Cast, ...]]
    narrowed: dict[str, tuple[Cast, ...]]
    """Op name -> the gradients autograd casts to the dtype of a narrower input of the op (a promoting op)."""

    def gradient_casts(self, consumer: str) -> tuple[Cast, ...]:
        """The backward's casts for `consumer`'s inputs: each forward cast's gradient converted back, and the
        gradients it hands to narrower inputs."""
        back = tuple(Cast(c.consumer, c.numel, c.to_bytes, c.from_bytes) for c in self.casts.get(consumer, ()))
        return back + self.narrowed.get(consumer, ())


def _output_bytes(op: Op, inputs: list[int]) -> int:
    if op.kind in LOWER_PRECISION_KINDS:
        return HALF_BYTES
    if op.kernel in FLOAT32_KERNELS or isinstance(op, Embedding):
        return FLOAT_BYTES
    if op.kind in PROMOTING_KINDS:
        return max(inputs)
    return inputs[0]


def autocast_flow(workload: Workload, ops: list[Op]) -> AutocastFlow:
    """The dtypes of `ops` (the step's ops, in execution order) under CUDA autocast, following `workload`'s
    dataflow from an fp32 input batch (token ids feed embeddings, which read no float)."""
    flow = workload.flow()
    present = {op.name for op in ops}
    elements = {op.name: op.output_elements() for op in ops}
    dtype: dict[str, int] = {MODEL_INPUT: FLOAT_BYTES}
    reads: dict[str, float] = {}
    writes: dict[str, int] = {}
    casts: dict[str, tuple[Cast, ...]] = {}
    narrowed: dict[str, tuple[Cast, ...]] = {}
    for op in ops:
        producers = [flow.source(p, present) for p in flow.reads.get(op.name, (MODEL_INPUT,))] or [MODEL_INPUT]
        inputs = [dtype.get(p, FLOAT_BYTES) for p in producers]
        # the input batch: as many elements as the op reads of it
        elements[MODEL_INPUT] = op.traffic("forward").activations_read / len(producers)
        out = _output_bytes(op, inputs)
        if op.kind in LOWER_PRECISION_KINDS or op.kernel in FLOAT32_KERNELS:
            made = tuple(Cast(op.name, elements[p], b, out) for p, b in zip(producers, inputs, strict=True)
                         if b != out and not isinstance(op, Embedding))
            if made:
                casts[op.name] = made
            reads[op.name] = out
        elif isinstance(op, (Embedding, BatchNorm)):
            reads[op.name] = inputs[0] if isinstance(op, BatchNorm) else FLOAT_BYTES
        else:
            reads[op.name] = sum(inputs) / len(inputs)
            made = tuple(Cast(op.name, elements[p], out, b) for p, b in zip(producers, inputs, strict=True)
                         if b < out and p != MODEL_INPUT)
            if made:
                narrowed[op.name] = made
        writes[op.name] = out
        dtype[op.name] = out
    return AutocastFlow(reads, writes, casts, narrowed)


def cast_weights(ops: list[Op]) -> tuple[float, int]:
    """(parameters, parameter tensors) autocast casts to 16-bit each forward (it caches them within one): the
    weights of the ops it runs in 16-bit, not an embedding's table or a normalization's scale and shift."""
    cast = [op for op in ops if op.kind in LOWER_PRECISION_KINDS]
    return float(sum(op.params() for op in cast)), sum(op.param_tensors() for op in cast)


def autocast_context_for(workload: Workload, plan: StepPlan, ctx: CostContext,
                         runtime: str | None) -> tuple[ContextFor, AutocastFlow]:
    """Each op priced in the dtypes CUDA autocast gives its tensors (`roofline.model.autocast`): its forward
    reads and writes them, its backward passes stream gradients of the same dtypes (the mean of what the forward
    reads and writes). An op that reads fp32 (a LayerNorm, a dropout on the fp32 stream) streams at its kernel's
    4-byte rate where the runtime profile prices the kernels."""
    flow = autocast_flow(workload, plan.ops)
    c = ctx.ceilings
    wide = c
    if runtime and c.provenance.get("kernel_rates", "").startswith(RUNTIME_PROVENANCE):
        wide = replace(c, kernel_bytes_per_s=runtime_figures(runtime, c.levels, FLOAT_BYTES, c.sm_cycles_per_s,
                                                                     c.fp32_lanes_per_sm, c.architecture)[1])
    made: dict[tuple[float, float], CostContext] = {}

    def context(reads: float, writes: float) -> CostContext:
        key = (reads, writes)
        if key not in made:
            made[key] = replace(ctx, ceilings=wide if reads >= FLOAT_BYTES else c, activation_bytes=reads,
                                output_bytes=writes)
        return made[key]

    def context_for(op: Op, pass_: str) -> CostContext:
        reads = flow.reads.get(op.name, ctx.activation_bytes)
        writes = flow.writes.get(op.name, ctx.activation_bytes)
        if pass_ == "forward":
            return context(reads, writes)
        both = (reads + writes) / 2
        return context(both, both)

    return context_for, flow


def with_casts(costs: list[OpCost], plan: StepPlan, flow: AutocastFlow, ctx: CostContext,
               train: bool) -> list[OpCost]:
    """`costs` (one per plan pair) with autocast's casts, each a copy kernel of its own: a consumer's input casts
    before its forward, their gradients cast back after its input gradient. A forward cast costs the host one
    dispatch of its own (autocast calls `to` through the dispatcher for each); a gradient's cast is issued by
    autograd's engine, whose cost the runtime profile's training factor holds."""
    made: dict[tuple[float, int, int, str], OpCost] = {}

    def cast_cost(cast: Cast, index: int, pass_: str) -> OpCost:
        key = (float(cast.numel), cast.from_bytes, cast.to_bytes, pass_)
        if key not in made:
            copy = Elementwise(f"{cast.consumer}.autocast_cast", numel=cast.numel, inputs=1, op="copy")
            cost = op_cost(copy, "forward", replace(ctx, activation_bytes=cast.from_bytes,
                                                    output_bytes=cast.to_bytes, host_call_factor=1.0))
            made[key] = replace(cost, kind="cast", pass_=pass_,
                                host_s=cost.host_s if pass_ == "forward" else 0.0)
        return made[key].renamed(f"{cast.consumer}.autocast_cast{index}")

    out: list[OpCost] = []
    for (pass_, op), cost in zip(plan.pairs, costs, strict=True):
        if pass_ == "forward":
            out.extend(cast_cost(c, i, pass_) for i, c in enumerate(flow.casts.get(op.name, ())))
        out.append(cost)
        if train and pass_ == "backward_input":
            out.extend(cast_cost(c, i, pass_) for i, c in enumerate(flow.gradient_casts(op.name)))
    return out

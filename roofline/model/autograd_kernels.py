"""Kernels a GPU training step's backward runs beyond each op's own gradient passes: what autograd adds around
the layers, each a kernel of its own on the device, issued from C++ (the engine, or a backward function), so no
host time of its own beyond what the runtime profile's training factor holds.

- Gradient accumulation: a tensor that several ops read gets one gradient from each; autograd's engine sums them
  into the first (`InputBuffer::add`, torch/csrc/autograd/input_buffer.cpp: an in-place add when it can), one add
  per extra reader, reading two gradients and writing one. BERT's LayerNorm output feeds the query, key and value
  projections and the residual add (three adds), the attention block's output the intermediate dense and its
  residual (one): 48 a step, the `aten::add_` calls the lent H100's profile of a BERT-base training step counted.
  A weight two layers share (GPT-2's lm_head and token embedding) gets its two gradients summed the same way.
- Bias gradients: a Linear's bias gradient is dY summed over the rows (`sum_to_size` in addmm's derivative,
  tools/autograd/derivatives.yaml), a reduction kernel that reads dY again after the weight gradient's product
  read it: the profile's 73 `aten::sum` calls for BERT-base's 73 biased Linear layers.

GradScaler's unscale (`torch._amp_foreach_non_finite_check_and_unscale_`, one read and one write of every fp32
gradient in multi-tensor launches) is a pass over the parameters like the optimizer's: `roofline.model.step`
prices it with them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from roofline.model.context import ContextFor
from roofline.model.costmodel import OpCost, op_cost
from roofline.model.step_plan import StepPlan
from roofline.workload.ops.base import MODEL_INPUT, Op, Workload
from roofline.workload.ops.gemm import Linear
from roofline.workload.ops.pointwise import Elementwise, Reduce


def _device_only(cost: OpCost, name: str, kind: str) -> OpCost:
    return replace(cost, host_s=0.0, kind=kind, pass_="backward_input").renamed(name)


def accumulation_readers(workload: Workload, plan: StepPlan) -> dict[str, int]:
    """Op name -> how many ops that pass a gradient back read its result (only those with more than one): the
    readers whose input gradient the step computes (their backward_input pass runs), through views."""
    flow = workload.flow()
    present = {op.name for op in plan.ops}
    passes_back = {op.name for pass_, op in plan.pairs if pass_ == "backward_input"}
    readers: Counter[str] = Counter()
    for op in plan.ops:
        if op.name not in passes_back or op.is_free:
            continue
        for producer in dict.fromkeys(flow.source(p, present) for p in flow.reads.get(op.name, ())):
            if producer != MODEL_INPUT:
                readers[producer] += 1
    return {name: n for name, n in readers.items() if n > 1}


def backward_kernels(workload: Workload, plan: StepPlan, context_for: ContextFor,
                     param_bytes: float) -> list[OpCost]:
    """The gradient accumulations and bias reductions of one training step, each priced in the context of the op
    whose gradient it handles (its dtypes under autocast); a shared weight's gradients in the parameters' own
    dtype (`param_bytes`: fp32 under autocast, whose parameters stay fp32)."""
    by_name = {op.name: op for op in plan.ops}
    costs: list[OpCost] = []
    made: dict[tuple[object, int], OpCost] = {}

    def priced(kernel: Op, owner: Op) -> OpCost:
        context = context_for(owner, "backward_input")
        key = (kernel.shape_key(), id(context))
        if key not in made:
            made[key] = op_cost(kernel, "forward", context)
        return made[key]

    for name, readers in accumulation_readers(workload, plan).items():
        producer = by_name[name]
        add = Elementwise(f"{name}.grad_accumulate", numel=producer.output_elements(), inputs=2, op="add")
        cost = priced(add, producer)
        costs.extend(_device_only(cost, f"{name}.grad_accumulate{i}", "grad_accumulate") for i in range(readers - 1))
    weighted = {op.name for pass_, op in plan.pairs if pass_ == "backward_weight"}
    for op in plan.ops:
        if isinstance(op, Linear) and op.tied and op.name in weighted:
            add = Elementwise(f"{op.name}.tied_grad_accumulate", numel=op.in_features * op.out_features, inputs=2,
                              op="add")
            shared = replace(context_for(op, "backward_weight"), activation_bytes=param_bytes, output_bytes=None)
            costs.append(_device_only(op_cost(add, "forward", shared), add.name, "grad_accumulate"))
    for op in plan.ops:
        if isinstance(op, Linear) and op.bias and op.name in weighted:
            reduce = Reduce(f"{op.name}.bias_grad", numel_in=op.rows * op.out_features, numel_out=op.out_features)
            costs.append(_device_only(priced(reduce, op), f"{op.name}.bias_grad", "bias_grad"))
    return costs

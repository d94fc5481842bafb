"""Which units a served model's ops run on, where attention's differ from the products': the ceilings each op
is priced with.

- Products, norms and the rest: the serving precision's (`ServingPrecision.compute`).
- A mixture of experts' products: `ServingPrecision.experts` where the runtime runs them in another type.
- Attention's products: `ServingPrecision.attention` (16-bit under fp8 weights: TensorRT-LLM's fused context
  kernel is built in the plugin's 16-bit type), accumulating in fp32 where the other products accumulate in fp16
  (`ServingPrecision.accumulate`: flash attention and SDPA accumulate in fp32).
- The lm_head: the 16-bit type's where fp8 weights leave it 16-bit (`llm_precision.HEAD_WEIGHTS`).
- TensorRT-LLM's masked multi-head attention (`MaskedMultiheadAttention`): fused multiply-adds accumulating in
  fp32 on the CUDA cores, so the fp32 vector rate.
- llama.cpp's quantised products (`--quant-kernel mmq`): int8 tensor cores where the GPU has them
  (`OpUnits.int8_mma`), else dp4a (`llm_step.MMQ_FLOP_PER_SM_CYCLE`).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.model.ceilings import Ceilings, ceilings_for
from roofline.model.llm_precision import ServingPrecision
from roofline.workload.ops.base import Op
from roofline.workload.ops.serving import CachedAttention, ExpertLinear, LogitsHead, MaskedMultiheadAttention
from roofline.workload.precision import get_precision


@dataclass(frozen=True)
class OpUnits:
    """The ceilings for each kind of op of one served model on one device."""

    default: Ceilings
    attention: Ceilings
    cuda_cores_fp32: Ceilings
    experts: Ceilings
    head: Ceilings
    """The lm_head's: the 16-bit type's where fp8 weights leave it 16-bit (`ServingPrecision.head`)."""
    int8_mma: bool = False
    """The GPU multiplies 8-bit integers on its tensor cores (mma.sync's s8 shapes: Turing and later,
    `INT8_MMA_GENERATIONS`), as llama.cpp's MMQ does where it can (ggml-cuda: turing_mma_available)."""

    def for_op(self, op: Op) -> Ceilings:
        if isinstance(op, MaskedMultiheadAttention):
            return self.cuda_cores_fp32
        if isinstance(op, CachedAttention):
            return self.attention
        if isinstance(op, ExpertLinear):
            return self.experts
        if isinstance(op, LogitsHead):
            return self.head
        return self.default


INT8_MMA_GENERATIONS = ("Turing", "Ampere", "Ada", "Hopper", "Blackwell")
"""GPU generations (a profile's `architecture`, first word) whose tensor cores take 8-bit integers: introduced
with Turing (compute capability 7.5); Volta's take fp16 only, Pascal and older have none."""


def op_units(profile, prec: ServingPrecision, default: Ceilings) -> OpUnits:
    """`default` (the serving precision's ceilings) and the others, resolved only where they differ."""
    attention = default if prec.attention == prec.compute and prec.accumulate == "fp32" \
        else ceilings_for(profile, prec.attention)
    fp32 = get_precision("fp32")
    cuda_cores = default if prec.compute == fp32 else ceilings_for(profile, fp32)
    experts = default if prec.experts in (None, prec.compute) else ceilings_for(profile, prec.experts)
    head = default if prec.head.compute == prec.compute else ceilings_for(profile, prec.head.compute)
    int8_mma = profile.kind == "gpu" and profile.architecture.split()[0] in INT8_MMA_GENERATIONS
    return OpUnits(default, attention, cuda_cores, experts, head, int8_mma)

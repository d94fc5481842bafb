"""A served language model's request on one device: time to first token, time per output token, tokens/s
and memory, from the prefill and decode phases' ops costed by the roofline cost model.

- Prefill: B sequences of P prompt tokens in one forward pass; time to first token (TTFT) is its time.
- Decode: one forward per new token. Its time is affine in the context c (attention's cache reads and
  FLOPs grow linearly in c, the rest is fixed), so the mean over the O - 1 decode steps after the first token
  is the step at the mean context, P + O / 2: that is the time per output token (TPOT).
- Weight-only quantization: each linear layer's weights are read at their stored size (with group scales)
  and dequantised on the vector units, per output tile row band of 128 rows (the GEMM re-reads and
  re-dequantises a weight tile for each band), which `dequant_s` adds to the op's compute.
- Runtime: eager dispatch or a captured graph (`roofline.model.llm_runtime`).
- Units: attention's products under fp8 weights run on the 16-bit tensor cores, TensorRT-LLM's masked MHA on the
  fp32 CUDA cores (`roofline.model.llm_units`); which decode-attention kernel runs is the layout's
  (`phases.DECODE_ATTENTION`).
- Tensor parallelism (`TensorParallel`, Megatron-LM's layout): each of N GPUs in one node holds its share of
  every layer's weights and KV cache (heads and MLP columns split N ways) and runs the phase on it; every
  layer adds two all-reduces of the layer's output activations (after attention and after the MLP), and the
  lm_head's vocabulary-split logits are gathered once per forward. They are priced with the node's fabric
  (`roofline.model.comm`) and not overlapped: the next layer needs their result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from roofline.errors import DoesNotFit, RooflineError
from roofline.model.ceilings import Ceilings, ceilings_for
from roofline.model.comm.collectives import Fabric, ring_all_gather_s
from roofline.model.comm.tensor_parallel import tensor_parallel_token_s, tp_message_bytes
from roofline.model.context import CostContext
from roofline.model.costmodel import OpCost, op_cost
from roofline.model.gemm_cost import GEMV_MAX_ROWS
from roofline.model.llm_precision import ServingPrecision
from roofline.model.llm_runtime import RUNTIMES
from roofline.model.llm_units import OpUnits, op_units
from roofline.model.memory import default_reserve_bytes
from roofline.model.notes import Note
from roofline.model.serving_engine import ENGINE_LOOPS, EngineLoop, engine_loop
from roofline.workload.llm.config import ConfigError, DecoderConfig
from roofline.workload.llm.phases import (
    DECODE_ATTENTION,
    ONE_GPU,
    Layout,
    Phase,
    decode,
    kv_cache_bytes_per_token,
    prefill,
    unfused_bytes,
)
from roofline.workload.llm.transformers_release import CURRENT, TransformersRelease
from roofline.workload.ops.gemm import Linear
from roofline.workload.ops.pointwise import Elementwise
from roofline.workload.ops.serving import CachedAttention, ExpertLinear, GgmlAttention, LogitsHead

DEQUANT_ROW_BAND = 128
"""Rows of the output tile band one dequantised weight tile serves (the largest GEMM tile side the cost model
uses on GPUs): a weight is dequantised ceil(rows / 128) times per product."""


@dataclass(frozen=True)
class TensorParallel:
    """`gpus` GPUs of one node serving one copy of the model, joined by `fabric` (`node` names it)."""

    gpus: int
    fabric: Fabric
    node: str
    algorithm: str = "auto"
    split_lm_head: bool = True
    """The lm_head split by vocabulary with its logits gathered (TensorRT-LLM, vLLM), or whole on every GPU."""


LM_HEAD_LAYOUTS = {"split": True, "replicated": False}
"""--lm-head: split over the GPUs by vocabulary (TensorRT-LLM, vLLM) or whole on each (gpt-fast's tp.py)."""


def tensor_parallel_group(profile, gpus: int, node_name: str | None = None, nodes: int = 1,
                          algorithm: str = "auto", lm_head: str = "split") -> TensorParallel | None:
    """`gpus` GPUs of the node profile holding `profile` (or the named one), or None for one GPU."""
    from roofline.hardware.fabric_load import find_link
    from roofline.model.comm.collectives import ALLREDUCE
    from roofline.model.comm.fabric import node_fabric
    from roofline.model.comm.job import node_for

    if gpus == 1 and nodes == 1:
        return None
    if profile.kind != "gpu":
        raise RooflineError("--gpus splits a model over GPUs of a node; name one with --gpu")
    if nodes != 1:
        raise RooflineError("tensor parallelism runs inside one node (its all-reduces every layer need NVLink); "
                            "drop --nodes")
    if algorithm not in ("auto", *ALLREDUCE):
        raise RooflineError(f"unknown --allreduce '{algorithm}'; choose auto, {', '.join(ALLREDUCE)}")
    if gpus < 1:
        raise RooflineError(f"--gpus must be a positive integer, got {gpus}")
    if lm_head not in LM_HEAD_LAYOUTS:
        raise RooflineError(f"unknown --lm-head '{lm_head}'; choose {' or '.join(LM_HEAD_LAYOUTS)}")
    node = node_for(profile, node_name)
    return TensorParallel(gpus, node_fabric(node, find_link(node.intra_link), None, gpus), node.name, algorithm,
                          LM_HEAD_LAYOUTS[lm_head])


@dataclass(frozen=True)
class PhaseCost:
    phase: Phase
    time_s: float
    """The phase's time, tensor-parallel communication included."""
    costs: tuple[tuple[OpCost, int], ...]
    """Each distinct op of the phase with its repeat count, runtime charges applied."""
    communication_s: float = 0.0
    """Tensor parallelism's all-reduces and the logits' gather (0 on one GPU)."""

    @property
    def flops(self) -> float:
        return sum(o.flops * n for o, n in self.costs)

    @property
    def bytes(self) -> float:
        return sum(o.bytes * n for o, n in self.costs)


@dataclass(frozen=True)
class ServingMemory:
    weights: float
    kv_cache: float
    activations: float
    workspace: float

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.activations + self.workspace


@dataclass(frozen=True)
class ServingPrediction:
    model: str
    device: str
    batch: int
    prompt_len: int
    output_len: int
    precision: ServingPrecision
    runtime: str
    prefill: PhaseCost
    decode: PhaseCost
    memory: ServingMemory
    capacity_bytes: float
    ceilings: Ceilings
    tp: TensorParallel | None = None
    release: TransformersRelease = CURRENT
    engine: EngineLoop = ENGINE_LOOPS["none"]

    @property
    def gpus(self) -> int:
        return self.tp.gpus if self.tp else 1

    @property
    def engine_host_s(self) -> float:
        """The engine loop's host time around each forward, prefill or decode (`serving_engine`)."""
        return self.engine.step_host_s(self.batch)

    @property
    def ttft_s(self) -> float:
        return self.prefill.time_s + self.engine_host_s

    @property
    def tpot_s(self) -> float:
        return self.decode.time_s + self.engine_host_s

    @property
    def request_s(self) -> float:
        return self.ttft_s + (self.output_len - 1) * self.tpot_s

    @property
    def tokens_per_s(self) -> float:
        """Output tokens per second over the whole request (prefill included)."""
        return self.batch * self.output_len / self.request_s

    @property
    def decode_tokens_per_s(self) -> float:
        return self.batch / self.tpot_s

    @property
    def fits(self) -> bool:
        return self.memory.total <= self.capacity_bytes


def weight_bytes(cfg: DecoderConfig, prec: ServingPrecision, layout: Layout = ONE_GPU) -> float:
    """Linear layers at the stored size with scales, the lm_head as the toolchain stores it
    (`ServingPrecision.head`); embeddings and norms at 16 bits (or fp32). Over tensor-parallel GPUs, one GPU's:
    its share of the linear layers, the rest replicated."""
    linear, head, experts = _linear_params(cfg, layout)
    dense, all_head, all_experts = _linear_params(cfg)
    return (linear * prec.linear_weight_bytes + head * prec.head.linear_weight_bytes
            + experts * prec.expert_weight_bytes
            + (cfg.params() - dense - all_head - all_experts) * prec.other_weight_bytes)


def lm_head_params(cfg: DecoderConfig, layout: Layout = ONE_GPU) -> int:
    """Parameters of one GPU's untied lm_head (none where it is the token table)."""
    return _linear_params(cfg, layout)[1]


def _linear_params(cfg: DecoderConfig, layout: Layout = ONE_GPU) -> tuple[int, int, int]:
    """Parameters of one GPU's linear layers: (the decoder layers' dense ones, the untied lm_head, the experts')."""
    ops = decode(cfg, 1, 1, layout=Layout(layout.tp, layout.split_lm_head)).steps
    linear = [s for s in ops if isinstance(s.op, Linear) and not getattr(s.op, "tied", False)]
    experts = int(sum(s.op.params() * s.repeat for s in linear if isinstance(s.op, ExpertLinear)))
    head = int(sum(s.op.params() * s.repeat for s in linear if isinstance(s.op, LogitsHead)))
    return int(sum(s.op.params() * s.repeat for s in linear)) - experts - head, head, experts


WEIGHT_ONLY_MMA_ROWS = 16
"""Rows of activations a weight-only int8/int4 product of fewer than `DEQUANT_ROW_BAND` rows pads to: its kernels issue
mma.m16n8k16 on 16-row tiles of A, not a cuBLAS GEMM's 64- to 256-row tiles. PyTorch's tinygemm
(`_weight_int4pack_mm`, gpt-fast's and torchao's int4 path; aten/src/ATen/native/cuda/int4mm.cu,
ALayout_RM::kMTileSize = 16); Marlin, vLLM's GPTQ/AWQ kernel
(IST-DASLab/marlin@2f6d7c10e124b3c5fa29ff8d77d568bd7af3274c, marlin/marlin_cuda_kernel.cu: `thread_m_blocks`, 'number
of 16x16 blocks in the m dimension (batchsize)'); the matrix-vector kernels engines run for one to a few rows
(llama.cpp's mmvq, TensorRT-LLM's weight-only batched GEMV) pad nothing, so 16 rows is the most such a product
computes. Priced with a 16-bit GEMM's 64-row tile instead, an int8 product of one row on a V100 cost 91x its products
at the tensor cores' rate, slower than its weights' bytes."""


def _dequant(cost: OpCost, op: Linear, prec: ServingPrecision, c: Ceilings) -> OpCost:
    weights = float(op.traffic("forward").weights_read)
    bands = math.ceil(float(op.rows) / DEQUANT_ROW_BAND)
    dequant_s = weights * bands * prec.dequant_flops_per_weight / c.vector_flops_per_s
    tensor_s = cost.compute_s
    if c.matrix_flops_per_s and op.rows < DEQUANT_ROW_BAND:
        padded = math.ceil(float(op.rows) / WEIGHT_ONLY_MMA_ROWS) * WEIGHT_ONLY_MMA_ROWS
        tensor_s = 2.0 * padded * op.in_features * op.out_features / c.matrix_flops_per_s
    compute_s = tensor_s + dequant_s
    device_s = max(compute_s, cost.memory_s, c.launch_s if c.is_gpu else 0.0)
    if compute_s >= max(cost.memory_s, cost.host_s):
        bound = "compute"
    else:
        bound = "memory" if cost.bound == "compute" else cost.bound
    return replace(cost, compute_s=compute_s, device_s=device_s, bound=bound,
                   notes=(*cost.notes, Note("dequantization", f"dequantise {prec.name}: {dequant_s * 1e6:.3g} us "
                                                               "on the vector units")))


MMQ_FLOP_PER_SM_CYCLE = {"int8-mma": 667.9, "dp4a": 339.4}
"""llama.cpp's MMQ rate per SM-cycle, on int8 tensor cores (mma.sync, Turing and later: `OpUnits.int8_mma`) and on
the dp4a instruction (older GPUs, and every GPU's MMQ before the tensor-core kernels of mid-2024). Calibrated on
one published row each (benchmarks/published/llm-serving.yaml, fitted block llamacpp-mmq-pr7676): the rates at
which this model's prefill of Llama-3-8B in Q4_0 (int4, group 64) over 512 tokens on an RTX 4090 takes what
ggml-org/llama.cpp#7676's table measured there (JohannesGaessler, 2024-06-08, 'Vs. master MMQ', ub 512):
10358.75 tokens/s with the pull request's int8 tensor-core MMQ, 6279.91 with master's dp4a MMQ. Both are a
third to two thirds of their instructions' peaks (2048 and 512 operations per SM-cycle on Ada): the kernels spend
their cycles unpacking 4-bit blocks and applying each block's scales on the CUDA cores, which scale with SMs x
clock rather than with the tensor cores' rate. Calibrated with the rows' attention as llama.cpp ran it, its
scores in memory (`--engine llama.cpp`, twenty-sixth session; 567.0 and 311.3 before, with a fused attention)."""


TINYGEMM_FIXED_S = 3.75e-6
TINYGEMM_FLOP_PER_SM_CYCLE = 119.0
"""PyTorch's int4 kernel (`torch._weight_int4pack_mm`, aten/src/ATen/native/cuda/int4mm.cu), as measured on a lent
H100 and H200 (benchmarks/results/gpu-decode-kernels-h100.json and -h200.json, int4 section: six Llama-3-8B weight
shapes at group 128 and one at group 32, 1 to 64 rows of bf16 activations, packed weights rotated past L2, inside a
CUDA graph; 70 points): its time is `TINYGEMM_FIXED_S` plus the packed weight and its scales at the sustained DRAM
rate plus every row's products at this many FLOP per SM-cycle (31 TFLOP/s on either machine's 132 SMs at
1.98 GHz), the least median |error| over both machines: 3.4%, worst 28%. The rows' term grows with each row, not
with its 16-row mma tiles: 14336 x 4096 took 17.8, 24.9, 67.3, 131.3 and 255.5 us at 1, 4, 16, 32 and 64 rows on
the H100, where a bf16 cuBLAS product of the same weight took 42.8 to 44.8 us. So an int4 model served by it is
faster than bf16 at a few sequences and slower from about 16; the `fused` kernel's pricing put those 64 rows at
12 us."""


WEIGHT_ONLY_FIXED_S = TINYGEMM_FIXED_S
"""The fixed time of a weight-only library kernel that streams its weight from DRAM (Marlin, AWQ's and ExLlama's
kernels, TensorRT-LLM's weight-only GEMV, llama.cpp's mmvq, MLC's), added to its weight's time at the DRAM rate:
tinygemm's, the one such kernel measured (`TINYGEMM_FIXED_S`). Every kernel measured on the lent GPUs paid one:
cuBLAS's 16-bit products 5.7 us (`Ceilings.streaming_fixed_s`), tinygemm 3.75 us, and inductor's int8 kernel read
at 45-66% of the DRAM rate (`INDUCTOR_INT8_WEIGHTS_PER_SM_CYCLE`). A kernel's first bytes arrive a DRAM latency
after its launch and its last wave drains alone; a 4096 x 4096 int4 weight (8.4 MB) streams in 4 us on an A100,
so the fixed time is half a decode product's cost there. Until the thirty-second session these kernels paid none
(commit 2f3b43c scoped the fixed time to cuBLAS after seeing what it did to three held-out blocks)."""


def _tinygemm(cost: OpCost, op: Linear, prec: ServingPrecision, c: Ceilings) -> OpCost:
    """The product as PyTorch's tinygemm runs it (`TINYGEMM_FLOP_PER_SM_CYCLE`): its fixed time and the packed
    weight's stream, then its rows' arithmetic, one after the other."""
    weight_bytes = float(op.traffic("forward").weights_read) * prec.linear_weight_bytes
    stream_s = TINYGEMM_FIXED_S + weight_bytes / c.dram.bandwidth_bytes_per_s
    rows_s = float(op.flops("forward")) / (TINYGEMM_FLOP_PER_SM_CYCLE * c.sm_cycles_per_s)
    note = Note("dequantization", f"PyTorch's tinygemm int4 kernel: {stream_s * 1e6:.3g} us streaming, "
                                  f"{rows_s * 1e6:.3g} us for {op.rows} rows at {TINYGEMM_FLOP_PER_SM_CYCLE:.0f} "
                                  "FLOP per SM-cycle (measured)")
    return replace(cost, compute_s=rows_s, memory_s=stream_s, device_s=stream_s + rows_s,
                   bound="compute" if rows_s >= stream_s else "memory:DRAM", notes=(*cost.notes, note))


INDUCTOR_INT8_WEIGHTS_PER_SM_CYCLE = 7.43
"""int8 weights per SM-cycle that inductor's fused int8 matrix-vector kernel converts, multiplies and sums
(`F.linear(x, w.to(torch.bfloat16)) * scales` compiled with coordinate_descent_tuning, one row), as measured on a
lent H200 (benchmarks/results/gpu-decode-int8wo-gptfast-h200.json, 2026-11-28: 4096 x 4096 in 8.9 us, 14336 x
4096 in 30.2 us, 4096 x 14336 in 21.3 us, weights rotated past L2, inside a CUDA graph): 1.89, 1.94 and 2.76 T
weights/s on 132 SMs at 1.98 GHz, 7.21, 7.43 and 10.55 per SM-cycle, the median. The kernel read 45-66% of what
the H200's DRAM delivers (a bf16 cuBLAS product of the same weights reads at 1.09 of it, `streaming_products`),
so its SMs, not its memory, set its pace, and it is carried by SMs x clock. At 8 and 32 rows the same compiled
code converts the weight to a bf16 copy and calls cuBLAS: 24.6, 82.0 and 81.1 us, slower than bf16
(gpu-decode-int8wo-h200.json)."""


def _inductor_int8(cost: OpCost, op: Linear, prec: ServingPrecision, c: Ceilings) -> OpCost:
    """gpt-fast's and torchao's compiled int8 product of one row (`INDUCTOR_INT8_WEIGHTS_PER_SM_CYCLE`): it reads the
    int8 weight at the DRAM rate or converts it at the measured rate per SM-cycle, whichever is slower (more rows
    copy first: `COPY_FIRST_FROM_ROWS`)."""
    weights = float(op.traffic("forward").weights_read)
    memory_s = weights * prec.linear_weight_bytes / c.dram.bandwidth_bytes_per_s
    issue_s = weights / (INDUCTOR_INT8_WEIGHTS_PER_SM_CYCLE * c.sm_cycles_per_s)
    note = Note("dequantization", f"inductor's fused int8 matrix-vector kernel: {issue_s * 1e6:.3g} us at "
                                  f"{INDUCTOR_INT8_WEIGHTS_PER_SM_CYCLE:.2f} weights per SM-cycle (measured)")
    return replace(cost, compute_s=issue_s, memory_s=memory_s, device_s=max(memory_s, issue_s, c.launch_s),
                   bound="compute" if issue_s >= memory_s else "memory:DRAM", notes=(*cost.notes, note))


COPY_FIRST_FROM_ROWS = {"convert": 1, "inductor": 2, "matmulnbits": 2, "dequant": GEMV_MAX_ROWS + 1}
"""From how many rows each kernel writes a 16-bit copy of the weight and multiplies it with cuBLAS
(`_dequantise_first`; `llm_precision.QUANT_KERNELS` says why for each): an uncompiled int8 conversion at every
row, compiled inductor's and ONNX Runtime's MatMulNBits beyond their one-row kernels, llama.cpp's cuBLAS path
beyond its matrix-vector kernel (`GEMV_MAX_ROWS`)."""
MMQ_KERNELS = ("mmq", "mmq-dp4a")
"""llama.cpp's 8-bit integer products (`_mmq`), which a product of more than `GEMV_MAX_ROWS` rows runs."""


def weight_only_cost(cost: OpCost, op: Linear, prec: ServingPrecision, c: Ceilings, ctx: CostContext,
                     int8_mma: bool = True) -> OpCost:
    """A weight-only int8/int4 product as `prec.quant_kernel` runs it (`llm_precision.QUANT_KERNELS`): fused
    (`_dequant`), llama.cpp's 8-bit integer products (`_mmq`), or a 16-bit copy of the weights then a 16-bit GEMM
    (`_dequantise_first`, from the rows `COPY_FIRST_FROM_ROWS` gives each kernel). Below those rows, products of
    up to `GEMV_MAX_ROWS` (llama.cpp's mmvq) stream their weights with a matrix-vector kernel whichever it is.
    `int8_mma`: the GPU has int8 tensor cores (`OpUnits.int8_mma`), which MMQ uses, else dp4a."""
    if prec.quant_kernel == "tinygemm":
        return _tinygemm(cost, op, prec, c)
    if op.rows >= COPY_FIRST_FROM_ROWS.get(prec.quant_kernel, math.inf):
        return _dequantise_first(op, prec, c, ctx)
    if prec.quant_kernel == "inductor":
        return _inductor_int8(cost, op, prec, c)
    if prec.quant_kernel not in MMQ_KERNELS or op.rows <= GEMV_MAX_ROWS:
        return _dequant(cost, op, prec, c)
    tensor_cores = int8_mma and prec.quant_kernel == "mmq"
    return _mmq(cost, op, c, MMQ_FLOP_PER_SM_CYCLE["int8-mma" if tensor_cores else "dp4a"])


def _dequantise_first(op: Linear, prec: ServingPrecision, c: Ceilings, ctx: CostContext) -> OpCost:
    """llama.cpp's cuBLAS path (ggml_cuda_op_mul_mat_cublas): a kernel reads the quantised weights and writes
    their 16-bit copy, then a 16-bit GEMM reads the copy; they run one after the other."""
    weights = float(op.traffic("forward").weights_read)
    copy_bytes = weights * (prec.linear_weight_bytes + 2)
    copy_s = copy_bytes / c.dram.bandwidth_bytes_per_s
    gemm = op_cost(op, "forward", replace(ctx, weight_bytes=2))
    note = Note("dequantization", f"{prec.name} weights dequantised to a 16-bit copy first: "
                                  f"{copy_bytes / 1e6:.3g} MB, {copy_s * 1e6:.3g} us")
    return replace(gemm, bytes=gemm.bytes + copy_bytes, memory_s=gemm.memory_s + copy_s,
                   device_s=gemm.device_s + copy_s, notes=(*gemm.notes, note))


GGML_ACTIVATION_BYTES = 4
"""ggml keeps activations in fp32 between ops (a matrix product's src1 is F32)."""
Q8_1_BYTES = 1 + 4 / 32
"""Bytes per element of llama.cpp's q8_1 blocks: 32 int8 values with an fp16 scale and an fp16 sum."""


def _mmq(cost: OpCost, op: Linear, c: Ceilings, per_sm_cycle: float) -> OpCost:
    """llama.cpp's MMQ: the fp32 activations quantised to q8_1 by a kernel of their own (quantize_mmq_q8_1), then
    8-bit integer products at `per_sm_cycle` FLOP (`MMQ_FLOP_PER_SM_CYCLE`) times the GPU's SMs x clock."""
    activations = float(op.rows) * op.in_features
    quantise_s = activations * (GGML_ACTIVATION_BYTES + Q8_1_BYTES) / c.dram.bandwidth_bytes_per_s
    compute_s = float(op.flops("forward")) / (per_sm_cycle * c.sm_cycles_per_s)
    device_s = quantise_s + max(compute_s, cost.memory_s, c.launch_s)
    bound = "compute" if compute_s >= cost.memory_s else cost.bound
    return replace(cost, compute_s=compute_s, device_s=device_s, bound=bound,
                   notes=(*cost.notes, Note("dequantization", f"llama.cpp MMQ: 8-bit integer products at "
                                                               f"{per_sm_cycle:.0f} FLOP per SM-cycle")))


def _unfused(cost: OpCost, extra_bytes: float, kernels: str = "eager kernels'", floor_rate: float = 0.0) -> OpCost:
    """The op with its kernels' extra passes (eager's: `phases.unfused_bytes`; llama.cpp's attention:
    `GgmlAttention.score_bytes`), each streamed at the rate the op's own traffic was priced at (the same tensors in
    the same memory level), and no slower than `floor_rate`, run after one another. An attention's extra passes
    are kernels of their own (torch.cat of the cache, the output's contiguous copy, the score passes), so they take
    the DRAM rate as the floor: over a long prompt the attention kernel's own time is its tiles' re-reads of K and
    V from L2 (`costmodel._memory_s`), which its compulsory bytes divided by that time would price a copy at."""
    if extra_bytes <= 0 or cost.memory_s <= 0 or cost.bytes <= 0:
        return cost
    extra_s = extra_bytes / max(cost.bytes / cost.memory_s, floor_rate)
    memory_s = cost.memory_s + extra_s
    bound = "memory" if cost.bound == "compute" and memory_s > cost.compute_s else cost.bound
    return replace(cost, bytes=cost.bytes + extra_bytes, memory_s=memory_s, bound=bound,
                   device_s=cost.device_s + extra_s,
                   notes=(*cost.notes, Note("unfused", f"{kernels} own passes: {extra_bytes / 1e6:.3g} MB more")))


def upcast_cost(head: LogitsHead, ctx: CostContext) -> OpCost:
    """`logits.float()` after the lm_head (`LogitsHead.fp32_upcast`) as the copy kernel it is: every logit read
    at the activations' size and written in fp32, streamed at the copy's rate."""
    numel = head.rows * head.out_features
    copy = Elementwise(f"{head.name}.float", numel=numel, inputs=1, op="copy")
    return op_cost(copy, "forward", replace(ctx, output_bytes=4.0))


def tensor_parallel_s(cfg: DecoderConfig, phase: Phase, prec: ServingPrecision, tp: TensorParallel | None) -> float:
    """2 x layers all-reduces of hidden x tokens activations (Megatron-LM) and the all-gather of the last
    position's logits (batch x vocabulary) when the lm_head is split, in the residual stream's dtype: 16-bit
    under fp8 weights, whose recipes quantise only the products' inputs (TensorRT-LLM's --enable_fp8,
    Transformer Engine)."""
    if tp is None or tp.gpus == 1:
        return 0.0
    act = prec.activation_bytes
    message = tp_message_bytes(cfg.hidden, phase.batch * phase.new_tokens, int(act))
    logits = float(phase.batch) * cfg.vocab * act if tp.split_lm_head else 0.0
    return (tensor_parallel_token_s(message, cfg.layers, tp.fabric, tp.algorithm)
            + ring_all_gather_s(logits, tp.fabric))


def phase_cost(cfg: DecoderConfig, phase: Phase, prec: ServingPrecision, units: OpUnits, runtime: str,
               reuse_bytes: float, tp: TensorParallel | None = None) -> PhaseCost:
    """The phase's ops, each priced on its units (`OpUnits.for_op`), charged by the runtime and added up."""
    c = units.default
    act_bytes = prec.activation_bytes
    # weight-only int8/int4 products run the quantisation library's own kernels, not cuBLAS, whose streaming
    # was measured (`gemm_cost.streams_weight`): their weights stream at the DRAM level's rate after the fixed
    # time the one library kernel measured paid (`WEIGHT_ONLY_FIXED_S`)
    linear_c = replace(c, streaming_fixed_s=WEIGHT_ONLY_FIXED_S, streaming_share=1.0) if prec.weight_only else c
    linear_ctx = CostContext(linear_c, act_bytes, prec.linear_weight_bytes, weight_reuse_bytes=reuse_bytes)  # type: ignore[arg-type]
    rt = RUNTIMES[runtime]
    charged: list[tuple[OpCost, int]] = []
    head = prec.head
    for step in phase.steps:
        op = step.op
        is_linear = isinstance(op, Linear)
        weight = prec.expert_weight_bytes if isinstance(op, ExpertLinear) else prec.other_weight_bytes
        if isinstance(op, LogitsHead) and head is not prec:  # a 16-bit lm_head: a plain 16-bit product
            weight, is_linear = head.linear_weight_bytes, False
        other_ctx = CostContext(units.for_op(op), act_bytes, weight,  # type: ignore[arg-type]
                                weight_reuse_bytes=reuse_bytes)
        priced_alone = is_linear and not (isinstance(op, ExpertLinear) and prec.experts)
        cost = op_cost(op, "forward", linear_ctx if priced_alone else other_ctx)
        if priced_alone and prec.weight_only:
            cost = weight_only_cost(cost, op, prec, c, linear_ctx, units.int8_mma)
        attention_floor = c.dram.bandwidth_bytes_per_s if isinstance(op, CachedAttention) else 0.0
        if rt.unfused:
            cost = _unfused(cost, unfused_bytes(cfg, op, act_bytes, prec.kv_bytes), floor_rate=attention_floor)
        if isinstance(op, GgmlAttention):
            cost = _unfused(cost, op.score_bytes(), "llama.cpp's score kernels", attention_floor)
        kernels, views = rt.calls(step, prec.compute.storage_bytes == 4)
        charged.append((rt.charge(cost, c, kernels, views), step.repeat))
        if isinstance(op, LogitsHead) and op.upcasts(act_bytes):
            charged.append((rt.charge(upcast_cost(op, other_ctx), c, 1, 0), step.repeat))
    communication = tensor_parallel_s(cfg, phase, prec, tp)
    return PhaseCost(phase, rt.total(_in_order(charged), c) + communication, tuple(charged), communication)


def _in_order(distinct: list[tuple[OpCost, int]]) -> list[OpCost]:
    """Execution order: head ops, then every layer's ops layer by layer, then the tail."""
    head = [o for o, n in distinct if n == 1 and not o.name.startswith(("final", "lm_head", "sample"))]
    layer = [o for o, n in distinct if n > 1]
    tail = [o for o, n in distinct if n == 1 and o.name.startswith(("final", "lm_head", "sample"))]
    repeats = max((n for _, n in distinct), default=1)
    return head + layer * repeats + tail


RESIDUAL_STREAM_TENSORS = 2
"""Hidden-sized tensors a decoder layer keeps referenced while its attention or MLP block runs: the residual it
adds back at the end and the normed input the block was called with (transformers' LlamaDecoderLayer.forward:
`residual = hidden_states`, then `hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))`; vLLM's
layer passes `residual` along the same way)."""


def activation_bytes(phase: Phase, act_bytes: float, hidden: int) -> float:
    """The largest live input + output pair of the phase's ops (inference frees each op's input after it), with
    the layer's residual stream (`RESIDUAL_STREAM_TENSORS` x tokens x hidden) alive beside it; logits upcast to
    fp32 (`LogitsHead.fp32_upcast`) hold their 16-bit and fp32 copies at once. Against
    PyTorch's peak allocation around transformers' generate on an H100 (Llama-3-8B, 512 x 64 tokens) the pair
    alone left 0.6 GB unexplained, about these two tensors."""
    best = 0.0
    for s in phase.steps:
        t = s.op.traffic("forward")
        pair = float(t.activations_read + t.activations_written) * act_bytes
        if isinstance(s.op, LogitsHead) and s.op.upcasts(act_bytes):
            pair = s.op.held_bytes(act_bytes)
        best = max(best, pair)
    residual = RESIDUAL_STREAM_TENSORS * float(phase.batch) * phase.new_tokens * hidden
    return best + residual * act_bytes


def serving_memory(cfg: DecoderConfig, prec: ServingPrecision, batch: int, prompt: int, output: int,
                   is_gpu: bool, prefill_phase: Phase, layout: Layout = ONE_GPU) -> ServingMemory:
    """One GPU's memory (of `layout.tp` tensor-parallel ones). A static cache is allocated whole for its
    length, whatever the sequences use of it."""
    tokens = layout.static_cache or prompt + output
    kv = batch * tokens * kv_cache_bytes_per_token(cfg, prec.kv_bytes, layout.tp)
    return ServingMemory(weights=weight_bytes(cfg, prec, layout), kv_cache=kv,
                         activations=activation_bytes(prefill_phase, prec.activation_bytes, cfg.hidden),
                         workspace=default_reserve_bytes(is_gpu))


def engine_kv_tokens(cfg: DecoderConfig, prec: ServingPrecision, budget_bytes: float, profile_tokens: int,
                     is_gpu: bool = True, block_tokens: int = 1) -> int:
    """Tokens of KV cache an engine that sizes its cache from a memory budget can hold: the budget less the
    weights, the activations of one forward over `profile_tokens` tokens and the workspace, in whole blocks of
    `block_tokens`. vLLM's rule (worker.determine_num_available_blocks, as its maintainers describe it in
    vllm-project/vllm#8185): profile a forward of max_num_batched_tokens (max_model_len by default), then give
    the KV cache gpu_memory_utilization x the device's total less that peak and what torch does not allocate
    (the CUDA context: here the workspace); its log prints the result as 'Maximum concurrency for N tokens per
    request' = tokens / N, the largest batch at that context."""
    ratio = prec.kv_bytes / prec.activation_bytes
    fixed = serving_memory(cfg, prec, 1, profile_tokens, 0, is_gpu, prefill(cfg, 1, profile_tokens, ratio))
    free = budget_bytes - fixed.weights - fixed.activations - fixed.workspace
    blocks = int(max(0.0, free) // (block_tokens * kv_cache_bytes_per_token(cfg, prec.kv_bytes)))
    return blocks * block_tokens


def predict_serving(cfg: DecoderConfig, profile, prec: ServingPrecision, batch: int, prompt: int, output: int,
                    runtime: str = "eager", tp: TensorParallel | None = None,
                    static_cache: int | None = None, decode_attention: str = "grouped",
                    release: TransformersRelease = CURRENT, engine: str = "none") -> ServingPrediction:
    """One request of `batch` sequences; `static_cache` is transformers' StaticCache length, which generate
    compiles the forward for (so it runs under the graph runtime); `decode_attention` the decode kernel
    (`phases.DECODE_ATTENTION`); `release` the transformers release whose eager forward runs
    (`transformers_release`); `engine` the serving engine's loop around each forward (`serving_engine`)."""
    loop = engine_loop(engine)
    if runtime not in RUNTIMES:
        raise RooflineError(f"unknown runtime '{runtime}'; choose one of {', '.join(RUNTIMES)}")
    if loop.ggml_attention and runtime != "graph":
        raise RooflineError(f"--engine {engine} runs its kernels from a C++ loop: use it with --runtime graph")
    if prec.quant_kernel != "fused" and profile.kind != "gpu":
        raise RooflineError(f"--quant-kernel {prec.quant_kernel} names a CUDA kernel; on a CPU drop it")
    if release != CURRENT and (runtime != "eager" or static_cache is not None or decode_attention != "grouped"):
        raise RooflineError(f"--transformers {release.label} prices transformers' eager generate: use it with "
                            "--runtime eager, without --static-cache or --decode-attention per-head")
    if decode_attention not in DECODE_ATTENTION:
        raise RooflineError(f"unknown --decode-attention '{decode_attention}'; choose {' or '.join(DECODE_ATTENTION)}")
    if static_cache is not None and decode_attention != "grouped":
        raise RooflineError("--static-cache is transformers' cache, read by SDPA; --decode-attention per-head is "
                            "TensorRT-LLM's kernel: give one or the other")
    if prompt < 1 or output < 1 or batch < 1:
        raise RooflineError(f"--prompt-len ({prompt}), --output-len ({output}) and --batch ({batch}) must be "
                            "positive integers")
    if prompt + output > cfg.max_positions:
        raise ConfigError(f"{cfg.name}: {prompt} prompt + {output} output tokens exceed the model's maximum "
                          f"context of {cfg.max_positions} (max_position_embeddings)")
    if static_cache is not None and (runtime != "graph" or static_cache < prompt + output):
        raise RooflineError(f"--static-cache {static_cache} needs --runtime graph (transformers compiles the "
                            f"forward for a static cache) and room for {prompt} + {output} tokens")
    c = ceilings_for(profile, prec.compute, accumulate=prec.accumulate)
    units = op_units(profile, prec, c)
    ratio = prec.kv_bytes / prec.activation_bytes
    layout = Layout(tp.gpus if tp else 1, tp.split_lm_head if tp else True, static_cache, decode_attention,
                    release, loop.ggml_attention)
    pre = prefill(cfg, batch, prompt, ratio, layout)
    dec = decode(cfg, batch, prompt + output // 2 + 1, ratio, layout)
    memory = serving_memory(cfg, prec, batch, prompt, output, c.is_gpu, pre, layout)
    reuse = memory.weights + memory.kv_cache
    return ServingPrediction(cfg.name, profile.name, batch, prompt, output, prec, runtime,
                             phase_cost(cfg, pre, prec, units, runtime, reuse, tp),
                             phase_cost(cfg, dec, prec, units, runtime, reuse, tp),
                             memory, profile.memory.capacity_bytes.value, c, tp, release, loop)


def require_fit(p: ServingPrediction) -> None:
    if not p.fits:
        per = f" per GPU of {p.gpus}" if p.gpus > 1 else ""
        raise DoesNotFit(f"{p.model} at batch {p.batch} with {p.prompt_len + p.output_len}-token sequences "
                         f"({p.precision.name} weights, {p.precision.kv_name} KV cache) needs "
                         f"{p.memory.total / 2**30:.2f} GiB{per} but {p.device} has {p.capacity_bytes / 2**30:.2f} GiB;"
                         " use a smaller --batch, shorter sequences, int8/int4 weights or more GPUs (--gpus)")

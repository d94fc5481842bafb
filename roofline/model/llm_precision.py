"""How a served language model stores its weights and KV cache, and what that costs.

Weight-only quantization (int8, int4: W8A16, W4A16) stores weights narrow and multiplies in 16-bit: every
weight read costs fewer bytes plus its group's scale and zero point, and must be dequantised in registers
before the tensor cores use it, which is vector-unit work. fp8 (W8A8, Hopper/Ada) runs the products on fp8
tensor cores. The KV cache is stored at 16 bits or fp8 independently of the weights.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.errors import RooflineError, UnknownName, did_you_mean
from roofline.hardware.schema import Profile
from roofline.model.ceilings import ACCUMULATIONS, compute_dtype_for
from roofline.workload.precision import Precision, get_precision

SCALE_BYTES = 2
"""A group's scale and its zero point are each one 16-bit number (gpt-fast's int4 scales_and_zeros,
GPTQ/AWQ's fp16 scales with packed zeros: within a few bits of this)."""

DEQUANT_FLOPS_PER_WEIGHT = {"int8": 2, "int4": 4}
"""Vector operations to turn one stored weight into a 16-bit value, from w = (q - z) * s: int8 converts and
multiplies by its channel's scale (2); int4 also shifts and masks its nibble out of a packed word (4)."""

DEFAULT_GROUP_SIZE = 128
"""Weights sharing one int4 scale and zero: 128 is GPTQ's and AWQ's default (gpt-fast also offers 32)."""

KV_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}

QUANT_KERNELS = ("fused", "tinygemm", "inductor", "convert", "mmq", "mmq-dp4a", "dequant", "matmulnbits")
"""How a weight-only int8/int4 product of more than a few rows runs (`llm_step.weight_only_cost`):
- fused: one GEMM kernel that dequantises each weight tile in registers and multiplies in 16 bits (Marlin, AWQ,
  TensorRT-LLM's weight-only kernels), priced from the weight's bytes and the dequantisation's arithmetic;
- tinygemm: PyTorch's int4 kernel (`torch._weight_int4pack_mm`: gpt-fast's and torchao's int4 weight-only path,
  at any number of rows), priced as it was measured (`llm_step.TINYGEMM_FLOP_PER_SM_CYCLE`);
- inductor: an int8 weight written `F.linear(x, w.to(x.dtype)) * scales` and compiled by torch.compile, gpt-fast's
  and torchao's int8 weight-only path: at one row with coordinate_descent_tuning (both set it) inductor turns the
  product into a multiply and a reduction into which the conversion fuses, priced as it was measured
  (`llm_step.INDUCTOR_INT8_WEIGHTS_PER_SM_CYCLE`); at more rows the conversion writes a 16-bit copy and cuBLAS
  multiplies it, priced as `dequant` below;
- convert: the same int8 weight-only product run without torch.compile, whatever the number of rows: gpt-fast's
  WeightOnlyInt8Linear (`F.linear(input, self.weight.to(dtype=input.dtype)) * self.scales`) and torchao's
  int8_weight_only (`_linear_fp_act_int8_weight_impl`: `torch.mm(x, w_vals_int8_t.to(x.dtype))`) in eager PyTorch,
  where nothing fuses the conversion into the product: every call writes a 16-bit copy of the weight, then cuBLAS
  reads it, priced as `dequant` at one row too;
- mmq: llama.cpp's quantised matrix multiplication, which quantises the activations to 8 bits as well and
  multiplies 8-bit integers (ggml-cuda/mmq.cuh), on int8 tensor cores where the GPU has them, else with dp4a:
  what its CUDA backend runs for a prompt on Turing and later GPUs since PR #8062 (2024-06) and on Pascal;
- mmq-dp4a: the same on dp4a whatever the GPU, as builds before its tensor-core kernels (mid-2024) ran it when
  forced (LLAMA_CUDA_FORCE_MMQ);
- dequant: the weights dequantised to a 16-bit copy in memory by a kernel of their own, then a cuBLAS GEMM, what
  llama.cpp runs for a prompt of 64 tokens or more on Volta, and before PR #8062 on every GPU with tensor cores
  for more than 32 (`MMQ_MAX_BATCH_SIZE`);
- matmulnbits: ONNX Runtime's CUDA MatMulNBits (onnxruntime/contrib_ops/cuda/quantization/matmul_nbits.cc and
  matmul_4bits.cu; matmul_8bits.cu's TryMatMul8Bits has the same test): one row runs TryMatMul4Bits, a
  matrix-vector kernel that dequantises in registers, which refuses any other product (`if (n %
  kColsPerThreadBlock != 0 || k % 8 != 0 || m > 1) return false;`); MatMulNBits then dequantises the whole weight
  into an fp16 buffer and calls cuBLAS, priced as `dequant` from two rows up. Later builds compiled with the
  vendored TensorRT-LLM fpA_intB kernels (USE_FPA_INTB_GEMM, Turing and later) can run those instead: `fused`
  describes them."""


HEAD_WEIGHTS = ("16-bit", "quantized")
"""How a model with quantised linear layers stores its lm_head (`--head-weights`): in the 16-bit activation type, or
like the other linear layers. Most quantisation toolchains leave it 16-bit: vLLM's GPTQ and AWQ (Marlin) configs
read `lm_head` from the checkpoint's quantization config with `default=False`
(vllm/model_executor/layers/quantization/gptq_marlin.py and awq_marlin.py, `from_config`); llm-compressor's W4A16,
W8A16 and FP8 recipes, Neural Magic's and Red Hat's checkpoints among them, pass `ignore=["lm_head"]`; NVIDIA
ModelOpt, which quantises TensorRT-LLM checkpoints, disables `*lm_head*` in its default configs; AutoGPTQ and
AutoAWQ quantise the decoder layers' linear layers only; SGLang's torchao path quantises modules named `*proj*`
only (sglang/srt/layers/torchao_utils.py, `proj_filter`). gpt-fast's and torchao's own quantisers replace every
nn.Linear, the output layer included (gpt-fast quantize.py, `replace_linear_weight_only_int8_per_channel`,
`replace_linear_int4`), and llama.cpp's quantize stores `output.weight` quantised too (Q6_K for a 4- or 5-bit file,
Q8_0 for a Q8_0 one: src/llama-quant.cpp, `llama_tensor_get_type`), priced here at the file's own type. At a
vocabulary of 128256 the difference is large: Llama-3-8B's lm_head is 525M weights, 1.05 GB at 16 bits beside
3.7 GB of int4 decoder weights."""

HEAD_QUANTISED_KERNELS = ("tinygemm", "inductor", "convert", "matmulnbits", "mmq", "mmq-dp4a")
"""Quantised-product kernels whose toolchains quantise the lm_head with the rest (`HEAD_WEIGHTS`): gpt-fast's and
torchao's (tinygemm, inductor, convert), llama.cpp's (mmq, mmq-dp4a), ONNX Runtime GenAI's builder (matmulnbits,
whose lm_head is kept here as it was priced before, not read in its code)."""


def default_head_weights(precision: str, quant_kernel: str = "fused", engine: str = "none") -> str:
    """`HEAD_WEIGHTS` as the toolchain behind `quant_kernel` and `engine` leaves it: quantised for gpt-fast's,
    torchao's, ONNX Runtime's and llama.cpp's kernels and under `--engine llama.cpp`; 16-bit for fp8 and for
    the fused and dequantise-first kernels (vLLM, TensorRT-LLM, AutoAWQ, AutoGPTQ, ExLlama, transformers)."""
    if precision == "fp8":
        return "16-bit"
    if quant_kernel in HEAD_QUANTISED_KERNELS or engine == "llama.cpp":
        return "quantized"
    return "16-bit"


KERNEL_PRECISION = {"tinygemm": "int4", "inductor": "int8", "convert": "int8"}
"""Quantised-product kernels that take weights of one precision only."""


def kernel_runs(quant_kernel: str, precision: str) -> bool:
    """Whether `quant_kernel` runs weight-only products of `precision` (tinygemm: int4 only; inductor: int8)."""
    return KERNEL_PRECISION.get(quant_kernel, precision) == precision


@dataclass(frozen=True)
class ServingPrecision:
    """Weights' storage, the dtype the products run in, and the KV cache's storage."""

    name: str
    compute: Precision
    """What activations are stored as and which tensor-core peak the products use."""
    weight_bits: int
    group_size: int
    kv_name: str
    attention: Precision
    """What attention's products run in: the compute precision, except under fp8 weights, whose attention runs
    in the 16-bit activation type. TensorRT-LLM v0.5.0 to v0.6.1 build the fused context-attention kernel in
    the plugin's type whatever the products' precision: `FusedMHARunnerV2(DATA_TYPE_FP16 or DATA_TYPE_BF16)` in
    GPTAttentionPluginCommon::initialize() (cpp/tensorrt_llm/plugins/gptAttentionCommon/gptAttentionCommon.cpp
    at tag v0.6.1, 9b3e12dbc820a8b72bcd7d712a8c9a54facf97df); an fp8 one came in v0.9.0, off by default
    (tensorrt_llm/plugin/plugin.py, `use_fp8_context_fmha: bool = False`)."""
    experts: Precision | None = None
    """A mixture of experts' weights and products in this 16-bit type instead (None: as the other products).
    TensorRT-LLM's MoE plugin up to v0.9.0 builds its CUTLASS runner only for half x half, float x float,
    bf16 x bf16 and 16-bit activations with int8/int4 weights (`MixtureOfExpertsPlugin::init`,
    cpp/tensorrt_llm/plugins/mixtureOfExperts/mixtureOfExpertsPlugin.cpp at tag v0.9.0,
    250d9c293d5edbc2a45c20775b3150b1eb68b364; tensorrt_llm/layers/moe.py keeps `weight_dtype = dtype` unless
    weight-only), so an "fp8" Mixtral engine of that release runs its experts in 16 bits."""
    quant_kernel: str = "fused"
    """Which kernel runs a weight-only product of more than a few rows (`QUANT_KERNELS`)."""
    head_weights: str = "quantized"
    """How the lm_head is stored where the linear layers are quantised (`HEAD_WEIGHTS`)."""
    accumulate: str = "fp32"
    """What the products' fp16 multiplies accumulate in (`ceilings.ACCUMULATIONS`): fp32, as PyTorch, vLLM and
    TensorRT-LLM run them, or fp16, as llama.cpp's cuBLAS path (CUBLAS_COMPUTE_16F), ExLlama (`cublasHgemm`) and
    TinyChat's W4A16 kernels do, at up to twice the rate on a GeForce board. Attention stays at fp32."""

    @property
    def weight_only(self) -> bool:
        return self.name in DEQUANT_FLOPS_PER_WEIGHT

    @property
    def linear_weight_bytes(self) -> float:
        """Bytes per weight of a quantised linear layer: the weight plus its share of the group's scale and
        zero (int4 g128: 0.5 + 2 x 2 / 128 = 0.53125; int8 per output channel: negligible, counted 1)."""
        base = self.weight_bits / 8
        if self.name == "int4":
            return base + 2 * SCALE_BYTES / self.group_size
        return base

    @property
    def activation_bytes(self) -> float:
        """Bytes per activation element between ops. fp8 serving quantises only the products' operands: the
        residual stream, norms, attention's inputs and outputs and the products' results stay 16-bit
        (TensorRT-LLM docs/source/gpt_attention.md, 'INT8/FP8 KV Caches': 'even if the rest of the network runs
        in INT8 or FP8, the GPT attention operator works with FP32, FP16, and BFloat16 inputs and outputs';
        Transformer Engine's fp8 recipe casts each GEMM's inputs and keeps its output in the higher precision).
        A product's fp8 input read is counted at 16 bits too, a surplus that a weight- or compute-bound
        product does not feel. Other precisions move activations at their compute size."""
        return max(2.0, float(self.compute.storage_bytes)) if self.name == "fp8" else float(self.compute.storage_bytes)

    @property
    def other_weight_bytes(self) -> float:
        """Embedding tables and norms stay at the 16-bit compute size: quantizers replace linear layers only."""
        return float(self.compute.storage_bytes)

    @property
    def quantised(self) -> bool:
        """Linear layers stored narrower than the activations: fp8, or weight-only int8/int4."""
        return self.name == "fp8" or self.weight_only

    @property
    def head(self) -> ServingPrecision:
        """What the lm_head is stored and multiplied in (`HEAD_WEIGHTS`): this precision, or under a 16-bit head
        the activations' 16-bit type, run as a plain 16-bit product."""
        if not self.quantised or self.head_weights == "quantized":
            return self
        return replace(self, name=self.attention.name, compute=self.attention, weight_bits=16,
                       quant_kernel="fused", head_weights="quantized")

    @property
    def kv_bytes(self) -> float:
        return float(KV_BYTES[self.kv_name])

    @property
    def dequant_flops_per_weight(self) -> int:
        return DEQUANT_FLOPS_PER_WEIGHT.get(self.name, 0)

    @property
    def expert_weight_bytes(self) -> float:
        """Bytes per expert weight: the experts' own type where they have one, else a linear layer's."""
        return float(self.experts.storage_bytes) if self.experts else self.linear_weight_bytes


SERVING_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")

EXPERT_PRECISIONS = ("bf16", "fp16")


def activation_for(profile: Profile) -> str:
    """The 16-bit type a served model's activations take on `profile`: bf16 where the device runs it, else fp16
    (a V100 or T4 has no bf16 units), else fp32."""
    return next((n for n in ("bf16", "fp16") if compute_dtype_for(get_precision(n), profile)), "fp32")


def default_precision(profile: Profile, accumulate: str = "fp32") -> str:
    """The 16-bit type served weights and activations take when none is asked for (`activation_for`), fp16 where
    the products accumulate in fp16: only fp16 multiplies do (`ServingPrecision.accumulate`)."""
    return "fp16" if accumulate == "fp16" else activation_for(profile)


def serving_precision(name: str, kv: str | None = None, group_size: int = DEFAULT_GROUP_SIZE,
                      activation: str = "bf16", experts: str | None = None,
                      quant_kernel: str = "fused", accumulate: str = "fp32", head_weights: str | None = None,
                      engine: str = "none") -> ServingPrecision:
    """`--precision` (bf16, fp16, fp8, int8, int4, fp32), `--kv-precision` (fp16, bf16, fp8),
    `--expert-precision` (bf16, fp16: a mixture of experts' weights and products, `ServingPrecision.experts`),
    `--quant-kernel` (`QUANT_KERNELS`) and `--accumulate` (`ServingPrecision.accumulate`) as served. Weight-only
    int8/int4 compute in `activation` (bf16 unless the device lacks it; fp16 when the products accumulate in
    fp16, which only fp16 multiplies do), and fp8's attention runs in it (`ServingPrecision.attention`).
    `--head-weights` (`HEAD_WEIGHTS`; None: as the toolchain behind `quant_kernel` and `engine` leaves it,
    `default_head_weights`)."""
    key = name.strip().lower()
    if key not in SERVING_PRECISIONS:
        raise UnknownName(f"unknown serving precision '{name}'{did_you_mean(key, list(SERVING_PRECISIONS))}; "
                          f"choose one of {', '.join(SERVING_PRECISIONS)}")
    if quant_kernel not in QUANT_KERNELS:
        raise UnknownName(f"unknown --quant-kernel '{quant_kernel}'; choose one of {', '.join(QUANT_KERNELS)}")
    if quant_kernel != "fused" and key not in DEQUANT_FLOPS_PER_WEIGHT:
        raise RooflineError(f"--quant-kernel {quant_kernel} runs weight-only int8/int4 products; "
                            f"--precision {key} has none")
    if not kernel_runs(quant_kernel, key):
        raise RooflineError(f"--quant-kernel {quant_kernel} runs {KERNEL_PRECISION[quant_kernel]} weights; use "
                            f"--precision {KERNEL_PRECISION[quant_kernel]}, not {key}")
    if group_size < 1:
        raise RooflineError(f"--group-size must be a positive integer, got {group_size}")
    if accumulate not in ACCUMULATIONS:
        raise UnknownName(f"unknown --accumulate '{accumulate}'; choose {' or '.join(ACCUMULATIONS)}")
    if accumulate == "fp16":
        if key not in ("fp16", "int8", "int4"):
            raise RooflineError(f"--accumulate fp16 multiplies fp16 operands; --precision {key}'s products accumulate "
                                "in fp32 on NVIDIA tensor cores: use --precision fp16, int8 or int4")
        activation = "fp16"
    compute = get_precision(activation if key in ("int8", "int4") else key)
    kv_key = (kv or ("fp16" if compute.storage_bytes <= 2 else "fp32")).strip().lower()
    if kv_key not in KV_BYTES:
        raise UnknownName(f"unknown KV cache precision '{kv}'; choose one of {', '.join(KV_BYTES)}")
    bits = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}[key]
    attention = get_precision(activation) if key == "fp8" else compute
    expert = None
    if experts is not None:
        e_key = experts.strip().lower()
        if e_key not in EXPERT_PRECISIONS:
            raise UnknownName(f"unknown expert precision '{experts}'; choose one of {', '.join(EXPERT_PRECISIONS)}")
        expert = get_precision(e_key)
    head = head_weights if head_weights is not None else default_head_weights(key, quant_kernel, engine)
    if head not in HEAD_WEIGHTS:
        raise UnknownName(f"unknown --head-weights '{head_weights}'; choose {' or '.join(HEAD_WEIGHTS)}")
    return ServingPrecision(key, compute, bits, group_size, kv_key, attention, expert, quant_kernel, head,
                            accumulate)


"""Ops of a language model served token by token: attention over a KV cache with grouped KV heads, and a
mixture-of-experts layer that reads only the experts its tokens are routed to."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from roofline.workload.ops._shape import positive
from roofline.workload.ops.attention import Attention
from roofline.workload.ops.base import GemmView, Num, Op, Traffic
from roofline.workload.ops.gemm import Linear

KV_BLOCK = 64
"""Keys a FlashAttention kernel loads per block (FlashAttention-2, Dao 2023, section 3: blocks of 64 or 128
keys): the last block is computed whole and masked, so the key length is padded to a multiple of it, which
also keeps the products' depth aligned for the tensor cores whatever the context length."""


@dataclass
class CachedAttention(Attention):
    """`seq_q` new tokens per sequence attend over `seq_kv` cached ones (the new ones included), with
    `kv_heads` key/value heads shared by groups of heads / kv_heads query heads (GQA; MQA at 1).

    Prefill is seq_q = seq_kv = P, causal; decode is seq_q = 1 over seq_kv = context. FLOPs are those of
    `Attention` (4 b h kept d plus the softmax). Traffic: Q read, O written, and the cache: K and V of
    kv_heads read once per (sequence, KV head) and the new tokens' K and V appended. The cache may be stored
    in a narrower dtype than activations (fp8 KV): `kv_element_ratio` is kv bytes / activation bytes, so the
    cache's bytes enter the activation traffic at their own size. `kv_repeated`: K and V reach the kernel
    already copied out to every query head (`RepeatKV` before it), so it reads `heads` copies while the cache
    still stores, and appends, `kv_heads`.
    """

    kv_heads: int = 1
    kv_element_ratio: float = 1.0
    kv_repeated: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        positive(kv_heads=self.kv_heads)
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.kv_heads} KV heads do not divide {self.heads} query heads")

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @property
    def scores(self) -> Num:
        """Score entries computed over every (sequence, head): what a kernel that writes them out moves."""
        return self.pairs * self.kept

    def gemm_views(self, pass_: str) -> list[GemmView]:
        """Per (sequence, KV head): the group's query rows against the shared K, then P against V."""
        if pass_ != "forward":
            return []
        group = 1 if self.kv_repeated else self.group
        rows = math.ceil(self.kept / self.seq_kv) * group
        keys = math.ceil(self.seq_kv / KV_BLOCK) * KV_BLOCK
        depth = math.ceil(math.ceil(self.kept / self.seq_q) / KV_BLOCK) * KV_BLOCK
        pairs = self.batch * (self.heads // group)
        return [GemmView(rows, keys, self.head_dim, pairs),
                GemmView(self.seq_q * group, self.head_dim, depth, pairs)]

    def traffic(self, pass_: str) -> Traffic:
        if pass_ != "forward":
            return Traffic()
        q = self.batch * self.heads * self.seq_q * self.head_dim
        read_heads = self.heads if self.kv_repeated else self.kv_heads
        cache = 2 * self.batch * read_heads * self.seq_kv * self.head_dim * self.kv_element_ratio
        appended = 2 * self.batch * self.kv_heads * self.seq_q * self.head_dim * self.kv_element_ratio
        return Traffic(activations_read=q + cache, activations_written=q + appended)

    def cache_bytes_read(self, kv_bytes: float) -> Num:
        """Bytes of K and V this pass reads from the cache."""
        return 2 * self.batch * self.kv_heads * self.seq_kv * self.head_dim * kv_bytes

    def shapes(self) -> str:
        repeated = f", repeated to {self.heads}" if self.kv_repeated and self.group > 1 else ""
        return (f"{self.batch}x{self.heads}x{self.seq_q}x{self.head_dim} over {self.seq_kv} cached "
                f"({self.kv_heads} KV heads{repeated}){', causal' if self.causal else ''}")


@dataclass
class EagerCachedAttention(CachedAttention):
    """Attention over the cache as transformers' eager implementation runs it (the default for Llama-style
    models before v4.36, `attn_implementation="eager"` after; LlamaAttention.forward, v4.35): Q K^T written to
    memory, divided by sqrt(head_dim), the (batch, 1, new, cached) mask added, softmax in fp32 cast back to the
    activations' type, then P V. Every score of the square is computed (the causal mask is an added tensor,
    not a skipped block), so build it with `causal=False`. Its products are this op's FLOPs and GEMM views; the
    score passes between them are the eager runtime's own (`phases.unfused_bytes`), as each is a kernel that
    reads and writes the whole (batch, heads, new, cached) tensor."""


GGML_SCORE_BYTES = 20
"""Bytes per attention score that llama.cpp's attention without flash attention moves between its kernels, read
in llama.cpp's llm_build_kqv and ggml-cuda.cu (ggml_cuda_mul_mat_batched_cublas): Q K^T is written in fp32 (the
graph sets GGML_PREC_F32 on kq: 4), ggml_soft_max_ext reads it and writes the probabilities in fp32, the scale and
the mask folded in (4 + 4), the product with V converts them to fp16 for cuBLAS (4 read, 2 written) and reads
that copy (2). Builds whose kq product wrote fp16 and converted it to fp32 afterwards moved 4 bytes more."""
GGML_UBATCH = 512
"""Prompt tokens llama.cpp evaluates per graph: `n_ubatch`, 512 by default (llama-bench and llama-cli; before the
micro-batch split of March 2024, `n_batch`, also 512 by default)."""
GGML_KV_PAD = 256
"""Cache cells attention spans, rounded up: `n_kv` is the highest cell in use padded to 256 (32 in builds
before flash attention was added, April 2024), and every span is computed whole, the causal mask an added
tensor."""


@dataclass
class GgmlAttention(CachedAttention):
    """Attention as llama.cpp runs it without flash attention (its llama-bench default until 2025): per
    micro-batch of `ubatch` prompt tokens, Q K^T over every cache cell so far (`kv_pad`-rounded) written to
    memory, a softmax kernel, then P V, each a kernel of its own (`GGML_SCORE_BYTES` per score between them) whatever
    launches them, so the prompt's attention traffic grows with the square of its length where a fused kernel's
    does not. K and V heads are broadcast by the batched product, not copied (GQA). Build it with
    `causal=False`: the mask is an added tensor."""

    ubatch: int = GGML_UBATCH
    kv_pad: int = GGML_KV_PAD

    @property
    def kept(self) -> int:
        """Scores per (sequence, head): each micro-batch's new tokens against every cell up to its last one."""
        done = self.seq_kv - self.seq_q
        total = 0
        for start in range(0, self.seq_q, self.ubatch):
            new = min(self.ubatch, self.seq_q - start)
            span = done + start + new
            total += new * min(self.seq_kv, -(-span // self.kv_pad) * self.kv_pad)
        return total

    def score_bytes(self) -> float:
        """Bytes the kernels between Q K^T and P V move (`GGML_SCORE_BYTES` per score)."""
        return float(self.scores) * GGML_SCORE_BYTES


@dataclass
class MaskedMultiheadAttention(CachedAttention):
    """Decode attention as TensorRT-LLM's masked multi-head attention kernel runs it, the generation kernel of
    v0.5.0 to v0.6.1 (its grouped-query XQA kernels arrived in v0.7.0). Read at tag v0.6.1
    (9b3e12dbc820a8b72bcd7d712a8c9a54facf97df), cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/:

    - the launch grid is (query heads, sequences) (decoderMaskedMultiheadAttentionLaunch.h,
      `dim3 grid{num_heads, batch_size, 1}`), one thread block per query head of a sequence; the block's KV
      head is `hi_kv = hi / qhead_per_kv` and it loads that head's K and V over the whole context
      (decoderMaskedMultiheadAttentionTemplate.h), so under GQA each KV head is loaded once per query head of
      its group (8 times for Llama-2-70B at any tensor-parallel degree), where a grouped kernel loads it once;
    - Q.K and P.V are fused multiply-adds on the CUDA cores accumulating in fp32 (`MMHA_USE_HMMA` is commented
      out, `MMHA_USE_FP32_ACCUM_FOR_FMA` defined): no tensor-core products, so no GEMM views.

    The loads are priced like any other bytes of the op, at the level holding its working set (DRAM for a
    served KV cache): not an assumption the code settles. NVIDIA measured the difference on one H200: Llama-2-70B
    fp8, 128 in / 2048 out, batch 192, 1227 tok/s with this kernel and 2941 with XQA (docs/source/blogs/
    XQA-kernel.md, Falcon180B-H200.md), which the test of this op compares with."""

    def gemm_views(self, pass_: str) -> list[GemmView]:
        return []

    def traffic(self, pass_: str) -> Traffic:
        if pass_ != "forward":
            return Traffic()
        grouped = super().traffic(pass_)
        reloads = (self.group - 1) * self.cache_bytes_read(self.kv_element_ratio)
        return Traffic(activations_read=grouped.activations_read + reloads,
                       activations_written=grouped.activations_written)

    def shapes(self) -> str:
        return f"{super().shapes()}, each KV head loaded by its {self.group} query heads' blocks"


@dataclass
class LogitsHead(Linear):
    """The lm_head, over the last position of each sequence or, as transformers before v4.45 ran it in
    generate, over every prompt position (`tokens`); `fp32_upcast`: its output then upcast by a kernel of its
    own (`logits.float()`), which reads the 16-bit logits and writes them in fp32 (`llm_step.upcast_cost`)."""

    fp32_upcast: bool = False

    def upcasts(self, act_bytes: float) -> bool:
        """Whether the upcast runs: `.float()` on logits already in fp32 launches nothing."""
        return self.fp32_upcast and act_bytes < 4

    def held_bytes(self, act_bytes: float) -> float:
        """The logits' bytes held at once: the lm_head's output, and its fp32 copy beside it while it is made."""
        return float(self.rows) * self.out_features * (act_bytes + (4 if self.upcasts(act_bytes) else 0))


@dataclass
class RepeatKV(Op):
    """transformers' `repeat_kv` materialised: K and V of `kv_heads` heads copied out to all `heads` query heads
    over `seq` cached positions (expand + reshape, a copy when the result feeds an attention kernel that takes
    no grouped heads: SDPA under an attention mask, sdpa_attention.py's `use_gqa_in_sdpa`). Reads the cache
    once, writes it `heads / kv_heads` times, at the cache's element size (`kv_element_ratio`)."""

    batch: Num
    heads: int
    kv_heads: int
    seq: Num
    head_dim: int
    kv_element_ratio: float = 1.0
    kind: str = field(init=False, default="copy")

    def flops(self, pass_: str) -> Num:
        return 0

    def traffic(self, pass_: str) -> Traffic:
        if pass_ != "forward":
            return Traffic()
        per_head = 2 * self.batch * self.seq * self.head_dim * self.kv_element_ratio
        return Traffic(activations_read=per_head * self.kv_heads, activations_written=per_head * self.heads)

    def output_elements(self) -> Num:
        return 2 * self.batch * self.heads * self.seq * self.head_dim

    def shapes(self) -> str:
        return f"K, V of {self.batch}x{self.kv_heads}x{self.seq}x{self.head_dim} -> {self.heads} heads"


def expected_distinct_experts(tokens: float, experts: int, top_k: int) -> float:
    """Experts at least one of `tokens` tokens is routed to, each token choosing top_k distinct experts out
    of `experts` uniformly: an expert is missed by one token with probability 1 - k/E, by all with
    (1 - k/E)^T, so E (1 - (1 - k/E)^T) are read. At T = 1 that is k; it approaches E as T grows.
    Real routers are not uniform; this is the balanced-load case their auxiliary losses aim for."""
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


@dataclass
class ExpertLinear(Linear):
    """One projection of a mixture-of-experts MLP: `experts` weight matrices, of which `experts_used` are read
    (`expected_distinct_experts`); the batch's routed rows (rows x top_k) are split evenly among them.
    Parameters count all experts; weight traffic only the ones used."""

    experts: int = 1
    top_k: int = 1
    experts_used: float = 1.0
    kind: str = field(init=False, default="gemm")

    @property
    def routed_rows(self) -> Num:
        return self.rows * self.top_k

    def gemm_views(self, pass_: str) -> list[GemmView]:
        if pass_ != "forward":
            return []
        per_expert = max(1, math.ceil(self.routed_rows / self.experts_used))
        return [GemmView(per_expert, self.out_features, self.in_features, math.ceil(self.experts_used))]

    def flops(self, pass_: str) -> Num:
        return 2 * self.routed_rows * self.in_features * self.out_features if pass_ == "forward" else 0

    def traffic(self, pass_: str) -> Traffic:
        if pass_ != "forward":
            return Traffic()
        return Traffic(activations_read=self.routed_rows * self.in_features,
                       activations_written=self.routed_rows * self.out_features,
                       weights_read=self.experts_used * self.in_features * self.out_features)

    def params(self) -> Num:
        return self.experts * self.in_features * self.out_features

    def param_sizes(self) -> list[Num]:
        return [self.params()]

    def shapes(self) -> str:
        return (f"{self.rows} tokens x top-{self.top_k} over {self.experts_used:.2f} of {self.experts} experts: "
                f"{self.in_features} -> {self.out_features}")

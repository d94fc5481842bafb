"""The two phases of generation as op lists in the IR, one decoder layer's ops with a repeat count.

Prefill runs the prompt (P tokens per sequence) through every layer at once: GEMMs with B x P rows and causal
attention over P keys. Decode runs one new token per sequence: the same projections with B rows (GEMV-shaped
at small B: every weight is read to do 2 FLOPs per weight per sequence) and attention that reads the KV cache
of the context so far. Ops are those Hugging Face's Llama / GPT-2 modules run in eager mode: separate q, k, v
projections, rotary embedding on q and k, norms, residual adds, the gated (SwiGLU) or plain MLP. The lm_head
runs on the last position only (transformers' generate keeps one position's logits), followed by the
argmax that picks the next token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline.workload.llm.config import ConfigError, DecoderConfig
from roofline.workload.llm.transformers_release import CURRENT, TransformersRelease
from roofline.workload.ops.attention import Embedding
from roofline.workload.ops.base import Op
from roofline.workload.ops.gemm import Linear
from roofline.workload.ops.norm import LayerNorm
from roofline.workload.ops.pointwise import Activation, Elementwise, Reduce
from roofline.workload.ops.serving import (
    CachedAttention,
    EagerCachedAttention,
    ExpertLinear,
    GgmlAttention,
    LogitsHead,
    MaskedMultiheadAttention,
    RepeatKV,
    expected_distinct_experts,
)

RMSNORM_KERNELS = 8
"""transformers' LlamaRMSNorm.forward (v5.17, read here): to(float32), pow, mean, add eps, rsqrt, mul,
to(input dtype), mul weight; the two casts are no-ops (`FP32_NOOP_CASTS`) when the model runs in fp32."""
FP32_NOOP_CASTS = 2
ROPE_KERNELS = 5
"""apply_rotary_pos_emb, per tensor: x * cos, rotate_half's neg and cat, * sin, add."""
CACHED_ATTENTION_KERNELS = 4
"""DynamicCache.update appends K and V (two cats), SDPA, and the output made contiguous for o_proj."""
EAGER_ATTENTION_KERNELS = 9
"""The same with eager attention (LlamaAttention.forward, transformers 4.35) in place of SDPA: the two cats,
matmul(Q, K^T), the division by sqrt(head_dim), the mask's add, softmax in fp32, the cast back (a no-op in fp32),
matmul(P, V), the output made contiguous; dropout at p = 0 outside training launches nothing."""
EAGER_SCORE_PASS_BYTES = 9
"""Activation-sized bytes per attention score eager attention moves beyond its products' operands: the scores
written (1), divided by sqrt(head_dim) (read and written: 2), the mask added (the scores and the broadcast mask
read, the sum written: 3), softmax's read (1) and its fp32 output cast back (written: 1), the probabilities read
by P V (1)."""
EAGER_SCORE_FP32_BYTES = 8
"""And in fp32 per score when activations are 16-bit: softmax writes its result in fp32 (dtype=torch.float32)
and the cast back reads it: 4 + 4 bytes."""
GELU_NEW_KERNELS = 8
"""GPT-2's gelu_new, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): pow, mul, add, mul, tanh, add, mul, mul."""
LLAMA_ATTENTION_VIEWS = 14
"""Tensor calls of LlamaAttention.forward (with sdpa_attention_forward) that launch no kernel but go through
Python and the dispatcher: q, k, v `.view(...).transpose(1, 2)` (6), apply_rotary_pos_emb's two `unsqueeze`,
rotate_half's two slices for q and for k (4), the output's `.transpose(1, 2)` and `.reshape` (2)."""
GPT2_ATTENTION_VIEWS = 9
"""GPT2Attention.forward: c_attn's output `.split` (1), q, k, v `.view(...).transpose(1, 2)` (6), the output's
`.transpose(1, 2)` and `.reshape` (2)."""
RMSNORM_FP32_PASS_BYTES = 20
"""Bytes per element LlamaRMSNorm's fp32 kernels move, beyond the one read and one write a fused norm does:
pow(2) reads and writes fp32 (8), mean(-1) reads it (4), the multiply by rsqrt reads and writes fp32 (8)."""
ROPE_EXTRA_PASSES = 6
"""apply_rotary_pos_emb per element of q or k, in elements read + written: x * cos (2), rotate_half's neg of
one half (1) and cat (2), * sin (2), the add (3) = 10, against the 4 of one fused kernel (x, cos, sin read at
the op's charge, out written): 6 more."""


@dataclass(frozen=True)
class Step:
    """One op of a phase, how many times the phase runs it (once per layer for a layer's ops), how many
    kernels eager transformers launches for it (`fp32_noop` of them vanish when the model runs in fp32), and
    how many of its tensor calls launch none (views: `views`)."""

    op: Op
    repeat: int
    kernels: int = 1
    fp32_noop: int = 0
    views: int = 0


DECODE_ATTENTION = ("grouped", "per-head")
"""Decode attention kernels: 'grouped' loads each KV head once for all the query heads sharing it (FlashAttention
and PyTorch's SDPA with grouped heads, TensorRT-LLM's XQA); 'per-head' runs one thread block per query head,
each loading its KV head (TensorRT-LLM v0.5.0 to v0.6.1: `MaskedMultiheadAttention`)."""


@dataclass(frozen=True)
class Layout:
    """How a runtime lays one copy of the model out: over `tp` tensor-parallel ranks, with the lm_head split by
    vocabulary (its logits gathered) or whole on every rank (gpt-fast's tp.py shards only attention and the
    MLP), and the KV cache grown token by token (None) or allocated whole for `static_cache` tokens
    (transformers' StaticCache), which attention then reads whole every step; and which kernel runs decode
    attention (`DECODE_ATTENTION`)."""

    tp: int = 1
    split_lm_head: bool = True
    static_cache: int | None = None
    decode_attention: str = "grouped"
    release: TransformersRelease = CURRENT
    """Which transformers release's forward the eager runtime runs (`transformers_release`)."""
    ggml_attention: bool = False
    """Attention as llama.cpp runs it without flash attention: the scores in memory (`GgmlAttention`)."""


ONE_GPU = Layout()


@dataclass(frozen=True)
class Phase:
    """A forward pass of the model over `new_tokens` per sequence with `context` tokens cached after it."""

    name: str
    batch: int
    new_tokens: int
    context: int
    steps: tuple[Step, ...]

    def flops(self) -> float:
        return float(sum(s.op.flops("forward") * s.repeat for s in self.steps))


def tensor_parallel_heads(cfg: DecoderConfig, tp: int) -> tuple[int, int]:
    """(query heads, KV heads) one of `tp` tensor-parallel ranks holds (Megatron-LM splits attention by heads).
    KV heads fewer than the ranks are replicated, one per rank (as TensorRT-LLM and vLLM do for GQA); the heads,
    the KV heads (or the ranks, when there are fewer KV heads) and the MLP's width must divide evenly."""
    if not isinstance(tp, int) or tp < 1:
        raise ConfigError(f"--gpus must be a positive integer, got {tp!r}")
    if cfg.heads % tp:
        raise ConfigError(f"{cfg.name}: {cfg.heads} attention heads do not divide over {tp} tensor-parallel GPUs")
    if cfg.kv_heads % tp and tp % cfg.kv_heads:
        raise ConfigError(f"{cfg.name}: {cfg.kv_heads} key/value heads neither divide over nor replicate onto "
                          f"{tp} tensor-parallel GPUs")
    if cfg.intermediate % tp:
        raise ConfigError(f"{cfg.name}: the MLP width {cfg.intermediate} does not divide over {tp} "
                          "tensor-parallel GPUs")
    return cfg.heads // tp, max(1, cfg.kv_heads // tp)


def weight_layout(cfg: DecoderConfig) -> str:
    """How the model stores its layers' weights: GPT-2's Conv1D keeps (in, out) and computes
    addmm(bias, x, weight) (transformers' pytorch_utils.Conv1D); every other family here uses nn.Linear's
    (out, in). Its LM head is an nn.Linear in both."""
    return "in_out" if cfg.learned_positions else "out_in"


def _mlp(cfg: DecoderConfig, batch: int, tokens: int, tp: int = 1) -> list[Op]:
    """The MLP of one of `tp` ranks: the first matrices split by columns, the last by rows (Megatron-LM)."""
    rows = batch * tokens
    h, i = cfg.hidden, cfg.intermediate // tp
    if cfg.experts > 1:
        used = min(float(cfg.experts), expected_distinct_experts(rows, cfg.experts, cfg.top_k))
        def proj(name: str, a: int, b: int) -> ExpertLinear:
            return ExpertLinear(name, batch=batch, in_features=a, out_features=b, bias=False, tokens=tokens,
                                experts=cfg.experts, top_k=cfg.top_k, experts_used=used)
        routed = rows * cfg.top_k * i
        return [Linear("mlp.router", batch=batch, in_features=h, out_features=cfg.experts, bias=False,
                       tokens=tokens),
                proj("mlp.experts.gate", h, i), proj("mlp.experts.up", h, i),
                Activation("mlp.act", numel=routed, fn="silu"),
                Elementwise("mlp.gate_mul", numel=routed, inputs=2, op="mul"),
                proj("mlp.experts.down", i, h),
                Elementwise("mlp.combine", numel=rows * cfg.top_k * h, inputs=2, op="mul")]
    if cfg.gated_mlp:
        return [Linear("mlp.gate", batch=batch, in_features=h, out_features=i, bias=cfg.bias, tokens=tokens),
                Linear("mlp.up", batch=batch, in_features=h, out_features=i, bias=cfg.bias, tokens=tokens),
                Activation("mlp.act", numel=rows * i, fn="silu"),
                Elementwise("mlp.gate_mul", numel=rows * i, inputs=2, op="mul"),
                Linear("mlp.down", batch=batch, in_features=i, out_features=h, bias=cfg.bias, tokens=tokens)]
    stored = weight_layout(cfg)
    return [Linear("mlp.fc", batch=batch, in_features=h, out_features=i, bias=cfg.bias, tokens=tokens,
                   weight_layout=stored),
            Activation("mlp.act", numel=rows * i, fn="gelu"),
            Linear("mlp.proj", batch=batch, in_features=i, out_features=h, bias=cfg.bias, tokens=tokens,
                   weight_layout=stored)]


def eager_kernels(cfg: DecoderConfig, op: Op) -> tuple[int, int, int]:
    """(kernels, of which no-ops in fp32, views) eager transformers runs for `op` of this architecture; the
    attention step carries its layer's views."""
    if isinstance(op, LayerNorm):
        return (1, 0, 0) if cfg.layer_norm else (RMSNORM_KERNELS, FP32_NOOP_CASTS, 0)
    views = GPT2_ATTENTION_VIEWS if cfg.learned_positions else LLAMA_ATTENTION_VIEWS
    if isinstance(op, EagerCachedAttention):
        return EAGER_ATTENTION_KERNELS + int(_copies_value(op)), 1, views
    if isinstance(op, CachedAttention):
        return CACHED_ATTENTION_KERNELS, 0, views
    if isinstance(op, RepeatKV):
        return 2, 0, 0
    if op.name.startswith("attn.rope"):
        return ROPE_KERNELS, 0, 0
    if isinstance(op, Activation) and op.fn == "gelu" and cfg.learned_positions:
        return GELU_NEW_KERNELS, 0, 0
    return 1, 0, 0


FUSED_QKV_PARTNERS = ("attn.k_proj", "attn.v_proj")
"""Projections a fused-module engine computes in the q projection's call: one quantised linear layer over the
concatenated q, k, v weights (TinyChat's and AutoAWQ's `qkv_proj`)."""
FUSED_IN_ATTENTION = ("attn.rope_q", "attn.rope_k")
"""Ops the engine's decode attention kernel does itself: FasterTransformer's masked multi-head attention, which
TinyChat and AutoAWQ call (`single_query_attention`), rotates q and k and writes the new K and V into the cache."""
FUSED_ATTENTION_VIEWS = 8
"""Tensor calls around the engine's attention that launch no kernel (TinyChat 2.0, mit-han-lab/llm-awq@e4bdec27,
tinychat/modules/fused_attn.py): the qkv output's view, three slices and three views for q, k, v, the output's
reshape."""
FUSED_NORM_VIEWS = 1
"""The output buffer each fused RMSNorm allocates before its kernel writes it (`torch.empty_like`, TinyChat 2.0
tinychat/models/llama.py)."""


def fused_kernels(op: Op) -> tuple[int, int]:
    """(kernels, views) an engine of fused modules called from Python runs for `op`, as TinyChat 2.0 and
    AutoAWQ 0.1.6's GEMV modules run a decode layer, read in their code (12 kernels and 10 tensor calls a
    Llama layer: two RMSNorms, the qkv, o, gate, up and down products, the attention kernel, SiLU, the gate's
    multiply, two residual adds): every op of the IR one kernel, except the k and v projections
    (`FUSED_QKV_PARTNERS`) and the rotary embedding (`FUSED_IN_ATTENTION`), which other kernels do. AutoAWQ's
    GEMM modules add a split-K reduction to each product (17 a layer) and ExLlama v1 launches 19; those
    differences are not priced, nor are the layer's six nn.Module calls (no figure measures a bare module call)."""
    if op.name in FUSED_QKV_PARTNERS or op.name in FUSED_IN_ATTENTION:
        return 0, 0
    if isinstance(op, LayerNorm):
        return 1, FUSED_NORM_VIEWS
    if isinstance(op, CachedAttention):
        return 1, FUSED_ATTENTION_VIEWS
    return 1, 0


def unfused_bytes(cfg: DecoderConfig, op: Op, act_bytes: float, kv_bytes: float) -> float:
    """Bytes eager transformers moves for `op` beyond the op's own (fused) traffic: each of its kernels is
    its own pass over memory (modeling_llama.py and cache_utils.py, transformers 5.17, read here).

    - RMSNorm: the fp32 passes (`RMSNORM_FP32_PASS_BYTES`) and, in 16-bit, the cast to fp32 and back
      (a + 4 and 4 + a bytes per element).
    - Rotary embedding: `ROPE_EXTRA_PASSES` activation elements per element of q or k.
    - Attention over a DynamicCache: `DynamicLayer.update` is torch.cat([cache, new]) for K and V, which
      reads the old cache and writes it again with the new tokens (the op already charges the new tokens'
      write), and the output's `.transpose(1, 2).contiguous()` reads and writes it once more.
    - Eager attention (`EagerCachedAttention`): its score passes (`EAGER_SCORE_PASS_BYTES`,
      `EAGER_SCORE_FP32_BYTES`) and, over a prompt, the copy of V (`_copies_value`).
    A compiled or graph-captured runtime fuses these (TensorRT-LLM's kernels, torch.compile); eager does not.
    """
    if isinstance(op, LayerNorm) and not cfg.layer_norm:
        casts = 8 + 2 * act_bytes if act_bytes < 4 else 0
        return float(op.rows) * op.features * (RMSNORM_FP32_PASS_BYTES + casts)
    if op.name.startswith("attn.rope") and isinstance(op, Elementwise):
        return float(op.numel) * ROPE_EXTRA_PASSES * act_bytes
    if isinstance(op, CachedAttention):
        old = op.seq_kv - op.seq_q
        cat = 2 * 2 * float(op.batch) * op.kv_heads * old * op.head_dim * kv_bytes
        out = 2 * float(op.batch) * op.heads * op.seq_q * op.head_dim * act_bytes
        if not isinstance(op, EagerCachedAttention):
            return cat + out
        scores = float(op.scores) * (EAGER_SCORE_PASS_BYTES * act_bytes
                                     + (EAGER_SCORE_FP32_BYTES if act_bytes < 4 else 0))
        v_copy = 2 * float(op.batch) * op.heads * op.seq_kv * op.head_dim * act_bytes if _copies_value(op) else 0
        return cat + out + scores + v_copy
    return 0.0


def _copies_value(op: CachedAttention) -> bool:
    """Whether eager attention's P V copies V first: over the prompt, V is the projection's output viewed as
    (batch, heads, tokens, dim), whose batch and head strides torch.matmul cannot merge (it copies it, as
    `eager_attention_ops` says); a decode step's V comes out of the cache's torch.cat, and a repeated one out of
    repeat_kv's reshape, both contiguous."""
    return op.seq_q > 1 and not (op.kv_repeated and op.group > 1)


def _attention(cfg: DecoderConfig, batch: int, tokens: int, context: int, kv_element_ratio: float,
               heads: int, kv_heads: int, layout: Layout) -> list[Op]:
    """Attention over the cache. A static cache (transformers' StaticCache) is read whole, all `static_cache`
    positions with the unfilled ones masked, and a mask keeps SDPA from taking grouped KV heads, so grouped
    heads are first copied out to every query head (`RepeatKV`). Decode (one new token) runs the layout's
    decode-attention kernel; the prompt runs the fused context kernel; llama.cpp without flash attention runs
    both as its own kernels with the scores in memory (`GgmlAttention`)."""
    static_cache = layout.static_cache
    if static_cache is None and layout.ggml_attention:
        return [GgmlAttention("attn.sdpa", batch=batch, heads=heads, seq_q=tokens, seq_kv=context,
                              head_dim=cfg.head_dim, causal=False, kv_heads=kv_heads,
                              kv_element_ratio=kv_element_ratio)]
    if static_cache is None:
        release = layout.release
        repeated = release.repeat_kv and heads != kv_heads
        repeat_ops = _repeat_kv(cfg, batch, heads, kv_heads, context, kv_element_ratio) if repeated else []
        if release.eager_attention:
            return [*repeat_ops, EagerCachedAttention(
                "attn.sdpa", batch=batch, heads=heads, seq_q=tokens, seq_kv=context, head_dim=cfg.head_dim,
                causal=False, kv_heads=kv_heads, kv_element_ratio=kv_element_ratio, kv_repeated=repeated)]
        kernel = (MaskedMultiheadAttention if tokens == 1 and layout.decode_attention == "per-head"
                  else CachedAttention)
        return [*repeat_ops, kernel("attn.sdpa", batch=batch, heads=heads, seq_q=tokens, seq_kv=context,
                                    head_dim=cfg.head_dim, causal=tokens != 1, kv_heads=kv_heads,
                                    kv_element_ratio=kv_element_ratio, kv_repeated=repeated)]
    repeat = _repeat_kv(cfg, batch, heads, kv_heads, static_cache, kv_element_ratio) if heads != kv_heads else []
    return [*repeat, CachedAttention("attn.sdpa", batch=batch, heads=heads, seq_q=tokens, seq_kv=static_cache,
                                     head_dim=cfg.head_dim, causal=False, kv_heads=heads,
                                     kv_element_ratio=kv_element_ratio)]


def _repeat_kv(cfg: DecoderConfig, batch: int, heads: int, kv_heads: int, seq: int,
               kv_element_ratio: float) -> list[Op]:
    """`repeat_kv` over `seq` cached positions, as one op."""
    return [RepeatKV("attn.repeat_kv", batch=batch, heads=heads, kv_heads=kv_heads, seq=seq, head_dim=cfg.head_dim,
                     kv_element_ratio=kv_element_ratio)]


def layer_ops(cfg: DecoderConfig, batch: int, tokens: int, context: int, kv_element_ratio: float,
              layout: Layout = ONE_GPU) -> list[Op]:
    """One decoder layer over `tokens` new tokens per sequence attending to `context` (new ones included), as
    one of `layout.tp` tensor-parallel ranks runs it: its heads' q, k, v and o columns and rows, its share of
    the MLP; norms and residual adds are replicated. GPT-2 projects q, k and v with one fused layer (c_attn);
    Llama-style models with three."""
    rows = batch * tokens
    tp = layout.tp
    heads, kv_heads = tensor_parallel_heads(cfg, tp)
    h, q, kv = cfg.hidden, heads * cfg.head_dim, kv_heads * cfg.head_dim
    qkv_bias = cfg.bias or cfg.qkv_bias
    ops: list[Op] = [LayerNorm("attn.norm", rows=rows, features=h)]
    if cfg.learned_positions:
        ops.append(Linear("attn.c_attn", batch=batch, in_features=h, out_features=q + 2 * kv, bias=qkv_bias,
                          tokens=tokens, weight_layout=weight_layout(cfg)))
    else:
        ops += [
            Linear("attn.q_proj", batch=batch, in_features=h, out_features=q, bias=qkv_bias, tokens=tokens),
            Linear("attn.k_proj", batch=batch, in_features=h, out_features=kv, bias=qkv_bias, tokens=tokens),
            Linear("attn.v_proj", batch=batch, in_features=h, out_features=kv, bias=qkv_bias, tokens=tokens),
        ]
    if cfg.qk_norm:
        ops += [LayerNorm("attn.q_norm", rows=rows * heads, features=cfg.head_dim),
                LayerNorm("attn.k_norm", rows=rows * kv_heads, features=cfg.head_dim)]
    if not cfg.learned_positions:
        ops += [Elementwise("attn.rope_q", numel=rows * q, inputs=3, op="mul"),
                Elementwise("attn.rope_k", numel=rows * kv, inputs=3, op="mul")]
    post = cfg.norms_per_layer > 2
    ops += [
        *_attention(cfg, batch, tokens, context, kv_element_ratio, heads, kv_heads, layout),
        Linear("attn.o_proj", batch=batch, in_features=q, out_features=h, bias=cfg.bias, tokens=tokens,
               weight_layout=weight_layout(cfg)),
        *([LayerNorm("attn.post_norm", rows=rows, features=h)] if post else []),
        Elementwise("attn.residual", numel=rows * h, inputs=2, op="add"),
        LayerNorm("mlp.norm", rows=rows, features=h),
        *_mlp(cfg, batch, tokens, tp),
        *([LayerNorm("mlp.post_norm", rows=rows, features=h)] if post else []),
        Elementwise("mlp.residual", numel=rows * h, inputs=2, op="add"),
    ]
    return ops


def _check(cfg: DecoderConfig, batch: Any, tokens: Any, context: Any) -> None:
    """Concrete sizes are checked; sympy symbols (for `analyze --symbolic`) are positive by definition."""
    if not all(isinstance(v, int) for v in (batch, tokens, context)):
        return
    if batch < 1 or tokens < 1:
        raise ConfigError(f"batch ({batch}) and tokens ({tokens}) must be positive")
    if context > cfg.max_positions:
        raise ConfigError(f"{cfg.name}: context of {context} tokens exceeds the model's maximum of "
                          f"{cfg.max_positions} (max_position_embeddings)")


def phase(cfg: DecoderConfig, name: str, batch: int, tokens: int, context: int,
          kv_element_ratio: float = 1.0, layout: Layout = ONE_GPU) -> Phase:
    """Embedding, `layers` decoder layers, final norm, lm_head on the last position (on every one under a
    release before v4.45: `layout.release`), argmax, as one of
    `layout.tp` tensor-parallel ranks runs them: the embedding table replicated (TensorRT-LLM's default,
    use_parallel_embedding off), the lm_head as `layout` says."""
    _check(cfg, batch, tokens, context)
    if layout.static_cache is not None and isinstance(context, int) and context > layout.static_cache:
        raise ConfigError(f"{cfg.name}: a context of {context} tokens does not fit a static cache of "
                          f"{layout.static_cache}")
    rows = batch * tokens
    head: list[Op] = [Embedding("embed.tokens", num_embeddings=cfg.vocab, dim=cfg.hidden, tokens=rows)]
    if cfg.learned_positions:
        head += [Embedding("embed.positions", num_embeddings=cfg.max_positions, dim=cfg.hidden, tokens=rows),
                 Elementwise("embed.add", numel=rows * cfg.hidden, inputs=2, op="add")]
    tail: list[Op] = [
        LayerNorm("final.norm", rows=rows, features=cfg.hidden),
        LogitsHead("lm_head", batch=batch, in_features=cfg.hidden,
                   out_features=-(-cfg.vocab // layout.tp) if layout.split_lm_head else cfg.vocab, bias=False,
                   tied=cfg.tied_embeddings, tokens=tokens if layout.release.all_logits else 1,
                   fp32_upcast=layout.release.fp32_logits),
        Reduce("sample.argmax", numel_in=batch * cfg.vocab, numel_out=batch),
    ]
    steps = ([Step(op, 1, *eager_kernels(cfg, op)) for op in head]
             + [Step(op, cfg.layers, *eager_kernels(cfg, op))
                for op in layer_ops(cfg, batch, tokens, context, kv_element_ratio, layout)]
             + [Step(op, 1, *eager_kernels(cfg, op)) for op in tail])
    return Phase(name, batch, tokens, context, tuple(steps))


def prefill(cfg: DecoderConfig, batch: int, prompt: int, kv_element_ratio: float = 1.0,
            layout: Layout = ONE_GPU) -> Phase:
    return phase(cfg, "prefill", batch, prompt, prompt, kv_element_ratio, layout)


def decode(cfg: DecoderConfig, batch: int, context: int, kv_element_ratio: float = 1.0,
           layout: Layout = ONE_GPU) -> Phase:
    """One decode step: one new token per sequence, attending to `context` tokens (itself included)."""
    return phase(cfg, "decode", batch, 1, context, kv_element_ratio, layout)


def kv_cache_bytes_per_token(cfg: DecoderConfig, kv_bytes: float, tp: int = 1) -> float:
    """K and V of every layer for one token on one of `tp` ranks: 2 x layers x its KV heads x head_dim x
    bytes."""
    return 2.0 * cfg.layers * tensor_parallel_heads(cfg, tp)[1] * cfg.head_dim * kv_bytes

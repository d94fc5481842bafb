"""Softmax and fused scaled-dot-product attention (FlashAttention-style: scores never reach DRAM)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from roofline.workload.ops._shape import positive
from roofline.workload.ops.base import Dataflow, GemmView, Num, Op, Traffic, Workload
from roofline.workload.ops.gemm import Gemm
from roofline.workload.ops.pointwise import Dropout, Elementwise

SOFTMAX_FORWARD_FLOPS = 5
"""Per element: running max, subtract, exp, sum, divide."""
SOFTMAX_BACKWARD_FLOPS = 4
"""Per element: dY * y, the row sum, subtract, multiply by y."""
FLASH_BACKWARD_PRODUCTS = 5
"""FlashAttention-2 backward recomputes S = Q K^T, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q:
five products the size of one forward product (Dao 2023, section 3.1.2), i.e. 2.5 x the forward's two."""


@dataclass
class Softmax(Op):
    """Softmax over `cols` for each of `rows` rows; backward needs only the saved output."""

    rows: Num
    cols: int
    kind: str = field(init=False, default="softmax")

    def __post_init__(self) -> None:
        positive(rows=self.rows, cols=self.cols)

    def flops(self, pass_: str) -> Num:
        per = {"forward": SOFTMAX_FORWARD_FLOPS, "backward_input": SOFTMAX_BACKWARD_FLOPS}.get(pass_, 0)
        return per * self.rows * self.cols

    def traffic(self, pass_: str) -> Traffic:
        n = self.rows * self.cols
        if pass_ == "forward":
            return Traffic(activations_read=n, activations_written=n)
        if pass_ == "backward_input":
            return Traffic(activations_read=2 * n, activations_written=n)
        return Traffic()

    def saved_elements(self) -> Num:
        return self.rows * self.cols

    def output_elements(self) -> Num:
        return self.rows * self.cols

    def shapes(self) -> str:
        return f"{self.rows}x{self.cols}"


@dataclass
class Attention(Op):
    """softmax(Q K^T / sqrt(d) [+ causal mask]) V for (batch, heads) pairs, as one fused kernel.

    Forward: two products, Q K^T (seq_q x seq_kv x head_dim) and P V, 4 b h L S d FLOPs, plus the softmax
    on the L x S scores, which stay on chip; DRAM traffic is Q, K, V read and O (and the row
    log-sum-exp) written. A causal mask (top-left aligned, as torch's is_causal) lets the kernel skip the
    score blocks above the diagonal: `kept` counts the score entries it computes. torch's FLOP counter
    counts the full square; we count the work done.
    """

    batch: Num
    heads: int
    seq_q: int
    seq_kv: int
    head_dim: int
    causal: bool = False
    dropout_p: float = 0.0
    """Dropout on the attention probabilities in training (a fused kernel draws it on chip; an eager
    implementation runs it as a kernel: `eager_attention_ops`)."""
    kind: str = field(init=False, default="attention")

    def __post_init__(self) -> None:
        positive(batch=self.batch, heads=self.heads, seq_q=self.seq_q, seq_kv=self.seq_kv, head_dim=self.head_dim)

    def for_inference(self) -> Op | None:
        return replace(self, dropout_p=0.0) if self.dropout_p else self

    @property
    def pairs(self) -> Num:
        return self.batch * self.heads

    @property
    def kept(self) -> int:
        """Score entries computed per (batch, head): row i of a causal mask keeps min(S, i + 1) columns."""
        L, S = self.seq_q, self.seq_kv
        if not self.causal:
            return L * S
        return L * (L + 1) // 2 if L <= S else S * (S + 1) // 2 + (L - S) * S

    def gemm_views(self, pass_: str) -> list[GemmView]:
        rows = math.ceil(self.kept / self.seq_kv)
        depth = math.ceil(self.kept / self.seq_q)
        scores = GemmView(rows, self.seq_kv, self.head_dim, self.pairs)
        values = GemmView(self.seq_q, self.head_dim, depth, self.pairs)
        if pass_ == "forward":
            return [scores, values]
        if pass_ == "backward_input":
            key_side = GemmView(self.seq_kv, self.head_dim, rows, self.pairs)
            # S recomputed, dP = dO V^T, dQ = dS K, dV = P^T dO, dK = dS^T Q
            return [scores, scores, values, key_side, key_side]
        return []

    def flops(self, pass_: str) -> Num:
        if pass_ == "forward":
            return 4 * self.pairs * self.kept * self.head_dim + SOFTMAX_FORWARD_FLOPS * self.pairs * self.kept
        if pass_ == "backward_input":
            return (2 * FLASH_BACKWARD_PRODUCTS * self.pairs * self.kept * self.head_dim
                    + SOFTMAX_BACKWARD_FLOPS * self.pairs * self.kept)
        return 0

    def _qkvo(self) -> tuple[Num, Num, Num]:
        q = self.pairs * self.seq_q * self.head_dim
        kv = self.pairs * self.seq_kv * self.head_dim
        return q, kv, self.pairs * self.seq_q

    def traffic(self, pass_: str) -> Traffic:
        q, kv, lse = self._qkvo()
        if pass_ == "forward":
            return Traffic(activations_read=q + 2 * kv, activations_written=q + lse)
        if pass_ == "backward_input":
            return Traffic(activations_read=3 * q + 2 * kv + lse, activations_written=q + 2 * kv)
        return Traffic()

    def saved_elements(self) -> Num:
        q, kv, lse = self._qkvo()
        return 2 * q + 2 * kv + lse

    def output_elements(self) -> Num:
        return self._qkvo()[0]

    def shapes(self) -> str:
        mask = ", causal" if self.causal else ""
        return f"{self.batch}x{self.heads}x{self.seq_q}x{self.head_dim} over {self.seq_kv} keys{mask}"


@dataclass
class Embedding(Op):
    """Row gather from a (num_embeddings x dim) table for `tokens` indices.

    Forward reads only the touched rows. Backward (dense, torch's default) zero-fills a full table-sized
    gradient and scatter-adds the tokens' rows into it, so it writes the whole table; indices need no
    gradient, so there is no backward_input.
    """

    num_embeddings: int
    dim: int
    tokens: Num
    kind: str = field(init=False, default="embedding")

    def __post_init__(self) -> None:
        positive(num_embeddings=self.num_embeddings, dim=self.dim, tokens=self.tokens)

    def flops(self, pass_: str) -> Num:
        return self.tokens * self.dim if pass_ == "backward_weight" else 0

    def traffic(self, pass_: str) -> Traffic:
        rows = self.tokens * self.dim
        if pass_ == "forward":
            return Traffic(activations_read=self.tokens, activations_written=rows, weights_read=rows)
        if pass_ == "backward_weight":
            return Traffic(activations_read=rows + self.tokens, weights_written=self.num_embeddings * self.dim)
        return Traffic()

    def params(self) -> Num:
        return self.num_embeddings * self.dim

    def launches(self, pass_: str) -> int:
        return {"forward": 1, "backward_weight": 2}.get(pass_, 0)

    def saved_elements(self) -> Num:
        return self.tokens

    def output_elements(self) -> Num:
        return self.tokens * self.dim

    def shapes(self) -> str:
        return f"{self.tokens} tokens from {self.num_embeddings}x{self.dim}"


def eager_attention_ops(op: Attention) -> list[Op]:
    """The kernels an unfused ("eager") implementation runs for `op`, as NVIDIA DeepLearningExamples' BERT
    (PyTorch/LanguageModeling/BERT/modeling.py, BertSelfAttention.forward) and Hugging Face's
    attn_implementation="eager" write it: scores = Q @ K^T (one batched product over batch x heads), scaled by
    1/sqrt(head_dim), the mask added (a broadcast (batch, 1, 1, keys) tensor: charged as one input), softmax,
    dropout on the probabilities (training), then probabilities @ V. Each writes its L x S result to memory and
    the next reads it back, and autograd saves them for the backward, where a fused kernel keeps scores on chip;
    a causal mask is added like any other (the full square is computed). Q, K^T and V reach the products as
    head-split views of the projections' (batch, seq, heads x dim) outputs, whose batch and head strides do not
    merge: torch.matmul flattens the batch dimensions with `expand(...).reshape(...)` (`.contiguous().view(...)`
    before PyTorch 1.10; aten/src/ATen/native/LinearAlgebra.cpp, matmul), which copies each of them, and the
    backward copies their gradients back into the projections' layout: a copy op each (`EAGER_OPERAND_COPIES`).
    The last kernel keeps `op`'s name, so whatever read the attention's output reads it."""
    L, S, d, pairs = op.seq_q, op.seq_kv, op.head_dim, op.pairs
    scores = pairs * L * S
    kernels: list[Op] = [
        Elementwise(f"{op.name}.q_copy", numel=pairs * L * d, inputs=1, op="copy"),
        Elementwise(f"{op.name}.k_copy", numel=pairs * S * d, inputs=1, op="copy"),
        Gemm(f"{op.name}.scores", m=L, n=S, k=d, count=pairs),
        Elementwise(f"{op.name}.scale", numel=scores, inputs=1, op="mul"),
        Elementwise(f"{op.name}.mask", numel=scores, inputs=1, op="add"),
        Softmax(f"{op.name}.softmax", rows=pairs * L, cols=S),
    ]
    if op.dropout_p > 0:
        kernels.append(Dropout(f"{op.name}.dropout", numel=scores, p=op.dropout_p))
    kernels.append(Elementwise(f"{op.name}.v_copy", numel=pairs * S * d, inputs=1, op="copy"))
    kernels.append(Gemm(op.name, m=L, n=d, k=S, count=pairs))
    return kernels


EAGER_OPERAND_COPIES = ("q_copy", "k_copy", "v_copy")
"""Name suffixes of the copies `eager_attention_ops` makes of the products' operands, in the order q, k, v."""


ATTENTION_PATHS = ("fused", "eager")
"""How a model's attention runs: one fused kernel (F.scaled_dot_product_attention, flash or memory-efficient,
PyTorch >= 2.0) or the eager kernels of `eager_attention_ops`."""


def with_eager_attention(workload: Workload) -> Workload:
    """`workload` with every fused self-attention op (not a serving op's cached attention) replaced by its
    eager kernels, the dataflow rewired through them: the scores product reads what the attention read as Q
    and K, the last product the probabilities and V."""
    flow = workload.flow()
    ops: list[Op] = []
    reads = dict(flow.reads)
    for op in workload.ops:
        if type(op) is not Attention:
            ops.append(op)
            continue
        kernels = eager_attention_ops(op)
        qkv = flow.reads.get(op.name) or (op.name,)
        copies = dict(zip(EAGER_OPERAND_COPIES, (*qkv, qkv[-1], qkv[-1])[:3], strict=True))
        copied: dict[str, str] = {}
        previous = None
        for kernel in kernels:
            role = kernel.name.rsplit(".", 1)[-1]
            if role in copies:
                reads[kernel.name] = (copies[role],)
                copied[role] = kernel.name
            elif previous is None:
                reads[kernel.name] = (copied["q_copy"], copied["k_copy"])
                previous = kernel.name
            elif kernel is kernels[-1]:
                reads[kernel.name] = (previous, copied["v_copy"])
            else:
                reads[kernel.name] = (previous,)
                previous = kernel.name
        ops.extend(kernels)
    return replace(workload, ops=ops, dataflow=Dataflow(reads, flow.inplace))

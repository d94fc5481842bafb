"""BERT-base (Devlin et al. 2018) and GPT-2 small (Radford et al. 2019) as Hugging Face's BertModel and
GPT2LMHeadModel compute them, with attention as one fused scaled_dot_product_attention call.

BERT: post-norm encoder layers (sublayer -> dropout -> add -> LayerNorm), exact GELU, word + token type +
position embeddings, and the pooler (tanh(dense(first token))) that BertModel includes: 109.48M parameters.
GPT-2: pre-norm blocks, tanh-approximated GELU, causal attention, final LayerNorm and an lm_head tied to the
token embedding: 124.44M parameters, the tied matrix counted once; a training step adds the next-token
cross-entropy over the vocabulary (GPT2LMHeadModel given labels).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.workload import ops as ir
from roofline.workload.ops.base import Num
from roofline.workload.zoo._graph import Graph


@dataclass(frozen=True)
class Config:
    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    """Learned position embeddings: the longest sequence the model accepts."""
    token_types: int
    dropout: float
    ln_eps: float


BERT = Config(layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, positions=512, token_types=2,
              dropout=0.1, ln_eps=1e-12)
"""bert-base-uncased's config.json on the Hugging Face hub."""
GPT2 = Config(layers=12, hidden=768, heads=12, ffn=3072, vocab=50257, positions=1024, token_types=0,
              dropout=0.1, ln_eps=1e-5)
"""gpt2's config.json on the Hugging Face hub (n_layer, n_embd, n_head, 4 x n_embd, vocab_size, n_positions)."""


def build_bert(g: Graph, cfg: Config = BERT) -> None:
    batch, seq = g.batch, g.shape[0]
    # position ids and (all-zero) token type ids are slices of buffers, the latter expanded over the batch
    g.view("embeddings.reshape", (seq,), reads=())
    _embedding(g, "embeddings.word_embeddings", cfg.vocab, cfg.hidden, batch * seq)
    words = g.current
    _embedding(g, "embeddings.token_type_embeddings", cfg.token_types, cfg.hidden, batch * seq, reads=())
    g.current, token_types = words, g.current
    g.elementwise("embeddings.add", other=token_types)
    summed = g.current
    _embedding(g, "embeddings.position_embeddings", cfg.positions, cfg.hidden, seq, reads=())
    g.current, positions = summed, g.current
    g.elementwise("embeddings.add", other=positions)
    g.layer_norm("embeddings.LayerNorm")
    g.dropout("embeddings.dropout", cfg.dropout)
    for i in range(cfg.layers):
        layer = f"encoder.layer.{i}"
        attention = f"{layer}.attention"
        layer_input, qkv = g.current, []
        for proj in ("query", "key", "value"):
            g.current = layer_input
            g.linear(f"{attention}.self.{proj}", cfg.hidden)
            qkv.append(g.current)
        _attend(g, f"{attention}.self", cfg, causal=False, qkv=tuple(qkv))
        _add_norm(g, f"{attention}.output", cfg, cfg.hidden, layer_input)
        attended = g.current
        g.linear(f"{layer}.intermediate.dense", cfg.ffn)
        g.act(f"{layer}.intermediate.intermediate_act_fn", "gelu")
        _add_norm(g, f"{layer}.output", cfg, cfg.hidden, attended)
    g.view("pooler.reshape", (cfg.hidden,))
    g.linear("pooler.dense", cfg.hidden)
    g.act("pooler.activation", "tanh")


def build_gpt2(g: Graph, cfg: Config = GPT2) -> None:
    batch, seq = g.batch, g.shape[0]
    _embedding(g, "transformer.wte", cfg.vocab, cfg.hidden, batch * seq)
    tokens = g.current
    # position ids are a slice of a buffer, shared by every sequence of the batch
    g.view("transformer.reshape", (seq,), reads=())
    _embedding(g, "transformer.wpe", cfg.positions, cfg.hidden, seq, reads=())
    g.current, positions = tokens, g.current
    g.elementwise("transformer.add", other=positions)
    g.dropout("transformer.drop", cfg.dropout)
    for i in range(cfg.layers):
        block = f"transformer.h.{i}"
        block_input = g.current
        g.layer_norm(f"{block}.ln_1")
        g.linear(f"{block}.attn.c_attn", 3 * cfg.hidden)
        g.shape = (seq, cfg.hidden)  # split into q, k, v: views, recorded with the head split below
        _attend(g, f"{block}.attn", cfg, causal=True, qkv=(g.current,))
        g.linear(f"{block}.attn.c_proj", cfg.hidden)
        g.dropout(f"{block}.attn.resid_dropout", cfg.dropout)
        g.elementwise(f"{block}.add", other=block_input)  # attn_output + residual
        attended = g.current
        g.layer_norm(f"{block}.ln_2")
        g.linear(f"{block}.mlp.c_fc", cfg.ffn)
        g.act(f"{block}.mlp.act", "gelu")
        g.linear(f"{block}.mlp.c_proj", cfg.hidden)
        g.dropout(f"{block}.mlp.dropout", cfg.dropout)
        g.current, feed_forward = attended, g.current
        g.elementwise(f"{block}.add", other=feed_forward)  # residual + feed_forward_hidden_states
    g.layer_norm("transformer.ln_f")
    g.add(ir.Linear(g.name("lm_head"), batch=batch, in_features=cfg.hidden, out_features=cfg.vocab, bias=False,
                    tokens=seq, tied=True), (seq, cfg.vocab))
    g.add(ir.CrossEntropy(g.name("loss"), rows=batch * seq, classes=cfg.vocab), (1,))


def _embedding(g: Graph, name: str, rows: int, dim: int, tokens: Num, reads: tuple[str, ...] | None = None) -> None:
    """A lookup of the current tensor's ids, or of `reads` (() for ids sliced from a buffer)."""
    g.add(ir.Embedding(g.name(name), num_embeddings=rows, dim=dim, tokens=tokens), (g.shape[0], dim), reads=reads)


def _attend(g: Graph, module: str, cfg: Config, causal: bool, qkv: tuple[str, ...]) -> None:
    """Split heads (views), fused attention over `qkv` (the ops that wrote q, k and v), merge heads: the
    transpose makes the merge a real copy."""
    seq, head_dim = g.shape[0], cfg.hidden // cfg.heads
    g.view(f"{module}.reshape", (cfg.heads, seq, head_dim), reads=qkv[:1])
    g.add(ir.Attention(g.name(f"{module}.scaled_dot_product_attention"), batch=g.batch, heads=cfg.heads,
                       seq_q=seq, seq_kv=seq, head_dim=head_dim, causal=causal, dropout_p=cfg.dropout),
          reads=qkv)
    g.view(f"{module}.reshape", (seq, cfg.heads, head_dim))
    g.elementwise(f"{module}.clone", op="copy", inputs=1)
    g.view(f"{module}.reshape", (seq, cfg.hidden))


def _add_norm(g: Graph, module: str, cfg: Config, width: int, residual: str) -> None:
    """dense, dropout, LayerNorm(hidden_states + input_tensor)."""
    g.linear(f"{module}.dense", width)
    g.dropout(f"{module}.dropout", cfg.dropout)
    g.elementwise(f"{module}.add", other=residual)
    g.layer_norm(f"{module}.LayerNorm")

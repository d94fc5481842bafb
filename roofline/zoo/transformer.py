"""BERT-base (Devlin et al. 2018) and GPT-2 small (Radford et al. 2019) as Hugging Face's BertModel and
GPT2LMHeadModel compute them, with attention as one fused scaled_dot_product_attention call.

BERT: post-norm encoder layers (sublayer -> dropout -> add -> LayerNorm), exact GELU, word + token type +
position embeddings, and the pooler (tanh(dense(first token))) that BertModel includes: 109.48M parameters.
GPT-2: pre-norm blocks, tanh-approximated GELU, causal attention, final LayerNorm and an lm_head tied to the
token embedding: 124.44M parameters, the tied matrix counted once.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline import ops as ir
from roofline.ops.base import Num
from roofline.zoo._graph import Graph


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
    g.view("embeddings.reshape", (seq,))
    _embedding(g, "embeddings.word_embeddings", cfg.vocab, cfg.hidden, batch * seq)
    _embedding(g, "embeddings.token_type_embeddings", cfg.token_types, cfg.hidden, batch * seq)
    g.elementwise("embeddings.add")
    _embedding(g, "embeddings.position_embeddings", cfg.positions, cfg.hidden, seq)
    g.elementwise("embeddings.add")
    g.layer_norm("embeddings.LayerNorm")
    g.dropout("embeddings.dropout", cfg.dropout)
    for i in range(cfg.layers):
        layer = f"encoder.layer.{i}"
        attention = f"{layer}.attention"
        for proj in ("query", "key", "value"):
            g.linear(f"{attention}.self.{proj}", cfg.hidden)
        _attend(g, f"{attention}.self", cfg, causal=False)
        _add_norm(g, f"{attention}.output", cfg, cfg.hidden)
        g.linear(f"{layer}.intermediate.dense", cfg.ffn)
        g.act(f"{layer}.intermediate.intermediate_act_fn", "gelu")
        _add_norm(g, f"{layer}.output", cfg, cfg.hidden)
    g.view("pooler.reshape", (cfg.hidden,))
    g.linear("pooler.dense", cfg.hidden)
    g.act("pooler.activation", "tanh")


def build_gpt2(g: Graph, cfg: Config = GPT2) -> None:
    batch, seq = g.batch, g.shape[0]
    _embedding(g, "transformer.wte", cfg.vocab, cfg.hidden, batch * seq)
    # position ids are a slice of a buffer, shared by every sequence of the batch
    g.view("transformer.reshape", (seq,))
    _embedding(g, "transformer.wpe", cfg.positions, cfg.hidden, seq)
    g.elementwise("transformer.add")
    g.dropout("transformer.drop", cfg.dropout)
    for i in range(cfg.layers):
        block = f"transformer.h.{i}"
        g.layer_norm(f"{block}.ln_1")
        g.linear(f"{block}.attn.c_attn", 3 * cfg.hidden)
        g.shape = (seq, cfg.hidden)  # split into q, k, v: views, recorded with the head split below
        _attend(g, f"{block}.attn", cfg, causal=True)
        g.linear(f"{block}.attn.c_proj", cfg.hidden)
        g.dropout(f"{block}.attn.resid_dropout", cfg.dropout)
        g.elementwise(f"{block}.add")
        g.layer_norm(f"{block}.ln_2")
        g.linear(f"{block}.mlp.c_fc", cfg.ffn)
        g.act(f"{block}.mlp.act", "gelu")
        g.linear(f"{block}.mlp.c_proj", cfg.hidden)
        g.dropout(f"{block}.mlp.dropout", cfg.dropout)
        g.elementwise(f"{block}.add")
    g.layer_norm("transformer.ln_f")
    g.add(ir.Linear(g.name("lm_head"), batch=batch, in_features=cfg.hidden, out_features=cfg.vocab, bias=False,
                    tokens=seq, tied=True), (seq, cfg.vocab))


def _embedding(g: Graph, name: str, rows: int, dim: int, tokens: Num) -> None:
    g.add(ir.Embedding(g.name(name), num_embeddings=rows, dim=dim, tokens=tokens), (g.shape[0], dim))


def _attend(g: Graph, module: str, cfg: Config, causal: bool) -> None:
    """Split heads (views), fused attention, merge heads: the transpose makes the merge a real copy."""
    seq, head_dim = g.shape[0], cfg.hidden // cfg.heads
    g.view(f"{module}.reshape", (cfg.heads, seq, head_dim))
    g.add(ir.Attention(g.name(f"{module}.scaled_dot_product_attention"), batch=g.batch, heads=cfg.heads,
                       seq_q=seq, seq_kv=seq, head_dim=head_dim, causal=causal))
    g.view(f"{module}.reshape", (seq, cfg.heads, head_dim))
    g.elementwise(f"{module}.clone", op="copy", inputs=1)
    g.view(f"{module}.reshape", (seq, cfg.hidden))


def _add_norm(g: Graph, module: str, cfg: Config, width: int) -> None:
    g.linear(f"{module}.dense", width)
    g.dropout(f"{module}.dropout", cfg.dropout)
    g.elementwise(f"{module}.add")
    g.layer_norm(f"{module}.LayerNorm")

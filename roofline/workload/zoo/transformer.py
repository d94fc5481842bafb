"""BERT (Devlin et al. 2018) and GPT-2 (Radford et al. 2019) as Hugging Face's BertModel, BertForPreTraining and
GPT2LMHeadModel compute them, with attention as one fused scaled_dot_product_attention call.

BERT: post-norm encoder layers (sublayer -> dropout -> add -> LayerNorm), exact GELU, word + token type +
position embeddings, and the pooler (tanh(dense(first token))) that BertModel includes: 109.48M parameters in
BERT-base. BertForPreTraining adds the masked-language-model head over every position (dense, GELU, LayerNorm,
then a projection to the vocabulary tied to the word embedding, with a bias of its own) and the next-sentence
head on the pooled vector; a training step adds the masked-language-model cross-entropy over every position.
GPT-2: pre-norm blocks, tanh-approximated GELU (one fused kernel here; `roofline.workload.ops.gelu_new` prices
Hugging Face's own formula), causal attention, final LayerNorm and an lm_head tied to the token embedding:
124.44M parameters in GPT-2 small, the tied matrix counted once; a training step adds the next-token
cross-entropy over the vocabulary (GPT2LMHeadModel given labels).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    attention_dropout: float | None = None
    """Dropout on the attention probabilities where it differs from `dropout` (OPT's 0.0)."""

    @property
    def attn_dropout(self) -> float:
        return self.dropout if self.attention_dropout is None else self.attention_dropout


BERT = Config(layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, positions=512, token_types=2,
              dropout=0.1, ln_eps=1e-12)
"""bert-base-uncased's config.json on the Hugging Face hub."""
BERT_LARGE = replace(BERT, layers=24, hidden=1024, heads=16, ffn=4096)
"""bert-large-uncased's config.json on the Hugging Face hub (num_hidden_layers, hidden_size,
num_attention_heads, intermediate_size; the rest as bert-base-uncased's)."""
GPT2 = Config(layers=12, hidden=768, heads=12, ffn=3072, vocab=50257, positions=1024, token_types=0,
              dropout=0.1, ln_eps=1e-5)
"""gpt2's config.json on the Hugging Face hub (n_layer, n_embd, n_head, 4 x n_embd, vocab_size, n_positions)."""
GPT2_MEDIUM = replace(GPT2, layers=24, hidden=1024, heads=16, ffn=4096)
GPT2_LARGE = replace(GPT2, layers=36, hidden=1280, heads=20, ffn=5120)
GPT2_XL = replace(GPT2, layers=48, hidden=1600, heads=25, ffn=6400)
"""gpt2-medium, gpt2-large and gpt2-xl's config.json on the Hugging Face hub (n_layer, n_embd, n_head; the MLP
is 4 x n_embd wide, vocabulary and positions as gpt2's)."""
OPT_1_3B = Config(layers=24, hidden=2048, heads=32, ffn=8192, vocab=50272, positions=2048, token_types=0,
                  dropout=0.1, ln_eps=1e-5, attention_dropout=0.0)
"""facebook/opt-1.3b's config.json on the Hugging Face hub (num_hidden_layers, hidden_size, num_attention_heads,
ffn_dim, vocab_size, max_position_embeddings, dropout, attention_dropout; word_embed_proj_dim = hidden_size)."""
OPT_POSITION_OFFSET = 2
"""OPTLearnedPositionalEmbedding keeps 2 rows more than max_position_embeddings and looks positions up 2 rows on
(transformers' modeling_opt.py: 'OPT is set up so that if padding_idx is specified then offset the embedding ids
by 2')."""


def build_bert(g: Graph, cfg: Config = BERT) -> None:
    """BertModel: the encoder, then the pooler."""
    _bert_encoder(g, cfg)
    _pooler(g, cfg)


def build_bert_pretraining(g: Graph, cfg: Config = BERT_LARGE) -> None:
    """BertForPreTraining: BertModel, the masked-language-model head over every position of the encoder's output
    and the next-sentence head over the pooled vector, then the masked-language-model loss."""
    batch, seq = g.batch, g.shape[0]
    encoded = _bert_encoder(g, cfg, root="bert.")
    _pooler(g, cfg, root="bert.")
    pooled, g.current, g.shape = g.current, encoded, (seq, cfg.hidden)
    g.linear("cls.predictions.transform.dense", cfg.hidden)
    g.act("cls.predictions.transform.transform_act_fn", "gelu")
    g.layer_norm("cls.predictions.transform.LayerNorm")
    g.add(ir.Linear(g.name("cls.predictions.decoder"), batch=batch, in_features=cfg.hidden, out_features=cfg.vocab,
                    bias=True, tokens=seq, tied=True), (seq, cfg.vocab))
    scores = g.current
    g.current, g.shape = pooled, (cfg.hidden,)
    g.linear("cls.seq_relationship", 2)
    g.current, g.shape = scores, (seq, cfg.vocab)
    g.add(ir.CrossEntropy(g.name("loss"), rows=batch * seq, classes=cfg.vocab), (1,))


def _pooler(g: Graph, cfg: Config, root: str = "") -> None:
    g.view(f"{root}pooler.reshape", (cfg.hidden,))
    g.linear(f"{root}pooler.dense", cfg.hidden)
    g.act(f"{root}pooler.activation", "tanh")


def _bert_encoder(g: Graph, cfg: Config, root: str = "") -> str:
    """Embeddings and encoder layers, their modules under `root` ('bert.' inside BertForPreTraining); returns
    the name of the op that wrote the sequence output."""
    batch, seq = g.batch, g.shape[0]
    # position ids and (all-zero) token type ids are slices of buffers, the latter expanded over the batch
    g.view(f"{root}embeddings.reshape", (seq,), reads=())
    _embedding(g, f"{root}embeddings.word_embeddings", cfg.vocab, cfg.hidden, batch * seq)
    words = g.current
    _embedding(g, f"{root}embeddings.token_type_embeddings", cfg.token_types, cfg.hidden, batch * seq, reads=())
    g.current, token_types = words, g.current
    g.elementwise(f"{root}embeddings.add", other=token_types)
    summed = g.current
    _embedding(g, f"{root}embeddings.position_embeddings", cfg.positions, cfg.hidden, seq, reads=())
    g.current, positions = summed, g.current
    g.elementwise(f"{root}embeddings.add", other=positions)
    g.layer_norm(f"{root}embeddings.LayerNorm")
    g.dropout(f"{root}embeddings.dropout", cfg.dropout)
    for i in range(cfg.layers):
        layer = f"{root}encoder.layer.{i}"
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
    return g.current


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
        g.act(f"{block}.mlp.act", "gelu_tanh")
        g.linear(f"{block}.mlp.c_proj", cfg.hidden)
        g.dropout(f"{block}.mlp.dropout", cfg.dropout)
        g.current, feed_forward = attended, g.current
        g.elementwise(f"{block}.add", other=feed_forward)  # residual + feed_forward_hidden_states
    g.layer_norm("transformer.ln_f")
    _tied_lm_head(g, cfg)


def build_opt(g: Graph, cfg: Config = OPT_1_3B) -> None:
    """OPTForCausalLM (pre-norm, do_layer_norm_before): token and learned position embeddings added; per layer a
    LayerNorm, q, k and v projections with the query scaled by 1/sqrt(head_dim) (`q_proj(x) * scaling`, a kernel
    of its own), causal attention, the output projection, dropout and the residual add, then a LayerNorm, fc1, ReLU,
    fc2, dropout and the residual add; a final LayerNorm and the lm_head tied to the token embedding, and in
    training the next-token cross-entropy."""
    batch, seq = g.batch, g.shape[0]
    _embedding(g, "model.decoder.embed_tokens", cfg.vocab, cfg.hidden, batch * seq)
    tokens = g.current
    # position ids are a slice of a buffer, shared by every sequence of the batch
    g.view("model.decoder.reshape", (seq,), reads=())
    _embedding(g, "model.decoder.embed_positions", cfg.positions + OPT_POSITION_OFFSET, cfg.hidden, seq, reads=())
    g.current, positions = tokens, g.current
    g.elementwise("model.decoder.add", other=positions)
    for i in range(cfg.layers):
        layer = f"model.decoder.layers.{i}"
        layer_input = g.current
        g.layer_norm(f"{layer}.self_attn_layer_norm")
        normed, qkv = g.current, []
        for proj in ("q_proj", "k_proj", "v_proj"):
            g.current = normed
            g.linear(f"{layer}.self_attn.{proj}", cfg.hidden)
            if proj == "q_proj":
                g.elementwise(f"{layer}.self_attn.mul", op="mul", inputs=1)
            qkv.append(g.current)
        _attend(g, f"{layer}.self_attn", cfg, causal=True, qkv=tuple(qkv))
        g.linear(f"{layer}.self_attn.out_proj", cfg.hidden)
        g.dropout(f"{layer}.dropout", cfg.dropout)
        g.current, branch = layer_input, g.current
        g.elementwise(f"{layer}.add", other=branch)  # residual + hidden_states
        attended = g.current
        g.layer_norm(f"{layer}.final_layer_norm")
        g.linear(f"{layer}.fc1", cfg.ffn)
        g.act(f"{layer}.activation_fn", "relu")
        g.linear(f"{layer}.fc2", cfg.hidden)
        g.dropout(f"{layer}.dropout", cfg.dropout)
        g.current, branch = attended, g.current
        g.elementwise(f"{layer}.add", other=branch)
    g.layer_norm("model.decoder.final_layer_norm")
    _tied_lm_head(g, cfg)


def _tied_lm_head(g: Graph, cfg: Config) -> None:
    """The lm_head over every position, its weight the token embedding's, then the next-token cross-entropy (a
    training step's; an inference step drops it)."""
    batch, seq = g.batch, g.shape[0]
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
                       seq_q=seq, seq_kv=seq, head_dim=head_dim, causal=causal, dropout_p=cfg.attn_dropout),
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

"""BERT (Hugging Face BertModel, pooler included, and BertForPreTraining) and GPT-2 (GPT2LMHeadModel, lm_head
tied to the token embedding), with Hugging Face's module names and shapes, attention through
F.scaled_dot_product_attention (GPT-2 with is_causal=True), so that flash kernels run where torch has them.
GPT-2's Conv1D layers are nn.Linear here: the same product with the weight stored transposed."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from roofline.workload.zoo.transformer import BERT, BERT_LARGE, GPT2, OPT_1_3B, OPT_POSITION_OFFSET, Config


class SelfAttention(nn.Module):
    """Multi-head attention on (B, S, hidden): heads split, fused attention, heads merged (one copy)."""

    def __init__(self, cfg: Config, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal, self.dropout_p = cfg.heads, causal, cfg.attn_dropout

    def attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        batch, seq, hidden = q.shape
        q, k, v = (t.view(batch, seq, self.heads, hidden // self.heads).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout_p if self.training else 0.0,
                                             is_causal=self.causal)
        return out.transpose(1, 2).reshape(batch, seq, hidden)


class BertSelfAttention(SelfAttention):
    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg, causal=False)
        self.query = nn.Linear(cfg.hidden, cfg.hidden)
        self.key = nn.Linear(cfg.hidden, cfg.hidden)
        self.value = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x: Tensor) -> Tensor:
        return self.attend(self.query(x), self.key(x), self.value(x))


class BertAddNorm(nn.Module):
    """dense -> dropout -> add the sublayer's input -> LayerNorm (BertSelfOutput and BertOutput)."""

    def __init__(self, cfg: Config, width: int) -> None:
        super().__init__()
        self.dense = nn.Linear(width, cfg.hidden)
        self.LayerNorm = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.self = BertSelfAttention(cfg)
        self.output = BertAddNorm(cfg, cfg.hidden)

    def forward(self, x: Tensor) -> Tensor:
        return self.output(self.self(x), x)


class BertIntermediate(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden, cfg.ffn)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, x: Tensor) -> Tensor:
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.attention = BertAttention(cfg)
        self.intermediate = BertIntermediate(cfg)
        self.output = BertAddNorm(cfg, cfg.ffn)

    def forward(self, x: Tensor) -> Tensor:
        x = self.attention(x)
        return self.output(self.intermediate(x), x)


class BertEncoder(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.layers))

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layer:
            x = layer(x)
        return x


class BertEmbeddings(nn.Module):
    """Word + token type (all zeros: one segment) + position embeddings, LayerNorm, dropout."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab, cfg.hidden)
        self.position_embeddings = nn.Embedding(cfg.positions, cfg.hidden)
        self.token_type_embeddings = nn.Embedding(cfg.token_types, cfg.hidden)
        self.LayerNorm = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.dropout = nn.Dropout(cfg.dropout)
        self.register_buffer("position_ids", torch.arange(cfg.positions).expand(1, -1), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(1, cfg.positions, dtype=torch.long), persistent=False)

    def forward(self, ids: Tensor) -> Tensor:
        batch, seq = ids.shape
        positions = self.position_ids[:, :seq]
        token_types = self.token_type_ids[:, :seq].expand(batch, seq)
        x = self.word_embeddings(ids) + self.token_type_embeddings(token_types)
        x = x + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(x))


class BertPooler(nn.Module):
    """tanh(dense(first token)): the sentence vector a classification head reads."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden, cfg.hidden)
        self.activation = nn.Tanh()

    def forward(self, x: Tensor) -> Tensor:
        return self.activation(self.dense(x[:, 0]))


class BertModel(nn.Module):
    """Returns (sequence output (B, S, hidden), pooled output (B, hidden)) as BertModel does."""

    def __init__(self, cfg: Config = BERT) -> None:
        super().__init__()
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = BertEncoder(cfg)
        self.pooler = BertPooler(cfg)

    def forward(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        x = self.encoder(self.embeddings(ids))
        return x, self.pooler(x)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden, cfg.hidden)
        self.transform_act_fn = nn.GELU()
        self.LayerNorm = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)

    def forward(self, x: Tensor) -> Tensor:
        return self.LayerNorm(self.transform_act_fn(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """The masked-language-model head: transform, then the vocabulary projection (its weight tied to the word
    embedding by BertForPreTraining, its bias its own)."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.transform = BertPredictionHeadTransform(cfg)
        self.decoder = nn.Linear(cfg.hidden, cfg.vocab)

    def forward(self, x: Tensor) -> Tensor:
        return self.decoder(self.transform(x))


class BertPreTrainingHeads(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.predictions = BertLMPredictionHead(cfg)
        self.seq_relationship = nn.Linear(cfg.hidden, 2)

    def forward(self, sequence: Tensor, pooled: Tensor) -> tuple[Tensor, Tensor]:
        return self.predictions(sequence), self.seq_relationship(pooled)


class BertForPreTraining(nn.Module):
    """Returns (prediction scores (B, S, vocab), next-sentence scores (B, 2)) as BertForPreTraining does."""

    def __init__(self, cfg: Config = BERT_LARGE) -> None:
        super().__init__()
        self.bert = BertModel(cfg)
        self.cls = BertPreTrainingHeads(cfg)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def forward(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        return self.cls(*self.bert(ids))


class GPT2Attention(SelfAttention):
    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg, causal=True)
        self.c_attn = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.c_proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=2)
        return self.resid_dropout(self.c_proj(self.attend(q, k, v)))


class GPT2MLP(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.hidden, cfg.ffn)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(cfg.ffn, cfg.hidden)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    """Pre-norm: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.attn = GPT2Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.mlp = GPT2MLP(cfg)

    def forward(self, x: Tensor) -> Tensor:
        x = self.attn(self.ln_1(x)) + x
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab, cfg.hidden)
        self.wpe = nn.Embedding(cfg.positions, cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList(GPT2Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.register_buffer("position_ids", torch.arange(cfg.positions).expand(1, -1), persistent=False)

    def forward(self, ids: Tensor) -> Tensor:
        x = self.drop(self.wte(ids) + self.wpe(self.position_ids[:, :ids.shape[1]]))
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    """Logits (B, S, vocab); lm_head shares its weight with transformer.wte."""

    def __init__(self, cfg: Config = GPT2) -> None:
        super().__init__()
        self.transformer = GPT2Model(cfg)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, ids: Tensor) -> Tensor:
        return self.lm_head(self.transformer(ids))


class OPTAttention(SelfAttention):
    """q, k, v and out projections with biases; the query scaled by 1/sqrt(head_dim) before the product."""

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg, causal=True)
        self.scaling = (cfg.hidden // cfg.heads) ** -0.5
        self.q_proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.k_proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.v_proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.out_proj = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x: Tensor) -> Tensor:
        # SDPA scales again by 1/sqrt(head_dim) where Hugging Face's eager path does not: the kernels and their
        # bytes are what the module mirrors, not the numbers it computes
        q = self.q_proj(x) * self.scaling
        return self.out_proj(self.attend(q, self.k_proj(x), self.v_proj(x)))


class OPTDecoderLayer(nn.Module):
    """Pre-norm: x + dropout(attn(LN(x))), then x + dropout(fc2(relu(fc1(LN(x)))))."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.self_attn = OPTAttention(cfg)
        self.final_layer_norm = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.fc1 = nn.Linear(cfg.hidden, cfg.ffn)
        self.activation_fn = nn.ReLU()
        self.fc2 = nn.Linear(cfg.ffn, cfg.hidden)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.dropout(self.self_attn(self.self_attn_layer_norm(x)))
        return x + self.dropout(self.fc2(self.activation_fn(self.fc1(self.final_layer_norm(x)))))


class OPTDecoder(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        self.embed_positions = nn.Embedding(cfg.positions + OPT_POSITION_OFFSET, cfg.hidden)
        self.layers = nn.ModuleList(OPTDecoderLayer(cfg) for _ in range(cfg.layers))
        self.final_layer_norm = nn.LayerNorm(cfg.hidden, eps=cfg.ln_eps)
        self.register_buffer("position_ids", torch.arange(cfg.positions).expand(1, -1) + OPT_POSITION_OFFSET,
                             persistent=False)

    def forward(self, ids: Tensor) -> Tensor:
        x = self.embed_tokens(ids) + self.embed_positions(self.position_ids[:, :ids.shape[1]])
        for layer in self.layers:
            x = layer(x)
        return self.final_layer_norm(x)


class OPTModel(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.decoder = OPTDecoder(cfg)

    def forward(self, ids: Tensor) -> Tensor:
        return self.decoder(ids)


class OPTForCausalLM(nn.Module):
    """Logits (B, S, vocab); lm_head shares its weight with model.decoder.embed_tokens."""

    def __init__(self, cfg: Config = OPT_1_3B) -> None:
        super().__init__()
        self.model = OPTModel(cfg)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        self.lm_head.weight = self.model.decoder.embed_tokens.weight

    def forward(self, ids: Tensor) -> Tensor:
        return self.lm_head(self.model(ids))

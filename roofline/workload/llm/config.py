"""A decoder-only transformer's shape, read from a Hugging Face style config.json or a built-in.

Only the numbers that set FLOPs, bytes and memory are kept: hidden size, layers, query and key/value heads
(GQA/MQA when fewer KV heads), the MLP's inner width and whether it is gated (SwiGLU: three matrices, else
two), vocabulary, tied embeddings, learned position embeddings (GPT-2), biases, mixture of experts (experts,
top-k) and the context the model was trained for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError
from roofline.files import is_file


class ConfigError(RooflineError):
    """A config.json that is missing keys or describes an impossible model."""


@dataclass(frozen=True)
class DecoderConfig:
    """One decoder-only model's shape. Counts are elements (parameters), not bytes."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    max_positions: int
    tied_embeddings: bool = False
    gated_mlp: bool = True
    """SwiGLU (gate, up, down: 3 matrices) as Llama/Mistral/Qwen/Phi-3; False: GPT-2's fc, proj (2)."""
    learned_positions: bool = False
    """GPT-2 adds a (max_positions x hidden) position table; rotary models have none."""
    bias: bool = False
    """Biases on every linear layer (GPT-2)."""
    qkv_bias: bool = False
    """Biases on the q, k, v projections only (Qwen2)."""
    layer_norm: bool = False
    """LayerNorm (weight and bias, GPT-2) instead of RMSNorm (weight only)."""
    experts: int = 1
    top_k: int = 1
    source: str = ""
    head_size: int | None = None
    """The config's own `head_dim` where it is not hidden / heads (Gemma: 16 heads of 256 over a hidden size of
    3072; Qwen3-0.6B, Mistral-Nemo): q and o are then hidden x heads x head_size, not hidden x hidden."""
    norms_per_layer: int = 2
    """Norms over the hidden width per layer: 2 (before attention, before the MLP); Gemma 2 and 3 add one after
    each (4)."""
    qk_norm: bool = False
    """An RMSNorm over each head's query and key (Qwen3, Gemma 3): head_dim weights each."""

    def __post_init__(self) -> None:
        for key in ("hidden", "layers", "heads", "kv_heads", "intermediate", "vocab", "max_positions",
                    "experts", "top_k", "norms_per_layer"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{self.name}: {key} must be a positive integer, got {value!r}")
        if self.head_size is not None and (not isinstance(self.head_size, int) or isinstance(self.head_size, bool)
                                           or self.head_size < 1):
            raise ConfigError(f"{self.name}: head_dim must be a positive integer, got {self.head_size!r}")
        if self.head_size is None and self.hidden % self.heads:
            raise ConfigError(f"{self.name}: {self.heads} attention heads do not divide the hidden size "
                              f"{self.hidden} (a config whose heads are another width says so in head_dim)")
        if self.heads % self.kv_heads:
            raise ConfigError(f"{self.name}: {self.kv_heads} key/value heads do not divide the {self.heads} "
                              "query heads")
        if self.top_k > self.experts:
            raise ConfigError(f"{self.name}: top-k {self.top_k} exceeds the {self.experts} experts")

    @property
    def head_dim(self) -> int:
        return self.head_size if self.head_size is not None else self.hidden // self.heads

    @property
    def q_width(self) -> int:
        """Elements of Q (and of attention's output) per token per layer: heads x head_dim."""
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Elements of K (or V) per token per layer: kv_heads x head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.gated_mlp else 2

    def attention_params(self) -> int:
        """q and o are hidden x q_width, k and v hidden x kv_width, plus biases where the model has them, plus
        the per-head query and key norms (`qk_norm`)."""
        weights = 2 * self.hidden * self.q_width + 2 * self.hidden * self.kv_width
        weights += 2 * self.head_dim if self.qk_norm else 0
        if self.bias:
            return weights + self.q_width + self.hidden + 2 * self.kv_width
        if self.qkv_bias:
            return weights + self.q_width + 2 * self.kv_width
        return weights

    def expert_params(self) -> int:
        """One MLP (one expert): mlp_matrices x hidden x intermediate, plus biases (fc: intermediate, proj:
        hidden) where the model has them."""
        weights = self.mlp_matrices * self.hidden * self.intermediate
        return weights + (self.intermediate + self.hidden if self.bias else 0)

    def norm_params(self) -> int:
        """`norms_per_layer` norms per layer, each hidden weights (+ hidden biases for LayerNorm)."""
        return self.norms_per_layer * self.hidden * (2 if self.layer_norm else 1)

    def router_params(self) -> int:
        return self.hidden * self.experts if self.experts > 1 else 0

    def layer_params(self) -> int:
        return (self.attention_params() + self.experts * self.expert_params() + self.norm_params()
                + self.router_params())

    def embedding_params(self) -> int:
        """Token table, position table (GPT-2), final norm and the lm_head unless tied to the token table."""
        table = self.vocab * self.hidden
        positions = self.max_positions * self.hidden if self.learned_positions else 0
        final_norm = self.hidden * (2 if self.layer_norm else 1)
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return table + positions + final_norm + head

    def params(self) -> int:
        return self.layers * self.layer_params() + self.embedding_params()

    def active_params(self) -> int:
        """Parameters one token uses: top_k of the experts (Mixtral: 2 of 8)."""
        inactive = (self.experts - self.top_k) * self.expert_params()
        return self.params() - self.layers * inactive


def _require(raw: dict[str, Any], where: str, *keys: str) -> Any:
    """The first of `keys` present in the config (models name the same field differently)."""
    for key in keys:
        if key in raw and raw[key] is not None:
            return raw[key]
    raise ConfigError(f"{where}: missing '{keys[0]}'" + (f" (or {', '.join(keys[1:])})" if keys[1:] else ""))


GATED_TYPES = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "phi3", "gemma", "gemma2",
                         "gemma3_text", "glm", "glm4", "olmo2", "olmoe", "granite"})
"""model_types whose layers are Llama's: RMSNorm, rotary positions, a gated MLP (gate, up, down: SwiGLU, or GeGLU
in Gemma) and no biases but where the config says (Qwen2's q, k, v)."""

UNGATED_TYPES = frozenset({"gpt_neox", "starcoder2"})
"""model_types with a two-matrix MLP (fc, proj) and a GELU, LayerNorm, biases on every linear layer and rotary
positions: GPT-NeoX (Pythia), StarCoder2."""

TIED_BY_DEFAULT = frozenset({"gemma", "gemma2", "gemma3_text", "starcoder2"})
"""model_types whose configuration class ties the lm_head to the token table when the file does not say
(transformers' GemmaConfig, Gemma2Config, Gemma3TextConfig, Starcoder2Config: tie_word_embeddings=True)."""

FOUR_NORM_TYPES = frozenset({"gemma2", "gemma3_text"})
"""model_types with a norm after attention and after the MLP as well as before each."""

QK_NORM_TYPES = frozenset({"qwen3", "qwen3_moe", "gemma3_text"})
"""model_types with an RMSNorm over each head's query and key (head_dim weights each)."""

NOT_DESCRIBED = {
    "opt": "learned positions offset by 2 and a ReLU MLP",
    "falcon": "a parallel attention and MLP block with its own key names",
    "bloom": "ALiBi positions and its own key names",
    "gptj": "a parallel block with partial rotary and its own key names",
    "phi": "a parallel block with partial rotary and a biased lm_head",
    "gpt_bigcode": "learned positions with multi-query attention",
    "mpt": "ALiBi positions and its own key names",
    "baichuan": "ALiBi positions",
    "deepseek_v2": "multi-head latent attention",
    "deepseek_v3": "multi-head latent attention",
    "qwen2_moe": "a shared expert beside the routed ones",
}
"""model_types read as another model would be priced wrongly, with what each has that no field here describes."""


def _unsupported(raw: dict[str, Any], name: str, model_type: str) -> None:
    """A one-line error for a config whose model this reader would price as another model."""
    supported = "gpt2, " + ", ".join(sorted(GATED_TYPES | UNGATED_TYPES))
    if model_type in NOT_DESCRIBED:
        raise ConfigError(f"{name}: model_type '{model_type}' ({NOT_DESCRIBED[model_type]}) is not described here; "
                          f"supported: {supported}")
    if raw.get("kv_lora_rank") or raw.get("q_lora_rank"):
        raise ConfigError(f"{name}: multi-head latent attention (kv_lora_rank) is not described here")
    if raw.get("n_shared_experts") or raw.get("shared_expert_intermediate_size"):
        raise ConfigError(f"{name}: shared experts beside the routed ones are not described here")
    sparse_step = raw.get("decoder_sparse_step", 1)
    if raw.get("first_k_dense_replace") or raw.get("mlp_only_layers") or sparse_step not in (1, None):
        raise ConfigError(f"{name}: dense layers among the mixture-of-experts layers (first_k_dense_replace, "
                          "mlp_only_layers, decoder_sparse_step) are not described here: every layer is one shape")
    act = raw.get("hidden_act") or raw.get("hidden_activation")
    if model_type and model_type not in GATED_TYPES | UNGATED_TYPES and act not in (None, "silu", "swish"):
        raise ConfigError(f"{name}: model_type '{model_type}' with hidden_act '{act}': whether its MLP is gated "
                          f"(three matrices) is not known here; supported: {supported}")


TEXT_MODEL_TYPES = {"gemma3": "gemma3_text"}
"""A multimodal model_type whose text_config may leave out its own model_type, and the type its text model is."""


def _text_model(raw: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config's language model (Gemma 3, Mistral Small 3.1, Qwen2.5-VL nest it under text_config): what
    generates the tokens; the vision tower runs only over images, which a prompt of text tokens has none of."""
    inner = dict(raw["text_config"])
    outer_type = str(raw.get("model_type", ""))
    inner.setdefault("model_type", TEXT_MODEL_TYPES.get(outer_type, outer_type))
    if "tie_word_embeddings" in raw:
        inner.setdefault("tie_word_embeddings", raw["tie_word_embeddings"])
    return inner


def from_hf_dict(raw: dict[str, Any], name: str) -> DecoderConfig:
    """A DecoderConfig from the keys of a Hugging Face config.json: Llama-style names (hidden_size,
    num_hidden_layers, ...) or GPT-2's (n_embd, n_layer, n_head, n_inner, n_positions). A model_type listed in
    GATED_TYPES or UNGATED_TYPES is read as its family is built; an unlisted one only where it has a SiLU MLP
    (read as Llama's gated one); every other config is refused rather than priced as another model."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{name}: expected a JSON object, got {type(raw).__name__}")
    if "hidden_size" not in raw and isinstance(raw.get("text_config"), dict):
        return from_hf_dict(_text_model(raw), name)
    model_type = str(raw.get("model_type", ""))
    gpt2 = model_type == "gpt2" or "n_embd" in raw
    for key in ("tie_word_embeddings", "attention_bias", "use_bias"):
        if key in raw and raw[key] is not None and not isinstance(raw[key], bool):
            raise ConfigError(f"{name}: {key} must be true or false, got {raw[key]!r}")
    if not gpt2:
        _unsupported(raw, name, model_type)
    hidden = _require(raw, name, "hidden_size", "n_embd")
    heads = _require(raw, name, "num_attention_heads", "n_head")
    layers = _require(raw, name, "num_hidden_layers", "n_layer")
    vocab = _require(raw, name, "vocab_size")
    if gpt2:
        inner = raw.get("n_inner")
        if inner is None:  # GPT-2's default MLP width
            inner = 4 * hidden if isinstance(hidden, int) else hidden
        positions = _require(raw, name, "n_positions", "max_position_embeddings")
        return DecoderConfig(name=name, hidden=hidden, layers=layers, heads=heads, kv_heads=heads,
                             intermediate=inner, vocab=vocab, max_positions=positions,
                             tied_embeddings=bool(raw.get("tie_word_embeddings", True)), gated_mlp=False,
                             learned_positions=True, bias=True, layer_norm=True, source=name)
    experts = raw.get("num_local_experts") or raw.get("num_experts") or 1
    top_k = raw.get("num_experts_per_tok", 2 if experts > 1 else 1) if experts > 1 else 1
    ungated = model_type in UNGATED_TYPES
    width = raw.get("moe_intermediate_size") if experts > 1 and raw.get("moe_intermediate_size") else None
    head_dim = raw.get("head_dim")
    if isinstance(hidden, int) and isinstance(heads, int) and heads and head_dim == hidden // heads:
        head_dim = None
    return DecoderConfig(
        name=name, hidden=hidden, layers=layers, heads=heads,
        kv_heads=raw.get("num_key_value_heads") or heads,
        intermediate=width or _require(raw, name, "intermediate_size"), vocab=vocab,
        max_positions=_require(raw, name, "max_position_embeddings"),
        tied_embeddings=bool(raw.get("tie_word_embeddings", model_type in TIED_BY_DEFAULT)),
        gated_mlp=not ungated, bias=ungated and bool(raw.get("use_bias", raw.get("attention_bias", True))),
        layer_norm=ungated,
        qkv_bias=model_type == "qwen2" or (not ungated and bool(raw.get("attention_bias", False))),
        experts=experts, top_k=top_k, source=name, head_size=head_dim,
        norms_per_layer=4 if model_type in FOUR_NORM_TYPES else 2, qk_norm=model_type in QK_NORM_TYPES)


def read_hf_config(path: str) -> DecoderConfig:
    """Read a config.json from disk (no network, no weights)."""
    return decoder_config(read_config_json(path), path)


def read_config_json(path: str) -> Any:
    """The parsed JSON of a config file; a missing or unreadable one is a one-line ConfigError."""
    p = Path(path)
    if not is_file(p, "config", ConfigError):
        raise ConfigError(f"{path}: no such config file")
    try:
        return json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON file ({str(exc).splitlines()[0]})") from None


def decoder_config(raw: Any, path: str) -> DecoderConfig:
    """`raw` (a config file's JSON) as a DecoderConfig named after the file (a config.json after its folder)."""
    p = Path(path)
    try:
        return from_hf_dict(raw, p.parent.name if p.name == "config.json" and p.parent.name else p.stem)
    except TypeError as exc:
        raise ConfigError(f"{path}: a field has the wrong type ({exc})") from None

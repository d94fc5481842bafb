"""A model's step from a Hugging Face GPT-2 config.json: the zoo's GPT-2 builder at the config's shape.

The language-model path reads any decoder's config.json to price serving (`roofline.workload.llm.config`); a
GPT-2 config (model_type gpt2: GPT2LMHeadModel) also prices a whole-sequence training or inference step, the
same ops as the zoo's `gpt2` family at the config's layers, width, heads, MLP width, vocabulary and positions.
Other architectures have no step builder here: their config is one line of error naming the path that reads it.
"""

from __future__ import annotations

from typing import Any

from roofline.workload.llm.config import ConfigError, decoder_config, read_config_json
from roofline.workload.zoo.transformer import GPT2, Config

MAX_STEP_LAYERS = 1024
"""Most layers a config.json's step is built with: the step lists each layer's ops, and the deepest published
decoders have 126 (Llama 3.1 405B), so a larger count is a typo, refused before it is unrolled."""
GPT2_ACTIVATIONS = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")
"""GPT-2 configs' `activation_function` values that are GELU's tanh approximation (transformers' ACT2CLS): the
zoo's tanh GELU, one fused kernel, or Hugging Face's formula with --gelu-new."""


def gpt2_step_config(path: str) -> tuple[str, Config]:
    """(the model's name, the zoo Config) of a GPT-2 config.json; a config of another architecture, a GPT-2 with an
    untied lm_head or an activation other than tanh GELU is refused in one line (the zoo's GPT-2 builder prices
    neither)."""
    raw = read_config_json(path)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    model_type = str(raw.get("model_type", "")) or "(no model_type)"
    if ("model_type" in raw and raw["model_type"] != "gpt2") or ("model_type" not in raw and "n_embd" not in raw):
        raise ConfigError(f"{path}: model_type '{model_type}' has no whole-sequence step here (GPT-2 configs, "
                          "model_type gpt2, do); a decoder's config is served with --prompt-len/--output-len")
    decoder = decoder_config(raw, path)
    if decoder.layers > MAX_STEP_LAYERS:
        raise ConfigError(f"{path}: n_layer {decoder.layers} is beyond the {MAX_STEP_LAYERS} layers a step is built "
                          "with (the deepest published decoders have 126)")
    if not decoder.tied_embeddings:
        raise ConfigError(f"{path}: tie_word_embeddings is false: the zoo's GPT-2 ties its lm_head to the token "
                          "embedding")
    activation = raw.get("activation_function", "gelu_new")
    if activation not in GPT2_ACTIVATIONS:
        raise ConfigError(f"{path}: activation_function '{activation}': the zoo's GPT-2 runs the tanh GELU "
                          f"({', '.join(GPT2_ACTIVATIONS)})")
    return decoder.name, Config(layers=decoder.layers, hidden=decoder.hidden, heads=decoder.heads,
                                ffn=decoder.intermediate, vocab=decoder.vocab, positions=decoder.max_positions,
                                token_types=0, dropout=_probability(raw, path, "resid_pdrop", GPT2.dropout),
                                ln_eps=_epsilon(raw, path, "layer_norm_epsilon", GPT2.ln_eps))


def _probability(raw: dict[str, Any], path: str, key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ConfigError(f"{path}: {key} must be a probability in [0, 1), got {value!r}")
    return float(value)


def _epsilon(raw: dict[str, Any], path: str, key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ConfigError(f"{path}: {key} must be a small positive number (0 < eps < 1), got {value!r}")
    return float(value)

"""Time a language model served by Hugging Face transformers' `generate` on this machine: the model built from
its config with random weights (no download), greedy decoding, prefill and per-token decode timed apart.

Prefill is `generate(max_new_tokens=1)`: one forward over the prompt and the first token's pick. The time per
output token is (generate(O tokens) - generate(1 token)) / (O - 1), both forced to their length
(min_new_tokens), each the median of `repeats` runs after a warm-up.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from roofline.errors import MissingDependency, RooflineError
from roofline.workload.llm.config import DecoderConfig


@dataclass(frozen=True)
class LiveServing:
    prefill_s: float
    tpot_s: float
    prefill_samples_s: tuple[float, ...]
    request_samples_s: tuple[float, ...]
    threads: int
    versions: dict[str, str]


def hf_config_dict(cfg: DecoderConfig) -> dict[str, Any]:
    """The transformers config that builds this shape (GPT-2 or Llama architecture); a shape neither builds
    (query/key norms, norms after each sublayer, a two-matrix MLP with rotary positions) is refused rather than
    timed as another model."""
    if cfg.learned_positions:
        return {"model_type": "gpt2", "n_embd": cfg.hidden, "n_layer": cfg.layers, "n_head": cfg.heads,
                "n_inner": cfg.intermediate, "vocab_size": cfg.vocab, "n_positions": cfg.max_positions}
    if cfg.qk_norm or cfg.norms_per_layer != 2 or not cfg.gated_mlp:
        raise RooflineError(f"{cfg.name}: live validation builds GPT-2- and Llama-shaped models only; this one has "
                            "query/key norms, norms after its sublayers or a two-matrix MLP")
    return {"model_type": "mixtral" if cfg.experts > 1 else "llama", "hidden_size": cfg.hidden,
            **({"head_dim": cfg.head_dim} if cfg.head_size is not None else {}),
            "num_hidden_layers": cfg.layers, "num_attention_heads": cfg.heads,
            "num_key_value_heads": cfg.kv_heads, "intermediate_size": cfg.intermediate, "vocab_size": cfg.vocab,
            "max_position_embeddings": cfg.max_positions, "tie_word_embeddings": cfg.tied_embeddings,
            **({"num_local_experts": cfg.experts, "num_experts_per_tok": cfg.top_k} if cfg.experts > 1 else {})}


def time_generate(cfg: DecoderConfig, batch: int, prompt: int, output: int, repeats: int = 5) -> LiveServing:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise MissingDependency(f"live LLM validation needs torch and transformers ({exc.name} missing): "
                                "pip install transformers") from None
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(**hf_config_dict(cfg))
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, cfg.vocab, (batch, prompt))
    mask = torch.ones_like(ids)

    def run(tokens: int) -> float:
        started = time.perf_counter()
        with torch.inference_mode():
            model.generate(ids, attention_mask=mask, max_new_tokens=tokens, min_new_tokens=tokens,
                           do_sample=False, pad_token_id=0)
        return time.perf_counter() - started

    run(1), run(min(output, 4))
    prefill = tuple(run(1) for _ in range(repeats))
    request = tuple(run(output) for _ in range(repeats))
    p, r = statistics.median(prefill), statistics.median(request)
    if r <= p:
        raise RooflineError(f"generating {output} tokens took no longer than generating 1 ({r * 1e3:.1f} against "
                            f"{p * 1e3:.1f} ms, median of {repeats}): the machine is too busy to time decode apart "
                            "from prefill; rerun with more --repeats or a longer --output-len on an idle machine")
    return LiveServing(p, (r - p) / max(output - 1, 1), prefill, request, torch.get_num_threads(),
                       {"torch": torch.__version__, "transformers": transformers.__version__})

"""What a given Hugging Face transformers release runs for a decoder's forward, where releases differ in bytes.

Eager generate's cost depends on which transformers a user runs, not only on the model: three changes moved
whole passes over memory in or out of every forward (each read in the release's modeling code or its pull
request, cited beside its threshold below). `--transformers X.Y` picks them; without it the current release's
behaviour is priced (the H100 runs of `benchmarks/gpu_live.py` used 5.17).

- Attention implementation: before SDPA became the default (Llama-style models: v4.36.0, which "started adding
  native support of torch.nn.functional.scaled_dot_product_attention (SDPA), enabled by default",
  huggingface/transformers#28005; GPT-2: huggingface/transformers#31172, opened 2024-06-01, whose companion
  GPTNeoX pull request #31031 shipped in v4.42.0) attention ran as its eager kernels: Q K^T written to memory,
  scaled, the mask added, softmax upcast to fp32 and cast back, then P V, over the full square.
- K and V repeated per query head: up to v4.53 the SDPA path (and the eager one, always) materialised grouped
  KV heads with `repeat_kv` before attention; huggingface/transformers#39412 (merged 2025-07, in v4.54) passes
  `enable_gqa=True` to SDPA instead when torch >= 2.5 and no mask is given.
- Logits: before v4.45.0, whose generate passes `num_logits_to_keep=1`, the lm_head ran on every prompt
  position, and Llama-style models upcast the whole (batch, tokens, vocab) tensor with `logits.float()`
  (LlamaForCausalLM.forward: `logits = self.lm_head(hidden_states); logits = logits.float()`); GPT-2's
  GPT2LMHeadModel returns its logits in the model's dtype.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roofline.errors import RooflineError

if TYPE_CHECKING:
    from roofline.workload.llm.config import DecoderConfig

SDPA_DEFAULT_SINCE = {"llama": (4, 36), "gpt2": (4, 42)}
ENABLE_GQA_SINCE = (4, 54)
LAST_LOGITS_SINCE = (4, 45)


@dataclass(frozen=True)
class TransformersRelease:
    """The forward a transformers release runs: `version` None is the current one."""

    version: tuple[int, int] | None = None
    eager_attention: bool = False
    """Attention as its eager kernels (`EagerCachedAttention`) rather than one SDPA kernel."""
    repeat_kv: bool = False
    """Grouped K and V copied out to every query head before attention (`RepeatKV`)."""
    all_logits: bool = False
    """The prompt's lm_head over every position, not the last one."""
    fp32_logits: bool = False
    """Those logits then upcast to fp32 by a kernel of their own (`logits.float()`)."""

    @property
    def label(self) -> str:
        return "current" if self.version is None else f"{self.version[0]}.{self.version[1]}"

    def describe(self) -> list[str]:
        """What this release adds to the forward, in words, for the report."""
        out = []
        if self.eager_attention:
            out.append("attention as its eager kernels (scores written, scaled, masked, softmax in fp32)")
        if self.repeat_kv:
            out.append("grouped K and V copied to every query head (repeat_kv)")
        if self.all_logits:
            out.append("the prompt's logits for every position" + (", upcast to fp32" if self.fp32_logits else ""))
        return out


CURRENT = TransformersRelease()


def parse_version(text: str) -> tuple[int, int]:
    """'4.35', '4.35.2' or 'v4.36.0' -> (4, 35); anything else is an actionable error."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:\.?dev\d*|rc\d*)?", text.strip())
    if not match:
        raise RooflineError(f"--transformers '{text}': give a release as MAJOR.MINOR, e.g. 4.35 or 4.45.2")
    return int(match.group(1)), int(match.group(2))


def transformers_release(version: str | None, cfg: DecoderConfig) -> TransformersRelease:
    """The forward release `version` (None: the current one) runs for `cfg`: GPT-2-style (learned positions)
    or Llama-style; K and V are repeated only where query heads share them (GQA, MQA)."""
    if version is None:
        return CURRENT
    v = parse_version(version)
    family = "gpt2" if cfg.learned_positions else "llama"
    all_logits = v < LAST_LOGITS_SINCE
    return TransformersRelease(version=v, eager_attention=v < SDPA_DEFAULT_SINCE[family],
                               repeat_kv=v < ENABLE_GQA_SINCE and cfg.kv_heads != cfg.heads,
                               all_logits=all_logits, fp32_logits=all_logits and not cfg.learned_positions)

"""Which path of a command reads each flag, so that a flag the chosen path would drop is refused.

One command line prices two things: a model's step (a zoo CNN or transformer, or one op; training or inference;
one GPU, or data-parallel over --gpus) and a language model's serving (prompt and output tokens through a KV
cache; tensor-parallel over --gpus). Each path reads only its own flags, and a flag the other path reads was
dropped without a word: `predict --model llama-3-8b --train` printed a serving prediction, `predict --model
resnet50 --prompt-len 128` a step, `predict ... --grad-accum 4` without --gpus a single-GPU step. A flag given
(set to other than its default) on a path that does not read it is now a one-line error naming the path that does.
`check_flag_scope` decides it for `predict`, `advise` and `analyze`; `check_modes` for a command whose modes are
its own (`validate`: a step, --ranks, --serve; `calibrate`: a device or --comm).
"""

from __future__ import annotations

import argparse

from roofline.errors import RooflineError

STEP_ONLY = ("train", "optimizer", "pinned", "data", "sync", "channels_last", "reserve_bytes", "fp32_math",
             "attention", "gelu_new", "input_size", "input_shape", "num_classes", "seq_len", "in_model", "html")
"""Read when a model's step is priced: the training loop, the input's placement, the layout and arithmetic."""
SERVING_ONLY = ("prompt_len", "output_len", "kv_precision", "group_size", "lm_head", "static_cache",
                "decode_attention", "expert_precision", "transformers", "quant_kernel", "head_weights", "accumulate",
                "runtime", "engine", "serve", "tpot_ms", "ttft_ms")
"""Read when a decoder language model is served."""
DATA_PARALLEL_ONLY = ("bucket_cap_mb", "grad_accum", "grad_comm", "library", "shard", "min_efficiency")
"""Read when a step is priced on several GPUs (--gpus with --train)."""
SEVERAL_GPUS_ONLY = ("nodes", "node", "allreduce")
"""Read on several GPUs, by either path."""


def given(args: argparse.Namespace, parser: argparse.ArgumentParser, dest: str) -> bool:
    """Whether the user set `dest` to other than the parser's default (absent flags are not given)."""
    return hasattr(args, dest) and getattr(args, dest) != parser.get_default(dest)


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_flag_scope(args: argparse.Namespace, parser: argparse.ArgumentParser, serving: bool,
                     several_gpus_only: tuple[str, ...] = (), step_only: tuple[str, ...] = ()) -> None:
    """Refuse the first flag the chosen path does not read. `serving`: the language-model path was chosen;
    `several_gpus_only`: this command's further flags read only with --gpus (predict's scaling --plot);
    `step_only`: its further flags read only on the step path (analyze's device, which the language-model
    counts do not compare with)."""
    model = getattr(args, "model", None) or "the op"
    if serving:
        for dest in (*STEP_ONLY, *DATA_PARALLEL_ONLY, *several_gpus_only, *step_only):
            if given(args, parser, dest):
                raise RooflineError(f"{_flag(dest)} does not apply to serving {model} (prompt and output tokens "
                                    "through a KV cache): drop it; a model's step (a zoo model without "
                                    "--prompt-len/--output-len/--serve) reads it")
    else:
        for dest in SERVING_ONLY:
            if given(args, parser, dest):
                raise RooflineError(f"{_flag(dest)} applies to serving a decoder language model (llama-3-8b, "
                                    f"mistral-7b, a config.json); {model} is priced as one step: drop it")
    if getattr(args, "gpus", None) is None:
        for dest in (*SEVERAL_GPUS_ONLY, *([] if serving else DATA_PARALLEL_ONLY), *several_gpus_only):
            if given(args, parser, dest):
                raise RooflineError(f"{_flag(dest)} applies to several GPUs: add --gpus N, or drop it")


def check_modes(args: argparse.Namespace, parser: argparse.ArgumentParser, mode: str,
                read_in: dict[str, tuple[str, ...]], named: dict[str, str]) -> None:
    """For a command with several modes (validate: a step, --ranks, --serve): refuse the first flag given that
    `mode` does not read. `read_in`: flag -> the modes that read it (flags not listed are read by all);
    `named`: mode -> how the user asks for it, for the message."""
    for dest, modes in read_in.items():
        if mode not in modes and given(args, parser, dest):
            asks = " or ".join(named[m] for m in modes)
            raise RooflineError(f"{_flag(dest)} applies {asks}, not {named[mode]}: drop it")

"""Turn `--model NAME|module:attr` (+ input options) or `--op SPEC` into a workload builder: a function
from batch size to Workload, which is what predictions and sweeps need."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline.errors import RooflineError, UnknownName, did_you_mean
from roofline.workload.ops.base import Workload


@dataclass(frozen=True)
class ModelRequest:
    model: str | None = None
    op: str | None = None
    input_size: int | None = None
    seq_len: int | None = None
    num_classes: int | None = None
    input_shape: tuple[int, ...] | None = None
    """For `module:attr` models and module instances: one sample's shape with a leading batch dimension."""
    module: Any = None
    """An `nn.Module` instance handed to the Python API (traced on a meta-device copy; the caller's is untouched)."""


def is_user_module(model: str) -> bool:
    return ":" in model


def workload_builder(req: ModelRequest) -> tuple[str, Callable[[int], Workload]]:
    """(display name, batch -> Workload). Zoo models never import torch; user modules must."""
    if req.op:
        from roofline.workload.opspec import op_workload

        wl = op_workload(req.op)
        return wl.name, lambda _batch: wl
    if req.module is not None:
        return _instance_builder(req.module, req.input_shape, req.model)
    if not req.model:
        raise RooflineError("give --model NAME (see `roofline analyze --help` for the zoo) or --op SPEC")
    if is_user_module(req.model):
        from roofline.workload.trace import trace_module_workload

        return req.model, lambda batch: trace_module_workload(req.model, batch, req.input_shape)
    from roofline.workload.zoo import build_workload, get_model

    try:
        spec = get_model(req.model)
    except UnknownName as exc:
        raise UnknownName(f"{exc}{_language_models(req.model)}") from None
    return spec.name, lambda batch: build_workload(req.model, batch, input_size=req.input_size,
                                                   num_classes=req.num_classes, seq_len=req.seq_len)


def _language_models(name: str) -> str:
    """The built-in language models' names for an unknown model's message, the closest first: a misspelt
    `qwen3-7b` is a language model the zoo's own list would not suggest."""
    from roofline.workload.llm.builtins import BUILTINS
    from roofline.workload.zoo import list_models

    zoo = {spec.name for spec in list_models()}
    served = [model for model in BUILTINS if model not in zoo]
    return (f"; language models (served with --prompt-len/--output-len){did_you_mean(name, served)}: "
            f"{', '.join(served)}; or a config.json path")


def _instance_builder(module: Any, input_shape: tuple[int, ...] | None,
                      name: str | None) -> tuple[str, Callable[[int], Workload]]:
    """Trace a module instance: a deep copy is moved to the meta device once (tracing moves what it traces),
    so the caller's weights stay where they are."""
    import copy

    from roofline.workload.trace import trace_module

    if not input_shape:
        raise RooflineError(f"a {type(module).__name__} instance needs input_shape, e.g. input_shape=(1, 3, 224, 224)")
    label = name or type(module).__name__
    meta_copy = copy.deepcopy(module).to("meta")
    return label, lambda batch: trace_module(meta_copy, (batch, *tuple(input_shape)[1:]), name=label)


MAX_BATCH = 1 << 24
"""Largest batch size taken: 16 million samples per step is beyond any device's memory."""
MAX_BATCHES = 64
"""Most batch sizes in one --batch list (a range 1:MAX_BATCH gives 25)."""
_INTEGER = re.compile(r"[+-]?[0-9]+")


def whole_number(value: str) -> int | None:
    """The whole number `value` writes in decimal digits, or None (no 1e3, 0x10, 1.5 or 2**10)."""
    stripped = value.strip()
    return int(stripped) if _INTEGER.fullmatch(stripped) and len(stripped) <= 30 else None


def parse_batches(text: str) -> list[int]:
    """'32' -> [32]; '1,8,32' -> [1, 8, 32]; '1:1024' -> powers of two from 1 to 1024 inclusive. Sizes are whole
    numbers from 1 to MAX_BATCH, at most MAX_BATCHES of them."""
    usage = (f"--batch '{text}': expected N, a list like 1,8,32, or a range like 1:1024 (whole numbers from 1 to "
             f"{MAX_BATCH}, at most {MAX_BATCHES} of them)")
    if ":" in text:
        lo, hi = (whole_number(part) for part in text.split(":", 1))
        if lo is None or hi is None or not 1 <= lo <= hi <= MAX_BATCH:
            raise RooflineError(usage)
        values = [lo << i for i in range((hi // lo).bit_length())]
        return values if values[-1] == hi else [*values, hi]
    parts = text.split(",")
    values = [whole_number(v) for v in parts if v.strip()]
    if not values or len(parts) > MAX_BATCHES or any(v is None or not 1 <= v <= MAX_BATCH for v in values):
        raise RooflineError(usage)
    return [v for v in values if v is not None]

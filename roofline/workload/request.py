"""Turn `--model NAME|module:attr` (+ input options) or `--op SPEC` into a workload builder: a function
from batch size to Workload, which is what predictions and sweeps need."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline.errors import RooflineError
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

    spec = get_model(req.model)
    return spec.name, lambda batch: build_workload(spec.name, batch, input_size=req.input_size,
                                                   num_classes=req.num_classes, seq_len=req.seq_len)


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


def parse_batches(text: str) -> list[int]:
    """'32' -> [32]; '1,8,32' -> [1, 8, 32]; '1:1024' -> powers of two from 1 to 1024 inclusive."""
    try:
        if ":" in text:
            lo_text, hi_text = text.split(":", 1)
            lo, hi = int(lo_text), int(hi_text)
            if lo < 1 or hi < lo:
                raise ValueError
            values = []
            b = lo
            while b <= hi:
                values.append(b)
                b *= 2
            if values[-1] != hi:
                values.append(hi)
            return values
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise RooflineError(f"--batch '{text}': expected N, a list like 1,8,32, or a range like 1:1024 "
                            "(positive integers)") from None
    if not values or any(v < 1 for v in values):
        raise RooflineError(f"--batch '{text}': batch sizes must be positive integers")
    return values

"""Turn `--model NAME|module:attr` (+ input options) or `--op SPEC` into a workload builder: a function
from batch size to Workload, which is what predictions and sweeps need."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
    """For `module:attr` models: one sample's shape with a leading batch dimension."""


def is_user_module(model: str) -> bool:
    return ":" in model


def workload_builder(req: ModelRequest) -> tuple[str, Callable[[int], Workload]]:
    """(display name, batch -> Workload). Zoo models never import torch; user modules must."""
    if req.op:
        from roofline.workload.opspec import op_workload

        wl = op_workload(req.op)
        return wl.name, lambda _batch: wl
    if not req.model:
        raise RooflineError("give --model NAME (see `roofline analyze --help` for the zoo) or --op SPEC")
    if is_user_module(req.model):
        from roofline.workload.trace import trace_module_workload

        return req.model, lambda batch: trace_module_workload(req.model, batch, req.input_shape)
    from roofline.workload.zoo import build_workload, get_model

    spec = get_model(req.model)
    return spec.name, lambda batch: build_workload(spec.name, batch, input_size=req.input_size,
                                                   num_classes=req.num_classes, seq_len=req.seq_len)

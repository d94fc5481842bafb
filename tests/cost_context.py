"""The cost context several cost-model tests price one op in: a GPU profile's ceilings at one precision, with
activations and weights stored at that precision's width (what a step of that precision hands each op)."""

from __future__ import annotations

from typing import Any

from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.context import CostContext
from roofline.workload.precision import get_precision


def gpu_context(profile: str, precision: str, **options: Any) -> CostContext:
    """`options` are further `CostContext` fields (e.g. weight_reuse_bytes)."""
    p = get_precision(precision)
    return CostContext(ceilings_for(find_profile(profile, kind="gpu"), p), p.storage_bytes, p.storage_bytes,
                       **options)

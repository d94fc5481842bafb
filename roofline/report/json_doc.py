"""JSON documents: every command's `--json` output and every API result's `.to_json()` go through here, so
both spell numbers the same way."""

from __future__ import annotations

import json
import math
from typing import Any


def json_safe(obj: Any) -> Any:
    """JSON-safe: sympy numbers -> float, inf/nan -> None, tuples -> lists."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    try:
        value = float(obj)
    except (TypeError, ValueError):
        return str(obj)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def json_text(obj: Any, indent: int | None = 2) -> str:
    return json.dumps(json_safe(obj), indent=indent)

"""Argument helpers shared by commands: output mode, hardware selection, batch lists."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from roofline.errors import RooflineError


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout and nothing else")


def add_hw_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--hw", metavar="NAME|PATH", help="any hardware profile, by name, alias or YAML path")
    group.add_argument("--gpu", metavar="NAME", help="a GPU profile (e.g. v100, a100, h100)")
    group.add_argument("--cpu", metavar="NAME", help="a CPU profile (e.g. textbook, xeon-8380)")


def selected_profile(args: argparse.Namespace):
    """The profile named by --hw / --gpu / --cpu."""
    from roofline.hardware import find_profile

    if getattr(args, "gpu", None):
        return find_profile(args.gpu, kind="gpu")
    if getattr(args, "cpu", None):
        return find_profile(args.cpu, kind="cpu")
    return find_profile(args.hw)


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


def _clean(obj: Any) -> Any:
    """JSON-safe: sympy numbers -> float, inf/nan -> None, tuples -> lists."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
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


def print_json(obj: Any) -> None:
    json.dump(_clean(obj), sys.stdout, indent=2)
    sys.stdout.write("\n")

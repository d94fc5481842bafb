"""Argument helpers shared by commands: output mode, hardware selection, batch lists."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

from roofline.errors import RooflineError

MAX_ARGUMENT_CHARS = 4096
"""Longest text argument: a path's limit (PATH_MAX) on Linux; names and specs are far shorter."""
MAX_BATCH = 1 << 24
"""Largest batch size taken: 16 million samples per step is beyond any device's memory."""
MAX_BATCHES = 64
"""Most batch sizes in one --batch list (a range 1:MAX_BATCH gives 25)."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_INTEGER = re.compile(r"[+-]?[0-9]+")


def text(value: str) -> str:
    """argparse type for an option that needs a value: refuses an empty or blank string (which would otherwise
    read as 'not given' and quietly change what runs), control characters, and absurd lengths."""
    if not value.strip():
        raise argparse.ArgumentTypeError("expected a value, got an empty string")
    if len(value) > MAX_ARGUMENT_CHARS:
        raise argparse.ArgumentTypeError(f"longer than {MAX_ARGUMENT_CHARS} characters")
    if _CONTROL.search(value):
        raise argparse.ArgumentTypeError(f"{value!r} holds a control character")
    return value


def _whole(value: str) -> int | None:
    stripped = value.strip()
    return int(stripped) if _INTEGER.fullmatch(stripped) and len(stripped) <= 30 else None


def integer(least: int, most: int) -> Callable[[str], int]:
    """argparse type for a whole number in [least, most], written in decimal digits (no 1e3, 0x10 or 1.5)."""

    def parse(value: str) -> int:
        number = _whole(value)
        if number is None:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}")
        if not least <= number <= most:
            raise argparse.ArgumentTypeError(f"{number} is out of range: expected {least} to {most}")
        return number

    return parse


def number(least: float, most: float, exclusive_least: bool = False) -> Callable[[str], float]:
    """argparse type for a finite decimal number in [least, most] ((least, most] when `exclusive_least`)."""

    def parse(value: str) -> float:
        try:
            result = float(value) if value.isascii() else math.nan
        except ValueError:
            result = math.nan
        if not math.isfinite(result):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {value!r}")
        if result < least or result > most or (exclusive_least and result == least):
            bound = f"more than {least:g}" if exclusive_least else f"at least {least:g}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: expected {bound} and at most {most:g}")
        return result

    return parse


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout and nothing else")


def add_hw_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--hw", type=text, metavar="NAME|PATH",
                       help="any hardware profile, by name, alias or YAML path")
    group.add_argument("--gpu", type=text, metavar="NAME", help="a GPU profile (e.g. v100, a100, h100)")
    group.add_argument("--cpu", type=text, metavar="NAME", help="a CPU profile (e.g. textbook, xeon-8380)")


def selected_profile(args: argparse.Namespace):
    """The profile named by --hw / --gpu / --cpu."""
    from roofline.hardware import find_profile

    if getattr(args, "gpu", None):
        return find_profile(args.gpu, kind="gpu")
    if getattr(args, "cpu", None):
        return find_profile(args.cpu, kind="cpu")
    return find_profile(args.hw)


def parse_batches(text: str) -> list[int]:
    """'32' -> [32]; '1,8,32' -> [1, 8, 32]; '1:1024' -> powers of two from 1 to 1024 inclusive. Sizes are whole
    numbers from 1 to MAX_BATCH, at most MAX_BATCHES of them."""
    usage = (f"--batch '{text}': expected N, a list like 1,8,32, or a range like 1:1024 (whole numbers from 1 to "
             f"{MAX_BATCH}, at most {MAX_BATCHES} of them)")
    if ":" in text:
        lo, hi = (_whole(part) for part in text.split(":", 1))
        if lo is None or hi is None or not 1 <= lo <= hi <= MAX_BATCH:
            raise RooflineError(usage)
        values = [lo << i for i in range((hi // lo).bit_length())]
        return values if values[-1] == hi else [*values, hi]
    parts = text.split(",")
    values = [_whole(v) for v in parts if v.strip()]
    if not values or len(parts) > MAX_BATCHES or any(v is None or not 1 <= v <= MAX_BATCH for v in values):
        raise RooflineError(usage)
    return [v for v in values if v is not None]


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

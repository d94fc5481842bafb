"""Argument helpers shared by commands: output mode, hardware selection, batch lists."""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable
from typing import Any

from roofline.workload.request import whole_number

MAX_GPUS = 1 << 20
"""Most GPUs a data-parallel question may name: a million, beyond any cluster."""
MAX_ARGUMENT_CHARS = 4096
"""Longest text argument: a path's limit (PATH_MAX) on Linux; names and specs are far shorter."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


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


def integer(least: int, most: int) -> Callable[[str], int]:
    """argparse type for a whole number in [least, most], written in decimal digits (no 1e3, 0x10 or 1.5)."""

    def parse(value: str) -> int:
        number = whole_number(value)
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
    from roofline.api import select_profile

    return select_profile(getattr(args, "hw", None), getattr(args, "gpu", None), getattr(args, "cpu", None))


def print_json(obj: Any) -> None:
    from roofline.report.json_doc import json_text

    sys.stdout.write(json_text(obj) + "\n")

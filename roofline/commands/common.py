"""Argument helpers shared by commands: output mode, hardware selection, batch lists."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout and nothing else")


def add_hw_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--hw", metavar="NAME|PATH", help="any hardware profile, by name, alias or YAML path")
    group.add_argument("--gpu", metavar="NAME", help="a GPU profile (e.g. v100, a100, h100)")
    group.add_argument("--cpu", metavar="NAME", help="a CPU profile (e.g. textbook, xeon-8380)")


def selected_profile(args: argparse.Namespace):
    """The profile named by --hw / --gpu / --cpu."""
    from roofline.api import select_profile

    return select_profile(getattr(args, "hw", None), getattr(args, "gpu", None), getattr(args, "cpu", None))


def print_json(obj: Any) -> None:
    from roofline.report.json_doc import json_text

    sys.stdout.write(json_text(obj) + "\n")

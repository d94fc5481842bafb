"""The `roofline` command (entry point `roofline.cli:main`): parse arguments, call the library, render.

Every command accepts `--json` and then prints exactly one JSON document on stdout. A user error
(`RooflineError`) becomes one line on stderr and exit status 2; nothing is written to the user's files.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from roofline.commands import COMMANDS
from roofline.errors import RooflineError, UsageError, one_line


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are raised, not printed with a usage block, so that they reach the user as the
    contract's one line; subcommand parsers are of this class too (argparse creates them from the parent's)."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (`{self.prog} --help` lists the arguments)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="roofline",
        description="How fast will this model run on that CPU or GPU, why, and what to change.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


ONE_COMMAND_GC_THRESHOLD = 100_000
"""Allocations between two young-generation collections while a command runs (CPython's default is 700). A
command builds tens of thousands of small objects (ops, costs, notes) that all live until it answers, so each
collection scans them and frees nothing: at the default, `advise --train --gpu h100` spent 65 ms of its 0.70 s
of prediction in the collector (benchmarks/LOG.md). Reference cycles are still collected, only less often."""


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect less often while one command runs, and restore the caller's thresholds after (tests and
    notebooks call `main` in their own process)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(ONE_COMMAND_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def main(argv: list[str] | None = None) -> int:
    try:
        with _fewer_collections():
            args = build_parser().parse_args(argv)
            return int(args.handler(args) or 0)
    except RooflineError as exc:
        print(f"roofline: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("roofline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""Subcommands of `roofline`, one module each: `add_parser(subparsers)` wires arguments to a handler.

A handler computes through the library, then either prints one JSON document (`--json`) or renders with
rich. Keeping each command's parsing and rendering in its own module keeps `cli.py` a table of contents.

May import anything in roofline; nothing in roofline imports commands.
"""

from roofline.commands import (
    advise_cmd,
    analyze_cmd,
    bench_cmd,
    calibrate_cmd,
    explain_cmd,
    hw_cmd,
    predict_cmd,
    validate_cmd,
)

COMMANDS = [hw_cmd, explain_cmd, analyze_cmd, predict_cmd, advise_cmd, calibrate_cmd, bench_cmd, validate_cmd]

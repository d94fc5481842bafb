"""`roofline calibrate`: measure this machine's ceilings and write a calibrated profile.

Progress goes to stderr (rich), so `--json` leaves stdout to the one JSON document. The output file defaults
to the calibrated directory the profile loader searches ($ROOFLINE_HOME/calibrated or
~/.cache/roofline/calibrated); an existing file is replaced only with --force, and is checked before any
benchmark runs so a refusal costs nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from roofline.commands.common import add_json_flag, print_json


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="measure this machine's ceilings, write a calibrated profile",
                              description="Run the microbenchmarks (GEMM per dtype and size, bandwidth per "
                              "working set, convolutions, dispatch and sync overheads, host<->device copies "
                              "on CUDA) and write the measured ceilings into a profile.")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="what to measure (default cpu)")
    p.add_argument("--quick", action="store_true", help="sparser sweeps, shorter budgets (about 25 s on a 2-core CPU)")
    p.add_argument("--out", metavar="FILE", help="where to write the profile (default: the calibrated directory)")
    p.add_argument("--dtypes", metavar="LIST", help="GEMM dtypes to measure, e.g. fp32,bf16 (fp32 always is; "
                   "default: all this device runs, and numpy's)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--hw", metavar="NAME|PATH", help="datasheet GPU profile to calibrate (default: matched)")
    add_json_flag(p)
    p.set_defaults(handler=run)


def _dtypes(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(d.strip() for d in text.split(",") if d.strip())


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from roofline import api

    total = api.calibration_steps(args.device, args.quick)
    err = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err,
                  transient=args.json) as progress:
        task = progress.add_task("calibrating", total=total)
        started = []

        def on_step(name: str) -> None:
            if started:
                progress.advance(task)
            started.append(name)
            progress.update(task, description=f"measuring {name}")

        result = api.calibrate(args.device, quick=args.quick, out=args.out, dtypes=_dtypes(args.dtypes),
                               force=args.force, hw=args.hw, on_step=on_step)
        progress.update(task, completed=total, description="done")
    if args.json:
        print_json(result.to_dict())
        return 0
    from roofline.report.calibrate_view import render_calibration

    render_calibration(result.calibration, Path(result.profile_path), Console())
    return 0

"""`roofline calibrate`: measure this machine's ceilings and write a calibrated profile.

Progress goes to stderr (rich), so `--json` leaves stdout to the one JSON document. The output file defaults
to the calibrated directory the profile loader searches ($ROOFLINE_HOME/calibrated or
~/.cache/roofline/calibrated); an existing file is replaced only with --force, and is checked before any
benchmark runs so a refusal costs nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from roofline.commands.common import add_json_flag, print_json, text
from roofline.errors import RooflineError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="measure this machine's ceilings, write a calibrated profile",
                              description="Run the microbenchmarks (GEMM per dtype and size, bandwidth per "
                              "working set, convolutions, dispatch and sync overheads, host<->device copies "
                              "on CUDA) and write the measured ceilings into a profile.")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="what to measure (default cpu)")
    p.add_argument("--quick", action="store_true", help="sparser sweeps, shorter budgets (about 25 s on a 2-core CPU)")
    p.add_argument("--out", type=text, metavar="FILE",
                   help="where to write the profile (default: the calibrated directory)")
    p.add_argument("--dtypes", type=text, metavar="LIST",
                   help="GEMM dtypes to measure, e.g. fp32,bf16 (fp32 always is; "
                   "default: all this device runs, and numpy's)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--hw", type=text, metavar="NAME|PATH", help="datasheet GPU profile to calibrate (default: matched)")
    add_json_flag(p)
    p.set_defaults(handler=run)


def _target(args: argparse.Namespace, profile_name: str) -> Path:
    from roofline.measure.calibrate import calibrated_path

    return Path(args.out) if args.out else calibrated_path(profile_name)


def _dtypes(text: str | None) -> tuple[str, ...] | None:
    from roofline.measure.probes.gemm import CPU_TORCH_DTYPES, CUDA_TORCH_DTYPES

    if text is None:
        return None
    names = tuple(d.strip() for d in text.split(",") if d.strip())
    known = dict.fromkeys((*CPU_TORCH_DTYPES, *CUDA_TORCH_DTYPES))
    unknown = [d for d in names if d not in known]
    if unknown or not names:
        raise RooflineError(f"--dtypes '{text}': expected a comma list of {', '.join(known)}")
    return names


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from roofline.files import check_target
    from roofline.measure import calibrate

    plan = calibrate.Plan(args.device, args.quick, _dtypes(args.dtypes))
    profile = calibrate.base_profile(args.device, args.hw)
    path = _target(args, profile.name)
    check_target(path, "--out", args.force, parent_must_exist=args.out is not None)
    err = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err,
                  transient=args.json) as progress:
        task = progress.add_task("calibrating", total=len(plan.steps()))
        started = []

        def on_step(name: str) -> None:
            if started:
                progress.advance(task)
            started.append(name)
            progress.update(task, description=f"measuring {name}")

        result = calibrate.run(plan, profile, on_step)
        progress.update(task, completed=len(plan.steps()), description="done")
    calibrate.write_profile(result.profile, path, args.force)
    if args.json:
        print_json({"measured": result.measured.model_dump(mode="json"), "profile_path": str(path.resolve()),
                    "details": result.details, "warnings": result.warnings})
        return 0
    from roofline.report.calibrate_view import render_calibration

    render_calibration(result, path, Console())
    return 0

"""`roofline calibrate`: measure this machine's ceilings and write a calibrated profile.

Progress goes to stderr (rich), so `--json` leaves stdout to the one JSON document. The output file defaults
to the calibrated directory the profile loader searches ($ROOFLINE_HOME/calibrated or
~/.cache/roofline/calibrated); an existing file is replaced only with --force, and is checked before any
benchmark runs so a refusal costs nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from roofline.commands.common import add_json_flag, integer, print_json, text
from roofline.commands.flag_scope import check_modes
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
    p.add_argument("--comm", action="store_true",
                   help="measure gloo all-reduce between local processes instead (bus bandwidth, latency) and "
                        "write it as a link profile")
    p.add_argument("--ranks", type=integer(2, 256), default=2, metavar="N", help="processes for --comm (default 2)")
    add_json_flag(p)
    p.set_defaults(handler=run, flag_parser=p)


def run_comm(args: argparse.Namespace) -> int:
    from roofline.files import check_target
    from roofline.measure.comm_calibration import default_path, write_link
    from roofline.measure.gloo_ranks import measure_allreduce

    if args.ranks < 2:
        raise RooflineError(f"--ranks must be at least 2 for an all-reduce, got {args.ranks}")
    path = Path(args.out) if args.out else default_path()
    check_target(path, "--out", args.force, parent_must_exist=args.out is not None)
    fit = measure_allreduce(args.ranks)
    write_link(fit, path, args.force, create_directory=args.out is None)
    out = {"measured": {"backend": "gloo", "ranks": fit.ranks, "bus_bandwidth_bytes_per_s":
                        fit.bus_bandwidth_bytes_per_s, "latency_s": fit.latency_s,
                        "allreduce_times_s": {str(k): v for k, v in fit.times_s.items()}},
           "profile_path": str(path.resolve())}
    if args.json:
        print_json(out)
        return 0
    from roofline.units import format_si

    for size, t in fit.times_s.items():
        print(f"all-reduce {format_si(size, 'B'):>10} on {fit.ranks} gloo ranks: {format_si(t, 's')}")
    print(f"bus bandwidth {format_si(fit.bus_bandwidth_bytes_per_s, 'B/s')}, latency "
          f"{format_si(fit.latency_s, 's')} per ring step; wrote {path}")
    return 0


def _dtypes(text: str | None) -> tuple[str, ...] | None:
    """--dtypes as a tuple, refused before any measuring (and before the progress bar) when a name is unknown."""
    from roofline.measure.probes.gemm import CPU_TORCH_DTYPES, CUDA_TORCH_DTYPES

    if text is None:
        return None
    names = tuple(d.strip() for d in text.split(",") if d.strip())
    known = dict.fromkeys((*CPU_TORCH_DTYPES, *CUDA_TORCH_DTYPES))
    unknown = [d for d in names if d not in known]
    if unknown or not names:
        raise RooflineError(f"--dtypes '{text}': expected a comma list of {', '.join(known)}")
    return names


MODES = {"device": "to a device's calibration (without --comm)", "comm": "with --comm"}
"""calibrate's two modes, as the user asks for each."""
READ_IN = {"ranks": ("comm",), "device": ("device",), "quick": ("device",), "dtypes": ("device",),
           "hw": ("device",)}
"""The flags one mode reads: --comm times gloo all-reduces between local processes, nothing of a device."""


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from roofline import api

    check_modes(args, args.flag_parser, "comm" if args.comm else "device", READ_IN, MODES)
    if args.comm:
        return run_comm(args)
    dtypes = _dtypes(args.dtypes)
    total = api.calibration_steps(args.device, args.quick)
    err = Console(stderr=True)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err,
                        transient=args.json)
    task = progress.add_task("calibrating", total=total)
    started: list[str] = []

    def on_step(name: str) -> None:
        # the bar appears with the first measurement: a refusal before it (a bad --hw, an existing --out) stays
        # the contract's one line on stderr
        if started:
            progress.advance(task)
        else:
            progress.start()
        started.append(name)
        progress.update(task, description=f"measuring {name}")

    try:
        result = api.calibrate(args.device, quick=args.quick, out=args.out, dtypes=dtypes,
                               force=args.force, hw=args.hw, on_step=on_step)
        progress.update(task, completed=total, description="done")
    finally:
        if started:
            progress.stop()
    if args.json:
        print_json(result.to_dict())
        return 0
    from roofline.report.calibrate_view import render_calibration

    render_calibration(result.calibration, Path(result.profile_path), Console())
    return 0

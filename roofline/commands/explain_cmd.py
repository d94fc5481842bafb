"""`roofline explain`: one device's roofline in its own numbers, and which operations land on which side."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_hw_args, add_json_flag, print_json, selected_profile, text


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("explain", help="why compute outruns memory on a device, in numbers",
                              description="The roofline of one device from its profile: compute and memory "
                              "bandwidth with their formulas, the ridge point, and where common ops land.")
    add_hw_args(p)
    p.add_argument("--precision", type=text, default="fp32", metavar="P",
                   help="dtype the example operations run in (default fp32)")
    s = p.add_argument_group("the scaling lesson: why N GPUs do not give N x")
    s.add_argument("--scaling", action="store_true", help="explain sub-linear multi-GPU scaling instead")
    s.add_argument("--gpus", type=int, default=100, metavar="N", help="GPU count of the lesson (default 100)")
    s.add_argument("--speedup", type=float, default=56.0, metavar="S",
                   help="speed-up observed on --gpus GPUs (default the classic 56)")
    s.add_argument("--model", metavar="NAME", help="also sweep this model's predicted strong scaling")
    s.add_argument("--batch", type=int, default=1024, metavar="B", help="global batch for --model (default 1024)")
    add_json_flag(p)
    p.set_defaults(handler=run, flag_parser=p)


def run_scaling(args: argparse.Namespace) -> int:
    from roofline.errors import RooflineError
    from roofline.model.comm.scaling import amdahl_speedup, fixed_fraction_for

    if not 1 <= args.speedup <= args.gpus:
        raise RooflineError(f"--speedup must lie between 1 and --gpus ({args.gpus}), got {args.speedup}")
    fraction = fixed_fraction_for(args.speedup, args.gpus)
    out: dict[str, Any] = {
        "gpus": args.gpus, "speedup": args.speedup, "fixed_fraction_of_one_gpu_step": fraction,
        "formula": "speedup(N) = T1 / (T1/N + C) = N / (1 + N C / T1); C / T1 = (N / S - 1) / N",
        "curve": [{"gpus": n, "speedup": amdahl_speedup(n, fraction)} for n in (1, 2, 4, 8, 16, 32, 64, 100,
                                                                               128, 256, 512, 1024)],
    }
    if args.model:
        from roofline.model.comm.job import node_for
        from roofline.model.comm.scaling import strong_scaling
        from roofline.model.step import StepOptions
        from roofline.workload.precision import get_precision
        from roofline.workload.request import ModelRequest, workload_builder

        profile = selected_profile(args)
        precision = get_precision(args.precision)
        node = node_for(profile, None)
        _, build = workload_builder(ModelRequest(model=args.model))
        points = strong_scaling(build, profile, precision, StepOptions(train=True), node, args.batch,
                                args.gpus, precision.master_weight_bytes)
        out["model"] = {"name": args.model, "node": node.name, "global_batch": args.batch,
                        "points": [{**vars(p), "scaling_efficiency": p.scaling_efficiency} for p in points]}
    if args.json:
        print_json(out)
        return 0
    from roofline.report.parallel_view import render_scaling_lesson

    render_scaling_lesson(out)
    return 0


SCALING_LESSON_ONLY = ("gpus", "speedup", "model", "batch")
"""The scaling lesson's flags, which the roofline explanation does not read."""


def _check_lesson_flags(args: argparse.Namespace) -> None:
    """Refuse a scaling-lesson flag without --scaling, and --batch (the --model sweep's) without --model, rather
    than explain something else without a word."""
    from roofline.commands.flag_scope import given
    from roofline.errors import RooflineError

    if not args.scaling:
        for dest in SCALING_LESSON_ONLY:
            if given(args, args.flag_parser, dest):
                raise RooflineError(f"--{dest} belongs to the scaling lesson: add --scaling, or drop it")
    elif given(args, args.flag_parser, "batch") and not args.model:
        raise RooflineError("--batch is the global batch of --model's scaling sweep: add --model NAME, or drop it")


def run(args: argparse.Namespace) -> int:
    _check_lesson_flags(args)
    if args.scaling:
        return run_scaling(args)
    from roofline.advise.explain import explain

    out = explain(selected_profile(args), args.precision)
    if args.json:
        print_json(out)
        return 0
    from roofline.report.explain_view import render_explanation

    render_explanation(out)
    return 0

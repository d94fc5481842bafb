"""`roofline advise`: which batch size and precision to use on a device, how fast, how much memory, why."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import (
    add_hw_args,
    add_json_flag,
    integer,
    number,
    print_json,
    selected_profile,
    text,
)
from roofline.commands.model_args import MAX_RESERVE_BYTES, MAX_SYNC_POINTS, add_model_args


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("advise", help="recommend batch size and precision, explained in numbers",
                              description="Sweep batch size and precision for a model on a device and recommend.")
    add_model_args(p)
    add_hw_args(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--train", action="store_true", help="training steps (forward+backward+optimizer)")
    mode.add_argument("--infer", action="store_true", help="inference (the default)")
    p.add_argument("--precision", type=text, default="auto", metavar="auto|P", help="auto (default) or one precision")
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"])
    p.add_argument("--pinned", action="store_true", help="inputs in pinned memory (copies overlap compute)")
    p.add_argument("--sync", type=integer(0, MAX_SYNC_POINTS), default=0, metavar="N",
                   help="sync points per step (e.g. loss.item())")
    p.add_argument("--channels-last", action="store_true",
                   help="activations in NHWC (torch.channels_last): no layout transposes around tensor-core "
                        "convolutions")
    p.add_argument("--reserve-bytes", type=number(0, MAX_RESERVE_BYTES), metavar="BYTES",
                   help="device memory unavailable to tensors")
    p.add_argument("--plot", type=text, metavar="DIR|FILE.png|FILE.svg",
                   help="write the roofline and batch-sweep plots (into DIR as a PNG, or to FILE)")
    p.add_argument("--force", action="store_true", help="let --plot replace an existing file")
    add_json_flag(p)
    p.set_defaults(handler=run)


def sweep_rows(advice: Any) -> list[dict[str, Any]]:
    return [{"batch_size": p.batch_size, "precision": p.precision, "step_time_s": p.step_time_s,
             "samples_per_s": p.samples_per_s, "memory_bytes": p.memory.total}
            for p in sorted(advice.sweep, key=lambda p: (p.precision, p.batch_size))]


def advice_dict(advice: Any) -> dict[str, Any]:
    rec = advice.recommended
    return {
        "model": advice.model, "device": advice.device, "train": advice.train,
        "recommended": {"batch_size": advice.recommended_batch, "precision": advice.recommended_precision,
                        "step_time_s": rec.step_time_s, "samples_per_s": rec.samples_per_s,
                        "memory_bytes": rec.memory.total},
        "max_batch_size": advice.max_batch_size,
        "max_batch_size_by_precision": advice.max_batch_by_precision,
        "neighbours": [{"batch_size": p.batch_size, "step_time_s": p.step_time_s, "samples_per_s": p.samples_per_s,
                        "memory_bytes": p.memory.total} for p in advice.neighbours],
        "sweep": sweep_rows(advice),
        "reasons": advice.reasons,
    }


def run(args: argparse.Namespace) -> int:
    from roofline.advise.advisor import advise
    from roofline.commands.model_args import model_request
    from roofline.model.step import StepOptions
    from roofline.workload.request import workload_builder

    profile = selected_profile(args)
    name, build = workload_builder(model_request(args))
    plot_target = None
    if args.plot:
        from roofline.report.plots import plot_path

        plot_target = plot_path(args.plot, name, profile.name, args.force)
    opts = StepOptions(train=args.train, optimizer=args.optimizer, pinned=args.pinned, sync_points=args.sync,
                       channels_last=args.channels_last,
                       reserve_bytes=args.reserve_bytes)
    advice = advise(name, build, profile, args.train, args.precision, opts)
    out = advice_dict(advice)
    if plot_target is not None:
        from roofline.report.plots import write_advice_plots

        out["plot"] = write_advice_plots(advice, profile, plot_target, args.force)
    if args.json:
        print_json(out)
        return 0
    from roofline.report.advise_view import render_advice

    render_advice(out)
    return 0

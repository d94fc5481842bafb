"""`roofline advise`: which batch size and precision to use on a device, how fast, how much memory, why."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import MAX_GPUS, add_hw_args, add_json_flag, integer, number, print_json, text
from roofline.commands.flag_scope import check_flag_scope
from roofline.commands.model_args import (
    add_model_args,
    add_step_options,
    model_request,
    step_placement,
)
from roofline.commands.serving import add_serving_args
from roofline.workload.llm.builtins import serving_requested


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("advise", help="recommend batch size and precision, explained in numbers",
                              description="Sweep batch size and precision for a model on a device and recommend.")
    add_model_args(p)
    add_hw_args(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--train", action="store_true", help="training steps (forward+backward+optimizer)")
    mode.add_argument("--infer", action="store_true", help="inference (the default)")
    p.add_argument("--precision", type=text, default="auto", metavar="auto|P", help="auto (default) or one precision")
    add_step_options(p)
    p.add_argument("--plot", type=text, metavar="DIR|FILE.png|FILE.svg",
                   help="write the roofline and batch-sweep plots (into DIR as a PNG, or to FILE)")
    p.add_argument("--html", type=text, metavar="FILE.html", help="also write the HTML report (as `roofline report`)")
    p.add_argument("--force", action="store_true", help="let --html or --plot replace an existing file")
    g = p.add_argument_group("data-parallel training (with --train)")
    g.add_argument("--gpus", type=integer(1, MAX_GPUS), metavar="N",
                   help="most GPUs to consider (advises how many, up to N); with --serve, the tensor-parallel GPUs "
                        "one model is split over")
    g.add_argument("--node", type=text, metavar="NAME", help="node profile (default: the one holding --gpu)")
    g.add_argument("--min-efficiency", type=number(0.0, 1.0, exclusive_least=True), default=0.9, metavar="E",
                   help="scaling efficiency a GPU count must keep to be recommended (default 0.9)")
    add_serving_args(p, advise=True)
    add_json_flag(p)
    p.set_defaults(handler=run, flag_parser=p)


def data_parallel_advice(args: argparse.Namespace, batch: int, precision_name: str) -> dict[str, Any]:
    """How many GPUs at the recommended per-GPU batch: the largest count keeping --min-efficiency, and where the
    all-reduce outgrows the backward that hides it."""
    from roofline.commands.common import selected_profile
    from roofline.errors import RooflineError
    from roofline.model.comm.job import node_for
    from roofline.model.comm.scaling import weak_scaling
    from roofline.model.step import StepOptions
    from roofline.units import format_si
    from roofline.workload.precision import get_precision
    from roofline.workload.request import workload_builder

    if not args.train:
        raise RooflineError("--gpus advises data-parallel training; add --train")
    if args.gpus < 1 or not 0 < args.min_efficiency <= 1:
        raise RooflineError("--gpus must be positive and --min-efficiency in (0, 1]")
    profile = selected_profile(args)
    _, build = workload_builder(model_request(args))
    opts = StepOptions(train=True, optimizer=args.optimizer, sync_points=args.sync,
                       channels_last=args.channels_last, reserve_bytes=args.reserve_bytes,
                       fp32_math=args.fp32_math, attention=args.attention, gelu_new=args.gelu_new,
                       **step_placement(args).fields())
    node = node_for(profile, args.node)
    precision = get_precision(precision_name)
    points = weak_scaling(build, profile, precision, opts, node, batch, args.gpus, precision.master_weight_bytes)
    keeping = [p for p in points if p.scaling_efficiency >= args.min_efficiency]
    best = keeping[-1] if keeping else points[0]
    dominated = next((p for p in points if p.communication_s > p.backward_s), None)
    last = points[-1]
    gradient_bytes = float(build(batch).params()) * precision.master_weight_bytes
    reasons = [
        {"kind": "gradients", "gradient_bytes": gradient_bytes, "backward_s": last.backward_s,
         "text": f"each step all-reduces {format_si(gradient_bytes, 'B')} of gradients; one backward at batch "
                 f"{batch} per GPU lasts {format_si(last.backward_s, 's')} to hide it in"},
        {"kind": "communication", "gpus": last.gpus, "communication_s": last.communication_s,
         "exposed_communication_s": last.exposed_communication_s, "scaling_efficiency": last.scaling_efficiency,
         "text": f"on {last.gpus} GPUs ({last.nodes} x {node.name}) the all-reduce takes "
                 f"{format_si(last.communication_s, 's')}, {format_si(last.exposed_communication_s, 's')} of it "
                 f"exposed: scaling efficiency {100 * last.scaling_efficiency:.1f}%"},
        {"kind": "knee", "gpus": dominated.gpus if dominated else None,
         "text": (f"communication outgrows the backward from {dominated.gpus} GPUs "
                  f"({format_si(dominated.communication_s, 's')} against {format_si(dominated.backward_s, 's')}): "
                  "the knee" if dominated else
                  f"up to {last.gpus} GPUs the all-reduce stays shorter than the backward: no knee in range")},
        {"kind": "gpu-count", "gpus": best.gpus, "scaling_efficiency": best.scaling_efficiency,
         "samples_per_s": best.samples_per_s,
         "text": f"{best.gpus} GPUs keep {100 * best.scaling_efficiency:.1f}% >= {100 * args.min_efficiency:.0f}% "
                 f"efficiency: {best.samples_per_s:.0f} samples/s, {best.speedup:.2f}x one GPU"},
    ]
    return {"recommended": {"batch_size": batch, "precision": precision_name,
                            "gpus": best.gpus, "nodes": best.nodes},
            "node": node.name, "knee_gpus": dominated.gpus if dominated else None,
            "sweep": [{**vars(p), "scaling_efficiency": p.scaling_efficiency} for p in points], "reasons": reasons}




def run(args: argparse.Namespace) -> int:
    from roofline import api

    serving = serving_requested(args.model, args.prompt_len, args.output_len, getattr(args, "serve", False))
    check_flag_scope(args, args.flag_parser, serving)
    if serving:
        from roofline.commands.serving import run_advise

        return run_advise(args)
    advice = api.advise(model_request(args), hw=args.hw, gpu=args.gpu, cpu=args.cpu, train=args.train,
                        precision=args.precision, optimizer=args.optimizer, pinned=args.pinned, data=args.data,
                        sync=args.sync, channels_last=args.channels_last, reserve_bytes=args.reserve_bytes,
                        plot=args.plot, html=args.html, force=args.force, fp32_math=args.fp32_math,
                        attention=args.attention, gelu_new=args.gelu_new)
    out = advice.to_dict()
    if args.gpus is not None:
        out["data_parallel"] = data_parallel_advice(args, out["recommended"]["batch_size"],
                                                    out["recommended"]["precision"])
        out["recommended"]["gpus"] = out["data_parallel"]["recommended"]["gpus"]
        out["reasons"] = [*out["reasons"], *out["data_parallel"]["reasons"]]
    if args.json:
        print_json(out)
        return 0
    from roofline.report.advise_view import render_advice

    render_advice(out)
    return 0

"""`roofline advise`: which batch size and precision to use on a device, how fast, how much memory, why."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_hw_args, add_json_flag, print_json
from roofline.commands.model_args import add_model_args, model_request
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
    p.add_argument("--precision", default="auto", metavar="auto|P", help="auto (default) or one precision")
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"])
    p.add_argument("--pinned", action="store_true", help="inputs in pinned memory (copies overlap compute)")
    p.add_argument("--sync", type=int, default=0, metavar="N", help="sync points per step (e.g. loss.item())")
    p.add_argument("--channels-last", action="store_true",
                   help="activations in NHWC (torch.channels_last): no layout transposes around tensor-core "
                        "convolutions")
    p.add_argument("--reserve-bytes", type=float, metavar="BYTES", help="device memory unavailable to tensors")
    p.add_argument("--plot", metavar="DIR|FILE.png|FILE.svg",
                   help="write the roofline and batch-sweep plots (into DIR as a PNG, or to FILE)")
    p.add_argument("--html", metavar="FILE.html", help="also write the HTML report (as `roofline report`)")
    p.add_argument("--force", action="store_true", help="let --html overwrite an existing file")
    add_serving_args(p, advise=True)
    add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from roofline import api

    if serving_requested(args.model, args.prompt_len, args.output_len, getattr(args, "serve", False)):
        from roofline.commands.serving import run_advise

        return run_advise(args)
    advice = api.advise(model_request(args), hw=args.hw, gpu=args.gpu, cpu=args.cpu, train=args.train,
                        precision=args.precision, optimizer=args.optimizer, pinned=args.pinned, sync=args.sync,
                        channels_last=args.channels_last, reserve_bytes=args.reserve_bytes, plot=args.plot,
                        html=args.html, force=args.force)
    if args.json:
        print_json(advice.to_dict())
        return 0
    from roofline.report.advise_view import render_advice

    render_advice(advice.to_dict())
    return 0

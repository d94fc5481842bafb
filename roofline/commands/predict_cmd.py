"""`roofline predict`: the predicted time of one step (or one op), per layer, with what bounds it."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_hw_args, add_json_flag, print_json
from roofline.commands.model_args import add_model_args, add_step_args, model_request
from roofline.commands.serving import add_serving_args
from roofline.workload.llm.builtins import serving_requested


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("predict", help="predicted step time, memory and per-layer bounds",
                              description="Predict one step of a model (or one op) on a device.")
    add_model_args(p, allow_op=True)
    add_hw_args(p)
    p.add_argument("--batch", default="1", help="N, a list 1,8,32, or a range 1:1024 (default 1)")
    add_step_args(p)
    add_serving_args(p)
    p.add_argument("--allow-oversize", action="store_true",
                   help="predict time even when the batch does not fit the device memory")
    p.add_argument("--html", metavar="FILE.html", help="also write the HTML report (as `roofline report`)")
    p.add_argument("--force", action="store_true", help="let --html overwrite an existing file")
    add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from roofline import api

    if serving_requested(args.model, args.prompt_len, args.output_len, getattr(args, "serve", False)):
        from roofline.commands.serving import run_predict

        return run_predict(args)
    result = api.predict(model_request(args), hw=args.hw, gpu=args.gpu, cpu=args.cpu, batch=args.batch,
                         precision=args.precision or "fp32", train=args.train, optimizer=args.optimizer,
                         pinned=args.pinned,
                         sync=args.sync, channels_last=args.channels_last, reserve_bytes=args.reserve_bytes,
                         allow_oversize=args.allow_oversize, html=args.html, force=args.force)
    if args.json:
        print_json(result.to_dict())
        return 0
    from roofline.report.predict_view import render_prediction

    render_prediction(result.to_dict())
    return 0

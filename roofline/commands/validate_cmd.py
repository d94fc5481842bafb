"""`roofline validate`: run the model live with PyTorch and compare with the prediction, per step and per op
kind (and per layer with --per-layer). Progress goes to stderr, so `--json` leaves stdout to the document."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_json_flag, integer, number, parse_batches, print_json, text
from roofline.commands.model_args import add_model_args, model_request


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("validate", help="live PyTorch runs vs predictions",
                              description="Time real steps of a model with PyTorch (warm-up excluded, median "
                              "of repeats) and compare with the predicted step time on this machine's profile "
                              "(calibrated when `roofline calibrate` has run), per step and per op kind.")
    add_model_args(p)
    p.add_argument("--device", type=text, default="cpu", help="cpu or cuda (default cpu)")
    p.add_argument("--batch", type=text, default="1", help="N or a list 1,8,32 (default 1)")
    p.add_argument("--precision", type=text, default="fp32", metavar="P", help="fp32|tf32|fp16|bf16|amp (default fp32)")
    p.add_argument("--train", action="store_true", help="forward + backward + optimizer update")
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"],
                   help="optimizer for --train (default sgd)")
    p.add_argument("--hw", type=text, metavar="NAME|PATH", help="profile to predict with (default: this machine's)")
    p.add_argument("--repeats", type=integer(1, 10_000), default=5, metavar="N",
                   help="fewest timed samples per batch (default 5)")
    p.add_argument("--budget", type=number(0, 3600, exclusive_least=True), default=2.0, metavar="S",
                   help="seconds of timing per batch, stretched to fit --repeats (default 2)")
    p.add_argument("--kind-steps", type=integer(0, 1000), default=2, metavar="N",
                   help="profiled steps for the per-kind breakdown, 0 to skip it (default 2)")
    p.add_argument("--no-calibrate", action="store_true",
                   help="with no calibration of this machine, predict from detected/datasheet ceilings instead of "
                        "running a quick calibration first")
    p.add_argument("--per-layer", action="store_true", help="also time each leaf module's forward")
    add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from roofline.validate.run import validate, validation_dict

    batches = parse_batches(args.batch)
    err = Console(stderr=True)

    def progress(batch: int) -> None:
        if not args.json:
            err.print(f"[dim]running {args.model} at batch {batch} on {args.device}...[/]")

    result = validate(model_request(args), args.device, batches, args.precision, args.train, args.optimizer,
                      args.hw, args.budget, args.repeats, args.kind_steps, args.per_layer, progress,
                      calibrate=not args.no_calibrate)
    out = validation_dict(result, args.per_layer)
    if args.json:
        print_json(out)
        return 0
    from roofline.report.validate_view import render_validation

    render_validation(out, Console())
    return 0

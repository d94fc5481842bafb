"""`roofline validate`: run the model live with PyTorch and compare with the prediction, per step and per op
kind (and per layer with --per-layer). Progress goes to stderr, so `--json` leaves stdout to the document."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_json_flag, print_json
from roofline.commands.model_args import add_model_args, model_request


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("validate", help="live PyTorch runs vs predictions",
                              description="Time real steps of a model with PyTorch (warm-up excluded, median "
                              "of repeats) and compare with the predicted step time on this machine's profile "
                              "(calibrated when `roofline calibrate` has run), per step and per op kind.")
    add_model_args(p)
    p.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    p.add_argument("--batch", default="1", help="N or a list 1,8,32 (default 1)")
    p.add_argument("--precision", default="fp32", metavar="P", help="fp32|tf32|fp16|bf16|amp (default fp32)")
    p.add_argument("--train", action="store_true", help="forward + backward + optimizer update")
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"],
                   help="optimizer for --train (default sgd)")
    p.add_argument("--hw", metavar="NAME|PATH", help="profile to predict with (default: this machine's)")
    p.add_argument("--repeats", type=int, default=5, metavar="N", help="fewest timed samples per batch (default 5)")
    p.add_argument("--budget", type=float, default=2.0, metavar="S",
                   help="seconds of timing per batch, stretched to fit --repeats (default 2)")
    p.add_argument("--kind-steps", type=int, default=2, metavar="N",
                   help="profiled steps for the per-kind breakdown, 0 to skip it (default 2)")
    p.add_argument("--no-calibrate", action="store_true",
                   help="with no calibration of this machine, predict from detected/datasheet ceilings instead of "
                        "running a quick calibration first")
    p.add_argument("--per-layer", action="store_true", help="also time each leaf module's forward")
    p.add_argument("--keep-heap", action="store_true",
                   help="also run in a child process whose C heap keeps its pages (MALLOC_MMAP_MAX_=0, a huge "
                        "MALLOC_TRIM_THRESHOLD_): the measured and predicted gain of `advise`'s allocator advice")
    p.add_argument("--serve", action="store_true",
                   help="language models: time transformers' generate (prefill, per-token decode) instead")
    p.add_argument("--prompt-len", type=int, metavar="P", help="with --serve: prompt tokens (default 512)")
    p.add_argument("--output-len", type=int, metavar="O", help="with --serve: generated tokens (default 128)")
    add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.serve:
        from roofline.commands.serving import run_validate

        return run_validate(args)
    from rich.console import Console

    from roofline import api

    err = Console(stderr=True)

    def progress(batch: int) -> None:
        if not args.json:
            err.print(f"[dim]running {args.model} at batch {batch} on {args.device}...[/]")

    result = api.validate(model_request(args), device=args.device, batch=args.batch, precision=args.precision,
                          train=args.train, optimizer=args.optimizer, hw=args.hw, budget_s=args.budget,
                          repeats=args.repeats, kind_steps=args.kind_steps, per_layer=args.per_layer,
                          calibrate=not args.no_calibrate, on_batch=progress,
                          keep_heap=args.keep_heap)
    out = result.to_dict()
    if args.json:
        print_json(out)
        return 0
    from roofline.report.validate_view import render_validation

    render_validation(out, Console())
    return 0

"""`roofline validate`: run the model live with PyTorch and compare with the prediction, per step and per op
kind (and per layer with --per-layer). Progress goes to stderr, so `--json` leaves stdout to the document."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_json_flag, integer, number, print_json, text
from roofline.commands.flag_scope import check_modes
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
    p.add_argument("--keep-heap", action="store_true",
                   help="also run in a child process whose C heap keeps its pages (MALLOC_MMAP_MAX_=0, a huge "
                        "MALLOC_TRIM_THRESHOLD_): the measured and predicted gain of `advise`'s allocator advice")
    p.add_argument("--ranks", type=int, metavar="N",
                   help="with --train: a real DistributedDataParallel run on N local gloo ranks (one thread each) "
                        "against one rank, compared with the predicted step, communication and scaling; --batch "
                        "is per rank")
    p.add_argument("--steps", type=int, default=10, metavar="N", help="timed steps per --ranks run (default 10)")
    p.add_argument("--serve", action="store_true",
                   help="language models: time transformers' generate (prefill, per-token decode) instead")
    p.add_argument("--prompt-len", type=int, metavar="P", help="with --serve: prompt tokens (default 512)")
    p.add_argument("--output-len", type=int, metavar="O", help="with --serve: generated tokens (default 128)")
    add_json_flag(p)
    p.set_defaults(handler=run, flag_parser=p)


def run_ranks(args: argparse.Namespace) -> int:
    from roofline.errors import RooflineError
    from roofline.validate.data_parallel import validate_data_parallel, validation_dict
    from roofline.validate.profile_choice import choose_profile
    from roofline.workload.request import parse_batches

    if not args.train:
        raise RooflineError("--ranks runs data-parallel training; add --train")
    if args.ranks < 2 or args.device != "cpu" or args.precision != "fp32":
        raise RooflineError("--ranks takes N >= 2 gloo ranks on --device cpu in fp32")
    batches = parse_batches(args.batch)
    if len(batches) != 1:
        raise RooflineError("--ranks takes one per-rank --batch")
    choice = choose_profile("cpu", args.hw, calibrate=False)
    result = validate_data_parallel(model_request(args), choice.profile, args.ranks, batches[0], args.steps)
    out = validation_dict(result)
    out["profile"] = {"name": choice.profile.name, "source": choice.source, "warnings": list(choice.warnings)}
    if args.json:
        print_json(out)
        return 0
    from roofline.report.parallel_view import render_ddp_validation

    render_ddp_validation(out)
    return 0


MODES = {"step": "to a model's step (without --ranks or --serve)", "ranks": "with --ranks",
         "serve": "with --serve"}
"""validate's three modes, as the user asks for each."""
READ_IN = {"prompt_len": ("serve",), "output_len": ("serve",), "steps": ("ranks",),
           "budget": ("step",), "kind_steps": ("step",), "per_layer": ("step",), "keep_heap": ("step",),
           "optimizer": ("step",), "repeats": ("step", "serve"), "no_calibrate": ("step", "serve"),
           "precision": ("step", "ranks"), "train": ("step", "ranks"), "input_size": ("step", "ranks"),
           "input_shape": ("step", "ranks"), "num_classes": ("step", "ranks"), "seq_len": ("step", "ranks")}
"""Each flag that not every mode reads, and the modes that read it (a --serve run times transformers' generate
in fp32 on the CPU; a --ranks run trains in gloo ranks, uncalibrated, for --steps steps)."""


def run(args: argparse.Namespace) -> int:
    mode = "serve" if args.serve else "ranks" if args.ranks is not None else "step"
    check_modes(args, args.flag_parser, mode, READ_IN, MODES)
    if args.serve:
        from roofline.commands.serving import run_validate

        return run_validate(args)
    from rich.console import Console

    from roofline import api

    if args.ranks is not None:
        return run_ranks(args)
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

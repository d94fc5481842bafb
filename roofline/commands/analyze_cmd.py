"""`roofline analyze`: FLOPs, bytes, parameters and saved activations per layer; with --hw, the batch at
which each layer crosses the device's ridge point; with --symbolic, the formulas in the batch size B."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_json_flag, integer, print_json, text
from roofline.commands.flag_scope import check_flag_scope
from roofline.commands.model_args import add_model_args, model_request
from roofline.workload.llm.builtins import serving_requested
from roofline.workload.request import MAX_BATCH


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("analyze", help="FLOPs, bytes, params and activations per layer (no hardware)",
                              description="Count what a model costs per layer; with --hw, where each layer "
                                          "crosses that device's ridge point.")
    add_model_args(p, allow_op=True)
    p.add_argument("--batch", type=integer(1, MAX_BATCH), default=1, help="batch size (default 1)")
    p.add_argument("--precision", type=text, metavar="P",
                   help="element size for bytes (default fp32; language models: bf16, or int8/int4/fp8 weights)")
    p.add_argument("--train", action="store_true", help="count forward + both backward passes")
    hw = p.add_mutually_exclusive_group()
    hw.add_argument("--hw", type=text, metavar="NAME|PATH", help="device whose ridge point each layer is compared with")
    hw.add_argument("--gpu", type=text, metavar="NAME", help="a GPU profile")
    hw.add_argument("--cpu", type=text, metavar="NAME", help="a CPU profile")
    p.add_argument("--symbolic", action="store_true", help="print FLOPs(B) and bytes(B) as formulas (sympy)")
    p.add_argument("--prompt-len", type=int, metavar="P", help="language models: prompt tokens (default 512)")
    p.add_argument("--output-len", type=int, metavar="O",
                   help="language models: generated tokens; decode is analysed at context P + O (default 128)")
    add_json_flag(p)
    p.set_defaults(handler=run, flag_parser=p)


def run(args: argparse.Namespace) -> int:
    from roofline import api

    serving = serving_requested(args.model, args.prompt_len, args.output_len, getattr(args, "serve", False))
    check_flag_scope(args, args.flag_parser, serving, step_only=("hw", "gpu", "cpu"))
    if serving:
        from roofline.commands.serving import run_analyze

        return run_analyze(args)
    result = api.analyze(model_request(args), op=args.op, batch=args.batch, precision=args.precision or "fp32",
                         train=args.train, hw=args.hw, gpu=args.gpu, cpu=args.cpu, symbolic=args.symbolic)
    if args.json:
        print_json(result.to_dict())
        return 0
    from roofline.report.analyze_view import render_analysis

    render_analysis(result.to_dict())
    return 0

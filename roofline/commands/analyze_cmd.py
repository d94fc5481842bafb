"""`roofline analyze`: FLOPs, bytes, parameters and saved activations per layer; with --hw, the batch at
which each layer crosses the device's ridge point; with --symbolic, the formulas in the batch size B."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_json_flag, print_json
from roofline.commands.model_args import add_model_args, model_request
from roofline.errors import RooflineError
from roofline.workload.llm.builtins import serving_requested


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("analyze", help="FLOPs, bytes, params and activations per layer (no hardware)",
                              description="Count what a model costs per layer; with --hw, where each layer "
                                          "crosses that device's ridge point.")
    add_model_args(p, allow_op=True)
    p.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    p.add_argument("--precision", metavar="P",
                   help="element size for bytes (default fp32; language models: bf16, or int8/int4/fp8 weights)")
    p.add_argument("--train", action="store_true", help="count forward + both backward passes")
    hw = p.add_mutually_exclusive_group()
    hw.add_argument("--hw", metavar="NAME|PATH", help="device whose ridge point each layer is compared with")
    hw.add_argument("--gpu", metavar="NAME", help="a GPU profile")
    hw.add_argument("--cpu", metavar="NAME", help="a CPU profile")
    p.add_argument("--symbolic", action="store_true", help="print FLOPs(B) and bytes(B) as formulas (sympy)")
    p.add_argument("--prompt-len", type=int, metavar="P", help="language models: prompt tokens (default 512)")
    p.add_argument("--output-len", type=int, metavar="O",
                   help="language models: generated tokens; decode is analysed at context P + O (default 128)")
    add_json_flag(p)
    p.set_defaults(handler=run)


def _ridge(args: argparse.Namespace, precision: Any) -> tuple[str, float] | None:
    if not (args.hw or args.gpu or args.cpu):
        return None
    from roofline.commands.common import selected_profile
    from roofline.model.ceilings import ceilings_for

    profile = selected_profile(args)
    return profile.name, ceilings_for(profile, precision).ridge_point


def run(args: argparse.Namespace) -> int:
    from roofline.advise import analyze
    from roofline.workload.precision import get_precision
    from roofline.workload.request import is_user_module, workload_builder

    if serving_requested(args.model, args.prompt_len, args.output_len, getattr(args, "serve", False)):
        from roofline.commands.serving import run_analyze

        return run_analyze(args)
    if args.batch < 1:
        raise RooflineError(f"--batch {args.batch}: the batch size must be a positive integer")
    precision = get_precision(args.precision or "fp32")
    name, build = workload_builder(model_request(args))
    workload = build(args.batch)
    ridge = _ridge(args, precision)
    second = build(args.batch + 1) if ridge and not args.op else None
    out: dict[str, Any] = {
        "model": name, "batch_size": args.batch, "precision": precision.name, "train": args.train,
        "totals": analyze.totals(workload, precision, args.train),
        "layers": analyze.layer_rows(workload, second, precision, args.train, ridge[1] if ridge else None),
        "unsupported": workload.unsupported,
    }
    if ridge:
        out["device"], out["ridge_point"] = ridge
    if ridge and second is not None:
        out["model_crossing_batch"], out["model_intensity_limit"] = analyze.model_crossing(
            workload, second, precision, args.train, ridge[1])
    if args.symbolic:
        exact = not (args.op or is_user_module(args.model))
        sym = analyze.symbolic_totals(build, precision, args.train, exact)
        out["symbolic"] = {key: str(value) for key, value in sym.items() if key != "symbol"}
        if ridge:
            out["symbolic"]["model_ridge_root"] = analyze.symbolic_root(sym, ridge[1])
    if args.json:
        print_json(out)
        return 0
    from roofline.report.analyze_view import render_analysis

    render_analysis(out)
    return 0

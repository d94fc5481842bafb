"""`roofline analyze`: FLOPs, bytes, parameters and saved activations per layer; with --hw, the batch at
which each layer crosses the device's ridge point; with --symbolic, the formulas in the batch size B."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import MAX_BATCH, add_json_flag, integer, print_json, text
from roofline.commands.model_args import add_model_args, model_request


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("analyze", help="FLOPs, bytes, params and activations per layer (no hardware)",
                              description="Count what a model costs per layer; with --hw, where each layer "
                                          "crosses that device's ridge point.")
    add_model_args(p, allow_op=True)
    p.add_argument("--batch", type=integer(1, MAX_BATCH), default=1, help="batch size (default 1)")
    p.add_argument("--precision", type=text, default="fp32", metavar="P", help="element size for bytes (default fp32)")
    p.add_argument("--train", action="store_true", help="count forward + both backward passes")
    hw = p.add_mutually_exclusive_group()
    hw.add_argument("--hw", type=text, metavar="NAME|PATH", help="device whose ridge point each layer is compared with")
    hw.add_argument("--gpu", type=text, metavar="NAME", help="a GPU profile")
    hw.add_argument("--cpu", type=text, metavar="NAME", help="a CPU profile")
    p.add_argument("--symbolic", action="store_true", help="print FLOPs(B) and bytes(B) as formulas (sympy)")
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

    precision = get_precision(args.precision)
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

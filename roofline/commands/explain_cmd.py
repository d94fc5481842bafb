"""`roofline explain`: one device's roofline in its own numbers, and which operations land on which side."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_hw_args, add_json_flag, print_json, selected_profile, text


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("explain", help="why compute outruns memory on a device, in numbers",
                              description="The roofline of one device from its profile: compute and memory "
                              "bandwidth with their formulas, the ridge point, and where common ops land.")
    add_hw_args(p)
    p.add_argument("--precision", type=text, default="fp32", metavar="P",
                   help="dtype the example operations run in (default fp32)")
    add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from roofline.advise.explain import explain

    out = explain(selected_profile(args), args.precision)
    if args.json:
        print_json(out)
        return 0
    from roofline.report.explain_view import render_explanation

    render_explanation(out)
    return 0

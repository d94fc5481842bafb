"""`roofline report`: the advice for a model on a device as one self-contained HTML page (report/html.py).

The page is `advise --html FILE`'s: this command exists so the page is one obvious command away. An existing
-o file is replaced only with --force (checked before the sweep runs), and the page is written atomically.
"""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_hw_args, add_json_flag, print_json
from roofline.commands.model_args import add_model_args, add_step_options, model_request


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("report", help="one self-contained HTML page: roofline, sweeps, layers, reasons",
                              description="Write the advice for a model on a device as one HTML page (inline "
                                          "SVG, no network): the roofline with every layer, throughput and memory "
                                          "against batch size, the precision comparison, the layers and the reasons.")
    add_model_args(p)
    add_hw_args(p)
    p.add_argument("--train", action="store_true", help="training steps (forward+backward+optimizer)")
    p.add_argument("--precision", default="auto", metavar="auto|P", help="auto (default) or one precision")
    add_step_options(p)
    p.add_argument("-o", "--out", required=True, metavar="FILE.html", help="where to write the page")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from roofline import api
    from roofline.errors import RooflineError
    from roofline.workload.llm.builtins import serving_requested

    if serving_requested(args.model, None, None):
        raise RooflineError(f"report pages a model's step; {args.model} is a language model served token by token: "
                            f"`roofline advise --model {args.model} --serve --plot DIR` draws its serving advice")

    advice = api.advise(model_request(args), hw=args.hw, gpu=args.gpu, cpu=args.cpu, train=args.train,
                        precision=args.precision, optimizer=args.optimizer, pinned=args.pinned, data=args.data,
                        sync=args.sync, channels_last=args.channels_last, reserve_bytes=args.reserve_bytes,
                        fp32_math=args.fp32_math, attention=args.attention, gelu_new=args.gelu_new,
                        html=args.out, force=args.force)
    if args.json:
        print_json(advice.to_dict())
        return 0
    rec = advice.recommended
    print(f"{advice.model} on {advice.device}: batch {rec.batch_size}, {rec.precision}; report written to "
          f"{advice.html}")
    return 0

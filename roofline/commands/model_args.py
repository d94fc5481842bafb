"""Arguments that name a workload (`--model`, `--op`, input options) and a precision, shared by
`predict`, `advise`, `analyze` and `validate`."""

from __future__ import annotations

import argparse

from roofline.commands.common import integer, number, text
from roofline.errors import RooflineError
from roofline.model.data_placement import DATA_PLACEMENTS, DataPlacement, resolve_placement
from roofline.workload.request import ModelRequest

MAX_DIMENSION = 1 << 24
"""Largest sequence length, class count or input dimension taken (16 million): beyond it is a typo."""
MAX_SYNC_POINTS = 1 << 20
"""Most synchronization points per step: one per op of the largest model is about a thousand."""
MAX_RESERVE_BYTES = float(1 << 60)
"""Most device memory that can be reserved: an exbibyte, beyond any device."""


def add_model_args(parser: argparse.ArgumentParser, allow_op: bool = False) -> None:
    if allow_op:
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--model", type=text, metavar="NAME|module:attr", help="a zoo model or your nn.Module")
        group.add_argument("--op", type=text, metavar="SPEC", help="one op, e.g. 'gemm(m=1024,n=1024,k=1024)'")
    else:
        parser.add_argument("--model", type=text, required=True, metavar="NAME|module:attr",
                            help="a zoo model (mobilenetv3, resnet50, bert-base, ...) or your nn.Module")
    parser.add_argument("--input-size", type=integer(1, 1 << 16), metavar="S", help="image side in pixels (CNNs)")
    parser.add_argument("--seq-len", type=integer(1, MAX_DIMENSION), metavar="L", help="sequence length (transformers)")
    parser.add_argument("--num-classes", type=integer(1, MAX_DIMENSION), metavar="N", help="classifier outputs")
    parser.add_argument("--input-shape", type=text, metavar="1,3,224,224",
                        help="one sample's input shape with batch first, for module:attr models")


def model_request(args: argparse.Namespace) -> ModelRequest:
    """The workload the arguments name; the API checks every number."""
    from roofline.api import model_request as checked_request

    shape = None
    if getattr(args, "input_shape", None):
        dimension = integer(1, MAX_DIMENSION)
        try:
            shape = tuple(dimension(v) for v in args.input_shape.split(","))
        except argparse.ArgumentTypeError:
            raise RooflineError(f"--input-shape '{args.input_shape}': expected whole numbers from 1 to "
                                f"{MAX_DIMENSION} like 1,3,224,224") from None
        if len(shape) > 8:
            raise RooflineError(f"--input-shape '{args.input_shape}': more than 8 dimensions")
    return checked_request(getattr(args, "model", None), op=getattr(args, "op", None), input_shape=shape,
                           input_size=args.input_size, seq_len=args.seq_len, num_classes=args.num_classes)


FP32_MATH_HELP = ("which fp32 products run on TF32 tensor cores (Ampere and later): pytorch (default: PyTorch "
                  ">= 1.12, convolutions only), tf32 (convolutions and matrix products: PyTorch 1.7-1.11, NGC "
                  "containers, set_float32_matmul_precision('high')), ieee (neither)")
ATTENTION_HELP = ("how self-attention runs: fused (default: one scaled_dot_product_attention kernel) or eager "
                  "(scores written out: matmul, scale, mask, softmax, dropout, matmul)")


def add_step_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--precision", type=text, metavar="P",
                        help="fp32|tf32|fp16|bf16|fp8|int8|amp (default fp32); language models: "
                             "bf16|fp16|fp8|int8|int4|fp32 (default bf16)")
    parser.add_argument("--train", action="store_true", help="forward + backward + optimizer update")
    add_step_options(parser)


def add_step_options(parser: argparse.ArgumentParser) -> None:
    """How the user's step runs (optimizer, input copies, syncs, layout, reserved memory, fp32 math, attention,
    GELU): the `StepOptions` that `predict` and `advise` both take."""
    parser.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"],
                        help="optimizer for --train (default sgd)")
    parser.add_argument("--data", type=text, metavar="|".join(DATA_PLACEMENTS),
                        help="where each step's input batch comes from (GPU): pageable (default: x.cuda() from "
                             "pageable memory), pinned (non_blocking copy from pinned memory), prefetched (a "
                             "loader copies the next batch on its own stream), device (already on the GPU: "
                             "synthetic inputs, as most published benchmarks)")
    parser.add_argument("--pinned", action="store_true",
                        help="inputs in pinned host memory, copied with non_blocking=True (= --data pinned)")
    parser.add_argument("--sync", type=integer(0, MAX_SYNC_POINTS), default=0, metavar="N",
                        help="synchronization points per step in your loop (e.g. 1 for loss.item())")
    parser.add_argument("--channels-last", action="store_true",
                        help="activations in NHWC (torch.channels_last): no layout transposes around "
                             "tensor-core convolutions")
    parser.add_argument("--reserve-bytes", type=number(0, MAX_RESERVE_BYTES), metavar="BYTES",
                        help="device memory unavailable to tensors (default: CUDA context + cuBLAS workspace)")
    parser.add_argument("--fp32-math", default="pytorch", choices=["pytorch", "tf32", "ieee"],
                        help=FP32_MATH_HELP)
    parser.add_argument("--attention", default="fused", choices=["fused", "eager"],
                        help=ATTENTION_HELP)
    parser.add_argument("--gelu-new", action="store_true",
                        help="price GPT-2's tanh GELU as Hugging Face's gelu_new runs it (eight kernels of a Python "
                             "formula) instead of one fused kernel (nn.GELU(approximate='tanh'))")


def step_placement(args: argparse.Namespace) -> DataPlacement:
    """Where the step's input comes from, from `--data` and `--pinned` (`resolve_placement`)."""
    return resolve_placement(args.data, args.pinned)

"""Measure, on a GPU, the rate of MobileNetV3's depthwise convolutions in each pass, precision and layout.

The record prices MobileNetV3 training too fast wherever the device sets the pace: timm's AMP steps on an RTX 3090
-25..-31% (fitted and held out alike), and this project's own H100 steps in TF32 over NCHW -49% (91.6 ms measured
against 46.6 ms) while the same step in AMP channels-last is within 8%. The cost model streams a depthwise
convolution at the GPU's copy rate in every pass, having no measured rate for one. PyTorch does not send every
depthwise convolution to cuDNN: `use_cudnn_depthwise` (aten/src/ATen/native/Convolution.cpp) takes 16-bit inputs
by a workload heuristic, and fp32 ones run PyTorch's own kernels (aten/src/ATen/native/cuda/DepthwiseConv2d.cu),
whose weight gradient is one thread block per channel and tap reducing over N x H x W (benchmarks/LOG.md, the
sessions that searched for a published rate at these shapes and found none).

This script times each depthwise layer of MobileNetV3-large and -small, at the IR's own shapes
(`roofline.workload.zoo.build_workload`), alone: the forward, the input gradient and the weight gradient
(`aten.convolution_backward` with one output asked for), in fp32 over NCHW (TF32 does not apply: no reduction
over channels), fp16 over NCHW and channels-last, and bf16 channels-last, with cudnn.benchmark on as timm's
harness sets it. Per layer and pass it reports the IR's traffic (`Op.traffic`) over the measured time, beside
the copy rate measured in the same run (`a.copy_(b)` of 1 GiB, bytes read + written), so each rate is a share
of the copy rate as the runtime profile's kernel rates are; and the kernels the profiler saw for the largest
layer of each case, so it is known which ran, PyTorch's or cuDNN's.

    python benchmarks/gpu_depthwise.py --out depthwise.json [--budget-s 120]

`--device cpu --small` checks the script on a machine without a GPU (fp32 over NCHW, batch 2, 32 px).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_live import cuda_time, emit  # noqa: E402  (it puts the repository root on the path, for `roofline`)

MODELS = ("mobilenetv3-large", "mobilenetv3-small")
CASES = (("fp32", "nchw"), ("fp16", "nchw"), ("fp16", "nhwc"), ("bf16", "nhwc"))
PASSES = ("forward", "backward_input", "backward_weight")
BATCH = 128
IMAGE = 224
COPY_BYTES = 1 << 30


def depthwise_layers(model: str, batch: int, size: int) -> list[tuple[Any, int]]:
    """(the IR's depthwise Conv2d, how many layers of the model have its shape), in the model's order."""
    from roofline.workload.ops.conv import Conv2d
    from roofline.workload.zoo import build_workload

    seen: dict[tuple, list] = {}
    for op in build_workload(model, batch, input_size=size).ops:
        if isinstance(op, Conv2d) and op.depthwise:
            key = (op.c, op.h, op.w, op.r, op.s, op.stride, op.pad)
            seen.setdefault(key, [op, 0])[1] += 1
    return [(op, count) for op, count in seen.values()]


def ir_bytes(op: Any, pass_: str, element_bytes: int) -> float:
    """The IR's compulsory traffic of one pass, in bytes: what the cost model streams at a memory level."""
    t = op.traffic(pass_)
    return float(t.activations_read + t.activations_written + t.weights_read + t.weights_written) * element_bytes


def layer_tensors(op: Any, dtype: str, layout: str, device: str) -> tuple[Any, Any, Any]:
    """(input, filter, output gradient) of the layer's shapes, random, in the precision and layout."""
    import torch

    dt = getattr(torch, {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}[dtype])
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    x = torch.randn(int(op.n), op.c, op.h, op.w, device=device, dtype=dt).to(memory_format=fmt)
    w = torch.randn(op.k, 1, op.r, op.s, device=device, dtype=dt).to(memory_format=fmt)
    grad = torch.randn(int(op.n), op.k, op.p, op.q, device=device, dtype=dt).to(memory_format=fmt)
    return x, w, grad


def pass_call(op: Any, tensors: tuple[Any, Any, Any], pass_: str) -> Callable[[], Any]:
    """One pass of the layer as autograd runs it: the forward, or `aten.convolution_backward` asked for the
    input's gradient or the filter's alone."""
    import torch
    import torch.nn.functional as F

    x, w, grad = tensors
    args = (op.stride, op.pad, op.dilation)
    if pass_ == "forward":
        return lambda: F.conv2d(x, w, None, *args, op.groups)
    mask = [pass_ == "backward_input", pass_ == "backward_weight", False]
    return lambda: torch.ops.aten.convolution_backward(grad, x, w, None, *args, False, [0, 0], op.groups, mask)


def seconds(fn: Callable[[], Any], device: str) -> float:
    """Median seconds per call: between CUDA events on a GPU, on the wall clock on a CPU."""
    if device == "cuda":
        return cuda_time(fn, min_s=0.02)["median_s"]
    fn()
    samples = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return sorted(samples)[1]


def copy_rate(device: str, nbytes: int) -> float:
    """Bytes read + written per second of `a.copy_(b)`: the reference each kernel's share is taken against."""
    import torch

    a, b = (torch.empty(nbytes // 4, device=device) for _ in range(2))
    return 2 * nbytes / seconds(lambda: a.copy_(b), device)


def kernel_names(fn: Callable[[], Any]) -> list[str]:
    """The device kernels one call launches, by name, as the profiler records them."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
    return sorted({e.key[:120] for e in prof.key_averages() if e.self_device_time_total > 0})


def measure(model: str, dtype: str, layout: str, device: str = "cuda", small: bool = False) -> list[dict[str, Any]]:
    """One row per depthwise layer shape and pass of `model` in this precision and layout."""
    import torch

    torch.backends.cudnn.benchmark = True
    batch, size = (2, 32) if small else (BATCH, IMAGE)
    element = 4 if dtype == "fp32" else 2
    rows = []
    layers = depthwise_layers(model, batch, size)
    largest = max(range(len(layers)), key=lambda i: ir_bytes(layers[i][0], "forward", element))
    for i, (op, count) in enumerate(layers):
        tensors = layer_tensors(op, dtype, layout, device)
        for pass_ in PASSES:
            fn = pass_call(op, tensors, pass_)
            t = seconds(fn, device)
            rows.append({"model": model, "dtype": dtype, "layout": layout, "pass": pass_, "batch": batch,
                         "channels": op.c, "size": [op.h, op.w], "kernel": [op.r, op.s], "stride": list(op.stride),
                         "layers": count, "ir_bytes": ir_bytes(op, pass_, element), "time_s": t,
                         "kernels": kernel_names(fn) if device == "cuda" and i == largest else []})
        del tensors, fn
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


def summary(rows: list[dict[str, Any]], copy_bytes_per_s: float) -> list[dict[str, Any]]:
    """Per model, precision, layout and pass: the IR's bytes of every depthwise layer over their summed time
    (each shape weighted by how many layers have it), and that rate as a share of the copy rate."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        acc = groups.setdefault((r["model"], r["dtype"], r["layout"], r["pass"]), [0.0, 0.0])
        acc[0] += r["ir_bytes"] * r["layers"]
        acc[1] += r["time_s"] * r["layers"]
    return [{"model": m, "dtype": d, "layout": lay, "pass": p, "ir_bytes": b, "time_s": t,
             "bytes_per_s": b / t, "share_of_copy": b / t / copy_bytes_per_s}
            for (m, d, lay, p), (b, t) in groups.items()]


def main() -> int:
    from gpu_live import cpu_checked_args, environment

    args = cpu_checked_args(__doc__.split("\n")[0], 120.0)

    deadline = time.monotonic() + args.budget_s
    gpu = args.device == "cuda"
    rate = copy_rate(args.device, COPY_BYTES if gpu else 1 << 24)
    doc: dict[str, Any] = {"script": "benchmarks/gpu_depthwise.py",
                           "environment": environment() if gpu else {"device": args.device},
                           "copy_bytes_per_s": rate, "rows": [], "summary": []}
    for dtype, layout in CASES if gpu else (("fp32", "nchw"),):
        for model in MODELS:
            if time.monotonic() > deadline:
                doc["stopped"] = "budget"
                break
            doc["rows"] += measure(model, dtype, layout, args.device, args.small)
            doc["summary"] = summary(doc["rows"], rate)
            emit(doc, args.out)
    emit(doc, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

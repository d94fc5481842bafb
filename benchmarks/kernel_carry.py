"""How a non-GEMM kernel's H100 rate carries to another GPU, checked on an H200 (`carried_kernel_rate`).

The H100 and the H200 have the same 132 SMs at the same 1.98 GHz and differ in memory (copy rate 3.01 against
4.28 TB/s), so a kernel's instruction time is the same on both and only its memory time moves: how much faster a
kernel runs on the H200 says how much of its H100 time was memory. Each kernel's H100 rate is carried to the
H200 with several ways of combining memory and issue time, and compared with what the H200 measured:

    python benchmarks/kernel_carry.py [--h100 benchmarks/results/gpu-live-h100.json]
        [--h200 benchmarks/results/gpu-live-h200-kernels.json] [--out benchmarks/results/kernel-carry.md]

Kernels: the kernels section's (one kernel on a 64x256x56x56 or 32768x768 tensor, fp32 and fp16) that stream
below the copy rate on the H100, and the BatchNorm and max-pooling ops of the breakdown section's ResNet-50
training steps (device time per step under torch.profiler). The copy-rate kernels (ReLU, add, hardswish, global
average pooling) are shown apart: every carry gives them the H200's copy rate.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from roofline.model.ceilings import KERNEL_OVERLAP_EXPONENT, carried_kernel_rate  # noqa: E402

COPY_BYTES = 2 << 30
"""The copy whose rate is each machine's reference: a.copy_(b) over 2 GiB (the runtime profile's reference)."""
SLOW_SHARE = 0.90
"""Kernels below this share of the H100's copy rate are the ones whose carry is in question."""
EXPONENTS = (1.0, 1.5, 2.0, 2.5, 4.0, math.inf)
STEP_OPS = ("aten::cudnn_batch_norm", "aten::cudnn_batch_norm_backward", "aten::max_pool2d_with_indices",
            "aten::max_pool2d_with_indices_backward")


def copy_rate(doc: dict[str, Any]) -> float:
    return next(r["bytes_per_s"] for r in doc["memory"] if r["kernel"] == "copy" and r["bytes"] == COPY_BYTES)


def kernel_pairs(h100: dict[str, Any], h200: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(name, H100 bytes/s, H200 bytes/s) of the kernels section; the bytes are the same on both machines."""
    other = {(r["kernel"], r["dtype"]): r["bytes_per_s"] for r in h200["kernels"]}
    return [(f"{r['kernel']} {r['dtype']}", r["bytes_per_s"], other[r["kernel"], r["dtype"]])
            for r in h100["kernels"] if (r["kernel"], r["dtype"]) in other]


def step_pairs(h100: dict[str, Any], h200: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(name, H100 rate, H200 rate) of the BatchNorm and max-pooling ops of the profiled ResNet-50 training steps:
    their bytes are unknown here, so the H100's rate is taken as the runtime profile gives it (a share of the
    copy rate from the IR's traffic) and the H200's as that rate times the measured speed-up."""
    from roofline.hardware.runtime import EAGER_CUDA, load_runtime

    measured = load_runtime(EAGER_CUDA).kernel_rates.bytes_per_s
    keys = {("amp", "aten::cudnn_batch_norm"): measured["norm:train"][2],
            ("amp", "aten::cudnn_batch_norm_backward"): measured["norm:train:backward"][2],
            ("fp32", "aten::cudnn_batch_norm"): measured["norm:train"][4],
            ("fp32", "aten::cudnn_batch_norm_backward"): measured["norm:train:backward"][4],
            ("amp", "aten::max_pool2d_with_indices"): measured["pool:max"][2],
            ("amp", "aten::max_pool2d_with_indices_backward"): measured["pool:max:backward"][2],
            ("fp32", "aten::max_pool2d_with_indices"): measured["pool:max"][4],
            ("fp32", "aten::max_pool2d_with_indices_backward"): measured["pool:max:backward"][4]}

    def device_s(doc: dict[str, Any], precision: str) -> dict[str, float]:
        row = next(r for r in doc["breakdown"] if r.get("model") == "resnet50" and r.get("mode") == "train"
                   and r.get("precision") == precision)
        return {o["op"]: o["device_s"] for o in row["aten_ops"]}

    pairs = []
    for precision in ("amp", "fp32"):
        a, b = device_s(h100, precision), device_s(h200, precision)
        for op in STEP_OPS:
            rate = keys[precision, op]
            pairs.append((f"ResNet-50 {precision} step: {op.removeprefix('aten::')}", rate, rate * a[op] / b[op]))
    return pairs


def previous_carry(share: float, dram: float, issue_scale: float) -> float:
    """The carry before this comparison: the kernel's share of the copy rate times the lower of this GPU's DRAM
    rate and its SM-cycles scaled to the reference copy rate."""
    return share * min(dram, issue_scale)


def table(pairs: list[tuple[str, float, float]], ref100: float, ref200: float) -> tuple[list[str], dict[str, list]]:
    heads = ["previous carry", *(f"p = {p:g}" for p in EXPONENTS)]
    errors: dict[str, list[float]] = {h: [] for h in heads}
    lines = ["| kernel | H100 share of copy | H100 | H200 measured | speed-up | " + " | ".join(heads) + " |",
             "|---|---:|---:|---:|---:|" + "---:|" * len(heads)]
    for name, r100, r200 in pairs:
        share = r100 / ref100
        carried = [previous_carry(share, ref200, ref100)]
        carried += [carried_kernel_rate(share, ref200, ref100, p) for p in EXPONENTS]
        cells = []
        for head, rate in zip(heads, carried, strict=True):
            errors[head].append(rate / r200 - 1)
            cells.append(f"{rate / 1e9:.0f} ({100 * (rate / r200 - 1):+.0f}%)")
        lines.append(f"| {name} | {share:.2f} | {r100 / 1e9:.0f} | {r200 / 1e9:.0f} | {r200 / r100:.2f} | "
                     + " | ".join(cells) + " |")
    return lines, errors


def summary(errors: dict[str, list[float]]) -> list[str]:
    lines = ["| carry | median abs error | signed median | worst abs |", "|---|---:|---:|---:|"]
    for head, errs in errors.items():
        lines.append(f"| {head} | {100 * statistics.median(map(abs, errs)):.1f}% | "
                     f"{100 * statistics.median(errs):+.1f}% | {100 * max(map(abs, errs)):.0f}% |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h100", type=Path, default=ROOT / "benchmarks/results/gpu-live-h100.json")
    parser.add_argument("--h200", type=Path, default=ROOT / "benchmarks/results/gpu-live-h200-kernels.json")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/kernel-carry.md")
    args = parser.parse_args()
    h100, h200 = json.loads(args.h100.read_text()), json.loads(args.h200.read_text())
    ref100, ref200 = copy_rate(h100), copy_rate(h200)
    pairs = kernel_pairs(h100, h200)
    slow = [p for p in pairs if p[1] / ref100 < SLOW_SHARE]
    fast = [p for p in pairs if p[1] / ref100 >= SLOW_SHARE]
    steps = step_pairs(h100, h200)
    slow_lines, slow_errors = table(slow, ref100, ref200)
    step_lines, step_errors = table(steps, ref100, ref200)
    fast_lines = ["| kernel | H100 | H200 | speed-up |", "|---|---:|---:|---:|"]
    fast_lines += [f"| {n} | {a / 1e9:.0f} | {b / 1e9:.0f} | {b / a:.2f} |" for n, a, b in fast]
    env100, env200 = h100["environment"], h200["environment"]
    doc = [
        "# Carrying a kernel's H100 rate to another GPU, checked on an H200",
        "",
        f"Machines: {env100['gpu']} ({env100['date']}, copy rate {ref100 / 1e12:.3f} TB/s) and {env200['gpu']} "
        f"({env200['date']}, {ref200 / 1e12:.3f} TB/s), both {env100['sm_count']} SMs at "
        f"{env100['nvidia_smi']['clocks.max.sm']}, torch {env200['torch']}. Rates are bytes read + written per "
        "second (GB/s); each carried rate is followed by its error against the H200's measurement.",
        "",
        "Carries: `previous carry` is the kernel's share of the copy rate times the lower of the GPU's DRAM rate and "
        "its SM-cycles (the model before this comparison: on the H200 it gives the H100's rate); `p = ...` is "
        "`roofline.model.ceilings.carried_kernel_rate`: memory time at the GPU's copy rate and the rest of the "
        "H100's time as issue time, combined as (memory^p + issue^p)^(1/p); p = inf takes the larger. "
        f"The model uses p = {KERNEL_OVERLAP_EXPONENT:g} between boards of the H100's architecture (Hopper) and the "
        "previous carry on others: carried to every board, it made a held-out set of Turing boards 17.2% -> 22.4% "
        "too fast (benchmarks/LOG.md, twenty-third session).",
        "",
        f"## Kernels below {SLOW_SHARE:.0%} of the H100's copy rate (kernels section)",
        "",
        *slow_lines,
        "",
        *summary(slow_errors),
        "",
        "## BatchNorm and max pooling in ResNet-50's training steps (breakdown section)",
        "",
        "AMP at batch 256 channels-last, fp32 (TF32 off) at batch 64 over NCHW. H100 rates are the runtime "
        "profile's (the IR's traffic over the profiled time); H200 rates are those times the measured speed-up.",
        "",
        *step_lines,
        "",
        *summary(step_errors),
        "",
        "## Kernels at the copy rate on the H100 (every carry gives them the H200's copy rate)",
        "",
        *fast_lines,
        "",
    ]
    args.out.write_text("\n".join(doc))
    print("\n".join(summary(slow_errors) + summary(step_errors)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

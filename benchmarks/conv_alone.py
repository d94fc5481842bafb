"""CPU convolutions alone: `predict --op` against the same convolution called repeatedly in this process.

This is the context of a user's script that times one op in a loop in a fresh process (warm caches), the one
`predict --op` describes unless told the op sits in a model, with the C heap steady (see `table`).

The grid covers the kinds the cost model tells apart (3x3, 1x1, depthwise, strided, the 7x7 stem) at batch 1
to 32, in NCHW as PyTorch's default.

    python benchmarks/conv_alone.py --hw PROFILE [--threads N] [--out benchmarks/results/conv-alone.md]

Each shape is timed in its own fresh process by roofline's Timer (warm-up, inner loop grown to >= 1 ms,
median of repeats), ROUNDS times, the rounds going over the whole grid in turn so the machine's drift lands on
every shape alike; the median of the rounds is kept, in a steady heap (the context predicted) and in glibc's
default one. Error = predicted / measured - 1. The target (issue 16): median |error| <= 15% in the steady heap.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROUNDS = 2
BUDGET_S = 0.5
"""Seconds of timing per shape per round."""

SHAPES: tuple[tuple[str, str], ...] = tuple(
    (kind, f"conv2d(n={n},c={c},h={h},w={h},k={k},r={r},s={r},stride={stride},pad={r // 2},groups={groups},"
           "bias=false)")
    for n in (1, 8, 32)
    for kind, c, h, k, r, stride, groups in (
        ("3x3", 64, 56, 64, 3, 1, 1),
        ("3x3", 256, 14, 256, 3, 1, 1),
        ("3x3 strided", 128, 56, 128, 3, 2, 1),
        ("1x1", 256, 56, 64, 1, 1, 1),
        ("1x1", 512, 14, 2048, 1, 1, 1),
        ("1x1 strided", 256, 56, 512, 1, 2, 1),
        ("depthwise", 96, 56, 96, 3, 1, 96),
        ("depthwise", 480, 14, 480, 5, 1, 480),
        ("depthwise strided", 64, 112, 64, 3, 2, 64),
        ("stem 7x7", 3, 224, 64, 7, 2, 1),
    )
    if not (n == 32 and h >= 112 and kind != "stem 7x7")
)


def _conv_call(spec: str):
    """A no-argument callable running the convolution `spec` describes (read by `predict --op`'s own parser, so
    the op timed is the op predicted), in torch, forward, no autograd."""
    import torch

    from roofline.workload.opspec import parse_op

    op = parse_op(spec)
    conv = torch.nn.Conv2d(op.c, op.k, (op.r, op.s), stride=op.stride, padding=op.pad, dilation=op.dilation,
                           groups=op.groups, bias=op.bias).eval()
    x = torch.randn(op.n, op.c, op.h, op.w)

    def call():
        with torch.no_grad():
            return conv(x)

    return call


def time_one(spec: str, threads: int | None) -> float:
    """Median seconds of one call of `spec`, timed in this process."""
    import torch

    from roofline.measure.timing import Timer

    if threads:
        torch.set_num_threads(threads)
    return Timer(_conv_call(spec), label=spec, budget_s=BUDGET_S).measure().median


def measure(threads: int | None) -> dict[str, dict[str, float]]:
    """Each shape's median over ROUNDS fresh processes, in each heap: 'steady' (glibc told to keep its pages,
    the allocator advice's setting: the context `predict --op` prices) and 'default' (glibc's own policy, whose
    faults the prediction notes as a bound)."""
    import os
    import subprocess

    from roofline.model.cpu_runtime.heap_setting import KEEP_HEAP_ENV

    envs = {"steady": {**os.environ, **KEEP_HEAP_ENV}, "default": dict(os.environ)}
    rounds: dict[str, dict[str, list[float]]] = {heap: {spec: [] for _, spec in SHAPES} for heap in envs}
    for _ in range(ROUNDS):
        for _, spec in SHAPES:
            for heap, env in envs.items():
                argv = [sys.executable, __file__, "--one", spec, *(["--threads", str(threads)] if threads else [])]
                done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
                rounds[heap][spec].append(float(done.stdout))
    return {heap: {spec: statistics.median(t) for spec, t in times.items()} for heap, times in rounds.items()}


def predict(hw: str) -> dict[str, tuple[float, float]]:
    """Each shape's predicted time alone (a steady heap) and the bound glibc's default heap adds: the
    first-touch time the prediction notes."""
    from roofline.api import predict as api_predict
    from roofline.hardware.load import load_profile
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.opspec import op_workload
    from roofline.workload.precision import get_precision

    profile, fp32 = load_profile(Path(hw)), get_precision("fp32")
    out = {}
    for _, spec in SHAPES:
        steady = api_predict(op=spec, hw=hw).step_time_s
        replayed, kept = (predict_step(op_workload(spec), profile, fp32, StepOptions(heap_kept=k)).step_time_s
                          for k in (False, True))
        out[spec] = steady, steady + replayed - kept
    return out


def _summary(errors: list[float]) -> str:
    abs_err = [abs(e) for e in errors]
    return (f"median |error| {statistics.median(abs_err):.1%}, worst {max(abs_err):.1%}, signed median "
            f"{statistics.median(errors):+.1%}")


def table(measured: dict[str, dict[str, float]], predicted: dict[str, tuple[float, float]], hw: str,
          threads: int | None) -> str:
    rows, steady, default, bounded = [], [], [], 0
    by_kind: dict[str, list[float]] = {}
    for kind, spec in SHAPES:
        alone, with_faults = predicted[spec]
        ms, md = measured["steady"][spec], measured["default"][spec]
        steady.append(alone / ms - 1)
        default.append(alone / md - 1)
        bounded += alone * 0.85 <= md <= with_faults * 1.15
        by_kind.setdefault(kind.split()[0], []).append(abs(steady[-1]))
        rows.append(f"| {kind} | `{spec}` | {alone * 1e3:.3f} | {ms * 1e3:.3f} | {steady[-1]:+.1%} | "
                    f"{with_faults * 1e3:.3f} | {md * 1e3:.3f} | {default[-1]:+.1%} |")
    head = [
        "# CPU convolutions alone: predicted vs measured",
        "",
        f"Generated by `python benchmarks/conv_alone.py --hw {hw}"
        f"{f' --threads {threads}' if threads else ''}`; forward, NCHW, fp32, each shape called repeatedly "
        "in a fresh process (warm caches), median of the rounds. Error = predicted / measured - 1.",
        "",
        "`predict --op` prices an op alone with a steady heap (warm calls, no first-touch faults charged). Each "
        "shape is timed twice: in a process whose glibc keeps its pages (MALLOC_MMAP_MAX_=0, "
        "MALLOC_TRIM_THRESHOLD_ huge: the allocator advice's setting), the context predicted; and in a default "
        "process, where glibc may unmap and fault the output again on every call, for which the prediction "
        "notes the replayed fresh pages as a bound (`with faults`).",
        "",
        f"Steady heap: {_summary(steady)}, {len(steady)} shapes (target: median 15%).",
        f"Default heap, against the same prediction: {_summary(default)}; within the noted range (from the "
        f"steady prediction -15% to the prediction with every replayed fault +15%): {bounded} of {len(default)}.",
        "",
        "| kind | steady heap, median abs | shapes |",
        "|---|---:|---:|",
        *(f"| {k} | {statistics.median(v):.1%} | {len(v)} |" for k, v in by_kind.items()),
        "",
        "| kind | op | predicted ms | measured ms, steady heap | error | with faults ms | measured ms, default "
        "heap | error |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    return "\n".join(head + rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", help="the calibrated CPU profile of this machine")
    ap.add_argument("--one", metavar="SPEC", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, help="torch threads (default: torch's own)")
    ap.add_argument("--out", help="write the markdown table here too")
    args = ap.parse_args()
    if args.one:
        print(time_one(args.one, args.threads))
        return 0
    if not args.hw:
        ap.error("--hw PROFILE is required")
    text = table(measure(args.threads), predict(args.hw), args.hw, args.threads)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

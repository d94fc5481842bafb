"""The training step's host price against the inference step's, on the machines the runtime profile came from.

    python benchmarks/training_host_pairs.py [--out benchmarks/results/training-host-pairs.md]

The runtime profile prices a host-bound training step with figures from one lease (the host section of
benchmarks/results/gpu-live-h100.json, run 4: `training_host_factor` and `training_loop_host_s`) and an
inference step with per-call costs from another (`roofline calibrate --device cuda --quick`). Hosts of the same
kind differ by up to 1.5x between leases (ResNet-50 AMP inference at batch 1: 4.41 ms on one, 6.69 ms on
another), so a factor taken across two leases carries their difference. This script takes each lease's own
ratio instead: a host-bound training step over the inference step at batch 1 of the same model, precision and
layout, measured in the same run of the same machine (the zoo sections of the committed live results), and
finds the one scale k of the training-only host figures (the factor and the loop's Python, both from run 4)
that makes the predicted ratios match the measured ones at the median. A training row counts as host-bound
where its predicted host time is at least HOST_BOUND_MARGIN times its predicted device time, so that the
device cannot be what sets its pace. It reports k and changes no profile.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.gpu_live_compare import predict_row  # noqa: E402

LIVE_FILES = {"benchmarks/results/gpu-live-h100.json": "h100", "benchmarks/results/gpu-live-h200.json": "h200"}
"""Committed live runs with zoo sections, and the profile each was measured on."""
RUNTIME = ROOT / "hardware_profiles/runtime/pytorch-eager-cuda.yaml"
HOST_BOUND_MARGIN = 1.5
"""A training row's predicted host time over its predicted device time at which the row is taken as host-bound."""


def pairs() -> list[dict[str, Any]]:
    """Host-bound training rows, each with the inference row at batch 1 of the same model, precision, layout and
    sequence length measured in the same run of the same file."""
    found = []
    for path, gpu in LIVE_FILES.items():
        doc = json.loads((ROOT / path).read_text())
        rows = [r for r in doc["zoo"] if r["data"] == "device"]
        for train in rows:
            if train["mode"] != "train":
                continue
            key = (train.get("run"), train["model"], train["precision"], train["channels_last"], train.get("seq_len"))
            infer = [r for r in rows if r["mode"] == "inference" and r["batch"] == 1 and
                     (r.get("run"), r["model"], r["precision"], r["channels_last"], r.get("seq_len")) == key]
            if not infer:
                continue
            priced = predict_row(train, gpu)
            if priced["host_s"] < HOST_BOUND_MARGIN * priced["device_s"]:
                continue
            found.append({"file": path, "gpu": gpu, "run": train.get("run", 1), "train": train, "infer": infer[0],
                          "measured_ratio": train["step_s"] / infer[0]["step_s"]})
    return found


def scaled_runtime(k: float, folder: Path) -> str:
    """A copy of the runtime profile with its training-only host figures scaled by k; returns its path."""
    doc = yaml.safe_load(RUNTIME.read_text())
    doc["training_host_factor"]["value"] *= k
    for phase in ("optimizer_step", "grad_scaler", "zero_grad"):
        doc["training_loop_host_s"][phase] = {name: v * k for name, v in doc["training_loop_host_s"][phase].items()}
    path = folder / f"runtime-k{k:.6f}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def predicted_ratios(found: list[dict[str, Any]], runtime: str | None) -> list[float]:
    return [predict_row(p["train"], p["gpu"], runtime)["predicted_s"] /
            predict_row(p["infer"], p["gpu"], runtime)["predicted_s"] for p in found]


def log_gap(found: list[dict[str, Any]], runtime: str | None) -> float:
    """The median over pairs of ln(predicted ratio / measured ratio)."""
    ratios = predicted_ratios(found, runtime)
    return statistics.median(math.log(r / p["measured_ratio"]) for r, p in zip(ratios, found, strict=True))


def solve_k(found: list[dict[str, Any]], folder: Path) -> float:
    """Bisection for the k at which the median log gap is zero (it falls as k falls)."""
    lo, hi = 0.2, 2.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if log_gap(found, scaled_runtime(mid, folder)) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def render(found: list[dict[str, Any]], before: list[float], after: list[float], k: float) -> str:
    doc = yaml.safe_load(RUNTIME.read_text())
    factor = doc["training_host_factor"]["value"]
    lines = ["# A training step's host time over an inference step's, the same machine in the same run", "",
             "`python benchmarks/training_host_pairs.py`. Each pair: a training step (SGD with momentum; GradScaler "
             "under AMP) whose predicted host time is at least "
             f"{HOST_BOUND_MARGIN}x its predicted device time, and the inference step at batch 1 of the same model, "
             "precision and layout, both from the same run's zoo section (CUDA events over back-to-back steps). "
             f"k scales the runtime profile's training-only host figures as they stood when this ran "
             f"(training_host_factor {factor}, the loop's Python); the fitted k makes the median of "
             "ln(predicted ratio / measured ratio) zero.", "",
             "| file | run | model | precision | training batch | training | inference b1 | measured ratio | "
             f"predicted, k = 1 | predicted, k = {k:.3f} |", "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for p, b, a in zip(found, before, after, strict=True):
        train, infer = p["train"], p["infer"]
        lines.append(f"| {Path(p['file']).name} | {p['run']} | {train['model']} | {train['precision']} | "
                     f"{train['batch']} | {train['step_s'] * 1e3:.2f} ms | {infer['step_s'] * 1e3:.2f} ms | "
                     f"{p['measured_ratio']:.2f} | {b:.2f} | {a:.2f} |")
    gaps_b = [b / p["measured_ratio"] for b, p in zip(before, found, strict=True)]
    gaps_a = [a / p["measured_ratio"] for a, p in zip(after, found, strict=True)]
    lines += ["", f"Predicted over measured ratio, median (range): k = 1: {statistics.median(gaps_b):.2f} "
              f"({min(gaps_b):.2f}-{max(gaps_b):.2f}); k = {k:.3f}: {statistics.median(gaps_a):.2f} "
              f"({min(gaps_a):.2f}-{max(gaps_a):.2f}).", "",
              f"Fitted k = {k:.3f}: training_host_factor {factor} -> {factor * k:.3g}; the loop's Python "
              "(optimizer step, GradScaler, zero_grad, fixed and per tensor) each times k. This script reports k "
              "and changes no profile."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/training-host-pairs.md")
    args = parser.parse_args()
    found = pairs()
    if not found:
        print("no host-bound training row has an inference row at batch 1 in the same run", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        before = predicted_ratios(found, scaled_runtime(1.0, folder))
        k = solve_k(found, folder)
        after = predicted_ratios(found, scaled_runtime(k, folder))
    args.out.write_text(render(found, before, after, k))
    print(f"{len(found)} pairs; fitted k = {k:.3f}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Predicted against measured on a real GPU: the zoo steps and ceilings that benchmarks/gpu_live.py recorded.

    python benchmarks/gpu_live_compare.py [--measured benchmarks/results/gpu-live-h100.json] [--gpu h100]
    python benchmarks/gpu_live_compare.py --measured benchmarks/results/gpu-live-h100-half.json

Each measured step is predicted with the settings it ran under (data already on the device, SGD with
momentum, channels-last under AMP for CNNs, the sequence length it used) on the shipped datasheet profile,
and the table gives error = predicted / measured - 1 per row, and the median and worst |error| per group.
Memory: `torch.cuda.max_memory_allocated()` over the timed steps and their warm-up (cudnn.benchmark's
algorithm trials included) beside the predicted footprint less the CUDA context, which the allocator does not
count (cuBLAS's workspace it does).
The rows are this project's own measurements, not the published record; they are reported apart from it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from roofline.hardware.load import find_profile  # noqa: E402
from roofline.hardware.runtime import EAGER_CUDA  # noqa: E402
from roofline.model.memory import CUDA_CONTEXT_BYTES  # noqa: E402
from roofline.model.step import StepOptions, predict_step  # noqa: E402
from roofline.workload.precision import get_precision  # noqa: E402
from roofline.workload.zoo import build_workload  # noqa: E402


def predict_row(row: dict[str, Any], gpu: str, runtime: str | None = EAGER_CUDA) -> dict[str, Any]:
    """The row's step predicted with the settings it ran under; a training step without an update (the
    'half' section's `optimizer: none`) is the predicted step less its optimizer. `runtime` names the runtime
    profile (or its YAML path) that prices the framework."""
    profile = find_profile(gpu, kind="gpu")
    precision = get_precision(row["precision"])
    no_update = row.get("optimizer") == "none"
    # gpu_live.py sets cudnn.allow_tf32 and cuda.matmul.allow_tf32 to (precision == "tf32"): its fp32 is IEEE
    opts = StepOptions(train=row["mode"] == "train", optimizer="sgd" if no_update else "momentum",
                       include_transfer=row["data"] != "device", pinned=row["data"] == "pinned",
                       channels_last=bool(row["channels_last"]), fp32_math="ieee",
                       autocast=row["precision"] == "amp", runtime=runtime)
    workload = build_workload(row["model"], row["batch"], seq_len=row.get("seq_len"))
    pred = predict_step(workload, profile, precision, opts)
    step_s = pred.step_time_s - (pred.optimizer_s if no_update else 0.0)
    return {"predicted_s": step_s, "host_s": pred.host_s, "device_s": pred.device_s,
            "predicted_memory_bytes": pred.memory.total - CUDA_CONTEXT_BYTES,
            "error_pct": (step_s / row["step_s"] - 1) * 100}


def settings(row: dict[str, Any]) -> str:
    """Layout for CNNs, sequence length for text, and a training step without an update."""
    parts = [f"seq {row['seq_len']}" if row.get("seq_len") else ("NHWC" if row["channels_last"] else "NCHW")]
    if row.get("optimizer") == "none":
        parts.append("no update")
    return ", ".join(parts)


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    errors = [r["error_pct"] for r in rows]
    return {"rows": len(errors), "median_abs_pct": statistics.median(abs(e) for e in errors),
            "worst_abs_pct": max(abs(e) for e in errors), "median_signed_pct": statistics.median(errors)}


def render(rows: list[dict[str, Any]], env: dict[str, Any], gpu: str) -> str:
    lines = [f"# Predicted vs measured on {env['gpu']} ({gpu} profile)", "",
             f"Measured {env['date']} with torch {env['torch']}, CUDA {env['cuda']}, cuDNN {env['cudnn']} "
             f"(benchmarks/gpu_live.py; cudnn.benchmark on, data on the device unless the row says otherwise, "
             "SGD with momentum unless the row says 'no update'; fp16 is the model itself in 16-bit, amp is "
             "autocast). error = predicted / measured - 1.", "",
             "| model | mode | precision | batch | settings | data | measured | predicted | error | alloc GiB | "
             "predicted GiB (no context) |", "|---|---|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['mode']} | {r['precision']} | {r['batch']} | {settings(r)} | {r['data']} | "
                     f"{r['step_s'] * 1e3:.2f} ms | {r['predicted_s'] * 1e3:.2f} ms | {r['error_pct']:+.1f}% | "
                     f"{r['peak_allocated_bytes'] / 2**30:.2f} | {r['predicted_memory_bytes'] / 2**30:.2f} |")
    lines += ["", "| group | rows | median abs error | worst | signed median |", "|---|---:|---:|---:|---:|"]
    groups: dict[str, list[dict[str, Any]]] = {"all": rows}
    for r in rows:
        for key in ("model", "mode", "precision"):
            groups.setdefault(f"{key}={r[key]}", []).append(r)
    for name, members in groups.items():
        s = summary(members)
        lines.append(f"| {name} | {s['rows']} | {s['median_abs_pct']:.1f}% | {s['worst_abs_pct']:.1f}% | "
                     f"{s['median_signed_pct']:+.1f}% |")
    lines += ["", "Memory, predicted / allocated:", "", "| group | rows | median | lowest | highest |",
              "|---|---:|---:|---:|---:|"]
    for name, members in memory_groups(rows).items():
        ratios = [r["predicted_memory_bytes"] / r["peak_allocated_bytes"] for r in members]
        lines.append(f"| {name} | {len(ratios)} | {statistics.median(ratios):.2f} | {min(ratios):.2f} | "
                     f"{max(ratios):.2f} |")
    return "\n".join(lines) + "\n"


def memory_groups(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows by mode and by whether autocast ran them: fp32 convolutions' cuDNN algorithm trials show in the
    allocated peak, and autocast's fp32 weights with their 16-bit copies in an inference one."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if "peak_allocated_bytes" in r:
            kind = "amp" if r["precision"] == "amp" else "other precisions"
            groups.setdefault(f"{r['mode']}, {kind}", []).append(r)
    return groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measured", type=Path, default=ROOT / "benchmarks/results/gpu-live-h100.json")
    parser.add_argument("--gpu", default="h100")
    parser.add_argument("--out", type=Path, help="default: the measured file's name with .md")
    args = parser.parse_args()
    doc = json.loads(args.measured.read_text())
    out = args.out or args.measured.with_suffix(".md")
    measured = doc["zoo"] if "zoo" in doc else doc["half"]["steps"]
    rows = [dict(r, **predict_row(r, args.gpu)) for r in measured if "step_s" in r]
    out.write_text(render(rows, doc["environment"], args.gpu))
    s = summary(rows)
    print(f"{s['rows']} rows: median |error| {s['median_abs_pct']:.1f}%, worst {s['worst_abs_pct']:.1f}%, "
          f"signed median {s['median_signed_pct']:+.1f}%; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

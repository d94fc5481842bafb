"""Predicted against measured for the decode kernels and steps timed on lent GPUs (benchmarks/gpu_decode_kernels.py).

Reads the measured JSON documents and prices the same work with this checkout's cost model:
- each cuBLAS product of the skinny section (`op_cost` of a decode-step `Linear` whose weight comes from DRAM);
- each tinygemm int4 product of the int4 section (`--quant-kernel tinygemm`);
- each compiled int8 product of the int8wo sections (`--quant-kernel inductor`: gpt-fast's settings at one row,
  a bf16 copy then cuBLAS beyond; the default-settings rows are shown beside them);
- each captured Llama-3-8B forward of the step and compiled sections (`roofline predict --runtime graph`: the
  time per output token for a decode step at that context, the time to first token for a prefill).
Writes benchmarks/results/gpu-decode-kernels.md; no GPU needed.

    python benchmarks/gpu_decode_compare.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from roofline.api import predict_serving  # noqa: E402
from roofline.hardware import find_profile  # noqa: E402
from roofline.model.ceilings import ceilings_for  # noqa: E402
from roofline.model.context import CostContext  # noqa: E402
from roofline.model.costmodel import op_cost  # noqa: E402
from roofline.model.llm_precision import serving_precision  # noqa: E402
from roofline.model.llm_step import weight_only_cost  # noqa: E402
from roofline.workload.ops import Linear  # noqa: E402
from roofline.workload.precision import get_precision  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
MACHINES = {"H100 80GB HBM3": ("h100-sxm5-80gb", ["gpu-decode-kernels-h100.json", "gpu-decode-compiled-h100.json",
                                                  "gpu-decode-check-h100.json",
                                                  "gpu-decode-int8wo-gptfast-h100.json"]),
            "H200": ("h200-sxm-141gb", ["gpu-decode-kernels-h200.json", "gpu-decode-int8wo-h200.json",
                                       "gpu-decode-int8wo-gptfast-h200.json"])}
STEP_WEIGHTS_BYTES = 16e9
"""A decode step reads every weight once: none is left in L2 when it comes round (Llama-3-8B in bf16)."""


def _error(predicted: float, measured: float) -> float:
    return predicted / measured - 1


def _summary(errors: list[float]) -> str:
    if not errors:
        return "no points"
    return (f"{len(errors)} points: median |error| {statistics.median(abs(e) for e in errors):.1%}, "
            f"signed {statistics.median(errors):+.1%}, worst {max(errors, key=abs):+.1%}")


def skinny_rows(profile: str, doc: dict[str, Any], section: str = "skinny") -> tuple[list[str], list[float]]:
    p = get_precision("bf16")
    ctx = CostContext(ceilings_for(find_profile(profile, kind="gpu"), p), p.storage_bytes, p.storage_bytes,
                      weight_reuse_bytes=STEP_WEIGHTS_BYTES)
    lines, errors = [], []
    for r in doc.get(section, []):
        if "s_per_product" not in r:
            continue
        op = Linear("w", batch=r["m"], in_features=r["k"], out_features=r["n"])
        predicted = op_cost(op, "forward", ctx).device_s
        errors.append(_error(predicted, r["s_per_product"]))
        lines.append(f"| {r['n']} x {r['k']} | {r['m']} | {r['s_per_product'] * 1e6:.1f} | {predicted * 1e6:.1f} | "
                     f"{errors[-1]:+.1%} |")
    return lines, errors


def _weight_only_s(c: Any, prec: Any, r: dict[str, Any]) -> float:
    """Predicted seconds of one measured weight-only product (bf16 activations, `r`'s rows and weight shape)."""
    op = Linear("w", batch=1, in_features=r["k"], out_features=r["n"], bias=False, tokens=r["m"])
    ctx = CostContext(c, 2, prec.linear_weight_bytes)
    return weight_only_cost(op_cost(op, "forward", ctx), op, prec, c, ctx).device_s


def int4_rows(profile: str, doc: dict[str, Any], section: str = "int4") -> tuple[list[str], list[float]]:
    c = ceilings_for(find_profile(profile, kind="gpu"), get_precision("bf16"))
    lines, errors = [], []
    for r in doc.get(section, []):
        if "s_per_product" not in r:
            continue
        prec = serving_precision("int4", group_size=r["group"], activation="bf16", quant_kernel="tinygemm")
        predicted = _weight_only_s(c, prec, r)
        errors.append(_error(predicted, r["s_per_product"]))
        lines.append(f"| {r['n']} x {r['k']} | {r['group']} | {r['m']} | {r['s_per_product'] * 1e6:.1f} | "
                     f"{predicted * 1e6:.1f} | {errors[-1]:+.1%} |")
    return lines, errors


def int8wo_rows(profile: str, docs: list[dict[str, Any]]) -> tuple[list[str], list[float]]:
    """The compiled int8 products (`--quant-kernel inductor`): the one-row ones under gpt-fast's
    coordinate_descent_tuning (int8wo_gptfast) and every row count of the default-settings section, whose
    compiled code at more than one row is the same bf16 copy then cuBLAS."""
    c = ceilings_for(find_profile(profile, kind="gpu"), get_precision("bf16"))
    prec = serving_precision("int8", activation="bf16", quant_kernel="inductor")
    lines, errors = [], []
    for doc in docs:
        for section in ("int8wo_gptfast", "int8wo"):
            for r in doc.get(section, []):
                if "s_per_product" not in r or r.get("mode") != "compiled":
                    continue
                if r["m"] == 1 and not r.get("coordinate_descent"):
                    continue
                predicted = _weight_only_s(c, prec, r)
                errors.append(_error(predicted, r["s_per_product"]))
                lines.append(f"| {r['n']} x {r['k']} | {r['m']} | {section} | {r['s_per_product'] * 1e6:.1f} | "
                             f"{predicted * 1e6:.1f} | {errors[-1]:+.1%} |")
    return lines, errors


def step_rows(profile: str, rows: list[dict[str, Any]], what: str) -> tuple[list[str], list[float]]:
    lines, errors = [], []
    for r in rows:
        if "step_s" not in r:
            continue
        decode = r["tokens"] == 1
        pred = predict_serving("llama-3-8b", gpu=profile, prompt_len=r["context"] if decode else r["tokens"],
                               output_len=2 if decode else 1, batch=r["batch"], runtime="graph")
        predicted = pred["tpot_s"] if decode else pred["ttft_s"]
        errors.append(_error(predicted, r["step_s"]))
        shape = f"decode at context {r['context']}" if decode else f"prefill of {r['tokens']} tokens"
        lines.append(f"| {what} | {shape} | {r['batch']} | {r['kernel_count']:.0f} | {r['step_s'] * 1e3:.2f} | "
                     f"{predicted * 1e3:.2f} | {errors[-1]:+.1%} |")
    return lines, errors


def floor_rows(doc: dict[str, Any]) -> list[str]:
    """The small kernels' time per kernel in a graph and launched eagerly (not priced: see the section's note)."""
    return [f"| {r['kernel']} | {r['rows']} x {r['width']} | {r['graph_s_per_kernel'] * 1e6:.2f} | "
            f"{r['eager_s_per_kernel'] * 1e6:.2f} |" for r in doc.get("floors", []) if "graph_s_per_kernel" in r]


def attention_rows(doc: dict[str, Any]) -> list[str]:
    """Decode attention per SDPA backend (measured only)."""
    return [f"| {r['batch']} | {r['context']} | {r['kv_heads']} | {r['backend']} | {r['s_per_call'] * 1e6:.1f} | "
            f"{r['cache_bytes_per_s'] / 1e12:.2f} |" for r in doc.get("attention", []) if "s_per_call" in r]


def main() -> int:
    out = ["# Decode kernels and steps on lent GPUs: measured against predicted", "",
           "Measured by benchmarks/gpu_decode_kernels.py inside CUDA graphs (no host in the time); predicted by this",
           "checkout (benchmarks/gpu_decode_compare.py). Errors are predicted / measured - 1.", ""]
    for machine, (profile, files) in MACHINES.items():
        docs = [json.loads((RESULTS / f).read_text()) for f in files if (RESULTS / f).exists()]
        if not docs:
            continue
        env = docs[0]["environment"]
        out += [f"## {machine} (profile {profile})", "",
                f"{env['gpu']}, torch {env['torch']}, driver {env['nvidia_smi'].get('driver_version')}, {env['date']}.",
                ""]
        skinny, skinny_errors = skinny_rows(profile, docs[0])
        out += ["### cuBLAS products over cold weights (bf16, F.linear), microseconds", "",
                _summary(skinny_errors), "", "| weight (out x in) | rows | measured | predicted | error |",
                "|---|---:|---:|---:|---:|", *skinny, ""]
        int4, int4_errors = int4_rows(profile, docs[0])
        out += ["### tinygemm int4 products (torch._weight_int4pack_mm), microseconds", "", _summary(int4_errors), "",
                "| weight (out x in) | group | rows | measured | predicted | error |", "|---|---:|---:|---:|---:|---:|",
                *int4, ""]
        for doc in docs:
            check, check_errors = skinny_rows(profile, doc, "skinny_check")
            if check:
                out += ["### Check, not fitted: cuBLAS products of Llama-2-7B's and 13B's shapes, microseconds", "",
                        _summary(check_errors), "", "| weight (out x in) | rows | measured | predicted | error |",
                        "|---|---:|---:|---:|---:|", *check, ""]
            check, check_errors = int4_rows(profile, doc, "int4_check")
            if check:
                out += ["### Check, not fitted: tinygemm int4 products of Llama-2-7B's and 13B's shapes, "
                        "microseconds", "", _summary(check_errors), "",
                        "| weight (out x in) | group | rows | measured | predicted | error |",
                        "|---|---:|---:|---:|---:|---:|", *check, ""]
        int8, int8_errors = int8wo_rows(profile, docs)
        if int8:
            out += ["### Compiled int8 weight-only products (`F.linear(x, w.to(bf16)) * scales`, gpt-fast's and "
                    "torchao's), microseconds", "", "Predicted with `--quant-kernel inductor`, whose rate per "
                    "SM-cycle is the median of the one-row points (fitted on them).", "", _summary(int8_errors), "",
                    "| weight (out x in) | rows | section | measured | predicted | error |",
                    "|---|---:|---|---:|---:|---:|", *int8, ""]
        steps, step_errors = [], []
        for doc in docs:
            for section, what in (("step", "plain ops, captured"), ("compiled", "torch.compile, captured")):
                lines, errors = step_rows(profile, doc.get(section, []), what)
                steps += lines
                step_errors += errors
        out += ["### Llama-3-8B-shaped forwards (bf16, random weights), milliseconds per replay", "",
                "Predicted: `roofline predict --runtime graph`, whose ops are one kernel each (a compiled graph's).",
                "", _summary(step_errors), "", "| how | forward | batch | kernels | measured | predicted | error |",
                "|---|---|---:|---:|---:|---:|---:|", *steps, ""]
        floors = floor_rows(docs[0])
        if floors:
            out += ["### Small kernels, microseconds per kernel (measured; the cost model floors each at the profile's "
                    "5 us launch)", "", "| kernel | bf16 elements | in a graph | launched eagerly |",
                    "|---|---:|---:|---:|", *floors, ""]
        attention = attention_rows(docs[0])
        if attention:
            out += ["### Decode attention (one query token, 32 heads of 128), measured", "",
                    "| batch | context | KV heads | SDPA backend | microseconds | cache TB/s |",
                    "|---:|---:|---:|---|---:|---:|", *attention, ""]
    path = RESULTS / "gpu-decode-kernels.md"
    path.write_text("\n".join(out))
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compare `roofline`'s LLM serving predictions with the published record (benchmarks/published/llm-serving.yaml).

`compare_llm_serving()` returns one row per record (predicted, published, signed error) and a summary per
metric for the fitted and held-out sources; benchmarks/published.py can register it. Run alone:
    PYTHONPATH=. python benchmarks/published_llm.py
Predictions ignore whether the batch fits (TensorRT-LLM's paged KV cache and engine memory differ from
transformers' footprint); every other input is the row's own.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import yaml

from roofline.hardware import find_profile
from roofline.model.llm_precision import serving_precision
from roofline.model.llm_step import predict_serving
from roofline.workload.llm.builtins import get_config

DATASET = Path(__file__).resolve().parent / "published" / "llm-serving.yaml"


def _predicted(row: dict[str, Any]) -> float:
    profile = find_profile(row["gpu"])
    activation = "bf16" if row["precision"] in ("int8", "int4", "bf16") else "fp16"
    prec = serving_precision(row["precision"], row.get("kv"), row.get("group_size", 128), activation)
    p = predict_serving(get_config(row["model"]), profile, prec, row["batch"], row["prompt"], row["output"],
                        row["runtime"])
    return {"decode_tokens_per_s": p.decode_tokens_per_s, "tokens_per_s": p.tokens_per_s,
            "prefill_tokens_per_s": p.batch * p.prompt_len / p.ttft_s, "ttft_s": p.ttft_s}[row["metric"]]


def compare_llm_serving(path: Path = DATASET) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    sources = data["sources"]
    rows = []
    for row in data["rows"]:
        predicted = _predicted(row)
        rows.append({**row, "predicted": predicted, "held_out": sources[row["source"]]["held_out"],
                     "error_pct": 100.0 * (predicted - row["value"]) / row["value"]})
    summary: dict[str, Any] = {}
    for held in (False, True):
        group = [r for r in rows if r["held_out"] == held]
        for metric in sorted({r["metric"] for r in group}):
            errors = [abs(r["error_pct"]) for r in group if r["metric"] == metric]
            summary[f"{'held_out' if held else 'fitted'}:{metric}"] = {
                "rows": len(errors), "median_abs_error_pct": statistics.median(errors), "worst_pct": max(errors)}
        all_errors = [abs(r["error_pct"]) for r in group]
        summary["held_out" if held else "fitted"] = {"rows": len(all_errors),
                                                     "median_abs_error_pct": statistics.median(all_errors)}
    return {"rows": rows, "summary": summary}


def main() -> None:
    result = compare_llm_serving()
    print(f"{'source':16} {'model':13} {'gpu':15} {'prec':5} {'B':>5} {'P':>5} {'O':>5} {'metric':21} "
          f"{'published':>10} {'predicted':>10} {'error':>7}")
    for r in result["rows"]:
        print(f"{r['source'] + ('*' if r['held_out'] else ''):16} {r['model']:13} {r['gpu']:15} {r['precision']:5} "
              f"{r['batch']:5d} {r['prompt']:5d} {r['output']:5d} {r['metric']:21} {r['value']:10.4g} "
              f"{r['predicted']:10.4g} {r['error_pct']:+6.1f}%")
    print("(* held out)")
    for key, s in result["summary"].items():
        extra = f", worst {s['worst_pct']:.1f}%" if "worst_pct" in s else ""
        print(f"{key:36} {s['rows']:3d} rows: median |error| {s['median_abs_error_pct']:.1f}%{extra}")


if __name__ == "__main__":
    main()

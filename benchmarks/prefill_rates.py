"""The published first tokens as rates: each long prompt's FLOP (the cost model's count) over its published time.

A first token of a long prompt is mostly compute-bound products, so its FLOP per second says how fast the source's
software ran the same kind of work on its GPU, whatever the model and batch. Put side by side per GPU and source,
the rates show how far sources on one kind of board disagree, the spread any prediction of their first tokens
has to live with, beside the rate the cost model predicts for the same rows.

    python benchmarks/prefill_rates.py        # writes benchmarks/results/prefill-rates.md

Rows: every first-token row (`ttft_s`, `prefill_tokens_per_s`) of benchmarks/published/llm-serving.yaml with at
least `MIN_PROMPT_TOKENS` prompt tokens in the batch; FLOP per GPU (divided by the row's tensor-parallel GPUs).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.published_kinds.llm_serving import predict_row, published_time_s  # noqa: E402
from benchmarks.published_kinds.record import source_blocks  # noqa: E402

MIN_PROMPT_TOKENS = 1024
"""Batch x prompt tokens from which a prefill's products are compute-bound on every profiled GPU (a Llama
product's FLOP per weight byte is its row count; the largest ridge point, an H200's in fp8, is about 400)."""
FIRST_TOKEN_METRICS = ("ttft_s", "prefill_tokens_per_s")


def rates() -> dict[tuple[str, str, str, str], list[tuple[int, float, float]]]:
    """(gpu, source, model, precision) -> [(prompt tokens in the batch, published FLOP/s, predicted FLOP/s)] per GPU."""
    dataset = yaml.safe_load((ROOT / "benchmarks" / "published" / "llm-serving.yaml").read_text())
    out: dict[tuple[str, str, str, str], list[tuple[int, float, float]]] = defaultdict(list)
    for block in source_blocks(dataset):
        for row in block.merged_rows():
            tokens = row["batch"] * row["prompt"]
            if row["metric"] not in FIRST_TOKEN_METRICS or tokens < MIN_PROMPT_TOKENS:
                continue
            predicted = predict_row(row)
            flops = predicted.prefill.flops / row.get("gpus", 1)
            out[(row["gpu"], block.id, row["model"], row["precision"])].append(
                (tokens, flops / published_time_s(row), flops / predicted.ttft_s))
    return out


def table() -> list[str]:
    lines = ["| GPU | source | model | precision | rows | prompt tokens | published TFLOP/s | predicted TFLOP/s |",
             "|---|---|---|---|---:|---|---:|---:|"]
    for (gpu, source, model, precision), rows in sorted(rates().items()):
        tokens = sorted(r[0] for r in rows)
        lines.append(f"| {gpu} | {source} | {model} | {precision} | {len(rows)} | {tokens[0]}-{tokens[-1]} | "
                     f"{statistics.median(r[1] for r in rows) / 1e12:.0f} | "
                     f"{statistics.median(r[2] for r in rows) / 1e12:.0f} |")
    return lines


def main() -> int:
    text = ["# Published first tokens as FLOP per second per GPU (`python benchmarks/prefill_rates.py`)", "",
            __doc__.split("\n\n")[1].replace("\n", " "), "",
            f"Medians per GPU, source, model and precision, over rows of at least {MIN_PROMPT_TOKENS} prompt tokens "
            "in the batch; FLOP from the cost model's count of the row's prefill.", "", *table(), ""]
    out = ROOT / "benchmarks" / "results" / "prefill-rates.md"
    out.write_text("\n".join(text))
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())

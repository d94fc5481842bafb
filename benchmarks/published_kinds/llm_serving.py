"""Comparer for `kind: llm-serving` (benchmarks/published/llm-serving.yaml): language models served on one GPU.

Each row states its figure as a rate or a latency (`metric`); the comparison is on the time it implies, in
seconds, as every comparer's: time per output token (decode_tokens_per_s; tpot_s, as a source prints the
seconds between tokens), the whole request
(tokens_per_s, output tokens over the request; tokens_per_s_per_gpu, the same per GPU of a tensor-parallel
group; request_s, the request's seconds as a harness such as vLLM's benchmark_latency.py prints them), time to
first token (prefill_tokens_per_s, ttft_s).
Predictions are `roofline.model.llm_step.predict_serving` with the shipped profiles, the row's model, precision
(weight-only int8/int4 computing in bf16; fp8 with its KV cache where the row says), batch, prompt and output
lengths and runtime, on the row's `gpus` tensor-parallel GPUs of the node profile holding its GPU, with the row's
`allreduce` (default NCCL's choice), `lm_head` layout (default split), transformers' `static_cache` length
where the run had one, the `decode_attention` kernel (default grouped; per-head for TensorRT-LLM v0.5-0.6's
masked MHA), the serving `engine`'s host loop between forwards (default none; `roofline.model.serving_engine`)
and, for transformers' eager generate, the `transformers` release the source names
(`roofline.workload.llm.transformers_release`; default the current one); whether the batch fits is shown, not
enforced (TensorRT-LLM pages its KV cache).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from benchmarks.published_kinds.agreement import agreement_section
from benchmarks.published_kinds.record import (
    HELD_OUT_PARTS,
    HELD_OUT_SETS,
    HELD_OUT_TOGETHER,
    Comparison,
    DatasetError,
    SourceBlock,
    source_blocks,
)
from roofline.advise.track_record import decode_context, serving_cell
from roofline.errors import RooflineError
from roofline.hardware import find_profile
from roofline.model.llm_precision import activation_for, serving_precision
from roofline.model.llm_step import ServingPrediction, predict_serving, tensor_parallel_group
from roofline.workload.llm.builtins import get_config
from roofline.workload.llm.transformers_release import transformers_release

RESULT_STEM = "published-llm-serving"
TITLE = "LLM serving (one GPU and tensor-parallel): predicted vs published"
METRIC = "time per output token, per request or to the first token"
GROUP_KEYS = ("model", "gpu", "precision", "metric", "source", "runtime", "weights")
TARGET_GROUPS = ("metric",)
TARGETS_OF = "issue 18"
METRIC_TARGETS = {"decode_tokens_per_s": 0.15, "tpot_s": 0.15, "tokens_per_s": 0.15, "tokens_per_s_per_gpu": 0.15,
                  "request_s": 0.15, "ttft_s": 0.25, "prefill_tokens_per_s": 0.25}
"""Issue 18 on the published GPU record: median |error| <= 15 % on decode tokens/s and <= 25 % on time to first
token; seconds per output token (tpot_s) are the decode rate's time. A request's output tokens/s (tokens_per_s)
is a rate of generated tokens and takes the decode target, as does the request's own time (request_s); a prefill
rate is the time to the first token and takes TTFT's."""
METRICS = tuple(METRIC_TARGETS)
"""The figures a row may state, each with its target."""
HELD_OUT_RATIO = 1.3
"""Issue 18: the held-out part's median |error| within 1.3x the fitted part's."""


def check_targets(parts: dict[str, list[Comparison]]) -> list[dict[str, Any]]:
    """Issue 18's targets: per metric over all rows, and the held-out part against the fitted part."""
    checks = []
    for metric, limit in METRIC_TARGETS.items():
        errors = [abs(c.error) for c in parts["all"] if c.groups["metric"] == metric]
        if errors:
            value = statistics.median(errors)
            checks.append({"target": f"{metric} ({len(errors)} rows): median abs error <= {limit:.0%}",
                           "unit": "abs error", "value": value, "met": value <= limit})
    fitted = [abs(c.error) for c in parts["fitted"]]
    for part in (*HELD_OUT_PARTS, HELD_OUT_TOGETHER):
        label = part.replace("_", "-")
        held = [abs(c.error) for c in parts.get(part, [])]
        if fitted and held:
            ratio = statistics.median(held) / statistics.median(fitted) if statistics.median(fitted) else math.inf
            checks.append({"target": f"{label} median <= {HELD_OUT_RATIO}x fitted median", "unit": "ratio",
                           "value": ratio, "met": ratio <= HELD_OUT_RATIO})
    return checks


FIRST_TOKEN_METRICS = ("ttft_s", "prefill_tokens_per_s")
"""The metrics whose time is the first token's (`roofline.advise.track_record.SERVING`'s phase)."""


def published_time_s(row: dict[str, Any]) -> float:
    """The time the row's figure implies: batch / rate for a token rate per step, B x O / rate for a request."""
    metric, value, batch = row["metric"], float(row["value"]), row["batch"]
    if metric == "decode_tokens_per_s":
        return batch / value
    if metric == "tokens_per_s":
        return batch * row["output"] / value
    if metric == "tokens_per_s_per_gpu":
        return batch * row["output"] / (value * row.get("gpus", 1))
    if metric == "prefill_tokens_per_s":
        return batch * row["prompt"] / value
    return value


def predicted_time_s(row: dict[str, Any], p: ServingPrediction) -> float:
    return {"decode_tokens_per_s": p.tpot_s, "tpot_s": p.tpot_s, "tokens_per_s": p.request_s,
            "tokens_per_s_per_gpu": p.request_s, "request_s": p.request_s, "prefill_tokens_per_s": p.ttft_s,
            "ttft_s": p.ttft_s}[row["metric"]]


def predict_row(row: dict[str, Any]) -> ServingPrediction:
    if row.get("metric") not in METRICS:
        raise DatasetError(f"metric {row.get('metric')!r}: expected one of {', '.join(METRICS)}")
    profile = find_profile(row["gpu"])
    activation = "fp16" if row["precision"] == "fp16" else activation_for(profile)
    prec = serving_precision(row["precision"], row.get("kv"), row.get("group_size", 128), activation,
                             row.get("expert_precision"), row.get("quant_kernel", "fused"),
                             row.get("accumulate", "fp32"), row.get("head_weights"), row.get("engine", "none"))
    tp = tensor_parallel_group(profile, row.get("gpus", 1), algorithm=row.get("allreduce", "auto"),
                               lm_head=row.get("lm_head", "split"))
    cfg = get_config(row["model"])
    release = transformers_release(row.get("transformers"), cfg)
    return predict_serving(cfg, profile, prec, row["batch"], row["prompt"], row["output"], row["runtime"], tp,
                           row.get("static_cache"), row.get("decode_attention", "grouped"), release,
                           row.get("engine", "none"))


def compare(dataset: dict[str, Any]) -> list[Comparison]:
    out = []
    for block in source_blocks(dataset):
        for row in block.merged_rows():
            try:
                p = predict_row(row)
            except (RooflineError, KeyError) as exc:
                raise DatasetError(f"{block.id} row {row.get('id', '?')}: {exc}") from None
            settings = (f"{row['precision']}{'/' + row['kv'] if row.get('kv') else ''}"
                        f"{' (experts ' + row['expert_precision'] + ')' if row.get('expert_precision') else ''}"
                        f" B={row['batch']} "
                        f"P={row['prompt']} O={row['output']} {row['runtime']}"
                        f"{' TP=' + str(row['gpus']) if row.get('gpus', 1) > 1 else ''}"
                        f"{' static cache ' + str(row['static_cache']) if row.get('static_cache') else ''}"
                        f"{' ' + row['decode_attention'] + ' decode attention' if row.get('decode_attention') else ''}"
                        f"{' transformers ' + str(row['transformers']) if row.get('transformers') else ''}"
                        f"{' ' + row['quant_kernel'] + ' kernel' if row.get('quant_kernel') else ''}"
                        f"{' lm_head ' + p.precision.head_weights if p.precision.quantised else ''}"
                        f"{' fp16 accumulation' if row.get('accumulate') == 'fp16' else ''}"
                        f"{' engine ' + row['engine'] if row.get('engine') else ''}")
            cell = serving_cell(row["runtime"], row["batch"], row.get("gpus", 1), row["precision"])
            batches = "batch 1" if cell["batch"] == "1" else "batched"
            out.append(Comparison(
                row_id=str(row["id"]), source_id=block.id, holdout=block.holdout, later_set=block.held_out_set,
                published=published_time_s(row),
                predicted=predicted_time_s(row, p), settings=settings,
                groups={"model": row["model"], "gpu": row["gpu"], "precision": row["precision"],
                        "metric": row["metric"], "source": block.id,
                        "runtime": f"{cell['runtime']}, {batches}", "weights": cell["weights"]},
                extra={"figure": f"{row['value']:g} {row['metric']}", "fits": p.fits,
                       "phase": "first_token" if row["metric"] in FIRST_TOKEN_METRICS else "output_tokens",
                       "context": decode_context(row["prompt"], row["output"]), **cell}))
    return out


EXTRA_COLUMNS = [
    ("published figure", lambda c: c.extra["figure"]),
    ("fits", lambda c: "yes" if c.extra["fits"] else "no"),
]


def legend(dataset: dict[str, Any]) -> list[str]:
    blocks = source_blocks(dataset)
    parts = [("held out", [b for b in blocks if b.holdout and not b.held_out_set])]
    parts += [(f"{name} held-out", [b for b in blocks if b.held_out_set == name]) for name in HELD_OUT_SETS]
    held = "; ".join(f"{label}: {', '.join(b.id for b in members)} ({sum(len(b.rows) for b in members)} rows)"
                     for label, members in parts if members)
    lines = [f"Dataset: benchmarks/published/llm-serving.yaml, {sum(len(b.rows) for b in blocks)} rows from "
             f"{len(blocks)} source blocks; {held}.",
             f"Held-out rule: {dataset.get('holdout_rule', 'not stated')}", "", "Sources:"]
    return lines + [f"- `{b.id}`{_part_label(b)}: {b.citation or b.script} ({b.framework})" for b in blocks]


def extra_sections(dataset: dict[str, Any], comparisons: list[Comparison]) -> list[str]:
    return agreement_section(comparisons, lambda c: (c.groups["model"], c.groups["gpu"], c.groups["metric"],
                                                     c.settings))


def _part_label(block: SourceBlock) -> str:
    """' (fresh held-out)', ' (held out)' or '' after a source's id in the legend."""
    if block.held_out_set:
        return f" ({block.held_out_set} held-out)"
    return " (held out)" if block.holdout else ""

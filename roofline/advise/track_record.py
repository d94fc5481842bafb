"""How far this tool's GPU predictions landed from published runs like the user's: the held-out rows of the
published record (benchmarks/results/published-gpu.md for training and inference steps, published-llm-serving.md
for served language models), shipped as `gpu_track_record.json` and `llm_track_record.json`, matched to a
prediction by the keys each record kind names.

Why: a prediction is the mechanisms' answer, and the record shows where the mechanisms are known to miss. Apex-O2
and `.half()` BERT steps ran 1.1-1.3x the predicted time in every part of the record; batch-1 inference on the
record's 2017-2020 hosts ran about 2x; TensorRT-LLM's first tokens took about 1.3x; most other kinds of run centre
within a few percent. A user choosing hardware should see that beside the number. The prediction itself is never
corrected by these figures: nothing is fitted, the record's spread is reported next to it.

The files are written by `python benchmarks/track_record.py` from the committed comparisons and checked against
them by tests/test_track_record.py."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from roofline.errors import UnknownName
from roofline.model.llm_precision import DEQUANT_FLOPS_PER_WEIGHT
from roofline.model.llm_step import ServingPrediction
from roofline.model.step import StepPrediction
from roofline.units import format_si
from roofline.workload.request import is_user_module
from roofline.workload.zoo import get_model

MIN_ROWS = 5
"""Fewest held-out rows a cell needs before its spread is quoted; fewer make a median of noise."""
MODE_WORDS = {"train": "training", "inference": "inference"}
"""A step's mode in words."""
PRECISION_CLASS_LABEL = {"32-bit": "fp32/TF32", "autocast": "AMP under torch.autocast",
                         "16-bit model": "the model itself in 16-bit (apex O2, .half())"}


def _step_label(key: str, value: str | None) -> str:
    """A step cell's key in words; a key the cell was widened over (too few rows of the user's kind) says so."""
    if key == "family":
        return f"{value} models" if value else "any model family"
    if key == "mode":
        return {**MODE_WORDS, None: "training or inference"}[value]
    if key == "precision_class":
        return PRECISION_CLASS_LABEL[value] if value else "any precision"
    return f"{value}-bound"


def _serving_label(key: str, value: str | None) -> str:
    """A serving cell's key in words (only tensor parallelism and the weights' kind are ever widened over)."""
    if key == "phase":
        return {"first_token": "time to first token", "output_tokens": "time per output token or per request"}[
            str(value)]
    if key == "runtime":
        return f"{value} runtime"
    if key == "batch":
        return "batch 1" if value == "1" else "batch above 1"
    if key == "weights":
        return {"weight_only": "int8/int4 weight-only weights", "float": "16-bit or fp8 weights",
                None: "any weights"}[value]
    return {"tensor_parallel": "tensor-parallel", "1": "one GPU", None: "one GPU or tensor-parallel"}[value]


@dataclass(frozen=True)
class RecordKind:
    """One published record as shipped: its file, the keys a row is matched on (most specific cell first, then
    the wider ones tried in order) and how a key reads."""

    file: str
    report: str
    """The comparison the rows come from, named in every sentence."""
    keys: tuple[str, ...]
    fallback: tuple[tuple[str, ...], ...]
    label: Callable[[str, str | None], str]


STEPS = RecordKind("gpu_track_record.json", "benchmarks/results/published-gpu.md",
                   ("family", "mode", "precision_class", "bound"),
                   (("family", "mode", "precision_class", "bound"), ("mode", "precision_class", "bound"),
                    ("precision_class", "bound"), ("bound",)), _step_label)
"""Training and inference steps: the model family is dropped first, then the mode, then the precision class; the
bound stays, because host-bound rows miss by the host's speed, which no GPU figure describes."""
SERVING = RecordKind("llm_track_record.json", "benchmarks/results/published-llm-serving.md",
                     ("phase", "runtime", "batch", "weights", "gpus"),
                     (("phase", "runtime", "batch", "weights", "gpus"), ("phase", "runtime", "batch", "weights"),
                      ("phase", "runtime", "batch", "gpus"), ("phase", "runtime", "batch")), _serving_label)
"""Served language models: tensor parallelism is dropped first, then the weights' kind (with the GPU count kept
again), then both. The runtime stays (an eager Python loop misses by its host, a compiled engine by its kernels),
and so do the phase and whether one sequence or many run (a first token at batch 1 carries the request's fixed
costs, which a batch of long prompts buries). The weights' kind stays while it can: a weight-only model's time
per token is its engine's dequantising kernel's, and the record's weight-only runs at batch 1 took longer over
their predictions than its 16-bit and fp8 runs did (benchmarks/results/track-record.md), which a cell of both
would hide behind the float runs' numbers."""


def precision_class(precision: str, model_in_16_bit: bool = False) -> str | None:
    """The record's precision class of a run: fp32 and TF32 are one (the same fp32 tensors; TF32 is a math mode);
    AMP under autocast keeps fp32 weights and casts per op, unlike a model held in 16-bit itself (apex's O2,
    `model.half()`, a `--precision fp16` step). None for precisions the record has no run of (fp8, int8)."""
    if precision in ("fp32", "tf32"):
        return "32-bit"
    if precision in ("amp", "amp-bf16"):
        return "16-bit model" if model_in_16_bit else "autocast"
    if precision in ("fp16", "bf16"):
        return "16-bit model"
    return None


@dataclass(frozen=True)
class TrackRecord:
    """The held-out published rows of one cell and how far their predictions were from them (error = predicted /
    published - 1, so the published time is the predicted one over 1 + error)."""

    kind: RecordKind
    cell: dict[str, str]
    row_ids: tuple[str, ...]
    errors: tuple[float, ...]

    @property
    def median_error(self) -> float:
        return statistics.median(self.errors)

    @property
    def middle_half(self) -> tuple[float, float]:
        return quartiles(self.errors)

    def as_dict(self, predicted_s: float, quantity: str = "step") -> dict[str, Any]:
        """The cell, its rows and spread, and what the predicted `quantity` would take by that record, with a
        sentence."""
        q1, q3 = self.middle_half
        ratio = time_ratio(self.median_error)
        low, high = time_ratio(q3), time_ratio(q1)
        where = ", ".join(self.kind.label(k, self.cell.get(k)) for k in self.kind.keys)
        implied = {"median": predicted_s * ratio, "low": predicted_s * low, "high": predicted_s * high}
        text = (f"Track record: {len(self.errors)} held-out published runs like this one ({where}) took "
                f"{ratio:.2f}x the predicted time at the median (middle half {low:.2f}-{high:.2f}x): by that "
                f"record this {quantity} takes {format_si(implied['median'], 's')} "
                f"({format_si(implied['low'], 's')} to {format_si(implied['high'], 's')}). The prediction is not "
                f"corrected by it ({self.kind.report}).")
        return {"cell": dict(self.cell), "rows": len(self.errors), "row_ids": list(self.row_ids),
                "median_error": self.median_error, "middle_half_error": [q1, q3],
                "published_over_predicted": {"median": ratio, "low": low, "high": high},
                "implied_time_s": implied,
                "text": text}


def time_ratio(error: float) -> float:
    """Published over predicted time of a row whose error is predicted / published - 1: what a user's run took by
    the record, as a multiple of the prediction."""
    return 1 / (1 + error)


def quartiles(errors: tuple[float, ...] | list[float]) -> tuple[float, float]:
    """The errors' lower and upper quartiles: the middle half of the rows."""
    q1, _, q3 = statistics.quantiles(errors, n=4, method="inclusive")
    return q1, q3


@lru_cache(maxsize=2)
def _record(kind: RecordKind) -> dict[str, Any]:
    return json.loads(resources.files("roofline.advise").joinpath(kind.file).read_text())


def reload() -> None:
    """Read the shipped files again (after `benchmarks/track_record.py` rewrote them in this process)."""
    _record.cache_clear()


def record_rows(kind: RecordKind = STEPS) -> tuple[dict[str, Any], ...]:
    """The shipped held-out rows of a record: row_id, source_id, device, the kind's keys and error."""
    return tuple(_record(kind)["rows"])


def find_record(cell: dict[str, str | None], kind: RecordKind = STEPS) -> TrackRecord | None:
    """The most specific cell of the kind's fallback with at least MIN_ROWS held-out rows matching `cell`, or None
    when no cell has that many. A cell that needs a key `cell` has no value for (a traced module has no zoo
    family) is passed over."""
    for keys in kind.fallback:
        if any(cell.get(k) is None for k in keys):
            continue
        rows = [r for r in record_rows(kind) if all(r[k] == cell[k] for k in keys)]
        if len(rows) >= MIN_ROWS:
            return TrackRecord(kind, {k: str(cell[k]) for k in keys}, tuple(r["row_id"] for r in rows),
                               tuple(r["error"] for r in rows))
    return None


def host_bound_spread() -> tuple[int, float, float, float]:
    """(rows, 10th percentile, median, 90th percentile) of published over predicted time for the record's held-out
    steps that the prediction has host-bound: how far a machine's CPU and framework release move a step whose pace
    the host sets, beside the runtime profile's one measured host (slower servers, faster desktops alike)."""
    ratios = sorted(time_ratio(r["error"]) for r in record_rows(STEPS) if r["bound"] == "host")
    deciles = statistics.quantiles(ratios, n=10, method="inclusive")
    return len(ratios), deciles[0], statistics.median(ratios), deciles[-1]


def device_record(device: str, kind: RecordKind = STEPS) -> dict[str, Any]:
    """How much of the record is this GPU's: its held-out rows of any kind and their spread, or a sentence saying
    the prediction rests on the profile and the mechanisms alone. A hardware chooser weighs a GPU the record has
    seen many runs of differently from one it has seen none of."""
    rows = [r for r in record_rows(kind) if r["device"] == device]
    fitted = _record(kind)["fitted_rows_by_device"].get(device, 0)
    seen = f" (and {fitted} fitted, which the mechanisms were chosen on)" if fitted else ""
    out: dict[str, Any] = {"device": device, "rows": len(rows), "fitted_rows": fitted,
                           "row_ids": [r["row_id"] for r in rows]}
    if not rows:
        return out | {"text": f"The record holds no held-out published run on {device}{seen}: this prediction "
                              "rests on the profile's sourced figures and the mechanisms carried from other GPUs."}
    errors = [r["error"] for r in rows]
    median = statistics.median(errors)
    spread = ""
    if len(rows) >= MIN_ROWS:
        q1, q3 = quartiles(errors)
        out["middle_half_error"] = [q1, q3]
        spread = f" (middle half {time_ratio(q3):.2f}-{time_ratio(q1):.2f}x)"
    out |= {"median_error": median,
            "text": f"On {device} the record holds {len(rows)} held-out published run{'s' if len(rows) > 1 else ''}"
                    f" of any kind{seen}, which took {time_ratio(median):.2f}x the predicted time at the median"
                    f"{spread}."}
    return out


def step_bound(pred: StepPrediction) -> str:
    """'host' where the host's dispatch outlasts the device's work, else 'device': the same rule for the shipped
    rows (benchmarks/published_kinds/gpu_steps.py) and the step they are quoted beside."""
    return "host" if pred.host_s > pred.device_s else "device"


def serving_cell(runtime: str, batch: int, gpus: int, precision: str) -> dict[str, str]:
    """A served run's runtime, batch, weights and GPU keys, for the shipped rows
    (benchmarks/published_kinds/llm_serving.py) and the prediction they are quoted beside alike."""
    return {"runtime": runtime, "batch": "1" if batch == 1 else "batched", "weights": weights_class(precision),
            "gpus": "tensor_parallel" if gpus > 1 else "1"}


def step_record(pred: StepPrediction, family: str | None, autocast: bool) -> TrackRecord | None:
    """The record for a predicted step's kind (None for precisions the record has no run of)."""
    klass = precision_class(pred.precision, model_in_16_bit=not autocast)
    if klass is None:
        return None
    return find_record({"family": family, "mode": "train" if pred.train else "inference", "precision_class": klass,
                        "bound": step_bound(pred)})


def step_quotes(pred: StepPrediction, model: str | None, autocast: bool) -> tuple[dict[str, Any] | None,
                                                                                   dict[str, Any] | None]:
    """(the record for the step's kind, or None; the GPU's share of the record) quoted beside a predicted step;
    (None, None) on a CPU, where the live accuracy grid speaks instead."""
    if not pred.ceilings.is_gpu:
        return None, None
    record = step_record(pred, model_family(model), autocast)
    return (record.as_dict(pred.step_time_s) if record else None), device_record(pred.device)


def weights_class(precision: str) -> str:
    """'weight_only' for int8/int4 weights served with 16-bit activations (the precisions `llm_precision`
    dequantises), else 'float' (16- and 8-bit floats)."""
    return "weight_only" if precision in DEQUANT_FLOPS_PER_WEIGHT else "float"


def weight_only_quote(pred: ServingPrediction) -> dict[str, Any] | None:
    """The held-out runs of weight-only weights at batch above 1 on the prediction's runtime, both phases
    together, or None (a float precision, batch 1, a CPU, or fewer than MIN_ROWS such runs). Why apart from the
    phase cells: how fast a weight-only product of many rows runs is the engine's kernel, not the GPU's (TensorRT-
    LLM v0.15's int4 AWQ was published slower than its own bf16 at batch 8 and 64), and those few rows would
    vanish into the phase cells' medians, which float runs fill."""
    if not pred.ceilings.is_gpu or pred.batch == 1 or not pred.precision.weight_only:
        return None
    cell = {"runtime": pred.runtime, "batch": "batched", "weights": "weight_only"}
    rows = [r for r in record_rows(SERVING) if all(r.get(k) == v for k, v in cell.items())]
    if len(rows) < MIN_ROWS:
        return None
    ratios, median, sources = _ratios(rows)
    text = (f"Track record: {len(rows)} held-out published runs with weight-only int8/int4 weights at batch above "
            f"1 ({pred.runtime} runtime; {sources}) took {median:.2f}x the predicted time at the median "
            f"({ratios[0]:.2f}-{ratios[-1]:.2f}x): this prediction prices {pred.precision.name} products of many rows "
            f"with the '{pred.precision.quant_kernel}' kernel, and those engines' kernels ran them slower; how fast "
            "yours runs a prefill's products is its kernel's, so time it at your batch before choosing "
            f"{pred.precision.name} over a 16-bit or fp8 model. The prediction is not corrected by it "
            f"({SERVING.report}).")
    return _runs_quote(cell, rows, ratios, median, text)


def _ratios(rows: list[dict[str, Any]]) -> tuple[list[float], float, str]:
    """A quote's rows as published-over-predicted ratios (sorted), their median, and their sources, comma-joined."""
    ratios = sorted(time_ratio(r["error"]) for r in rows)
    return ratios, statistics.median(ratios), ", ".join(sorted({r["source_id"] for r in rows}))


def _runs_quote(cell: dict[str, str], rows: list[dict[str, Any]], ratios: list[float], median: float,
                text: str) -> dict[str, Any]:
    """The dictionary every quote of a group of held-out runs (`weight_only_quote`, `long_context_quote`) returns."""
    return {"cell": cell, "rows": len(rows), "row_ids": [r["row_id"] for r in rows],
            "published_over_predicted": {"median": median, "low": ratios[0], "high": ratios[-1]}, "text": text}


LONG_CONTEXT_TOKENS = 16384
"""Mean decode context (`decode_context`) from which `long_context_quote` speaks. The record's held-out eager decode
rows took 1.03x the predicted time per output token at the median below 8192 tokens (141 rows) and 1.91x from 16384
(15 rows from three sources: transformers' generate of Qwen, Qwen1.5 and GLM-4, benchmarks/LOG.md, thirty-fifth
session). The band was chosen after looking at those rows, as a table's grouping is; it groups the record for the
quote and corrects no prediction."""


def decode_context(prompt: int, output: int) -> int:
    """The mean context a request's decode steps attend over: the prompt and half the generated tokens. The shipped
    rows (benchmarks/published_kinds/llm_serving.py) and the prediction they are quoted beside use this one rule."""
    return prompt + output // 2


def long_context_quote(pred: ServingPrediction) -> dict[str, Any] | None:
    """The held-out runs on the prediction's runtime that decoded at a mean context of LONG_CONTEXT_TOKENS or more,
    or None (a shorter request, a CPU, or fewer than MIN_ROWS such runs). Why apart from the phase cells: those few
    rows vanish into the cells' medians, which short requests fill, while what a long context costs an eager loop
    (its attention copies the whole cache every step: transformers' torch.cat, and a remote-code model's expansion
    of its grouped KV heads to every query head) grows with the context, so a long request should see them."""
    context = decode_context(pred.prompt_len, pred.output_len)
    if not pred.ceilings.is_gpu or context < LONG_CONTEXT_TOKENS:
        return None
    rows = [r for r in record_rows(SERVING)
            if r["phase"] == "output_tokens" and r["runtime"] == pred.runtime and r["context"] >= LONG_CONTEXT_TOKENS]
    if len(rows) < MIN_ROWS:
        return None
    ratios, median, sources = _ratios(rows)
    batches = {r["batch"] for r in rows}
    at = "batch 1" if batches == {"1"} else "batch above 1" if batches == {"batched"} else "batch 1 and above"
    text = (f"Track record: {len(rows)} held-out published runs decoding at a mean context of "
            f"{LONG_CONTEXT_TOKENS:,} tokens or more on the {pred.runtime} runtime, at {at} "
            f"({sources}), took "
            f"{median:.2f}x the predicted time per output token at the median ({ratios[0]:.2f}-{ratios[-1]:.2f}x); "
            f"this request's decode attends over {context:,} tokens on average. The prediction is not corrected by "
            f"it ({SERVING.report}).")
    cell = {"phase": "output_tokens", "runtime": pred.runtime, "context": f">= {LONG_CONTEXT_TOKENS}"}
    return _runs_quote(cell, rows, ratios, median, text)


def serving_quotes(pred: ServingPrediction) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the records for a served model's first token and output tokens by phase, or None where the record has no
    cell of that runtime and batch, for weight-only weights at batch above 1 `weight_only_quote`, and for a long
    request `long_context_quote`; the GPU's share of the serving record), as `step_quotes`."""
    if not pred.ceilings.is_gpu:
        return None, None
    cell = serving_cell(pred.runtime, pred.batch, pred.gpus, pred.precision.name)
    records = {}
    for phase, quantity, seconds in (("first_token", "first token", pred.ttft_s),
                                     ("output_tokens", "output token", pred.tpot_s)):
        record = find_record({"phase": phase, **cell}, SERVING)
        if record:
            records[phase] = record.as_dict(seconds, quantity)
    if (weight_only := weight_only_quote(pred)) is not None:
        records["weight_only"] = weight_only
    if (long_context := long_context_quote(pred)) is not None:
        records["long_context"] = long_context
    return records or None, device_record(pred.device, SERVING)


def track_record_reasons(pred: StepPrediction, model: str | None, autocast: bool) -> list[dict[str, Any]]:
    """The advice's reasons of kinds `track_record` (the record's spread for the recommended step's kind) and
    `device_record` (how much of the record is this GPU's); none on a CPU."""
    record, device = step_quotes(pred, model, autocast)
    return ([{"kind": "track_record", **record}] if record else []) + (
        [{"kind": "device_record", **device}] if device else [])


def model_family(model: str | None) -> str | None:
    """The zoo family of a model name; None for a traced module (`module:attr`, or an instance's class name) or
    no model (an `--op`): the record's cells then start without the family."""
    if model is None or is_user_module(model):
        return None
    try:
        return get_model(model).family
    except UnknownName:
        return None

"""How far this tool's GPU step predictions landed from published runs like the user's: the held-out rows of the
published record (benchmarks/results/published-gpu.md), shipped as `gpu_track_record.json`, matched to a step by
its model family, mode, precision class and whether the host or the device bounds it.

Why: a prediction is the mechanisms' answer, and the record shows where the mechanisms are known to miss. Apex-O2
and `.half()` BERT steps ran 1.1-1.3x the predicted time in every part of the record; batch-1 inference on the
record's 2017-2020 hosts ran about 2x; most other kinds of run centre within a few percent. A user choosing
hardware should see that beside the number. The prediction itself is never corrected by these figures: nothing
is fitted, the record's spread is reported next to it.

The file is written by `python benchmarks/track_record.py` from the committed comparison and checked against it by
tests/test_track_record.py."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from roofline.errors import UnknownName
from roofline.model.step import StepPrediction
from roofline.workload.request import is_user_module
from roofline.workload.zoo import get_model

RECORD_FILE = "gpu_track_record.json"
KEYS = ("family", "mode", "precision_class", "bound")
"""What a row of the record is matched on, most specific first."""
FALLBACK = (KEYS, KEYS[1:], KEYS[2:], KEYS[3:])
"""The cells tried in order: the model family is dropped first, then the mode, then the precision class; the
bound stays, because host-bound rows miss by the host's speed, which no GPU figure describes."""
MIN_ROWS = 5
"""Fewest held-out rows a cell needs before its spread is quoted; fewer make a median of noise."""
PRECISION_CLASS_LABEL = {"32-bit": "fp32/TF32", "autocast": "AMP under torch.autocast",
                         "16-bit model": "the model itself in 16-bit (apex O2, .half())"}


def precision_class(precision: str, model_in_16_bit: bool = False) -> str | None:
    """The record's precision class of a run: fp32 and TF32 are one (the same fp32 tensors; TF32 is a math mode);
    AMP under autocast keeps fp32 weights and casts per op, unlike a model held in 16-bit itself (apex's O2,
    `model.half()`, a `--precision fp16` step). None for precisions the record has no run of (fp8, int8)."""
    if precision in ("fp32", "tf32"):
        return "32-bit"
    if precision == "amp":
        return "16-bit model" if model_in_16_bit else "autocast"
    if precision in ("fp16", "bf16"):
        return "16-bit model"
    return None


@dataclass(frozen=True)
class TrackRecord:
    """The held-out published rows of one cell and how far their predictions were from them (error = predicted /
    published - 1, so the published time is the predicted one over 1 + error)."""

    cell: dict[str, str]
    row_ids: tuple[str, ...]
    errors: tuple[float, ...]

    @property
    def median_error(self) -> float:
        return statistics.median(self.errors)

    @property
    def middle_half(self) -> tuple[float, float]:
        """The errors' lower and upper quartiles."""
        q1, _, q3 = statistics.quantiles(self.errors, n=4, method="inclusive")
        return q1, q3

    def as_dict(self, predicted_s: float) -> dict[str, Any]:
        """The cell, its rows and spread, and what the predicted step would take by that record, with a sentence."""
        q1, q3 = self.middle_half
        ratio = 1 / (1 + self.median_error)
        low, high = 1 / (1 + q3), 1 / (1 + q1)
        where = ", ".join(_describe(k, self.cell.get(k)) for k in KEYS)
        text = (f"Track record: {len(self.errors)} held-out published runs like this one ({where}) took "
                f"{ratio:.2f}x the predicted time at the median (middle half {low:.2f}-{high:.2f}x): by that "
                f"record this step takes {predicted_s * ratio * 1e3:.3g} ms ({predicted_s * low * 1e3:.3g}-"
                f"{predicted_s * high * 1e3:.3g} ms). The prediction is not corrected by it "
                "(benchmarks/results/published-gpu.md).")
        return {"cell": dict(self.cell), "rows": len(self.errors), "row_ids": list(self.row_ids),
                "median_error": self.median_error, "middle_half_error": [q1, q3],
                "published_over_predicted": {"median": ratio, "low": low, "high": high},
                "implied_step_time_s": {"median": predicted_s * ratio, "low": predicted_s * low,
                                        "high": predicted_s * high},
                "text": text}


def _describe(key: str, value: str | None) -> str:
    """A cell's key in words; a key the cell was widened over (too few rows of the user's kind) says so."""
    if key == "family":
        return f"{value} models" if value else "any model family"
    if key == "mode":
        return {"train": "training", "inference": "inference", None: "training or inference"}[value]
    if key == "precision_class":
        return PRECISION_CLASS_LABEL[value] if value else "any precision"
    return f"{value}-bound"


@lru_cache(maxsize=1)
def record_rows() -> tuple[dict[str, Any], ...]:
    """The shipped held-out rows: row_id, source_id, the four KEYS and error."""
    text = resources.files("roofline.advise").joinpath(RECORD_FILE).read_text()
    return tuple(json.loads(text)["rows"])


def find_record(cell: dict[str, str | None]) -> TrackRecord | None:
    """The most specific cell of FALLBACK with at least MIN_ROWS held-out rows matching `cell`, or None when no
    cell has that many. A cell that needs a key `cell` has no value for (a traced module has no zoo family) is
    passed over."""
    for keys in FALLBACK:
        if any(cell.get(k) is None for k in keys):
            continue
        rows = [r for r in record_rows() if all(r[k] == cell[k] for k in keys)]
        if len(rows) >= MIN_ROWS:
            return TrackRecord({k: str(cell[k]) for k in keys}, tuple(r["row_id"] for r in rows),
                               tuple(r["error"] for r in rows))
    return None


def step_record(pred: StepPrediction, family: str | None, autocast: bool) -> TrackRecord | None:
    """The record for a predicted GPU step (None on a CPU, where the live accuracy grid speaks instead, and for
    precisions the record has no run of)."""
    if not pred.ceilings.is_gpu:
        return None
    klass = precision_class(pred.precision, model_in_16_bit=not autocast)
    if klass is None:
        return None
    return find_record({"family": family, "mode": "train" if pred.train else "inference", "precision_class": klass,
                        "bound": "host" if pred.host_s > pred.device_s else "device"})


def model_family(model: str | None) -> str | None:
    """The zoo family of a model name; None for a traced module (`module:attr`, or an instance's class name) or
    no model (an `--op`): the record's cells then start without the family."""
    if model is None or is_user_module(model):
        return None
    try:
        return get_model(model).family
    except UnknownName:
        return None


def track_record_reason(pred: StepPrediction, model: str | None, autocast: bool) -> dict[str, Any] | None:
    """The advice's reason of kind `track_record`: the record's spread for the recommended step, or None."""
    record = step_record(pred, model_family(model), autocast)
    return {"kind": "track_record", **record.as_dict(pred.step_time_s)} if record else None

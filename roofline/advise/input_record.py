"""How far the record's held-out published steps landed, by the way each step's input reached the GPU (`--data`).

Why: the steps record splits cleanly by input path (benchmarks/results/track-record.md, "By input path"). Runs
whose inputs were made on the GPU, or copied by a loader prefetching on a side stream, centre on the prediction;
runs fed by a DataLoader of pageable host tensors, the copy inside the timed step, took about 1.3x it, where the
model prices the copy itself and none of the loader's own work around it (collation, the worker processes beside
the thread that issues the kernels). The same benchmark loop on the same board ran 1.29x slower at the median fed
that way than with inputs made on the GPU (benchmarks/LOG.md, twenty-ninth session). `predict`'s default
placement is that pageable copy, the plain `for x, y in loader: x.cuda()` loop, so its users should see the record
by input path beside the number, and what the runs nearer the prediction did differently. The prediction is never
corrected by it."""

from __future__ import annotations

import statistics
from typing import Any

from roofline.advise.track_record import MIN_ROWS, MODE_WORDS, STEPS, quartiles, record_rows, time_ratio
from roofline.model.step import StepPrediction
from roofline.units import format_si

PATH_WORDS = {"pageable": "pageable host memory, copied in the step",
              "pinned": "pinned host memory, copied in the step",
              "prefetched": "a loader copying ahead on a side stream", "device": "tensors made on the GPU"}
"""What each `--data` placement (`roofline.model.data_placement.DATA_PLACEMENTS`) means for where an input came
from, in the sentence's words."""


def errors_by_path(mode: str | None, family: str | None = None) -> dict[str, list[float]]:
    """The shipped held-out steps' errors by input placement, for one mode and model family (None: any)."""
    out: dict[str, list[float]] = {}
    for r in record_rows(STEPS):
        if (mode is None or r["mode"] == mode) and (family is None or r["family"] == family):
            out.setdefault(r["data"], []).append(r["error"])
    return out


def _ratio(errors: list[float]) -> float:
    """Published over predicted time at the errors' median."""
    return time_ratio(statistics.median(errors))


def input_quote(pred: StepPrediction, data: str, family: str | None = None) -> dict[str, Any] | None:
    """The held-out runs whose input reached the GPU as `data` says, of the step's model family and mode where
    the record has MIN_ROWS of them, else of its mode, else of any (an image batch and a batch of token ids cost a
    loader differently), their spread, and the other paths' medians, with a sentence; None on a CPU (no copy) or
    where the record has too few runs fed that way."""
    if not pred.ceilings.is_gpu:
        return None
    step_mode = "train" if pred.train else "inference"
    for mode, fam in ((step_mode, family), (step_mode, None), (None, None)):
        paths = errors_by_path(mode, fam)
        if len(paths.get(data, [])) >= MIN_ROWS:
            break
    else:
        return None
    errors = paths[data]
    q1, q3 = quartiles(errors)
    ratio, low, high = _ratio(errors), time_ratio(q3), time_ratio(q1)
    others = {p: {"rows": len(e), "published_over_predicted": _ratio(e)}
              for p, e in paths.items() if p != data and len(e) >= MIN_ROWS}
    kind = f"{fam} {MODE_WORDS[mode]} " if fam and mode else f"{MODE_WORDS[mode]} " if mode else ""
    text = (f"Input path: {len(errors)} held-out published {kind}runs whose input came from {PATH_WORDS[data]} took "
            f"{ratio:.2f}x the predicted time at the median (middle half {low:.2f}-{high:.2f}x)")
    if others:
        text += "; fed otherwise: " + ", ".join(
            f"{PATH_WORDS[p]} {o['published_over_predicted']:.2f}x ({o['rows']} runs)"
            for p, o in sorted(others.items(), key=lambda kv: kv[1]["published_over_predicted"]))
    if data != "device":
        text += f". This step's input copy is priced at {format_si(pred.transfer_s, 's')}"
    nearest = min((o["published_over_predicted"] for o in others.values()), default=ratio)
    if data == "pageable" and ratio > nearest:
        text += ("; the loader's own work in the step (collation, its worker processes beside the thread that "
                 "issues the kernels) is not priced. A DataLoader with pin_memory=True and workers, or one that "
                 "prefetches on a side stream (--data pinned, --data prefetched), is how the runs nearer the "
                 "prediction were fed")
    text += f". The prediction is not corrected by it ({STEPS.report})."
    return {"data": data, "family": fam, "mode": mode, "rows": len(errors), "median_error": statistics.median(errors),
            "middle_half_error": [q1, q3], "published_over_predicted": {"median": ratio, "low": low, "high": high},
            "other_paths": others, "text": text}


def input_record_reasons(pred: StepPrediction, data: str, family: str | None) -> list[dict[str, Any]]:
    """The advice's reason of kind `input_record` for the recommended step (none on a CPU or without runs)."""
    quote = input_quote(pred, data, family)
    return [{"kind": "input_record", **quote}] if quote else []

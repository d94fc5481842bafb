"""Ship the published records' held-out errors with the package, so `predict` and `advise` can say how far
predictions like the user's landed from published runs (`roofline.advise.track_record`).

Reads the committed comparisons (benchmarks/results/published-gpu.json and published-llm-serving.json, written by
benchmarks/published.py) and writes roofline/advise/gpu_track_record.json and llm_track_record.json: one entry per
held-out row (the first held-out part and every later set; fitted rows are left out, since the mechanisms were
chosen while their errors were in view), with the keys a prediction is matched on. Run it after
benchmarks/published.py whenever a comparison changes; tests/test_track_record.py fails while they disagree.

Also writes benchmarks/results/track-record.md: every cell a prediction can fall in, the cell it is quoted from
(widened where too few rows) and that cell's spread, the table README's accuracy section shows.

Run: python benchmarks/track_record.py
"""

from __future__ import annotations

import json
import statistics
import sys
from itertools import product
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make `roofline` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from roofline.advise import input_record
from roofline.advise import track_record as tr
from roofline.hardware import find_profile

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmarks" / "results"
PACKAGE = REPO_ROOT / "roofline" / "advise"


def step_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out rows of a published-gpu comparison, reduced to what a step is matched on and the error."""
    return [{"row_id": r["row_id"], "source_id": r["source_id"], "device": find_profile(r["groups"]["gpu"]).name,
             "family": r["groups"]["family"], "mode": r["groups"]["mode"],
             "precision_class": r["extra"]["precision_class"], "bound": r["extra"]["bound"], "data": r["extra"]["data"],
             "error": r["error"]}
            for r in comparison["rows"] if r["holdout"]]


def serving_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out rows of a published-llm-serving comparison, reduced likewise."""
    return [{"row_id": r["row_id"], "source_id": r["source_id"], "device": find_profile(r["groups"]["gpu"]).name,
             "phase": r["extra"]["phase"],
             "runtime": r["extra"]["runtime"], "batch": r["extra"]["batch"], "weights": r["extra"]["weights"],
             "gpus": r["extra"]["gpus"], "context": r["extra"]["context"], "error": r["error"]}
            for r in comparison["rows"] if r["holdout"]]


RECORDS = (("published-gpu.json", "gpu_track_record.json", step_rows),
           ("published-llm-serving.json", "llm_track_record.json", serving_rows))


def write(comparison_path: Path, shipped: Path, reduce: Any) -> str:
    comparison = json.loads(comparison_path.read_text())
    rows = reduce(comparison)
    fitted: dict[str, int] = {}
    for r in comparison["rows"]:
        if not r["holdout"]:
            device = find_profile(r["groups"]["gpu"]).name
            fitted[device] = fitted.get(device, 0) + 1
    head = {"source": str(comparison_path.relative_to(REPO_ROOT)), "dataset": comparison["dataset"],
            "rule": "held-out rows only (holdout: true, every held-out set); error = predicted / published - 1 "
                    f"of the {comparison['metric']} with the shipped profiles",
            "fitted_rows_by_device": dict(sorted(fitted.items()))}
    # one row a line, so a changed comparison shows in a diff as the rows that moved
    body = ",\n".join(json.dumps(r) for r in rows)
    shipped.write_text(json.dumps(head, indent=1)[:-2] + ',\n "rows": [\n' + body + "\n]}\n")
    return f"{shipped.relative_to(REPO_ROOT)}: {len(rows)} held-out rows of {len(comparison['rows'])}"


def cells_table(kind: tr.RecordKind) -> list[str]:
    """Every combination of the key values the kind's rows hold, how many rows are of exactly that kind, and the
    cell quoted for it (a combination no cell covers is quoted nothing)."""
    rows = tr.record_rows(kind)
    values = [sorted({r[k] for r in rows}) for k in kind.keys]
    lines = [f"| {' | '.join(kind.keys)} | rows of this kind | quoted cell | its rows | published / predicted: "
             "median (middle half) |", "|" + "---|" * len(kind.keys) + "---:|---|---:|---|"]
    for combo in product(*values):
        cell = dict(zip(kind.keys, combo, strict=True))
        exact = sum(all(r[k] == v for k, v in cell.items()) for r in rows)
        record = tr.find_record(cell, kind)
        if record is None:
            lines.append(f"| {' | '.join(combo)} | {exact} | none | - | - |")
            continue
        q1, q3 = record.middle_half
        quoted = "this one" if len(record.cell) == len(kind.keys) else \
            "widened over " + ", ".join(k for k in kind.keys if k not in record.cell)
        lines.append(f"| {' | '.join(combo)} | {exact} | {quoted} | {len(record.errors)} | "
                     f"{tr.time_ratio(record.median_error):.2f}x ({tr.time_ratio(q3):.2f}-{tr.time_ratio(q1):.2f}x) |")
    return lines


def input_paths_table() -> list[str]:
    """The steps' held-out rows by how each input reached the GPU and by mode: what `predict` quotes beside a step
    for its `--data` (`roofline/advise/input_record.py`)."""
    lines = ["| input path (`--data`) | mode | rows | published / predicted: median (middle half) |",
             "|---|---|---:|---|"]
    for mode in ("train", "inference", None):
        for path, errors in sorted(input_record.errors_by_path(mode).items()):
            q1, q3 = tr.quartiles(errors) if len(errors) > 1 else (errors[0], errors[0])
            median = tr.time_ratio(statistics.median(errors))
            lines.append(f"| {path} | {mode or 'both'} | {len(errors)} | "
                         f"{median:.2f}x ({tr.time_ratio(q3):.2f}-{tr.time_ratio(q1):.2f}x) |")
    return lines


def main() -> int:
    for comparison, shipped, reduce in RECORDS:
        print(write(RESULTS / comparison, PACKAGE / shipped, reduce))
    tr.reload()
    doc = ["# The track record quoted beside GPU predictions", "",
           "Generated by `python benchmarks/track_record.py` from the committed comparisons' held-out rows "
           "(`roofline/advise/track_record.py` quotes them). A cell with fewer than "
           f"{tr.MIN_ROWS} rows is quoted from a wider one; published / predicted is the time the published run "
           "took over the time predicted for it. Key values no held-out row has (an eager serving runtime) are quoted "
           "nothing. The errors are the held-out parts' current ones; some parts were compared before later "
           "mechanisms were chosen with their errors in view (benchmarks/LOG.md), so the spread is somewhat narrower "
           "than a run nobody has compared yet would see.", ""]
    for title, kind in (("Training and inference steps (benchmarks/results/published-gpu.md)", tr.STEPS),
                        ("Served language models (benchmarks/results/published-llm-serving.md)", tr.SERVING)):
        doc += [f"## {title}", "", *cells_table(kind), ""]
        if kind is tr.STEPS:
            doc += ["### By input path", "", *input_paths_table(), ""]
    (RESULTS / "track-record.md").write_text("\n".join(doc))
    print("benchmarks/results/track-record.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

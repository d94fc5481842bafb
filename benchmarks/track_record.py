"""Ship the published records' held-out errors with the package, so `predict` and `advise` can say how far
predictions like the user's landed from published runs (`roofline.advise.track_record`).

Reads the committed comparisons (benchmarks/results/published-gpu.json and published-llm-serving.json, written by
benchmarks/published.py) and writes roofline/advise/gpu_track_record.json and llm_track_record.json: one entry per
held-out row (the first held-out part and every later set; fitted rows are left out, since the mechanisms were
chosen while their errors were in view), with the keys a prediction is matched on. Run it after
benchmarks/published.py whenever a comparison changes; tests/test_track_record.py fails while they disagree.

Run: python benchmarks/track_record.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmarks" / "results"
PACKAGE = REPO_ROOT / "roofline" / "advise"


def step_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out rows of a published-gpu comparison, reduced to what a step is matched on and the error."""
    return [{"row_id": r["row_id"], "source_id": r["source_id"], "family": r["groups"]["family"],
             "mode": r["groups"]["mode"], "precision_class": r["extra"]["precision_class"],
             "bound": r["extra"]["bound"], "error": r["error"]}
            for r in comparison["rows"] if r["holdout"]]


def serving_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out rows of a published-llm-serving comparison, reduced likewise."""
    return [{"row_id": r["row_id"], "source_id": r["source_id"], "phase": r["extra"]["phase"],
             "runtime": r["extra"]["runtime"], "batch": r["extra"]["batch"], "gpus": r["extra"]["gpus"],
             "error": r["error"]}
            for r in comparison["rows"] if r["holdout"]]


RECORDS = (("published-gpu.json", "gpu_track_record.json", step_rows),
           ("published-llm-serving.json", "llm_track_record.json", serving_rows))


def write(comparison_path: Path, shipped: Path, reduce: Any) -> str:
    comparison = json.loads(comparison_path.read_text())
    rows = reduce(comparison)
    head = {"source": str(comparison_path.relative_to(REPO_ROOT)), "dataset": comparison["dataset"],
            "rule": "held-out rows only (holdout: true, every held-out set); error = predicted / published - 1 "
                    f"of the {comparison['metric']} with the shipped profiles"}
    # one row a line, so a changed comparison shows in a diff as the rows that moved
    body = ",\n".join(json.dumps(r) for r in rows)
    shipped.write_text(json.dumps(head, indent=1)[:-2] + ',\n "rows": [\n' + body + "\n]}\n")
    return f"{shipped.relative_to(REPO_ROOT)}: {len(rows)} held-out rows of {len(comparison['rows'])}"


def main() -> int:
    for comparison, shipped, reduce in RECORDS:
        print(write(RESULTS / comparison, PACKAGE / shipped, reduce))
    return 0


if __name__ == "__main__":
    sys.exit(main())

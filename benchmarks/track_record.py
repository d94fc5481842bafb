"""Ship the published record's held-out errors with the package, so `predict` and `advise` can say how far
predictions like the user's landed from published runs (`roofline.advise.track_record`).

Reads the committed comparison (benchmarks/results/published-gpu.json, written by benchmarks/published.py) and
writes roofline/advise/gpu_track_record.json: one entry per held-out row (the first held-out part and every later
set; fitted rows are left out, since the mechanisms were chosen while their errors were in view), with the keys a
step is matched on. Run it after benchmarks/published.py whenever the comparison changes; tests/test_track_record.py
fails while the two disagree.

Run: python benchmarks/track_record.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
COMPARISON = REPO_ROOT / "benchmarks" / "results" / "published-gpu.json"
SHIPPED = REPO_ROOT / "roofline" / "advise" / "gpu_track_record.json"


def held_out_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """The held-out rows of a published-gpu comparison, reduced to what a step is matched on and the error."""
    return [{"row_id": r["row_id"], "source_id": r["source_id"], "family": r["groups"]["family"],
             "mode": r["groups"]["mode"], "precision_class": r["extra"]["precision_class"],
             "bound": r["extra"]["bound"], "error": r["error"]}
            for r in comparison["rows"] if r["holdout"]]


def main() -> int:
    comparison = json.loads(COMPARISON.read_text())
    rows = held_out_rows(comparison)
    head = {"source": str(COMPARISON.relative_to(REPO_ROOT)), "dataset": comparison["dataset"],
            "rule": "held-out rows only (holdout: true, every held-out set); error = predicted / published - 1 "
                    "of the step time with the shipped profiles"}
    # one row a line, so a changed comparison shows in a diff as the rows that moved
    body = ",\n".join(json.dumps(r) for r in rows)
    SHIPPED.write_text(json.dumps(head, indent=1)[:-2] + ',\n "rows": [\n' + body + "\n]}\n")
    print(f"{SHIPPED.relative_to(REPO_ROOT)}: {len(rows)} held-out rows of {len(comparison['rows'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Predicted vs published: roofline's predictions against the published record of real runs.

Every dataset in benchmarks/published/ is a YAML file whose top-level `kind:` names its comparer, a module
`benchmarks/published_kinds/<kind with '-' as '_'>.py` (so a new kind of record plugs in by adding a dataset
and its module, nothing here). A comparer turns each row into a `Comparison` (the published figure, the
prediction for the row's settings, and the fields it is grouped by); this module does what every kind shares:
splits the rows into the fitted part, the held-out part (whole source blocks marked `holdout: true`, chosen
before any error was computed) and the later held-out sets (blocks with `held_out_set: fresh`, `third`, ...,
`record.HELD_OUT_SETS`: each gathered and committed after every earlier part's errors had been seen, before any
of its own was computed), summarises each part overall and per group (median and worst |error| and the signed
median), checks the targets below, and writes the report.

Error convention: error = predicted / published - 1 of the comparer's METRIC, a time in seconds (the time of
one step for `gpu-steps`), so a negative error means predicted too fast. Thresholds live here, never in CI.

Run: python benchmarks/published.py [DATASET.yaml ...]
  -> benchmarks/results/<comparer's stem>.md and .json for each dataset (default: every benchmarks/published/*.yaml)
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

if not __package__:  # run as a script: make `benchmarks.*` and `roofline` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from benchmarks.published_kinds.record import HELD_OUT_PARTS, HELD_OUT_TOGETHER, Comparison, DatasetError
from roofline.errors import RooflineError

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASET_DIR = REPO_ROOT / "benchmarks" / "published"
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"

MEDIAN_TARGET = 0.12
WORST_TARGET = 0.35
SIGNED_MEDIAN_TARGET = 0.05
HELD_OUT_RATIO_TARGET = 1.3
GROUP_MEDIAN_TARGET = 0.20
"""Issue 17's targets on the whole dataset: median |error| <= 12 %, worst <= 35 %, signed median within
+-5 %; each held-out part's median within 1.3x the fitted part's; every model family and every GPU generation
(the comparer's `target_groups`) within 20 % median."""

PARTS = ("fitted", *HELD_OUT_PARTS, HELD_OUT_TOGETHER, "all")


@dataclass(frozen=True)
class Summary:
    """Errors of a set of rows."""

    rows: int
    median_abs: float
    worst_abs: float
    worst_row: str
    signed_median: float
    too_fast: int
    """Rows predicted faster than published (negative error)."""


def summarize(comparisons: Iterable[Comparison]) -> Summary | None:
    rows = list(comparisons)
    if not rows:
        return None
    errors = [c.error for c in rows]
    worst = max(rows, key=lambda c: abs(c.error))
    return Summary(rows=len(rows), median_abs=statistics.median(abs(e) for e in errors),
                   worst_abs=abs(worst.error), worst_row=worst.row_id, signed_median=statistics.median(errors),
                   too_fast=sum(e < 0 for e in errors))


def split(comparisons: list[Comparison]) -> dict[str, list[Comparison]]:
    """The fitted part, each held-out part, every held-out row together, and all rows."""
    parts: dict[str, list[Comparison]] = {p: [] for p in PARTS}
    for c in comparisons:
        parts[c.part].append(c)
    parts[HELD_OUT_TOGETHER] = [c for c in comparisons if c.part != "fitted"]
    parts["all"] = comparisons
    return parts


def group_summaries(comparisons: list[Comparison], key: str) -> dict[str, Summary]:
    """Per value of the group field `key`, that value's rows summarised."""
    values = sorted({c.groups[key] for c in comparisons if key in c.groups})
    return {v: s for v in values if (s := summarize(c for c in comparisons if c.groups.get(key) == v))}


def check_targets(parts: dict[str, list[Comparison]], target_groups: Iterable[str]) -> list[dict[str, Any]]:
    """Each target of the issue, the value reached and whether it is met."""
    whole, fitted = summarize(parts["all"]), summarize(parts["fitted"])
    if whole is None:
        return []
    checks = [
        {"target": f"median abs error <= {MEDIAN_TARGET:.0%}", "unit": "abs error", "value": whole.median_abs,
         "met": whole.median_abs <= MEDIAN_TARGET},
        {"target": f"worst abs error <= {WORST_TARGET:.0%}", "unit": "abs error", "value": whole.worst_abs,
         "met": whole.worst_abs <= WORST_TARGET},
        {"target": f"signed median within +-{SIGNED_MEDIAN_TARGET:.0%}", "unit": "signed error",
         "value": whole.signed_median, "met": abs(whole.signed_median) <= SIGNED_MEDIAN_TARGET},
    ]
    for part in (*HELD_OUT_PARTS, HELD_OUT_TOGETHER):
        held = summarize(parts.get(part, []))
        if fitted and held:
            ratio = held.median_abs / fitted.median_abs if fitted.median_abs else math.inf
            checks.append({"target": f"{_label(part)} median <= {HELD_OUT_RATIO_TARGET}x fitted median",
                           "unit": "ratio", "value": ratio, "met": ratio <= HELD_OUT_RATIO_TARGET})
    for key in target_groups:
        for value, s in group_summaries(parts["all"], key).items():
            checks.append({"target": f"{key} {value}: median abs error <= {GROUP_MEDIAN_TARGET:.0%}",
                           "unit": "abs error", "value": s.median_abs, "met": s.median_abs <= GROUP_MEDIAN_TARGET})
    return checks


def load_dataset(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise DatasetError(f"{path}: cannot read it as YAML ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise DatasetError(f"{path}: a published-record dataset starts with `kind: <comparer>`")
    return data


def comparer_for(kind: str) -> ModuleType:
    """The comparer module of `kind` (benchmarks/published_kinds/<kind>.py). It defines RESULT_STEM, TITLE,
    METRIC (the time compared, in words), GROUP_KEYS, TARGET_GROUPS, EXTRA_COLUMNS,
    compare(dataset) -> list[Comparison] and legend(dataset) -> list[str], and optionally
    extra_sections(dataset, comparisons) -> list[str] (markdown appended to the report), and TARGETS_OF with
    check_targets(parts) -> the target rows, where its issue's targets are not issue 17's. A kind whose error is
    not a relative error of a time (scaling efficiency, in points) defines report(path, out_dir) -> its JSON
    document with `headline` and `targets`, and reports itself."""
    name = kind.replace("-", "_")
    if not name.isidentifier():
        raise DatasetError(f"kind '{kind}' cannot name a comparer module")
    try:
        return importlib.import_module(f"benchmarks.published_kinds.{name}")
    except ModuleNotFoundError:
        raise DatasetError(f"no comparer for kind '{kind}' (benchmarks/published_kinds/{name}.py)") from None


def _label(part: str) -> str:
    return part.replace("_", "-")


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _summary_cells(s: Summary) -> str:
    return (f"{s.rows} | {100 * s.median_abs:.1f}% | {100 * s.worst_abs:.1f}% ({s.worst_row}) | "
            f"{_pct(s.signed_median)} | {s.too_fast}")


def report_document(kind: str, title: str, comparisons: list[Comparison], group_keys: Iterable[str],
                    target_groups: Iterable[str]) -> dict[str, Any]:
    """The JSON document: every row, every part's and group's summary, and the targets."""
    parts = split(comparisons)
    groups = {part: {key: {v: asdict(s) for v, s in group_summaries(rows, key).items()} for key in group_keys}
              for part, rows in parts.items()}
    return {
        "kind": kind, "title": title,
        "rows": [{**asdict(c), "error": c.error} for c in comparisons],
        "summary": {part: (asdict(s) if (s := summarize(rows)) else None) for part, rows in parts.items()},
        "groups": groups,
        "targets": check_targets(parts, target_groups),
    }


def render_markdown(doc: dict[str, Any], legend: list[str], comparisons: list[Comparison], metric: str,
                    group_keys: Iterable[str], extra_columns: list[tuple[str, Callable[[Comparison], str]]]) -> str:
    parts = split(comparisons)
    head = "| part | rows | median abs | worst abs (row) | signed median | too fast |"
    lines = [f"# {doc['title']}", "", *legend, "",
             f"Error = predicted / published - 1 of the {metric} (negative: predicted too fast).", "",
             "## Summary", "", head, "|---|---:|---:|---|---:|---:|"]
    for part in PARTS:
        if s := summarize(parts[part]):
            lines.append(f"| {_label(part)} | {_summary_cells(s)} |")
    lines += ["", f"## Targets ({doc.get('targets_of', 'issue 17')})", "", "| target | value | met |", "|---|---:|---|"]
    for t in doc["targets"]:
        value = {"ratio": f"{t['value']:.2f}x", "signed error": _pct(t["value"])}.get(t["unit"],
                                                                                     f"{100 * t['value']:.1f}%")
        lines.append(f"| {t['target']} | {value} | {'yes' if t['met'] else 'NO'} |")
    for key in group_keys:
        lines += ["", f"## By {key}", "", f"| {key} | part | rows | median abs | worst abs (row) | signed median | "
                  "too fast |", "|---|---|---:|---:|---|---:|---:|"]
        for part in ("fitted", *HELD_OUT_PARTS, HELD_OUT_TOGETHER):
            for value, s in group_summaries(parts[part], key).items():
                lines.append(f"| {value} | {_label(part)} | {_summary_cells(s)} |")
    extra_head = "".join(f" {name} |" for name, _ in extra_columns)
    lines += ["", "## Rows", "", f"| row | part | settings | published | predicted | error |{extra_head}",
              "|---|---|---|---:|---:|---:|" + "---|" * len(extra_columns)]
    for c in sorted(comparisons, key=lambda c: (PARTS.index(c.part), c.source_id, c.row_id)):
        cells = "".join(f" {fn(c)} |" for _, fn in extra_columns)
        lines.append(f"| {c.row_id} | {_label(c.part)} | {c.settings} | "
                     f"{1e3 * c.published:.2f} ms | {1e3 * c.predicted:.2f} ms | {_pct(c.error)} |{cells}")
    return "\n".join(lines) + "\n"


def run(path: Path, out_dir: Path = RESULTS_DIR) -> dict[str, Any]:
    """Compare one dataset, write its .md and .json under out_dir, and return the JSON document."""
    data = load_dataset(path)
    comparer = comparer_for(data["kind"])
    if hasattr(comparer, "report"):
        return comparer.report(path, out_dir)
    comparisons = comparer.compare(data)
    doc = report_document(data["kind"], comparer.TITLE, comparisons, comparer.GROUP_KEYS, comparer.TARGET_GROUPS)
    if hasattr(comparer, "check_targets"):
        doc["targets_of"], doc["targets"] = comparer.TARGETS_OF, comparer.check_targets(split(comparisons))
    doc["metric"] = comparer.METRIC
    resolved = path.resolve()
    doc["dataset"] = str(resolved.relative_to(REPO_ROOT) if resolved.is_relative_to(REPO_ROOT) else resolved)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{comparer.RESULT_STEM}.json").write_text(json.dumps(doc, indent=2) + "\n")
    markdown = render_markdown(doc, comparer.legend(data), comparisons, comparer.METRIC, comparer.GROUP_KEYS,
                               comparer.EXTRA_COLUMNS)
    if hasattr(comparer, "extra_sections"):
        markdown += "\n".join(comparer.extra_sections(data, comparisons)) + "\n"
    (out_dir / f"{comparer.RESULT_STEM}.md").write_text(markdown)
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", type=Path,
                        help="dataset YAML files (default: benchmarks/published/*.yaml)")
    args = parser.parse_args(argv)
    paths = args.datasets or sorted(DATASET_DIR.glob("*.yaml"))
    all_met = True
    try:
        for path in paths:
            doc = run(path)
            if "headline" in doc:
                print(f"{path.name}: {doc['headline']}")
            for part in PARTS if "headline" not in doc else ():
                if s := doc["summary"].get(part):
                    print(f"{path.name} {_label(part)}: {s['rows']} rows, median |error| "
                          f"{100 * s['median_abs']:.1f}%, worst {100 * s['worst_abs']:.1f}% ({s['worst_row']}), "
                          f"signed median {_pct(s['signed_median'])}")
            all_met = all_met and all(t["met"] for t in doc["targets"])
    except RooflineError as exc:
        print(f"roofline: error: {exc}", file=sys.stderr)
        return 2
    return 0 if all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())

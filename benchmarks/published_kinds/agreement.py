"""How far the published record disagrees with itself where two sources ran the same thing.

Rows with identical settings (model, GPU, mode or phase, precision, batch, sizes, input path: everything the
comparer prices) from different sources are paired, and each pair's higher published time over its lower is
the disagreement. A prediction that matched one source exactly would miss the other by that much, so the
median disagreement is the scale below which a median |error| against the record stops meaning much.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Hashable

from benchmarks.published_kinds.record import Comparison


def cross_source_pairs(comparisons: list[Comparison], key: Callable[[Comparison], Hashable]) -> list[float]:
    """Every pair of rows with the same `key` from different sources: the higher published time over the lower,
    minus 1."""
    groups: dict[Hashable, list[Comparison]] = {}
    for c in comparisons:
        groups.setdefault(key(c), []).append(c)
    return [max(a.published, b.published) / min(a.published, b.published) - 1
            for rows in groups.values() for a, b in itertools.combinations(rows, 2) if a.source_id != b.source_id]


def agreement_section(comparisons: list[Comparison], key: Callable[[Comparison], Hashable]) -> list[str]:
    """The markdown section: pairs, settings, median and quartiles of their disagreement."""
    pairs = sorted(cross_source_pairs(comparisons, key))
    lines = ["", "## The record against itself", ""]
    if len(pairs) < 4:
        return [*lines, f"{len(pairs)} pairs of rows with identical settings from different sources: too few."]
    q1, median, q3 = statistics.quantiles(pairs, n=4)
    return [*lines,
            f"{len(pairs)} pairs of rows with identical settings from different sources: the higher published time "
            f"is {median:.1%} above the lower at the median (middle half {q1:.1%}-{q3:.1%}, largest "
            f"{pairs[-1]:.0%}). A prediction that matched one source of a pair exactly would miss the other by "
            "that much: the record's own scatter, beside which its median |error| is read."]

"""What every published-record dataset shares: its source blocks and the comparison of one row.

A dataset is `kind: <comparer>` and `sources:`, a list of blocks. A block is one place the figures were read
(`kind: published`, with a `citation` precise enough to re-find them: URL or repo@commit:path and the table)
or one run of this project on a lent machine (`kind: measured-here`, with the `script` that measured them and
the `date`). `holdout: true` puts the whole block in the held-out part; `held_out_set: <name>` with it puts the
block in a later held-out set of its own (`HELD_OUT_SETS`, in the order they were gathered): each gathered after
every earlier part's errors had been seen (so those parts no longer test generalization honestly) and committed
before any error of its own rows was computed.
`defaults` are row fields the block's rows share; a row's own fields override them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from roofline.errors import RooflineError

HELD_OUT_SETS = ("fresh", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
                 "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth",
                 "nineteenth", "twentieth", "twenty-first", "twenty-second",
                 "twenty-third", "twenty-fourth", "twenty-fifth", "twenty-sixth",
                 "twenty-seventh", "twenty-eighth", "twenty-ninth", "thirtieth", "thirty-first",
                 "thirty-second", "thirty-third", "thirty-fourth",
                 "thirty-fifth", "thirty-sixth", "thirty-seventh", "thirty-eighth",
                 "thirty-ninth", "fortieth", "forty-first", "forty-second", "forty-third",
                 "forty-fourth", "forty-fifth", "forty-sixth", "forty-seventh",
                 "forty-eighth", "forty-ninth", "fiftieth", "fifty-first",
                 "fifty-second", "fifty-third", "fifty-fourth", "fifty-fifth",
                 "fifty-sixth", "fifty-seventh", "fifty-eighth", "fifty-ninth", "sixtieth",
                 "sixty-first")
"""The later held-out sets, in the order they were gathered (a block's `held_out_set`), each a part of its own."""


def part_of(holdout: bool, later_set: str | None = None) -> str:
    """'fitted', 'held_out' (the first held-out set), or '<set>_held_out' for a later set (`HELD_OUT_SETS`)."""
    return f"{later_set}_held_out" if later_set else "held_out" if holdout else "fitted"


HELD_OUT_PARTS = ("held_out", *(part_of(True, name) for name in HELD_OUT_SETS))
"""Every held-out part's name, the first held-out part then the later sets in the order they were gathered."""

HELD_OUT_TOGETHER = "held_out_together"
"""Every held-out row in one part: the issues' "held-out third" against "the rest" read literally, reported beside
each set's own ratio (a set's ratio says whether one new source generalizes; the pooled one, the whole record)."""


class DatasetError(RooflineError):
    """A published-record dataset that cannot be read: what is wrong and where."""


class SourceBlock(BaseModel):
    """One source of rows, validated strictly (a misspelt field is an error, not a silently ignored one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: Literal["published", "measured-here"]
    holdout: bool
    held_out_set: Literal[HELD_OUT_SETS] | None = None  # type: ignore[valid-type]
    """The later held-out set the block belongs to (`HELD_OUT_SETS`): committed before any of its errors was
    computed, after every earlier set's errors had been visible while mechanisms were chosen; reported as a part
    of its own. None: the fitted part, or the first held-out part."""
    citation: str | None = None
    script: str | None = None
    """measured-here: the command that measured the rows, runnable from the repository root."""
    date: dt.date | None = None
    """measured-here: the UTC day of the run."""
    framework: str
    notes: str | None = None
    defaults: dict[str, Any] = {}
    rows: list[dict[str, Any]]

    @model_validator(mode="after")
    def _provenance(self) -> SourceBlock:
        if self.kind == "published" and not self.citation:
            raise ValueError("a published block needs `citation` (URL or repo@commit:path and the table)")
        if self.kind == "measured-here" and not (self.script and self.date):
            raise ValueError("a measured-here block needs `script` (the command) and `date`")
        if not self.rows:
            raise ValueError("a block needs at least one row")
        if self.held_out_set and not self.holdout:
            raise ValueError(f"`held_out_set: {self.held_out_set}` marks a held-out block: it needs `holdout: true`")
        return self

    @property
    def part(self) -> str:
        """The part its rows are reported in (`part_of`)."""
        return part_of(self.holdout, self.held_out_set)

    def merged_rows(self) -> list[dict[str, Any]]:
        """Each row with the block's defaults filled in."""
        return [{**self.defaults, **row} for row in self.rows]


def first_error(exc: ValidationError) -> str:
    """pydantic's first complaint as 'field: message' (or the message alone for a whole-object rule)."""
    first = exc.errors()[0]
    message = first["msg"].removeprefix("Value error, ")
    where = ".".join(map(str, first["loc"]))
    return f"{where}: {message}" if where else message


def source_blocks(dataset: dict[str, Any]) -> list[SourceBlock]:
    """The dataset's blocks, each validated; ids unique across blocks and rows."""
    blocks = []
    for i, raw in enumerate(dataset.get("sources") or []):
        try:
            blocks.append(SourceBlock.model_validate(raw))
        except ValidationError as exc:
            where = raw.get("id", f"#{i}") if isinstance(raw, dict) else f"#{i}"
            raise DatasetError(f"source {where}: {first_error(exc)}") from None
    if not blocks:
        raise DatasetError("the dataset has no `sources:` blocks")
    ids = [b.id for b in blocks] + [str(r.get("id")) for b in blocks for r in b.rows]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise DatasetError(f"ids used twice: {', '.join(duplicates)}")
    return blocks


@dataclass(frozen=True)
class Comparison:
    """One row of the record against its prediction."""

    row_id: str
    source_id: str
    holdout: bool
    published: float
    """The source's figure of the comparer's time metric, seconds."""
    predicted: float
    groups: dict[str, str]
    """Field -> value this row is summarised under (model, gpu, mode, precision, source, ...)."""
    settings: str
    """The row's settings in a few words, for the table."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Comparer-specific facts shown beside the error (predicted memory, whether the batch fits, ...)."""
    later_set: str | None = None
    """The later held-out set of its block (`SourceBlock.held_out_set`)."""

    @property
    def part(self) -> str:
        """'fitted', 'held_out' (the first held-out set), or a later set's part (`part_of`)."""
        return part_of(self.holdout, self.later_set)

    @property
    def error(self) -> float:
        return self.predicted / self.published - 1.0

"""What the advisor answers: the recommendation, the sweep behind it and the reasons, as one record.

Its own module so that `advisor` (which builds it) and `reasons` (which reads it) import it and not each
other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline.model.step import StepPrediction


@dataclass
class Advice:
    model: str
    device: str
    train: bool
    recommended_batch: int
    recommended_precision: str
    max_batch_size: int
    max_batch_by_precision: dict[str, int]
    sweep: list[StepPrediction]
    neighbours: list[StepPrediction]
    reasons: list[dict[str, Any]] = field(default_factory=list)

    @property
    def recommended(self) -> StepPrediction:
        return next(p for p in self.sweep + self.neighbours
                    if p.batch_size == self.recommended_batch and p.precision == self.recommended_precision)

"""What a validation found: per batch size the prediction beside the timed run, per op kind and per layer,
with the signed error `(predicted / measured - 1) x 100` (negative: the model promised more speed than the
machine delivered)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from roofline.measure.live_runs import Case
from roofline.validate.profile_choice import ProfileChoice


class _Compared:
    """A predicted and a measured time side by side; the error exists only where both do."""

    predicted_s: float | None
    measured_s: float | None

    @property
    def error_pct(self) -> float | None:
        if not self.predicted_s or not self.measured_s:
            return None
        return error_pct(self.predicted_s, self.measured_s)


@dataclass(frozen=True)
class KindRow(_Compared):
    """Predicted vs profiled seconds per step for one op kind; None where one side has no such kind."""

    kind: str
    predicted_s: float | None
    measured_s: float | None


@dataclass(frozen=True)
class LayerRow(_Compared):
    """Predicted vs measured forward seconds of one leaf module call (named as the tracer names ops)."""

    name: str
    kind: str
    predicted_s: float | None
    measured_s: float | None


@dataclass(frozen=True)
class Run:
    """One batch size: the prediction, the timed steps and the profiled breakdowns; the comparisons are computed
    from them, so the same live run can be compared with another prediction (`repredicted`)."""

    batch_size: int
    prediction: Any
    """roofline.model.step.StepPrediction"""
    measurement: Any
    """roofline.measure.timing.Measurement of the whole step"""
    measured_kinds: dict[str, float] = field(default_factory=dict)
    """torch.profiler self seconds per op kind and step (profiler overhead included)."""
    measured_layers: dict[str, float] = field(default_factory=dict)
    """Forward seconds per leaf-module call, when per-layer timing was asked for."""
    fresh_page_bytes: float | None = None
    """Measured bytes of freshly mapped memory first-touched per step (see fresh_page_bytes_per_step)."""

    @property
    def by_kind(self) -> tuple[KindRow, ...]:
        return kind_rows(predicted_by_kind(self.prediction), self.measured_kinds)

    @property
    def profiled_step_s(self) -> float:
        """Sum of the profiler's per-kind self times for one step."""
        return sum(self.measured_kinds.values())

    @property
    def layers(self) -> tuple[LayerRow, ...]:
        return layer_rows(self.prediction, self.measured_layers) if self.measured_layers else ()

    @property
    def fresh_page_s(self) -> float | None:
        """Those bytes at the calibrated first-touch rate: the step time the allocator costs."""
        rate = self.prediction.ceilings.page_fault_bytes_per_s
        return self.fresh_page_bytes / rate if self.fresh_page_bytes is not None and rate else None

    @property
    def predicted_s(self) -> float:
        return float(self.prediction.step_time_s)

    @property
    def measured_s(self) -> float:
        return float(self.measurement.median)

    @property
    def error_pct(self) -> float:
        return error_pct(self.predicted_s, self.measured_s)


@dataclass(frozen=True)
class Validation(Case):
    choice: ProfileChoice
    runs: list[Run]
    warnings: list[str] = field(default_factory=list)

    @property
    def median_abs_error_pct(self) -> float:
        return statistics.median(abs(r.error_pct) for r in self.runs)

    @property
    def max_abs_error_pct(self) -> float:
        return max(abs(r.error_pct) for r in self.runs)


def error_pct(predicted_s: float, measured_s: float) -> float:
    """Signed relative error of a prediction: positive when it predicts a slower step than measured."""
    return (predicted_s / measured_s - 1.0) * 100.0


def predicted_by_kind(prediction: Any) -> dict[str, float]:
    """Predicted seconds per op kind (all passes), free ops left out."""
    out: dict[str, float] = {}
    for cost in prediction.ops:
        if cost.bound != "free":
            out[cost.kind] = out.get(cost.kind, 0.0) + cost.time_s
    return out


def kind_rows(predicted: dict[str, float], measured: dict[str, float]) -> tuple[KindRow, ...]:
    """Both sides joined on kind, largest measured (else predicted) first."""
    kinds = set(predicted) | set(measured)
    rows = [KindRow(k, predicted.get(k), measured.get(k)) for k in kinds]
    return tuple(sorted(rows, key=lambda r: -(r.measured_s or r.predicted_s or 0.0)))


def layer_rows(prediction: Any, measured: dict[str, float]) -> tuple[LayerRow, ...]:
    """Forward-pass predictions per op name joined with measured leaf-module times, in execution order."""
    predicted: dict[str, tuple[str, float]] = {}
    for cost in prediction.ops:
        if cost.pass_ == "forward" and cost.kind not in ("optimizer", "cast"):
            kind, seconds = predicted.get(cost.name, (cost.kind, 0.0))
            predicted[cost.name] = (kind, seconds + cost.time_s)
    rows = [LayerRow(name, kind, seconds if seconds > 0 else None, measured.get(name))
            for name, (kind, seconds) in predicted.items()]
    rows += [LayerRow(name, "?", None, seconds) for name, seconds in measured.items() if name not in predicted]
    return tuple(rows)

"""The JSON document of `roofline validate`, built from a `Validation`."""

from __future__ import annotations

import math
from typing import Any

from roofline.measure.live_runs import WARMUP_STEPS
from roofline.validate.results import Run, Validation


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def run_dict(run: Run, per_layer: bool) -> dict[str, Any]:
    m = run.measurement
    out: dict[str, Any] = {
        "batch_size": run.batch_size, "predicted_s": run.predicted_s, "measured_s": run.measured_s,
        "error_pct": run.error_pct, "measured_q1_s": m.q1, "measured_q3_s": m.q3, "measured_iqr_s": m.iqr,
        "measured_min_s": m.min, "spread": _finite(m.spread), "repeats": len(m.samples_s), "steps_per_sample": m.number,
        "stop_reason": m.stop_reason, "samples_s": list(m.samples_s),
        "predicted_samples_per_s": run.prediction.samples_per_s,
        "measured_samples_per_s": run.batch_size / run.measured_s,
        "predicted_host_s": run.prediction.host_s, "predicted_device_s": run.prediction.device_s,
        "profiled_step_s": run.profiled_step_s,
        "fresh_page_bytes_per_step": run.fresh_page_bytes, "fresh_page_s_per_step": run.fresh_page_s,
        "predicted_fresh_page_bytes_per_step": run.prediction.fresh_bytes,
        "by_kind": [{"kind": k.kind, "predicted_s": k.predicted_s, "measured_s": k.measured_s,
                     "error_pct": k.error_pct} for k in run.by_kind],
    }
    if per_layer:
        out["layers"] = [{"name": r.name, "op": r.kind, "predicted_s": r.predicted_s, "measured_s": r.measured_s,
                          "error_pct": r.error_pct} for r in run.layers]
    return out


def validation_dict(v: Validation, per_layer: bool = False) -> dict[str, Any]:
    """The JSON document of `roofline validate`."""
    ceilings = v.runs[0].prediction.ceilings if v.runs else None
    return {
        "model": v.model, "device": v.device, "precision": v.precision, "train": v.train,
        "optimizer": v.optimizer if v.train else None,
        "profile": {"name": v.choice.profile.name, "source": v.choice.source, "calibrated": v.choice.source ==
                    "calibrated", "path": v.choice.path,
                    "provenance": dict(ceilings.provenance) if ceilings else {}},
        "environment": v.environment,
        "threads": v.environment.get("torch_threads"),
        "timing": {"warmup_steps": WARMUP_STEPS + 1, "statistic": "median of repeats",
                   "spread": "inter-quartile range / median",
                   "breakdown": "torch.profiler self time per op kind (profiler overhead included)"},
        "error_definition": "error_pct = (predicted_s / measured_s - 1) * 100",
        "runs": [run_dict(r, per_layer) for r in v.runs],
        "median_abs_error_pct": v.median_abs_error_pct,
        "max_abs_error_pct": v.max_abs_error_pct,
        "warnings": v.warnings,
    }

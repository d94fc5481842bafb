"""`validate --train --ranks N`: a real DistributedDataParallel run on local gloo ranks against the prediction.

The prediction is built from what this machine measured: one rank's step from the CPU profile (calibrated
with one thread, as each rank runs), the all-reduce from the gloo bus bandwidth and latency measured just
before. Each rank takes `per_rank_batch` samples (weak scaling), and scaling efficiency is the one-rank step
over the N-rank step, measured and predicted alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from roofline.hardware.schema import Profile
from roofline.measure.gloo_ranks import AllreduceFit, LiveDataParallel, measure_allreduce, run_data_parallel
from roofline.model.comm.data_parallel import DataParallelPrediction, predict_data_parallel
from roofline.model.comm.fabric import measured_fabric
from roofline.model.comm.socket_share import rank_profile
from roofline.workload.request import ModelRequest, workload_builder

THREADS_PER_RANK = 1
"""Each rank runs one intra-op thread (gloo_ranks._init), so `ranks` ranks fill `ranks` cores."""


@dataclass(frozen=True)
class DataParallelValidation:
    model: str
    fit: AllreduceFit
    one: LiveDataParallel
    many: LiveDataParallel
    predicted: DataParallelPrediction
    overlap: bool

    @property
    def measured_efficiency(self) -> float:
        return self.one.step_s / self.many.step_s


def validate_data_parallel(req: ModelRequest, profile: Profile, ranks: int, per_rank_batch: int,
                           steps: int = 10, bucket_cap_mb: float = 25.0) -> DataParallelValidation:
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision

    fit = measure_allreduce(ranks)
    one = run_data_parallel(req, 1, per_rank_batch, steps, bucket_cap_mb)
    many = run_data_parallel(req, ranks, per_rank_batch, steps, bucket_cap_mb)
    name, build = workload_builder(req)
    workload = build(per_rank_batch)
    single = predict_step(workload, profile, get_precision("fp32"), StepOptions(train=True))
    beside = predict_step(workload, rank_profile(profile, fit.memory_share), get_precision("fp32"),
                          StepOptions(train=True))
    fabric = measured_fabric(ranks, fit.bus_bandwidth_bytes_per_s, fit.latency_s,
                             f"gloo all-reduce between {ranks} local processes")
    overlap = ranks * THREADS_PER_RANK < (os.cpu_count() or 1)
    predicted = predict_data_parallel(workload, single, fabric, 4, bucket_cap_mb, overlap=overlap,
                                      rank_step=beside)
    return DataParallelValidation(name, fit, one, many, predicted, overlap)


def error_pct(predicted: float, measured: float) -> float:
    return 100.0 * (predicted - measured) / measured


def validation_dict(v: DataParallelValidation) -> dict[str, Any]:
    p = v.predicted
    return {
        "model": v.model, "ranks": v.many.ranks, "per_rank_batch": v.many.per_rank_batch, "backend": "gloo",
        "overlap": v.overlap,
        "gloo": {"latency_s": v.fit.latency_s, "bus_bandwidth_bytes_per_s": v.fit.bus_bandwidth_bytes_per_s,
                 "memory_share": v.fit.memory_share,
                 "allreduce_times_s": {str(k): t for k, t in v.fit.times_s.items()}},
        "runs": [
            {"ranks": 1, "predicted_s": p.single.step_time_s, "measured_s": v.one.step_s,
             "error_pct": error_pct(p.single.step_time_s, v.one.step_s)},
            {"ranks": v.many.ranks, "predicted_s": p.step_time_s, "measured_s": v.many.step_s,
             "error_pct": error_pct(p.step_time_s, v.many.step_s),
             "predicted_communication_s": p.communication_s, "measured_communication_s": v.many.communication_s,
             "predicted_memory_contention_s": p.contention_s},
        ],
        "scaling_efficiency": {"predicted": p.scaling_efficiency, "measured": v.measured_efficiency,
                               "difference_points": 100 * (p.scaling_efficiency - v.measured_efficiency)},
        "gradient_bytes": p.gradient_bytes, "buckets": len(p.buckets),
        "samples_s": {"one": v.one.step_samples_s, "many": v.many.step_samples_s,
                      "many_communication": v.many.communication_samples_s},
    }

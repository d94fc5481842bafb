"""Batch size and precision advice, composed only from step predictions; reasons are data, not prose.

The sweep covers every precision the device supports and, per precision, batch sizes from 1 to the
largest that fits: powers of two, their neighbours (B-1, B+1) and the largest batch itself. The
recommendation is the fastest precision, at the smallest batch reaching `GOOD_ENOUGH_FRACTION` of that
precision's best throughput (found by bisection between powers of two), because a smaller batch leaves
memory free and generalizes no worse; beside it the advisor shows B-1, B+1, the nearest multiple of 8
and the nearest power of two so a user sees whether powers of two matter for this model and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from roofline.advise.advice import Advice
from roofline.advise.input_record import input_record_reasons
from roofline.advise.reasons import explain_advice
from roofline.advise.track_record import model_family, track_record_reasons
from roofline.errors import DoesNotFit
from roofline.hardware.schema import Profile
from roofline.model.data_placement import get_placement
from roofline.model.memory import max_batch_that_fits
from roofline.model.step import StepOptions, StepPrediction, predict_step, step_memory
from roofline.workload.ops.base import Workload
from roofline.workload.precision import Precision, get_precision

GOOD_ENOUGH_FRACTION = 0.95
"""The smallest batch within 5% of the best throughput is recommended (the issue's definition)."""

TRAIN_PRECISIONS = ("fp32", "tf32", "amp", "amp-bf16", "bf16")
INFER_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")

BuildWorkload = Callable[[int], Workload]


def candidate_precisions(profile: Profile, train: bool, requested: str) -> list[Precision]:
    """Precisions to sweep: the requested one, or every one the device runs natively."""
    from roofline.model.ceilings import compute_dtype_for

    if requested != "auto":
        return [get_precision(requested)]
    names = TRAIN_PRECISIONS if train else INFER_PRECISIONS
    out = []
    for name in names:
        p = get_precision(name)
        dtype = compute_dtype_for(p, profile)
        if dtype is None or (name == "tf32" and dtype == "fp32"):
            continue
        if name == "amp-bf16" and compute_dtype_for(get_precision("amp"), profile) == "bf16":
            continue  # on a CPU `amp` is autocast's bfloat16 already
        out.append(p)
    return out


def _pow2_candidates(max_batch: int) -> list[int]:
    """The sweep: the powers of two and the largest batch that fits. The batches on either side of a power
    (the 127/128/129 lesson) are priced around the recommendation (`neighbours`), where they are read; pricing
    them at every power tripled the sweep (135 step predictions for a training advice on an H100: 2.05 s)."""
    values: set[int] = set()
    b = 1
    while b <= max_batch:
        values.add(b)
        b *= 2
    values.add(max_batch)
    return sorted(values)


def _nearest_pow2(b: int) -> int:
    lower = 1 << (b.bit_length() - 1)
    upper = lower * 2
    return lower if b - lower <= upper - b else upper


def advise(name: str, build: BuildWorkload, profile: Profile, train: bool, precision: str = "auto",
           options: StepOptions | None = None) -> Advice:
    """Sweep precisions and batch sizes for `build(batch)` on `profile` and recommend."""
    opts = options or StepOptions(train=train)
    cache: dict[tuple[int, str], StepPrediction] = {}
    workloads: dict[int, Workload] = {}

    def workload(batch: int) -> Workload:
        """Each batch's workload is built once and shared by every precision."""
        if batch not in workloads:
            workloads[batch] = build(batch)
        return workloads[batch]

    def predict(batch: int, prec: Precision) -> StepPrediction:
        key = (batch, prec.name)
        if key not in cache:
            cache[key] = predict_step(workload(batch), profile, prec, opts)
        return cache[key]

    sweep: list[StepPrediction] = []
    max_by_precision: dict[str, int] = {}
    best_per_precision: dict[str, StepPrediction] = {}
    for prec in candidate_precisions(profile, train, precision):
        cap = profile.memory.capacity_bytes.value
        max_b = max_batch_that_fits(lambda b, p=prec: step_memory(workload(b), profile.kind == "gpu", p, opts).total,
                                    cap)
        if max_b == 0:
            continue
        max_by_precision[prec.name] = max_b
        points = [predict(b, prec) for b in _pow2_candidates(max_b)]
        sweep.extend(points)
        best_per_precision[prec.name] = max(points, key=lambda p: p.samples_per_s)
    if not sweep:
        need = step_memory(workload(1), profile.kind == "gpu", candidate_precisions(profile, train, precision)[0],
                           opts).total
        raise DoesNotFit(f"{name} does not fit on {profile.name} even at batch 1 ({need / 2**30:.1f} GiB needed, "
                         f"{profile.memory.capacity_bytes.value / 2**30:.1f} GiB available); try a smaller "
                         "input or lower precision")
    best = max(best_per_precision.values(), key=lambda p: p.samples_per_s)
    prec = get_precision(best.precision)
    target = GOOD_ENOUGH_FRACTION * best.samples_per_s
    ok = sorted(p.batch_size for p in sweep if p.precision == prec.name and p.samples_per_s >= target)
    hi = ok[0]
    lo = max([p.batch_size for p in sweep if p.precision == prec.name and p.batch_size < hi], default=0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if predict(mid, prec).samples_per_s >= target:
            hi = mid
        else:
            lo = mid
    recommended = hi
    max_b = max_by_precision[prec.name]
    neighbour_batches = {recommended - 1, recommended + 1, max(8, round(recommended / 8) * 8),
                         _nearest_pow2(recommended)}
    neighbours = [predict(b, prec) for b in sorted(neighbour_batches) if 1 <= b <= max_b and b != recommended]
    neighbours.append(predict(recommended, prec))
    advice = Advice(name, profile.name, train, recommended, prec.name, max_b, max_by_precision, sweep,
                    sorted(neighbours, key=lambda p: p.batch_size))

    def placed(batch: int, prec: Precision, data: str) -> StepPrediction:
        """The step with its input placed otherwise (`--data`), for the transfer reason."""
        return predict_step(workload(batch), profile, prec, replace(opts, **get_placement(data).fields()))

    advice.reasons = explain_advice(advice, profile, predict, GOOD_ENOUGH_FRACTION, opts.data, placed)
    advice.reasons += track_record_reasons(advice.recommended, name, opts.autocast)
    advice.reasons += input_record_reasons(advice.recommended, opts.data, model_family(name))
    return advice


"""Why the advisor recommends what it does, as data: each reason has a kind, its numbers, and a sentence
built from those numbers (the CLI renders the sentence; `--json` carries both)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from roofline.advise.track_record import host_bound_spread
from roofline.model.ceilings import RUNTIME_PROVENANCE
from roofline.model.cpu_runtime.heap_setting import KEEP_HEAP_ENV, KEEP_HEAP_TUNABLES, PRELOAD_ALLOCATORS
from roofline.model.step import StepPrediction, copy_rate
from roofline.workload.precision import Precision, get_precision

if TYPE_CHECKING:
    from roofline.advise.advice import Advice
    from roofline.hardware.schema import Profile

SHAPE_NOTE_KINDS = ("alignment", "quantization")
"""Cost-model notes that explain why throughput steps between neighbouring batch sizes."""
Predict = Callable[[int, Precision], StepPrediction]
Placed = Callable[[int, Precision, str], StepPrediction]
"""The step at a batch and precision with its input placed as `--data` names."""


def _shares(p: StepPrediction) -> dict[str, float]:
    by_bound = p.time_by_bound()
    total = sum(by_bound.values()) or 1.0
    return {k: v / total for k, v in sorted(by_bound.items(), key=lambda kv: -kv[1])}


def _fmt_shares(shares: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0%}" for k, v in shares.items() if v >= 0.01)


def _time_by_kind(p: StepPrediction) -> dict[str, float]:
    out: dict[str, float] = {}
    for o in p.ops:
        out[o.kind] = out.get(o.kind, 0.0) + o.time_s
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def feed_reason(profile: Profile) -> dict[str, Any]:
    """The gap itself, from the profile's own figures: what the units could consume against what memory feeds."""
    from roofline.hardware import derived
    from roofline.units import format_sci

    consume = derived.compute_bytes_per_s(profile)
    feed = derived.memory_bandwidth(profile)
    sheet = profile.memory.bandwidth_bytes_per_s.value
    ratio = consume.value / sheet
    return {"kind": "feed", "compute_bytes_per_s": consume.value, "compute_formula": consume.with_numbers(),
            "memory_bandwidth_bytes_per_s": sheet, "memory_formula": feed.with_numbers(), "ratio": ratio,
            "text": (f"The arithmetic units can consume {consume.with_numbers()} = {format_sci(consume.value)} "
                     f"B/s, but memory delivers {feed.with_numbers()} = {format_sci(feed.value)} B/s (datasheet "
                     f"{format_sci(sheet)}): "
                     f"{ratio:.1f}x less, so each byte fetched from memory must be reused about {ratio:.0f} times "
                     "(from registers and caches) to keep them busy.")}


def _sustained_note(c: Any, figure: str, unit: float, unit_name: str) -> str:
    """'published measurement, datasheet X' where the applied figure is not the vendor's, else ''."""
    where = c.provenance.get(figure)
    sheet = c.datasheet.get(figure)
    if where in (None, "datasheet", "derived", "none") or sheet is None:
        return ""
    return f"{where}, datasheet {sheet / unit:.0f} {unit_name}"


def roofline_reason(p: StepPrediction, p1: StepPrediction) -> dict[str, Any]:
    ridge = p.ceilings.ridge_point
    ai, ai1 = p.flops / p.bytes, p1.flops / p1.bytes
    c = p.ceilings
    peak = c.peak_flops_per_s
    side = "compute" if ai >= ridge else "memory"
    peak_note = _sustained_note(c, "matrix_flops_per_s", 1e12, "TFLOP/s") if c.matrix_flops_per_s else ""
    feed_note = _sustained_note(c, "dram_bandwidth", 1e9, "GB/s")
    peak_text = f"{peak / 1e12:.1f} TFLOP/s ({c.compute_dtype}{'; ' + peak_note if peak_note else ''})"
    feed_text = f"{c.dram.bandwidth_bytes_per_s / 1e9:.0f} GB/s{f' ({feed_note})' if feed_note else ''}"
    return {
        "kind": "roofline", "ridge_point_flop_per_byte": ridge, "peak_flops_per_s": peak,
        "memory_bandwidth_bytes_per_s": c.dram.bandwidth_bytes_per_s,
        "peak_provenance": c.provenance.get("matrix_flops_per_s" if c.matrix_flops_per_s else "vector_flops_per_s"),
        "memory_bandwidth_provenance": c.provenance.get("dram_bandwidth"),
        "intensity_at_batch_1": ai1, "intensity_at_recommended": ai, "batch_size": p.batch_size,
        "text": (f"{p.device} sustains {peak_text} but memory feeds {feed_text}: an op needs {ridge:.0f} FLOP per "
                 f"byte to be compute-bound. The model does {ai1:.1f} FLOP/byte at batch 1 and {ai:.1f} at batch "
                 f"{p.batch_size}, so on average it sits on the {side} side; weights are read once per "
                 f"batch, so batching raises intensity until activations dominate the bytes."),
    }


def bounds_reason(points: list[StepPrediction]) -> dict[str, Any]:
    rows = [{"batch_size": p.batch_size, "shares": _shares(p), "samples_per_s": p.samples_per_s}
            for p in points]
    text = "; ".join(f"batch {r['batch_size']}: {_fmt_shares(r['shares'])}" for r in rows)
    return {"kind": "bounds", "rows": rows,
            "text": f"Share of device time by what bounds each op: {text}. Overhead-bound ops wait on the "
                    "host's per-op dispatch, which a bigger batch amortizes."}


def top_layers_reason(p: StepPrediction) -> dict[str, Any]:
    kinds = _time_by_kind(p)
    total = sum(kinds.values()) or 1.0
    top = list(kinds.items())[:3]
    return {"kind": "layers", "time_by_op_kind_s": kinds,
            "text": "Where the time goes at the recommended batch: "
                    + ", ".join(f"{k} {v / total:.0%}" for k, v in top) + "."}


def precision_reason(rec: StepPrediction, base: StepPrediction | None, precision: Precision) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "precision", "precision": precision.name, "caveat": precision.caveat}
    if base is None or base.precision == rec.precision:
        out["text"] = f"{precision.name}: {precision.caveat}"
        return out
    comp = sum(o.compute_s for o in base.ops) / max(sum(o.compute_s for o in rec.ops), 1e-30)
    mem = sum(o.memory_s for o in base.ops) / max(sum(o.memory_s for o in rec.ops), 1e-30)
    speedup = base.step_time_s / rec.step_time_s
    c_rec, c_base = rec.ceilings, base.ceilings
    out.update({"speedup_vs_fp32": speedup, "compute_time_ratio": comp, "memory_time_ratio": mem,
                "peak_flops_per_s": c_rec.peak_flops_per_s,
                "fp32_peak_flops_per_s": c_base.peak_flops_per_s,
                "bytes_per_element": precision.storage_bytes})
    out["text"] = (f"{precision.name} is {speedup:.2f}x faster than fp32 at batch {rec.batch_size}: compute time "
                   f"falls {comp:.1f}x ({out['peak_flops_per_s'] / 1e12:.0f} vs "
                   f"{out['fp32_peak_flops_per_s'] / 1e12:.1f} TFLOP/s peak) and memory time {mem:.1f}x "
                   f"({precision.storage_bytes}-byte instead of 4-byte activations). Caveat: {precision.caveat}")
    return out


def choice_reason(advice: Advice, good_enough: float) -> dict[str, Any]:
    """Why the recommended batch and not the fastest one: the sweep's best point usually sits at the largest
    batch that fits, and a user comparing the two tables needs the trade in numbers (what the last few percent
    of throughput would cost in batch, memory and time per step) to see the rule at work."""
    rec = advice.recommended
    best = max(advice.sweep, key=lambda p: p.samples_per_s)
    out = {"kind": "choice", "rule_fraction": good_enough, "batch_size": rec.batch_size, "precision": rec.precision,
           "samples_per_s": rec.samples_per_s, "best_batch_size": best.batch_size,
           "best_precision": best.precision, "best_samples_per_s": best.samples_per_s}
    if best.batch_size == rec.batch_size and best.precision == rec.precision:
        out["text"] = (f"Batch {rec.batch_size} at {rec.precision} is the fastest point of the sweep "
                       f"({rec.samples_per_s:.0f} samples/s).")
        return out
    gain = best.samples_per_s / rec.samples_per_s - 1
    cost = "fewer updates per epoch" if advice.train else "each request waits longer"
    out.update(gain=gain, batch_ratio=best.batch_size / rec.batch_size,
               memory_ratio=best.memory.total / rec.memory.total,
               step_ratio=best.step_time_s / rec.step_time_s)
    out["text"] = (f"Batch {rec.batch_size} is the smallest {rec.precision} batch within {1 - good_enough:.0%} of the "
                   f"best throughput the sweep found ({best.samples_per_s:.0f} samples/s at batch "
                   f"{best.batch_size}, {best.precision}): its {gain:.1%} more samples/s would take "
                   f"{out['batch_ratio']:.3g}x the batch, {out['memory_ratio']:.3g}x the memory and a "
                   f"{out['step_ratio']:.3g}x longer step ({cost}).")
    return out


def batch_neighbours_reason(advice: Advice) -> dict[str, Any]:
    rec = advice.recommended
    rows = []
    for p in advice.neighbours:
        notes = sorted({n for o in p.ops for n in o.notes if n.kind in SHAPE_NOTE_KINDS})
        rows.append({"batch_size": p.batch_size, "samples_per_s": p.samples_per_s,
                     "relative": p.samples_per_s / rec.samples_per_s, "notes": notes[:3]})
    spread = max(r["relative"] for r in rows) - min(r["relative"] for r in rows)
    text = ", ".join(f"{r['batch_size']}: {r['relative']:.1%}" for r in rows)
    why = ("the batch enters a convolution's implicit GEMM only as M = N x P x Q output pixels and a "
           "linear layer's M = batch x tokens; tensor cores need the channel, hidden and vocabulary sizes "
           "(N and K) aligned, not M, so powers of two do not matter here"
           if spread < 0.05 else
           "throughput steps where the tiles of a GEMM spill into a new wave over the SMs/cores")
    return {"kind": "batch_neighbours", "rows": rows, "spread": spread,
            "text": f"Throughput relative to the recommended batch {rec.batch_size}: {text}. Why: {why}."}


def memory_reason(advice: Advice) -> dict[str, Any]:
    rec = advice.recommended
    parts = rec.memory.as_dict()
    total = parts.pop("total")
    biggest = max(parts.items(), key=lambda kv: kv[1])
    return {"kind": "memory", "memory_bytes": total, "capacity_bytes": rec.capacity_bytes,
            "max_batch_size": advice.max_batch_size, "breakdown": parts,
            "text": (f"At batch {rec.batch_size} the step needs {total / 2**30:.2f} GiB of "
                     f"{rec.capacity_bytes / 2**30:.0f} GiB ({biggest[0].replace('_', ' ')} the largest part, "
                     f"{biggest[1] / 2**30:.2f} GiB); the largest batch that fits at {rec.precision} is "
                     f"{advice.max_batch_size}.")}


AUTOGRAD_HOST_RATIO = {"resnet18": 1.10, "mlp": 1.14, "resnet50": 1.19, "bert-base": 1.29, "mobilenetv3-large": 1.49}
"""A host-bound inference forward's wall time with autograd recording against without (torch.no_grad()), fp32 at
batch 1 on an H200 machine's host, each forward between synchronizes, median of 20 (benchmarks/results/
gpu-live-h200-kernels.json, grad section, 2026-11-27; at batch 32, where the device sets the pace, 1.00)."""


def overhead_reason(p1: StepPrediction) -> dict[str, Any]:
    """The host's per-op cost at batch 1 against the device's. Where the host bounds the step on a GPU priced
    with another machine's host costs (the runtime profile), the step follows that machine's CPU, not the
    GPU, so the text names it, quotes how far the record's host-bound runs fell on either side of those costs
    (`track_record.host_bound_spread`: DeepLearningExamples' batch-1 ResNet-50 inference on 2020-2021 V100 and T4
    servers took 1.2-2.6x the step these costs predict, an RTX 5090 desktop of 2025 ran its host-bound steps in a
    fifth to a half of it; benchmarks/LOG.md) and says what takes the host off the critical path."""
    launches = sum(o.launches for o in p1.ops)
    per_op = p1.host_s / launches if launches else 0.0
    host_bound = p1.host_s > p1.device_s
    where = p1.ceilings.provenance.get("dispatch_s", "")
    borrowed = p1.ceilings.is_gpu and where.startswith(RUNTIME_PROVENANCE)
    text = (f"At batch 1 the host spends {p1.host_s * 1e3:.2f} ms dispatching {launches} ops "
            f"({per_op * 1e6:.0f} us each on average) against {p1.device_s * 1e3:.2f} ms of device work"
            + ("; the device waits on Python, so small batches waste it." if host_bound else "."))
    if host_bound and borrowed:
        rows, low, median, high = host_bound_spread()
        text += (f" Those per-op costs come from the {where}; another CPU and framework release pay another price "
                 f"per op: the record's {rows} held-out host-bound runs took {low:.2f}-{high:.2f}x the predicted time "
                 f"(10th to 90th percentile, median {median:.2f}x: older servers slower, a recent desktop faster). "
                 "Calibrate on yours (`roofline calibrate --device cuda`) or replay the step as a "
                 "CUDA graph (torch.compile(mode='reduce-overhead')).")
    if host_bound and not p1.train:
        ratios = AUTOGRAD_HOST_RATIO.values()
        text += (" The prediction assumes the forward runs under torch.no_grad() or torch.inference_mode(): one "
                 f"that records autograd took {min(ratios):.2f}-{max(ratios):.2f}x as long at batch 1 on an "
                 "H200's host (ResNet, MobileNetV3, BERT-base, an MLP; measured).")
    return {"kind": "overhead", "launches_per_step": launches, "dispatch_s": per_op,
            "host_s": p1.host_s, "device_s": p1.device_s, "host_bound": host_bound, "host_costs_from": where,
            "text": text}


ALLOCATOR_ADVICE_SHARE = 0.10
"""Fresh-page faults above this share of a CPU step are worth a changed process environment (issue 16's
threshold); below it the advice would be noise beside the step's other costs."""
TUNING_GUIDE = "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"


def allocator_reason(rec: StepPrediction) -> dict[str, Any] | None:
    """On a CPU, the time the step spends faulting in pages the C heap gave back to the kernel and takes anew,
    when it is more than ALLOCATOR_ADVICE_SHARE of the step, with the setting that keeps them and the step
    time without it (fault time is added to the ops' time, so the step without it is the step less it)."""
    rate = rec.ceilings.page_fault_bytes_per_s
    if rec.ceilings.is_gpu or not rate or rec.fresh_bytes <= 0:
        return None
    fault_s = rec.fresh_bytes / rate
    share = fault_s / rec.step_time_s
    if share <= ALLOCATOR_ADVICE_SHARE:
        return None
    kept_s = rec.step_time_s - fault_s
    env = " ".join(f"{k}={v}" for k, v in KEEP_HEAP_ENV.items())
    return {"kind": "allocator", "fresh_bytes_per_step": rec.fresh_bytes, "page_fault_bytes_per_s": rate,
            "fault_s": fault_s, "step_time_s": rec.step_time_s, "share": share, "step_time_kept_s": kept_s,
            "speedup": rec.step_time_s / kept_s, "environment": dict(KEEP_HEAP_ENV),
            "glibc_tunables": KEEP_HEAP_TUNABLES, "preload": PRELOAD_ALLOCATORS, "source": TUNING_GUIDE,
            "text": (f"At batch {rec.batch_size} the step writes {rec.fresh_bytes / 1e6:.1f} MB into pages the C "
                     f"allocator (glibc malloc) gave back to the kernel and takes anew, each faulted and zeroed on "
                     f"first touch at {rate / 1e9:.2g} GB/s: {fault_s * 1e3:.2f} ms of the {rec.step_time_s * 1e3:.2f}"
                     f" ms step ({share:.0%}). glibc unmaps large blocks on free and trims the heap's free top; "
                     f"start the process with {env} (or GLIBC_TUNABLES={KEEP_HEAP_TUNABLES}), or preload "
                     f"jemalloc or tcmalloc ({PRELOAD_ALLOCATORS}) as PyTorch's CPU tuning guide recommends "
                     f"({TUNING_GUIDE}), and the step is predicted at {kept_s * 1e3:.2f} ms "
                     f"({rec.step_time_s / kept_s:.2f}x); `roofline validate --keep-heap` measures both.")}


TRANSFER_ADVICE_SHARE = ALLOCATOR_ADVICE_SHARE
"""A faster input placement is worth a sentence when it saves more than this share of the step, the threshold the
allocator advice uses: below it the advice would be noise beside the step's other costs."""


def transfer_reason(rec: StepPrediction, placement: str, placed: Placed) -> dict[str, Any] | None:
    """On a GPU, what copying the input costs the recommended step where it is placed, and the step under each
    faster placement (`--data`), when the best of them saves more than TRANSFER_ADVICE_SHARE: the textbook
    lesson that moving data between host and device can cancel the GPU's advantage, in this step's numbers."""
    from roofline.model.data_placement import DATA_PLACEMENTS

    if not rec.ceilings.is_gpu or rec.transfer_s <= 0:
        return None
    precision = get_precision(rec.precision)
    others = {name: placed(rec.batch_size, precision, name).step_time_s for name in DATA_PLACEMENTS
              if name != placement}
    faster = {name: s for name, s in others.items() if s < rec.step_time_s}
    if not faster or 1 - min(faster.values()) / rec.step_time_s <= TRANSFER_ADVICE_SHARE:
        return None
    nbytes = rec.transfer_s * copy_rate(rec.ceilings, DATA_PLACEMENTS[placement].pinned)
    options = "; ".join(f"{step * 1e3:.2f} ms with --data {name} ({DATA_PLACEMENTS[name].label})"
                        for name, step in sorted(faster.items(), key=lambda kv: -kv[1]))
    return {"kind": "transfer", "placement": placement, "input_bytes": nbytes, "transfer_s": rec.transfer_s,
            "step_time_s": rec.step_time_s, "step_time_by_placement_s": {placement: rec.step_time_s, **others},
            "text": (f"At batch {rec.batch_size} each step copies {nbytes / 1e6:.1f} MB of input from "
                     f"{DATA_PLACEMENTS[placement].label} ({rec.transfer_s * 1e3:.2f} ms) and takes "
                     f"{rec.step_time_s * 1e3:.2f} ms; placed otherwise: {options}. Moving data between host and "
                     "device can cancel the GPU's advantage.")}


def explain_advice(advice: Advice, profile: Profile, predict: Predict, good_enough: float,
                   placement: str = "pageable", placed: Placed | None = None) -> list[dict[str, Any]]:
    """All reasons for one piece of advice, most important first; `good_enough` is the advisor's rule (the
    share of the best throughput the recommended batch must reach)."""
    precision = get_precision(advice.recommended_precision)
    rec = advice.recommended
    p1 = predict(1, precision)
    pmax = predict(advice.max_batch_size, precision)
    base = None
    if precision.name != "fp32" and "fp32" in advice.max_batch_by_precision:
        fp32 = get_precision("fp32")
        base = predict(min(rec.batch_size, advice.max_batch_by_precision["fp32"]), fp32)
        rec_same = predict(base.batch_size, precision)
    else:
        rec_same = rec
    points = sorted({p.batch_size: p for p in (p1, rec, pmax)}.values(), key=lambda p: p.batch_size)
    allocator = allocator_reason(rec)
    transfer = transfer_reason(rec, placement, placed) if placed is not None else None
    return [choice_reason(advice, good_enough), feed_reason(profile), roofline_reason(rec, p1),
            bounds_reason(points), top_layers_reason(rec),
            *([allocator] if allocator else []), *([transfer] if transfer else []),
            precision_reason(rec_same, base, precision), batch_neighbours_reason(advice), memory_reason(advice),
            overhead_reason(p1)]

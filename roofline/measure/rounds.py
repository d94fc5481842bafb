"""The probes every prediction rests on, measured in rounds spread over a calibration and pooled.

On a shared machine the speed of everything drifts, in spells longer than one probe's window. Measured on
this kind of VM: 10-second medians of a 512^3 fp32 product range from 122 to 154 GFLOP/s over three
minutes (median 134); a one-element conv2d call costs ~32 us or 45-55 us, switching every few seconds to
tens of seconds; DRAM streams 18-28 GB/s within one minute. A figure measured once, in a few seconds, lands
in whichever spell that window hits: three full calibrations read a fp32 peak of 138, 142 and 170 GFLOP/s,
and conv2d calls of 34, 44 and 57 us. The figures one model's prediction combines then come from different
spells, and the prediction follows the calibration's luck (MobileNetV3-small at batch 1 was predicted within
-15..+13% when its probes were timed interleaved with the step, -38% with one calibration's).

So a calibration measures these probes in ROUNDS rounds, each with 1 / ROUNDS of its budget, placed between
its other steps, and pools each probe's samples (`Measurement.merged`): every figure is a median over the same
minute, as a model's step is timed over many spells.

Every figure a prediction reads is measured so, the memory sweep (DRAM and cache plateaus), the layout
conversion, first-touch and synchronization probes included: a figure measured in one window cannot tell
that it was taken in a spell. On a 2-core Zen 4 VM of this project a 64 MiB copy ran between 25 and 74 GB/s
from one second to the next (a 0.5 s probe every 1.7 s for 40 s), and two quick calibrations, which then
measured DRAM once, read 37.5 and 28.6 GB/s without flagging it. A figure that is a difference of two timings
(a synchronization's cost, a first touch's, a layout conversion's) is computed in each round and kept by
`kept_value`, since two steady timings can still differ unsteadily.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from roofline.measure.timing import Measurement, pooled

ROUNDS = 3
STEADY_LIMIT = 0.10
"""Rounds whose medians lie further apart than this mark a figure that cannot be measured steadily now: two
calibrations back to back should agree within it (issue 16), and a figure that cannot keeps its middle round,
slower than its fastest (`Measurement.steadied`), and is listed in the profile's `measured.unsteady`."""
DISPATCH_BUDGET_S = 0.2
"""Seconds per probe of `kernels.dispatch_by_kind`, over all rounds."""
HOST_BUDGET_S = 0.3
"""Seconds per probe of the tiny-op dispatch and each half of the synchronization probe, over all rounds."""


def kept(m: Measurement, unsteady: dict[str, float], context: str = "") -> Measurement:
    """`m` as `Measurement.steadied` keeps it at STEADY_LIMIT, noting in `unsteady` (by its label and `context`)
    a figure whose windows disagree."""
    steadied = m.steadied(STEADY_LIMIT)
    if steadied is not m:
        unsteady[f"{m.label}{context}"] = m.window_spread
    return steadied


def kept_value(values: Sequence[float], name: str, unsteady: dict[str, float], cost: bool) -> float:
    """A figure computed once per round from that round's timings: their median when the rounds agree within
    STEADY_LIMIT, else the upper median by slowness (the slower of two, the middle of three), as
    `Measurement.steadied` keeps a timing, noted in `unsteady` under `name`. `cost`: larger is slower (a time
    per step), else larger is faster (a rate). A difference of two timings can read zero in one round (the
    cost under that round's noise) and not in another: no ratio to zero is finite, so such a spread is noted
    relative to the largest round, 1.0 (100%), which still marks the figure unsteady."""
    import statistics

    lo, hi = min(values), max(values)
    spread = (hi - lo) / (lo if lo > 0 else hi) if hi > 0 else 0.0
    if spread <= STEADY_LIMIT:
        return statistics.median(values)
    unsteady[name] = spread
    by_speed = sorted(values, reverse=not cost)
    return by_speed[len(by_speed) // 2]


def steady_points(items: list[Any], unsteady: dict[str, float]) -> list[Any]:
    """Points of a sweep (dataclasses with a `measurement`), each `kept`."""
    return [replace(p, measurement=kept(p.measurement, unsteady)) for p in items]


def pool_points(first: list[Any], second: list[Any], key: Callable[[Any], Any]) -> list[Any]:
    """Points of one sweep (dataclasses with a `measurement`) pooled with the same points measured again, matched
    by `key` (a GEMM size, a bandwidth kernel and working set); a point of only one window keeps its samples,
    in `first`'s order then `second`'s."""
    again = {key(p): p for p in second}
    seen = {key(p) for p in first}
    return [replace(p, measurement=p.measurement.merged(again[key(p)].measurement)) if key(p) in again else p
            for p in first] + [p for p in second if key(p) not in seen]


def _pool_conv(first: list[Any], second: list[Any]) -> list[Any]:
    """Convolution results (forward and training measurements) pooled shape by shape."""
    again = {r.shape: r for r in second}
    return [replace(r, measurement=r.measurement.merged(again[r.shape].measurement),
                    training=r.training.merged(again[r.shape].training)) if r.shape in again else r
            for r in first] or list(second)


@dataclass
class RoundProbes:
    """The pooled samples of every round so far (`round`); what each probe measures is in its own module."""

    device: str
    llc_bytes: int | None
    gemm_dtypes: Sequence[str]
    """Torch dtypes whose GEMM curve is measured in rounds: the ones predictions use (fp32 on a CPU)."""
    gemm_sizes: Sequence[int]
    conv_shapes: Sequence[Any]
    gemm_budget_s: float
    stream_budget_s: float
    """Budget of the skinny and outer-product surfaces and of the kernels' streaming rates."""
    conv_budget_s: float
    gemm: dict[str, list[Any]] = field(default_factory=dict)
    skinny: list[Any] = field(default_factory=list)
    outer: list[Any] = field(default_factory=list)
    rows: list[Any] = field(default_factory=list)
    """One-row products by the weight's layout and row length (`gemm.row_sweep`)."""
    conv: list[Any] = field(default_factory=list)
    kernel_rates: list[Any] = field(default_factory=list)
    dispatch: dict[str, Measurement] = field(default_factory=dict)
    """Per-call cost of a one-element layer of each kind (`kernels.dispatch_by_kind`)."""
    in_context: dict[str, Measurement] = field(default_factory=dict)
    back_to_back: dict[str, Measurement] = field(default_factory=dict)
    """Convolution fixed-cost probes, in rotation and back to back (`conv.fixed_costs`)."""
    memory_sizes: Sequence[int] = ()
    """Working sets of the bandwidth sweep (`memory.sweep`, `memory.cuda_sweep` on a GPU); none: not swept."""
    memory_kernels: Sequence[str] = ()
    memory_budget_s: float = 0.0
    host_probes: bool = False
    """Also time the host's figures each round: dispatch of a tiny op, a synchronization point, and on a CPU the
    layout conversion and first-touch probes."""
    bandwidth: list[Any] = field(default_factory=list)
    tiny: Measurement | None = None
    """Dispatch of a one-element add (`overhead.dispatch`)."""
    syncs: list[Any] = field(default_factory=list)
    """`overhead.SyncCost` of each round."""
    layouts: list[list[Any]] = field(default_factory=list)
    """`conv.ConversionRate`s of each round."""
    faults: list[tuple[Measurement, Measurement]] = field(default_factory=list)
    """(fill existing, fill fresh) of each round (`kernels.fault_rate`)."""

    def round(self) -> None:
        """Time every probe once more with 1 / ROUNDS of its budget, and pool."""
        from roofline.measure.probes import conv, gemm, kernels

        share = 1 / ROUNDS
        for dtype in self.gemm_dtypes:
            points = gemm.sweep("torch", dtype, self.gemm_sizes, device=self.device, llc_bytes=self.llc_bytes,
                                budget_s=self.gemm_budget_s * share)
            self.gemm[dtype] = pool_points(self.gemm.get(dtype, []), points, lambda p: p.n)
        self.skinny = pool_points(self.skinny, gemm.skinny_sweep(self.device, self.stream_budget_s * share),
                                  lambda p: (p.small, p.other))
        self.outer = pool_points(self.outer, gemm.outer_sweep(self.device, self.stream_budget_s * share,
                                                              self.llc_bytes), lambda p: (p.small, p.other))
        self.conv = _pool_conv(self.conv, [conv.measure(s, self.device, self.conv_budget_s * share)
                                           for s in self.conv_shapes])
        self.rows = pool_points(self.rows, gemm.row_sweep(self.device, self.stream_budget_s * share),
                                lambda p: (p.layout, p.row_elements))
        self.kernel_rates = pool_points(self.kernel_rates, kernels.streaming_rates(
            self.device, self.llc_bytes, self.stream_budget_s * share), lambda r: r.key)
        self.dispatch = pooled(self.dispatch, kernels.dispatch_by_kind(self.device, DISPATCH_BUDGET_S * share))
        in_context, back_to_back = conv.fixed_costs(self.device, self.conv_budget_s * share)
        self.in_context = pooled(self.in_context, in_context)
        self.back_to_back = pooled(self.back_to_back, back_to_back)
        if self.memory_sizes:
            self._bandwidth_round(share)
        if self.host_probes:
            self._host_round(share)

    def _bandwidth_round(self, share: float) -> None:
        from roofline.measure.probes import memory

        budget = self.memory_budget_s * share
        points = (memory.cuda_sweep(self.memory_sizes, budget_s=budget) if self.device == "cuda" else
                  memory.sweep(self.memory_sizes, self.memory_kernels, budget_s=budget))
        self.bandwidth = pool_points(self.bandwidth, points, lambda p: (p.kernel, p.working_set_bytes))

    def _host_round(self, share: float) -> None:
        from roofline.measure.probes import conv, kernels, overhead

        tiny = overhead.dispatch("cpu", budget_s=HOST_BUDGET_S * share)
        self.tiny = tiny if self.tiny is None else self.tiny.merged(tiny)
        self.syncs.append(overhead.sync_cost(self.device, budget_s=HOST_BUDGET_S * share))
        if self.device == "cpu":
            self.layouts.append(conv.layout_conversion(self.llc_bytes or 0, self.device,
                                                       self.gemm_budget_s * share))
            existing, fresh = kernels.page_fault_probe(self.memory_budget_s * share)
            self.faults.append((existing, fresh))

    def steady(self) -> dict[str, float]:
        """Replace every pooled figure whose rounds disagree by more than STEADY_LIMIT with its middle round
        (`kept`), and return those figures' labels with how far apart their rounds were."""
        unsteady: dict[str, float] = {}
        self.gemm = {dtype: steady_points(items, unsteady) for dtype, items in self.gemm.items()}
        self.skinny, self.outer = steady_points(self.skinny, unsteady), steady_points(self.outer, unsteady)
        self.rows = steady_points(self.rows, unsteady)
        self.kernel_rates = steady_points(self.kernel_rates, unsteady)
        self.conv = [replace(r, measurement=kept(r.measurement, unsteady), training=kept(r.training, unsteady))
                     for r in self.conv]
        self.dispatch = {k: kept(m, unsteady) for k, m in self.dispatch.items()}
        self.in_context = {k: kept(m, unsteady, " (in context)") for k, m in self.in_context.items()}
        self.back_to_back = {k: kept(m, unsteady, " (back to back)") for k, m in self.back_to_back.items()}
        self.bandwidth = steady_points(self.bandwidth, unsteady)
        if self.tiny is not None:
            self.tiny = kept(self.tiny, unsteady)
        return unsteady

    def sync_s(self, unsteady: dict[str, float]) -> float:
        """A synchronization point's cost per step, computed each round and kept by `kept_value`."""
        return kept_value([s.per_step_s for s in self.syncs], "sync_s", unsteady, cost=True)

    def layout_conversion(self, unsteady: dict[str, float]) -> dict[str, float]:
        """Bytes per second of NCHW <-> channel-blocked conversion per level (cache, DRAM), each computed per
        round and kept by `kept_value`; a level whose conversion some round could not see (NCHW as fast as
        channels-last) is left out."""
        out = {}
        for level in {r.level for rates in self.layouts for r in rates}:
            values = [r.bytes_per_s for rates in self.layouts for r in rates if r.level == level]
            if all(v != float("inf") for v in values):
                out[level] = kept_value(values, f"layout_conversion_bytes_per_s.{level}", unsteady, cost=False)
        return out

    def page_fault_bytes_per_s(self, unsteady: dict[str, float]) -> float | None:
        """First-touch rate, computed each round, kept by `kept_value`; None where a round saw no extra time."""
        from roofline.measure.probes.kernels import fault_rate

        values = [fault_rate(existing, fresh) for existing, fresh in self.faults]
        if not values or any(v == float("inf") for v in values):
            return None
        return kept_value(values, "page_fault_bytes_per_s", unsteady, cost=False)

    def measurements(self) -> list[Measurement]:
        """Every pooled measurement, for the calibration's warnings."""
        return [*(p.measurement for points in self.gemm.values() for p in points),
                *(p.measurement for p in (*self.skinny, *self.outer, *self.rows, *self.kernel_rates)),
                *(m for r in self.conv for m in (r.measurement, r.training)),
                *self.dispatch.values(), *self.in_context.values(),
                *(self.back_to_back.values() if self.device == "cpu" else ()),
                *(p.measurement for p in self.bandwidth), *([self.tiny] if self.tiny is not None else ()),
                *(m for s in self.syncs for m in (s.synced, s.queued)),
                *(m for rates in self.layouts for r in rates for m in (r.nchw, r.channels_last)),
                *(m for pair in self.faults for m in pair)]

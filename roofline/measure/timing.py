"""The one place roofline times anything: warm-up, inner-loop growth, repeats, raw samples, median and IQR.

A callable is timed in three phases. Warm-up: call it once (first-call costs: allocation, JIT, page faults,
library initialisation). Growth: time `number` back-to-back calls, growing `number` until one sample lasts at
least `min_sample_s`, so the clock's resolution and the cost of reading it are negligible. Repeats: take
samples until the relative inter-quartile range is below `target_rel_iqr` (after `min_repeats`), the time
budget ends, or `max_repeats` is reached. The device is synchronized before every clock read (`sync`), so a
GPU's queued work is inside the sample. Every sample is kept; the frozen `Measurement` computes statistics
from them and carries warnings at named thresholds, as pyperf and torch.utils.benchmark do.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

MIN_SAMPLE_S = 1e-3
"""A sample shorter than this is dominated by timer resolution and call overhead (pyperf warns below 1 ms)."""
SPREAD_WARN_REL_IQR = 0.10
"""Relative IQR above which a measurement is flagged as noisy (pyperf's 10% standard-deviation warning)."""
TARGET_REL_IQR = 0.02
"""Repeats stop early once the relative IQR falls below this."""
MIN_REPEATS = 5
"""Fewest samples before the spread may stop the repeats: quartiles of fewer points mean little."""
MAX_REPEATS = 200
GROWTH_LIMIT = 10
GROWTH_TARGET = 1.25
"""The inner loop grows until a sample lasts this many times min_sample_s, so that the repeats, which vary
by some percent, still last at least min_sample_s."""
"""Largest factor the inner loop grows by per step, so a first call inflated by warm-up does not overshoot."""
FLUSH_FACTOR = 2
"""Rotating buffers span this many times the last-level cache, so each call finds its operands in DRAM."""
SYS_CPU = Path("/sys/devices/system/cpu")


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted data (numpy's default method, no numpy needed)."""
    if not sorted_values:
        raise ValueError("quantile of no samples")
    position = q * (len(sorted_values) - 1)
    lo = math.floor(position)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (position - lo)


@dataclass(frozen=True)
class Measurement:
    """Per-call times of one benchmark (seconds), with the work one call does and how the repeats ended."""

    label: str
    samples_s: tuple[float, ...]
    """Each sample is (time of `number` back-to-back calls) / number."""
    number: int
    """Calls per sample (inner loop)."""
    stop_reason: str
    """'spread' (relative IQR below target), 'budget' (time ran out) or 'max_repeats'."""
    work: float = 0.0
    """Units of work one call does (FLOP, or bytes read + written), for `rate`."""
    work_unit: str = ""
    cold: bool = False
    """Each sample is one call after a setup (`Timer.setup`): short samples by design, so the 1 ms rule does
    not apply; perf_counter's resolution (well under a microsecond) is still small against a call."""
    windows: tuple[tuple[float, ...], ...] = ()
    """The sample sets of the windows `merged` pooled, in order (empty: one window, `samples_s`)."""

    @property
    def window_medians(self) -> tuple[float, ...]:
        return tuple(quantile(sorted(w), 0.5) for w in self.windows) if self.windows else (self.median,)

    @property
    def window_spread(self) -> float:
        """How far the windows' medians lie apart: (slowest - fastest) / fastest; 0 for one window."""
        medians = self.window_medians
        return max(medians) / min(medians) - 1 if min(medians) > 0 else math.inf

    def steadied(self, limit: float) -> Measurement:
        """This measurement, or where its windows' medians lie more than `limit` apart (the figure cannot be
        measured steadily on this machine now) one window alone: the upper median of the windows by their
        medians, so the slower of two (the conservative figure), and of three the middle one, slower than the
        fastest, while one window stalled by a job elsewhere on the machine (a 64^3 product measured 1500x
        slower in one round here) does not become the figure, as the slowest window would."""
        if self.window_spread <= limit:
            return self
        ranked = sorted(self.windows, key=lambda w: quantile(sorted(w), 0.5))
        return replace(self, samples_s=tuple(ranked[len(ranked) // 2]))

    @property
    def sorted_s(self) -> tuple[float, ...]:
        return tuple(sorted(self.samples_s))

    @property
    def median(self) -> float:
        return quantile(self.sorted_s, 0.5)

    @property
    def q1(self) -> float:
        return quantile(self.sorted_s, 0.25)

    @property
    def q3(self) -> float:
        return quantile(self.sorted_s, 0.75)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def min(self) -> float:
        return self.sorted_s[0]

    @property
    def spread(self) -> float:
        """Relative inter-quartile range: IQR / median."""
        return self.iqr / self.median if self.median > 0 else math.inf

    @property
    def sample_s(self) -> float:
        """Length of one sample (all `number` calls), the figure the 1 ms rule applies to."""
        return self.median * self.number

    @property
    def rate(self) -> float:
        """Work per second at the median time (FLOP/s, bytes/s)."""
        return self.work / self.median if self.median > 0 else math.inf

    @property
    def best_rate(self) -> float:
        """Work per second of the fastest sample: what the hardware reaches undisturbed, an upper bound. The
        calibrated ceilings use `rate` instead: a model's steps are timed by their median, on the same
        machine, disturbed as often as the calibration's samples were."""
        return self.work / self.min if self.min > 0 else math.inf

    def merged(self, other: Measurement) -> Measurement:
        """One measurement of both sample sets (per-call times, so windows with other inner-loop counts pool
        too): a re-measurement seconds later widens the sample over the machine's states."""
        return Measurement(self.label, self.samples_s + other.samples_s, max(self.number, other.number),
                           other.stop_reason, self.work, self.work_unit, self.cold and other.cold,
                           (self.windows or (self.samples_s,)) + (other.windows or (other.samples_s,)))

    @property
    def warnings(self) -> tuple[str, ...]:
        out = []
        if self.spread > SPREAD_WARN_REL_IQR:
            out.append(f"{self.label}: spread {self.spread:.0%} (IQR/median) exceeds {SPREAD_WARN_REL_IQR:.0%}; "
                       "the machine is busy or the clock varies")
        if self.sample_s < MIN_SAMPLE_S and not self.cold:
            out.append(f"{self.label}: samples last {self.sample_s * 1e3:.3f} ms, under {MIN_SAMPLE_S * 1e3:g} ms; "
                       "timer resolution and overhead are not negligible")
        return tuple(out)

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "median_s": self.median, "iqr_s": self.iqr, "min_s": self.min,
                "spread": self.spread, "number": self.number, "repeats": len(self.samples_s),
                "stop_reason": self.stop_reason, "work": self.work, "work_unit": self.work_unit,
                "rate": self.rate, "best_rate": self.best_rate, "warnings": list(self.warnings)}


@dataclass
class Timer:
    """Times `fn` (no arguments) with the discipline described in the module docstring."""

    fn: Callable[[], Any]
    label: str = "benchmark"
    work: float = 0.0
    work_unit: str = ""
    budget_s: float = 1.0
    """Wall time the growth and repeat phases may take together (a single slow call may exceed it)."""
    min_sample_s: float = MIN_SAMPLE_S
    target_rel_iqr: float = TARGET_REL_IQR
    min_repeats: int = MIN_REPEATS
    max_repeats: int = MAX_REPEATS
    clock: Callable[[], float] = time.perf_counter
    sync: Callable[[], Any] | None = None
    """Called before every clock read: torch.cuda.synchronize on a GPU, so queued kernels are inside."""
    setup: Callable[[], Any] | None = None
    """Run before every sample, outside the clock; a sample is then one call (no inner loop), so each call
    starts from the state `setup` leaves (e.g. `evict_private_caches`: a layer of a model runs once per
    step, after other layers evicted its code and data)."""
    _deadline: float = field(default=0.0, init=False, repr=False)

    def _time(self, number: int) -> float:
        if self.setup:
            self.setup()
        if self.sync:
            self.sync()
        start = self.clock()
        for _ in range(number):
            self.fn()
        if self.sync:
            self.sync()
        return self.clock() - start

    def _grow(self) -> tuple[int, float]:
        """Smallest tried inner-loop count whose sample lasts GROWTH_TARGET x min_sample_s (or what the budget
        allowed)."""
        number = 1
        elapsed = self._time(number)
        target = self.min_sample_s * GROWTH_TARGET
        while elapsed < target and self.clock() < self._deadline:
            factor = target / elapsed if elapsed > 0 else GROWTH_LIMIT
            number = max(number + 1, math.ceil(number * min(GROWTH_LIMIT, factor)))
            elapsed = self._time(number)
        return number, elapsed

    def measure(self) -> Measurement:
        """Warm up, grow the inner loop, then repeat until the spread is small or the budget ends."""
        self._time(1)
        self._deadline = self.clock() + self.budget_s
        number, elapsed = (1, self._time(1)) if self.setup else self._grow()
        samples = [elapsed / number]
        reason = "max_repeats"
        while len(samples) < self.max_repeats:
            if len(samples) >= self.min_repeats:
                ordered = sorted(samples)
                median = quantile(ordered, 0.5)
                if median > 0 and (quantile(ordered, 0.75) - quantile(ordered, 0.25)) / median < self.target_rel_iqr:
                    reason = "spread"
                    break
            if self.clock() >= self._deadline:
                reason = "budget"
                break
            samples.append(self._time(number) / number)
        return Measurement(self.label, tuple(samples), number, reason, self.work, self.work_unit,
                           cold=self.setup is not None)


INTERLEAVE_ROUNDS = 4
"""Rounds `interleaved` spreads each probe's samples over (this machine's speed swings between two states
lasting from a fraction of a second to seconds)."""


def interleaved(timers: dict[str, Timer], rounds: int = INTERLEAVE_ROUNDS) -> dict[str, Measurement]:
    """Measure several probes round-robin, each round with 1/rounds of its budget, and pool each probe's
    samples: drift of the machine's speed then lands on every probe alike instead of on whichever one a
    slow spell happened to cover."""
    out: dict[str, Measurement] = {}
    for _ in range(rounds):
        for key, timer in timers.items():
            window = replace(timer, budget_s=timer.budget_s / rounds).measure()
            out[key] = out[key].merged(window) if key in out else window
    return out


def rotated(timers: dict[str, Timer]) -> dict[str, Measurement]:
    """Measure cold probes (each timer has a `setup`) one call at a time in rotation: setup, A, setup, B, ...

    A layer of a model runs after other kinds of layer, whose code (the dispatcher's and the kernel library's
    paths, the Python objects of another module) took its place in the private caches and branch predictors.
    A data sweep between two calls of the same probe evicts the data but leaves the code warm: measured here
    by `kernels.dispatch_by_kind`, a one-element BatchNorm costs 14 us swept and 20 us rotated among the
    other kinds, a ReLU 5.3 and 7.1 us (and 43-57 and 19-23 us rotated among heavier layers).
    Stops when every probe has `max_repeats` samples or the timers' summed budget is spent."""
    for timer in timers.values():
        timer._time(1)
    samples: dict[str, list[float]] = {key: [] for key in timers}
    first = next(iter(timers.values()))
    deadline = first.clock() + sum(t.budget_s for t in timers.values())
    reason = "budget"
    while first.clock() < deadline:
        if all(len(samples[key]) >= t.max_repeats for key, t in timers.items()):
            reason = "max_repeats"
            break
        for key, timer in timers.items():
            samples[key].append(timer._time(1))
    return {key: Measurement(t.label, tuple(samples[key]), 1, reason, t.work, t.work_unit, cold=True)
            for key, t in timers.items()}


def pooled(first: dict[str, Measurement], second: dict[str, Measurement]) -> dict[str, Measurement]:
    """Two windows of the same probes, each probe's samples merged (`Measurement.merged`); a probe timed in only
    one window keeps that window's samples."""
    return {key: first[key].merged(second[key]) if key in first and key in second else first.get(key) or second[key]
            for key in {**first, **second}}


def _largest_data_cache(sys_cpu: Path, max_sharers: int | None) -> int | None:
    """Size of cpu0's highest-level data/unified cache shared by at most `max_sharers` CPUs (any when None)."""
    from roofline.hardware.detect import parse_size

    best: tuple[int, int] | None = None
    for index in (sys_cpu / "cpu0" / "cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = parse_size((index / "size").read_text())
            sharers = _cpu_count((index / "shared_cpu_list").read_text()) if max_sharers else 0
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and (max_sharers is None or sharers <= max_sharers) and (
                best is None or level > best[0]):
            best = (level, size)
    return best[1] if best else None


def last_level_cache_bytes(sys_cpu: Path = SYS_CPU) -> int | None:
    """Size of cpu0's highest-level data/unified cache from sysfs, or None where sysfs has no caches."""
    return _largest_data_cache(sys_cpu, None)


def rotation_count(set_bytes: int, flush_bytes: int, max_sets: int = 4096) -> int:
    """How many copies of an operand set (each `set_bytes`) cover `flush_bytes`: at least 1, at most max_sets."""
    if set_bytes <= 0:
        raise ValueError("set_bytes must be positive")
    return max(1, min(max_sets, math.ceil(flush_bytes / set_bytes)))


class Rotation:
    """Cycles through several copies of a benchmark's operands so each call reads them cold from DRAM.

    nvbench flushes the L2 between samples; between back-to-back calls of an inner loop the equivalent is to
    give each call operands that were evicted since their last use: copies spanning FLUSH_FACTOR x LLC.
    """

    def __init__(self, make: Callable[[], Any], set_bytes: int, llc_bytes: int | None) -> None:
        count = rotation_count(set_bytes, FLUSH_FACTOR * llc_bytes) if llc_bytes else 1
        self.sets = [make() for _ in range(count)]
        self._i = 0

    def next(self) -> Any:
        item = self.sets[self._i]
        self._i = (self._i + 1) % len(self.sets)
        return item


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
              "OPENBLAS_L2_SIZE", "TORCH_NUM_THREADS")
"""Environment variables that change how many threads BLAS / OpenMP use, or which kernels they pick."""


def thread_settings() -> dict[str, str | int | None]:
    """Thread counts the libraries will use: CPUs this process may run on, torch's pool (if torch is
    loaded), threadpoolctl's view of BLAS/OpenMP pools (if installed), and the environment variables."""
    import sys

    settings: dict[str, str | int | None] = {"cpus_available": len(os.sched_getaffinity(0))
                                             if hasattr(os, "sched_getaffinity") else os.cpu_count()}
    if "torch" in sys.modules:
        settings["torch_threads"] = sys.modules["torch"].get_num_threads()
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        threadpool_info = None
    if threadpool_info is not None:
        for pool in threadpool_info():
            settings[f"threadpool_{pool.get('internal_api')}"] = f"{pool.get('num_threads')} threads, " \
                f"{pool.get('architecture', '?')}"
    for name in THREAD_ENV:
        settings[name.lower()] = os.environ.get(name)
    return settings


def evict_private_caches(cache_bytes: int | None = None) -> Callable[[], None]:
    """A setup for `Timer` that sweeps a buffer twice the size of each core's private (L2) cache, on every
    thread, as the layers between two calls of one layer do in a model: a tiny layer then costs its cold
    call (here a one-element BatchNorm 12.8 us against 8.7 us called back to back; ReLU 4.8 against 2.5)."""
    import torch

    size = cache_bytes if cache_bytes else private_cache_bytes() or 2**20
    buffer = torch.zeros(FLUSH_FACTOR * size // 4)

    def sweep() -> None:
        buffer.add_(1.0)

    return sweep


def _cpu_count(cpu_list: str) -> int:
    """CPUs in a sysfs list such as '0', '0-1' or '0,64'."""
    count = 0
    for part in cpu_list.strip().split(","):
        lo, _, hi = part.partition("-")
        count += int(hi) - int(lo) + 1 if hi else 1
    return count


def private_cache_bytes(sys_cpu: Path = SYS_CPU) -> int | None:
    """Size of cpu0's largest data cache shared with no other core (only with its SMT siblings): its L2 on
    current x86 and Arm server parts."""
    try:
        siblings = _cpu_count((sys_cpu / "cpu0" / "topology" / "thread_siblings_list").read_text())
    except (OSError, ValueError):
        siblings = 1
    return _largest_data_cache(sys_cpu, siblings)

"""Memory bandwidth over a working-set sweep: one plateau per cache level, then DRAM.

Kernels (STREAM's four, on float64 numpy arrays, results written with `out=` so no temporary is allocated):
copy c = a (`np.positive` into `out`: 2 array passes, 1 read + 1 write), scale b = s*c (2), add c = a + b
(3), and triad a = b + s*c, which numpy computes in two passes, a = s*c then a += b (5 passes: read c,
write a, read a, read b, write a).
Bandwidth counts the bytes of every pass read or written (write-allocate traffic is not counted, as STREAM).

A working set smaller than a cache would be dominated by numpy's per-call overhead (about 1 us) if each call
touched it once, so each call sweeps it R times: the operands are viewed as an (R, n) array whose rows all
alias the same n elements (stride 0), so one ufunc call streams R x n elements that stay cache-resident.
One thread per available CPU runs the kernel on its own share of the working set (numpy releases the GIL in
its loops), so the sweep measures the whole chip: private caches add up over cores, as
`derived.cache_total_bytes` counts them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from roofline.measure.timing import Measurement, Timer

ELEMENT_BYTES = 8
"""float64."""
KERNELS = {"copy": 2, "scale": 2, "add": 3, "triad": 5}
"""kernel -> array passes per element (reads + writes), as the module docstring counts them."""
ARRAYS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
"""kernel -> distinct arrays, which together make up the working set."""
MIN_WORKING_SET_BYTES = 4 * 1024
DRAM_FACTOR = 4
"""The sweep ends at this many times the last-level cache, well past where it can hold the data."""
PER_CALL_BYTES_PER_THREAD = 32 * 2**20
"""Traffic one thread moves per timed call: thread-pool hand-off (tens of us) stays a few % of the call."""
PLATEAU_MARGIN = 2
"""A working set counts toward a cache level's plateau only when at most 1/2 of that level's capacity and
above the previous level's: near the edge the two levels mix."""
DRAM_MARGIN = DRAM_FACTOR
"""A working set counts as DRAM from 4x the last-level cache: triad's second pass re-reads the array its first
pass wrote, which at 2x LLC is still partly cached (measured here: 67 GB/s at 2x against 36 GB/s at 4x)."""


def working_sets(llc_bytes: int, step: float = 2.0) -> list[int]:
    """Sizes from 4 KiB to DRAM_FACTOR x LLC, each `step` times the last (the end point always included)."""
    top = DRAM_FACTOR * llc_bytes
    sizes = []
    size = float(MIN_WORKING_SET_BYTES)
    while size < top:
        sizes.append(int(size))
        size *= step
    sizes.append(top)
    return sizes


def _kernel(name: str, n: int, repeats: int) -> Callable[[], object]:
    import numpy as np
    from numpy.lib.stride_tricks import as_strided

    arrays = [np.full(n, 1.0 + i) for i in range(ARRAYS[name])]
    views = [as_strided(a, (repeats, n), (0, ELEMENT_BYTES)) for a in arrays]
    s = 3.0
    if name == "copy":
        return lambda: np.positive(views[0], out=views[1])
    if name == "scale":
        return lambda: np.multiply(views[1], s, out=views[0])
    if name == "add":
        return lambda: np.add(views[0], views[1], out=views[2])

    def triad():
        np.multiply(views[2], s, out=views[0])
        np.add(views[0], views[1], out=views[0])

    return triad


@dataclass(frozen=True)
class BandwidthPoint:
    kernel: str
    working_set_bytes: int
    measurement: Measurement

    @property
    def bytes_per_s(self) -> float:
        return self.measurement.rate


def measure_point(kernel: str, working_set_bytes: int, threads: int, pool: ThreadPoolExecutor,
                  budget_s: float) -> BandwidthPoint:
    """Bandwidth of one kernel at one total working set, `threads` threads each on its own share."""
    per_thread = working_set_bytes / threads
    n = max(1, int(per_thread / (ARRAYS[kernel] * ELEMENT_BYTES)))
    traffic_per_sweep = KERNELS[kernel] * n * ELEMENT_BYTES
    repeats = max(1, math.ceil(PER_CALL_BYTES_PER_THREAD / traffic_per_sweep))
    calls = [_kernel(kernel, n, repeats) for _ in range(threads)]

    def run() -> None:
        for _ in pool.map(lambda f: f(), calls):
            pass

    timer = Timer(run, label=f"{kernel} {working_set_bytes} B", work=threads * repeats * traffic_per_sweep,
                  work_unit="byte", budget_s=budget_s)
    return BandwidthPoint(kernel, working_set_bytes, timer.measure())


def sweep(sizes: Sequence[int], kernels: Sequence[str] = tuple(KERNELS), threads: int | None = None,
          budget_s: float = 0.2, progress: Callable[[], None] | None = None) -> list[BandwidthPoint]:
    """Every kernel at every working set; `progress` is called after each point."""
    threads = threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    points = []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for size in sizes:
            for kernel in kernels:
                points.append(measure_point(kernel, size, threads, pool, budget_s))
                if progress:
                    progress()
    return points


@dataclass(frozen=True)
class Plateau:
    level: str
    lo_bytes: float
    """Working sets above this (exclusive) ..."""
    hi_bytes: float
    """... and up to this (inclusive) count toward the level."""
    bandwidth_bytes_per_s: float | None
    working_set_bytes: int | None
    """The working set where the best kernel's bandwidth was measured."""


def plateaus(points: Sequence[BandwidthPoint], cache_totals: Sequence[tuple[str, float]]) -> list[Plateau]:
    """Each cache level's bandwidth from the sizes the detected capacities assign to it, then DRAM.

    `cache_totals` is [(level, total bytes on the chip)] fastest first. A level's bandwidth is the best
    kernel's median over its sizes; the working set reported is the point of that kernel nearest the middle.
    Triad does not count toward DRAM: its second pass re-reads the array its first pass just wrote, and at
    4x LLC part of that array is still in the LLC (measured here: triad 57 GB/s where add reached 42).
    """
    bounds = []
    previous = 0.0
    for level, total in cache_totals:
        bounds.append((level, previous, total / PLATEAU_MARGIN))
        previous = total
    bounds.append(("DRAM", previous * DRAM_MARGIN - 1, math.inf))
    out = []
    for level, lo, hi in bounds:
        inside = [p for p in points if lo < p.working_set_bytes <= hi and (level != "DRAM" or p.kernel != "triad")]
        best_bw, best_ws = None, None
        for kernel in {p.kernel for p in inside}:
            rates = sorted(p.bytes_per_s for p in inside if p.kernel == kernel)
            median = rates[len(rates) // 2] if len(rates) % 2 else (rates[len(rates) // 2 - 1] +
                                                                    rates[len(rates) // 2]) / 2
            if best_bw is None or median > best_bw:
                mine = sorted((p for p in inside if p.kernel == kernel), key=lambda p: p.working_set_bytes)
                best_bw, best_ws = median, mine[len(mine) // 2].working_set_bytes
        out.append(Plateau(level, lo, hi, best_bw, best_ws))
    return out


TORCH_KERNELS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
"""On a GPU each kernel is one fused torch op (triad: torch.add(b, c, alpha=s, out=a)), so triad is 3 passes."""


def cuda_sweep(sizes: Sequence[int], budget_s: float = 0.2,
               progress: Callable[[], None] | None = None) -> list[BandwidthPoint]:
    """Device-memory bandwidth of torch ops on the current GPU over total working sets `sizes`."""
    import torch

    points = []
    for size in sizes:
        for kernel, passes in TORCH_KERNELS.items():
            n = max(1, size // (ARRAYS[kernel] * 4))
            a, b, c = (torch.ones(n, device="cuda") for _ in range(3))
            call = {"copy": lambda a=a, b=b: b.copy_(a), "scale": lambda a=a, b=b: torch.mul(a, 3.0, out=b),
                    "add": lambda a=a, b=b, c=c: torch.add(a, b, out=c),
                    "triad": lambda a=a, b=b, c=c: torch.add(b, c, alpha=3.0, out=a)}[kernel]
            timer = Timer(call, label=f"cuda {kernel} {size} B", work=passes * n * 4, work_unit="byte",
                          budget_s=budget_s, sync=torch.cuda.synchronize)
            points.append(BandwidthPoint(kernel, size, timer.measure()))
            if progress:
                progress()
    return points

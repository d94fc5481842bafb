"""Fixed costs no FLOP or byte count explains: per-op dispatch, kernel launch, synchronization, copies.

- dispatch: one tiny eager op (`torch.add` of two 1-element tensors) on the CPU: Python, argument parsing,
  dispatcher, allocation; the time every op pays on the host thread however small it is.
- launch (CUDA): the same op on GPU tensors in a queued loop, timed with a synchronize at the end: the rate
  at which the host can issue kernels.
- sync: a step of one tiny op followed by a synchronization point (`torch.cuda.synchronize`, or `.item()` on
  the CPU, which is what forces a result there) against the same steps fully queued; the difference per step.
- host<->device copies (CUDA): pageable and pinned host buffers over a size sweep; the smallest copy's time is
  the latency, the largest's bytes / time the bandwidth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline.measure.timing import Measurement, Timer

SYNC_STEPS = 100
"""Steps per timed call of the sync benchmark: enough that the loop, not the clock, dominates."""
COPY_SIZES_QUICK = (4 * 2**10, 2**20, 64 * 2**20)
COPY_SIZES_FULL = (4 * 2**10, 64 * 2**10, 2**20, 16 * 2**20, 64 * 2**20, 256 * 2**20)


def dispatch(device: str = "cpu", budget_s: float = 0.3) -> Measurement:
    """Per-op time of a tiny eager op: framework dispatch on the CPU, launch rate on a GPU."""
    import torch

    from roofline.measure.timing import evict_private_caches

    a = torch.ones(1, device=device)
    b = torch.ones(1, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else None
    label = "kernel launch (tiny add)" if device == "cuda" else "framework dispatch (tiny add)"
    # on a CPU each op of a model is called cold, after others evicted its code and data; a GPU's launch
    # rate is the queue's, measured back to back
    cold = evict_private_caches() if device == "cpu" else None
    return Timer(lambda: torch.add(a, b), label=label, work=1, work_unit="op", budget_s=budget_s,
                 sync=sync, setup=cold).measure()


@dataclass(frozen=True)
class SyncCost:
    synced: Measurement
    queued: Measurement

    @property
    def per_step_s(self) -> float:
        """Extra time per step that a synchronization point costs (never below zero)."""
        return max(0.0, (self.synced.median - self.queued.median) / SYNC_STEPS)


def sync_cost(device: str = "cpu", budget_s: float = 0.3) -> SyncCost:
    """SYNC_STEPS steps of one tiny op, with and without a synchronization point after each."""
    import torch

    x = torch.ones(1, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else None

    def point() -> None:
        if device == "cuda":
            torch.cuda.synchronize()
        else:
            x.item()

    def synced() -> None:
        for _ in range(SYNC_STEPS):
            torch.add(x, 1)
            point()

    def queued() -> None:
        for _ in range(SYNC_STEPS):
            torch.add(x, 1)

    return SyncCost(Timer(synced, label="steps with sync", budget_s=budget_s, sync=sync).measure(),
                    Timer(queued, label="steps queued", budget_s=budget_s, sync=sync).measure())


@dataclass(frozen=True)
class CopyPoint:
    direction: str
    """'h2d' or 'd2h'."""
    memory: str
    """'pageable' or 'pinned'."""
    size_bytes: int
    measurement: Measurement

    @property
    def bytes_per_s(self) -> float:
        return self.measurement.rate


def copies(sizes: Sequence[int] = COPY_SIZES_QUICK, budget_s: float = 0.2) -> list[CopyPoint]:
    """Host<->device copies (CUDA only) for pageable and pinned host memory over `sizes`."""
    import torch

    points = []
    for memory in ("pageable", "pinned"):
        for size in sizes:
            host = torch.empty(size, dtype=torch.uint8, pin_memory=memory == "pinned")
            dev = torch.empty(size, dtype=torch.uint8, device="cuda")
            for direction, dst, src in (("h2d", dev, host), ("d2h", host, dev)):
                timer = Timer(lambda d=dst, s=src: d.copy_(s, non_blocking=True), label=f"{direction} {memory} {size}",
                              work=size, work_unit="byte", budget_s=budget_s, sync=torch.cuda.synchronize)
                points.append(CopyPoint(direction, memory, size, timer.measure()))
    return points


def copy_summary(points: Sequence[CopyPoint]) -> dict[str, dict[str, float]]:
    """'h2d pinned' -> {latency_s (smallest copy), bytes_per_s (largest copy)}."""
    out: dict[str, dict[str, float]] = {}
    for key in sorted({(p.direction, p.memory) for p in points}):
        mine = sorted((p for p in points if (p.direction, p.memory) == key), key=lambda p: p.size_bytes)
        out[f"{key[0]} {key[1]}"] = {"latency_s": mine[0].measurement.median, "bytes_per_s": mine[-1].bytes_per_s}
    return out

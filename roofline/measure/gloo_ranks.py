"""Local torch.distributed ranks on the gloo backend: spawn them, time an all-reduce, run DDP steps.

Each rank is a process started by torch.multiprocessing (spawn) with one intra-op thread per rank, so that
`ranks` ranks use `ranks` cores; rank 0 reports through a queue. Clocks are read after a barrier, so every
sample starts with both ranks ready; the median of the samples is kept (the machine may be shared).
"""

from __future__ import annotations

import socket
import statistics
import time
from dataclasses import dataclass, replace
from typing import Any

from roofline.errors import RooflineError
from roofline.workload.request import ModelRequest

ALLREDUCE_SIZES_BYTES = (4, 4096, 65536, 1 << 20, 4 << 20, 16 << 20, 32 << 20)
"""From one float (latency) to 32 MiB (beyond DDP's 25 MiB bucket: bandwidth)."""

BANDWIDTH_FIT_MIN_BYTES = 1 << 20
"""Sizes from which the latency is a small part of the time, used to fit the bus bandwidth."""

STREAM_BYTES = 128 << 20
"""Each rank's copy source for the shared-memory probe: far beyond any one socket's last-level cache, so the
copy streams from DRAM whether one rank runs it or all do."""
STREAM_REPEATS = 7


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _init(rank: int, world: int, port: int) -> Any:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    return dist


def _copy_s(src: Any, dst: Any, dist: Any, repeats: int, active: bool) -> float:
    """Median seconds of one DRAM copy by this rank (`active`), every sample started after a barrier so the
    active ranks stream at the same time; inactive ranks wait at the barriers."""
    samples = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        if active:
            dst.copy_(src)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _stream_alone_and_together(dist: Any, rank: int, repeats: int) -> tuple[float, float]:
    """(seconds of rank 0's copy alone, of its copy while every rank copies): one socket's memory is shared
    by the ranks on it, so each gets a share of what one process alone streams."""
    import torch

    src = torch.ones(STREAM_BYTES // 4)
    dst = torch.empty_like(src)
    dst.copy_(src)
    alone = _copy_s(src, dst, dist, repeats, rank == 0)
    together = _copy_s(src, dst, dist, repeats, True)
    return alone, together


def _allreduce_worker(rank: int, world: int, port: int, sizes: tuple[int, ...], repeats: int, queue: Any) -> None:
    import torch

    dist = _init(rank, world, port)
    streams = _stream_alone_and_together(dist, rank, STREAM_REPEATS)
    medians = {}
    for size in sizes:
        buffer = torch.ones(max(1, size // 4))
        for _ in range(2):
            dist.all_reduce(buffer)
        samples = []
        for _ in range(repeats):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buffer)
            samples.append(time.perf_counter() - start)
        medians[buffer.numel() * 4] = statistics.median(samples)
    if rank == 0:
        queue.put((medians, streams))
    dist.destroy_process_group()


def _spawn(fn: Any, ranks: int, *args: Any) -> Any:
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    try:
        mp.start_processes(fn, args=(ranks, free_port(), *args, queue), nprocs=ranks, start_method="spawn")
    except mp.ProcessRaisedException as exc:
        raise RooflineError(f"a gloo rank failed: {str(exc).strip().splitlines()[-1]}") from None
    return queue.get()


@dataclass(frozen=True)
class AllreduceFit:
    ranks: int
    times_s: dict[int, float]
    """Bytes -> median all-reduce time."""
    latency_s: float
    """Per ring step: the smallest all-reduce's time / 2(n-1)."""
    bus_bandwidth_bytes_per_s: float
    """2(n-1)/n x bytes / (time - latency part), median over the sizes from BANDWIDTH_FIT_MIN_BYTES."""
    memory_share: float = 1.0
    """The DRAM bandwidth one rank gets while all ranks stream, over what it gets alone (<= 1)."""


def measure_allreduce(ranks: int = 2, repeats: int = 20) -> AllreduceFit:
    """Median gloo all-reduce times between `ranks` local processes, fitted to the alpha-beta model, and the
    share of the socket's memory bandwidth each rank gets when all stream at once."""
    times, (alone_s, together_s) = _spawn(_allreduce_worker, ranks, ALLREDUCE_SIZES_BYTES, repeats)
    return replace(fit_allreduce(times, ranks), memory_share=min(1.0, alone_s / together_s))


def fit_allreduce(times: dict[int, float], ranks: int) -> AllreduceFit:
    """Latency from the smallest all-reduce (2(n-1) steps of it), bus bandwidth from the large ones."""
    steps = 2 * (ranks - 1)
    latency = times[min(times)] / steps
    estimates = [steps / ranks * size / (t - steps * latency) for size, t in times.items()
                 if size >= BANDWIDTH_FIT_MIN_BYTES and t > steps * latency]
    if not estimates:
        raise RooflineError("gloo all-reduce times did not grow with size; the machine is too busy to fit them")
    return AllreduceFit(ranks, times, latency, statistics.median(estimates))


def _ddp_worker(rank: int, world: int, port: int, req: ModelRequest, batch: int, steps: int,
                bucket_cap_mb: float, queue: Any) -> None:
    import torch

    from roofline.measure.live import make_step
    from roofline.measure.live_model import live_input, live_model

    dist = _init(rank, world, port)
    torch.manual_seed(0)
    module = live_model(req)
    example = live_input(req, module, batch)
    intervals: list[tuple[float, float]] = []
    model = module
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(module, bucket_cap_mb=bucket_cap_mb)
        model.register_comm_hook(intervals, _timed_allreduce_hook)
    step = make_step(model, example, torch.device("cpu"), "fp32", True)
    for _ in range(2):
        step()
    samples, comm = [], []
    for _ in range(steps):
        dist.barrier()
        intervals.clear()
        start = time.perf_counter()
        step()
        samples.append(time.perf_counter() - start)
        comm.append(_union_s(intervals))
    if rank == 0:
        queue.put((samples, comm))
    dist.destroy_process_group()


def _timed_allreduce_hook(intervals, bucket):
    """DDP's default hook (average, then all-reduce), recording when each bucket's all-reduce is launched and
    when it completes."""
    import torch.distributed as dist

    start = time.perf_counter()
    buffer = bucket.buffer().div_(dist.get_world_size())
    future = dist.all_reduce(buffer, async_op=True).get_future()

    def done(fut: Any) -> Any:
        intervals.append((start, time.perf_counter()))
        return fut.value()[0]

    return future.then(done)


def _union_s(intervals: list[tuple[float, float]]) -> float:
    """Seconds during which at least one all-reduce was in flight."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


@dataclass(frozen=True)
class LiveDataParallel:
    ranks: int
    per_rank_batch: int
    step_samples_s: list[float]
    communication_samples_s: list[float]

    @property
    def step_s(self) -> float:
        return statistics.median(self.step_samples_s)

    @property
    def communication_s(self) -> float:
        return statistics.median(self.communication_samples_s)


def run_data_parallel(req: ModelRequest, ranks: int, per_rank_batch: int, steps: int = 10,
                      bucket_cap_mb: float = 25.0) -> LiveDataParallel:
    """Median step of a real DDP run on `ranks` gloo ranks (1 rank: the same loop without DDP)."""
    samples, comm = _spawn(_ddp_worker, ranks, req, per_rank_batch, steps, bucket_cap_mb)
    return LiveDataParallel(ranks, per_rank_batch, samples, comm)

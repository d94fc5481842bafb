"""Data-parallel training as PyTorch's DistributedDataParallel runs it.

DDP puts the gradients in buckets in the reverse order of `model.parameters()` (about the order backward
produces them), the first bucket capped at 1 MiB and the others at `bucket_cap_mb` = 25 MiB
(torch/nn/parallel/distributed.py: `dist._DEFAULT_FIRST_BUCKET_BYTES`, `bucket_cap_mb`; a bucket closes once
its size reaches the cap, `_compute_bucket_assignment_by_size`). When the last gradient of a bucket is
written its all-reduce is launched, on the communication stream, behind the ones before it; so all-reduce
overlaps the rest of the backward pass and what is left when the backward ends is exposed. Under gradient
accumulation (`no_sync()` on all micro-steps but the last) only the last micro-step communicates.

Other libraries group gradients differently (`GROUPINGS`): Horovod's Tensor Fusion packs the tensors ready
at a moment into one 64 MB buffer, never past it; apex's DistributedDataParallel(shared_param=True) does not
bucket at all and all-reduces everything once the backward has ended. A library that launches all-reduces
only when a background loop wakes delays each ready group (`launch_wait_s`; `libraries` says which do).
`at_measured_step` prices the communication against a measured one-GPU step instead of the predicted one, so
that a published scaling row tests the multi-GPU model and not the single-device one.

What this does not model: the contention between the all-reduce kernels and the backward kernels for SMs
and memory bandwidth on a GPU (the overlap is taken as free), and DDP's own bookkeeping per bucket.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from roofline.model.comm.collectives import Fabric, allreduce_s
from roofline.model.step import StepPrediction
from roofline.workload.ops.base import BACKWARD_PASSES, Workload

FIRST_BUCKET_BYTES = 1024 * 1024
"""torch.distributed's `_DEFAULT_FIRST_BUCKET_BYTES` (1 MiB): DDP starts its first all-reduce early."""

DEFAULT_BUCKET_CAP_MB = 25.0
"""DistributedDataParallel's `bucket_cap_mb` default (MiB)."""

HOROVOD_FUSION_THRESHOLD_BYTES = 64 * 2**20
"""Horovod's default fusion buffer, 'Default fusion buffer size is 64 MB'
(horovod/horovod@da1b3a522741d56f5fb20116df6976415169ba17:docs/tensor-fusion.md)."""


@dataclass(frozen=True)
class Bucket:
    index: int
    tensors: int
    bytes: float
    ready_s: float
    """When its last gradient is written, from the start of the backward pass."""
    start_s: float
    end_s: float

    @property
    def allreduce_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class DataParallelPrediction:
    single: StepPrediction
    """One GPU at the same per-GPU batch: the reference for scaling efficiency."""
    fabric: Fabric
    accumulation_steps: int
    gradient_bytes: float
    backward_s: float
    step_time_s: float
    buckets: list[Bucket] = field(repr=False)
    rank_step_s: float | None = None
    """One rank's own step while the others run beside it (ranks sharing a socket's memory), where it
    differs from `single`'s."""

    @property
    def world(self) -> int:
        return self.fabric.world

    @property
    def communication_s(self) -> float:
        return sum(b.allreduce_s for b in self.buckets)

    @property
    def contention_s(self) -> float:
        """What sharing the socket's memory adds to each rank's computation in one step."""
        if self.rank_step_s is None:
            return 0.0
        return self.accumulation_steps * (self.rank_step_s - self.single.step_time_s)

    @property
    def exposed_communication_s(self) -> float:
        return self.step_time_s - self.accumulation_steps * self.single.step_time_s - self.contention_s

    @property
    def samples_per_s(self) -> float:
        return self.world * self.accumulation_steps * self.single.batch_size / self.step_time_s

    @property
    def scaling_efficiency(self) -> float:
        """Throughput over `world` x one GPU's throughput at the same per-GPU batch (weak scaling)."""
        return self.accumulation_steps * self.single.step_time_s / self.step_time_s


def gradient_ready_times(workload: Workload, single: StepPrediction) -> tuple[list[tuple[float, float]], float]:
    """(elements, ready time) of every parameter tensor in DDP's bucket order, and the backward's length.

    The backward runs the ops in reverse; an op's gradients are ready when its backward passes end."""
    backward: dict[str, float] = {}
    for cost in single.ops:
        if cost.pass_ in BACKWARD_PASSES:
            backward[cost.name] = backward.get(cost.name, 0.0) + cost.time_s
    clock = 0.0
    tensors = []
    for op in reversed(workload.ops):
        clock += backward.get(op.name, 0.0)
        tensors.extend((float(size), clock) for size in reversed(op.param_sizes()))
    return tensors, clock


def build_buckets(tensors: list[tuple[float, float]], bytes_per_element: float, cap_bytes: float,
                  first_cap_bytes: float = FIRST_BUCKET_BYTES) -> list[tuple[int, float, float]]:
    """(tensors, bytes, ready time) of each bucket, filled in order until its cap is reached."""
    buckets: list[tuple[int, float, float]] = []
    count, size, ready = 0, 0.0, 0.0
    for elements, ready_s in tensors:
        count, size, ready = count + 1, size + elements * bytes_per_element, max(ready, ready_s)
        if size >= (first_cap_bytes if not buckets else cap_bytes):
            buckets.append((count, size, ready))
            count, size, ready = 0, 0.0, 0.0
    if count:
        buckets.append((count, size, ready))
    return buckets


def build_fusion_buffers(tensors: list[tuple[float, float]], bytes_per_element: float,
                         threshold_bytes: float = HOROVOD_FUSION_THRESHOLD_BYTES) -> list[tuple[int, float, float]]:
    """Horovod's Tensor Fusion: in ready order, 'select first few tensors that fit in HOROVOD_FUSION_THRESHOLD
    bytes' (docs/tensor-fusion.md above); a tensor larger than the buffer is all-reduced alone."""
    buffers: list[tuple[int, float, float]] = []
    count, size, ready = 0, 0.0, 0.0
    for elements, ready_s in tensors:
        nbytes = elements * bytes_per_element
        if count and size + nbytes > threshold_bytes:
            buffers.append((count, size, ready))
            count, size, ready = 0, 0.0, 0.0
        count, size, ready = count + 1, size + nbytes, max(ready, ready_s)
    if count:
        buffers.append((count, size, ready))
    return buffers


def _horovod_buffers(tensors: list[tuple[float, float]], bytes_per_element: float,
                     cap_bytes: float) -> list[tuple[int, float, float]]:
    return build_fusion_buffers(tensors, bytes_per_element)


def _unbucketed(tensors: list[tuple[float, float]], bytes_per_element: float,
                cap_bytes: float) -> list[tuple[int, float, float]]:
    """apex DistributedDataParallel(shared_param=True): 'shared param turns off bucketing in DDP'
    (NVIDIA/DeepLearningExamples@147c37049e76daeeda8b6a313b040ac51aeabe4b:PyTorch/Classification/RN50v1.5/main.py):
    one all-reduce of every gradient once the backward has ended."""
    return build_buckets(tensors, bytes_per_element, math.inf, first_cap_bytes=math.inf)


def _per_tensor(tensors: list[tuple[float, float]], bytes_per_element: float,
                cap_bytes: float) -> list[tuple[int, float, float]]:
    """tf_cnn_benchmarks' replicated mode: one NCCL all-reduce per gradient as it is produced
    (tensorflow/benchmarks@9165a70e36b86bb665abd6e195f91cc28c4e600d:scripts/tf_cnn_benchmarks/variable_mgr.py,
    sum_gradients_all_reduce: `nccl.all_sum` for each variable's gradients)."""
    return [(1, elements * bytes_per_element, ready) for elements, ready in tensors]


GROUPINGS: dict[str, Callable[[list[tuple[float, float]], float, float], list[tuple[int, float, float]]]] = {
    "ddp": build_buckets, "horovod": _horovod_buffers, "unbucketed": _unbucketed, "per-tensor": _per_tensor}
"""How a data-parallel library groups gradients into all-reduces: (tensors, bytes per element, cap) -> groups."""


def at_measured_step(single: StepPrediction, step_time_s: float) -> StepPrediction:
    """`single` stretched to a measured one-GPU step: every op's time scaled by measured / predicted, so the
    backward keeps the model's shape (which gradient is ready when) and the measured length."""
    scale = step_time_s / single.step_time_s
    ops = [replace(o, device_s=o.device_s * scale, host_s=o.host_s * scale) for o in single.ops]
    parts = {name: getattr(single, name) * scale
             for name in ("host_s", "device_s", "transfer_s", "sync_s", "optimizer_s", "amp_cast_s")}
    return replace(single, step_time_s=step_time_s, ops=ops, **parts)


def predict_data_parallel(workload: Workload, single: StepPrediction, fabric: Fabric, grad_bytes: int,
                          bucket_cap_mb: float = DEFAULT_BUCKET_CAP_MB, accumulation_steps: int = 1,
                          algorithm: str = "auto", overlap: bool = True,
                          grouping: str = "ddp", rank_step: StepPrediction | None = None,
                          launch_wait_s: float = 0.0) -> DataParallelPrediction:
    """One DDP step on `fabric`: `accumulation_steps` micro-steps of `single`, the last one all-reducing
    `grad_bytes`-byte gradients in buckets while its backward runs.

    `overlap=False` starts no all-reduce before the backward ends, so nothing is hidden: ranks that leave no
    core idle (CPU ranks whose threads fill the machine, whose backend thread takes its time from the
    backward), and libraries whose gradients all appear when the backward ends (`libraries`).
    `rank_step` is one rank's step while the others run beside it (`socket_share.rank_profile`), where the
    ranks share memory; scaling efficiency stays measured against `single`, one rank alone.
    `launch_wait_s` is how long a ready group waits before its all-reduce can start (a library that launches
    collectives only when its background loop wakes: `libraries.Library.launch_wait_s`)."""
    own = rank_step or single
    tensors, backward_s = gradient_ready_times(workload, own)
    clock = 0.0
    buckets = []
    groups = GROUPINGS[grouping](tensors, grad_bytes, bucket_cap_mb * 2**20)
    for index, (count, nbytes, ready) in enumerate(groups):
        earliest = ready if overlap else backward_s
        start = max(earliest + launch_wait_s, clock)
        clock = start + allreduce_s(nbytes, fabric, algorithm)
        buckets.append(Bucket(index, count, nbytes, ready, start, clock))
    exposed = max(0.0, clock - backward_s) if fabric.world > 1 else 0.0
    step = accumulation_steps * own.step_time_s + exposed
    gradient_bytes = sum(b.bytes for b in buckets)
    return DataParallelPrediction(single, fabric, accumulation_steps, gradient_bytes, backward_s, step, buckets,
                                  rank_step.step_time_s if rank_step else None)

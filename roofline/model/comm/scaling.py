"""Speed-up against GPU count: weak scaling (fixed batch per GPU) for advice, strong scaling (fixed global
batch) for the classic lesson that 100 GPUs do not give 100x.

Strong scaling in one line: a step of T1 seconds on one GPU splits its compute N ways, but a part C that does
not shrink with N (the gradient all-reduce that the shorter backward no longer hides, its latency steps,
the per-step fixed costs) stays, so speed-up(N) = T1 / (T1/N + C) = N / (1 + N C / T1). Solved for C, a
speed-up S on N GPUs means C / T1 = (N/S - 1) / N: 56x on 100 GPUs is a fixed part of 0.79% of the one-GPU
step, which costs 44% of the machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from roofline.hardware.fabric_schema import NodeProfile
from roofline.hardware.schema import Profile
from roofline.model.comm.data_parallel import predict_data_parallel
from roofline.model.comm.libraries import LIBRARIES, Library, library_fabric
from roofline.model.step import StepOptions, StepPrediction, predict_step
from roofline.workload.ops.base import Workload
from roofline.workload.precision import Precision


@dataclass(frozen=True)
class ScalingPoint:
    gpus: int
    nodes: int
    per_gpu_batch: int
    step_time_s: float
    samples_per_s: float
    speedup: float
    """Samples per second over one GPU's at the sweep's reference (same per-GPU batch, or same global batch)."""
    communication_s: float
    exposed_communication_s: float
    backward_s: float

    @property
    def scaling_efficiency(self) -> float:
        return self.speedup / self.gpus


def fixed_fraction_for(speedup: float, gpus: int) -> float:
    """C / T1 such that N / (1 + N C / T1) = speedup: (N / S - 1) / N."""
    return (gpus / speedup - 1.0) / gpus


def amdahl_speedup(gpus: int, fixed_fraction: float) -> float:
    """N / (1 + N x C / T1)."""
    return gpus / (1.0 + gpus * fixed_fraction)


def world_sizes(gpus_per_node: int, max_gpus: int) -> list[tuple[int, int]]:
    """(GPUs per node, nodes): 1, 2, 4 ... up to a full node, then 2, 4, 8 ... full nodes, up to max_gpus."""
    sizes = []
    g = 1
    while g < gpus_per_node and g <= max_gpus:
        sizes.append((g, 1))
        g *= 2
    nodes = 1
    while nodes * gpus_per_node <= max_gpus:
        sizes.append((gpus_per_node, nodes))
        nodes *= 2
    if not sizes or sizes[-1][0] * sizes[-1][1] < max_gpus <= gpus_per_node:
        sizes.append((max_gpus, 1))
    return sizes


def _point(workload: Workload, single: StepPrediction, node: NodeProfile, gpus: int, nodes: int,
           grad_bytes: int, reference_samples_per_s: float, library: Library) -> ScalingPoint:
    fabric = library_fabric(library, node, gpus, nodes)
    dp = predict_data_parallel(workload, single, fabric, grad_bytes, grouping=library.grouping,
                               algorithm=library.algorithm, launch_wait_s=library.launch_wait_s,
                               overlap=library.overlaps_backward)
    return ScalingPoint(fabric.world, nodes, single.batch_size, dp.step_time_s, dp.samples_per_s,
                        dp.samples_per_s / reference_samples_per_s, dp.communication_s,
                        dp.exposed_communication_s, dp.backward_s)


def weak_scaling(build: Callable[[int], Workload], profile: Profile, precision: Precision, options: StepOptions,
                 node: NodeProfile, per_gpu_batch: int, max_gpus: int, grad_bytes: int,
                 library: Library = LIBRARIES["pytorch-ddp"]) -> list[ScalingPoint]:
    workload = build(per_gpu_batch)
    single = predict_step(workload, profile, precision, options)
    sizes = world_sizes(int(node.gpus_per_node.value), max_gpus)
    return [_point(workload, single, node, g, n, grad_bytes, single.samples_per_s, library) for g, n in sizes]


def strong_scaling(build: Callable[[int], Workload], profile: Profile, precision: Precision,
                   options: StepOptions, node: NodeProfile, global_batch: int, max_gpus: int,
                   grad_bytes: int) -> list[ScalingPoint]:
    """Fixed global batch: world sizes that divide it."""
    reference = predict_step(build(global_batch), profile, precision, options).samples_per_s
    points = []
    for g, n in world_sizes(int(node.gpus_per_node.value), max_gpus):
        if global_batch % (g * n):
            continue
        workload = build(global_batch // (g * n))
        single = predict_step(workload, profile, precision, options)
        points.append(_point(workload, single, node, g, n, grad_bytes, reference, LIBRARIES["pytorch-ddp"]))
    return points

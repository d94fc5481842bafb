"""Fully sharded data parallelism (PyTorch FSDP FULL_SHARD, ZeRO stage 3) as an option where memory decides.

Each rank keeps 1/n of the parameters, gradients and optimizer state. Before a unit's forward its parameters
are all-gathered, and again before its backward (they were freed after the forward); after its backward its
gradients are reduce-scattered. So a step moves 3 x (n-1)/n of the parameter bytes per rank against DDP's
2 x (n-1)/n (Rajbhandari et al., "ZeRO", SC'20, section 7.2.2: 3 Psi against 2 Psi), and memory holds the
shards plus the gathered parameters of the unit at work.

Timing is a two-window bound rather than DDP's bucket timeline: the forward's all-gathers overlap the forward
(prefetching the next unit), the backward's all-gathers and reduce-scatters overlap the backward; what a
window's communication exceeds its compute by is exposed, plus the first all-gather (nothing runs before it)
and the last reduce-scatter (the first unit's gradients, written when the backward ends).
Units are the ops that own parameters (FSDP's per-module wrapping).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.model.comm.collectives import Fabric, ring_all_gather_s, ring_reduce_scatter_s
from roofline.model.memory import MemoryBreakdown
from roofline.model.step import StepPrediction
from roofline.workload.ops.base import BACKWARD_PASSES, Workload

FORWARD = "forward"


@dataclass(frozen=True)
class ShardedPrediction:
    single: StepPrediction
    fabric: Fabric
    step_time_s: float
    communication_s: float
    exposed_communication_s: float
    memory: MemoryBreakdown

    @property
    def scaling_efficiency(self) -> float:
        return self.single.step_time_s / self.step_time_s

    @property
    def samples_per_s(self) -> float:
        return self.fabric.world * self.single.batch_size / self.step_time_s


def sharded_memory(memory: MemoryBreakdown, world: int, largest_unit_bytes: float) -> MemoryBreakdown:
    """Parameters, their AMP copies, gradients and optimizer state divided over the ranks, plus one gathered
    unit (the one computing)."""
    return replace(memory, weights=memory.weights / world + largest_unit_bytes,
                   amp_weight_copies=memory.amp_weight_copies / world, gradients=memory.gradients / world,
                   optimizer_state=memory.optimizer_state / world)


def predict_sharded(workload: Workload, single: StepPrediction, fabric: Fabric, param_bytes: int) -> ShardedPrediction:
    """One FULL_SHARD step of `single` on `fabric`, parameters and gradients communicated at `param_bytes`."""
    units = [float(op.params()) * param_bytes for op in workload.ops if op.params()]
    forward_s = sum(c.time_s for c in single.ops if c.pass_ == FORWARD)
    backward_s = sum(c.time_s for c in single.ops if c.pass_ in BACKWARD_PASSES)
    gather = [ring_all_gather_s(b, fabric) for b in units]
    scatter = [ring_reduce_scatter_s(b, fabric) for b in units]
    first = gather[0] if gather else 0.0
    last = scatter[0] if scatter else 0.0
    exposed = (first + max(0.0, sum(gather) - first - forward_s)
               + last + max(0.0, sum(gather) + sum(scatter) - last - backward_s))
    communication = 2 * sum(gather) + sum(scatter)
    memory = sharded_memory(single.memory, fabric.world, max(units, default=0.0))
    return ShardedPrediction(single, fabric, single.step_time_s + exposed, communication, exposed, memory)

"""What one step of a workload runs, before any device or precision is chosen.

A step's (pass, op) pairs, the distinct shapes among them and the elements its passes write are the same at
every precision and on every device; the advisor prices one workload at every precision it sweeps, so the plan
is made once per workload (`plan_for`) and each prediction only prices the distinct shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.workload.ops.base import PASSES, Op, Workload


def executed(ops: list[Op], passes: tuple[str, ...]) -> list[tuple[str, Op]]:
    """(pass, op) pairs a step runs, in execution order. Autograd differentiates only what depends on a
    parameter: ops before the first layer with weights get no backward at all, and that first layer
    computes its weight gradient but no gradient for its input."""
    first = next((i for i, op in enumerate(ops) if op.params()), len(ops))
    return [(pass_, op) for pass_ in passes for index, op in enumerate(ops)
            if pass_ == "forward" or index > first or (index == first and pass_ == "backward_weight")]


@dataclass(frozen=True)
class StepPlan:
    """The pairs a step runs and, for each, which distinct (pass, shape) prices it: models repeat layers of one
    shape (ResNet-50's 175 ops have 49 distinct shapes, BERT's 227 have 17), and a cost is a pure function of
    shape, pass and context (which depends on the op's type only)."""

    ops: list[Op]
    pairs: list[tuple[str, Op]]
    distinct: list[tuple[str, Op]]
    """The first pair of each distinct (pass, shape); a pair whose shape cannot be hashed is its own."""
    slot: list[int]
    """pairs[i] costs what distinct[slot[i]] costs, under its own name."""
    activations_written: float
    """Activation (and activation-gradient) elements every pass writes."""
    weights_written: float
    """Weight-gradient elements every pass writes."""

    def written_bytes(self, activation_bytes: float, weight_bytes: float) -> float:
        """Bytes every pass of the step writes: with the weights, what passes through the caches between two
        uses of one weight."""
        return self.activations_written * activation_bytes + self.weights_written * weight_bytes


def plan_step(ops: list[Op], passes: tuple[str, ...]) -> StepPlan:
    """The plan of a step running `passes` over `ops`."""
    pairs = executed(ops, passes)
    distinct: list[tuple[str, Op]] = []
    slot: list[int] = []
    index_of: dict[object, int] = {}
    activations = weights = 0.0
    for pass_, op in pairs:
        traffic = op.traffic(pass_)
        activations += float(traffic.activations_written)
        weights += float(traffic.weights_written)
        key = (pass_, op.shape_key())
        try:
            at = index_of.get(key)
        except TypeError:  # a field that cannot be hashed: priced on its own
            at = key = None
        if at is None:
            at = len(distinct)
            distinct.append((pass_, op))
            if key is not None:
                index_of[key] = at
        slot.append(at)
    return StepPlan(ops, pairs, distinct, slot, activations, weights)


def plan_for(workload: Workload, train: bool, forward_only: bool = False) -> StepPlan:
    """The plan of one training or inference step of `workload`, made once per workload and kept on it
    (workloads are not changed after they are built, like their ops). `forward_only`: the forward pass of the
    module in training mode (BatchNorm's batch statistics, dropout on) and nothing after it."""
    plans = workload.__dict__.setdefault("_plans", {})
    key = "train-forward" if forward_only else train
    if key not in plans:
        if forward_only:
            plans[key] = plan_step(workload.ops, ("forward",))
        else:
            plans[key] = plan_step(workload.ops, PASSES) if train else plan_step(workload.inference_ops(), ("forward",))
    return plans[key]

"""Device memory a step needs: weights, gradients, optimizer state, saved activations, workspace, reserve.

Everything but activations and the input batch is independent of the batch size, so the footprint is
affine in B and the largest batch that fits is solved in closed form from two evaluations.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from roofline.workload.ops.base import MODEL_INPUT, Num, Workload
from roofline.workload.precision import Precision

OPTIMIZER_STATE_PER_PARAM = {"sgd": 0, "momentum": 1, "momentum-unfused": 1, "adam": 2, "adam-unfused": 2}
"""fp32 state tensors per parameter: SGD none, momentum one buffer, Adam exp_avg and exp_avg_sq."""

CUBLAS_WORKSPACE_BYTES = 8 * 4096 * 1024
"""PyTorch's default cuBLAS workspace config ':4096:8' (eight 4 MiB buffers); see torch's
reproducibility notes on CUBLAS_WORKSPACE_CONFIG. An estimate that `--reserve-bytes` overrides."""

CUDA_CONTEXT_BYTES = 512 * 1024**2
"""CUDA context, cuDNN/cuBLAS handles and kernel images resident on the device before any tensor: a
documented estimate (a few hundred MiB on recent drivers, visible in nvidia-smi but not in
torch.cuda.memory_allocated); measure yours with `nvidia-smi` after `torch.cuda.init()` and override."""


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes by purpose at one batch size."""

    weights: float
    amp_weight_copies: float
    gradients: float
    optimizer_state: float
    activations: float
    """Saved for backward (training) or the largest live input+output pair (inference)."""
    input_batch: float
    workspace_and_reserve: float

    @property
    def total(self) -> float:
        return (self.weights + self.amp_weight_copies + self.gradients + self.optimizer_state
                + self.activations + self.input_batch + self.workspace_and_reserve)

    def as_dict(self) -> dict[str, float]:
        return {"weights": self.weights, "amp_weight_copies": self.amp_weight_copies,
                "gradients": self.gradients, "optimizer_state": self.optimizer_state,
                "activations": self.activations, "input_batch": self.input_batch,
                "workspace_and_reserve": self.workspace_and_reserve, "total": self.total}


def default_reserve_bytes(is_gpu: bool) -> float:
    """Bytes unavailable to tensors: CUDA context and library workspace on a GPU, none on a CPU."""
    return float(CUDA_CONTEXT_BYTES + CUBLAS_WORKSPACE_BYTES) if is_gpu else 0.0


def saved_activation_elements(workload: Workload) -> Num:
    """Activation elements autograd holds for backward: every op's saved tensors, each tensor once. Ops that
    save the same tensor share it (a ReLU keeps its output and the convolution or linear layer after it keeps
    that same tensor as its input; BERT's query, key and value projections all keep their one input), which the
    workload's dataflow names: a view or an in-place op's result is the tensor it was made from."""
    flow = workload.flow()
    by_name = {op.name: op for op in workload.ops}
    storage = flow.storages(workload.ops)
    held: set[str] = set()
    total: Num = 0
    for op in workload.ops:
        saved = op.saved_elements()
        if op.is_free or not saved:
            continue
        if op.saves_output:
            kept = storage[op.name]
        elif op.saves_input and len(flow.reads.get(op.name, ())) == 1 and op.name not in flow.inplace:
            kept = storage.get(flow.reads[op.name][0], MODEL_INPUT)
        else:  # several inputs, or an in-place op whose input autograd must keep apart from what overwrites it
            total += saved
            continue
        if kept in held and kept in by_name:
            saved -= min(saved, by_name[kept].output_elements())
        held.add(kept)
        total += saved
    return total


def memory_breakdown(workload: Workload, precision: Precision, train: bool, optimizer: str = "sgd",
                     reserve_bytes: float = 0.0, autocast_params: float | None = None) -> MemoryBreakdown:
    """Footprint of one step. Training keeps every tensor an op saved for backward; inference only needs
    the largest pair of tensors alive at once (an op's input and output).

    `autocast_params`: the step runs under torch.autocast, which leaves the module's parameters in fp32 and
    casts those of the ops on its 16-bit list (this many parameters) once per autocast region, keeping each
    16-bit copy until the region exits (ATen's autocast cast cache holds the cast of every leaf tensor that
    requires grad, as an nn.Module's parameters do under torch.no_grad() too): in inference as in training,
    an fp32 weight and a 16-bit copy of it."""
    params = float(workload.params())
    act = precision.storage_bytes
    autocast = autocast_params is not None
    copied = autocast_params if autocast_params is not None else params if precision.master_weight_bytes > act else 0.0
    copies = copied * act
    if train:
        weights = params * precision.master_weight_bytes
        amp_copies = copies
        grads = params * precision.master_weight_bytes
        state = params * 4 * OPTIMIZER_STATE_PER_PARAM[optimizer]
        saved = float(saved_activation_elements(workload)) * act
        largest_output = max((float(op.output_elements()) for op in workload.ops if not op.is_free), default=0.0)
        activations = saved + 2 * largest_output * act
    else:
        grads, state = 0.0, 0.0
        weights = params * (precision.master_weight_bytes if autocast else act)
        amp_copies = copies if autocast else 0.0
        outputs = [float(op.output_elements()) for op in workload.ops if not op.is_free]
        pairs = [a + b for a, b in itertools.pairwise(outputs)] or outputs or [0.0]
        activations = max(pairs) * act
    return MemoryBreakdown(weights, amp_copies, grads, state, activations, float(workload.input_bytes),
                           reserve_bytes)


def max_batch_that_fits(footprint_at, capacity_bytes: float, limit: int = 1 << 20) -> int:
    """Largest B with footprint_at(B) <= capacity, using that the footprint is affine in B.

    `footprint_at` maps a batch size to bytes. Returns 0 when even B = 1 does not fit.
    """
    m1, m2 = footprint_at(1), footprint_at(2)
    if m1 > capacity_bytes:
        return 0
    slope = m2 - m1
    if slope <= 0:
        return limit
    guess = math.floor(1 + (capacity_bytes - m1) / slope)
    guess = max(1, min(guess, limit))
    while guess > 1 and footprint_at(guess) > capacity_bytes:
        guess -= 1
    while guess < limit and footprint_at(guess + 1) <= capacity_bytes:
        guess += 1
    return guess

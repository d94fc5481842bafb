"""A language model's training loss (`CrossEntropy`) against PyTorch's F.cross_entropy itself: the ops it
dispatches in each pass (the IR's launches) and the floating-point tensors autograd keeps for its backward (the
IR's saved elements); and the zoo's GPT-2 ends its training step, not its inference step, with it."""

from __future__ import annotations

from collections import Counter

import pytest

from roofline.model.step_plan import plan_for
from roofline.workload.ops.loss import CrossEntropy
from roofline.workload.zoo import build_workload

torch = pytest.importorskip("torch")
dispatch = pytest.importorskip("torch.utils._python_dispatch")

ROWS, CLASSES = 6, 50


class _Calls(dispatch.TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def test_kernels_and_saved_tensors_match_cross_entropy() -> None:
    logits = torch.randn(ROWS, CLASSES, requires_grad=True)
    targets = torch.randint(0, CLASSES, (ROWS,))
    saved: dict[int, int] = {}

    def pack(t):
        if t.is_floating_point() and t.dim() > 0:  # nll_loss also keeps its 0-d total weight
            saved[t.untyped_storage().data_ptr()] = t.numel()  # log_softmax and nll_loss keep one tensor
        return t

    with _Calls() as forward, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = torch.nn.functional.cross_entropy(logits, targets)
    with _Calls() as backward:
        loss.backward()
    op = CrossEntropy("loss", rows=ROWS, classes=CLASSES)
    assert set(forward.calls) == {"_log_softmax", "nll_loss_forward"}
    assert sum(forward.calls.values()) == op.launches("forward")
    assert set(backward.calls) >= {"nll_loss_backward", "_log_softmax_backward_data"}
    assert backward.calls["nll_loss_backward"] + backward.calls["_log_softmax_backward_data"] == op.launches(
        "backward_input")
    assert sum(saved.values()) == op.saved_elements() == ROWS * CLASSES


def test_gpt2_trains_on_its_next_token_loss() -> None:
    workload = build_workload("gpt2", 2, seq_len=16)
    loss = workload.ops[-1]
    assert isinstance(loss, CrossEntropy) and (loss.rows, loss.classes) == (2 * 16, 50257)
    assert workload.flow().reads[loss.name] == ("lm_head",)
    assert loss in plan_for(workload, True).ops
    assert not any(isinstance(op, CrossEntropy) for op in plan_for(workload, False).ops)

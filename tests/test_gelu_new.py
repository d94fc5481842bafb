"""Hugging Face's gelu_new as eager PyTorch runs it (`roofline.workload.ops.gelu_new`): the kernels and saved
tensors against PyTorch itself (the formula of transformers' NewGELUActivation run under a TorchDispatchMode),
the traffic by closed form, and the step option's scope."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from roofline.errors import RooflineError
from roofline.hardware import find_profile
from roofline.model.step import StepOptions, predict_step, step_memory
from roofline.workload.ops.gelu_new import gelu_new_ops, with_gelu_new
from roofline.workload.ops.pointwise import Activation
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload

N = 8 * 3072  # elements of one GELU


def test_forward_traffic_closed_form():
    ops = [op for op, _ in gelu_new_ops(Activation("act", numel=N, fn="gelu_tanh"))]
    # eight kernels; each writes its result once, reads its tensor operands: 0.5 * x, pow(x, 3), 0.044715 *,
    # x + (two), sqrt(2/pi) *, tanh, 1.0 +, the product (two): 10 reads and 8 writes of N elements, where one
    # fused kernel reads x once and writes once
    assert len(ops) == 8
    assert sum(op.traffic("forward").activations_read for op in ops) == 10 * N
    assert sum(op.traffic("forward").activations_written for op in ops) == 8 * N
    assert ops[-1].name == "act"


def test_backward_kernels_and_saved_tensors_match_pytorch():
    """PyTorch runs the formula's backward as: the product's two gradients (2 mul), tanh_backward, the scalar
    multiplies' gradients (3 mul), pow_backward's pow, mul and mul, and two adds summing x's three gradients;
    autograd saves x (for pow), tanh's output and both factors of the product."""
    torch = pytest.importorskip("torch")
    dispatch = pytest.importorskip("torch.utils._python_dispatch")

    class Calls(dispatch.TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.calls: Counter[str] = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__.split(".")[0] != "detach":  # autograd's view of a saved tensor: no kernel
                self.calls[str(func)] += 1
            return func(*args, **(kwargs or {}))

    x = torch.randn(8, 3072, requires_grad=True)
    with Calls() as forward:
        y = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    seed = torch.ones_like(y)
    with Calls() as backward:
        y.backward(seed)
    kernels = [op for op, _ in gelu_new_ops(Activation("act", numel=N, fn="gelu_tanh"))]
    assert sum(forward.calls.values()) == len(kernels) == 8
    # aten.mul.Tensor 6, tanh_backward, pow, mul.Scalar, add 2: the model's per-op launches plus the two
    # accumulations of x's gradients
    seen = sum(backward.calls.values())
    assert backward.calls["aten.add.Tensor"] == 2
    launches = sum(op.launches("backward_input") for op in kernels)
    assert launches == 9
    assert seen == launches + 2


def test_training_step_saves_three_more_tensors_and_accumulates_twice():
    wl = build_workload("gpt2", 2, seq_len=64)
    a100 = find_profile("a100-sxm4-80gb", kind="gpu")
    fp32 = get_precision("fp32")
    fused = predict_step(wl, a100, fp32, StepOptions(train=True, fp32_math="ieee"))
    formula = predict_step(wl, a100, fp32, StepOptions(train=True, fp32_math="ieee", gelu_new=True))
    # 12 layers x 2 x 64 tokens x 3072 = 4,718,592 GELU elements; tanh's output and both factors of the product
    # are kept beside x: 3 x 4,718,592 x 4 bytes = 56,623,104 bytes more saved for the backward
    assert formula.memory.activations - fused.memory.activations == 3 * 12 * 2 * 64 * 3072 * 4
    accumulations = [o for o in formula.ops if o.name.startswith("transformer.h.0.mlp.c_fc.grad_accumulate")]
    assert len(accumulations) == 2
    assert formula.step_time_s > fused.step_time_s
    # the memory search of the advisor applies the same kernels
    assert step_memory(wl, True, fp32, StepOptions(train=True, gelu_new=True)).total == formula.memory.total


def test_a_model_without_a_tanh_gelu_is_refused():
    with pytest.raises(RooflineError, match="no tanh GELU"):
        with_gelu_new(build_workload("bert-base", 1))
    with pytest.raises(RooflineError, match="gelu_new"):
        predict_step(build_workload("resnet18", 1), find_profile("t4", kind="gpu"), get_precision("fp32"),
                     StepOptions(gelu_new=True))

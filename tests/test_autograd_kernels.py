"""The kernels autograd runs around the layers (`roofline.model.autograd_kernels`), against PyTorch's autograd
itself: the zoo's own torch modules run a backward under a TorchDispatchMode, which counts the gradient
accumulations (out-of-place `aten.add` the engine issues when a tensor's second gradient arrives, GPT-2's tied
embedding weight's included; no layer's backward here calls one) and the bias gradients' reductions
(`aten.sum.dim_IntList`); and against the lent H100's profile of the same steps
(benchmarks/results/gpu-live-h100.json: `aten::add_` and `aten::sum` calls)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from roofline.hardware import find_profile
from roofline.model.autograd_kernels import accumulation_readers
from roofline.model.step import StepOptions, predict_step
from roofline.model.step_plan import plan_for
from roofline.workload.ops.gemm import Linear
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload
from roofline.workload.zoo.registry import build_module, example_input

torch = pytest.importorskip("torch")
dispatch = pytest.importorskip("torch.utils._python_dispatch")

MEASURED = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "gpu-live-h100.json"
SHAPES = {"bert-base": {"seq_len": 8}, "gpt2": {"seq_len": 8}, "resnet50": {"input_size": 64},
          "resnet18": {"input_size": 64}, "mobilenetv3-large": {"input_size": 64}, "vgg16": {"input_size": 32}}
BROADCAST_REDUCTIONS = {"bert-base": 1, "gpt2": 1, "mobilenetv3-large": 8}
"""Reductions autograd runs for an operand broadcast in the forward, which the model does not price apart (it
charges a broadcast operand of an elementwise op at full size): the position embeddings added over the batch,
MobileNetV3's eight squeeze-and-excitation scales multiplied over each feature map."""


class _Calls(dispatch.TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[str(func)] += 1
        return func(*args, **(kwargs or {}))


def _backward_calls(model: str) -> Counter[str]:
    torch.manual_seed(0)
    module = build_module(model, **SHAPES[model]).train()
    out = module(example_input(model, 2, **SHAPES[model]))
    last = out[-1] if isinstance(out, tuple) else out  # BERT: the pooled output, as a classifier reads it
    with _Calls() as seen:
        last.float().sum().backward()
    return seen.calls


def _predicted(model: str) -> tuple[int, int]:
    workload = build_workload(model, 2, **SHAPES[model])
    plan = plan_for(workload, True)
    weighted = {op.name for pass_, op in plan.pairs if pass_ == "backward_weight"}
    shared = sum(1 for op in plan.ops if isinstance(op, Linear) and op.tied and op.name in weighted)
    accumulations = sum(n - 1 for n in accumulation_readers(workload, plan).values()) + shared
    biases = sum(1 for op in plan.ops if isinstance(op, Linear) and op.bias and op.name in weighted)
    return accumulations, biases


@pytest.mark.parametrize("model", list(SHAPES))
def test_accumulations_and_bias_reductions_match_autograd(model: str) -> None:
    calls = _backward_calls(model)
    accumulations, biases = _predicted(model)
    assert accumulations == calls["aten.add.Tensor"]
    assert biases + BROADCAST_REDUCTIONS.get(model, 0) == calls["aten.sum.dim_IntList"]


def _profiled(model: str, op: str) -> int:
    for case in json.loads(MEASURED.read_text())["breakdown"]:
        if (case["model"], case["mode"], case["precision"]) == (model, "train", "amp"):
            return next(o["calls"] for o in case["aten_ops"] if o["op"] == op)
    raise LookupError(model)


def test_counts_match_the_h100_profile() -> None:
    """BERT-base: 48 accumulations (its forward's adds are out of place, so every `add_` is one), 73 bias sums.
    ResNet-50: 85 `add_` = 16 accumulations + 16 in-place residual adds + 53 BatchNorm step counters."""
    bert_accumulations, bert_biases = _predicted("bert-base")
    assert bert_accumulations == _profiled("bert-base", "aten::add_") == 48
    assert bert_biases == _profiled("bert-base", "aten::sum") == 73
    resnet_accumulations, _ = _predicted("resnet50")
    assert resnet_accumulations + 16 + 53 == _profiled("resnet50", "aten::add_")


def test_only_a_gpu_training_step_runs_them() -> None:
    workload = build_workload("bert-base", 4, seq_len=32)
    amp = get_precision("amp")
    kinds = {c.kind for c in predict_step(workload, find_profile("h100", kind="gpu"), amp,
                                          StepOptions(train=True, include_transfer=False)).ops}
    assert {"grad_accumulate", "bias_grad"} <= kinds
    inference = predict_step(workload, find_profile("h100", kind="gpu"), amp, StepOptions(include_transfer=False))
    assert not {"grad_accumulate", "bias_grad"} & {c.kind for c in inference.ops}

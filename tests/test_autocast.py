"""CUDA autocast's dtypes and casts (`roofline.model.autocast`) against what the lent H100 ran: the profiled AMP steps
in benchmarks/results/gpu-live-h100.json (breakdown: torch.profiler's aten::copy_ calls per step, which under
autocast are its casts) for the zoo's own modules, and against PyTorch's documented op lists for which tensors
are fp32."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.hardware import find_profile
from roofline.model.autocast import FLOAT_BYTES, HALF_BYTES, LOWER_PRECISION_KINDS, autocast_flow
from roofline.model.step import StepOptions, predict_step
from roofline.model.step_plan import plan_for
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload

MEASURED = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "gpu-live-h100.json"


def _profiled_copies(model: str, mode: str) -> int:
    for case in json.loads(MEASURED.read_text())["breakdown"]:
        if (case["model"], case["mode"], case["precision"]) == (model, mode, "amp"):
            return next(op["calls"] for op in case["aten_ops"] if op["op"] == "aten::copy_")
    raise LookupError(model)


def _casts(model: str, train: bool, batch: int, seq_len: int | None = None) -> int:
    """Copy kernels one step runs under autocast: activation casts (and in training their gradients' and the
    narrowed gradients'), weight casts (and in training the weight gradients' casts back to fp32)."""
    workload = build_workload(model, batch, seq_len=seq_len)
    plan = plan_for(workload, train)
    flow = autocast_flow(workload, plan.ops)
    weights = sum(op.param_tensors() for op in plan.ops if op.kind in LOWER_PRECISION_KINDS)
    activations = sum(len(casts) for casts in flow.casts.values())
    if not train:
        return weights + activations
    backward = sum(len(flow.gradient_casts(op.name)) for pass_, op in plan.pairs if pass_ == "backward_input")
    return 2 * weights + activations + backward


def test_resnet50_inference_casts_its_input_and_its_weights():
    """53 convolution weights, the classifier's weight and bias, and the fp32 image batch: 56 copies, as
    measured; BatchNorm keeps the fp16 activations and its fp32 parameters uncast."""
    assert _casts("resnet50", train=False, batch=1) == _profiled_copies("resnet50", "inference") == 56


def test_bert_inference_casts_match_the_profile():
    """146 Linear weights and biases, and each fp32 input of a product: the query, key and value projections
    each cast the same LayerNorm output, the intermediate dense the other one, the pooler its token. The profile
    counted one copy more than this (196 against 195), which the model does not place."""
    predicted = _casts("bert-base", train=False, batch=128, seq_len=128)
    assert abs(predicted - _profiled_copies("bert-base", "inference")) <= 1


def test_bert_training_casts_match_the_profile():
    """Training adds each cast's gradient cast back, the fp32 weight gradients' casts, and the gradient each
    residual add hands its fp16 sublayer output: 414 against 418 profiled copies."""
    predicted = _casts("bert-base", train=True, batch=32, seq_len=128)
    assert predicted == pytest.approx(_profiled_copies("bert-base", "train"), rel=0.02)


def test_transformer_residual_stream_is_fp32():
    workload = build_workload("bert-base", 2, seq_len=16)
    flow = autocast_flow(workload, workload.ops)
    norms = [op for op in workload.ops if op.kernel == "norm:layer"]
    products = [op for op in workload.ops if op.kind == "gemm"]
    assert norms and all(flow.reads[op.name] == flow.writes[op.name] == FLOAT_BYTES for op in norms)
    assert all(flow.writes[op.name] == HALF_BYTES for op in products)
    cast = {op.name.rsplit(".", 1)[-1] for op in products if op.name in flow.casts}
    assert {"query", "key", "value", "dense"} <= cast
    assert "encoder.layer.0.attention.output.dense" not in flow.casts  # reads the fp16 attention output


def test_autocast_prices_bert_inference_as_the_h100_ran_it():
    """The profiled H100 step (batch 128 x 128): LayerNorms 1.28 ms in fp32, copies 1.67 ms, the whole step
    10.81 ms; 2-byte LayerNorms and no activation casts priced it 22% fast."""
    workload = build_workload("bert-base", 128, seq_len=128)
    h100, amp = find_profile("h100-sxm5-80gb", kind="gpu"), get_precision("amp")
    options = StepOptions(include_transfer=False)
    autocast = predict_step(workload, h100, amp, options)
    half = predict_step(workload, h100, amp, StepOptions(include_transfer=False, autocast=False))
    norms = sum(c.device_s for c in autocast.ops if c.kind == "norm")
    assert norms == pytest.approx(1.279e-3, rel=0.15)
    assert autocast.step_time_s == pytest.approx(10.81e-3, rel=0.10)
    assert half.step_time_s < 0.85 * 10.81e-3

"""The CPU-side parts of the prepared device check benchmarks/gpu_depthwise.py, so that a lease is not spent
finding a mistake in them: it times every depthwise layer MobileNetV3 has (torchvision's architecture: 15 in the
large model, 11 in the small), each pass computes what autograd computes for that layer, and the traffic it divides
by is the closed form of a depthwise convolution's compulsory bytes."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import gpu_depthwise as script  # noqa: E402


@pytest.mark.parametrize(("model", "layers"), [("mobilenetv3-large", 15), ("mobilenetv3-small", 11)])
def test_every_depthwise_layer_of_the_model_is_timed_once_per_shape(model, layers):
    found = script.depthwise_layers(model, 2, 224)
    assert sum(count for _, count in found) == layers
    assert all(op.groups == op.c == op.k for op, _ in found)


def test_forward_traffic_is_input_output_and_filter_once():
    op, _ = script.depthwise_layers("mobilenetv3-large", 4, 224)[0]
    n, c, h, w, p, q = 4, op.c, op.h, op.w, op.p, op.q
    assert script.ir_bytes(op, "forward", 2) == 2 * (n * c * h * w + n * c * p * q + c * op.r * op.s)


@pytest.mark.torch
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_each_pass_computes_what_autograd_computes(layout):
    op = next(o for o, _ in script.depthwise_layers("mobilenetv3-small", 2, 32) if o.stride == (2, 2))
    x, w, grad = tensors = script.layer_tensors(op, "fp32", layout, "cpu")
    assert script.pass_call(op, tensors, "forward")().shape == (2, op.c, op.p, op.q)
    dx = script.pass_call(op, tensors, "backward_input")()[0]
    dw = script.pass_call(op, tensors, "backward_weight")()[1]
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    torch.nn.functional.conv2d(xr, wr, None, op.stride, op.pad, op.dilation, op.groups).backward(grad)
    assert torch.allclose(dx, xr.grad, atol=1e-4) and torch.allclose(dw, wr.grad, atol=1e-3)


@pytest.mark.torch
def test_a_cpu_run_reports_every_pass_as_a_share_of_the_copy_rate():
    rows = script.measure("mobilenetv3-small", "fp32", "nchw", device="cpu", small=True)
    assert {r["pass"] for r in rows} == set(script.PASSES)
    assert all(r["time_s"] > 0 and r["ir_bytes"] > 0 for r in rows)
    totals = script.summary(rows, copy_bytes_per_s=1e10)
    assert len(totals) == 3
    for s in totals:
        assert s["share_of_copy"] == pytest.approx(s["bytes_per_s"] / 1e10)

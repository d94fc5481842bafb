"""`amp-bf16`: torch.autocast in bfloat16 with fp32 master weights, against what PyTorch's code does.

- No GradScaler: bfloat16 keeps fp32's 8-bit exponent, so a bf16 autocast loop scales no loss (PyTorch's AMP
  recipe: GradScaler is for float16), and the step has neither GradScaler's unscale pass nor its `.item()`.
- BatchNorm on PyTorch's native kernels: BatchNorm is on neither of autocast's lists, so it receives the
  convolution's bfloat16 output, and `_select_batch_norm_backend` (aten/src/ATen/native/Normalization.cpp) gives
  cuDNN no bfloat16 input; fp16 autocast's float16 input with fp32 scale and shift stays on cuDNN.
- Ampere and later: a board without bf16 units (a V100) refuses it with one line and exit status 2.
"""

from __future__ import annotations

import pytest

from roofline.advise.advisor import candidate_precisions
from roofline.advise.track_record import precision_class
from roofline.hardware import find_profile
from roofline.model.step import StepOptions, predict_step
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload
from tests.cli_run import run_error


def _train(precision: str, model: str = "resnet50", batch: int = 64):
    return predict_step(build_workload(model, batch), find_profile("a100"), get_precision(precision),
                        StepOptions(train=True, include_transfer=False))


def test_bf16_autocast_keeps_fp32_master_weights_and_16_bit_activations():
    p = get_precision("amp-bf16")
    assert (p.storage_bytes, p.master_weight_bytes, p.compute_dtype) == (2, 4, "bf16")


def test_a_bf16_autocast_training_step_has_no_grad_scaler():
    fp16 = {o.name for o in _train("amp").ops}
    bf16 = {o.name for o in _train("amp-bf16").ops}
    assert {"GradScaler unscale", "GradScaler .item()"} <= fp16
    assert not {n for n in bf16 if "GradScaler" in n}


def test_batchnorm_under_bf16_autocast_runs_pytorch_s_native_kernel():
    def native(precision: str) -> set[str]:
        return {o.name for o in _train(precision).ops
                if o.kind == "norm" and any(n.kind == "native kernel" for n in o.notes)}

    assert native("amp-bf16")
    assert not native("amp")


def test_a_board_without_bf16_units_refuses_it(capsys):
    line = run_error(capsys, "predict", "--model", "resnet50", "--gpu", "v100", "--train", "--precision",
                     "amp-bf16")
    assert "no amp-bf16 support" in line


@pytest.mark.parametrize(("device", "expected"), [("a100", True), ("v100", False), ("textbook-cpu", False)])
def test_advise_sweeps_it_where_it_is_a_precision_of_its_own(device, expected):
    """On a CPU `amp` is autocast's bfloat16 already, so the sweep does not take it twice."""
    names = [p.name for p in candidate_precisions(find_profile(device), train=True, requested="auto")]
    assert ("amp-bf16" in names) is expected


def test_the_track_record_files_it_with_autocast_runs():
    assert precision_class("amp-bf16") == precision_class("amp") == "autocast"


def test_a_live_step_runs_its_products_in_bfloat16():
    """`roofline validate --precision amp-bf16` builds its step with torch.autocast(dtype=torch.bfloat16): a
    Linear's output is bfloat16, its weight stays fp32, and a training step with no GradScaler runs."""
    torch = pytest.importorskip("torch")
    from roofline.measure.live import make_step

    module = torch.nn.Sequential(torch.nn.Linear(8, 4))
    out = make_step(module, torch.randn(2, 8), torch.device("cpu"), "amp-bf16", train=False)()
    assert out.dtype == torch.bfloat16 and module[0].weight.dtype == torch.float32
    loss = make_step(module, torch.randn(2, 8), torch.device("cpu"), "amp-bf16", train=True)()
    assert torch.isfinite(loss)

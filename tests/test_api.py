"""The Python API (roofline/api.py): typed results with the command's JSON fields, models given as a zoo
name, a config or an nn.Module, and the command line's one-line errors raised as RooflineError subclasses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import cli
import roofline
from roofline.api import AdviseResult, AnalyzeResult, HardwareResult, PredictResult
from roofline.errors import DoesNotFit, RooflineError, UnknownName

ROOT = Path(__file__).resolve().parents[1]


def _cli_json(capsys, *argv: str) -> dict:
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_importing_roofline_loads_neither_the_api_nor_torch():
    code = ("import sys, roofline; assert callable(roofline.advise.__call__);"
            "print(sorted(m for m in ('torch', 'roofline.api', 'pydantic') if m in sys.modules))")
    bare = subprocess.run([sys.executable, "-c", "import sys, roofline; print('torch' in sys.modules, "
                           "'roofline.api' in sys.modules)"], capture_output=True, text=True, cwd=ROOT, check=True)
    assert bare.stdout.split() == ["False", "False"]
    used = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "torch" not in used.stdout  # the API answers zoo questions without torch


def test_advise_returns_the_commands_document_typed(capsys):
    result = roofline.advise(model="mobilenetv3", gpu="v100", train=True)
    assert isinstance(result, AdviseResult)
    assert result.to_dict() == _cli_json(capsys, "advise", "--model", "mobilenetv3", "--gpu", "v100", "--train")
    assert json.loads(result.to_json()) == result.to_dict()
    rec = result.recommended
    assert rec.samples_per_s == pytest.approx(rec.batch_size / rec.step_time_s)
    assert rec.memory_bytes <= 16 * 2**30  # V100 16 GB
    assert {row.precision for row in result.sweep} >= {rec.precision}
    assert result.reasons and all(r["text"] for r in result.reasons)


def test_predict_an_op_against_the_closed_form():
    result = roofline.predict(op="gemm(m=1024,n=1024,k=1024)", cpu="textbook")
    assert isinstance(result, PredictResult)
    # one GEMM: 2 * 1024 * 1024 * 1024 = 2147483648 FLOP (a MAC is 2 FLOPs)
    assert result.layers[0].flops == 2_147_483_648
    assert result.step_time_s > 0 and result.batches[0].batch_size == 1


def test_predict_several_batches_like_the_command(capsys):
    result = roofline.predict("resnet18", gpu="a100", batch=[1, 8], precision="fp16")
    assert [b.batch_size for b in result.batches] == [1, 8]
    assert result.to_dict() == _cli_json(capsys, "predict", "--model", "resnet18", "--gpu", "a100", "--batch", "1,8",
                                         "--precision", "fp16")


def test_analyze_a_config_matches_the_published_count():
    result = roofline.analyze({"model": "resnet50", "input_size": 224})
    assert isinstance(result, AnalyzeResult)
    # torchvision's model table: ResNet-50 4.09 GFLOPS (multiply-adds) and 25.6 M parameters at 224x224
    assert result.totals["macs"] == pytest.approx(4.09e9, rel=0.02)
    assert result.totals["params"] == pytest.approx(25.557e6, rel=0.001)


def test_analyze_an_nn_module_instance_leaves_it_untouched():
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(1024, 512)
    before = layer.weight.detach().clone()
    result = roofline.analyze(layer, batch=8, input_shape=(1, 1024))
    # 8 x 1024 -> 512: 8 * 1024 * 512 = 4194304 MACs; 2 FLOPs each plus 8 * 512 = 4096 bias adds = 8392704 FLOP;
    # 1024 * 512 weights + 512 biases = 524800 parameters
    assert result.totals["macs"] == 4_194_304
    assert result.totals["flops"] == 8_392_704
    assert result.totals["params"] == 524_800
    assert layer.weight.device.type == "cpu" and torch.equal(layer.weight, before)
    advice = roofline.advise(layer, gpu="v100", input_shape=(1, 1024))
    assert advice.recommended.batch_size >= 1


def test_hardware_has_the_datasheet_peaks():
    v100 = roofline.hw("v100")
    assert isinstance(v100, HardwareResult)
    assert v100.peak_flops["fp16"] == pytest.approx(125e12, rel=0.01)  # V100 SXM2 datasheet: 125 TFLOP/s tensor
    assert v100.memory_capacity == 16 * 2**30  # 16 GiB HBM2


@pytest.mark.parametrize(("call", "argv", "error"), [
    (lambda: roofline.advise("mobilenetv3", gpu="v1OO"), ["advise", "--model", "mobilenetv3", "--gpu", "v1OO"],
     UnknownName),
    (lambda: roofline.predict("resnet50", gpu="v100", batch="0"),
     ["predict", "--model", "resnet50", "--gpu", "v100", "--batch", "0"], RooflineError),
    (lambda: roofline.predict("resnet5O", cpu="textbook"), ["predict", "--model", "resnet5O", "--cpu", "textbook"],
     UnknownName),
    (lambda: roofline.predict("resnet50", gpu="t4", batch=4096, precision="fp32"),
     ["predict", "--model", "resnet50", "--gpu", "t4", "--batch", "4096"], DoesNotFit),
    (lambda: roofline.analyze("resnet50", precision="fp12"), ["analyze", "--model", "resnet50", "--precision", "fp12"],
     UnknownName),
])
def test_bad_input_raises_the_commands_one_line_error(capsys, call, argv, error):
    with pytest.raises(error) as caught:
        call()
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == f"roofline: error: {caught.value}\n"


@pytest.mark.parametrize("call", [
    lambda: roofline.advise(42, gpu="v100"),
    lambda: roofline.advise("mobilenetv3"),
    lambda: roofline.advise("mobilenetv3", gpu="v100", cpu="textbook"),
    lambda: roofline.predict("resnet50", gpu="v100", optimizer="lamb"),
    lambda: roofline.analyze({"model": "resnet50", "colour": "red"}),
    lambda: roofline.analyze("resnet50", batch=True),
    lambda: roofline.hw(None),
    lambda: roofline.validate("resnet50", device="tpu"),
])
def test_wrong_types_and_missing_devices_are_roofline_errors(call):
    with pytest.raises(RooflineError) as caught:
        call()
    assert "\n" not in str(caught.value)

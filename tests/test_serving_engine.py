"""The serving engine's host loop (`--engine`): vLLM V0's published output-processing times, added to each step."""

from __future__ import annotations

import pytest
from cli_run import run_error, run_json

from roofline.hardware import find_profile
from roofline.model.llm_precision import serving_precision
from roofline.model.llm_step import predict_serving
from roofline.model.serving_engine import ENGINE_LOOPS
from roofline.workload.llm.builtins import get_config


def test_vllm_v0_loop_passes_through_the_published_points():
    """vllm-project/vllm#6913: _process_model_outputs took 0.2 ms at batch 1 and 3.4 ms at batch 32."""
    loop = ENGINE_LOOPS["vllm-v0"]
    assert loop.step_host_s(1) == pytest.approx(0.2e-3)
    assert loop.step_host_s(32) == pytest.approx(3.4e-3)
    assert ENGINE_LOOPS["none"].step_host_s(256) == 0.0


@pytest.mark.parametrize("batch", [1, 16, 64])
def test_the_loop_adds_to_every_step_and_the_request(batch):
    cfg, hw, prec = get_config("llama-3-8b"), find_profile("h100-sxm5-80gb"), serving_precision("fp16")
    plain = predict_serving(cfg, hw, prec, batch, 128, 128, "graph")
    v0 = predict_serving(cfg, hw, prec, batch, 128, 128, "graph", engine="vllm-v0")
    host = 0.2e-3 + (3.4e-3 - 0.2e-3) / 31 * (batch - 1)
    assert v0.tpot_s - plain.tpot_s == pytest.approx(host)
    assert v0.ttft_s - plain.ttft_s == pytest.approx(host)
    assert v0.request_s - plain.request_s == pytest.approx(128 * host)


def test_predict_json_shows_the_loop(capsys):
    out = run_json(capsys, "predict", "--model", "llama-3-8b", "--gpu", "a100", "--batch", "32", "--runtime",
                   "graph", "--engine", "vllm-v0")
    assert out["engine"]["name"] == "vllm-v0"
    assert out["engine"]["host_s_per_step"] == pytest.approx(3.4e-3)
    assert out["tpot_s"] > out["phases"]["decode"]["time_s"] + 3.3e-3


def test_advise_names_the_cap_the_loop_sets(capsys):
    out = run_json(capsys, "advise", "--model", "llama-3-8b", "--gpu", "h100", "--serve", "--runtime", "graph",
                   "--engine", "vllm-v0", "--prompt-len", "128", "--output-len", "128")
    cap = 31 / (3.4e-3 - 0.2e-3)
    assert any(f"caps decode at {cap:,.0f} tokens/s" in r for r in out["reasons"])
    assert out["engine"] == "vllm-v0"


def test_engine_on_a_step_model_is_refused(capsys):
    assert "--engine" in run_error(capsys, "predict", "--model", "resnet50", "--gpu", "a100", "--engine", "vllm-v0")

"""`--accumulate fp16`: fp16 products accumulated in fp16, checked against the datasheets' ratios and closed forms."""

from __future__ import annotations

import pytest
from cli_run import run_error, run_json

from roofline.errors import RooflineError
from roofline.hardware import find_profile
from roofline.model.ceilings import REALIZED_FP16_ACCUMULATE_RATIO, ceilings_for
from roofline.model.llm_precision import serving_precision
from roofline.workload.precision import get_precision


def _rates(gpu: str) -> tuple[float, float]:
    profile = find_profile(gpu, kind="gpu")
    fp16 = get_precision("fp16")
    return (ceilings_for(profile, fp16).matrix_flops_per_s,
            ceilings_for(profile, fp16, accumulate="fp16").matrix_flops_per_s)


def test_a_geforce_ampere_board_doubles_its_rate_as_its_whitepaper_says():
    # GA102 whitepaper: the RTX 3090 at 71 TFLOP/s with fp32 accumulation, 142 with fp16 (2x), applied to the
    # rate the board sustains with fp32 accumulation (a published torch.mm measurement, 75.64 TFLOP/s)
    fp32_acc, fp16_acc = _rates("rtx-3090")
    assert fp32_acc == pytest.approx(75.64e12)
    assert fp16_acc == pytest.approx(2 * 75.64e12)


def test_an_ada_board_gets_the_ratio_measured_on_its_architecture():
    # 330.3 / 165.2 TFLOP/s in the Ada whitepaper (2x), but 53.1 / 31.0 realized on an RTX 4060 (SM89)
    fp32_acc, fp16_acc = _rates("rtx-4090")
    assert REALIZED_FP16_ACCUMULATE_RATIO["Ada"] == pytest.approx(1.713, abs=1e-3)
    assert fp16_acc == pytest.approx(fp32_acc * 53.1 / 31.0)


@pytest.mark.parametrize("gpu", ["a100-sxm4-80gb", "h100-sxm5-80gb", "v100-sxm2-16gb", "l40s", "titan-v"])
def test_a_board_with_one_figure_for_both_accumulations_keeps_its_rate(gpu):
    fp32_acc, fp16_acc = _rates(gpu)
    assert fp16_acc == fp32_acc


def test_only_fp16_products_change():
    profile = find_profile("rtx-4090", kind="gpu")
    for name in ("bf16", "tf32", "fp8"):
        precision = get_precision(name)
        assert (ceilings_for(profile, precision, accumulate="fp16").matrix_flops_per_s
                == ceilings_for(profile, precision).matrix_flops_per_s)


def test_fp16_accumulation_means_fp16_operands():
    assert serving_precision("int4", activation="bf16", accumulate="fp16").compute.name == "fp16"
    assert serving_precision("int4", activation="bf16").compute.name == "bf16"
    with pytest.raises(RooflineError, match="accumulate in fp32"):
        serving_precision("bf16", accumulate="fp16")
    with pytest.raises(RooflineError, match="--accumulate"):
        serving_precision("fp16", accumulate="int32")


def test_a_compute_bound_prompt_runs_at_the_faster_products_and_attention_keeps_its_rate(capsys):
    base = ("predict", "--model", "llama-3-8b", "--gpu", "rtx-4090", "--precision", "fp16", "--runtime", "graph",
            "--prompt-len", "2048", "--output-len", "1")
    fp32_acc = run_json(capsys, *base)
    fp16_acc = run_json(capsys, *base, "--accumulate", "fp16")
    assert fp16_acc["accumulate"] == "fp16" and fp32_acc["accumulate"] == "fp32"
    layers = {(r["name"]): r for r in fp32_acc["phases"]["prefill"]["layers"]}
    faster = {(r["name"]): r for r in fp16_acc["phases"]["prefill"]["layers"]}
    # an MLP product of 2048 x 4096 x 14336 is compute-bound: its time falls by the rate's ratio, within the
    # fixed time a kernel pays; attention accumulates in fp32 (flash attention, SDPA) and keeps its time
    assert faster["mlp.gate"]["time_s"] == pytest.approx(layers["mlp.gate"]["time_s"] * 31.0 / 53.1, rel=0.03)
    assert faster["attn.sdpa"]["time_s"] == pytest.approx(layers["attn.sdpa"]["time_s"])
    assert fp16_acc["ttft_s"] < fp32_acc["ttft_s"]
    a100 = ("predict", "--model", "llama-3-8b", "--gpu", "a100", "--precision", "fp16", "--runtime", "graph",
            "--prompt-len", "2048", "--output-len", "1")
    assert run_json(capsys, *a100, "--accumulate", "fp16")["ttft_s"] == run_json(capsys, *a100)["ttft_s"]


def test_bad_accumulate_flags_are_one_line_errors(capsys):
    assert "accumulate in fp32" in run_error(capsys, "predict", "--model", "llama-3-8b", "--gpu", "rtx-4090",
                                             "--precision", "bf16", "--accumulate", "fp16")
    assert "serving a decoder language model" in run_error(capsys, "predict", "--model", "resnet50", "--gpu",
                                                           "rtx-4090", "--accumulate", "fp16")


def test_serving_advice_sweeps_only_fp16_multiplies_when_they_accumulate_in_fp16(capsys):
    argv = ("advise", "--model", "llama-3-8b", "--gpu", "rtx-4090", "--serve", "--runtime", "graph",
            "--prompt-len", "2048", "--output-len", "64")
    fp16_acc = run_json(capsys, *argv, "--accumulate", "fp16")
    fp32_acc = run_json(capsys, *argv)
    assert {r["precision"] for r in fp16_acc["sweep"]} == {"fp16", "int8", "int4"}
    assert "bf16" in {r["precision"] for r in fp32_acc["sweep"]}
    assert "accumulate in fp32" in run_error(capsys, *argv, "--accumulate", "fp16", "--precision", "fp8")


def test_hw_show_lists_the_fp16_accumulate_peak_where_the_whitepaper_gives_it(capsys):
    def figure(gpu: str) -> list[float]:
        return [r["value"] for r in run_json(capsys, "hw", "show", gpu)["derived"]
                if r["name"] == "fp16_accumulate_tensor_flops_per_s"]

    assert figure("rtx-4090") == [pytest.approx(330.3e12)]  # the Ada whitepaper's fp16-accumulate figure
    assert figure("a100") == []


def test_serving_advice_on_a_geforce_board_says_what_fp16_accumulation_would_do(capsys):
    argv = ("advise", "--model", "llama-3-8b", "--serve", "--runtime", "graph", "--prompt-len", "2048",
            "--output-len", "64", "--precision", "int4")
    geforce = [r for r in run_json(capsys, *argv, "--gpu", "rtx-4090")["reasons"] if "accumulated in fp16" in r]
    assert len(geforce) == 1 and "285 TFLOP/s against 166" in geforce[0]
    assert not [r for r in run_json(capsys, *argv, "--gpu", "a100")["reasons"] if "accumulated in fp16" in r]

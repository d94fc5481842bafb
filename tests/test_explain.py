"""`roofline explain`: the textbook's 1e12 B/s vs 100 GB/s, the ~10x ratio and the ridge, computed from the
profile; example operations placed with intensities checked against closed forms written out here."""

from __future__ import annotations

import json

import pytest

import cli
from roofline.advise.explain import explain, gemm_crossover_n
from roofline.hardware import find_profile


@pytest.fixture(scope="module")
def textbook():
    return explain(find_profile("textbook"))


def test_textbook_compute_vs_memory(textbook):
    # 2e9 Hz x 16 cores x 32 B/cycle = 1.024e12 B/s; DRAM 100e9 B/s; ratio 10.24
    assert textbook["compute_bytes_per_s"] == pytest.approx(2e9 * 16 * 32)
    assert textbook["memory_bandwidth"] == 100e9
    assert textbook["ratio"] == pytest.approx(10.24)
    assert textbook["formula"] == "compute_bytes_per_s / memory_bandwidth = 1.02e12 B/s / 1e11 B/s = 10.2"
    assert "16 cores x 2e9 Hz x 32 B/cycle = 1.02e12 B/s" in textbook["compute_formula"]
    assert "256 bit / 8 x 3.2e9 T/s = 1.02e11 B/s" in textbook["memory_formula"]
    # fp32 ridge: 2.048e12 FLOP/s / 100e9 B/s = 20.48 FLOP/B; from L1 (1.024e12 B/s) it is 2
    assert textbook["ridge_point"]["fp32"] == pytest.approx(20.48)
    assert textbook["ridge_point_by_level"]["L1"]["fp32"] == pytest.approx(2.0)


def test_gemm_crossover_closed_form(textbook):
    # intensity of an n^3 GEMM = 2n^3 / (3 n^2 x 4 B) = n/6; equal to the ridge 20.48 at n = 122.88
    assert gemm_crossover_n(20.48, 4) == pytest.approx(122.88)
    assert textbook["gemm_crossover_n"] == pytest.approx(122.88)


def _ops(out):
    return {o["name"]: o for o in out["operations"]}


def test_operation_intensities_against_closed_forms(textbook):
    ops = _ops(textbook)
    # square GEMM n=1024, fp32: 2 x 1024^3 FLOP / (3 x 1024^2 x 4 B) = 1024/6 = 170.7 -> compute-bound
    g = ops["gemm n=1024"]
    assert g["intensity"] == pytest.approx(1024 / 6)
    assert g["bound"] == "compute"
    # n=64: 64/6 = 10.7 < 20.48 -> memory-bound
    assert ops["gemm n=64"]["bound"] == "memory"
    # the GEMM at the crossover size n = ceil(122.88) = 123 sits just above the ridge
    assert ops["gemm n=123"]["intensity"] == pytest.approx(123 / 6)
    # 3x3 conv 64->64 on 56x56, pad 1: FLOP = 2 x 64 x 64 x 9 x 56 x 56 = 231,211,008;
    # bytes = (in 64x56x56 + out 64x56x56 + weights 64x64x9) x 4 = (200,704 x 2 + 36,864) x 4 = 1,753,088
    c = ops["conv 3x3"]
    assert c["flops"] == 2 * 64 * 64 * 9 * 56 * 56
    assert c["intensity"] == pytest.approx(231_211_008 / 1_753_088)
    # depthwise: FLOP = 2 x 64 x 9 x 56 x 56 = 3,612,672; bytes = (200,704 x 2 + 576) x 4 = 1,607,936 -> 2.25
    dw = ops["depthwise conv 3x3"]
    assert dw["intensity"] == pytest.approx(3_612_672 / 1_607_936)
    assert dw["bound"] == "memory"
    # add: 1 FLOP per element, 3 elements moved (2 read, 1 written) x 4 B -> 1/12
    assert ops["elementwise add"]["intensity"] == pytest.approx(1 / 12)
    # sum of N elements: about N FLOP over N x 4 B -> 1/4
    assert ops["sum reduction"]["intensity"] == pytest.approx(0.25, rel=1e-3)
    for o in textbook["operations"]:
        # attainable = min(peak, intensity x bandwidth)
        assert o["attainable_flops_per_s"] == pytest.approx(min(2.048e12, o["intensity"] * 100e9))


def test_cli_text_and_json(capsys):
    assert cli.main(["explain", "--cpu", "textbook", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"peak_flops", "compute_bytes_per_s", "memory_bandwidth", "ratio", "formula"} <= set(out)
    assert cli.main(["explain", "--cpu", "textbook"]) == 0
    text = capsys.readouterr().out
    assert "1.02e12 B/s" in text and "1e11 B/s" in text and "10.2" in text


def test_gpu_and_precision(capsys):
    out = explain(find_profile("v100"), "fp16")
    # V100 fp16 tensor cores 125e12 / 900e9 = 138.9 FLOP/B; n* = 1.5 x 138.9 x 2 B = 416.7
    assert out["ridge_point"]["fp16"] == pytest.approx(125e12 / 900e9)
    assert out["gemm_crossover_n"] == pytest.approx(1.5 * 125e12 / 900e9 * 2)
    assert cli.main(["explain", "--cpu", "textbook", "--precision", "fp16"]) == 2
    assert "no fp16 peak" in capsys.readouterr().err


def test_one_ridge_point_for_every_view(v100):
    from roofline.hardware.derived import ridge_point, ridge_points
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    # V100 datasheet: 125e12 FLOP/s (fp16 tensor cores) / 900e9 B/s = 138.9 FLOP/byte
    assert ridge_point(125e12, 900e9) == pytest.approx(138.89, rel=1e-4)
    assert ridge_points({"fp16": 125e12, "fp32": 15.7e12}, 900e9) == pytest.approx({"fp16": 138.89, "fp32": 17.44},
                                                                                  rel=1e-3)
    assert ridge_points({"fp32": 1.0}, 0.0) == {}
    # the cost model's ceilings, hw show and explain agree on the same device and dtype
    c = ceilings_for(v100, get_precision("fp16"))
    assert c.ridge_point == pytest.approx(c.peak_flops_per_s / c.dram.bandwidth_bytes_per_s)
    assert explain(v100, "fp16")["ridge_point"]["fp16"] == pytest.approx(
        ridge_point(explain(v100, "fp16")["peak_flops"]["fp16"], 900e9))


def test_explain_names_the_sustained_tensor_rates_predictions_use(capsys):
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    # L40S: bf16 has a published 269.15e12 of its 366.5e12 peak; fp8, with no figure, sustains the same share of
    # its 733e12 peak, and that is what the cost model prices an fp8 product's tensor cores at
    l40s = find_profile("l40s")
    rows = {r["dtype"]: r for r in explain(l40s, "fp16")["sustained_matrix"]}
    assert rows["bf16"]["value"] == pytest.approx(269.15e12)
    assert rows["fp8"]["value"] == pytest.approx(733e12 * 269.15e12 / 366.5e12)
    assert rows["fp8"]["share"] == pytest.approx(269.15 / 366.5)
    assert ceilings_for(l40s, get_precision("fp8")).matrix_flops_per_s == pytest.approx(rows["fp8"]["value"])
    assert cli.main(["explain", "--gpu", "l40s"]) == 0
    assert "a large fp8 product sustains 5.38e14 FLOP/s, 73% of its peak" in capsys.readouterr().out
    # a CPU has no tensor cores to list
    assert explain(find_profile("textbook", kind="cpu"))["sustained_matrix"] == []


"""`--quant-kernel`: how a weight-only int8/int4 product of more than a few rows runs, checked by closed forms."""

from __future__ import annotations

import pytest
from cli_run import run_error, run_json

from roofline.errors import RooflineError
from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.context import CostContext
from roofline.model.costmodel import op_cost
from roofline.model.gemm_cost import GEMV_MAX_ROWS
from roofline.model.llm_precision import serving_precision
from roofline.model.llm_step import MMQ_FLOP_PER_SM_CYCLE, weight_only_cost
from roofline.workload.ops.gemm import Linear
from roofline.workload.precision import get_precision


def _priced(kernel: str, rows: int, gpu: str = "rtx-4090"):
    """A 4096 -> 11008 int4 (group 128) product over `rows` rows, bf16 activations, as `kernel` runs it."""
    c = ceilings_for(find_profile(gpu), get_precision("bf16"))
    prec = serving_precision("int4", activation="bf16", quant_kernel=kernel)
    op = Linear("mlp.gate", batch=1, in_features=4096, out_features=11008, bias=False, tokens=rows)
    ctx = CostContext(c, 2, prec.linear_weight_bytes)  # type: ignore[arg-type]
    return op, c, ctx, weight_only_cost(op_cost(op, "forward", ctx), op, prec, c, ctx)


def test_dequantising_first_adds_the_copy_to_a_16_bit_gemm():
    """The copy reads 0.5 + 4/128 bytes per weight and writes 2, at the DRAM rate, before the 16-bit GEMM."""
    op, c, _, cost = _priced("dequant", 512)
    weights = 4096 * 11008
    gemm = op_cost(op, "forward", CostContext(c, 2, 2))
    copy_s = weights * (0.5 + 4 / 128 + 2) / c.dram.bandwidth_bytes_per_s
    assert cost.device_s == pytest.approx(gemm.device_s + copy_s)
    assert cost.bytes == pytest.approx(gemm.bytes + weights * (0.5 + 4 / 128 + 2))


@pytest.mark.parametrize("kernel, rate", [("mmq", "int8-mma"), ("mmq-dp4a", "dp4a")])
def test_mmq_runs_at_its_rate_per_sm_cycle(kernel, rate):
    """8-bit integer products at the calibrated rate per SM-cycle x SMs x clock (128 x 2.52 GHz on the RTX 4090),
    after the activations' quantisation (fp32 read, 1 + 4/32 bytes written per element)."""
    _, c, _, cost = _priced(kernel, 512)
    assert c.sm_cycles_per_s == pytest.approx(128 * 2.52e9)
    flops = 2 * 512 * 4096 * 11008
    assert cost.compute_s == pytest.approx(flops / (MMQ_FLOP_PER_SM_CYCLE[rate] * 128 * 2.52e9))
    quantise_s = 512 * 4096 * (4 + 1 + 4 / 32) / c.dram.bandwidth_bytes_per_s
    assert cost.device_s == pytest.approx(quantise_s + max(cost.compute_s, cost.memory_s, c.launch_s))


def test_mmq_takes_dp4a_on_gpus_without_int8_tensor_cores():
    """Pascal has no int8 mma: llama.cpp's MMQ runs dp4a there (the GTX 1080 Ti, 28 SMs at 1.582 GHz)."""
    from roofline.model.llm_step import predict_serving
    from roofline.workload.llm.builtins import get_config

    cfg, hw = get_config("llama-2-7b"), find_profile("gtx-1080-ti")
    mmq = predict_serving(cfg, hw, serving_precision("int4", None, 64, "fp16", None, "mmq"), 1, 512, 1, "graph")
    dp4a = predict_serving(cfg, hw, serving_precision("int4", None, 64, "fp16", None, "mmq-dp4a"), 1, 512, 1, "graph")
    assert mmq.ttft_s == pytest.approx(dp4a.ttft_s)


def test_few_row_products_stream_their_weights_whatever_the_kernel():
    fused = _priced("fused", GEMV_MAX_ROWS)[3]
    for kernel in ("mmq", "mmq-dp4a", "dequant"):
        assert _priced(kernel, GEMV_MAX_ROWS)[3] == fused


def test_matmulnbits_streams_one_row_and_copies_the_weight_from_two():
    """ONNX Runtime's MatMulNBits: TryMatMul4Bits takes m == 1 only, so 4 rows pay the fp16 copy (0.5 + 4/128 bytes
    read, 2 written per weight, at the DRAM rate) before a 16-bit GEMM, where llama.cpp's mmvq streams them."""
    assert _priced("matmulnbits", 1)[3] == _priced("fused", 1)[3]
    op, c, _, cost = _priced("matmulnbits", 4)
    weights = 4096 * 11008
    gemm = op_cost(op, "forward", CostContext(c, 2, 2))
    assert cost.device_s == pytest.approx(gemm.device_s + weights * (0.5 + 4 / 128 + 2) / c.dram.bandwidth_bytes_per_s)
    assert cost.device_s > 4 * _priced("fused", 4)[3].device_s


def test_uncompiled_int8_conversion_copies_the_weight_at_one_row():
    """`convert` (gpt-fast's and torchao's int8 weight-only linear without torch.compile): `w.to(bf16)` writes the
    copy (1 byte read, 2 written per weight, at the DRAM rate) before a 16-bit GEMM reads it, at one row as at many;
    int8 only."""
    c = ceilings_for(find_profile("a100-sxm4-80gb"), get_precision("bf16"))
    prec = serving_precision("int8", activation="bf16", quant_kernel="convert")
    op = Linear("mlp.gate", batch=1, in_features=4096, out_features=14336, bias=False, tokens=1)
    ctx = CostContext(c, 2, prec.linear_weight_bytes)  # type: ignore[arg-type]
    cost = weight_only_cost(op_cost(op, "forward", ctx), op, prec, c, ctx)
    gemm = op_cost(op, "forward", CostContext(c, 2, 2))
    assert cost.device_s == pytest.approx(gemm.device_s + 4096 * 14336 * 3 / c.dram.bandwidth_bytes_per_s)
    with pytest.raises(RooflineError, match="int8"):
        serving_precision("int4", quant_kernel="convert")


def test_quant_kernel_cli(capsys):
    argv = ("predict", "--model", "llama-2-7b", "--gpu", "rtx-4090", "--precision", "int8", "--prompt-len", "512",
            "--output-len", "16", "--runtime", "graph")
    fused, dequant = run_json(capsys, *argv), run_json(capsys, *argv, "--quant-kernel", "dequant")
    assert (fused["quant_kernel"], dequant["quant_kernel"]) == ("fused", "dequant")
    assert dequant["ttft_s"] > fused["ttft_s"]
    assert dequant["tpot_s"] == pytest.approx(fused["tpot_s"])
    assert "int8/int4" in run_error(capsys, "predict", "--model", "llama-2-7b", "--gpu", "a100", "--precision",
                                    "bf16", "--prompt-len", "64", "--quant-kernel", "mmq")
    with pytest.raises(RooflineError, match="quant-kernel"):
        serving_precision("int4", quant_kernel="marlin")
    assert "on a CPU" in run_error(capsys, "predict", "--model", "llama-2-7b", "--cpu", "textbook", "--precision",
                                   "int4", "--prompt-len", "64", "--quant-kernel", "mmq")


def test_advise_prices_the_quantised_candidates_with_the_kernel(capsys):
    """`advise --serve --quant-kernel mmq`: the int4 and int8 candidates' prompts run llama.cpp's MMQ, the 16-bit
    ones are unchanged; a kernel without a quantised candidate is refused."""
    argv = ("advise", "--model", "llama-2-7b", "--gpu", "rtx-4090", "--serve", "--prompt-len", "512",
            "--output-len", "64", "--runtime", "graph")
    fused, mmq = run_json(capsys, *argv), run_json(capsys, *argv, "--quant-kernel", "mmq")

    def ttft(doc, precision):
        return next(r["ttft_s"] for r in doc["sweep"] if r["precision"] == precision and r["batch_size"] == 1)
    assert ttft(mmq, "int4") != ttft(fused, "int4")
    assert ttft(mmq, "bf16") == ttft(fused, "bf16")
    assert "int8/int4" in run_error(capsys, *argv, "--precision", "bf16", "--quant-kernel", "mmq")


TINYGEMM_US = {
    # PyTorch's int4 kernel (torch._weight_int4pack_mm) on the lent H100 and H200, group 128, 14336 x 4096 weight,
    # rows -> us (benchmarks/results/gpu-decode-kernels-h100.json and -h200.json, int4 section)
    "h100-sxm5-80gb": {1: 17.8, 4: 24.9, 16: 67.3, 32: 131.3, 64: 255.5},
    "h200-sxm-141gb": {1: 18.4, 4: 25.6, 16: 69.6, 32: 135.4, 64: 263.5},
}


@pytest.mark.parametrize("gpu", sorted(TINYGEMM_US))
def test_tinygemm_takes_the_measured_time(gpu):
    c = ceilings_for(find_profile(gpu), get_precision("bf16"))
    prec = serving_precision("int4", activation="bf16", quant_kernel="tinygemm")
    for rows, measured_us in TINYGEMM_US[gpu].items():
        op = Linear("mlp.gate", batch=1, in_features=4096, out_features=14336, bias=False, tokens=rows)
        ctx = CostContext(c, 2, prec.linear_weight_bytes)  # type: ignore[arg-type]
        cost = weight_only_cost(op_cost(op, "forward", ctx), op, prec, c, ctx)
        assert cost.device_s * 1e6 == pytest.approx(measured_us, rel=0.22), rows


def test_tinygemm_grows_with_every_row():
    """3.75 us + 4096 x 14336 x (0.5 + 4 / 128) B / 2.97 TB/s = 3.75 + 10.51 us, plus 2 x 4096 x 14336 FLOP a row at
    119 FLOP per SM-cycle x 132 SMs x 1.98 GHz = 3.78 us a row: 64 rows 256 us, where the fused pricing streams the
    same weight in about 15."""
    c = ceilings_for(find_profile("h100-sxm5-80gb"), get_precision("bf16"))
    prec = serving_precision("int4", activation="bf16", quant_kernel="tinygemm")
    op = Linear("mlp.gate", batch=1, in_features=4096, out_features=14336, bias=False, tokens=64)
    ctx = CostContext(c, 2, prec.linear_weight_bytes)  # type: ignore[arg-type]
    cost = weight_only_cost(op_cost(op, "forward", ctx), op, prec, c, ctx)
    stream_s = 3.75e-6 + 4096 * 14336 * (0.5 + 4 / 128) / c.dram.bandwidth_bytes_per_s
    rows_s = 64 * 2 * 4096 * 14336 / (119 * c.sm_cycles_per_s)
    assert cost.device_s == pytest.approx(stream_s + rows_s)
    assert c.sm_cycles_per_s == pytest.approx(132 * 1.98e9, rel=0.01)
    assert cost.bound == "compute"
    fused = _priced("fused", 64, "h100-sxm5-80gb")[3]
    assert fused.device_s < cost.device_s / 10


def test_tinygemm_is_an_int4_kernel(capsys):
    with pytest.raises(RooflineError, match="int4"):
        serving_precision("int8", quant_kernel="tinygemm")
    argv = ("predict", "--model", "llama-3-8b", "--gpu", "h100", "--precision", "int4", "--prompt-len", "512",
            "--output-len", "16", "--runtime", "graph", "--batch", "32")
    fused, tiny = run_json(capsys, *argv), run_json(capsys, *argv, "--quant-kernel", "tinygemm")
    assert tiny["quant_kernel"] == "tinygemm"
    assert tiny["tpot_s"] > 2 * fused["tpot_s"]


def test_advise_gives_tinygemm_to_the_int4_candidates_only(capsys):
    """`advise --serve --quant-kernel tinygemm`: the int4 candidates run it, the int8 ones (no int8 tinygemm) stay
    fused, so their rows equal the default sweep's; an explicit int8 precision is refused."""
    argv = ("advise", "--model", "llama-3-8b", "--gpu", "h100", "--serve", "--prompt-len", "512",
            "--output-len", "64", "--runtime", "graph")
    fused, tiny = run_json(capsys, *argv), run_json(capsys, *argv, "--quant-kernel", "tinygemm")

    def tpot(doc, precision):
        return next(r["tpot_s"] for r in doc["sweep"] if r["precision"] == precision and r["batch_size"] == 1)
    assert tpot(tiny, "int8") == tpot(fused, "int8")
    assert tpot(tiny, "int4") != tpot(fused, "int4")
    assert "int4" in run_error(capsys, *argv, "--precision", "int8", "--quant-kernel", "tinygemm")


INDUCTOR_H200_US = {(4096, 4096): 8.9, (14336, 4096): 30.2, (4096, 14336): 21.3}
"""benchmarks/results/gpu-decode-int8wo-gptfast-h200.json: `F.linear(x, w.to(bf16)) * scales` over int8 weights,
compiled with coordinate_descent_tuning, one row, on an H200 (out features, in features -> us)."""


def _inductor(gpu: str, n: int, k: int, rows: int):
    c = ceilings_for(find_profile(gpu), get_precision("bf16"))
    prec = serving_precision("int8", activation="bf16", quant_kernel="inductor")
    op = Linear("proj", batch=1, in_features=k, out_features=n, bias=False, tokens=rows)
    ctx = CostContext(c, 2, prec.linear_weight_bytes)  # type: ignore[arg-type]
    return c, prec, op, ctx, weight_only_cost(op_cost(op, "forward", ctx), op, prec, c, ctx)


@pytest.mark.parametrize("shape", sorted(INDUCTOR_H200_US))
def test_inductor_int8_takes_the_measured_time_on_the_h200(shape):
    # the median rate of three shapes: the 4096 x 14336 product (a long reduction) ran 42% faster than it
    *_, cost = _inductor("h200-sxm-141gb", *shape, rows=1)
    assert cost.device_s * 1e6 == pytest.approx(INDUCTOR_H200_US[shape], rel=0.45 if shape == (4096, 14336) else 0.05)


def test_inductor_int8_is_issue_bound_where_dram_is_fast_and_copies_beyond_one_row():
    """One row: the slower of the int8 weight at the DRAM rate and 7.43 weights per SM-cycle; on an H200 (4.15 TB/s,
    132 SMs x 1.98 GHz) the SMs: 58.7 M weights in 29.9 us against 14.1 us of DRAM. More rows: a bf16 copy of
    the weight, then cuBLAS, as `dequant` prices it."""
    c, prec, op, _, cost = _inductor("h200-sxm-141gb", 14336, 4096, rows=1)
    weights = 14336 * 4096
    issue_s = weights / (7.43 * c.sm_cycles_per_s)
    dram_s = weights * prec.linear_weight_bytes / c.dram.bandwidth_bytes_per_s
    assert cost.device_s == pytest.approx(max(issue_s, dram_s))
    assert cost.bound == "compute"
    bf16 = op_cost(op, "forward", CostContext(c, 2, 2))
    assert cost.device_s > 0.9 * bf16.device_s  # no faster than bf16 at one row on this board, as measured
    *_, eight = _inductor("h200-sxm-141gb", 14336, 4096, rows=8)
    eight_op = Linear("proj", batch=1, in_features=4096, out_features=14336, bias=False, tokens=8)
    gemm = op_cost(eight_op, "forward", CostContext(c, 2, 2))
    copy_s = weights * (prec.linear_weight_bytes + 2) / c.dram.bandwidth_bytes_per_s
    assert eight.device_s == pytest.approx(gemm.device_s + copy_s)
    assert eight.device_s * 1e6 == pytest.approx(82.0, rel=0.2)  # measured at 8 rows


def test_inductor_is_an_int8_kernel():
    with pytest.raises(RooflineError, match="int8"):
        serving_precision("int4", quant_kernel="inductor")

"""A decode step's matrix products (`roofline.model.gemm_cost.streams_weight`) against what cuBLAS measured on two
GPUs this project was lent: y = x W^T over cold weights in a CUDA graph, one row of bf16 activations, microseconds
(benchmarks/results/gpu-decode-kernels-h100.json and -h200.json, skinny section, m = 1):

| W (out x in) | weight | H100 80GB HBM3 | H200 |
|---|---:|---:|---:|
| 4096 x 4096 | 33.6 MB | 16.2 | 13.4 |
| 6144 x 4096 | 50.3 MB | 21.0 | 16.9 |
| 14336 x 4096 | 117.4 MB | 42.8 | 31.0 |
| 4096 x 14336 | 117.4 MB | 44.9 | 32.1 |
| 28672 x 4096 | 234.9 MB | 83.2 | 57.1 |
| 128256 x 4096 | 1050.7 MB | 370.2 | 240.8 |

The sustained (Triad) rate alone, with the launch as a floor, priced every one of them too fast: 14336 x 4096 on
the H100 at 117.4 MB / 2.97 TB/s = 39.5 us against 42.8.
"""

from __future__ import annotations

import pytest

from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.context import CostContext
from roofline.model.costmodel import op_cost
from roofline.model.gemm_cost import streams_weight
from roofline.model.llm_precision import serving_precision
from roofline.model.llm_step import predict_serving
from roofline.workload.llm.builtins import get_config
from roofline.workload.ops import Linear
from roofline.workload.precision import get_precision
from tests.cost_context import gpu_context

MEASURED_US = {
    "h100-sxm5-80gb": {(4096, 4096): 16.2, (6144, 4096): 21.0, (14336, 4096): 42.8, (4096, 14336): 44.9,
                       (28672, 4096): 83.2, (128256, 4096): 370.2},
    "h200-sxm-141gb": {(4096, 4096): 13.4, (6144, 4096): 16.9, (14336, 4096): 31.0, (4096, 14336): 32.1,
                       (28672, 4096): 57.1, (128256, 4096): 240.8},
}
STEP_WEIGHTS_BYTES = 16e9
"""A decode step reads every weight once (Llama-3-8B in bf16): none of them is still in L2 when it comes round."""


def _context(profile: str) -> CostContext:
    return gpu_context(profile, "bf16", weight_reuse_bytes=STEP_WEIGHTS_BYTES)


def _decode(out_features: int, in_features: int, batch: int = 1) -> Linear:
    return Linear("w", batch=batch, in_features=in_features, out_features=out_features)


@pytest.mark.parametrize("profile", sorted(MEASURED_US))
def test_decode_products_take_the_measured_time(profile):
    ctx = _context(profile)
    for (n, k), measured_us in MEASURED_US[profile].items():
        predicted_us = op_cost(_decode(n, k), "forward", ctx).device_s * 1e6
        assert predicted_us == pytest.approx(measured_us, rel=0.12), (n, k)


@pytest.mark.parametrize("profile", sorted(MEASURED_US))
def test_the_sustained_rate_alone_was_too_fast(profile):
    ctx = _context(profile)
    dram = ctx.ceilings.dram.bandwidth_bytes_per_s
    errors = sorted(max(2 * n * k / dram, ctx.ceilings.launch_s) * 1e6 / measured_us - 1
                    for (n, k), measured_us in MEASURED_US[profile].items())
    assert errors[len(errors) // 2] < -0.05


def test_the_fixed_time_adds_to_the_stream():
    # 14336 x 4096 bf16 on the H100: 117,440,512 B / (1.09 x 2.97 TB/s) = 36.28 us, plus 5.7 us fixed = 41.98 us,
    # plus the row read and written (8192 + 28672 B, 0.01 us)
    ctx = _context("h100-sxm5-80gb")
    cost = op_cost(_decode(14336, 4096), "forward", ctx)
    assert ctx.ceilings.streaming_fixed_s == pytest.approx(5.7e-6)
    assert cost.memory_s == pytest.approx(5.7e-6 + 117_440_512 / (1.09 * 2.97e12), rel=1e-3)


TILED_US = {(4096, 4096): {64: 15.0, 128: 15.5}, (14336, 4096): {64: 44.8, 128: 46.4},
            (4096, 14336): {64: 47.1, 128: 52.6}, (28672, 4096): {64: 88.9, 128: 89.6}}
"""The H100's products at 64 and 128 rows (tiled kernels, still bound by their weight), which the fit left out."""


def test_tiled_products_bound_by_their_weight_follow_the_same_line():
    ctx = _context("h100-sxm5-80gb")
    errors = []
    for (n, k), by_rows in TILED_US.items():
        for rows, measured_us in by_rows.items():
            predicted_us = op_cost(_decode(n, k, batch=rows), "forward", ctx).device_s * 1e6
            errors.append(abs(predicted_us / measured_us - 1))
            assert predicted_us == pytest.approx(measured_us, rel=0.2), (n, k, rows)
    assert sorted(errors)[len(errors) // 2] < 0.10


def test_only_gpu_products_whose_weight_comes_from_dram_stream():
    c = _context("h100-sxm5-80gb").ceilings
    assert streams_weight(_decode(4096, 4096), c, cold_weight=True)
    assert streams_weight(_decode(4096, 4096, batch=512), c, cold_weight=True)
    assert not streams_weight(_decode(4096, 4096), c, cold_weight=False)
    cpu = ceilings_for(find_profile("xeon-platinum-8380", kind="cpu"), get_precision("fp32"))
    assert not streams_weight(_decode(4096, 4096), cpu, cold_weight=True)


def test_weight_only_products_keep_their_library_s_kernels():
    """int8/int4 weight-only products run their quantisation library's kernels, not cuBLAS: a Llama-2-7B decode
    step in int4 (fused) prices its products from the packed weights at the DRAM rate after the 3.75 us the one
    measured library kernel (tinygemm, on the lent H100 and H200) paid, not cuBLAS's measured fixed time and share."""
    cfg, hw = get_config("llama-2-7b"), find_profile("a100-sxm4-80gb", kind="gpu")
    int4 = serving_precision("int4", activation="bf16")
    bf16 = serving_precision("bf16")
    priced = predict_serving(cfg, hw, int4, 1, 128, 2, "graph")
    layers = {o.name: o for o, _ in priced.decode.costs}
    gate = layers["mlp.gate"]
    c = ceilings_for(hw, get_precision("bf16"))
    # 4096 x 11008 weights at 0.5 + 4 / 128 bytes, from DRAM: about 14.1 us on an A100's 1.70 TB/s, after 3.75 us
    assert gate.memory_s == pytest.approx(3.75e-6 + 4096 * 11008 * (0.5 + 4 / 128) / c.dram.bandwidth_bytes_per_s,
                                          rel=0.02)
    dense = {o.name: o for o, _ in predict_serving(cfg, hw, bf16, 1, 128, 2, "graph").decode.costs}["mlp.gate"]
    assert dense.memory_s == pytest.approx(c.streaming_fixed_s + 4096 * 11008 * 2 / (
        c.streaming_share * c.dram.bandwidth_bytes_per_s), rel=0.02)

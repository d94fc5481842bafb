"""A tensor-core GEMM's rate against its depth k (`roofline.model.gemm_cost.TILE_DEPTH_OVERHEAD`), checked against
an independent measurement: XLA's H100 performance table (openxla/xla, xla/service/gpu/model/
matmul_interpolator_data.h, key "sm_90", the median CUPTI kernel time of five runs), 4 batched products of
4096 x 4096 outputs:

| k | bf16 TFLOP/s | TF32 ("f32xf32->f32") TFLOP/s |
|---|---:|---:|
| 256 | 505 | 242 |
| 512 | 620 | 317 |
| 1024 | 722 | 322 |
| 2048 | 760 | 341 |
| 4096 | 789 | 346 |

The model's level is set by the profile's own sustained rates (725.7 bf16 measured at 8192^3 on another H100,
the runtime profile's TF32 share), so the check is each depth within 15% of the table and the fall from k = 4096
to k = 256 within 10 points of the table's.
"""

from __future__ import annotations

import pytest

from roofline.model.context import CostContext
from roofline.model.costmodel import op_cost
from roofline.model.gemm_cost import TILE_DEPTH_OVERHEAD, gemm_compute_s
from roofline.workload.ops import Conv2d, Gemm
from roofline.workload.ops.base import GemmView
from tests.cost_context import gpu_context

XLA_H100 = {
    "bf16": {256: 505e12, 512: 620e12, 1024: 722e12, 2048: 760e12, 4096: 789e12},
    "tf32": {256: 242e12, 512: 317e12, 1024: 322e12, 2048: 341e12, 4096: 346e12},
}


def _rate(k: int, ctx: CostContext) -> float:
    cost = op_cost(Gemm("g", m=4096, n=4096, k=k, count=4), "forward", ctx)
    return 2 * 4 * 4096 * 4096 * k / cost.device_s


@pytest.mark.parametrize("precision", ["bf16", "tf32"])
def test_h100_rate_falls_with_depth_as_xla_measured(precision):
    ctx = gpu_context("h100-sxm5-80gb", precision)
    table = XLA_H100[precision]
    rates = {k: _rate(k, ctx) for k in table}
    for k, measured in table.items():
        assert rates[k] == pytest.approx(measured, rel=0.15), k
    assert rates[256] / rates[4096] == pytest.approx(table[256] / table[4096], abs=0.10)


def test_without_the_overhead_shallow_products_would_be_a_third_too_fast():
    ctx = gpu_context("h100-sxm5-80gb", "bf16")
    view = GemmView(4096, 4096, 256, 4)
    rate = ctx.ceilings.matrix_flops_per_s
    flat, *_ = gemm_compute_s(view, rate, ctx)
    deep, *_ = gemm_compute_s(view, rate, ctx, TILE_DEPTH_OVERHEAD)
    measured_s = view.flops / XLA_H100["bf16"][256]
    assert flat < 0.75 * measured_s < deep


def test_square_product_at_the_reference_depth_keeps_the_sustained_rate():
    ctx = gpu_context("h100-sxm5-80gb", "bf16")
    view = GemmView(8192, 8192, 8192)
    t, *_ = gemm_compute_s(view, ctx.ceilings.matrix_flops_per_s, ctx, TILE_DEPTH_OVERHEAD)
    assert view.flops / t == pytest.approx(ctx.ceilings.matrix_flops_per_s, rel=0.01)


def test_convolutions_pay_no_depth_overhead_and_cuda_core_products_do():
    # the table times matrix products on tensor cores; cuDNN's implicit-GEMM convolutions are priced at the
    # square rate, as before; a SIMT product's tiles fill the same pipeline and store the same epilogue, so an
    # fp32 product on a V100's CUDA cores pays the same depth (256 deep: about 1.5x the flat time)
    ctx = gpu_context("h100-sxm5-80gb", "bf16")
    conv = Conv2d("c", n=64, c=64, h=56, w=56, k=64, r=1, s=1, bias=False)
    view = conv.gemm_views("forward")[0]
    cost = op_cost(conv, "forward", ctx)
    flat, *_ = gemm_compute_s(view, ctx.ceilings.matrix_flops_per_s, ctx)
    # the convolution's kernel pays its fixed time once (tests/test_gemm_fixed_time.py), not a deeper tile
    assert cost.compute_s == pytest.approx(flat + ctx.ceilings.launch_s)
    v100 = gpu_context("v100-sxm2-16gb", "fp32")
    sgemm = op_cost(Gemm("g", m=4096, n=4096, k=256), "forward", v100)
    flat32, *_ = gemm_compute_s(GemmView(4096, 4096, 256), v100.ceilings.vector_flops_per_s, v100)
    deep32, *_ = gemm_compute_s(GemmView(4096, 4096, 256), v100.ceilings.vector_flops_per_s, v100,
                                TILE_DEPTH_OVERHEAD)
    # the product's kernel also pays its fixed time once (tests/test_gemm_fixed_time.py)
    tiles_s = sgemm.compute_s - v100.ceilings.launch_s
    assert sgemm.path.startswith("CUDA cores") and tiles_s == pytest.approx(deep32)
    assert 1.4 < tiles_s / flat32 < 1.6

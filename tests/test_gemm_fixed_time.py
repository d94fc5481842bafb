"""A GPU matrix product's fixed time (`roofline.model.gemm_cost.kernel_fixed_s`) against an independent
measurement: XLA's performance table (openxla/xla, xla/service/gpu/model/matmul_interpolator_data.h, read at
ROCm/xla@d02afb4f; the median CUPTI kernel time of five runs), bf16 products of 0.1 to 9 GFLOP, in microseconds
(time = 2 m n k / the table's FLOP/s):

| m x n x k | H100 ("sm_90") | B200 ("sm_100_B200") |
|---|---:|---:|
| 256 x 4096 x 1024 | 9.04 | 7.35 |
| 256 x 2048 x 2048 | 9.65 | 8.05 |
| 256 x 4096 x 4096 | 20.53 | 13.19 |
| 512 x 512 x 512 | 6.16 | 5.54 |
| 512 x 2048 x 2048 | 12.53 | 9.11 |
| 1024 x 1024 x 1024 | 8.50 | 7.46 |

Such products take about the launch time more than their tiles' work; with the launch only as a floor, they
were priced a third to a half too fast.
"""

from __future__ import annotations

import pytest

from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.context import CostContext
from roofline.model.costmodel import op_cost
from roofline.model.gemm_cost import kernel_fixed_s
from roofline.model.step import StepOptions, predict_step
from roofline.workload.ops import Conv2d, Gemm, Linear
from roofline.workload.ops.base import GemmView
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload
from tests.cost_context import gpu_context

XLA_US = {
    "h100-sxm5-80gb": {(256, 4096, 1024): 9.04, (256, 2048, 2048): 9.65, (256, 4096, 4096): 20.53,
                       (512, 512, 512): 6.16, (512, 2048, 2048): 12.53, (1024, 1024, 1024): 8.50},
    "b200": {(256, 4096, 1024): 7.35, (256, 2048, 2048): 8.05, (256, 4096, 4096): 13.19,
             (512, 512, 512): 5.54, (512, 2048, 2048): 9.11, (1024, 1024, 1024): 7.46},
}


@pytest.mark.parametrize("profile", sorted(XLA_US))
def test_small_products_take_the_table_s_time(profile):
    ctx = gpu_context(profile, "bf16")
    for (m, n, k), measured_us in XLA_US[profile].items():
        predicted_us = op_cost(Gemm("g", m=m, n=n, k=k), "forward", ctx).device_s * 1e6
        assert predicted_us == pytest.approx(measured_us, rel=0.25), (m, n, k)


@pytest.mark.parametrize("profile", sorted(XLA_US))
def test_without_the_fixed_time_small_products_are_far_too_fast(profile):
    ctx = gpu_context(profile, "bf16")
    errors = []
    for (m, n, k), measured_us in XLA_US[profile].items():
        cost = op_cost(Gemm("g", m=m, n=n, k=k), "forward", ctx)
        floor_only_us = max(cost.compute_s - ctx.ceilings.launch_s, cost.memory_s, ctx.ceilings.launch_s) * 1e6
        errors.append(floor_only_us / measured_us - 1)
    assert sorted(errors)[len(errors) // 2] < -0.25


def test_only_tiled_matrix_products_pay_it():
    ctx = gpu_context("h100-sxm5-80gb", "bf16")
    launch = ctx.ceilings.launch_s
    assert kernel_fixed_s(Gemm("g", m=256, n=256, k=256), GemmView(256, 256, 256), ctx) == launch
    prefill = Linear("q", batch=1, in_features=4096, out_features=4096, tokens=128)
    assert kernel_fixed_s(prefill, prefill.gemm_views("forward")[0], ctx) == launch
    # a decode step's few-row product streams its weight: the launch stays its floor, not an addition
    decode = Linear("q", batch=8, in_features=4096, out_features=4096)
    assert kernel_fixed_s(decode, decode.gemm_views("forward")[0], ctx) == 0.0
    # a cuDNN implicit-GEMM convolution is a tiled product too; one too narrow for the smallest tile is not
    conv = Conv2d("c", n=64, c=64, h=56, w=56, k=64, r=1, s=1, bias=False)
    assert kernel_fixed_s(conv, conv.gemm_views("forward")[0], ctx) == launch
    narrow = Conv2d("c", n=1, c=64, h=4, w=4, k=64, r=1, s=1, bias=False)
    assert kernel_fixed_s(narrow, narrow.gemm_views("forward")[0], ctx) == 0.0
    cpu = CostContext(ceilings_for(find_profile("xeon-platinum-8380", kind="cpu"), get_precision("fp32")), 4, 4)
    assert kernel_fixed_s(Gemm("g", m=256, n=256, k=256), GemmView(256, 256, 256), cpu) == 0.0


def test_small_convolutions_take_their_measured_kernel_time():
    """ResNet-50 training at batch 12, the model itself in fp16 over NCHW, on an H100 (this project's run,
    benchmarks/results/gpu-live-h100-half.json, torch.profiler): aten::cudnn_convolution 1.01 ms and
    aten::convolution_backward 1.96 ms of device time per step, transposes included. Priced with the launch as
    a floor only, the convolutions came to 1.84 ms (-38%)."""
    profile = find_profile("h100", kind="gpu")
    pred = predict_step(build_workload("resnet50", 12), profile, get_precision("fp16"),
                        StepOptions(train=True, include_transfer=False, fp32_math="ieee", autocast=False))
    conv_s = sum(o.device_s for o in pred.ops if o.kind == "conv2d")
    assert conv_s == pytest.approx(1.01e-3 + 1.96e-3, rel=0.25)

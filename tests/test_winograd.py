"""cuDNN's Winograd F(4x4, 3x3) for fp32 3x3 stride-1 convolutions on a GPU's CUDA cores
(`roofline.model.winograd`): its products and transforms against Lavin and Gray's counts, and when the cost model
takes it instead of the direct convolution."""

from __future__ import annotations

import pytest
import yaml

import roofline.model.costmodel as costmodel
from benchmarks.published import DATASET_DIR
from benchmarks.published_kinds import gpu_steps
from roofline.model.costmodel import op_cost
from roofline.model.winograd import winograd_plan
from roofline.workload.ops import Conv2d
from tests.cost_context import gpu_context


def _vgg_conv3(n: int = 16) -> Conv2d:
    """VGG-16's conv3_2: 256 -> 256 channels at 56 x 56, 3 x 3, stride 1, padding 1."""
    return Conv2d("conv3_2", n=n, c=256, h=56, w=56, k=256, r=3, s=3, stride=1, pad=1)


def test_products_do_a_quarter_of_the_direct_multiplications():
    # F(4x4, 3x3): 36 multiplications per 4 x 4 output tile and channel pair against 9 x 16 = 144 direct
    # (Lavin and Gray 2016); 56 x 56 outputs are 14 x 14 whole tiles, so exactly 4x fewer
    conv = _vgg_conv3()
    for pass_ in ("forward", "backward_input", "backward_weight"):
        plan = winograd_plan(conv, pass_)
        assert plan is not None and plan.products.count == 36
        assert plan.products.flops == pytest.approx(2 * conv.macs / 4)


def test_transforms_move_the_tiles_in_and_out_of_the_transformed_domain():
    # forward: x read (16 x 256 x 56 x 56), its 36 x tiles x 256 transform written, the 3 x 3 filters read and
    # their 36 x 256 x 256 transform written, the products' 36 x tiles x 256 results read and y written
    conv = _vgg_conv3()
    tiles = 16 * 14 * 14
    plan = winograd_plan(conv, "forward")
    x = y = 16 * 256 * 56 * 56
    assert plan.transform_elements == x + 36 * tiles * 256 + 9 * 256 * 256 + 36 * 256 * 256 + 36 * tiles * 256 + y
    assert plan.product_elements == 36 * tiles * 256 + 36 * 256 * 256 + 36 * tiles * 256


@pytest.mark.parametrize("conv", [
    Conv2d("stride2", n=16, c=64, h=56, w=56, k=64, r=3, s=3, stride=2, pad=1),
    Conv2d("1x1", n=16, c=64, h=56, w=56, k=256, r=1, s=1),
    Conv2d("depthwise", n=16, c=64, h=56, w=56, k=64, r=3, s=3, pad=1, groups=64),
    Conv2d("dilated", n=16, c=64, h=56, w=56, k=64, r=3, s=3, pad=2, dilation=2),
])
def test_no_winograd_algorithm_outside_3x3_stride_1_dense(conv):
    assert winograd_plan(conv, "forward") is None


def test_a_wide_fp32_layer_takes_winograd_on_the_cuda_cores_and_not_on_tensor_cores():
    conv = _vgg_conv3()
    fp32 = op_cost(conv, "forward", gpu_context("v100-sxm2-16gb", "fp32"))
    assert fp32.path == "CUDA cores fp32"
    assert any(n.kind == "convolution algorithm" for n in fp32.notes)
    # at 15.7 TFLOP/s the direct convolution's 59.2 GFLOP take at least 3.8 ms; Winograd's products do a quarter
    assert fp32.device_s < 2 * conv.macs / 15.7e12
    fp16 = op_cost(conv, "forward", gpu_context("v100-sxm2-16gb", "fp16"))
    assert fp16.path.startswith("tensor cores")
    assert not any(n.kind == "convolution algorithm" for n in fp16.notes)


def test_a_half_convolution_without_tensor_cores_takes_winograd_too():
    # PyTorch describes a half convolution with float arithmetic (cuDNN's PSEUDO_HALF_CONFIG); a GTX 1080 Ti has
    # no tensor cores, so its fp16 convolution runs on the CUDA cores and may run as Winograd
    cost = op_cost(_vgg_conv3(), "forward", gpu_context("gtx-1080-ti", "fp16"))
    assert cost.path == "CUDA cores fp16"
    assert any(n.kind == "convolution algorithm" for n in cost.notes)


def test_a_layer_whose_transforms_cost_more_than_they_save_stays_direct():
    # VGG-16's conv1_2 (64 -> 64 channels at 224 x 224): the transformed tiles are 2.25x the activations, which
    # at 64 channels cost more DRAM time on a V100 than the 4x fewer multiplications save
    conv = Conv2d("conv1_2", n=16, c=64, h=224, w=224, k=64, r=3, s=3, stride=1, pad=1)
    cost = op_cost(conv, "forward", gpu_context("v100-sxm2-16gb", "fp32"))
    assert not any(n.kind == "convolution algorithm" for n in cost.notes)


CUDNN4_TO_51 = {
    # jcjohnson/cnn-benchmarks@47323ef3516e28865fe60b29ce6d439da21f4b03, outputs/titan_xm_cudnn4/*.json and
    # outputs/titan_xm_cudnn51/*.json: Torch7 on the Maxwell GTX Titan X, batch 16, the mean of 10 passes; cuDNN 4
    # has no Winograd algorithm, 5.1 both. Forward and forward + backward times in ms, cuDNN 4 / cuDNN 5.1.
    "cnnb-titanx-vgg16-fwd": 111.99 / 62.30, "cnnb-titanx-vgg16-fwdbwd": 338.69 / 192.78,
    "cnnb-titanx-resnet18-fwd": 21.54 / 16.87, "cnnb-titanx-resnet18-fwdbwd": 63.80 / 51.42,
    "cnnb-titanx-resnet50-fwd": 62.03 / 55.75, "cnnb-titanx-resnet50-fwdbwd": 178.84 / 159.62,
    "cnnb-titanx-alexnet-fwd": 8.03 / 7.09, "cnnb-titanx-alexnet-fwdbwd": 25.94 / 21.85,
}


def test_winograds_gain_matches_cudnn_4_against_5_1_on_the_maxwell_titan_x(monkeypatch):
    """What the algorithm buys, model by model, against what cuDNN 5.1 bought over cuDNN 4 on the same board:
    1.76x for VGG-16's step (its 3x3 layers wide and large), 1.12x for ResNet-50's. The published rows themselves
    (benchmarks/published/gpu-steps.yaml, block cnn-benchmarks-titan-x-maxwell) are the cuDNN 5.1 times; the
    ratio is independent of how well the direct convolution is priced. Each within 20%: the board's measured
    stream bandwidth (BabelStream, 80% of the pin rate) makes the non-fused algorithm's transforms cost more than
    the pin rate did, and VGG-16's forward comes out at 1.50x against 1.80x (1.60x at the pin rate; 1.54x before
    each convolution's bias add, a kernel of its own under either cuDNN (cudnnAddTensor in Torch7's bindings),
    was priced in both times); cuDNN 5.1 also has a fused Winograd kernel, whose transforms stay on chip, which
    the model does not price."""
    data = yaml.safe_load((DATASET_DIR / "gpu-steps.yaml").read_text())
    rows = {r.id: r for _, r in gpu_steps.rows(data) if r.id in CUDNN4_TO_51}
    with_winograd = {k: gpu_steps._predict(r)[0] for k, r in rows.items()}
    monkeypatch.setattr(costmodel, "winograd_plan", lambda op, pass_: None)
    direct = {k: gpu_steps._predict(r)[0] for k, r in rows.items()}
    for row_id, measured in CUDNN4_TO_51.items():
        assert direct[row_id] / with_winograd[row_id] == pytest.approx(measured, rel=0.20), row_id

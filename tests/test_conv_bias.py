"""A cuDNN convolution's bias is added by a kernel of its own after the convolution (aten/src/ATen/native/
Convolution.cpp: `output.add_(reshape_bias(input.dim(), bias))` for ConvBackend::Cudnn): its time adds to the
convolution's on a GPU, and nothing of it exists on a CPU, whose oneDNN convolution adds the bias itself."""

from __future__ import annotations

import pytest

from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.context import CostContext
from roofline.model.conv_cost import BIAS_ADD_KERNEL, bias_add
from roofline.model.costmodel import op_cost
from roofline.workload.ops import Conv2d
from roofline.workload.precision import get_precision


def _gpu(channels_last: bool) -> CostContext:
    return CostContext(ceilings_for(find_profile("h100", kind="gpu"), get_precision("fp16")), 2, 2,
                       channels_last=channels_last)


def test_the_bias_add_reads_and_writes_the_output_at_its_measured_rate():
    conv = Conv2d("conv1_2", n=64, c=64, h=224, w=224, k=64, r=3, s=3, stride=1, pad=1)
    for channels_last, key in ((True, BIAS_ADD_KERNEL), (False, f"{BIAS_ADD_KERNEL}:nchw")):
        ctx = _gpu(channels_last)
        seconds, host, note = bias_add(conv, "forward", ctx)
        moved = 2 * 64 * 64 * 224 * 224 * 2
        assert seconds == pytest.approx(moved / ctx.ceilings.kernel_bytes_per_s[key])
        assert host == ctx.ceilings.dispatch_s_by_kind["elementwise"] and note is not None
        without = op_cost(Conv2d("c", n=64, c=64, h=224, w=224, k=64, r=3, s=3, stride=1, pad=1, bias=False),
                          "forward", ctx)
        assert op_cost(conv, "forward", ctx).device_s == pytest.approx(without.device_s + seconds)


def test_no_bias_no_backward_no_cpu():
    ctx = _gpu(True)
    plain = Conv2d("c", n=8, c=64, h=56, w=56, k=64, r=1, s=1, bias=False)
    biased = Conv2d("c", n=8, c=64, h=56, w=56, k=64, r=1, s=1)
    assert bias_add(plain, "forward", ctx) == (0.0, 0.0, None)
    assert bias_add(biased, "backward_input", ctx) == (0.0, 0.0, None)
    cpu = CostContext(ceilings_for(find_profile("xeon-platinum-8380", kind="cpu"), get_precision("fp32")), 4, 4)
    assert bias_add(biased, "forward", cpu) == (0.0, 0.0, None)

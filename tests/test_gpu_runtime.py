"""The eager-PyTorch-on-CUDA runtime figures (measured on an H100 host) and the GPU step mechanisms they feed:
kernel streaming shares, sustained GEMM rates, GradScaler's synchronization, the training loop's host time and
the stream-ordered pageable copy."""

from __future__ import annotations

import functools

import pytest

from roofline.hardware import find_profile
from roofline.hardware.runtime import EAGER_CUDA, load_runtime
from roofline.model.ceilings import ceilings_for, sustained_matrix_rate
from roofline.model.context import KERNEL_VARIANTS
from roofline.model.conv_cost import BIAS_ADD_KERNEL
from roofline.model.step import StepOptions, predict_step
from roofline.workload.ops.attention import with_eager_attention
from roofline.workload.ops.conv import Conv2d
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload, list_models


def _zoo_kernel_keys() -> set[str]:
    """Every kernel a zoo model runs, its attention fused or eager (StepOptions.attention)."""
    keys = set()
    for spec in list_models():
        workload = build_workload(spec.name, 2)
        eager = with_eager_attention(workload)
        for op in (*workload.ops, *workload.inference_ops(), *eager.ops):
            keys.add(op.kernel_key("forward"))
            keys.add(op.kernel_key("backward_input"))
            if isinstance(op, Conv2d) and op.bias:
                keys.add(BIAS_ADD_KERNEL)
    return keys


def test_every_kernel_rate_names_a_kernel_the_ir_runs():
    rates = load_runtime(EAGER_CUDA).kernel_rates.bytes_per_s
    unknown = {functools.reduce(lambda k, v: k.replace(v, ""), KERNEL_VARIANTS, key) for key in rates}
    unknown -= _zoo_kernel_keys()
    assert not unknown, f"runtime profile names kernels no zoo op runs: {unknown}"


def test_nchw_fp16_batchnorm_forward_takes_its_layouts_rate():
    # the runtime profile's 2-byte norm:train is the channels-last step's (2.48e12 of 3.009e12); the NCHW kernel
    # timed alone streamed 0.914e12 of the IR's traffic. The backward keeps the step's measured rate (2.73e12).
    gpu = find_profile("v100", kind="gpu")
    figures = load_runtime(EAGER_CUDA).kernel_rates
    dram = ceilings_for(gpu, get_precision("amp")).dram.bandwidth_bytes_per_s
    workload = build_workload("resnet18", 32)

    def bn_rate(channels_last: bool, pass_: str) -> float:
        pred = predict_step(workload, gpu, get_precision("amp"), StepOptions(train=True, channels_last=channels_last))
        bn = next(o for o in pred.ops if o.kind == "norm" and o.pass_ == pass_ and o.bound == "memory:kernel")
        return bn.bytes / bn.memory_s

    share = {key: rates[2] / figures.reference_bandwidth_bytes_per_s for key, rates in figures.bytes_per_s.items()
             if 2 in rates}
    assert bn_rate(False, "forward") == pytest.approx(share["norm:train:nchw"] * dram, rel=0.01)
    assert bn_rate(True, "forward") == pytest.approx(share["norm:train"] * dram, rel=0.01)
    assert bn_rate(False, "backward_input") == pytest.approx(share["norm:train:backward"] * dram, rel=0.01)


def test_a_16_bit_model_trains_its_batchnorm_on_pytorchs_own_kernels():
    # The H100 run of benchmarks/results/gpu-live-h100-half.json: ResNet-50 training at batch 256 over NCHW
    # without an update, torch.profiler's device time. The model itself in fp16 (model.half()): PyTorch's native
    # BatchNorm, aten::native_batch_norm 24.57 ms and its backward 36.77 ms; the same step under autocast keeps
    # fp32 scale and shift and runs cuDNN's (aten::cudnn_batch_norm 14.94 ms forward).
    h100 = find_profile("h100", kind="gpu")
    workload = build_workload("resnet50", 256)

    def bn_ms(precision: str, pass_: str) -> float:
        pred = predict_step(workload, h100, get_precision(precision),
                            StepOptions(train=True, include_transfer=False, fp32_math="ieee"))
        return sum(o.device_s for o in pred.ops if o.kind == "norm" and o.pass_ == pass_) * 1e3

    pred = predict_step(workload, h100, get_precision("fp16"), StepOptions(train=True, include_transfer=False))
    assert any(n.kind == "native kernel" for o in pred.ops if o.kind == "norm" for n in o.notes)
    assert bn_ms("fp16", "forward") == pytest.approx(24.57, rel=0.05)
    assert bn_ms("fp16", "backward_input") == pytest.approx(36.77, rel=0.05)
    assert bn_ms("amp", "forward") < 0.8 * bn_ms("fp16", "forward")


def test_a_memory_bound_kernel_carries_under_its_dram_share_and_its_sm_cycles():
    # BatchNorm in training over fp16 tensors streamed 2.48e12 B/s on the H100 (132 SMs x 1.98 GHz, copy rate
    # 3.009e12: an 82% share), 2.13e12 over fp32: the same bytes per second, so memory held it. The H200 has the
    # same SMs at the same clock and 4.8 TB/s: the share would give it 1.6x the H100's rate, its SM-cycles the
    # H100's rate, the lower applies. The V100 (80 SMs x 1.53 GHz, 900 GB/s) has more SM-cycles per byte than
    # the H100: its share of its own DRAM level applies.
    measured = 2.48e12
    share = measured / 3.009e12

    def rate(gpu: str) -> tuple[float, float]:
        c = ceilings_for(find_profile(gpu), get_precision("fp16"))
        return c.kernel_bytes_per_s["norm:train"], c.dram.bandwidth_bytes_per_s

    h200, h200_dram = rate("h200-sxm-141gb")
    assert share * h200_dram > measured and h200 == pytest.approx(measured, rel=1e-9)
    v100, v100_dram = rate("v100-sxm2-16gb")
    assert v100 == pytest.approx(share * v100_dram, rel=1e-9)


def test_an_instruction_bound_kernel_carries_under_its_lane_cycles_and_its_wider_share():
    # BatchNorm in eval streamed 301 G elements/s over fp32 (2.412e12 B/s, 80% of the H100's copy rate) and 358 G
    # over fp16 (1.431e12, 48%): the same elements per second, so its instructions held the fp16 kernel. On
    # another board it runs at the fp16 rate per fp32 lane-cycle, as far as 80% of that board's DRAM allows.
    h100_lane_cycles = 132 * 128 * 1.98e9

    def rate(gpu: str) -> tuple[float, float]:
        c = ceilings_for(find_profile(gpu), get_precision("fp16"))
        return c.kernel_bytes_per_s["norm:eval"], c.dram.bandwidth_bytes_per_s

    assert rate("h100")[0] == pytest.approx(1.431e12, rel=1e-9)
    assert rate("h200-sxm-141gb")[0] == pytest.approx(1.431e12, rel=1e-9)
    v100, _ = rate("v100-sxm2-16gb")
    assert v100 == pytest.approx(1.431e12 * (80 * 64 * 1.53e9) / h100_lane_cycles, rel=1e-3)
    rtx4090, rtx4090_dram = rate("rtx-4090")
    assert rtx4090 == pytest.approx(2.412e12 / 3.009e12 * rtx4090_dram, rel=1e-9)
    assert rtx4090 > 1.431e12 / 3.009e12 * rtx4090_dram


def test_kernel_shares_are_below_the_copy_rate():
    kr = load_runtime(EAGER_CUDA).kernel_rates
    for element_bytes in (2, 4):
        assert all(0 < share <= 1 for share in kr.shares(element_bytes).values())


def test_same_dense_peak_shares_a_published_sustained_rate():
    # H100 SXM5: fp16 and bf16 tensor cores have the same dense peak (989.4e12); only bf16 has a published
    # sustained figure (725.7e12), so fp16 takes it
    h100 = find_profile("h100", kind="gpu")
    assert h100.tensor_cores["fp16"].sustained_flops_per_s is None
    rate, provenance = sustained_matrix_rate(h100, "fp16")
    assert rate == pytest.approx(725.7e12)
    assert "same peak" in provenance


def test_no_published_rate_takes_the_measured_library_share():
    # RTX 3090 tf32: no sustained figure for any dtype, so datasheet x the share measured on the H100
    gpu = find_profile("rtx-3090", kind="gpu")
    share = load_runtime(EAGER_CUDA).gemm_sustained_share.by_dtype["tf32"]
    rate, provenance = sustained_matrix_rate(gpu, "tf32")
    assert rate == pytest.approx(gpu.tensor_cores["tf32"].dense_flops_per_s.value * share)
    assert provenance == "datasheet x measured library share"


def test_amp_training_synchronizes_once_through_grad_scaler():
    gpu = find_profile("v100", kind="gpu")
    c = ceilings_for(gpu, get_precision("amp"))
    amp = predict_step(build_workload("resnet18", 8), gpu, get_precision("amp"), StepOptions(train=True))
    fp32 = predict_step(build_workload("resnet18", 8), gpu, get_precision("fp32"), StepOptions(train=True))
    assert amp.sync_s == pytest.approx(c.sync_s)
    assert fp32.sync_s == 0.0


def test_training_loop_host_time_grows_with_parameter_tensors():
    # ResNet-50 has 161 parameter tensors (53 conv weights, 53 BatchNorm weight/bias pairs, fc weight and bias)
    gpu = find_profile("v100", kind="gpu")
    loop = load_runtime(EAGER_CUDA).training_loop_host_s
    pred = predict_step(build_workload("resnet50", 8), gpu, get_precision("amp"), StepOptions(train=True))
    opt = next(o for o in pred.ops if o.name == "optimizer")
    around = next(o for o in pred.ops if o.kind == "loop")
    assert opt.host_s == pytest.approx(loop.optimizer_step.fixed + 161 * loop.optimizer_step.per_param_tensor)
    assert around.host_s == pytest.approx(loop.zero_grad.seconds(161) + loop.grad_scaler.seconds(161))


def test_pageable_copy_is_not_overlapped():
    gpu = find_profile("v100", kind="gpu")
    pred = predict_step(build_workload("resnet50", 64), gpu, get_precision("fp16"), StepOptions())
    assert pred.transfer_s > 0
    assert pred.step_time_s == pytest.approx(max(pred.host_s, pred.device_s) + pred.transfer_s)


def test_a_training_step_costs_the_host_more_per_call():
    # the same forward op, priced in an inference step and in a training step: the host's call cost differs by
    # the measured training factor (autograd's recording and backward engine), its device time not at all
    gpu = find_profile("v100", kind="gpu")
    factor = load_runtime(EAGER_CUDA).training_host_factor.value
    wl = build_workload("resnet18", 8)
    infer = predict_step(wl, gpu, get_precision("fp16"), StepOptions(include_transfer=False))
    train = predict_step(wl, gpu, get_precision("fp16"), StepOptions(train=True, include_transfer=False))
    first_infer = next(o for o in infer.ops if o.pass_ == "forward" and o.launches)
    first_train = next(o for o in train.ops if o.pass_ == "forward" and o.name == first_infer.name)
    assert first_train.host_s == pytest.approx(first_infer.host_s * factor)
    assert first_train.device_s == pytest.approx(first_infer.device_s)

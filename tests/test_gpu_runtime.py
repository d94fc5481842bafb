"""The eager-PyTorch-on-CUDA runtime figures (measured on an H100 host) and the GPU step mechanisms they feed:
kernel streaming shares, sustained GEMM rates, GradScaler's synchronization, the training loop's host time and
the stream-ordered pageable copy."""

from __future__ import annotations

import functools
import math

import pytest

from roofline.hardware import find_profile
from roofline.hardware.runtime import EAGER_CUDA, load_runtime
from roofline.model.ceilings import carried_kernel_rate, ceilings_for, sm_cycles_per_s, sustained_matrix_rate
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


def _sm_scale(gpu_name: str) -> float:
    """This GPU's SMs x clock against the H100's, times the H100's copy rate: what the runtime profile's issue
    times are carried by."""
    kr = load_runtime(EAGER_CUDA).kernel_rates
    return sm_cycles_per_s(find_profile(gpu_name, kind="gpu")) / kr.reference_sm_cycles_per_s \
        * kr.reference_bandwidth_bytes_per_s


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

    def carried(key: str) -> float:
        # a Volta board: the kernel's H100 share of the copy rate, of its own DRAM level or its SM-cycles
        share = figures.bytes_per_s[key][2] / figures.reference_bandwidth_bytes_per_s
        return share * min(dram, _sm_scale("v100"))

    assert bn_rate(False, "forward") == pytest.approx(carried("norm:train:nchw"), rel=0.01)
    assert bn_rate(True, "forward") == pytest.approx(carried("norm:train"), rel=0.01)
    assert bn_rate(False, "backward_input") == pytest.approx(carried("norm:train:backward"), rel=0.01)
    assert carried("norm:train:nchw") < carried("norm:train")


def test_kernel_rates_carry_from_the_h100_to_the_h200_as_the_h200_measured():
    # benchmarks/results/gpu-live-h200-kernels.json (2026-11-27): ResNet-50 training under torch.profiler on an
    # H200 (the H100's 132 SMs at 1.98 GHz, 1.42x its copy rate), device time per step against the H100's
    # (gpu-live-h100.json) for the same ops: AMP channels-last at batch 256, cudnn_batch_norm 6.879 -> 5.718 ms,
    # its backward 10.435 -> 8.123 ms, max_pool2d_with_indices 0.860 -> 0.822 ms; fp32 at batch 64,
    # cudnn_batch_norm 4.001 -> 3.539 ms. Each H200 rate is the runtime profile's H100 rate times that speed-up.
    # Before this comparison every such kernel was carried to the H200 at the H100's rate (same SM-cycles).
    rates = load_runtime(EAGER_CUDA).kernel_rates.bytes_per_s
    h200 = find_profile("h200-sxm-141gb", kind="gpu")
    amp = ceilings_for(h200, get_precision("fp16")).kernel_bytes_per_s
    fp32 = ceilings_for(h200, get_precision("fp32")).kernel_bytes_per_s
    measured = {"norm:train": (amp, rates["norm:train"][2] * 6.879 / 5.718),
                "norm:train:backward": (amp, rates["norm:train:backward"][2] * 10.435 / 8.123),
                "pool:max": (amp, rates["pool:max"][2] * 0.860 / 0.822),
                "norm:train fp32": (fp32, rates["norm:train"][4] * 4.001 / 3.539)}
    for key, (carried, rate) in measured.items():
        assert carried[key.split()[0]] == pytest.approx(rate, rel=0.06), key
    assert rates["norm:train"][2] < 0.9 * measured["norm:train"][1]


def test_a_kernels_carried_rate_is_its_memory_and_issue_times_combined():
    share, reference = 0.48, 3.0e12
    assert carried_kernel_rate(share, reference, reference) == pytest.approx(share * reference, rel=1e-12)
    # unlimited memory: only the issue time is left, share / sqrt(1 - share^2) of the reference copy rate
    assert carried_kernel_rate(share, 1e30, reference) == pytest.approx(share / math.sqrt(1 - share**2) * reference)
    # unlimited issue: the kernel streams at the DRAM rate; a kernel at the copy rate stays there
    assert carried_kernel_rate(share, 1e12, 1e30) == pytest.approx(1e12)
    assert carried_kernel_rate(1.0, 4e12, reference) == pytest.approx(4e12)
    # the sharp bound (p = infinity) is the lower of the two
    assert carried_kernel_rate(share, 1e12, reference, math.inf) == pytest.approx(1e12)
    assert carried_kernel_rate(share, 1e13, reference, math.inf) == pytest.approx(share * reference)


def test_an_instruction_bound_kernel_carries_its_issue_time_by_lane_cycles():
    # BatchNorm in eval streamed 301 G elements/s over fp32 (2.412e12 B/s, 80% of the H100's copy rate) and 358 G
    # over fp16 (1.431e12, 48%): the same elements per second, so its instructions held the fp16 kernel. Its issue
    # time goes by fp32 lane-cycles (64 per SM on the V100 and T4, 128 on the H100 and the RTX 4090); on an SM that
    # issues as the H100's does (Hopper, or GA102, Ada and Blackwell at 128 lanes) combined with the bytes at its
    # DRAM rate, elsewhere as far as 80% of that board's DRAM allows.
    kr = load_runtime(EAGER_CUDA).kernel_rates
    h100_lane_cycles = 132 * 128 * 1.98e9
    share = 1.431e12 / kr.reference_bandwidth_bytes_per_s

    def rate(gpu: str) -> tuple[float, float]:
        c = ceilings_for(find_profile(gpu), get_precision("fp16"))
        return c.kernel_bytes_per_s["norm:eval"], c.dram.bandwidth_bytes_per_s

    v100, _ = rate("v100-sxm2-16gb")
    assert v100 == pytest.approx(1.431e12 * (80 * 64 * 1.53e9) / h100_lane_cycles, rel=1e-3)
    rtx4090, rtx4090_dram = rate("rtx-4090")
    assert rtx4090 == pytest.approx(carried_kernel_rate(share, rtx4090_dram, _sm_scale("rtx-4090")))
    t4, t4_dram = rate("t4")
    assert t4 == pytest.approx(min(2.412e12 / 3.009e12 * t4_dram, share * _sm_scale("t4") * 64 / 128), rel=1e-9)
    h200, h200_dram = rate("h200-sxm-141gb")
    assert h200 == pytest.approx(carried_kernel_rate(share, h200_dram, _sm_scale("h200-sxm-141gb")))
    assert 1.431e12 < h200 < share * h200_dram


def test_the_combined_carry_stays_within_the_reference_architecture():
    # the fifteenth held-out set (TITAN RTX and RTX 2080 Ti, Turing) came out 17.2% -> 22.4% too fast when every
    # board carried kernels by memory and issue time combined: only Hopper boards and SMs that issue as theirs do
    # (128 fp32 lanes on GA102, Ada and Blackwell) do; Turing, Volta and GA100 (64 lanes) keep the lower-of carry
    kr = load_runtime(EAGER_CUDA).kernel_rates
    assert kr.reference_architecture == "Hopper"
    kin = {"h100", "h200-sxm-141gb", "rtx-4090", "rtx-3090", "b200"}
    for gpu in (*sorted(kin), "titan-rtx", "rtx-2080-ti", "a100", "v100-sxm2-16gb"):
        c = ceilings_for(find_profile(gpu), get_precision("fp16"))
        share = kr.bytes_per_s["norm:train"][2] / kr.reference_bandwidth_bytes_per_s
        combined = carried_kernel_rate(share, c.dram.bandwidth_bytes_per_s, _sm_scale(gpu))
        if gpu in kin:
            assert c.kernel_bytes_per_s["norm:train"] == pytest.approx(combined)
        else:
            assert c.kernel_bytes_per_s["norm:train"] == pytest.approx(
                share * min(c.dram.bandwidth_bytes_per_s, _sm_scale(gpu)))


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


def test_an_eight_bit_dtype_without_a_figure_takes_its_boards_sixteen_bit_share():
    # L40S: bf16 sustains a published 269.15e12 of its 366.5e12 dense peak; fp8 has no figure, so it sustains
    # the same share of its own 733e12 peak, not the datasheet peak
    gpu = find_profile("l40s", kind="gpu")
    assert gpu.tensor_cores["fp8"].sustained_flops_per_s is None
    rate, provenance = sustained_matrix_rate(gpu, "fp8")
    assert rate == pytest.approx(733.0e12 * 269.15e12 / 366.5e12)
    assert provenance == "datasheet x this board's published bf16 share"
    # H100 SXM5: fp8's own published figure (cuBLASLt, 1377.3e12) wins over the carried share
    assert sustained_matrix_rate(find_profile("h100", kind="gpu"), "fp8")[0] == pytest.approx(1377.3e12)


def test_a_sixteen_bit_share_above_the_listed_peak_does_not_lift_eight_bit_above_its_peak():
    # RTX 5090: bf16's published 238e12 exceeds the 209.5e12 fp32-accumulate peak its profile lists; fp8 stays at
    # its datasheet peak rather than 1.14x it
    gpu = find_profile("rtx-5090", kind="gpu")
    assert gpu.tensor_cores["bf16"].sustained_flops_per_s.value > gpu.tensor_cores["bf16"].dense_flops_per_s.value
    assert sustained_matrix_rate(gpu, "fp8")[0] == pytest.approx(gpu.tensor_cores["fp8"].dense_flops_per_s.value)


def test_tf32_takes_its_boards_published_sixteen_bit_share_times_the_librarys_ratio():
    # A100-SXM4-80GB: no TF32 figure, a published bf16 one; TF32 sustains the board's bf16 share of peak times the
    # ratio the runtime's GPU measured between the two dtypes
    gpu = find_profile("a100-sxm4-80gb", kind="gpu")
    cores = gpu.tensor_cores
    library = load_runtime(EAGER_CUDA).gemm_sustained_share.by_dtype
    expected = (cores["tf32"].dense_flops_per_s.value * cores["bf16"].sustained_flops_per_s.value
                / cores["bf16"].dense_flops_per_s.value * library["tf32"] / library["bf16"])
    rate, provenance = sustained_matrix_rate(gpu, "tf32")
    assert rate == pytest.approx(expected)
    assert "published bf16 share" in provenance


def test_no_published_rate_takes_the_measured_library_share():
    # RTX 4080 tf32: no sustained figure for any dtype, so datasheet x the share measured on the H100
    gpu = find_profile("rtx-4080", kind="gpu")
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


def test_a_python_kernel_call_costs_what_the_h100_host_calibration_measured():
    """The fused runtime's host cost per kernel is the calibration's queued launch rate on the same host (a tiny CUDA
    op called back to back from Python), the file the runtime profile cites."""
    from pathlib import Path

    import yaml

    calibrated = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h100-calibrated.yaml"
    measured = yaml.safe_load(calibrated.read_text())["measured"]["kernel_launch_s"]
    assert load_runtime(EAGER_CUDA).host_call_s.by_kind["kernel_call"] == pytest.approx(measured, rel=0.01)

"""The cost model against closed forms computed from the profiles' own datasheet figures.

References (all from hardware_profiles/gpu/v100-sxm2-16gb.yaml, NVIDIA's V100 datasheet):
fp16 tensor-core peak 125e12 FLOP/s, HBM2 900e9 B/s, fp16 alignment 8 elements (16 bytes), 80 SMs at
1.53e9 Hz with 64 fp32 lanes each, L2 6 MiB at 2048 B/cycle; framework dispatch 10 us, kernel launch 5 us.
The datasheet roofline alone: no framework runtime profile (StepOptions.runtime=None).
"""

from __future__ import annotations

import dataclasses

import pytest

from roofline.hardware.derived import vector_peak
from roofline.hardware.load import SHIPPED_DIR, load_profile
from roofline.model.context import CostContext
from roofline.model.costmodel import op_cost
from roofline.model.step import StepOptions, predict_step
from roofline.workload.ops import Conv2d, Elementwise, Gemm, Linear, Workload
from roofline.workload.precision import get_precision

V100_TENSOR_FP16 = 125e12
V100_HBM = 900e9
V100_FP32_VECTOR = 80 * 1.53e9 * 64 * 2  # SMs x clock x lanes x 2 (FMA) = 15.67e12 FLOP/s
V100_FP16_VECTOR = 2 * V100_FP32_VECTOR  # half2: fp16_to_fp32_ratio 2 -> 31.33e12 FLOP/s


@pytest.fixture(scope="module")
def textbook():
    return load_profile(SHIPPED_DIR / "cpu" / "textbook-cpu.yaml")


def one_op(op, profile, precision="fp32"):
    """Inference step of a workload holding only `op` (no input copy), and the op's single cost."""
    wl = Workload(name=op.name, batch=1, ops=[op], input_bytes=0)
    pred = predict_step(wl, profile, get_precision(precision), StepOptions(include_transfer=False, runtime=None))
    (cost,) = pred.ops
    return pred, cost


def test_aligned_fp16_gemm_is_compute_bound_at_tensor_peak(v100):
    pred, cost = one_op(Gemm("g", m=8192, n=8192, k=8192), v100, "fp16")
    ideal = 2 * 8192**3 / V100_TENSOR_FP16  # 1.0995e12 FLOP / 125e12 FLOP/s = 8.80 ms
    assert cost.bound == "compute"
    assert cost.path == "tensor cores fp16"
    assert cost.notes == ()
    assert ideal <= pred.step_time_s <= 1.03 * ideal
    # compulsory bytes: A, B, C each 8192^2 x 2 B = 3 x 134.2 MB = 402.7 MB
    assert cost.bytes == 3 * 8192**2 * 2


def test_odd_k_loses_tensor_cores_and_says_why(v100):
    aligned, _ = one_op(Gemm("g", m=8192, n=8192, k=8192), v100, "fp16")
    odd, cost = one_op(Gemm("g", m=8192, n=8192, k=8191), v100, "fp16")
    # 8191 fp16 elements are only 2-byte aligned: 16-byte loads become 2-byte ones, 1/8 of the tensor rate
    # (15.6e12) is below the half2 CUDA-core rate, so the CUDA cores run it:
    # 2 x 8192 x 8192 x 8191 / 31.33e12 FLOP/s = 35.1 ms, 4x the aligned time.
    assert odd.step_time_s > 3 * aligned.step_time_s
    assert odd.step_time_s >= 2 * 8192 * 8192 * 8191 / V100_FP16_VECTOR * 0.999
    assert cost.path == "CUDA cores fp16"
    assert any("not multiples of 8" in n for n in cost.notes)


def test_half_aligned_k_runs_tensor_cores_at_half_rate(v100):
    _, cost = one_op(Gemm("g", m=8192, n=8192, k=8188), v100, "fp16")
    # 8188 = 4 x 2047: 8-byte loads, half of the 16-byte width -> tensor rate x 0.5 = 62.5e12 FLOP/s;
    # 2 x 8192 x 8192 x 8188 / 62.5e12 = 17.6 ms
    ideal = 2 * 8192 * 8192 * 8188 / (V100_TENSOR_FP16 / 2)
    assert ideal <= cost.compute_s <= 1.03 * ideal
    assert cost.path == "tensor cores fp16"
    assert any("x0.5" in n for n in cost.notes)


def test_multiple_of_eight_k_has_no_alignment_note(v100):
    _, cost = one_op(Gemm("g", m=8192, n=8192, k=8184), v100, "fp16")  # 8184 = 8 x 1023
    assert not any("not multiples" in n for n in cost.notes)
    ideal = 2 * 8192 * 8192 * 8184 / V100_TENSOR_FP16
    assert ideal <= cost.compute_s <= 1.03 * ideal


@pytest.mark.parametrize("batch", [127, 128, 129, 136])
def test_linear_batch_is_m_and_never_misaligns(v100, batch):
    # Linear(4096 -> 4096): n = out = 4096 and k = in = 4096 are multiples of 8; the batch is M, which
    # tensor cores do not need aligned (NVIDIA DL performance guide, "Tensor Core Requirements").
    _, cost = one_op(Linear("fc", batch=batch, in_features=4096, out_features=4096), v100, "fp16")
    assert not any("not multiples" in n for n in cost.notes)
    assert cost.path == "tensor cores fp16"
    # Neither side can beat its roof: 2 x B x 4096^2 / 125e12, and the fp16 weights 4096^2 x 2 B / 900e9 = 37.3 us
    assert cost.compute_s >= 2 * batch * 4096**2 / V100_TENSOR_FP16
    assert cost.memory_s >= 4096**2 * 2 / V100_HBM


def test_linear_throughput_around_128(v100):
    def rate(batch):
        pred, _ = one_op(Linear("fc", batch=batch, in_features=4096, out_features=4096), v100, "fp16")
        return batch / pred.step_time_s  # rows per second

    # 127 and 128 rows fit the same 128-row tiles: per-sample throughput within 2%
    assert rate(127) == pytest.approx(rate(128), rel=0.02)
    # 129 rows spill into a second row of tiles (tile quantization, NVIDIA's matrix-multiplication guide):
    # it can only lose throughput, and 136 = 17 x 8 fills those same tiles with more useful rows
    assert rate(129) < rate(128)
    assert rate(136) > rate(129)
    assert rate(136) / rate(129) == pytest.approx(136 / 129, rel=0.02)


def test_unaligned_out_features_gets_a_note(v100):
    _, cost = one_op(Linear("fc", batch=128, in_features=4096, out_features=4095), v100, "fp16")
    assert any("not multiples of 8" in n for n in cost.notes)


def test_large_elementwise_add_streams_from_dram(v100):
    n = 2**28
    pred, cost = one_op(Elementwise("add", numel=n), v100, "fp32")
    # read two fp32 inputs and write one output: 3 x 2^28 x 4 B = 3.22 GB >> 6 MiB L2;
    # 3.22e9 B / 900e9 B/s = 3.579 ms
    expected = 3 * n * 4 / V100_HBM
    assert cost.bound == "memory:DRAM"
    assert cost.bytes == 3 * n * 4
    assert pred.step_time_s == pytest.approx(expected, rel=1e-9)
    # 2^28 adds at 15.67e12 FLOP/s = 17 us: far below the memory time
    assert cost.compute_s == pytest.approx(n / V100_FP32_VECTOR, rel=1e-3)


def test_small_elementwise_add_is_served_by_l2(v100):
    n = 2**16
    _, cost = one_op(Elementwise("add", numel=n), v100, "fp32")
    # 3 x 2^16 x 4 B = 786 kB fits the 6 MiB L2; L2 delivers 2048 B/cycle x 1.53e9 Hz = 3.13e12 B/s
    assert cost.memory_s == pytest.approx(3 * n * 4 / (2048 * 1.53e9), rel=1e-9)
    # ... which is 0.25 us, far below the 10 us framework dispatch: overhead-bound
    assert cost.bound == "overhead"


def test_tiny_gemm_is_overhead_bound_on_gpu(v100):
    pred, cost = one_op(Gemm("g", m=8, n=8, k=8), v100, "fp32")
    # 1024 FLOP: the kernel is its launch (5 us) and one tile's pipeline fill and epilogue (a few us on one SM);
    # the host's dispatch (10 us, profile overheads) exceeds both, and on a GPU host and device overlap: the
    # step is the dispatch's 10 us
    assert cost.bound == "overhead"
    assert cost.host_s == pytest.approx(v100.overheads.framework_dispatch_s.value)
    launch = v100.overheads.kernel_launch_s.value
    assert launch <= cost.device_s < 2 * launch
    assert pred.step_time_s == pytest.approx(1.0e-5)


def test_tiny_gemm_on_cpu_adds_dispatch_and_compute(textbook):
    pred, cost = one_op(Gemm("g", m=8, n=8, k=8), textbook, "fp32")
    # one thread dispatches and computes: step = 10 us dispatch + device time (no overlap on a CPU)
    assert cost.bound == "overhead"
    assert pred.step_time_s == pytest.approx(1.0e-5 + cost.device_s, rel=1e-12)
    assert cost.device_s < 1e-6


def test_big_cpu_gemm_at_vector_peak(textbook):
    _, cost = one_op(Gemm("g", m=3072, n=3072, k=3072), textbook, "fp32")
    # 16 cores x 2e9 Hz x 16 fp32 lanes (512-bit) x 2 FMA units x 2 = 2.048e12 FLOP/s;
    # 2 x 3072^3 = 5.80e10 FLOP -> 28.3 ms. 3072 = 16 x 192 = 24 x 128 fills the CPU blocks evenly.
    ideal = 2 * 3072**3 / (16 * 2e9 * 16 * 2 * 2)
    assert cost.bound == "compute"
    assert ideal <= cost.compute_s <= 1.05 * ideal


def test_depthwise_conv_runs_on_vector_units(v100):
    op = Conv2d("dw", n=32, c=256, h=56, w=56, k=256, r=3, s=3, pad=1, groups=256)
    _, cost = one_op(op, v100, "fp16")
    # no channel reduction: 2 x 32 x 256 x 56 x 56 x 9 MACs... on the half2 CUDA cores, not tensor cores
    assert cost.path.startswith("CUDA cores")
    macs = 32 * 256 * 56 * 56 * 9
    assert cost.compute_s == pytest.approx(op.flops("forward") / V100_FP16_VECTOR, rel=1e-9)
    assert op.flops("forward") >= 2 * macs


def test_nchw_tensor_core_conv_adds_its_transposes_as_kernels_of_their_own(v100):
    # 3x3 conv, 256 -> 256 channels of 56 x 56 at batch 64, fp16: compute-bound on tensor cores, so a transpose
    # priced inside max(compute, memory) would vanish. cuDNN's nchwToNhwc / nhwcToNchw kernels run before and after
    # it: one read and one write of the input (64 x 256 x 56 x 56 x 2 B = 102.8 MB) and of the output (the same),
    # 4 x 102.8 MB = 411 MB at HBM2's 900 GB/s = 0.457 ms more than in channels_last.
    op = Conv2d("c", n=64, c=256, h=56, w=56, k=256, r=3, s=3, pad=1, bias=False)
    pred, _ = one_op(op, v100, "fp16")
    nchw = op_cost(op, "forward", CostContext(pred.ceilings, 2, 2))
    nhwc = op_cost(op, "forward", CostContext(pred.ceilings, 2, 2, channels_last=True))
    tensor_bytes = 64 * 256 * 56 * 56 * 2
    assert nhwc.bound == "compute"
    assert nchw.device_s - nhwc.device_s == pytest.approx(4 * tensor_bytes / V100_HBM, rel=1e-6)


def test_tf32_conv_transposes_only_what_it_reads():
    # Ampere's TF32 implicit-GEMM kernels write NCHW themselves (nhwckrsc_nchw): only the input is transposed,
    # 2 x 64 x 256 x 56 x 56 x 4 B = 411 MB at the profile's DRAM rate (its published BabelStream Triad,
    # 1376.7 GB/s: 0.299 ms)
    a100 = load_profile(SHIPPED_DIR / "gpu" / "a100-sxm4-40gb.yaml")
    op = Conv2d("c", n=64, c=256, h=56, w=56, k=256, r=3, s=3, pad=1, bias=False)
    pred, _ = one_op(op, a100, "tf32")
    dram = pred.ceilings.levels[-1].bandwidth_bytes_per_s
    nchw = op_cost(op, "forward", CostContext(pred.ceilings, 4, 4))
    nhwc = op_cost(op, "forward", CostContext(pred.ceilings, 4, 4, channels_last=True))
    assert nchw.path == "tensor cores tf32"
    assert nchw.device_s - nhwc.device_s == pytest.approx(2 * 64 * 256 * 56 * 56 * 4 / dram, rel=1e-6)


def test_training_passes_triple_gemm_flops(v100):
    op = Linear("fc", batch=256, in_features=1024, out_features=1024, bias=False)
    ctx_pred, _ = one_op(op, v100, "fp16")
    ctx = CostContext(ctx_pred.ceilings, activation_bytes=2, weight_bytes=2)
    fwd, dx, dw = (op_cost(op, p, ctx) for p in ("forward", "backward_input", "backward_weight"))
    # each pass is one 256 x 1024 x 1024 product: 2 x 256 x 1024^2 = 5.37e8 FLOP, backward = 2 x forward
    assert fwd.flops == dx.flops == dw.flops == 2 * 256 * 1024**2


def test_vector_peaks_use_per_dtype_ratios():
    a100 = load_profile(SHIPPED_DIR / "gpu" / "a100-sxm4-40gb.yaml")
    fp32 = 108 * 1.41e9 * 64 * 2  # A100 SXM4: 108 SMs x 1.41 GHz x 64 lanes x 2 = 19.5e12 FLOP/s
    # NVIDIA's A100 whitepaper: non-tensor fp16 78 TFLOP/s (4x fp32), bf16 39 TFLOP/s (2x fp32)
    assert vector_peak(a100, "fp32").value == pytest.approx(fp32, rel=1e-3)
    assert vector_peak(a100, "fp16").value == pytest.approx(4 * fp32, rel=1e-3)
    assert vector_peak(a100, "bf16").value == pytest.approx(2 * fp32, rel=1e-3)
    assert vector_peak(a100, "fp16").value == pytest.approx(78e12, rel=0.01)
    assert vector_peak(a100, "bf16").value == pytest.approx(39e12, rel=0.01)
    v100 = load_profile(SHIPPED_DIR / "gpu" / "v100-sxm2-16gb.yaml")
    assert vector_peak(v100, "fp16").value == pytest.approx(31.4e12, rel=0.01)  # V100 datasheet half2
    assert vector_peak(v100, "bf16") is None  # Volta has no bf16 units


def test_launch_floor_counts_as_overhead(v100):
    # a calibration may measure dispatch (1 us) below the kernel launch (5 us): adding two 64-element tensors
    # then takes the 5 us launch floor on the device, which is still overhead, not memory
    pred, _ = one_op(Gemm("g", m=8, n=8, k=8), v100, "fp32")
    fast_host = dataclasses.replace(pred.ceilings, dispatch_s=1e-6, dispatch_s_by_kind={})
    cost = op_cost(Elementwise("add", numel=64), "forward", CostContext(fast_host, 4, 4))
    assert cost.device_s == pytest.approx(5e-6)
    assert cost.time_s == pytest.approx(5e-6)  # max(device 5 us, host 1 us): they overlap on a GPU
    assert cost.bound == "overhead"


def test_amp_on_a_gpu_without_tensor_cores_runs_fp16_on_the_fp32_lanes():
    # CUDA autocast's default dtype is float16 whatever the GPU (torch.amp docs); a P100 has no tensor cores and
    # could run half2 at twice its fp32 rate, but PyTorch computes half products in float (cublasGemmEx with a
    # float compute type, float-math cuDNN descriptors): at most the fp32 lanes' 56 SMs x 1.48e9 Hz x 64 lanes x 2
    # (FMA) = 10.6e12 FLOP/s, and the P100 SXM2's published fp16 torch.mm (7.29e12, zzc0721/torch-performance-test-
    # data issue 180) is what its profile carries
    from roofline.model.ceilings import ceilings_for

    p100 = load_profile(SHIPPED_DIR / "gpu" / "p100-sxm2-16gb.yaml")
    c = ceilings_for(p100, get_precision("amp"), runtime=None)
    assert c.compute_dtype == "fp16"
    assert c.matrix_flops_per_s is None
    assert c.vector_flops_per_s == pytest.approx(7.29e12)
    assert c.vector_flops_per_s < 56 * 1.48e9 * 64 * 2 < 2 * c.vector_flops_per_s  # below fp32, far below half2

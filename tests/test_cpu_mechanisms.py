"""CPU mechanisms the calibration measures, applied by the cost model: per-kind dispatch, kernel streaming
rates and NCHW layout conversion (checked with hand arithmetic on the textbook CPU)."""

import math
from dataclasses import replace

import pytest

from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.context import CostContext
from roofline.model.costmodel import op_cost
from roofline.workload.ops import BatchNorm, Elementwise, Pool2d
from roofline.workload.precision import get_precision


@pytest.fixture
def textbook():
    return ceilings_for(find_profile("textbook", "cpu"), get_precision("fp32"))


def test_measured_kernel_rate_caps_a_slow_kernel(textbook):
    pool = Pool2d("maxpool", n=8, c=64, h=112, w=112, r=3, s=3, stride=2, pad=1)
    moved = float(pool.bytes("forward", 4, 4))
    c = replace(textbook, kernel_bytes_per_s={"pool:max": 1e9})
    # at 1 GB/s the pool takes bytes / 1e9 s, far longer than its DRAM time at 100 GB/s
    assert op_cost(pool, "forward", CostContext(c, 4, 4)).memory_s == pytest.approx(moved / 1e9)
    # the forward kernel's rate says nothing of the backward kernel's: without one, backward keeps the roofline
    assert op_cost(pool, "backward_input", CostContext(c, 4, 4)).memory_s < moved / 1e9


def test_a_gradient_pass_takes_its_backward_kernels_measured_rate(textbook):
    bn = BatchNorm("bn", n=64, c=16, spatial=56 * 56)
    c = replace(textbook, kernel_bytes_per_s={"norm:train": 8e9, "norm:train:backward": 2e9})
    # backward reads dY and x twice and writes dX: 5 x 64 x 16 x 3136 x 4 B = 64.2 MB, at 2 GB/s 32.1 ms
    moved = float(bn.bytes("backward_input", 4, 4))
    assert moved == 5 * 64 * 16 * 3136 * 4 + 2 * 16 * 4
    assert bn.kernel_key("backward_input") == "norm:train:backward" and bn.kernel_key("forward") == "norm:train"
    assert op_cost(bn, "backward_input", CostContext(c, 4, 4)).memory_s == pytest.approx(moved / 2e9)
    # the forward pass keeps its own kernel's rate: 3 x 12.8 MB at 8 GB/s
    assert op_cost(bn, "forward", CostContext(c, 4, 4)).memory_s == pytest.approx(
        float(bn.bytes("forward", 4, 4)) / 8e9)


def test_dispatch_by_kind(textbook):
    c = replace(textbook, dispatch_s_by_kind={"pool": 3e-6}, dispatch_s=1e-6)
    pool = Pool2d("maxpool", n=1, c=1, h=4, w=4, r=2, s=2)
    add = Elementwise("add", numel=16)
    assert op_cost(pool, "forward", CostContext(c, 4, 4)).host_s == pytest.approx(3e-6)
    assert op_cost(add, "forward", CostContext(c, 4, 4)).host_s == pytest.approx(1e-6)


def test_backward_convolution_uses_its_own_measured_efficiency(textbook):
    from roofline.workload.ops import Conv2d

    dw = Conv2d("dw", n=16, c=72, h=32, w=32, k=72, r=3, s=3, pad=1, groups=72, bias=False)
    c = replace(textbook, conv_efficiency={"depthwise": 0.12, "depthwise:backward": 0.06})
    forward = op_cost(dw, "forward", CostContext(c, 4, 4)).compute_s
    backward = op_cost(dw, "backward_input", CostContext(c, 4, 4)).compute_s
    # same FLOPs each pass (2 x 16 x 72 x 32 x 32 x 9), half the efficiency: twice the compute time
    assert dw.flops("forward") == dw.flops("backward_input") == 2 * 16 * 72 * 32 * 32 * 9
    assert backward == pytest.approx(2 * forward)
    assert forward == pytest.approx(dw.flops("forward") / (0.12 * textbook.vector_flops_per_s))


def test_nchw_convolution_pays_layout_conversion_at_the_cache_or_dram_rate(textbook):
    from roofline.workload.ops import Conv2d

    c = replace(textbook, layout_conversion_bytes_per_s={"cache": 20e9, "dram": 2e9})
    llc = c.levels[-2].capacity_bytes
    small = Conv2d("dw", n=1, c=16, h=32, w=32, k=16, r=3, s=3, pad=1, groups=16, bias=False)
    # n chosen so that the input and output, with their converted copies, exceed the last-level cache
    n = int(llc // (2 * 2 * 16 * 32 * 32 * 4)) + 1
    large = Conv2d("dw", n=n, c=16, h=32, w=32, k=16, r=3, s=3, pad=1, groups=16, bias=False)
    for op, rate in ((small, 20e9), (large, 2e9)):
        moved = 2 * op.n * 16 * 32 * 32 * 4  # input and output activations, fp32
        nchw = op_cost(op, "forward", CostContext(c, 4, 4))
        channels_last = op_cost(op, "forward", CostContext(c, 4, 4, channels_last=True))
        assert nchw.device_s - channels_last.device_s == pytest.approx(moved / rate)
    # a profile without the measurement charges nothing, and GPUs model their own transposes
    assert op_cost(small, "forward", CostContext(textbook, 4, 4)).device_s == pytest.approx(
        op_cost(small, "forward", CostContext(textbook, 4, 4, channels_last=True)).device_s)


def test_depthwise_layers_take_their_own_measured_call_cost(textbook):
    from roofline.workload.ops import Conv2d

    c = replace(textbook, dispatch_s_by_kind={"conv2d": 8e-6, "conv2d:depthwise": 60e-6})
    dw = Conv2d("dw", n=1, c=16, h=4, w=4, k=16, r=3, s=3, pad=1, groups=16)
    dense = Conv2d("pw", n=1, c=16, h=4, w=4, k=16, r=1, s=1)
    grouped = Conv2d("g", n=1, c=16, h=4, w=4, k=16, r=3, s=3, pad=1, groups=4)
    assert (dw.kernel, dense.kernel, grouped.kernel) == ("conv2d:depthwise", "conv2d", "conv2d")
    assert op_cost(dw, "forward", CostContext(c, 4, 4)).host_s == pytest.approx(60e-6)
    assert op_cost(dense, "forward", CostContext(c, 4, 4)).host_s == pytest.approx(8e-6)
    assert op_cost(grouped, "forward", CostContext(c, 4, 4)).host_s == pytest.approx(8e-6)


def test_convolution_efficiency_takes_out_the_measured_fixed_cost():
    from roofline.measure.probes.conv import kept_efficiencies

    def efficiencies(points):
        return [e for _, e in kept_efficiencies([(0.0, ideal, t) for ideal, t in points], fixed_s=40e-6)]

    # t = 40 us + ideal / 0.5 at two sizes whose work dominates: both give 0.5
    assert efficiencies([(100e-6, 40e-6 + 200e-6), (1e-3, 40e-6 + 2e-3)]) == pytest.approx([0.5, 0.5])
    # a shape that is mostly fixed cost (10 us of work in 50 us) does not set the efficiency
    assert efficiencies([(5e-6, 50e-6), (1e-3, 40e-6 + 2e-3)]) == pytest.approx([0.5])
    # when no shape is mostly work, all of them count: 10/20 and 20/20
    assert efficiencies([(10e-6, 60e-6), (20e-6, 60e-6)]) == pytest.approx([0.5, 1.0])


def test_convolution_efficiency_follows_the_weight_share_fitted_over_the_shapes():
    from roofline.hardware.schema import MeasuredConvPoint
    from roofline.model.ceilings import fit_conv_efficiencies

    # three shapes on log(eff) = log(1.8) - 0.8 x share: the fit recovers the line and holds its ends
    pts = [MeasuredConvPoint(key="3x3", weight_share=x, efficiency=1.8 * math.exp(-0.8 * x)) for x in (0.02, 0.3, 0.95)]
    fit = fit_conv_efficiencies(pts)["3x3"]
    assert fit.slope == pytest.approx(-0.8)
    assert fit.at(0.5) == pytest.approx(1.8 * math.exp(-0.4))
    assert fit.at(0.0) == pytest.approx(1.8 * math.exp(-0.8 * 0.02))
    assert fit.at(1.0) == pytest.approx(1.8 * math.exp(-0.8 * 0.95))
    # shapes spanning less than MIN_SHARE_SPAN of share: no slope, their geometric mean everywhere
    flat = fit_conv_efficiencies([MeasuredConvPoint(key="1x1", weight_share=x, efficiency=e)
                                  for x, e in ((0.0, 0.5), (0.05, 2.0))])["1x1"]
    assert flat.slope == 0.0
    assert flat.at(0.9) == pytest.approx(1.0)


def test_weight_heavy_convolution_takes_the_lower_measured_efficiency(textbook):
    from roofline.hardware.schema import MeasuredConvPoint
    from roofline.model.ceilings import fit_conv_efficiencies, fit_gemm_curve
    from roofline.workload.ops import Conv2d

    fits = fit_conv_efficiencies([MeasuredConvPoint(key="3x3", weight_share=0.0, efficiency=1.6),
                                  MeasuredConvPoint(key="3x3", weight_share=1.0, efficiency=0.8)])
    curve = ((64, 40e9), (256, 90e9), (1024, 120e9))
    c = replace(textbook, conv_efficiency={"3x3": 1.0}, conv_efficiency_fits=fits, gemm_curve=curve,
                gemm_fit=fit_gemm_curve(curve))
    late = Conv2d("late", n=8, c=512, h=4, w=4, k=512, r=3, s=3, pad=1, bias=False)
    early = Conv2d("early", n=8, c=64, h=56, w=56, k=64, r=3, s=3, pad=1, bias=False)
    # weight elements over input + weight + output elements, by hand
    assert late.weight_share() == pytest.approx(512 * 512 * 9 / (512 * 512 * 9 + 2 * 8 * 512 * 16))
    assert early.weight_share() == pytest.approx(64 * 64 * 9 / (64 * 64 * 9 + 2 * 8 * 64 * 56 * 56))
    for conv in (late, early):
        expected = 1.6 * math.exp(math.log(0.5) * conv.weight_share())
        note = next(n for n in op_cost(conv, "forward", CostContext(c, 4, 4)).notes if "3x3 convolution" in n)
        assert note.startswith(f"measured 3x3 convolution: {expected:.0%}")


def test_pytorch_cpu_convolution_backend_choice():
    from roofline.model.cpu_runtime.backend import cpu_conv_backend
    from roofline.workload.ops import Conv2d

    # checked against torch._C._select_conv_backend (torch 2.13, 2 threads / 1 thread)
    se_fc = Conv2d("fc", n=1, c=240, h=1, w=1, k=960, r=1, s=1)
    assert cpu_conv_backend(se_fc, 2) == "slow2d"  # batch 1, 240 input elements <= 20480
    assert cpu_conv_backend(Conv2d("fc", n=2, c=8, h=1, w=1, k=16, r=1, s=1), 2) == "mkldnn"  # batch > 1
    assert cpu_conv_backend(Conv2d("fc", n=2, c=8, h=1, w=1, k=16, r=1, s=1), 1) == "slow2d"  # 1x1, 1 thread
    # 20 x 32 x 32 = 20480 input elements stays on the fallback, 21 channels (21504) goes to oneDNN
    assert cpu_conv_backend(Conv2d("pw", n=1, c=20, h=32, w=32, k=72, r=1, s=1), 2) == "slow2d"
    assert cpu_conv_backend(Conv2d("pw", n=1, c=21, h=32, w=32, k=72, r=1, s=1), 2) == "mkldnn"
    assert cpu_conv_backend(Conv2d("c3", n=1, c=16, h=4, w=4, k=16, r=3, s=3, pad=1), 2) == "slow2d"
    assert cpu_conv_backend(Conv2d("c5", n=1, c=16, h=4, w=4, k=16, r=5, s=5, pad=2), 2) == "mkldnn"
    assert cpu_conv_backend(Conv2d("dw", n=1, c=16, h=4, w=4, k=16, r=3, s=3, pad=1, groups=16), 2) == "mkldnn"


def test_convolution_charges_its_fixed_cost_beyond_the_host_time_once_per_pass(textbook):
    from roofline.workload.ops import Conv2d

    base = replace(textbook, conv_efficiency={"depthwise": 0.5, "depthwise:backward": 0.25},
                   dispatch_s_by_kind={"conv2d:depthwise": 10e-6})
    fixed = replace(base, conv_fixed_s={"depthwise:nchw": 50e-6, "depthwise:nchw:backward": 210e-6,
                                        "depthwise": 1.0, "depthwise:backward": 1.0})
    dw = Conv2d("dw", n=8, c=32, h=16, w=16, k=32, r=3, s=3, pad=1, groups=32, bias=False)

    def compute(c, pass_):
        return op_cost(dw, pass_, CostContext(c, 4, 4)).compute_s

    # NCHW tensors take the NCHW probes' costs (the channels-last ones are set absurdly to show they are not
    # used): forward 50 us fixed less the 10 us the host time already charges; backward (210 - 10) / 2 per pass
    assert compute(fixed, "forward") - compute(base, "forward") == pytest.approx(40e-6)
    assert compute(fixed, "backward_input") - compute(base, "backward_input") == pytest.approx(100e-6)
    assert compute(fixed, "backward_weight") - compute(base, "backward_weight") == pytest.approx(100e-6)


def test_quick_calibration_keeps_each_convolution_kinds_lowest_and_highest_weight_share():
    from roofline.measure.probes.conv import SHAPES, shapes

    quick = shapes(quick=True)
    for key in {sh.key for sh in SHAPES}:
        shares = [sh.weight_share for sh in SHAPES if sh.key == key]
        assert sorted({sh.weight_share for sh in quick if sh.key == key}) == sorted({min(shares), max(shares)})


def test_every_calibration_convolution_runs_on_onednn():
    from roofline.measure.probes.conv import SHAPES
    from roofline.model.cpu_runtime.backend import cpu_conv_backend

    # an efficiency is oneDNN's: a shape on PyTorch's batch-1 fallback would say nothing of it
    for sh in SHAPES:
        assert cpu_conv_backend(sh.op, 2) == "mkldnn", sh


def test_nchw_depthwise_backward_takes_its_own_measured_kernel_without_conversion(textbook):
    from roofline.workload.ops import Conv2d

    c = replace(textbook, conv_efficiency={"depthwise": 0.5, "depthwise:backward": 0.25,
                                           "depthwise:nchw": 0.4, "depthwise:nchw:backward": 0.05},
                layout_conversion_bytes_per_s={"cache": 20e9, "dram": 2e9})
    dw = Conv2d("dw", n=1, c=32, h=16, w=16, k=32, r=3, s=3, pad=1, groups=32, bias=False)
    flops = 2 * 1 * 32 * 16 * 16 * 9
    forward = op_cost(dw, "forward", CostContext(c, 4, 4))
    # forward: the channels-last kernel (50% of peak) between two conversions of input and output (in cache)
    assert forward.device_s == pytest.approx(flops / (0.5 * c.vector_flops_per_s) + 2 * 32 * 16 * 16 * 4 / 20e9)
    backward = op_cost(dw, "backward_input", CostContext(c, 4, 4))
    assert backward.device_s == pytest.approx(flops / (0.05 * c.vector_flops_per_s))
    channels_last = op_cost(dw, "backward_input", CostContext(c, 4, 4, channels_last=True))
    assert channels_last.device_s == pytest.approx(flops / (0.25 * c.vector_flops_per_s))


def test_nchw_stem_takes_its_own_measured_kernel_without_conversion(textbook):
    from roofline.model.ceilings import GemmFit
    from roofline.workload.ops import Conv2d

    fit = GemmFit(t0_s=0.0, r_inf_flops_per_s=100e9, n_half=50.0)
    c = replace(textbook, gemm_fit=fit, conv_efficiency={"stem": 1.0, "stem:nchw": 1.4, "3x3": 1.0},
                layout_conversion_bytes_per_s={"cache": 20e9, "dram": 2e9})
    stem = Conv2d("stem", n=8, c=3, h=224, w=224, k=64, r=7, s=7, stride=2, pad=3, bias=False)
    view = stem.gemm_views("forward")[0]
    flops = 2 * 8 * 64 * 112 * 112 * 3 * 49
    assert view.flops == flops
    # NCHW: oneDNN reads the 3 input channels in place, the kernel timed in NCHW at 1.4 of the GEMM fit's rate
    nchw = op_cost(stem, "forward", CostContext(c, 4, 4))
    assert nchw.compute_s == pytest.approx(flops / (1.4 * fit.rate(view.equivalent_n)))
    assert nchw.device_s == pytest.approx(max(nchw.compute_s, nchw.memory_s))
    # channels-last: the channels-last kernel's own efficiency, and no conversion either
    channels_last = op_cost(stem, "forward", CostContext(c, 4, 4, channels_last=True))
    assert channels_last.compute_s == pytest.approx(flops / fit.rate(view.equivalent_n))
    # a profile calibrated before stems were timed in NCHW: the channels-last kernel between two conversions
    older = replace(c, conv_efficiency={"stem": 1.0, "3x3": 1.0})
    moved = float(stem.bytes("forward", 4, 4)) - 64 * 3 * 49 * 4
    converted = op_cost(stem, "forward", CostContext(older, 4, 4))
    assert converted.device_s == pytest.approx(channels_last.compute_s + moved / 2e9)


def test_weights_come_from_the_level_that_holds_the_whole_step(textbook):
    from roofline.model.ceilings import Level
    from roofline.workload.ops import Linear

    c = replace(textbook, levels=(Level("L1", 64 * 2**10, 400e9), Level("L3", 32 * 2**20, 150e9),
                                           Level("DRAM", 2**34, 20e9)))
    fc = Linear("fc", batch=1, in_features=1024, out_features=1024, bias=False)  # a 4 MiB weight, 8 KiB in + out
    act, weight = 2 * 1024 * 4, 1024 * 1024 * 4
    # the step touches 16 MiB between two uses of the weight: it stays in the 32 MiB L3
    fits = op_cost(fc, "forward", CostContext(c, 4, 4, weight_reuse_bytes=16 * 2**20))
    assert fits.memory_s == pytest.approx(act / 150e9 + weight / 150e9)
    # 64 MiB cycle through a 32 MiB LRU cache between two uses: the weight is read from DRAM every step
    spills = op_cost(fc, "forward", CostContext(c, 4, 4, weight_reuse_bytes=64 * 2**20))
    assert spills.memory_s == pytest.approx(act / 150e9 + weight / 20e9)


def test_a_measured_convolution_may_run_faster_than_the_gemm_peak(textbook):
    from roofline.hardware.schema import MeasuredConvPoint
    from roofline.model.ceilings import fit_conv_efficiencies, fit_gemm_curve
    from roofline.workload.ops import Conv2d

    # oneDNN's direct convolution at 1.6x a GEMM of equal reuse, on a machine whose GEMM curve tops at 120e9
    curve = ((64, 40e9), (256, 90e9), (1024, 120e9))
    fits = fit_conv_efficiencies([MeasuredConvPoint(key="3x3", weight_share=0.0, efficiency=1.6),
                                  MeasuredConvPoint(key="3x3", weight_share=1.0, efficiency=1.6)])
    c = replace(textbook, conv_efficiency={"3x3": 1.6}, conv_efficiency_fits=fits, gemm_curve=curve,
                gemm_fit=fit_gemm_curve(curve), vector_flops_per_s=120e9, conv_fixed_s={"3x3": 1e-12})
    conv = Conv2d("c", n=8, c=256, h=14, w=14, k=256, r=3, s=3, pad=1, bias=False)
    view = conv.gemm_views("forward")[0]
    expected = conv.flops("forward") / (c.gemm_fit.rate(view.equivalent_n) * 1.6)
    cost = op_cost(conv, "forward", CostContext(c, 4, 4, channels_last=True))
    assert expected < conv.flops("forward") / 120e9  # faster than the GEMM peak allows a GEMM
    assert cost.compute_s == pytest.approx(expected, rel=1e-6)


def test_an_op_alone_takes_the_back_to_back_call_costs(textbook):
    from roofline.workload.ops import Conv2d

    c = replace(textbook, conv_efficiency={"depthwise": 0.5}, dispatch_s_by_kind={"conv2d:depthwise": 40e-6},
                dispatch_s=4e-6, conv_fixed_s={"depthwise:nchw": 120e-6}, conv_fixed_warm_s={"depthwise:nchw": 30e-6})
    dw = Conv2d("dw", n=8, c=32, h=16, w=16, k=32, r=3, s=3, pad=1, groups=32, bias=False)
    layer = op_cost(dw, "forward", CostContext(c, 4, 4))
    alone = op_cost(dw, "forward", CostContext(c, 4, 4, warm_calls=True))
    # host: the kind's cold call (40 us) in a model, the back-to-back dispatch (4 us) alone
    assert (layer.host_s, alone.host_s) == (pytest.approx(40e-6), pytest.approx(4e-6))
    # fixed cost beyond the host's share: 120 - 40 us in a model, 30 - 4 us alone; the work is the same
    assert layer.device_s - alone.device_s == pytest.approx((120e-6 - 40e-6) - (30e-6 - 4e-6))


def test_a_few_row_product_whose_weight_comes_from_dram_streams_at_the_surfaces_dram_rate(textbook):
    from roofline.model.gemm_cost import skinny_gemm_rate
    from roofline.workload.ops import Linear

    # 1-row products timed back to back: a 4 MB weight (1024^2 fp32) from cache at 20 GFLOP/s, a 64 MB one
    # (4096^2) from DRAM at 10 GFLOP/s; the last-level cache holds 16 MB
    llc = 16 * 2**20
    levels = (*textbook.levels[:-2], replace(textbook.levels[-2], capacity_bytes=llc), textbook.levels[-1])
    c = replace(textbook, levels=levels, skinny_gemm=((1, 1024, 20e9), (1, 4096, 10e9), (4, 1024, 40e9),
                                                        (4, 4096, 20e9)))
    view = Linear("fc", batch=1, in_features=1024, out_features=1024).gemm_views("forward")[0]
    assert skinny_gemm_rate(view, c)[0] == pytest.approx(20e9)
    # read from DRAM (a decode step), it runs as the first measured size whose weight did not fit: 4096
    assert skinny_gemm_rate(view, c, cold_weight=True)[0] == pytest.approx(10e9)
    assert "weight from DRAM" in skinny_gemm_rate(view, c, cold_weight=True)[1]


def test_a_one_row_product_from_dram_streams_at_its_weights_row_length(textbook):
    from roofline.model.ceilings import row_rate
    from roofline.model.gemm_cost import skinny_gemm_rate
    from roofline.workload.ops import Linear

    llc = 16 * 2**20
    levels = (*textbook.levels[:-2], replace(textbook.levels[-2], capacity_bytes=llc), textbook.levels[-1])
    rows = {"out_in": ((512, 10e9), (4096, 20e9)), "in_out": ((512, 12e9), (4096, 24e9))}
    surface = ((1, 1024, 20e9), (1, 4096, 12e9), (4, 1024, 30e9), (4, 4096, 20e9))
    c = replace(textbook, levels=levels, skinny_gemm=surface, gemv_rows=rows)
    # log-linear in the row length: 1448 = sqrt(512 x 4096) lies halfway, sqrt(10e9 x 20e9) = 14.14e9
    assert row_rate(rows["out_in"], 1448.15) == pytest.approx(14.142e9, rel=1e-3)
    assert row_rate(rows["out_in"], 100) == 10e9 and row_rate(rows["out_in"], 10**5) == 20e9
    # an LM head of 32768 rows of 512 (nn.Linear's (out, in)), from DRAM: the surface's DRAM point (12 GFLOP/s,
    # a square weight stored (in, out) with rows of 4096) x 10 / 24 = 5 GFLOP/s
    head = Linear("lm_head", batch=1, in_features=512, out_features=32768)
    assert head.weight_rows() == ("out_in", 512)
    view = head.gemm_views("forward")[0]
    rate, note = skinny_gemm_rate(view, c, cold_weight=True, weight_rows=head.weight_rows())
    assert rate == pytest.approx(12e9 * 10 / 24)
    assert "512-element rows" in note
    # the same weight stored (in, out) (GPT-2's Conv1D) has rows of 32768: 24 / 24 of the surface
    conv1d = Linear("c_fc", batch=1, in_features=512, out_features=32768, weight_layout="in_out")
    assert skinny_gemm_rate(view, c, True, conv1d.weight_rows())[0] == pytest.approx(12e9)
    # four rows run other kernels than the row sweep timed: the surface alone prices them
    four = Linear("lm_head", batch=4, in_features=512, out_features=32768).gemm_views("forward")[0]
    assert skinny_gemm_rate(four, c, True, head.weight_rows())[0] == pytest.approx(20e9)


def test_gpt2_stores_its_layer_weights_in_out_and_llama_out_in():
    from roofline.workload.llm.builtins import get_config
    from roofline.workload.llm.phases import decode
    from roofline.workload.ops import Linear

    def layouts(name: str) -> dict[str, str]:
        return {s.op.name: s.op.weight_layout for s in decode(get_config(name), 1, 64, 1.0).steps
                if isinstance(s.op, Linear)}

    # transformers' GPT-2 Conv1D keeps (in, out); its LM head, and every Llama layer, are nn.Linear (out, in)
    assert layouts("gpt2") == {"attn.c_attn": "in_out", "attn.o_proj": "in_out", "mlp.fc": "in_out",
                               "mlp.proj": "in_out", "lm_head": "out_in"}
    assert set(layouts("llama-3-8b").values()) == {"out_in"}

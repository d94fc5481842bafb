"""Hockney's GEMM model fitted to a measured curve, checked on synthetic curves with known parameters."""

import pytest

from roofline.model.ceilings import GemmFit, fit_gemm_curve
from roofline.workload.ops.base import GemmView


def synthetic(t0, r_inf, n_half, sizes=(32, 64, 128, 256, 512, 1024)):
    # each point: 2 n^3 FLOPs in t0 + 2 n^3 (n + n_half) / (r_inf n) seconds
    return tuple((n, 2 * n**3 / (t0 + 2 * n**3 * (n + n_half) / (r_inf * n))) for n in sizes)


@pytest.mark.parametrize("t0,r_inf,n_half", [(4e-6, 200e9, 70.0), (1e-5, 1e12, 300.0), (0.0, 50e9, 16.0)])
def test_fit_recovers_known_parameters(t0, r_inf, n_half):
    fit = fit_gemm_curve(synthetic(t0, r_inf, n_half))
    assert fit.t0_s == pytest.approx(t0, abs=1e-9)
    assert fit.r_inf_flops_per_s == pytest.approx(r_inf, rel=1e-6)
    assert fit.n_half == pytest.approx(n_half, rel=1e-6)


def test_rate_is_half_of_peak_at_n_half():
    fit = GemmFit(t0_s=0.0, r_inf_flops_per_s=200e9, n_half=64.0)
    assert fit.rate(64.0) == pytest.approx(100e9)


def test_too_few_points_or_unphysical_curves_give_no_fit():
    assert fit_gemm_curve(((64, 1e9), (128, 2e9))) is None
    # a rate that falls with size has no positive (t0, 1 / r_inf, n_half / r_inf)
    assert fit_gemm_curve(((64, 9e9), (128, 3e9), (256, 1e9), (512, 0.3e9))) is None


def test_equivalent_n_is_the_harmonic_mean_of_the_dimensions():
    # 3 / (1/8 + 1/2048 + 1/512) = 3 / 0.127441... = 23.54
    assert GemmView(8, 2048, 512).equivalent_n == pytest.approx(3 / (1 / 8 + 1 / 2048 + 1 / 512))
    assert GemmView(256, 256, 256).equivalent_n == pytest.approx(256)


def test_skinny_surface_interpolates_in_log_space_and_defers_to_the_square_curve():
    from roofline.model.ceilings import skinny_rate

    surface = ((1, 256, 10e9), (16, 256, 40e9), (1, 4096, 5e9), (16, 4096, 80e9))
    assert skinny_rate(surface, 1, 256) == pytest.approx(10e9)
    # 4 rows is half-way from 1 to 16 in log2: the geometric mean of 10 and 40 GFLOP/s
    assert skinny_rate(surface, 4, 256) == pytest.approx(20e9)
    # o = 1024 is half-way from 256 to 4096 in log: geometric mean along that axis too
    assert skinny_rate(surface, 1, 1024) == pytest.approx((10e9 * 5e9) ** 0.5)
    assert skinny_rate(surface, 1, 100_000) == pytest.approx(5e9)  # held at the edge
    assert skinny_rate(surface, 17, 256) is None  # beyond the surface: the square curve's regime
    assert skinny_rate((), 1, 256) is None


def test_linear_layer_at_batch_four_runs_at_the_measured_skinny_rate():
    from dataclasses import replace

    from roofline.hardware import find_profile
    from roofline.model.ceilings import ceilings_for
    from roofline.model.costmodel import CostContext, op_cost
    from roofline.workload.ops import Linear
    from roofline.workload.precision import get_precision

    c = ceilings_for(find_profile("textbook", "cpu"), get_precision("fp32"))
    c = replace(c, skinny_gemm=((1, 1024, 20e9), (4, 1024, 30e9), (64, 1024, 120e9)), dispatch_s=0.0)
    op = Linear("fc", batch=4, in_features=1024, out_features=1024, bias=False)
    cost = op_cost(op, "forward", CostContext(c, 4, 4))
    # 2 x 4 x 1024 x 1024 FLOPs at 30 GFLOP/s
    assert cost.compute_s == pytest.approx(2 * 4 * 1024 * 1024 / 30e9)
    big = Linear("fc", batch=256, in_features=1024, out_features=1024, bias=False)
    assert "skinny" not in " ".join(op_cost(big, "forward", CostContext(c, 4, 4)).notes)


def test_weight_gradient_at_batch_eight_runs_at_the_measured_outer_product_rate():
    from dataclasses import replace

    from roofline.hardware import find_profile
    from roofline.model.ceilings import ceilings_for
    from roofline.model.costmodel import CostContext, op_cost
    from roofline.workload.ops import Linear
    from roofline.workload.precision import get_precision

    c = ceilings_for(find_profile("textbook", "cpu"), get_precision("fp32"))
    c = replace(c, skinny_gemm=((1, 1024, 20e9), (64, 1024, 120e9)),
                outer_gemm=((1, 1024, 5e9), (8, 1024, 10e9), (64, 1024, 80e9)), dispatch_s=0.0)
    op = Linear("fc", batch=8, in_features=1024, out_features=1024, bias=False)
    # dW = dY^T X: (1024 x 8) @ (8 x 1024), inner dimension 8: 2 x 1024^2 x 8 FLOPs at 10 GFLOP/s
    dw = op_cost(op, "backward_weight", CostContext(c, 4, 4))
    assert dw.compute_s == pytest.approx(2 * 1024 * 1024 * 8 / 10e9)
    assert "outer-product" in " ".join(dw.notes)
    # the forward and the input gradient (8 rows through a 1024 x 1024 weight) stay on the few-rows surface
    fwd = op_cost(op, "forward", CostContext(c, 4, 4))
    # 8 rows lie halfway between 1 and 64 in log space: sqrt(20e9 x 120e9) FLOP/s
    assert fwd.compute_s == pytest.approx(2 * 8 * 1024 * 1024 / (20e9 * 120e9) ** 0.5)
    assert "8-row product" in " ".join(fwd.notes)

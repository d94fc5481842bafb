"""Calibration: the environment check, where files go, refusal to overwrite, and one real --quick run."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.errors import CalibrationMismatch, RooflineError
from roofline.hardware.load import load_profile
from roofline.hardware.schema import Measured, MeasuredGemmPoint
from roofline.measure import calibrate
from roofline.measure.probes.memory import Plateau

ROOT = Path(__file__).resolve().parents[1]


def _measured(**env) -> Measured:
    return Measured(peak_flops={"fp32": 1e11}, memory_bandwidth=2e10, environment=env)


def test_same_environment_is_accepted():
    calibrate.check_environment(_measured(**calibrate.current_environment("cpu")))


def test_other_cpu_or_torch_is_refused_in_one_line():
    env = calibrate.current_environment("cpu")
    env.update(cpu_model="Some Other CPU", torch_version="0.1")
    with pytest.raises(CalibrationMismatch) as info:
        calibrate.check_environment(_measured(**env))
    message = str(info.value)
    assert "\n" not in message
    assert "Some Other CPU" in message and "torch_version" in message and "--force" in message


def test_gpu_calibration_needs_that_gpu():
    env = calibrate.current_environment("cpu")
    env["gpu_model"] = "NVIDIA H100 80GB HBM3"
    calibrate.check_environment(_measured(**env), gpu_names=lambda: ["NVIDIA H100 80GB HBM3"])
    with pytest.raises(CalibrationMismatch, match="gpu_model"):
        calibrate.check_environment(_measured(**env), gpu_names=lambda: [])


def test_default_path_is_under_roofline_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path))
    path = calibrate.calibrated_path("AMD EPYC 9654 (detected)")
    assert path == tmp_path / "calibrated" / "amd-epyc-9654-calibrated.yaml"


def test_write_refuses_to_overwrite_without_force(tmp_path):
    target = tmp_path / "c.yaml"
    target.write_text("keep me")
    with pytest.raises(RooflineError, match="--force"):
        calibrate.write_profile(object(), target, force=False)
    assert target.read_text() == "keep me"


def test_a_cache_slower_than_the_next_level_is_not_kept():
    warnings: list[str] = []
    plateaus = [Plateau("L1", 0, 1, 50e9, 16384), Plateau("L2", 1, 2, 150e9, 2**19),
                Plateau("L3", 2, 3, 120e9, 2**23), Plateau("DRAM", 3, float("inf"), 40e9, 2**27)]
    caches, dram = calibrate._plateau_caches(plateaus, warnings)
    assert dram == 40e9
    assert [c.level for c in caches] == ["L2", "L3"]
    assert len(warnings) == 1 and warnings[0].startswith("L1")


def _cli(*args: str, env_home: Path) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "ROOFLINE_HOME": str(env_home)}
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


def test_quick_calibration_end_to_end(quick_calibration, tmp_path):
    out, doc = quick_calibration.path, quick_calibration.document
    assert Path(doc["profile_path"]) == out.resolve()
    m = doc["measured"]
    assert {"fp32", "fp64", "bf16"} <= set(m["peak_flops"])
    assert m["memory_bandwidth"] > 0 and m["framework_dispatch_s"] > 0
    kinds = {"3x3", "1x1", "depthwise", "stem", "depthwise:nchw", "stem:nchw"}
    assert set(m["conv_efficiency"]) == kinds | {f"{k}:backward" for k in kinds}
    assert m["environment"]["torch_threads"] >= 1
    assert m["dispatch_s_by_kind"]["conv2d:depthwise"] > 0
    # first touch is a page fault and a zeroed page per 4 KiB: far slower than filling mapped memory (a probe
    # served from the heap's free chunks once read 246 GB/s here; mapped memory: 2.5-3.2 GB/s)
    assert 0 < m["page_fault_bytes_per_s"] < 50e9
    conversion = m["layout_conversion_bytes_per_s"]
    assert set(conversion) <= {"cache", "dram"} and all(0 < v < float("inf") for v in conversion.values())
    profile = load_profile(out.resolve())
    assert profile.measured is not None and profile.measured.peak_flops["fp32"] == pytest.approx(
        m["peak_flops"]["fp32"])
    calibrate.check_environment(profile.measured)

    again = _cli("calibrate", "--quick", "--json", "--out", str(out), env_home=tmp_path)
    assert again.returncode == 2
    assert again.stdout == "" and "--force" in again.stderr
    assert load_profile.__wrapped__(out) == profile


@pytest.mark.parametrize("extra", [["--quick"], ["--comm"]])
def test_an_out_in_a_missing_directory_is_refused_before_measuring(tmp_path, extra):
    # a typo in a directory the user named must not become new directories (nor cost a calibration's minutes);
    # only the default calibrated directory is created on first use
    target = tmp_path / "no" / "such" / "c.yaml"
    done = _cli("calibrate", *extra, "--out", str(target), env_home=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().endswith(f"directory {target.parent} does not exist")
    assert not (tmp_path / "no").exists()


def test_remeasured_bandwidth_pools_both_windows_samples():
    from roofline.measure.probes.memory import BandwidthPoint
    from roofline.measure.rounds import pool_points
    from roofline.measure.timing import Measurement

    def point(kernel, size, *samples):
        return BandwidthPoint(kernel, size, Measurement("bw", tuple(samples), 1, "budget", work=1.0))

    # copy@64: samples 1, 2, 9 (first window) and 3, 4 (second) -> median of 1, 2, 3, 4, 9 = 3 s
    first = [point("copy", 64, 1.0, 2.0, 9.0), point("copy", 8, 5.0)]
    second = [point("copy", 64, 3.0, 4.0)]
    kept = pool_points(first, second, lambda p: (p.kernel, p.working_set_bytes))
    assert [p.measurement.median for p in kept] == [3.0, 5.0]
    assert kept[0].measurement.samples_s == (1.0, 2.0, 9.0, 3.0, 4.0)


def test_round_probes_pool_every_round_each_with_a_share_of_the_budget(monkeypatch):
    from roofline.measure import rounds
    from roofline.measure.probes import conv, gemm, kernels
    from roofline.measure.probes.conv import SHAPES, ConvResult
    from roofline.measure.probes.gemm import GemmPoint, SkinnyPoint
    from roofline.measure.probes.kernels import KernelRate
    from roofline.measure.timing import Measurement

    budgets: dict[str, list[float]] = {}
    calls = {"n": 0}

    def sample():
        calls["n"] += 1
        return Measurement("p", (float(calls["n"]),), 1, "budget", work=1.0)

    def record(name, budget_s):
        budgets.setdefault(name, []).append(budget_s)

    monkeypatch.setattr(gemm, "sweep", lambda lib, dtype, sizes, device, llc_bytes, budget_s: (
        record("gemm", budget_s), [GemmPoint(lib, dtype, n, sample()) for n in sizes])[1])
    monkeypatch.setattr(gemm, "skinny_sweep", lambda device, budget_s: (
        record("skinny", budget_s), [SkinnyPoint(4, 256, sample())])[1])
    monkeypatch.setattr(gemm, "outer_sweep", lambda device, budget_s, llc: (
        record("outer", budget_s), [SkinnyPoint(8, 512, sample())])[1])
    monkeypatch.setattr(conv, "measure", lambda shape, device, budget_s: (
        record("conv", budget_s), ConvResult(shape, sample(), sample()))[1])
    monkeypatch.setattr(kernels, "streaming_rates", lambda device, llc, budget_s: (
        record("kernels", budget_s), [KernelRate("activation:relu", 1.0, sample())])[1])
    monkeypatch.setattr(kernels, "dispatch_by_kind", lambda device, budget_s: (
        record("dispatch", budget_s), {"conv2d": sample()})[1])
    monkeypatch.setattr(conv, "fixed_costs", lambda device, budget_s: (
        record("fixed", budget_s), ({"1x1": sample()}, {"1x1": sample()}))[1])
    probes = rounds.RoundProbes("cpu", 2**25, ("fp32",), (64, 256), SHAPES[:2], gemm_budget_s=0.3,
                                stream_budget_s=0.6, conv_budget_s=0.9)
    for _ in range(rounds.ROUNDS):
        probes.round()
    share = 1 / rounds.ROUNDS
    assert budgets == {"gemm": [pytest.approx(0.3 * share)] * rounds.ROUNDS,
                       "skinny": [pytest.approx(0.6 * share)] * rounds.ROUNDS,
                       "outer": [pytest.approx(0.6 * share)] * rounds.ROUNDS,
                       "conv": [pytest.approx(0.9 * share)] * (2 * rounds.ROUNDS),
                       "kernels": [pytest.approx(0.6 * share)] * rounds.ROUNDS,
                       "dispatch": [pytest.approx(rounds.DISPATCH_BUDGET_S * share)] * rounds.ROUNDS,
                       "fixed": [pytest.approx(0.9 * share)] * rounds.ROUNDS}
    # every probe keeps one sample per round, in round order, and no point is duplicated
    pooled = [*probes.gemm["fp32"], *probes.skinny, *probes.outer, *probes.kernel_rates]
    assert [p.n for p in probes.gemm["fp32"]] == [64, 256]
    assert all(len(p.measurement.samples_s) == rounds.ROUNDS for p in pooled)
    assert all(len(r.measurement.samples_s) == len(r.training.samples_s) == rounds.ROUNDS for r in probes.conv)
    assert [r.shape for r in probes.conv] == list(SHAPES[:2])
    first, *_ = probes.dispatch["conv2d"].samples_s
    assert list(probes.dispatch["conv2d"].samples_s) == sorted(probes.dispatch["conv2d"].samples_s) and first > 0
    assert len(probes.in_context["1x1"].samples_s) == len(probes.back_to_back["1x1"].samples_s) == rounds.ROUNDS


def test_a_figure_computed_per_round_keeps_its_median_or_its_middle_round_by_speed():
    from roofline.measure.rounds import kept_value

    unsteady: dict[str, float] = {}
    # (106 - 100) / 100 = 6% apart, within 10%: the median, not flagged
    assert kept_value([100.0, 104.0, 106.0], "rate", unsteady, cost=False) == 104.0 and unsteady == {}
    # a rate 90..130 (44% apart): by speed 130, 100, 90 -> the middle, 100
    assert kept_value([100.0, 130.0, 90.0], "rate", unsteady, cost=False) == 100.0
    assert unsteady == {"rate": pytest.approx(40 / 90)}
    # a cost of 1 s and 2 s: the slower of two is the larger
    assert kept_value([1.0, 2.0], "cost", unsteady, cost=True) == 2.0 and unsteady["cost"] == pytest.approx(1.0)
    # no cost in any round: steady
    assert kept_value([0.0, 0.0], "sync", unsteady, cost=True) == 0.0 and "sync" not in unsteady
    # a synchronization cost under one round's noise (read 0) but 5 and 6 us in the others (CI run of stop 26):
    # the middle round by slowness, and a finite spread the profile's schema accepts (100% of the largest round)
    assert kept_value([0.0, 6e-6, 5e-6], "sync_s", unsteady, cost=True) == 5e-6
    assert unsteady["sync_s"] == pytest.approx(1.0) and math.isfinite(unsteady["sync_s"])


def test_first_touch_probe_faults_every_page_it_fills():
    pytest.importorskip("torch")
    resource = pytest.importorskip("resource")
    from roofline.measure.probes.kernels import FP32_BYTES, _fresh_fill

    numel = 2**20 // FP32_BYTES
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    _fresh_fill(numel)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    # 1 MiB of memory mapped for the probe alone: one fault per 4 KiB page (256), whatever the C heap holds
    assert faults >= 2**20 // resource.getpagesize()


def test_calibrations_combine_figure_by_figure_into_their_medians():
    def measured(peak, curve, dispatch, fault, **env):
        return Measured(peak_flops={"fp32": peak}, memory_bandwidth=peak / 10,
                        gemm_curves={"fp32": [MeasuredGemmPoint(n=n, flops_per_s=r) for n, r in curve]},
                        dispatch_s_by_kind=dispatch, page_fault_bytes_per_s=fault,
                        environment={"cpu_model": "X", "date": env.get("date")})

    runs = [measured(170e9, [(256, 129e9), (512, 159e9), (1024, 170e9)], {"conv2d": 37e-6}, 3.0e9, date="a"),
            measured(79e9, [(256, 69e9), (512, 78e9)], {"conv2d": 47e-6, "gemm": 36e-6}, None, date="b"),
            measured(111e9, [(256, 100e9), (512, 111e9)], {"conv2d": 32e-6}, 2.5e9, date="c")]
    out = calibrate.combine(runs)
    # medians: peak of 170, 79, 111 -> 111; DRAM 17, 7.9, 11.1 -> 11.1 GB/s
    assert out.peak_flops == {"fp32": pytest.approx(111e9)}
    assert out.memory_bandwidth == pytest.approx(11.1e9)
    # the curve point by point: 256 -> median(129, 69, 100) = 100; 512 -> 111; 1024 only in the first run
    assert [(p.n, p.flops_per_s) for p in out.gemm_curves["fp32"]] == [
        (256, pytest.approx(100e9)), (512, pytest.approx(111e9)), (1024, pytest.approx(170e9))]
    # a key only one run measured keeps its value; a figure one run lacks is the median of the others (2.75)
    assert out.dispatch_s_by_kind == {"conv2d": pytest.approx(37e-6), "gemm": pytest.approx(36e-6)}
    assert out.page_fault_bytes_per_s == pytest.approx(2.75e9)
    assert out.environment["combined_calibrations"] == 3 and out.environment["date_last"] == "c"
    with pytest.raises(RooflineError):
        calibrate.combine([])


def test_every_calibrated_figure_has_a_registry_row():
    """A field added to Measured without a row in hardware.calibrated would be dropped by combine."""
    from roofline.hardware.calibrated import CALIBRATED_FIGURES

    names = [f.name for f in CALIBRATED_FIGURES]
    assert len(names) == len(set(names))
    assert set(names) == set(Measured.model_fields) - {"environment"}
    for figure in CALIBRATED_FIGURES:
        assert bool(figure.point_key) == figure.combine.startswith("median per point"), figure

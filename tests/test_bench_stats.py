"""Statistics and stopping rules of the timing module, on synthetic samples and a fake clock; the pure
model parts of the benchmarks (plateau placement, strategy and transfer predictions) on closed forms."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from roofline.lessons import strategies, transfer
from roofline.measure.probes import memory
from roofline.measure.timing import (
    MIN_SAMPLE_S,
    SPREAD_WARN_REL_IQR,
    Measurement,
    Rotation,
    Timer,
    last_level_cache_bytes,
    private_cache_bytes,
    quantile,
    rotation_count,
)
from roofline.model.ceilings import Ceilings, GemmFit, Level


def test_quantile_matches_linear_interpolation():
    data = [1.0, 2.0, 3.0, 4.0]
    # position 0.25 * 3 = 0.75 -> 1 + 0.75 * (2 - 1) = 1.75 (numpy.percentile's default)
    assert quantile(data, 0.25) == pytest.approx(1.75)
    # position 0.5 * 3 = 1.5 -> 2.5
    assert quantile(data, 0.5) == pytest.approx(2.5)
    assert quantile([7.0], 0.75) == 7.0


def test_measurement_statistics():
    m = Measurement("x", (5.0, 1.0, 3.0, 2.0, 4.0), number=1, stop_reason="spread", work=10.0)
    # sorted 1..5: median 3, q1 at position 1 -> 2, q3 at position 3 -> 4, IQR 2, spread 2/3
    assert m.median == 3.0
    assert m.iqr == 2.0
    assert m.min == 1.0
    assert m.spread == pytest.approx(2 / 3)
    assert m.rate == pytest.approx(10 / 3)
    assert m.best_rate == pytest.approx(10.0)


def test_warnings_at_named_thresholds():
    quiet = Measurement("q", (1.0, 1.0, 1.0, 1.0, 1.0), 1, "spread")
    assert quiet.warnings == ()
    # IQR/median = (1.2 - 0.9) / 1.0 = 0.3 > 0.10
    noisy = Measurement("n", (0.8, 0.9, 1.0, 1.2, 1.5), 1, "budget")
    assert any("spread" in w for w in noisy.warnings)
    assert SPREAD_WARN_REL_IQR == 0.10
    short = Measurement("s", (MIN_SAMPLE_S / 20,) * 5, number=10, stop_reason="budget")
    # one sample = 10 calls x 50 us = 0.5 ms < 1 ms
    assert any("under 1 ms" in w for w in short.warnings)


class FakeClock:
    """A clock that the benchmarked callable advances by a scripted duration per call."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = iter(durations)
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def fn(self) -> None:
        self.calls += 1
        self.now += next(self.durations)


def forever(value: float):
    while True:
        yield value


def test_inner_loop_grows_until_a_sample_lasts_a_millisecond():
    clock = FakeClock(forever(10e-6))
    m = Timer(clock.fn, clock=clock, budget_s=10.0).measure()
    # 10 us per call: 1.25 ms target / 10 us = 125 calls per sample (growth x10 per step: 1, 10, 100, 125)
    assert m.number == 125
    assert m.median == pytest.approx(10e-6)
    assert m.sample_s >= MIN_SAMPLE_S
    # constant samples: IQR 0 stops the repeats at the minimum count
    assert m.stop_reason == "spread"
    assert len(m.samples_s) == 5


def test_repeats_stop_when_the_budget_ends():
    # alternating 1 ms and 2 ms calls never reach a 2% IQR: the budget (0.05 s) ends it
    clock = FakeClock(iter([1e-3, 2e-3] * 1000))
    m = Timer(clock.fn, clock=clock, budget_s=0.05).measure()
    assert m.stop_reason == "budget"
    assert 5 <= len(m.samples_s) < 60


def test_repeats_stop_at_max_repeats():
    clock = FakeClock(iter([1e-3, 2e-3] * 1000))
    m = Timer(clock.fn, clock=clock, budget_s=100.0, max_repeats=7).measure()
    assert m.stop_reason == "max_repeats"
    assert len(m.samples_s) == 7


def test_sync_is_called_around_every_sample():
    events = []
    clock = FakeClock(forever(2e-3))
    Timer(lambda: (events.append("call"), clock.fn()), clock=clock, sync=lambda: events.append("sync"),
          budget_s=1.0).measure()
    # every sample is sync, calls..., sync: the first and last events are syncs, and syncs come in pairs
    assert events[0] == "sync" and events[-1] == "sync"
    assert events.count("sync") % 2 == 0


def test_rotation_spans_the_flush_size():
    # 2 x 32 MiB to cover with 8 MiB sets -> 8 sets
    assert rotation_count(8 * 2**20, 64 * 2**20) == 8
    assert rotation_count(100 * 2**20, 64 * 2**20) == 1
    rot = Rotation(object, 8 * 2**20, 32 * 2**20)
    first = rot.next()
    assert len(rot.sets) == 8
    assert all(rot.next() is not first for _ in range(7))
    assert rot.next() is first


def test_last_level_and_private_caches_from_sysfs(tmp_path: Path):
    # an SMT core (cpu0 and cpu64) with private L1/L2 and an L3 shared by 0-15 and 64-79
    for index, (level, kind, size, shared) in enumerate([(1, "Data", "32K", "0,64"), (1, "Instruction", "32K", "0,64"),
                                                         (2, "Unified", "1024K", "0,64"),
                                                         (3, "Unified", "32768K", "0-15,64-79")]):
        d = tmp_path / "cpu0" / "cache" / f"index{index}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
        (d / "shared_cpu_list").write_text(f"{shared}\n")
    (tmp_path / "cpu0" / "topology").mkdir()
    (tmp_path / "cpu0" / "topology" / "thread_siblings_list").write_text("0,64\n")
    assert last_level_cache_bytes(tmp_path) == 32 * 2**20
    assert private_cache_bytes(tmp_path) == 2**20
    assert last_level_cache_bytes(tmp_path / "missing") is None


def test_working_sets_run_from_4_kib_to_4x_llc():
    sizes = memory.working_sets(2**20, step=4.0)
    # 4 KiB x 4^k below 4 MiB: 4K, 16K, 64K, 256K, 1M, then the end point 4 MiB
    assert sizes == [4096, 16384, 65536, 262144, 1048576, 4 * 2**20]


def _point(kernel: str, size: int, bytes_per_s: float) -> memory.BandwidthPoint:
    # one call moves 1 byte; a sample of 1/bytes_per_s seconds
    m = Measurement(kernel, (1 / bytes_per_s,) * 5, 1, "spread", work=1.0)
    return memory.BandwidthPoint(kernel, size, m)


def test_plateaus_follow_the_detected_cache_sizes():
    # L1 total 64 KiB, L2 total 1 MiB; DRAM from 4 x 1 MiB
    curve = {8 * 2**10: 300e9, 32 * 2**10: 300e9, 128 * 2**10: 150e9, 512 * 2**10: 150e9,
             2 * 2**20: 80e9, 4 * 2**20: 20e9, 8 * 2**20: 20e9}
    points = [_point("add", s, bw) for s, bw in curve.items()]
    got = {p.level: p for p in memory.plateaus(points, [("L1", 64 * 2**10), ("L2", 2**20)])}
    assert got["L1"].bandwidth_bytes_per_s == pytest.approx(300e9)
    assert got["L2"].bandwidth_bytes_per_s == pytest.approx(150e9)
    # the 2 MiB point straddles L2 and DRAM and belongs to neither plateau
    assert got["DRAM"].bandwidth_bytes_per_s == pytest.approx(20e9)
    assert got["L1"].hi_bytes == 32 * 2**10


def _ceilings(**kw) -> Ceilings:
    base = dict(device="test", is_gpu=False, units=2, compute_dtype="fp32", matrix_flops_per_s=None,
                vector_flops_per_s=100e9, alignment_elements=None,
                levels=(Level("L1", 64 * 2**10, 400e9), Level("L2", 2 * 2**20, 200e9), Level("DRAM", 2**34, 20e9)),
                dispatch_s=1e-6)
    base.update(kw)
    return Ceilings(**base)


def test_strategy_predictions_closed_form():
    c = _ceilings()
    p = strategies.predict(c, 256, cores=2)
    flops = 2 * 256**3  # 33,554,432
    # element: 65,536 calls x 1 us = 65.5 ms of dispatch; dot operands A+B = 512 KiB live in L2:
    # 200 GB/s x 2 FLOP / 4 B = 100 GFLOP/s (= the peak) -> 0.336 ms
    assert p["element"].dispatch_s == pytest.approx(65536e-6)
    assert p["element"].compute_s == pytest.approx(flops / 100e9)
    # column: 256 calls; A alone = 256 KiB in L2 -> same rate
    assert p["column"].dispatch_s == pytest.approx(256e-6)
    # whole: one call at the peak (no curve)
    assert p["whole"].time_s == pytest.approx(1e-6 + flops / 100e9)
    # blocked: L2 share per core 1 MiB / 12 B -> sqrt = 295 -> b = 256 > n/2; L1 share 32 KiB / 12 -> 52 -> 32
    # (256 / 32)^3 = 512 block products, 2 calls each
    assert p["blocked"].calls == 1024


def test_gemm_rate_is_the_cost_models_fit():
    # the lesson prices a product with the cost model's Hockney fit, r_inf x n / (n + n_half), not a curve of
    # its own: 100e9 x 256 / (256 + 256) = 50 GFLOP/s
    fit = GemmFit(t0_s=5e-6, r_inf_flops_per_s=100e9, n_half=256.0, n_min=64.0)
    c = _ceilings(gemm_curve=((64, 10e9), (256, 40e9), (1024, 100e9)), gemm_fit=fit)
    assert strategies.gemm_rate(c, 256)[0] == pytest.approx(50e9)
    # below the smallest measured size the fit holds n_min's rate: 100e9 x 64 / 320 = 20 GFLOP/s
    assert strategies.gemm_rate(c, 32)[0] == pytest.approx(20e9)
    assert strategies.gemm_rate(_ceilings(), 256)[0] == pytest.approx(100e9)  # no fit: the peak


def test_transfer_model_closed_form_and_crossover():
    gpu = _ceilings(is_gpu=True, matrix_flops_per_s=None, vector_flops_per_s=10e12, host_link_bytes_per_s=10e9,
                    launch_s=5e-6)
    p = transfer.model(gpu, 1000, cpu_s=0.02)
    # in: 2 x 1000^2 x 4 B / 10 GB/s = 0.8 ms; out 0.4 ms; math 2e9 / 10e12 = 0.2 ms; + 5 us launch
    assert p.copy_in_s == pytest.approx(0.8e-3)
    assert p.copy_out_s == pytest.approx(0.4e-3)
    assert p.compute_s == pytest.approx(0.2e-3)
    assert p.gpu_model_s == pytest.approx(1.405e-3)
    assert p.copy_share == pytest.approx(1.2 / 1.405)
    points = [transfer.TransferPoint(n, cpu, 0, g, 0, 0) for n, cpu, g in
              [(64, 1.0, 2.0), (128, 1.0, 0.5), (256, 1.0, 2.0), (512, 1.0, 0.5), (1024, 1.0, 0.1)]]
    # the GPU wins at 128 but loses again at 256: it pays off from 512 on
    assert transfer.crossover(points) == 512
    assert transfer.crossover(points[:1]) is None
    assert math.isfinite(p.gpu_s)


def test_cold_timer_runs_its_setup_outside_the_clock_before_every_single_call():
    events = []
    clock = FakeClock(forever(10e-6))

    def setup():
        events.append("setup")
        clock.now += 1.0  # a long eviction sweep: must never appear in a sample

    m = Timer(lambda: (events.append("call"), clock.fn()), clock=clock, setup=setup, budget_s=100.0,
              max_repeats=9).measure()
    # no inner loop: each sample is one 10 us call, each after its own setup (warm-up included)
    assert m.number == 1 and m.cold
    assert m.samples_s == pytest.approx((10e-6,) * 5)  # constant samples stop at the minimum count
    assert events == ["setup", "call"] * 6
    assert not any("under 1 ms" in w for w in m.warnings)  # short by design


def test_interleaved_probes_pool_their_rounds_round_robin():
    from roofline.measure.timing import interleaved

    order = []
    clock = FakeClock(forever(2e-3))

    def probe(name):
        return Timer(lambda: (order.append(name), clock.fn()), clock=clock, budget_s=1.0, min_repeats=5,
                     max_repeats=5)

    out = interleaved({"a": probe("a"), "b": probe("b")}, rounds=3)
    # 3 rounds of 5 samples each, pooled per probe; a and b alternate round by round
    assert {k: len(m.samples_s) for k, m in out.items()} == {"a": 15, "b": 15}
    runs = [name for i, name in enumerate(order) if i == 0 or order[i - 1] != name]
    assert runs == ["a", "b"] * 3


def test_rotated_cold_probes_alternate_call_by_call_with_a_setup_before_each():
    from roofline.measure.timing import rotated

    events = []
    clock = FakeClock(forever(10e-6))

    def probe(name):
        def setup():
            events.append("setup")
            clock.now += 1.0  # the sweep: outside every sample, and outside the budget's reach to matter
        return Timer(lambda: (events.append(name), clock.fn()), clock=clock, setup=setup, budget_s=1e3,
                     max_repeats=4)

    out = rotated({"a": probe("a"), "b": probe("b")})
    calls = [e for e in events if e != "setup"]
    # one warm-up call each, then a, b, a, b ...: every call follows the other probe's call
    assert calls == ["a", "b"] * 5
    assert events == ["setup", "a", "setup", "b"] * 5
    assert all(m.number == 1 and m.cold and m.stop_reason == "max_repeats" for m in out.values())
    assert out["a"].samples_s == pytest.approx((10e-6,) * 4)


def test_windows_of_the_same_probes_pool_their_samples():
    from roofline.measure.timing import pooled

    a1 = Measurement("a", (1.0, 2.0), 1, "budget")
    a2 = Measurement("a", (3.0,), 1, "budget")
    b2 = Measurement("b", (9.0,), 1, "budget")
    out = pooled({"a": a1}, {"a": a2, "b": b2})
    # a: both windows' samples, 1 2 3 (median 2); b: timed in the second window only
    assert out["a"].samples_s == (1.0, 2.0, 3.0) and out["a"].median == 2.0
    assert out["b"] is b2
    assert pooled({}, {"a": a1}) == {"a": a1}


def test_fixed_cost_probes_give_forward_and_backward_seconds_per_pass():
    from roofline.measure.probes.conv import per_pass

    measured = {"1x1": Measurement("f", (50e-6,), 1, "budget"),
                "1x1:training": Measurement("t", (170e-6,), 1, "budget")}
    # forward 50 us; backward = forward + backward (170 us) - forward (50 us) = 120 us
    assert per_pass(measured) == pytest.approx({"1x1": 50e-6, "1x1:backward": 120e-6})


def test_windows_that_disagree_keep_the_slowest_and_say_how_far_apart():
    from roofline.measure.timing import Measurement

    fast = Measurement("probe", (1.0, 1.0, 1.1), 1, "budget")
    slow = Measurement("probe", (1.3, 1.3, 1.2), 1, "budget")
    pooled = fast.merged(slow)
    assert pooled.window_medians == (1.0, 1.3)
    assert pooled.window_spread == pytest.approx(0.3)
    kept = pooled.steadied(0.10)
    assert kept.median == 1.3 and kept.window_spread == pytest.approx(0.3)  # the slower of two
    # of three windows the middle one: a window stalled 1000x elsewhere does not become the figure
    stalled = pooled.merged(Measurement("probe", (1000.0, 1000.0), 1, "budget"))
    assert stalled.steadied(0.10).median == 1.3
    # within the limit the pooled samples stay, median over both windows
    assert pooled.steadied(0.5) is pooled and pooled.median == pytest.approx(1.15)
    assert fast.window_spread == 0.0 and fast.steadied(0.0) is fast

"""Calibration: the environment check, where files go, refusal to overwrite, and one real --quick run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from roofline import calibrate
from roofline.bench.memory import Plateau
from roofline.errors import CalibrationMismatch, RooflineError
from roofline.hardware.load import load_profile
from roofline.hardware.schema import Measured

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


def test_quick_calibration_end_to_end(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "cal.yaml"
    done = _cli("calibrate", "--device", "cpu", "--quick", "--json", "--out", str(out), env_home=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert Path(doc["profile_path"]) == out.resolve()
    m = doc["measured"]
    assert {"fp32", "fp64", "bf16"} <= set(m["peak_flops"])
    assert m["memory_bandwidth"] > 0 and m["framework_dispatch_s"] > 0
    kinds = {"3x3", "1x1", "depthwise", "stem", "depthwise:nchw"}
    assert set(m["conv_efficiency"]) == kinds | {f"{k}:backward" for k in kinds}
    assert m["environment"]["torch_threads"] >= 1
    assert m["dispatch_s_by_kind"]["conv2d:depthwise"] > 0
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


def test_remeasured_bandwidth_pools_both_windows_samples():
    from roofline.bench.memory import BandwidthPoint
    from roofline.bench.timing import Measurement

    def point(kernel, size, *samples):
        return BandwidthPoint(kernel, size, Measurement("bw", tuple(samples), 1, "budget", work=1.0))

    # copy@64: samples 1, 2, 9 (first window) and 3, 4 (second) -> median of 1, 2, 3, 4, 9 = 3 s
    first = [point("copy", 64, 1.0, 2.0, 9.0), point("copy", 8, 5.0)]
    second = [point("copy", 64, 3.0, 4.0)]
    kept = calibrate._pooled(first, second, lambda p: (p.kernel, p.working_set_bytes))
    assert [p.measurement.median for p in kept] == [3.0, 5.0]
    assert kept[0].measurement.samples_s == (1.0, 2.0, 9.0, 3.0, 4.0)

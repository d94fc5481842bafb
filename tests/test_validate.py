"""`roofline validate`: a CI-sized live run on the CPU checked for the JSON contract, step timing checked on a
fake clock (so no assertion depends on the machine's load), the error arithmetic; plus the refusals (bad
device, bad model before any calibration, CUDA without a GPU). A real GPU run is exercised only where torch
sees one."""

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from cli import main  # noqa: E402
from roofline.measure import live_runs  # noqa: E402
from roofline.validate import profile_choice  # noqa: E402
from roofline.validate.results import error_pct, kind_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

TINY = ["--model", "trace_models:TinyNet", "--input-shape", "1,3,32,32"]
QUICK = ["--repeats", "3", "--budget", "0.2", "--kind-steps", "1"]


@pytest.fixture
def no_calibration(monkeypatch, tmp_path):
    """An empty calibrated directory, so the profile is this CPU's detected one whatever the host holds."""
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path))


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_step_timing_on_a_fake_clock():
    """Each step advances a fake clock by exactly 3 ms: every sample, the median and the minimum must be 3 ms
    per step (a unit, per-call or warm-up error would show), and the budget, stretched to fit the repeats
    asked for, must yield them all, whatever the machine's load."""
    now = [0.0]

    def step():
        now[0] += 3e-3

    m = live_runs._measure_step(step, torch.device("cpu"), "fake", budget_s=1e-3, repeats=7,
                                clock=lambda: now[0])
    assert len(m.samples_s) >= 7
    assert m.min == pytest.approx(3e-3) and m.median == pytest.approx(3e-3)
    assert m.stop_reason == "spread"  # identical samples: zero spread ends the repeats, not the budget


def test_error_pct_is_signed_relative_error():
    # predicted 1.2 s against measured 1.0 s: (1.2 / 1.0 - 1) x 100 = +20 %; 0.5 against 1.0: -50 %
    assert error_pct(1.2, 1.0) == pytest.approx(20.0)
    assert error_pct(0.5, 1.0) == pytest.approx(-50.0)


def test_kind_rows_join_both_sides():
    rows = {r.kind: r for r in kind_rows({"conv2d": 2.0, "reduce": 1.0}, {"conv2d": 1.0, "other": 0.5})}
    assert rows["conv2d"].error_pct == pytest.approx(100.0)  # 2.0 / 1.0 - 1 = +100 %
    assert rows["reduce"].measured_s is None and rows["reduce"].error_pct is None
    assert rows["other"].predicted_s is None


def test_live_cpu_inference_contract(capsys, no_calibration):
    out = run_json(capsys, ["validate", *TINY, "--device", "cpu", "--batch", "1,2", *QUICK, "--no-calibrate",
                            "--json"])
    assert [r["batch_size"] for r in out["runs"]] == [1, 2]
    assert out["profile"]["source"] == "detected" and out["profile"]["calibrated"] is False
    assert any("no calibration" in w for w in out["warnings"])
    assert out["threads"] == torch.get_num_threads()
    for run in out["runs"]:
        measured, predicted = run["measured_s"], run["predicted_s"]
        assert math.isfinite(measured) and measured > 0
        assert math.isfinite(predicted) and predicted > 0
        assert run["error_pct"] == pytest.approx((predicted / measured - 1) * 100)
        assert run["measured_q1_s"] <= measured <= run["measured_q3_s"]
        assert run["repeats"] >= 1 and len(run["samples_s"]) == run["repeats"]
        kinds = {k["kind"]: k for k in run["by_kind"]}
        assert kinds["conv2d"]["predicted_s"] > 0 and kinds["conv2d"]["measured_s"] > 0
        assert run["fresh_page_bytes_per_step"] is None or run["fresh_page_bytes_per_step"] >= 0
    batch2 = out["runs"][1]
    assert batch2["measured_min_s"] <= batch2["measured_s"]
    assert out["median_abs_error_pct"] == pytest.approx(statistics.median(abs(r["error_pct"]) for r in out["runs"]))


def test_live_cpu_training_with_layers(capsys, no_calibration):
    out = run_json(capsys, ["validate", *TINY, "--batch", "2", "--train", "--per-layer", *QUICK, "--no-calibrate",
                            "--json"])
    assert out["train"] is True and out["optimizer"] == "sgd"
    run = out["runs"][0]
    # training predicts forward + backward + optimizer, so the same model's step costs more than inference
    assert run["predicted_s"] > 0 and run["measured_s"] > 0
    layers = {r["name"]: r for r in run["layers"]}
    assert {"conv", "proj", "bn", "fc"} <= set(layers)
    assert layers["conv"]["measured_s"] > 0 and layers["conv"]["predicted_s"] > 0


@pytest.mark.parametrize("model", [["--model", "mlp"], ["--model", "mobilenetv3-small", "--input-size", "64"]])
def test_zoo_models_validate_with_a_quick_calibration(capsys, no_calibration, tmp_path, model, monkeypatch,
                                                     quick_calibration):
    """With no calibration of this machine, validate runs a quick one first, saves it, and predicts with it.
    The quick calibration is the session's (the same `roofline calibrate --quick` in a child process), copied
    to where validate's own would be written."""
    from roofline.hardware.load import load_profile
    from roofline.measure.calibrate import calibrated_path

    asked = []

    def session_calibration(device, quick, out=None, dtypes=None):
        asked.append((device, quick, out))
        profile = load_profile(quick_calibration.path)
        path = calibrated_path(profile.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(quick_calibration.path.read_text())
        return load_profile(path), str(path), 0.0

    monkeypatch.setattr(profile_choice, "calibrate_in_child", session_calibration)
    out = run_json(capsys, ["validate", *model, "--batch", "2", *QUICK, "--json"])
    assert asked == [("cpu", True, None)]
    assert out["profile"]["source"] == "calibrated" and out["profile"]["calibrated"] is True
    assert list((tmp_path / "calibrated").glob("*.yaml"))
    assert any("ran a quick one" in w for w in out["warnings"])
    (run,) = out["runs"]
    assert math.isfinite(run["predicted_s"]) and run["predicted_s"] > 0
    assert math.isfinite(run["measured_s"]) and run["measured_s"] > 0
    assert {"batch_size", "predicted_s", "measured_s", "error_pct"} <= set(run)
    assert math.isfinite(out["median_abs_error_pct"])


@pytest.mark.parametrize("argv", [["--model", "resnet5O"], ["--model", "mlp", "--precision", "fp7"],
                                  ["--model", "trace_models:NoSuchNet", "--input-shape", "1,3,8,8"],
                                  ["--model", "trace_models:TinyNet"]])
def test_bad_arguments_are_refused_before_any_calibration(tmp_path, argv):
    """A typo answers at once: no calibration starts (none exists in this home, so validate would run one),
    nothing is written, and for a zoo name torch is not even imported."""
    code = ("import sys; from cli import main; status = main(sys.argv[1:]); "
            "print('torch' in sys.modules); sys.exit(status)")
    env = {**os.environ, "ROOFLINE_HOME": str(tmp_path / "home"),
           "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}"}
    done = subprocess.run([sys.executable, "-c", code, "validate", *argv, "--json"], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=60)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("roofline: error:")
    assert not (tmp_path / "home").exists()
    if ":" not in argv[1]:
        assert done.stdout.strip() == "False"


def test_bad_device_is_one_line_exit_2(capsys):
    assert main(["validate", *TINY, "--device", "tpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected cpu or cuda" in err[0]


def test_bad_module_reference_is_one_line_exit_2(capsys):
    assert main(["validate", "--model", "trace_models:NoSuchNet", "--input-shape", "1,3,8,8"]) == 2
    assert "no attribute" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_gpu_is_exit_2(capsys):
    assert main(["validate", *TINY, "--device", "cuda"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_live_cuda_inference(capsys):
    out = run_json(capsys, ["validate", *TINY, "--device", "cuda", "--batch", "2", *QUICK, "--json"])
    run = out["runs"][0]
    assert run["measured_s"] > 0 and run["error_pct"] == pytest.approx((run["predicted_s"] / run["measured_s"] - 1)
                                                                        * 100)


FRESH_PAGES = """
import torch
from roofline.measure.live_runs import fresh_page_bytes_per_step

size = 64 * 2**20
kept = torch.empty(size // 4)
kept.fill_(0.0)
print(fresh_page_bytes_per_step(lambda: torch.empty(size // 4).fill_(1.0)) / size,
      fresh_page_bytes_per_step(lambda: kept.fill_(1.0)) / size)
"""


def test_fresh_pages_count_what_a_step_maps_anew():
    """In a fresh interpreter: in this long-lived test process a heap that earlier tests grew can hold a free chunk
    of 64 MiB, which glibc serves before it maps anew (the heap's history decides, not the step)."""
    pytest.importorskip("resource")
    # 64 MiB is above glibc's largest dynamic mmap threshold (32 MiB): in a new process each allocation is a fresh
    # mapping, first-touched in full; refilling a kept tensor touches no new page
    done = subprocess.run([sys.executable, "-c", FRESH_PAGES], capture_output=True, text=True, check=True,
                          cwd=ROOT)
    fresh, kept = (float(v) for v in done.stdout.split())
    assert fresh >= 0.9
    assert kept < 0.1

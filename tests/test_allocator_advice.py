"""CPU allocator advice: advise says how much of a step is fresh-page faults, how to keep the heap's pages and
the step without them; validate --keep-heap runs a child process with that setting and reports both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
import roofline
from roofline.hardware import load_profile
from roofline.model.cpu_runtime.heap_setting import KEEP_HEAP_ENV, KEEP_HEAP_TUNABLES, keeps_heap
from roofline.model.step import StepOptions, predict_step
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload

ROOT = Path(__file__).resolve().parents[1]
CALIBRATED_CPU = ROOT / "benchmarks" / "results" / "accuracy-cpu-profile.yaml"
"""A calibrated CPU profile (it has a measured first-touch rate), committed with the accuracy benchmark."""


@pytest.mark.parametrize(("environ", "kept"), [
    (KEEP_HEAP_ENV, True),
    ({"GLIBC_TUNABLES": KEEP_HEAP_TUNABLES}, True),
    ({"GLIBC_TUNABLES": "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=0x1000000000"}, True),  # 64 GiB
    ({"MALLOC_MMAP_MAX_": "0"}, False),  # the heap's top is still trimmed
    ({"MALLOC_TRIM_THRESHOLD_": str(2**40)}, False),  # large blocks are still unmapped on free
    ({"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "131072"}, False),  # glibc's default trim threshold
    ({"MALLOC_MMAP_MAX_": "zero", "MALLOC_TRIM_THRESHOLD_": str(2**40)}, False),
    ({}, False),
])
def test_which_environments_keep_the_heap(environ, kept):
    assert keeps_heap(environ) is kept


def test_advise_quantifies_the_faults_and_the_step_without_them():
    advice = roofline.advise("mobilenetv3", hw=str(CALIBRATED_CPU), train=True)
    (reason,) = [r for r in advice.reasons if r["kind"] == "allocator"]
    rec = advice.recommended
    assert reason["fault_s"] == pytest.approx(reason["fresh_bytes_per_step"] / reason["page_fault_bytes_per_s"])
    assert reason["share"] == pytest.approx(reason["fault_s"] / rec.step_time_s) and reason["share"] > 0.10
    # the predicted step without faults, through the cost model with the heap kept (a second, independent path)
    profile = load_profile(CALIBRATED_CPU)
    workload = build_workload("mobilenetv3", rec.batch_size)
    kept = predict_step(workload, profile, get_precision(rec.precision), StepOptions(train=True, heap_kept=True))
    assert kept.fresh_bytes == 0
    assert reason["step_time_kept_s"] == pytest.approx(kept.step_time_s, rel=1e-9)
    assert reason["speedup"] == pytest.approx(rec.step_time_s / kept.step_time_s)
    for needed in ("MALLOC_MMAP_MAX_=0", "MALLOC_TRIM_THRESHOLD_=", "GLIBC_TUNABLES=", "jemalloc", "tcmalloc",
                   "pytorch.org/tutorials/recipes/recipes/tuning_guide.html"):
        assert needed in reason["text"]


def test_no_allocator_advice_on_a_gpu():
    advice = roofline.advise("mobilenetv3", gpu="v100", train=True)
    assert all(r["kind"] != "allocator" for r in advice.reasons)


def test_validate_keep_heap_runs_a_child_with_the_setting(capsys, monkeypatch, tmp_path):
    """A ReLU over 16 x 1024 x 1024 floats returns a 64 MiB tensor each step: above glibc's largest mmap
    threshold (32 MiB), so this process maps and faults it anew every step, while the child, whose heap keeps
    its pages, does not; the child predicts without fresh pages because it reads its own environment."""
    pytest.importorskip("torch")
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    argv = ["validate", "--model", "torch.nn:ReLU", "--input-shape", "1,16,1024,1024", "--batch", "1",
            "--hw", str(CALIBRATED_CPU), "--repeats", "3", "--budget", "0.2", "--kind-steps", "0", "--keep-heap",
            "--json"]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    kept = out["kept_heap"]
    assert kept["environment"] == KEEP_HEAP_ENV
    (gain,) = kept["gains"]
    assert gain["measured_speedup"] == pytest.approx(gain["measured_s"] / gain["kept_measured_s"])
    assert gain["predicted_speedup"] == pytest.approx(gain["predicted_s"] / gain["kept_predicted_s"])
    own, child = out["runs"][0], kept["runs"][0]
    output_bytes = 16 * 1024 * 1024 * 4  # 64 MiB
    assert own["predicted_fresh_page_bytes_per_step"] >= output_bytes
    assert child["predicted_fresh_page_bytes_per_step"] == 0
    assert gain["predicted_speedup"] > 1
    assert own["fresh_page_bytes_per_step"] >= output_bytes  # measured by counting page faults
    assert child["fresh_page_bytes_per_step"] < own["fresh_page_bytes_per_step"]

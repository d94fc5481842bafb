"""`roofline bench`: the lessons run, print their JSON contract, and say when they could not measure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROOFLINE_HOME": str(home)}
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def test_gemm_strategies_json(tmp_path):
    done = _cli("bench", "gemm-strategies", "--n", "32", "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    rows = {r["strategy"]: r for r in doc["strategies"]}
    assert set(rows) == {"element", "column", "whole", "blocked"}
    # element by element makes n^2 = 1024 calls; whole makes one
    assert rows["element"]["calls"] == 32 * 32 and rows["whole"]["calls"] == 1
    # 1024 Python-level calls cannot beat one BLAS call
    assert rows["element"]["measured_flops_per_s"] < rows["whole"]["measured_flops_per_s"]
    assert all(r["predicted_s"] > 0 and r["why"] for r in rows.values())


def test_gemm_strategies_rejects_bad_n(tmp_path):
    done = _cli("bench", "gemm-strategies", "--n", "5000", home=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1


def test_transfer_without_gpu_says_it_could_not_measure(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the measured path runs instead")
    done = _cli("bench", "transfer", "--gpu", "v100", "--n", "64,512", "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["measured_gpu"] is False and "could not measure" in doc["note"]
    big = doc["sizes"][-1]
    # copy time = 3 matrices x 512^2 x 4 B / link bandwidth, from the profile
    assert big["copy_s"] == pytest.approx(3 * 512**2 * 4 / doc["host_link_bytes_per_s"])


def test_transfer_bad_sizes(tmp_path):
    done = _cli("bench", "transfer", "--n", "a,b", home=tmp_path)
    assert done.returncode == 2


@pytest.mark.gpu
def test_cuda_benchmarks_run():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from roofline.measure.probes import gemm, memory, overhead

    points = gemm.sweep("torch", "fp32", (256,), device="cuda", budget_s=0.1)
    assert points[0].flops_per_s > 0
    bw = memory.cuda_sweep([2**24], budget_s=0.1)
    assert all(p.bytes_per_s > 0 for p in bw)
    summary = overhead.copy_summary(overhead.copies((2**20,), budget_s=0.1))
    assert set(summary) == {"h2d pageable", "h2d pinned", "d2h pageable", "d2h pinned"}

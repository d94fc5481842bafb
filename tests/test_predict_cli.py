"""`roofline predict`: the JSON contract of DESIGN.md, numbers that agree with each other and with published
counts, and one-line errors (exit 2) for every kind of bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import run_error, run_json

import cli

ROOT = Path(__file__).resolve().parents[1]
LAYER_KEYS = {"name", "op", "flops", "bytes", "time_s", "bound"}


def test_json_has_the_design_keys(capsys):
    out = run_json(capsys, "predict", "--model", "resnet50", "--gpu", "v100", "--batch", "32", "--precision", "fp16")
    assert {"step_time_s", "samples_per_s", "memory_bytes", "layers"} <= set(out)
    assert out["layers"] and all(set(row) >= LAYER_KEYS for row in out["layers"])
    assert out["samples_per_s"] == pytest.approx(32 / out["step_time_s"])
    # the per-layer FLOPs add up to the step's, and every bound is one the cost model names
    assert sum(r["flops"] for r in out["layers"]) == pytest.approx(out["flops"])
    bounds = {r["bound"] for r in out["layers"]}
    assert bounds <= {"compute", "overhead", "free", "memory:DRAM", "memory:L2", "memory:kernel", "memory:layout"}
    assert out["memory_bytes"] == pytest.approx(sum(v for k, v in out["memory"].items() if k != "total"))


def test_resnet50_forward_flops_match_torchvision(capsys):
    out = run_json(capsys, "predict", "--model", "resnet50", "--gpu", "v100", "--batch", "1")
    # torchvision's ResNet-50 weights card: 4.09 GFLOPS, which are multiply-accumulates (fvcore's count);
    # 2 FLOPs per MAC -> 8.18e9, plus bias, BN and activation FLOPs, which add ~1%
    assert 2 * 4.09e9 <= out["flops"] <= 2 * 4.09e9 * 1.03


def test_batch_list_and_throughput_grows(capsys):
    out = run_json(capsys, "predict", "--model", "resnet50", "--gpu", "v100", "--batch", "1,8,64")
    rows = out["batches"]
    assert [r["batch_size"] for r in rows] == [1, 8, 64]
    # batch 1 is dispatch-bound (~10 us per op for ~175 ops): throughput rises with the batch
    assert rows[0]["samples_per_s"] < rows[1]["samples_per_s"] < rows[2]["samples_per_s"]
    assert rows[0]["memory_bytes"] < rows[1]["memory_bytes"] < rows[2]["memory_bytes"]


def test_op_spec_closed_form(capsys):
    out = run_json(capsys, "predict", "--op", "gemm(m=8192,n=8192,k=8192)", "--gpu", "v100", "--precision", "fp16")
    (layer,) = out["layers"]
    # 2 x 8192^3 = 1.0995e12 FLOP at the 97.36e12 fp16 FLOP/s a torch.matmul of this size measured on a
    # V100-SXM2-16GB (the profile's published measurement; the datasheet's 125e12 is not sustained) = 11.29 ms
    assert layer["flops"] == 2 * 8192**3
    assert layer["bound"] == "compute"
    assert out["step_time_s"] == pytest.approx(2 * 8192**3 / 97.36e12, rel=0.03)


def test_training_step_slower_than_inference(capsys):
    infer = run_json(capsys, "predict", "--model", "resnet50", "--gpu", "v100", "--batch", "64", "--precision", "amp")
    train = run_json(capsys, "predict", "--model", "resnet50", "--gpu", "v100", "--batch", "64", "--precision", "amp",
                     "--train", "--optimizer", "adam")
    assert train["step_time_s"] > 2 * infer["step_time_s"]
    assert train["memory_bytes"] > infer["memory_bytes"]
    # Adam keeps two fp32 states: 2 x 4 B x 25.56e6 parameters (torchvision's count)
    assert train["memory"]["optimizer_state"] == pytest.approx(2 * 4 * 25.557e6, rel=1e-3)
    assert train["amp_cast_s"] > 0 and train["optimizer_s"] > 0


def test_text_output_renders(capsys):
    assert cli.main(["predict", "--model", "resnet50", "--gpu", "v100", "--batch", "1,8"]) == 0
    out = capsys.readouterr().out
    assert "resnet50" in out and "batch sweep" in out


def test_batch_that_does_not_fit_is_refused(capsys):
    line = run_error(capsys, "predict", "--model", "resnet50", "--gpu", "t4", "--batch", "100000")
    assert "100000" in line and "GiB" in line
    out = run_json(capsys, "predict", "--model", "resnet50", "--gpu", "t4", "--batch", "100000", "--allow-oversize")
    # T4 has 16 GiB (NVIDIA datasheet); 1e5 images of 3 x 224 x 224 fp32 input alone are 60 GB
    assert out["fits"] is False
    assert out["memory_bytes"] > 100000 * 3 * 224 * 224 * 4 > out["capacity_bytes"] == 16 * 2**30


@pytest.mark.parametrize(("argv", "expected"), [
    (["--model", "resnet50", "--gpu", "v1OO"], "did you mean: v100"),
    (["--model", "resnet5O", "--gpu", "v100"], "unknown model"),
    (["--model", "resnet50", "--gpu", "v100", "--batch", "0"], "--batch"),
    (["--model", "resnet50", "--gpu", "v100", "--batch", "8,x"], "--batch"),
    (["--op", "gemm(m=8,n=8", "--gpu", "v100"], "expected NAME(key=value"),
    (["--op", "gemm(m=8,n=8,q=3)", "--gpu", "v100"], "unknown parameter"),
    (["--op", "gemm(m=0,n=8,k=8)", "--gpu", "v100"], "m=0: expected 1 to"),
    (["--op", "gemmm(m=8,n=8,k=8)", "--gpu", "v100"], "unknown op"),
    (["--op", "gemm(m=8,n=8,k=8)", "--gpu", "v100", "--batch", "8"], "does not apply to --op"),
    (["--model", "resnet50", "--gpu", "v100", "--precision", "bf16"], "no bf16 support"),
    (["--model", "resnet50", "--gpu", "v100", "--precision", "fp17"], "unknown precision"),
    (["--model", "resnet50", "--cpu", "v100"], "gpu profile"),
])
def test_bad_input_is_one_line(capsys, argv, expected):
    assert expected in run_error(capsys, "predict", *argv)


def test_console_error_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "cli", "predict", "--model", "resnet50", "--gpu", "t4", "--batch",
                           "100000"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_misspelt_language_model_is_suggested(capsys):
    """The zoo does not know 'qwen3-7b'; the one-line error names the built-in language models and the closest."""
    line = run_error(capsys, "predict", "--model", "qwen3-7b", "--gpu", "a100")
    assert "unknown model 'qwen3-7b'" in line
    assert "language models (served with --prompt-len/--output-len) (did you mean: qwen3-8b" in line
    assert "qwen3-30b-a3b" in line and "gpt2-medium" not in line.split("language models")[1]

"""A flag the chosen path of `predict`/`advise` does not read is refused in one line (exit 2), not dropped:
before, `predict --model llama-3-8b --train` printed a serving prediction and `--grad-accum 4` without --gpus a
single-GPU step, each without a word. Flags on the path that reads them still answer."""

from __future__ import annotations

import pytest

from tests.cli_run import run_error, run_json

LLAMA = ("--model", "llama-3-8b", "--gpu", "a100")
RESNET = ("--model", "resnet50", "--gpu", "v100")


@pytest.mark.parametrize("argv, expected", [
    (("predict", *LLAMA, "--train"), "--train does not apply to serving llama-3-8b"),
    (("predict", *LLAMA, "--data", "device"), "--data does not apply to serving llama-3-8b"),
    (("predict", *LLAMA, "--html", "x.html"), "--html does not apply to serving llama-3-8b"),
    (("predict", *LLAMA, "--gelu-new"), "--gelu-new does not apply to serving llama-3-8b"),
    (("predict", *RESNET, "--gelu-new"), "resnet50 has no tanh GELU"),
    (("advise", *LLAMA, "--serve", "--min-efficiency", "0.5"), "--min-efficiency does not apply to serving"),
    (("predict", *RESNET, "--prompt-len", "128"), "--prompt-len applies to serving a decoder language model"),
    (("predict", *RESNET, "--runtime", "graph"), "--runtime applies to serving a decoder language model"),
    (("advise", *RESNET, "--serve"), "--serve applies to serving a decoder language model"),
    (("predict", *RESNET, "--grad-accum", "4"), "--grad-accum applies to several GPUs: add --gpus N"),
    (("predict", *RESNET, "--nodes", "2"), "--nodes applies to several GPUs: add --gpus N"),
    (("predict", *RESNET, "--plot", "scaling.png"), "--plot applies to several GPUs: add --gpus N"),
    (("predict", *LLAMA, "--allreduce", "ring"), "--allreduce applies to several GPUs: add --gpus N"),
    (("analyze", *LLAMA), "--gpu does not apply to serving llama-3-8b"),
    (("analyze", "--model", "llama-3-8b", "--train"), "--train does not apply to serving llama-3-8b"),
    (("analyze", "--model", "resnet50", "--output-len", "8"), "--output-len applies to serving a decoder language"),
    (("explain", "--gpu", "v100", "--model", "resnet50"), "--model belongs to the scaling lesson: add --scaling"),
    (("explain", "--gpu", "v100", "--scaling", "--batch", "64"), "--batch is the global batch of --model's"),
    (("validate", "--model", "mlp", "--prompt-len", "64"), "--prompt-len applies with --serve"),
    (("validate", "--model", "gpt2", "--serve", "--precision", "bf16"), "--precision applies to a model's step"),
    (("validate", "--model", "mlp", "--ranks", "2", "--train", "--budget", "5"), "--budget applies to a model's"),
    (("validate", "--model", "mlp", "--steps", "3"), "--steps applies with --ranks"),
    (("calibrate", "--ranks", "4"), "--ranks applies with --comm"),
    (("calibrate", "--comm", "--quick"), "--quick applies to a device's calibration"),
    (("report", *LLAMA, "-o", "page.html"), "advise --model llama-3-8b --serve --plot DIR"),
])
def test_a_flag_its_path_does_not_read_is_refused(capsys, argv, expected):
    assert expected in run_error(capsys, *argv)


def test_flags_on_the_path_that_reads_them_still_answer(capsys):
    dp = run_json(capsys, "predict", *RESNET, "--train", "--batch", "512", "--gpus", "8", "--grad-accum", "2")
    assert dp["accumulation_steps"] == 2 and dp["gpus"] == 8
    tp = run_json(capsys, "predict", "--model", "llama-2-70b", "--gpu", "h100", "--gpus", "4", "--allreduce", "ring",
                  "--precision", "fp8")
    assert tp["gpus"] == 4
    assert run_json(capsys, "predict", "--model", "gpt2", "--gpu", "a100", "--seq-len", "128")["batch_size"] == 1
    fused, formula = (run_json(capsys, "predict", "--model", "gpt2-large", "--gpu", "a100", "--train", *gelu)
                      for gelu in ((), ("--gelu-new",)))
    assert formula["step_time_s"] > fused["step_time_s"]
    assert run_json(capsys, "advise", *LLAMA, "--serve", "--tpot-ms", "50")["recommended"]
    assert run_json(capsys, "analyze", "--model", "llama-3-8b", "--prompt-len", "64")["phases"]
    lesson = run_json(capsys, "explain", "--gpu", "v100", "--scaling", "--model", "resnet50", "--batch", "512")
    assert lesson["model"]["global_batch"] == 512

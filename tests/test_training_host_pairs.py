"""benchmarks/training_host_pairs.py scales only the runtime profile's training-only host figures: at k = 1 its
copy of the profile prices every step exactly as the shipped profile does, and at any k an inference step is
unchanged while a host-bound training step's host time moves with k."""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import training_host_pairs as script
from gpu_live_compare import predict_row

TRAIN = {"model": "resnet50", "mode": "train", "precision": "amp", "batch": 64, "data": "device",
         "channels_last": True, "seq_len": None, "step_s": 1.0}
INFER = dict(TRAIN, mode="inference", batch=1)


def test_the_unscaled_copy_prices_as_the_shipped_profile():
    with tempfile.TemporaryDirectory() as tmp:
        copy = script.scaled_runtime(1.0, Path(tmp))
        for row in (TRAIN, INFER):
            assert predict_row(row, "h100", copy)["predicted_s"] == predict_row(row, "h100")["predicted_s"]


def test_k_moves_training_host_time_and_leaves_inference_alone():
    with tempfile.TemporaryDirectory() as tmp:
        half = script.scaled_runtime(0.5, Path(tmp))
        assert predict_row(INFER, "h100", half)["predicted_s"] == predict_row(INFER, "h100")["predicted_s"]
        shipped, scaled = predict_row(TRAIN, "h100")["host_s"], predict_row(TRAIN, "h100", half)["host_s"]
        assert 0.45 * shipped < scaled < 0.55 * shipped


def test_every_pair_is_one_run_of_one_machine():
    found = script.pairs()
    assert found
    for p in found:
        same = ("model", "precision", "channels_last", "seq_len")
        assert all(p["train"][k] == p["infer"][k] for k in same) and p["train"].get("run") == p["infer"].get("run")
        assert p["infer"]["batch"] == 1 and p["train"]["mode"] == "train"

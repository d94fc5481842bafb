"""The CPU-side parts of the prepared device check benchmarks/gpu_loader_paths.py, so that a lease is not spent
finding a mistake in them: the harness's dataset hands out the images it holds, one strided view each, and every
input path runs the timed loop to the end with the harness's warm-up and timed counts."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import gpu_loader_paths as script  # noqa: E402


@pytest.mark.torch
def test_the_dataset_hands_out_each_image_as_the_harness_indexes_it():
    data = script.RandomImages(5, 8)
    assert len(data) == 5 and data[3].shape == (3, 8, 8)
    assert torch.equal(data[3], data.data[..., 3]) and not data[3].is_contiguous()
    batch = next(iter(torch.utils.data.DataLoader(data, batch_size=2, num_workers=1)))
    assert torch.equal(batch[1], data.data[..., 1])


@pytest.mark.torch
@pytest.mark.parametrize("path", script.PATHS)
def test_every_input_path_times_the_harness_loop_on_a_cpu(path):
    row = script.measure("resnet18", "inference", "fp32", path, device="cpu", small=True)
    assert row["path"] == path and row["batch"] == script.BATCH
    assert 0 < row["window_min_s"] <= row["window_s"] <= row["iteration_s"]
    assert row["workers"] == (2 if path.startswith("loader") else 0)

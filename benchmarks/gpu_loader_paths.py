"""Measure, on a GPU, what a DataLoader of pageable host tensors adds to a step beyond its copy.

The steps record splits by input path (benchmarks/results/track-record.md, "By input path"): runs whose inputs
were made on the GPU or prefetched on a side stream took 1.00x the predicted time at the median, runs fed by a
DataLoader of pageable host tensors with the copy inside the timed step 1.28x (202 runs, 16 sources), and on one
board the same benchmark loop ran 1.29x slower fed that way than with inputs made on the GPU (benchmarks/LOG.md,
twenty-ninth session). The model prices the copy itself. Which of the candidates is the rest: the copy from a
worker's shared-memory tensor, or the worker processes running beside the thread that issues the kernels?

This script times the loop those harnesses timed (ryujaehun/pytorch-gpu-benchmark's benchmark_models.py:
batch 12 of 3 x 224 x 224 images, cudnn.benchmark on, `torch.cuda.synchronize()` around each iteration, the
loader's fetch outside the timed window; training is zero_grad, forward, cross-entropy and backward without an
update; inference is eval under no_grad) for ResNet-18, ResNet-50 and VGG-16 in fp32 and pure fp16, with the input

- `device`: made on the GPU once, no copy;
- `pageable`: one pageable host tensor, copied inside the step (the copy alone, no loader);
- `loader-pageable`: from a fresh DataLoader of 8 workers without pin_memory over the harness's RandomDataset (one
  (3, 224, 224, N) tensor, each image a strided view, so the workers' collation is a gather), the batch cast to the
  precision outside the window and copied inside it, as the harness does;
- `loader-pinned`: the same loader with pin_memory=True, copied non_blocking.

Per case it reports the mean timed window (the harnesses' figure) and the mean whole iteration (the fetch
included). `loader-pageable` against `pageable` is what the loader adds beyond the copy; `pageable` against
`device` is the copy.

    python benchmarks/gpu_loader_paths.py --out loader-paths.json [--budget-s 240]

`--device cpu --small` checks the loop on a machine without a GPU (fp32 only, 32 x 32 images, two workers).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_live import emit  # noqa: E402  (it puts the repository root on the path, for `roofline`)

MODELS = ("resnet18", "resnet50", "vgg16")
PRECISIONS = ("fp32", "fp16")
MODES = ("train", "inference")
PATHS = ("device", "pageable", "loader-pageable", "loader-pinned")
BATCH = 12
WORKERS = 8
WARMUP = 5
TIMED = 50
"""The harness's batch, DataLoader workers, warm-up and timed iterations (benchmark_models.py)."""


class RandomImages:
    """The harness's RandomDataset: one fp32 tensor of shape (3, size, size, count) made at construction, each item
    the strided view `data[:, :, :, index]`, so a worker's collation gathers every element of a batch from its own
    cache line."""

    def __init__(self, count: int, size: int) -> None:
        import torch

        self.data = torch.randn(3, size, size, count)

    def __len__(self) -> int:
        return self.data.shape[-1]

    def __getitem__(self, index: int) -> Any:
        return self.data[:, :, :, index]


def _step(model: str, mode: str, precision: str, device: str) -> Any:
    """The harness's step on an input already where the step reads it."""
    import torch
    import torch.nn.functional as F

    from roofline.workload.zoo import build_module

    module = build_module(model, num_classes=1000).to(device)
    if precision == "fp16":
        module = module.half()
    labels = torch.randint(0, 1000, (BATCH,), device=device)
    if mode == "inference":
        module.eval()

        def step(x: Any) -> Any:
            with torch.no_grad():
                return module(x)
    else:
        module.train()

        def step(x: Any) -> Any:
            module.zero_grad()
            loss = F.cross_entropy(module(x).float(), labels)
            loss.backward()
            return loss
    return step


def _batches(path: str, device: str, size: int, workers: int) -> Any:
    """WARMUP + TIMED fp32 batches for the path, as the harness's loop receives them: a fresh DataLoader (its
    workers start with the loop), or one tensor again and again."""
    import itertools

    import torch

    count = WARMUP + TIMED
    if path == "device":
        return itertools.repeat(torch.randn(BATCH, 3, size, size, device=device), count)
    if path == "pageable":
        return itertools.repeat(torch.randn(BATCH, 3, size, size), count)
    return torch.utils.data.DataLoader(RandomImages(BATCH * count, size), batch_size=BATCH, shuffle=False,
                                       num_workers=workers, pin_memory=path == "loader-pinned" and device != "cpu")


def measure(model: str, mode: str, precision: str, path: str, device: str = "cuda", small: bool = False) -> dict:
    """Mean seconds of the timed window (copy and step between synchronizations) and of the whole iteration
    (the fetch and the cast to the precision, outside the window, included)."""
    import torch

    size, workers = (32, 2) if small else (224, WORKERS)
    dtype = torch.float16 if precision == "fp16" else torch.float32
    torch.backends.cudnn.benchmark = True
    step = _step(model, mode, precision, device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    windows, iterations = [], []
    begin = time.perf_counter()
    for i, batch in enumerate(_batches(path, device, size, workers)):
        img = batch.to(dtype)
        sync()
        start = time.perf_counter()
        step(img.to(device, non_blocking=path == "loader-pinned"))
        sync()
        end = time.perf_counter()
        if i >= WARMUP:
            windows.append(end - start)
            iterations.append(end - begin)
        begin = end
    return {"model": model, "mode": mode, "precision": precision, "batch": BATCH, "path": path,
            "image_size": size, "workers": workers if path.startswith("loader") else 0,
            "window_s": sum(windows) / len(windows), "window_min_s": min(windows),
            "iteration_s": sum(iterations) / len(iterations)}


def main() -> int:
    from gpu_live import cpu_checked_args, environment

    args = cpu_checked_args(__doc__.split("\n")[0], 240.0)

    deadline = time.monotonic() + args.budget_s
    doc: dict[str, Any] = {"script": "benchmarks/gpu_loader_paths.py",
                           "environment": environment() if args.device == "cuda" else {"device": args.device},
                           "rows": []}
    for model in MODELS:
        for precision in PRECISIONS if args.device == "cuda" else ("fp32",):
            for mode in MODES:
                for path in PATHS:
                    if time.monotonic() > deadline:
                        doc["stopped"] = "budget"
                        emit(doc, args.out)
                        return 0
                    doc["rows"].append(measure(model, mode, precision, path, args.device, args.small))
                    emit(doc, args.out)
    emit(doc, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Predicted vs published: ResNet-50 v1.5 training throughput on one GPU, from NVIDIA's
DeepLearningExamples (PyTorch/Classification/ConvNets/resnet50v1.5 README, "Training performance" tables,
1 GPU rows, DGX-1 V100 16 GB and DGX A100 80 GB), and whether their per-GPU batch sizes fit.

Run: python benchmarks/reference_resnet50.py  -> benchmarks/results/reference-resnet50.md (+ .json)
"""

from __future__ import annotations

import json
from pathlib import Path

from roofline.hardware import find_profile
from roofline.model.memory import max_batch_that_fits
from roofline.model.step import StepOptions, predict_step
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload

SOURCE = "https://github.com/NVIDIA/DeepLearningExamples/tree/master/PyTorch/Classification/ConvNets/resnet50v1.5"
TOLERANCE = 0.30
"""This first version's target: every prediction within +-30% of the published throughput."""

CONFIGS = "https://github.com/NVIDIA/DeepLearningExamples/blob/master/PyTorch/Classification/ConvNets/configs.yml"
"""Where the published runs' batch sizes and memory formats come from (AMP runs use `memory_format: nhwc`)."""

REFERENCES = [
    # (profile, precision, batch used in the published run, channels_last, published img/s on 1 GPU)
    ("v100-sxm2-16gb", "fp32", 112, False, 367.0),
    ("v100-sxm2-16gb", "amp", 256, True, 1200.0),
    ("a100-sxm4-80gb", "tf32", 256, False, 938.0),
    ("a100-sxm4-80gb", "amp", 256, True, 2470.0),
]


def main() -> int:
    rows = []
    for device, prec_name, batch, channels_last, published in REFERENCES:
        profile = find_profile(device)
        precision = get_precision(prec_name)
        opts = StepOptions(train=True, optimizer="momentum", pinned=True, channels_last=channels_last, sync_points=1)
        pred = predict_step(build_workload("resnet50", batch), profile, precision, opts)

        def footprint(b: int, pr=precision, pf=profile, op=opts) -> float:
            return predict_step(build_workload("resnet50", b), pf, pr, op).memory.total

        max_b = max_batch_that_fits(footprint, profile.memory.capacity_bytes.value)
        error = pred.samples_per_s / published - 1
        rows.append({"device": profile.name, "precision": prec_name, "batch_size": batch,
                     "memory_format": "NHWC" if channels_last else "NCHW",
                     "published_img_per_s": published, "predicted_img_per_s": pred.samples_per_s,
                     "error_pct": 100 * error, "within_tolerance": abs(error) <= TOLERANCE,
                     "predicted_memory_bytes": pred.memory.total, "predicted_max_batch": max_b,
                     "published_batch_fits": pred.fits})
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "reference-resnet50.json").write_text(json.dumps({"source": SOURCE, "rows": rows}, indent=2))
    lines = [
        "# ResNet-50 v1.5 training, 1 GPU: predicted vs published",
        "",
        f"Published: NVIDIA DeepLearningExamples ({SOURCE}), 1-GPU rows of the training performance tables.",
        "Predicted: `roofline` with the shipped profiles (no GPU calibration of ours): datasheet figures, and the",
        "published measurements of sustained HBM bandwidth (BabelStream Triad) and large-GEMM rate (cuBLAS) the",
        "profiles carry with their sources; SGD with momentum, pinned inputs, one synchronization per step (the",
        "published trainer calls torch.cuda.synchronize() every iteration), each run's memory format as in",
        f"DeepLearningExamples' configs.yml ({CONFIGS}).",
        f"Target of this version: within +-{TOLERANCE:.0%}.",
        "",
        "| device | precision | layout | batch | published img/s | predicted img/s | error | predicted memory | "
        "predicted max batch | published batch fits |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| {r['device']} | {r['precision']} | {r['memory_format']} | {r['batch_size']} | "
                     f"{r['published_img_per_s']:.0f} | "
                     f"{r['predicted_img_per_s']:.0f} | {r['error_pct']:+.1f}% | "
                     f"{r['predicted_memory_bytes'] / 2**30:.1f} GiB | {r['predicted_max_batch']} | "
                     f"{'yes' if r['published_batch_fits'] else 'NO'} |")
    (out / "reference-resnet50.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(r["within_tolerance"] and r["published_batch_fits"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Speed-up against GPU count, predicted, beside the ideal line (`predict --gpus N --plot`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline.report.plots import _pyplot, save_figure


def write_scaling_plot(points: list[Any], title: str, target: Path, force: bool) -> str:
    """One line per sweep point (GPUs, speed-up) and the ideal y = x; node boundaries are marked."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    gpus = [p.gpus for p in points]
    ax.plot(gpus, gpus, "--", color="grey", label="ideal (N x)")
    ax.plot(gpus, [p.speedup for p in points], "o-", label="predicted")
    for p in points:
        ax.annotate(f"{100 * p.scaling_efficiency:.0f}%", (p.gpus, p.speedup), textcoords="offset points",
                    xytext=(4, -10), fontsize=7)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("speed-up over one GPU (same batch per GPU)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    return save_figure(plt, fig, target, force)

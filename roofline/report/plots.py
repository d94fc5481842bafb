"""Matplotlib figures (imported only when a plot is asked for): the device's roofline with each layer of
the recommended step as a point, and throughput and memory against batch size per precision."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from roofline.errors import MissingDependency, RooflineError
from roofline.hardware.derived import matrix_peak, memory_levels, vector_peak
from roofline.hardware.schema import DTYPES

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency("plots need matplotlib: pip install 'roofline[plot]'") from None
    return plt


def roofline_axes(ax: Any, profile: Any, points: list[tuple[float, float, str]]) -> None:
    """Ceilings: one horizontal line per dtype's peak, one slanted line per memory level; layer points."""
    levels = memory_levels(profile)
    peaks = []
    for dtype in DTYPES:
        for d in (matrix_peak(profile, dtype), vector_peak(profile, dtype)):
            if d is not None:
                peaks.append((f"{dtype} {'matrix' if 'tensor' in d.name or 'matrix' in d.name else 'vector'}",
                              d.value))
    top = max(v for _, v in peaks)
    xs = [2.0**e for e in range(-4, 13)]
    for name, bw in ((lv[0], lv[2]) for lv in levels):
        ax.plot(xs, [min(top, bw * x) for x in xs], lw=1, label=f"{name} {bw / 1e9:.0f} GB/s")
    for name, value in peaks:
        ax.axhline(value, ls="--", lw=0.8, color="gray")
        ax.text(xs[0], value * 1.05, f"{name} {value / 1e12:.1f} TFLOP/s", fontsize=6)
    if points:
        ax.scatter([p[0] for p in points], [p[1] for p in points], s=10, c="black", zorder=3, label="layers")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(f"roofline: {profile.name}", fontsize=9)
    ax.legend(fontsize=6, loc="lower right")


def plot_path(path: str, model: str, device: str, force: bool) -> Path:
    """Where `--plot PATH` writes: PATH itself (its suffix picks the format), or a PNG named after model and
    device inside PATH when it is a directory. Checked before the sweep runs, so a typo costs nothing; an
    existing file is replaced only with --force."""
    from roofline.files import check_target

    target = Path(path)
    try:
        is_directory = target.is_dir()
    except (OSError, ValueError) as exc:
        raise RooflineError(f"--plot {path}: not usable as a path ({getattr(exc, 'strerror', None) or exc})") from None
    if is_directory:
        slug = re.sub(r"[^a-z0-9]+", "-", f"{model} {device}".lower()).strip("-")
        target = target / f"{slug}-advise.png"
    if target.suffix.lower() not in PLOT_SUFFIXES:
        raise RooflineError(f"--plot {path}: expected a directory or a file ending in {', '.join(PLOT_SUFFIXES)}")
    check_target(target, "--plot", force)
    return target


def write_advice_plots(advice: Any, profile: Any, target: Path, force: bool) -> list[str]:
    """One figure, three panels: roofline with layers, samples/s vs batch, memory vs batch; written whole to
    `target` or not at all (roofline.files)."""

    plt = _pyplot()
    fig, (ax_roof, ax_thr, ax_mem) = plt.subplots(1, 3, figsize=(15, 4.5))
    rec = advice.recommended
    points = []
    for o in rec.ops:
        if o.bytes > 0 and o.flops > 0 and o.time_s > 0:
            points.append((o.flops / o.bytes, o.flops / o.time_s, o.name))
    roofline_axes(ax_roof, profile, points)
    by_prec: dict[str, list[Any]] = {}
    for p in advice.sweep:
        by_prec.setdefault(p.precision, []).append(p)
    for prec, preds in by_prec.items():
        preds.sort(key=lambda p: p.batch_size)
        ax_thr.plot([p.batch_size for p in preds], [p.samples_per_s for p in preds], marker=".", label=prec)
        ax_mem.plot([p.batch_size for p in preds], [p.memory.total / 2**30 for p in preds], marker=".", label=prec)
    ax_thr.axvline(advice.recommended_batch, ls=":", color="green")
    ax_mem.axhline(profile.memory.capacity_bytes.value / 2**30, ls="--", color="red", label="capacity")
    for ax, label in ((ax_thr, "samples/s"), (ax_mem, "memory (GiB)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    ax_thr.set_title(f"{advice.model}: throughput ({'training' if advice.train else 'inference'})", fontsize=9)
    ax_mem.set_title("memory footprint", fontsize=9)
    fig.tight_layout()
    return [save_figure(plt, fig, target, force, dpi=120)]


def save_figure(plt: Any, fig: Any, target: Path, force: bool, dpi: int | None = None) -> str:
    """Write `fig` whole to `target` or not at all (roofline.files: never half-written, an existing file only
    with --force), then close it; every --plot goes through here."""
    from roofline.files import write_atomically

    try:
        write_atomically(target, lambda f: fig.savefig(f, format=target.suffix[1:].lower(), dpi=dpi), "--plot",
                         force)
    finally:
        plt.close(fig)
    return str(target)

"""`advise --serve --plot`: tokens/s and latency against the batch per precision, and each phase of the
recommendation on the device's roofline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline.report.plots import _pyplot, save_figure


def write_serving_plots(advice: Any, target: Path, force: bool) -> list[str]:
    plt = _pyplot()
    fig, (ax_roof, ax_thr, ax_lat) = plt.subplots(1, 3, figsize=(15, 4.5))
    groups: dict[str, list[Any]] = {}
    for p, _ in advice.sweep:
        groups.setdefault(f"{p.precision.name} / KV {p.precision.kv_name}", []).append(p)
    for label, preds in groups.items():
        batches = [p.batch for p in preds]
        ax_thr.plot(batches, [p.tokens_per_s for p in preds], marker="o", label=label)
        ax_lat.plot(batches, [p.tpot_s * 1e3 for p in preds], marker="o", label=f"TPOT {label}")
    for ax, title, unit in ((ax_thr, "output tokens/s", "tokens/s"), (ax_lat, "time per output token", "ms")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent sequences")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.legend(fontsize=7)
    rec = advice.recommended or advice.sweep[0][0]
    c = rec.ceilings
    peak = c.matrix_flops_per_s or c.vector_flops_per_s
    bw = c.dram.bandwidth_bytes_per_s
    xs = [2.0 ** k for k in range(-4, 14)]
    ax_roof.plot(xs, [min(peak, x * bw) for x in xs], color="black", label="roofline (DRAM)")
    for phase in (rec.prefill, rec.decode):
        intensity = phase.flops / phase.bytes
        ax_roof.scatter([intensity], [phase.flops / phase.time_s], s=40, label=f"{phase.phase.name} "
                        f"(batch {rec.batch})")
    ax_roof.set_xscale("log", base=2)
    ax_roof.set_yscale("log")
    ax_roof.set_xlabel("FLOP per byte")
    ax_roof.set_ylabel("FLOP/s")
    ax_roof.set_title(f"{advice.model} on {advice.device}")
    ax_roof.legend(fontsize=7)
    fig.tight_layout()
    return [save_figure(plt, fig, target, force)]

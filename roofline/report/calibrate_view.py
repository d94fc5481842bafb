"""Rich tables for `roofline calibrate` and `roofline bench`: each table states its unit once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline.model.ceilings import fit_conv_efficiencies
from roofline.units import format_bytes, format_si

SHOWN_WARNINGS = 5
"""Warnings printed in the table view; --json carries all of them."""


def render_calibration(result: Any, path: Path, console: Any) -> None:
    """Peaks against the profile's derived/datasheet figures, GEMM curves, bandwidth plateaus, overheads."""
    from rich.table import Table

    from roofline.hardware.derived import peak_flops

    m = result.measured
    datasheet = peak_flops(result.profile)
    t = Table(title="GEMM peak (FLOP/s)")
    for col in ("dtype", "measured", "derived / datasheet", "% of it"):
        t.add_column(col, justify="right")
    for dtype, value in m.peak_flops.items():
        ref = datasheet.get(dtype)
        t.add_row(dtype, format_si(value, "FLOP/s"), format_si(ref, "FLOP/s"), f"{value / ref:.0%}" if ref else "-")
    console.print(t)

    curves = Table(title="GEMM throughput against size n (n x n x n, FLOP/s)")
    curves.add_column("library dtype")
    sizes = sorted({p["n"] for c in result.details["gemm"].values() for p in c})
    for n in sizes:
        curves.add_column(str(n), justify="right")
    for key, points in result.details["gemm"].items():
        by_n = {p["n"]: p["flops_per_s"] for p in points}
        curves.add_row(key, *(format_si(by_n.get(n), "") if n in by_n else "-" for n in sizes))
    console.print(curves)

    bw = Table(title="Bandwidth plateaus (bytes read + written per second)")
    for col in ("level", "working sets", "measured", "used by the cost model"):
        bw.add_column(col, justify="right")
    kept = {c.level for c in m.caches} | {"DRAM"}
    for p in result.details["plateaus"]:
        hi = "" if p["to_bytes"] == float("inf") else format_bytes(p["to_bytes"])
        bw.add_row(p["level"], f"{format_bytes(p['from_bytes'])} .. {hi}",
                   format_si(p["bandwidth_bytes_per_s"], "B/s"), "yes" if p["level"] in kept else "no")
    console.print(bw)

    console.print("convolution efficiency, channels-last (of a GEMM of equal reuse; depthwise: of the fp32 "
                  "peak) and fixed time per call: " + ", ".join(
                      f"{k} {v:.0%} + {format_si(m.conv_fixed_s[k], 's')}" if k in m.conv_fixed_s else f"{k} {v:.0%}"
                      for k, v in m.conv_efficiency.items()))
    fits = fit_conv_efficiencies(m.conv_efficiency_points)
    sloped = {k: f for k, f in fits.items() if f.slope}
    if sloped:
        console.print("convolution efficiency against the weight's share of the traffic (fitted over the shapes): "
                      + ", ".join(f"{k} {f.at(f.lo_share):.0%} at {f.lo_share:.2f} -> {f.at(f.hi_share):.0%} at "
                                  f"{f.hi_share:.2f}" for k, f in sloped.items()))
    if m.skinny_gemm_fp32:
        console.print("fp32 products of few rows, (rows x side) @ (side x side): " + ", ".join(
            f"{p.small}x{p.other} {format_si(p.flops_per_s, 'FLOP/s')}" for p in m.skinny_gemm_fp32))
    if m.outer_gemm_fp32:
        console.print("fp32 products of a short inner dimension into a cold output, (side x inner) @ (inner x "
                      "side): " + ", ".join(f"{p.small}x{p.other} {format_si(p.flops_per_s, 'FLOP/s')}"
                                            for p in m.outer_gemm_fp32))
    if m.layout_conversion_bytes_per_s:
        console.print("NCHW convolution layout conversion (activation bytes): "
                      + ", ".join(f"{k} {format_si(v, 'B/s')}" for k, v in m.layout_conversion_bytes_per_s.items()))
    if m.page_fault_bytes_per_s:
        console.print(f"first touch of freshly mapped memory (map, fill, unmap 64 MiB, less filling kept memory): "
                      f"{format_si(m.page_fault_bytes_per_s, 'B/s')}")
    console.print("kernel streaming rates (forward, cache-resident, compulsory bytes): "
                  + ", ".join(f"{k} {format_si(v, 'B/s')}" for k, v in m.kernel_bytes_per_s.items()))
    console.print("host time per layer call: "
                  + ", ".join(f"{k} {format_si(v, 's')}" for k, v in m.dispatch_s_by_kind.items()))
    console.print(f"framework dispatch {format_si(m.framework_dispatch_s, 's')} per op; sync point "
                  f"{format_si(m.sync_s, 's')} per step; launch {format_si(m.kernel_launch_s, 's')}")
    for key, value in m.host_to_device_bytes_per_s.items():
        console.print(f"host->device {key}: {format_si(value, 'B/s')}")
    for w in result.warnings[:SHOWN_WARNINGS]:
        console.print(f"[yellow]warning:[/] {w}")
    if len(result.warnings) > SHOWN_WARNINGS:
        console.print(f"[yellow]... and {len(result.warnings) - SHOWN_WARNINGS} more warnings[/] (all in --json)")
    console.print(f"took {result.details['elapsed_s']:.1f} s; wrote {path}")

"""Rich rendering of `roofline predict`: totals, the host/device timeline, and the per-layer table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from roofline.units import format_bytes, format_si

MAX_LAYER_ROWS = 40
"""Longer models show their slowest layers only; --json always has all of them."""


def _rate(samples_per_s: float | None) -> str:
    """Samples per second as printed; a step with no work has no rate (the JSON's null)."""
    return f"{samples_per_s:.1f} samples/s" if samples_per_s is not None else "no rate (no work)"


def render_prediction(out: dict[str, Any]) -> None:
    console = Console()
    mode = "training step" if out["train"] else "inference step"
    console.print(f"[bold]{out['model']}[/] on [bold]{out['device']}[/], {out['precision']}, "
                  f"batch {out['batch_size']}: {mode}")
    if out.get("context") == "alone":
        console.print("  context: the op alone, called back to back in a loop (warm calls, steady heap); "
                      "--in-model prices it as one layer of a model")
    console.print(f"  step {format_si(out['step_time_s'], 's')}  ->  {_rate(out['samples_per_s'])}   "
                  f"memory {format_bytes(out['memory_bytes'])} of {format_bytes(out['capacity_bytes'])}")
    if not out["step_time_s"]:
        console.print("  nothing runs: every op is free in this mode (a view moves no data; a dropout is the "
                      "identity in inference, --train prices its passes)")
    console.print(f"  host (dispatch) {format_si(out['host_s'], 's')}, device {format_si(out['device_s'], 's')}, "
                  f"input copy {format_si(out['transfer_s'], 's')}{_placement(out)}, "
                  f"sync {format_si(out['sync_s'], 's')}"
                  + (f", optimizer {format_si(out['optimizer_s'], 's')}" if out["train"] else ""))
    for record in (out.get("track_record"), out.get("input_record"), out.get("device_record")):
        if record:
            console.print(f"  {record['text']}")
    total = sum(out["time_by_bound_s"].values()) or 1.0
    console.print("  time by bound: " + ", ".join(f"{k} {v / total:.0%}" for k, v in
                                                   sorted(out["time_by_bound_s"].items(), key=lambda kv: -kv[1])))
    if len(out["batches"]) > 1:
        t = Table(title="batch sweep")
        for col in ("batch", "step time", "samples/s", "memory"):
            t.add_column(col, justify="right")
        for row in out["batches"]:
            rate = row["samples_per_s"]
            t.add_row(str(row["batch_size"]), format_si(row["step_time_s"], "s"),
                      f"{rate:.1f}" if rate is not None else "-",
                      format_bytes(row["memory_bytes"]))
        console.print(t)
    rows = [r for r in out["layers"] if r["bound"] != "free"]
    shown = sorted(rows, key=lambda r: -r["time_s"])[:MAX_LAYER_ROWS] if len(rows) > MAX_LAYER_ROWS else rows
    title = f"per layer (FLOP counts a MAC as 2 FLOPs){' - slowest ' + str(len(shown)) if shown is not rows else ''}"
    t = Table(title=title)
    for col, justify in (("layer", "left"), ("op", "left"), ("FLOP", "right"), ("bytes", "right"),
                         ("FLOP/B", "right"), ("time", "right"), ("bound", "left"), ("units", "left"),
                         ("why", "left")):
        t.add_column(col, justify=justify, overflow="fold")
    for r in shown:
        ai = r["arithmetic_intensity"]
        t.add_row(r["name"], r["op"], format_si(r["flops"], ""), format_si(r["bytes"], "B"),
                  f"{ai:.1f}" if ai is not None else "-", format_si(r["time_s"], "s"), r["bound"], r["path"],
                  "; ".join(r["notes"][:2]))
    console.print(t)


def _placement(out: dict) -> str:
    """' (--data name)' where the input is copied or the user said where it comes from; nothing for the default
    when nothing is copied (a CPU, an op without input)."""
    data = out.get("data", "pageable")
    return f" ({data})" if out["transfer_s"] > 0 or data != "pageable" else ""

"""Rich rendering of `roofline analyze`: totals, then one row per layer."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from roofline.units import format_bytes, format_si


def _crossing(row: dict[str, Any]) -> str:
    if "crossing_batch" not in row:
        return ""
    if row["crossing_batch"] is None:
        limit = row.get("intensity_limit")
        return f"never (max {limit:.3g})" if limit else "never"
    return str(row["crossing_batch"])


def render_analysis(out: dict[str, Any]) -> None:
    console = Console()
    t = out["totals"]
    mode = "training (forward + backward)" if out["train"] else "inference (forward)"
    console.print(f"[bold]{out['model']}[/], batch {out['batch_size']}, {out['precision']}, {mode}")
    console.print(f"  {format_si(t['flops'], 'FLOP')} ({format_si(t['macs'], 'MAC')} in matrix products; "
                  f"a MAC is 2 FLOPs), {format_bytes(t['bytes'])} compulsory traffic, "
                  f"intensity {t['flops'] / t['bytes']:.1f} FLOP/B" if t["bytes"] else "")
    held = "saved for backward" if out["train"] else "largest output"
    console.print(f"  {t['params'] / 1e6:.3f} M parameters ({format_bytes(t['param_bytes'])}), activations "
                  f"{format_bytes(t['activation_bytes'])} ({held})")
    if "ridge_point" in out:
        console.print(f"  {out['device']} ridge point: {out['ridge_point']:.1f} FLOP/B"
                      + ("; B* is the batch from which a layer is compute-bound" if "model_crossing_batch" in out
                         else ""))
    if out["unsupported"]:
        console.print("[yellow]  not costed (no formula for these ops): "
                      + ", ".join(f"{k} x{v}" for k, v in out["unsupported"].items()) + "[/]")
    table = Table(title="per layer")
    columns = ["layer", "op", "shapes", "FLOP", "bytes", "FLOP/B", "params"]
    columns += ["saved"] if out["train"] else []
    crossing = "model_crossing_batch" in out
    columns += ["bound"] if "ridge_point" in out else []
    columns += ["B*"] if crossing else []
    for col in columns:
        table.add_column(col, justify="left" if col in ("layer", "op", "shapes") else "right", overflow="fold")
    for r in out["layers"]:
        ai = r["arithmetic_intensity"]
        cells = [r["name"], r["op"], r["shapes"], format_si(r["flops"], ""), format_si(r["bytes"], "B"),
                 f"{ai:.1f}" if ai is not None else "-", format_si(r["params"], "") if r["params"] else ""]
        cells += [format_bytes(r["saved_bytes"])] if out["train"] else []
        cells += [r.get("bound", "-")] if "ridge_point" in out else []
        cells += [_crossing(r)] if crossing else []
        table.add_row(*cells)
    console.print(table)
    if "symbolic" in out:
        s = out["symbolic"]
        console.print(f"  FLOPs(B) = {s['flops']}\n  bytes(B) = {s['bytes']}")
        if out["train"]:
            console.print(f"  saved activation bytes(B) = {s['saved_bytes']}")
        root = s.get("model_ridge_root")
        if root is not None and root > 0:
            console.print(f"  whole model: FLOPs(B) = ridge x bytes(B) at B = {root:.1f} (sympy.solve)")
    if "model_crossing_batch" in out:
        limit = out["model_intensity_limit"]
        if out["model_crossing_batch"] is not None:
            console.print(f"  whole model becomes compute-bound on {out['device']} from batch "
                          f"{out['model_crossing_batch']}")
        elif limit is not None:
            console.print(f"  whole model: intensity tends to {limit:.1f} FLOP/B as the batch grows, below the "
                          f"ridge {out['ridge_point']:.1f}: memory-bound at any batch")

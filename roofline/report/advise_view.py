"""Rich rendering of `roofline advise`: the recommendation, its neighbours, the sweep, and the reasons."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from roofline.units import format_bytes, format_si


def render_advice(out: dict[str, Any]) -> None:
    console = Console()
    rec = out["recommended"]
    mode = "training" if out["train"] else "inference"
    console.print(f"[bold]{out['model']}[/] on [bold]{out['device']}[/] ({mode})")
    console.print(f"[bold green]Recommended:[/] batch {rec['batch_size']}, {rec['precision']}: "
                  f"{rec['samples_per_s']:.0f} samples/s, step {format_si(rec['step_time_s'], 's')}, "
                  f"{format_bytes(rec['memory_bytes'])}; largest batch that fits: {out['max_batch_size']}")
    t = Table(title="beside the recommendation")
    for col in ("batch", "samples/s", "step time", "memory"):
        t.add_column(col, justify="right")
    for n in out["neighbours"]:
        mark = " *" if n["batch_size"] == rec["batch_size"] else ""
        t.add_row(f"{n['batch_size']}{mark}", f"{n['samples_per_s']:.1f}", format_si(n["step_time_s"], "s"),
                  format_bytes(n["memory_bytes"]))
    console.print(t)
    sweep = Table(title="sweep (best samples/s per precision, and at the largest batch)")
    for col in ("precision", "max batch", "best batch", "best samples/s", "at batch 1"):
        sweep.add_column(col, justify="right")
    by_prec: dict[str, list[dict[str, Any]]] = {}
    for row in out["sweep"]:
        by_prec.setdefault(row["precision"], []).append(row)
    for prec, rows in by_prec.items():
        best = max(rows, key=lambda r: r["samples_per_s"])
        first = min(rows, key=lambda r: r["batch_size"])
        sweep.add_row(prec, str(out["max_batch_size_by_precision"][prec]), str(best["batch_size"]),
                      f"{best['samples_per_s']:.0f}", f"{first['samples_per_s']:.0f}")
    console.print(sweep)
    console.print("[bold]Why[/]")
    for reason in out["reasons"]:
        console.print(f" - {reason['text']}")
    if out.get("plot"):
        console.print(f"plots written: {', '.join(out['plot'])}")

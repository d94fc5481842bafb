"""Rich rendering of `roofline validate`: the profile used, predicted vs measured per batch, and the op
kinds (and layers) where the prediction is furthest off."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from roofline.units import format_si

MAX_LAYER_ROWS = 25
"""--per-layer shows the layers with the largest absolute error in seconds; --json has all of them."""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def _fresh(run: dict[str, Any]) -> str:
    nbytes, seconds = run.get("fresh_page_bytes_per_step"), run.get("fresh_page_s_per_step")
    if nbytes is None:
        return "-"
    predicted = format_si(run.get("predicted_fresh_page_bytes_per_step") or 0.0, "B")
    return format_si(nbytes, "B") + (f" ({format_si(seconds, 's')})" if seconds else "") + f"; predicted {predicted}"


def render_validation(out: dict[str, Any], console: Console) -> None:
    mode = f"training step ({out['optimizer']})" if out["train"] else "inference step"
    prof = out["profile"]
    env = out["environment"]
    console.print(f"[bold]{out['model']}[/] on [bold]{out['device']}[/], {out['precision']}, {mode}")
    console.print(f"  profile {prof['name']} ({prof['source']}{': ' + prof['path'] if prof['path'] else ''})")
    console.print(f"  {env.get('cpu_model')}" + (f", {env['gpu_model']}" if env.get("gpu_model") else "")
                  + f"; torch {env.get('torch_version')}, {out['threads']} threads "
                  f"({env.get('cpus_available')} CPUs available)")
    t = Table(title="predicted vs measured step (median of repeats; error = predicted/measured - 1)")
    for col in ("batch", "predicted", "measured", "IQR", "repeats", "error", "fresh pages"):
        t.add_column(col, justify="right")
    for r in out["runs"]:
        t.add_row(str(r["batch_size"]), format_si(r["predicted_s"], "s"), format_si(r["measured_s"], "s"),
                  format_si(r["measured_iqr_s"], "s"), f"{r['repeats']}x{r['steps_per_sample']}",
                  _pct(r["error_pct"]), _fresh(r))
    console.print(t)
    if any(r["fresh_page_bytes_per_step"] for r in out["runs"]):
        console.print("  fresh pages: bytes per step the allocator gave back to the kernel and took again, "
                      "first-touched (page faults), and their time at the calibrated rate; predicted: the step's heap "
                      "requests replayed on glibc's rules (roofline.model.cpu_runtime.heap_requests); in "
                      "training, what the heap "
                      "returns when no small block that outlives the step pins its top, an upper bound")
    console.print(f"  median |error| {out['median_abs_error_pct']:.1f}%, worst {out['max_abs_error_pct']:.1f}%")
    last = out["runs"][-1]
    if last["by_kind"]:
        k = Table(title=f"per op kind at batch {last['batch_size']} (measured: profiler self time, "
                        f"{format_si(last['profiled_step_s'], 's')} per step in all)")
        for col in ("kind", "predicted", "measured", "error"):
            k.add_column(col, justify="left" if col == "kind" else "right")
        for row in last["by_kind"]:
            k.add_row(row["kind"], format_si(row["predicted_s"], "s"), format_si(row["measured_s"], "s"),
                      _pct(row["error_pct"]))
        console.print(k)
    if "layers" in last:
        rows = sorted(last["layers"], key=lambda r: -abs((r["predicted_s"] or 0.0) - (r["measured_s"] or 0.0)))
        lt = Table(title=f"forward per layer at batch {last['batch_size']}, largest differences first")
        for col in ("layer", "op", "predicted", "measured", "error"):
            lt.add_column(col, justify="left" if col in ("layer", "op") else "right")
        for row in rows[:MAX_LAYER_ROWS]:
            lt.add_row(row["name"], row["op"], format_si(row["predicted_s"], "s"), format_si(row["measured_s"], "s"),
                       _pct(row["error_pct"]))
        console.print(lt)
    for w in out["warnings"]:
        console.print(f"[yellow]warning:[/] {w}")

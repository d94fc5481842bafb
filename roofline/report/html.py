"""One self-contained HTML page for a model on a device: the roofline with every layer as a point, throughput
and memory against batch size, the precision comparison, the per-layer table and the reasons.

Inline SVG and CSS only: no script, no web font, no network request, so the file opens the same offline, in
a mail attachment or in a CI artefact. Everything is drawn from the JSON documents of `hw show`, `predict`
and (optionally) `advise`, so the page shows exactly the numbers `--json` prints. Hovering a point shows its
layer through SVG's <title>, which every browser renders as a tooltip without script.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

from roofline.units import format_bytes, format_si

WIDTH, HEIGHT = 640, 400
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 90, 150, 20, 45
MAX_TICKS = 10
"""More ticks than this on an axis and every other one is labelled, so labels never overlap."""
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
"""Matplotlib's default cycle: distinguishable, and the same colours as the --plot figures."""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.85em; } td, th { padding: 2px 8px; border-bottom: 1px solid #ddd; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
svg { background: #fff; border: 1px solid #ccc; } svg text { font-size: 11px; }
circle.layer { fill: #000; fill-opacity: 0.7; } circle.layer:hover { fill: #d62728; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
"""


class LogAxes:
    """Log-log mapping of data onto an SVG plot area, with decade ticks."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float], x_base: float = 10.0) -> None:
        self.x0, self.x1 = (math.log(v, x_base) for v in x_range)
        self.y0, self.y1 = (math.log10(v) for v in y_range)
        self.x_base = x_base
        self.left, self.right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT
        self.top, self.bottom = MARGIN_TOP, HEIGHT - MARGIN_BOTTOM

    def x(self, value: float) -> float:
        return self.left + (math.log(value, self.x_base) - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def y(self, value: float) -> float:
        return self.bottom - (math.log10(value) - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)

    def frame(self, x_label: str, y_label: str, x_unit: str, y_unit: str) -> list[str]:
        out = [f'<rect x="{self.left}" y="{self.top}" width="{self.right - self.left}" '
               f'height="{self.bottom - self.top}" fill="none" stroke="#999"/>']
        x_ticks = range(math.ceil(self.x0), math.floor(self.x1) + 1)
        for e in x_ticks[:: 1 + (len(x_ticks) > MAX_TICKS)]:
            v = self.x_base**e
            px = self.x(v)
            out.append(f'<line x1="{px:.1f}" y1="{self.bottom}" x2="{px:.1f}" y2="{self.top}" stroke="#eee"/>')
            out.append(f'<text x="{px:.1f}" y="{self.bottom + 14}" text-anchor="middle">{_tick(v, x_unit)}</text>')
        y_ticks = range(math.ceil(self.y0), math.floor(self.y1) + 1)
        for e in y_ticks[:: 1 + (len(y_ticks) > MAX_TICKS)]:
            py = self.y(10.0**e)
            out.append(f'<line x1="{self.left}" y1="{py:.1f}" x2="{self.right}" y2="{py:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{self.left - 4}" y="{py + 4:.1f}" text-anchor="end">{_tick(10.0**e, y_unit)}</text>')
        out.append(f'<text x="{(self.left + self.right) / 2}" y="{HEIGHT - 8}" text-anchor="middle">'
                   f"{escape(x_label)}</text>")
        out.append(f'<text transform="translate(12,{(self.top + self.bottom) / 2}) rotate(-90)" '
                   f'text-anchor="middle">{escape(y_label)}</text>')
        return out


def _tick(value: float, unit: str) -> str:
    return escape(format_si(value, unit, digits=1) if unit else f"{value:g}")


def _svg(body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">' + "".join(body) + "</svg>")


def _legend(entries: Sequence[tuple[str, str, bool]]) -> list[str]:
    """(text, colour, dashed) rows at the right of the plot area."""
    out = []
    for i, (text, colour, dashed) in enumerate(entries):
        y = MARGIN_TOP + 10 + 15 * i
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        out.append(f'<line x1="{WIDTH - MARGIN_RIGHT + 8}" y1="{y}" x2="{WIDTH - MARGIN_RIGHT + 26}" y2="{y}" '
                   f'stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{WIDTH - MARGIN_RIGHT + 30}" y="{y + 4}">{escape(text)}</text>')
    return out


def layer_points(prediction: dict[str, Any]) -> list[dict[str, Any]]:
    """Layers that do arithmetic, move bytes and take time: each is a point at (FLOP/byte, attained FLOP/s)."""
    return [r for r in prediction["layers"] if r["flops"] > 0 and r["bytes"] > 0 and r["time_s"] > 0]


def roofline_svg(hardware: dict[str, Any], prediction: dict[str, Any]) -> str:
    """Ceilings: a horizontal line per dtype's peak, a slanted line per memory level the prediction used
    (FLOP/s = bandwidth x intensity); each layer at its intensity and attained FLOP/s."""
    peaks = {dtype: v for dtype, v in hardware["peak_flops"].items() if v}
    levels = [(lv["level"], lv["bandwidth_bytes_per_s"]) for lv in prediction["ceilings"]["memory_levels"]
              if lv["bandwidth_bytes_per_s"]]
    points = layer_points(prediction)
    intensities = [p["flops"] / p["bytes"] for p in points] or [1.0]
    attained = [p["flops"] / p["time_s"] for p in points] or [max(peaks.values())]
    x_lo = 2.0 ** math.floor(math.log2(min([0.0625, *intensities])))
    x_hi = 2.0 ** math.ceil(math.log2(max([4096.0, *intensities])))
    top = max(peaks.values())
    y_lo = 10.0 ** math.floor(math.log10(min([*attained, min(bw for _, bw in levels) * x_lo])))
    y_hi = 10.0 ** math.ceil(math.log10(top * 1.5))
    ax = LogAxes((x_lo, x_hi), (y_lo, y_hi), x_base=2.0)
    body = ax.frame("arithmetic intensity (FLOP/byte)", "FLOP/s", "", "FLOP/s")
    legend = []
    for i, (name, bw) in enumerate(levels):
        colour = COLOURS[i % len(COLOURS)]
        knee = top / bw
        xs = [x_lo, min(max(knee, x_lo), x_hi), x_hi]
        coords = " ".join(f"{ax.x(x):.1f},{ax.y(max(y_lo, min(top, bw * x))):.1f}" for x in xs)
        body.append(f'<polyline class="ceiling" points="{coords}" fill="none" stroke="{colour}" stroke-width="1.5">'
                    f"<title>{escape(name)}: {escape(format_si(bw, 'B/s'))}</title></polyline>")
        legend.append((f"{name} {format_si(bw, 'B/s')}", colour, False))
    same_peak: dict[float, list[str]] = {}
    for dtype, value in peaks.items():
        same_peak.setdefault(value, []).append(dtype)
    for value, dtypes in sorted(same_peak.items(), reverse=True):
        label = escape(f"{', '.join(dtypes)} {format_si(value, 'FLOP/s')}")
        py = ax.y(value)
        body.append(f'<line class="ceiling" x1="{ax.left}" y1="{py:.1f}" x2="{ax.right}" y2="{py:.1f}" '
                    f'stroke="#555" stroke-dasharray="4 3"><title>peak {label}</title></line>')
        body.append(f'<text x="{ax.left + 4}" y="{py - 3:.1f}">{label}</text>')
    for p in points:
        ai, flops_per_s = p["flops"] / p["bytes"], p["flops"] / p["time_s"]
        tip = (f"{p['name']} ({p['op']}): {ai:.3g} FLOP/byte, {format_si(flops_per_s, 'FLOP/s')}, "
               f"{format_si(p['time_s'], 's')}, {p['bound']}-bound")
        body.append(f'<circle class="layer" cx="{ax.x(ai):.1f}" cy="{ax.y(flops_per_s):.1f}" r="3.5">'
                    f"<title>{escape(tip)}</title></circle>")
    return _svg(body + _legend(legend), f"roofline of {hardware['title']}")


def batch_svg(rows: list[dict[str, Any]], key: str, label: str, unit: str,
              capacity: float | None = None, marked_batch: int | None = None) -> str:
    """One line per precision of `key` against batch size (log-log); memory adds the device's capacity."""
    by_prec: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_prec.setdefault(r.get("precision", ""), []).append(r)
    batches = [r["batch_size"] for r in rows]
    values = [r[key] for r in rows if r[key] > 0] + ([capacity] if capacity else [])
    ax = LogAxes((min(batches) / 1.5, max(batches) * 1.5),
                 (10.0 ** math.floor(math.log10(min(values))), 10.0 ** math.ceil(math.log10(max(values) * 1.2))),
                 x_base=2.0)
    body = ax.frame("batch size", label, "", unit)
    legend = []
    for i, (prec, prec_rows) in enumerate(sorted(by_prec.items())):
        colour = COLOURS[i % len(COLOURS)]
        prec_rows = sorted(prec_rows, key=lambda r: r["batch_size"])
        coords = " ".join(f"{ax.x(r['batch_size']):.1f},{ax.y(r[key]):.1f}" for r in prec_rows if r[key] > 0)
        body.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        legend.append((prec or "predicted", colour, False))
    if capacity:
        py = ax.y(capacity)
        body.append(f'<line x1="{ax.left}" y1="{py:.1f}" x2="{ax.right}" y2="{py:.1f}" stroke="#d62728" '
                    'stroke-dasharray="4 3"/>')
        legend.append((f"capacity {format_bytes(capacity)}", "#d62728", True))
    if marked_batch:
        px = ax.x(marked_batch)
        body.append(f'<line x1="{px:.1f}" y1="{ax.top}" x2="{px:.1f}" y2="{ax.bottom}" stroke="#2ca02c" '
                    'stroke-dasharray="2 2"/>')
        legend.append((f"recommended {marked_batch}", "#2ca02c", True))
    return _svg(body + _legend(legend), f"{label} against batch size")


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    cells = (("".join(f'<td{" class=n" if n else ""}>{escape(c)}</td>' for c, n in zip(row, numeric, strict=True)))
             for row in rows)
    body = "".join(f"<tr>{c}</tr>" for c in cells)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def precision_rows(advice: dict[str, Any]) -> list[list[str]]:
    """Per precision: the largest batch that fits, the best throughput and where, and at the recommended batch."""
    rec_batch = advice["recommended"]["batch_size"]
    rows = []
    by_prec: dict[str, list[dict[str, Any]]] = {}
    for r in advice["sweep"]:
        by_prec.setdefault(r["precision"], []).append(r)
    for prec, prec_rows in sorted(by_prec.items()):
        best = max(prec_rows, key=lambda r: r["samples_per_s"])
        at_rec = next((r for r in prec_rows if r["batch_size"] == rec_batch), None)
        rows.append([prec, str(advice["max_batch_size_by_precision"].get(prec, "-")), str(best["batch_size"]),
                     f"{best['samples_per_s']:.1f}", f"{at_rec['samples_per_s']:.1f}" if at_rec else "-"])
    return rows


def layer_rows(prediction: dict[str, Any]) -> list[list[str]]:
    return [[r["name"], r["op"], format_si(r["flops"], "FLOP"), format_si(r["bytes"], "B"),
             f"{r['arithmetic_intensity']:.3g}" if r["arithmetic_intensity"] is not None else "-",
             format_si(r["time_s"], "s"), r["bound"]]
            for r in prediction["layers"] if r["bound"] != "free"]


def render_report(hardware: dict[str, Any], prediction: dict[str, Any], advice: dict[str, Any] | None = None) -> str:
    """The page, from `hw show`, `predict` (the step the roofline shows) and optionally `advise` documents."""
    p = prediction
    mode = "training" if p["train"] else "inference"
    title = f"{p['model']} on {p['device']} ({mode})"
    parts = [f"<h1>{escape(title)}</h1>",
             f"<p>Batch {p['batch_size']}, {escape(p['precision'])}: step {escape(format_si(p['step_time_s'], 's'))}, "
             f"{p['samples_per_s']:.1f} samples/s, memory {escape(format_bytes(p['memory_bytes']))} of "
             f"{escape(format_bytes(p['capacity_bytes']))}; input {escape(p.get('data', 'pageable'))} "
             f"(--data), its copy {escape(format_si(p['transfer_s'], 's'))}. FLOP counts a multiply-add as 2 "
             "FLOPs.</p>"]
    if advice is not None:
        rec = advice["recommended"]
        parts.append(f"<p><b>Recommended:</b> batch {rec['batch_size']}, {escape(rec['precision'])}: "
                     f"{rec['samples_per_s']:.1f} samples/s; the largest batch that fits is "
                     f"{advice['max_batch_size']}.</p>")
    parts.append("<h2>Roofline</h2><p>Dashed: peak FLOP/s per dtype; solid: FLOP/s each memory level can feed "
                 "at that intensity. Each point is a layer of this step (hover for its name).</p>")
    parts.append(roofline_svg(hardware, prediction))
    sweep = advice["sweep"] if advice is not None else p["batches"]
    if len(sweep) > 1:
        marked = advice["recommended"]["batch_size"] if advice is not None else None
        parts.append("<h2>Throughput and memory against batch size</h2><div class=charts>")
        parts.append(batch_svg(sweep, "samples_per_s", "samples/s", "", marked_batch=marked))
        parts.append(batch_svg(sweep, "memory_bytes", "memory", "B", capacity=p["capacity_bytes"],
                               marked_batch=marked))
        parts.append("</div>")
    if advice is not None:
        parts.append("<h2>Precisions</h2>")
        parts.append(_table(("precision", "largest batch", "best batch", "best samples/s",
                             f"samples/s at batch {advice['recommended']['batch_size']}"),
                            precision_rows(advice), (False, True, True, True, True)))
        parts.append("<h2>Why</h2><ul>" + "".join(f"<li>{escape(r['text'])}</li>" for r in advice["reasons"])
                     + "</ul>")
    parts.append("<h2>Per layer</h2>")
    parts.append(_table(("layer", "op", "FLOP", "bytes", "FLOP/byte", "time", "bound"), layer_rows(prediction),
                        (False, False, True, True, True, True, False)))
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")

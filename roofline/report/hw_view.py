"""`hw show` / `hw detect`: a profile's figures and the numbers derived from them, as data and as tables.

`profile_summary` is the JSON document (the keys DESIGN.md fixes plus the derived list and the sustained stream
bandwidth the cost model prices DRAM at, where the profile has one); `render_profile`
draws the same document with rich: datasheet next to derived, rows more than 5% apart flagged, the ridge
point per dtype and per memory level, and measured ceilings as a percentage of the datasheet's.
"""

from __future__ import annotations

from typing import Any

from roofline.hardware import derived as d
from roofline.hardware.schema import DTYPES, GpuProfile, Profile
from roofline.model.host_dma import PCIE_H2D_EFFICIENCY, copy_rates
from roofline.units import format_bytes, format_si


def derived_figures(profile: Profile) -> list[d.Derived]:
    """Every figure the profile's primary numbers imply, in the order `hw show` lists them."""
    rows: list[d.Derived | None] = [d.memory_bandwidth(profile)]
    for dtype in DTYPES:
        rows += [d.vector_peak(profile, dtype), d.matrix_peak(profile, dtype)]
    rows.append(d.fp16_accumulate_peak(profile))
    rows.append(d.compute_bytes_per_s(profile))
    rows += [d.cache_bandwidth(profile, c.level) for c in profile.caches]
    return [r for r in rows if r is not None]


def derived_row(fig: d.Derived) -> dict[str, Any]:
    sheet = fig.datasheet
    return {"name": fig.name, "formula": fig.expr, "with_numbers": fig.with_numbers(), "value": fig.value,
            "unit": fig.unit, "datasheet": sheet.value if sheet else None,
            "datasheet_source": sheet.provenance if sheet else None,
            "disagreement": fig.disagreement, "flagged": fig.flagged, "note": sheet.note if sheet else None}


def _measured(profile: Profile, peaks: dict[str, float]) -> dict[str, Any] | None:
    m = profile.measured
    if m is None:
        return None
    datasheet_bw = profile.memory.bandwidth_bytes_per_s.value
    return {
        "peak_flops": dict(m.peak_flops), "memory_bandwidth": m.memory_bandwidth,
        "caches": [c.model_dump() for c in m.caches], "environment": dict(m.environment),
        "percent_of_datasheet": {
            "peak_flops": {k: 100 * v / peaks[k] for k, v in m.peak_flops.items() if peaks.get(k)},
            "memory_bandwidth": 100 * m.memory_bandwidth / datasheet_bw if datasheet_bw else None,
        },
        "ridge_point": d.ridge_points(dict(m.peak_flops), m.memory_bandwidth),
    }


def host_link_summary(profile: Profile) -> dict[str, Any] | None:
    """A GPU's link to its host: the line rate its profile states and what a copy over it moves from pinned and
    from pageable memory, as `predict --data pinned|pageable` prices the input's copy: a calibration's measured
    rates where the profile has them, else `roofline.model.host_dma`'s."""
    if not isinstance(profile, GpuProfile):
        return None
    link = profile.host_link
    measured = dict(profile.measured.host_to_device_bytes_per_s) if profile.measured else {}
    pinned, pageable = copy_rates(link, measured)
    return {"kind": link.kind, "generation": link.generation, "lanes": link.lanes,
            "line_rate_bytes_per_s": link.bandwidth_bytes_per_s.value,
            "pinned_copy_bytes_per_s": pinned, "pageable_copy_bytes_per_s": pageable,
            "packet_efficiency": PCIE_H2D_EFFICIENCY if link.kind == "PCIe" and "pinned" not in measured else None,
            "measured": sorted(measured)}


def profile_summary(profile: Profile, name: str) -> dict[str, Any]:
    """The `hw show` document: `name` is the identifier a user passes (file stem), `title` the device's name."""
    peaks = d.peak_flops(profile)
    bandwidth = profile.memory.bandwidth_bytes_per_s.value
    caches = []
    for c in profile.caches:
        bw = d.cache_bandwidth(profile, c.level)
        caches.append({"level": c.level, "size": c.size_bytes.value, "shared_by": c.shared_by,
                       "total_bytes": d.cache_total_bytes(profile, c.level),
                       "bandwidth": bw.value if bw else None, "bandwidth_formula": bw.with_numbers() if bw else None})
    sustained = profile.memory.sustained_bandwidth_bytes_per_s
    return {
        "name": name, "title": profile.name, "kind": profile.kind, "vendor": profile.vendor,
        "architecture": profile.architecture, "aliases": list(profile.aliases),
        "peak_flops": peaks,
        "memory_bandwidth": bandwidth,
        "sustained_memory_bandwidth": sustained.value if sustained else None,
        "sustained_memory_bandwidth_provenance": sustained.provenance if sustained else None,
        "memory_capacity": profile.memory.capacity_bytes.value,
        "compute_bytes_per_s": d.compute_bytes_per_s(profile).value,
        "caches": caches,
        "ridge_point": d.ridge_points(peaks, bandwidth),
        "ridge_point_by_level": {level: d.ridge_points(peaks, level_bw)
                                 for level, _, level_bw in d.memory_levels(profile)},
        "measured": _measured(profile, peaks),
        "host_link": host_link_summary(profile),
        "derived": [derived_row(f) for f in derived_figures(profile)],
        "notes": profile.notes,
    }


def _gap(row: dict[str, Any]) -> str:
    if row["disagreement"] is None:
        return "-"
    return f"{100 * row['disagreement']:+.1f}%" + (" !" if row["flagged"] else "")


def render_profile(summary: dict[str, Any]) -> None:
    """Tables for a person: figures, derived vs datasheet, caches, ridge points, measured vs peak."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{summary['title']}[/] ({summary['name']}, {summary['kind']}) "
                  f"{summary['vendor']} {summary['architecture']}")
    console.print(f"  memory {format_si(summary['memory_bandwidth'], 'B/s')}, "
                  f"{format_bytes(summary['memory_capacity'])}; "
                  f"L1 feeds compute at {format_si(summary['compute_bytes_per_s'], 'B/s')}")
    if summary.get("sustained_memory_bandwidth"):
        share = summary["sustained_memory_bandwidth"] / summary["memory_bandwidth"]
        stream = format_si(summary["sustained_memory_bandwidth"], "B/s")
        console.print(f"  a stream (two reads and a write) sustains {stream}, {share:.0%} of it: the cost model "
                      "prices DRAM at this, or at a calibration's own measurement: "
                      f"[dim]{summary['sustained_memory_bandwidth_provenance']}[/]")
    if summary.get("host_link"):
        console.print(f"  {_host_link_line(summary['host_link'])}")
    if summary.get("notes"):
        console.print(f"  [dim]{summary['notes']}[/]")
    t = Table(title="derived from the profile's figures vs the datasheet (! = more than 5% apart)")
    for col, justify in (("figure", "left"), ("formula", "left"), ("derived", "right"), ("datasheet", "right"),
                         ("gap", "right"), ("note", "left")):
        t.add_column(col, justify=justify, overflow="fold")
    for row in summary["derived"]:
        style = "bold red" if row["flagged"] else None
        t.add_row(row["name"], row["with_numbers"], format_si(row["value"], row["unit"]),
                  format_si(row["datasheet"], row["unit"]), _gap(row), row["note"] or "", style=style)
    console.print(t)
    t = Table(title="caches")
    for col in ("level", "size", "shared by", "total", "bandwidth"):
        t.add_column(col, justify="right")
    for c in summary["caches"]:
        t.add_row(c["level"], format_bytes(c["size"]), str(c["shared_by"]), format_bytes(c["total_bytes"]),
                  format_si(c["bandwidth"], "B/s"))
    console.print(t)
    dtypes = list(summary["peak_flops"])
    t = Table(title="ridge point (FLOP/byte) = peak FLOP/s / bandwidth of the level the data lives in")
    t.add_column("level")
    for dtype in dtypes:
        t.add_column(f"{dtype} ({format_si(summary['peak_flops'][dtype], 'FLOP/s')})", justify="right")
    for level, ridges in summary["ridge_point_by_level"].items():
        t.add_row(level, *(f"{ridges[k]:.1f}" for k in dtypes))
    console.print(t)
    m = summary["measured"]
    if m:
        pct = m["percent_of_datasheet"]
        t = Table(title=f"measured by calibration ({m['environment'].get('date', 'date unknown')})")
        for col in ("ceiling", "measured", "% of peak"):
            t.add_column(col, justify="right")
        for dtype, value in m["peak_flops"].items():
            share = pct["peak_flops"].get(dtype)
            t.add_row(f"{dtype} FLOP/s", format_si(value, "FLOP/s"), f"{share:.0f}%" if share is not None else "-")
        mem = pct["memory_bandwidth"]
        t.add_row("DRAM", format_si(m["memory_bandwidth"], "B/s"), f"{mem:.0f}%" if mem is not None else "-")
        console.print(t)


def _host_link_line(link: dict[str, Any]) -> str:
    name = " ".join(str(x) for x in (link["kind"], link["generation"] and f"{link['generation']}.0",
                                      link["lanes"] and f"x{link['lanes']}") if x)
    efficiency = (f" ({link['packet_efficiency']:.0%} of it: packet headers, as measured on a PCIe 5 link)"
                  if link["packet_efficiency"] else "")
    if link["measured"]:
        efficiency += f" (calibrated: {' and '.join(link['measured'])} measured on this machine)"
    return (f"host link {name}: {format_si(link['line_rate_bytes_per_s'], 'B/s')} each way; a copy moves "
            f"{format_si(link['pinned_copy_bytes_per_s'], 'B/s')} from pinned memory{efficiency}, "
            f"{format_si(link['pageable_copy_bytes_per_s'], 'B/s')} from pageable memory (a staging memcpy first)")

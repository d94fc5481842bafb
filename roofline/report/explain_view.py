"""Rich rendering of `roofline explain`: the numbers behind a device's roofline, each with its formula."""

from __future__ import annotations

from typing import Any

from roofline.units import format_sci, format_si


def render_explanation(out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{out['device']}[/] ({out['kind']})")
    console.print("[bold]How fast it computes[/]")
    console.print(f"  bytes the cores can consume: {out['compute_formula']}")
    for row in out["peak_formulas"]:
        console.print(f"  {row['dtype']} ({row['path']} units): {row['with_numbers']}")
    for row in out.get("sustained_matrix", []):
        rate = format_sci(row["value"])
        console.print(f"  a large {row['dtype']} product sustains {rate} FLOP/s, {row['share']:.0%} of its peak: "
                      f"predictions price the tensor cores at this [dim]({row['provenance']})[/]")
    console.print("[bold]How fast memory feeds it[/]")
    console.print(f"  DRAM: {out['memory_formula']}")
    if out.get("sustained_memory_bandwidth"):
        share = out["sustained_memory_bandwidth"] / out["memory_bandwidth"]
        stream = format_sci(out["sustained_memory_bandwidth"])
        console.print(f"  a stream (two reads and a write) sustains {stream} B/s, {share:.0%} of it: predictions "
                      f"price DRAM at this [dim]({out['sustained_memory_bandwidth_source']})[/]")
    console.print("[bold]The gap[/]")
    ratio = format_sci(out["ratio"])
    console.print(f"  {out['formula']}: the cores could consume {ratio}x the bytes DRAM delivers, so a kernel "
                  f"must reuse each byte it fetches about {ratio} times (from registers and caches) to keep "
                  "them busy.")
    dtypes = list(out["peak_flops"])
    t = Table(title="ridge point (FLOP/byte) per memory level")
    t.add_column("level")
    for dtype in dtypes:
        t.add_column(dtype, justify="right")
    for level, ridges in out["ridge_point_by_level"].items():
        t.add_row(level, *(f"{ridges[k]:.1f}" for k in dtypes))
    console.print(t)
    console.print("An operation whose FLOP/byte is below a level's ridge point waits on that level.")
    console.print(f"A square GEMM in {out['precision']} has intensity 2n^3 / (3n^2 x {out['element_bytes']} B) and "
                  f"crosses the DRAM ridge at {out['gemm_crossover_formula']}.")
    t = Table(title=f"where operations land ({out['precision']}, forward pass, compulsory DRAM traffic)")
    for col, justify in (("operation", "left"), ("shape", "left"), ("FLOP", "right"), ("bytes", "right"),
                         ("FLOP/byte", "right"), ("bound", "left"), ("attainable", "right")):
        t.add_column(col, justify=justify, overflow="fold")
    for op in out["operations"]:
        t.add_row(op["name"], op["shape"], format_si(op["flops"], ""), format_si(op["bytes"], "B"),
                  f"{op['intensity']:.3g}", op["bound"], format_si(op["attainable_flops_per_s"], "FLOP/s"))
    console.print(t)

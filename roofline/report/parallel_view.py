"""Text view of a data-parallel prediction: the step, where communication went, and the buckets."""

from __future__ import annotations

from typing import Any

from roofline.units import format_si


def render_data_parallel(out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{out['model']}[/] training on {out['gpus']} x {out['device']} "
                  f"({out['nodes']} x {out['node']}), {out['precision']}, global batch {out['batch_size']} = "
                  f"{out['per_gpu_batch']} per GPU x {out['gpus']} GPUs x {out['accumulation_steps']} micro-steps")
    if out.get("sharding") == "full":
        console.print(f"fully sharded (FSDP FULL_SHARD / ZeRO-3): {format_si(out['memory_bytes'], 'B')} per GPU "
                      f"against {format_si(out['replica_memory_bytes'], 'B')} for a replica; step "
                      f"{format_si(out['step_time_s'], 's')} against {format_si(out['single_gpu_step_time_s'], 's')} "
                      f"on one GPU ({100 * out['scaling_efficiency']:.1f}% efficiency), "
                      f"{format_si(out['communication_s'], 's')} of all-gathers and reduce-scatters, "
                      f"{format_si(out['exposed_communication_s'], 's')} exposed")
        return
    console.print(f"step {format_si(out['step_time_s'], 's')} against {format_si(out['single_gpu_step_time_s'], 's')} "
                  f"on one GPU: {out['samples_per_s']:.1f} samples/s, speed-up {out['speedup']:.2f}x of "
                  f"{out['gpus']} (scaling efficiency {100 * out['scaling_efficiency']:.1f}%)")
    console.print(f"gradients {format_si(out['gradient_bytes'], 'B')} all-reduced by {out['library']} "
                  f"in {len(out['buckets'])} groups at "
                  f"{format_si(out['bus_bandwidth_bytes_per_s'], 'B/s')} bus bandwidth: "
                  f"{format_si(out['communication_s'], 's')} of communication, "
                  f"{format_si(out['exposed_communication_s'], 's')} exposed after a "
                  f"{format_si(out['backward_s'], 's')} backward")
    t = Table(title="gradient groups (DDP buckets, fusion buffers), backward order")
    for col in ("group", "tensors", "bytes", "ready", "start", "all-reduce", "end"):
        t.add_column(col, justify="right")
    for b in out["buckets"]:
        t.add_row(str(b["index"]), str(b["tensors"]), format_si(b["bytes"], "B"), format_si(b["ready_s"], "s"),
                  format_si(b["start_s"], "s"), format_si(b["allreduce_s"], "s"), format_si(b["end_s"], "s"))
    console.print(t)


def render_ddp_validation(out: dict[str, Any]) -> None:
    """The live DDP run against its prediction: gloo's measured figures, the two runs, scaling."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    gloo = out["gloo"]
    console.print(f"[bold]{out['model']}[/] DDP on {out['ranks']} gloo ranks, batch {out['per_rank_batch']} per rank; "
                  f"gloo measured {format_si(gloo['bus_bandwidth_bytes_per_s'], 'B/s')} bus bandwidth, "
                  f"{format_si(gloo['latency_s'], 's')} per step; profile {out['profile']['name']} "
                  f"({out['profile']['source']})")
    t = Table(title="step time, predicted against measured (median)")
    for col in ("ranks", "predicted", "measured", "error", "communication predicted", "measured"):
        t.add_column(col, justify="right")
    for r in out["runs"]:
        t.add_row(str(r["ranks"]), format_si(r["predicted_s"], "s"), format_si(r["measured_s"], "s"),
                  f"{r['error_pct']:+.1f}%", format_si(r.get("predicted_communication_s"), "s"),
                  format_si(r.get("measured_communication_s"), "s"))
    console.print(t)
    s = out["scaling_efficiency"]
    console.print(f"scaling efficiency: predicted {100 * s['predicted']:.1f}%, measured {100 * s['measured']:.1f}% "
                  f"({s['difference_points']:+.1f} points); communication "
                  f"{'overlaps the backward' if out['overlap'] else 'is not hidden: the ranks leave no core idle'}")
    for w in out["profile"]["warnings"]:
        console.print(f"[yellow]warning:[/] {w}")


def render_scaling_lesson(out: dict[str, Any]) -> None:
    """Why N GPUs give less than N x: the fixed part, then the model's own strong-scaling sweep."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    n, s, c = out["gpus"], out["speedup"], out["fixed_fraction_of_one_gpu_step"]
    console.print(f"[bold]Why {n} GPUs give {s:g}x, not {n}x[/]")
    console.print(f"{out['formula']}")
    console.print(f"{n} GPUs at {s:g}x: C / T1 = ({n} / {s:g} - 1) / {n} = {100 * c:.2f}% of the one-GPU step "
                  f"does not shrink (the all-reduce the shorter backward no longer hides, its latency steps); "
                  f"at N = {n} it is {100 * n * c / (1 + n * c):.0f}% of each step.")
    console.print("  ".join(f"{p['gpus']}: {p['speedup']:.1f}x" for p in out["curve"]))
    if "model" in out:
        m = out["model"]
        t = Table(title=f"{m['name']} at global batch {m['global_batch']} on {m['node']} nodes (predicted)")
        for col in ("GPUs", "batch/GPU", "step", "all-reduce", "exposed", "backward", "speed-up", "efficiency"):
            t.add_column(col, justify="right")
        for p in m["points"]:
            t.add_row(str(p["gpus"]), str(p["per_gpu_batch"]), format_si(p["step_time_s"], "s"),
                      format_si(p["communication_s"], "s"), format_si(p["exposed_communication_s"], "s"),
                      format_si(p["backward_s"], "s"), f"{p['speedup']:.1f}x", f"{100 * p['scaling_efficiency']:.0f}%")
        console.print(t)

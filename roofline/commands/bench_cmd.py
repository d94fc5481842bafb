"""`roofline bench`: the textbook's performance lessons, measured here beside the model's prediction.

`gemm-strategies` computes one product four ways; `transfer` shows when host<->device copies cancel a GPU's
advantage. Predictions come from the profile's numbers (this machine's calibration when there is one).
"""

from __future__ import annotations

import argparse

from roofline.commands.common import add_json_flag, integer, print_json, text
from roofline.errors import RooflineError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("bench", help="textbook lessons: GEMM strategies, host<->device transfers",
                              description="Measure a lesson on this machine and compare it with the model.")
    sub = p.add_subparsers(dest="bench_command", metavar="LESSON", required=True)
    g = sub.add_parser("gemm-strategies", help="one matrix product element-wise, by columns, whole, blocked")
    g.add_argument("--n", type=integer(8, 1024), default=256,
                   help="matrix size, 8 to 1024 (default 256; element by element makes n^2 Python calls)")
    g.add_argument("--hw", type=text, metavar="NAME|PATH",
                   help="CPU profile for the predictions (default: this machine, "
                   "calibrated if `roofline calibrate` has run)")
    add_json_flag(g)
    g.set_defaults(handler=run_strategies)
    t = sub.add_parser("transfer", help="when copies to and from a GPU cancel its advantage")
    t.add_argument("--gpu", type=text, metavar="NAME", default="v100", help="GPU profile to model (default v100)")
    t.add_argument("--n", type=text, default="64,128,256,512,1024,2048", help="matrix sizes, comma-separated")
    add_json_flag(t)
    t.set_defaults(handler=run_transfer)


def _cpu_ceilings(hw: str | None):
    from roofline.hardware import find_profile
    from roofline.measure.calibrate import this_machine
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    if hw:
        profile, source = find_profile(hw, kind="cpu"), hw
    else:
        profile, path = this_machine()
        source = str(path) if path else "this machine (detected, not calibrated: run `roofline calibrate`)"
    return profile, source, ceilings_for(profile, get_precision("fp32"))


def run_strategies(args: argparse.Namespace) -> int:
    from roofline.lessons import strategies

    profile, source, c = _cpu_ceilings(args.hw)
    cores = int(profile.compute.cores.value * profile.compute.sockets)
    results = strategies.run(c, args.n, cores)
    rows = [{"strategy": r.name, "calls": r.prediction.calls, "measured_s": r.measurement.median,
             "measured_flops_per_s": r.measured_flops_per_s, "predicted_s": r.prediction.time_s,
             "predicted_flops_per_s": r.predicted_flops_per_s, "dispatch_s": r.prediction.dispatch_s,
             "compute_s": r.prediction.compute_s, "why": r.why(), "spread": r.measurement.spread}
            for r in results]
    doc = {"n": args.n, "profile": source, "dispatch_s_per_call": c.dispatch_s,
           "dispatch_provenance": c.provenance.get("dispatch_s"), "strategies": rows}
    if args.json:
        print_json(doc)
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"C = A @ B, {args.n}x{args.n} float32 (GFLOP/s)", caption=f"model: {source}")
    for col in ("strategy", "calls", "measured", "model", "why"):
        table.add_column(col, justify="right" if col in ("calls", "measured", "model") else "left")
    for r in rows:
        table.add_row(r["strategy"], str(r["calls"]), f"{r['measured_flops_per_s'] / 1e9:.3g}",
                      f"{r['predicted_flops_per_s'] / 1e9:.3g}", r["why"])
    Console().print(table)
    return 0


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(n < 1 or n > 8192 for n in sizes):
        raise RooflineError(f"--n '{text}': expected sizes like 64,256,1024 (1..8192)")
    return sorted(sizes)


def run_transfer(args: argparse.Namespace) -> int:
    import torch

    from roofline.hardware import find_profile
    from roofline.lessons import transfer
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision

    sizes = _sizes(args.n)
    gpu = ceilings_for(find_profile(args.gpu, kind="gpu"), get_precision("fp32"))
    measured = torch.cuda.is_available()
    points = transfer.sweep(gpu, sizes, measured)
    note = (f"GPU side measured on {torch.cuda.get_device_name(0)} (model shown beside it)" if measured else
            f"no CUDA device here: could not measure the GPU side; it is the model for {gpu.device} "
            "(host link, launch overhead, fp32 peak from its profile); the CPU side is measured")
    rows = [{"n": p.n, "cpu_s": p.cpu_s, "gpu_s": p.gpu_s, "gpu_model_s": p.gpu_model_s,
             "gpu_measured_s": p.gpu_measured_s, "copy_s": p.copy_in_s + p.copy_out_s, "launch_s": p.launch_s,
             "gpu_compute_s": p.compute_s, "copy_share": p.copy_share, "gpu_faster": p.gpu_s < p.cpu_s}
            for p in points]
    doc = {"gpu": gpu.device, "measured_gpu": measured, "note": note, "crossover_n": transfer.crossover(points),
           "host_link_bytes_per_s": gpu.host_link_bytes_per_s, "kernel_launch_s": gpu.launch_s, "sizes": rows}
    if args.json:
        print_json(doc)
        return 0
    from rich.console import Console
    from rich.table import Table

    from roofline.units import format_si

    table = Table(title=f"fp32 C = A @ B: this CPU against {gpu.device} with copies", caption=note)
    for col in ("n", "CPU (measured)", "GPU total", "copies", "GPU math", "copies share", "faster"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["n"]), format_si(r["cpu_s"], "s"), format_si(r["gpu_s"], "s"),
                      format_si(r["copy_s"], "s"), format_si(r["gpu_compute_s"], "s"), f"{r['copy_share']:.0%}",
                      "GPU" if r["gpu_faster"] else "CPU")
    console = Console()
    console.print(table)
    cross = doc["crossover_n"]
    console.print(f"the GPU pays off from n = {cross}" if cross else
                  "the copies cancel the GPU's advantage at every size swept")
    return 0

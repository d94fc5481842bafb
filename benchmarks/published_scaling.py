"""Predicted against published data-parallel scaling efficiency (benchmarks/published/scaling.yaml).

Each row's efficiency is the published N-GPU throughput over N x the 1-GPU throughput; the prediction is
`roofline predict --train --gpus N` on the row's node profile at its per-GPU batch and precision. Errors are
in percentage points, summarised separately for the comparison sources and for the held-out ones.
Run alone: `python benchmarks/published_scaling.py [--json]`; `compare_scaling()` is the function a
registry of published-record comparisons can call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATASET = ROOT / "benchmarks" / "published" / "scaling.yaml"


def measured_single_step_s(row: dict[str, Any]) -> float | None:
    """The one-GPU step the source measured (per-GPU batch / its one-GPU throughput), or None."""
    throughput = row.get("throughput_1") or row.get("single_gpu_throughput")
    return row["per_gpu_batch"] / throughput if throughput else None


def library_for(source: dict[str, Any]) -> Any:
    """The source's all-reduce library (roofline.model.comm.libraries.LIBRARIES), with the Horovod cycle time
    the source's own scripts set, the algorithms of the NCCL release it ran, and TensorFlow's XLA
    auto-clustering, where the source names them."""
    from dataclasses import replace

    from roofline.model.comm.libraries import LIBRARIES, nccl_algorithm, under_xla_autoclustering

    library = LIBRARIES[source["allreduce"]]
    if source.get("xla_autoclustering"):
        library = under_xla_autoclustering(library)
    if "horovod_cycle_time_ms" in source:
        library = replace(library, cycle_s=source["horovod_cycle_time_ms"] * 1e-3)
    if "nccl_version" in source:
        library = replace(library, algorithm=nccl_algorithm(source["nccl_version"]))
    return library


def predicted_efficiency(row: dict[str, Any], source: dict[str, Any]) -> float:
    from roofline.hardware import find_profile
    from roofline.hardware.fabric_load import find_node
    from roofline.model.comm.data_parallel import at_measured_step, predict_data_parallel
    from roofline.model.comm.libraries import library_fabric
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.zoo import build_workload

    node = find_node(row["node"])
    precision = get_precision(row["precision"])
    workload = build_workload(row["model"], row["per_gpu_batch"])
    single = predict_step(workload, find_profile(node.gpu, kind="gpu"), precision,
                          StepOptions(train=True, optimizer="momentum"))
    library = library_for(source)
    nodes = row.get("nodes", 1)
    fabric = library_fabric(library, node, row["gpus"] // nodes, nodes)
    measured = measured_single_step_s(row)
    if measured is not None:
        single = at_measured_step(single, measured)
    return predict_data_parallel(workload, single, fabric, precision.master_weight_bytes, grouping=library.grouping,
                                 algorithm=library.algorithm, launch_wait_s=library.launch_wait_s,
                                 overlap=library.overlaps_backward).scaling_efficiency


def _summary(errors: list[float]) -> dict[str, Any]:
    absolute = [abs(e) for e in errors]
    return {"rows": len(errors), "median_abs_error_points": statistics.median(absolute) if absolute else None,
            "worst_abs_error_points": max(absolute) if absolute else None}


def predicted_bus_bandwidth(row: dict[str, Any]) -> float:
    """The bus bandwidth the row's library (default pytorch-ddp: NCCL 2's rings) sees over the row's GPUs."""
    from roofline.hardware.fabric_load import find_node
    from roofline.model.comm.libraries import LIBRARIES, library_fabric

    library = LIBRARIES[row.get("library", "pytorch-ddp")]
    return library_fabric(library, find_node(row["node"]), row["gpus"]).bus_bandwidth_bytes_per_s


def compare_scaling(dataset: Path = DATASET) -> dict[str, Any]:
    data = yaml.safe_load(dataset.read_text())
    rows = []
    for row in data["rows"]:
        measured = row.get("efficiency") or row["throughput_n"] / (row["gpus"] * row["throughput_1"])
        source = data["sources"][row["source"]]
        predicted = predicted_efficiency(row, source)
        library = library_for(source)
        rows.append({**row, "held_out": source["held_out"], "measured_efficiency": measured,
                     "predicted_efficiency": predicted, "error_points": 100 * (predicted - measured),
                     "grouping": library.grouping, "ring": library.ring, "algorithm": library.algorithm,
                     "launch_wait_s": library.launch_wait_s,
                     "overlaps_backward": library.overlaps_backward,
                     "single_step_s": measured_single_step_s(row)})
    bus = [{**row, "predicted_bus_bandwidth_bytes_per_s": predicted_bus_bandwidth(row),
            "error_pct": 100 * (predicted_bus_bandwidth(row) / row["bus_bandwidth_bytes_per_s"] - 1)}
           for row in data.get("bus_bandwidth", [])]
    return {"dataset": str(dataset.resolve().relative_to(ROOT)), "rows": rows, "bus_bandwidth": bus,
            "comparison": _summary([r["error_points"] for r in rows if not r["held_out"]]),
            "held_out": _summary([r["error_points"] for r in rows if r["held_out"]])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = compare_scaling()
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'source':22} {'node':15} {'prec':5} {'b/GPU':>5} {'GPUs':>4} {'measured':>9} {'predicted':>9} "
          f"{'error':>7}")
    for r in result["rows"]:
        print(f"{r['source'] + (' (held out)' if r['held_out'] else ''):22} {r['node']:15} {r['precision']:5} "
              f"{r['per_gpu_batch']:>5} {r['gpus']:>4} {100 * r['measured_efficiency']:8.1f}% "
              f"{100 * r['predicted_efficiency']:8.1f}% {r['error_points']:+6.1f}")
    for b in result["bus_bandwidth"]:
        library = f" {b['library']}" if "library" in b else ""
        taken = "" if b["check"] else " (a figure is taken from it, not a check)"
        print(f"bus bandwidth {b['node']} x{b['gpus']}{library}: measured {b['bus_bandwidth_bytes_per_s'] / 1e9:.3g} "
              f"GB/s, derived {b['predicted_bus_bandwidth_bytes_per_s'] / 1e9:.3g} GB/s ({b['error_pct']:+.0f}%) "
              f"{b['source']}{taken}")
    for name in ("comparison", "held_out"):
        s = result[name]
        print(f"{name}: {s['rows']} rows, median |error| {s['median_abs_error_points']:.1f} points, worst "
              f"{s['worst_abs_error_points']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

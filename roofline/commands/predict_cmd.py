"""`roofline predict`: the predicted time of one step (or one op), per layer, with what bounds it."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_hw_args, add_json_flag, parse_batches, print_json, selected_profile, text
from roofline.commands.model_args import add_model_args, add_step_args, model_request
from roofline.errors import DoesNotFit, RooflineError
from roofline.model.step import StepOptions, StepPrediction


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("predict", help="predicted step time, memory and per-layer bounds",
                              description="Predict one step of a model (or one op) on a device.")
    add_model_args(p, allow_op=True)
    add_hw_args(p)
    p.add_argument("--batch", type=text, default="1", help="N, a list 1,8,32, or a range 1:1024 (default 1)")
    add_step_args(p)
    p.add_argument("--allow-oversize", action="store_true",
                   help="predict time even when the batch does not fit the device memory")
    add_json_flag(p)
    p.set_defaults(handler=run)


def layers(pred: StepPrediction) -> list[dict[str, Any]]:
    """One row per op, its passes summed; bound is that of the pass that takes longest."""
    rows: dict[str, dict[str, Any]] = {}
    longest: dict[str, float] = {}
    for o in pred.ops:
        if o.bound == "free" and o.name in rows:
            continue
        row = rows.setdefault(o.name, {"name": o.name, "op": o.kind, "flops": 0.0, "bytes": 0.0, "time_s": 0.0,
                                       "compute_s": 0.0, "memory_s": 0.0, "host_s": 0.0, "bound": o.bound,
                                       "path": o.path, "notes": [], "passes": {}})
        row["flops"] += o.flops
        row["bytes"] += o.bytes
        row["time_s"] += o.time_s
        row["compute_s"] += o.compute_s
        row["memory_s"] += o.memory_s
        row["host_s"] += o.host_s
        row["passes"][o.pass_] = o.time_s
        row["notes"] = list(dict.fromkeys(row["notes"] + list(o.notes)))
        if o.time_s > longest.get(o.name, -1.0):
            longest[o.name] = o.time_s
            row["bound"], row["path"] = o.bound, o.path
    for row in rows.values():
        row["arithmetic_intensity"] = row["flops"] / row["bytes"] if row["bytes"] else None
    return list(rows.values())


def prediction_dict(pred: StepPrediction) -> dict[str, Any]:
    return {
        "model": pred.model, "device": pred.device, "batch_size": pred.batch_size, "precision": pred.precision,
        "train": pred.train, "step_time_s": pred.step_time_s, "samples_per_s": pred.samples_per_s,
        "memory_bytes": pred.memory.total, "memory": pred.memory.as_dict(), "capacity_bytes": pred.capacity_bytes,
        "fits": pred.fits, "host_s": pred.host_s, "device_s": pred.device_s, "transfer_s": pred.transfer_s,
        "sync_s": pred.sync_s, "optimizer_s": pred.optimizer_s, "amp_cast_s": pred.amp_cast_s,
        "flops": pred.flops, "bytes": pred.bytes, "time_by_bound_s": pred.time_by_bound(),
        "ceilings": {"compute_dtype": pred.ceilings.compute_dtype,
                     "matrix_flops_per_s": pred.ceilings.matrix_flops_per_s,
                     "vector_flops_per_s": pred.ceilings.vector_flops_per_s,
                     "memory_levels": [{"level": lv.name, "capacity_bytes": lv.capacity_bytes,
                                        "bandwidth_bytes_per_s": lv.bandwidth_bytes_per_s}
                                       for lv in pred.ceilings.levels],
                     "dispatch_s": pred.ceilings.dispatch_s, "launch_s": pred.ceilings.launch_s,
                     "provenance": pred.ceilings.provenance},
        "layers": layers(pred),
    }


def run(args: argparse.Namespace) -> int:
    from roofline.model.step import predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.request import workload_builder

    profile = selected_profile(args)
    precision = get_precision(args.precision)
    name, build = workload_builder(model_request(args))
    batches = parse_batches(args.batch)
    if args.op and batches != [1]:
        raise RooflineError(f"--batch {args.batch} does not apply to --op: an op's shapes are literal; put the "
                            "batch in the spec, e.g. 'linear(batch=32,in_features=1024,out_features=1024)'")
    opts = StepOptions(train=args.train, optimizer=args.optimizer, pinned=args.pinned, sync_points=args.sync,
                       channels_last=args.channels_last,
                       reserve_bytes=args.reserve_bytes)
    preds = [predict_step(build(b), profile, precision, opts) for b in batches]
    for p in preds:
        if not p.fits and not args.allow_oversize:
            raise DoesNotFit(f"{name} at batch {p.batch_size} ({p.precision}{', training' if p.train else ''}) needs "
                             f"{p.memory.total / 2**30:.2f} GiB but {p.device} has "
                             f"{p.capacity_bytes / 2**30:.2f} GiB; use a smaller --batch, a 16-bit --precision, "
                             "or --allow-oversize to see the time anyway")
    out = prediction_dict(preds[0])
    out["batches"] = [{"batch_size": p.batch_size, "step_time_s": p.step_time_s, "samples_per_s": p.samples_per_s,
                       "memory_bytes": p.memory.total} for p in preds]
    if args.json:
        print_json(out)
        return 0
    from roofline.report.predict_view import render_prediction

    render_prediction(out, preds)
    return 0

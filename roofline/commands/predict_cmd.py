"""`roofline predict`: the predicted time of one step (or one op), per layer, with what bounds it."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import add_hw_args, add_json_flag, print_json, selected_profile, text
from roofline.commands.flag_scope import check_flag_scope
from roofline.commands.model_args import add_model_args, add_step_args, model_request, step_placement
from roofline.commands.serving import add_serving_args
from roofline.errors import DoesNotFit, RooflineError
from roofline.model.step import StepOptions
from roofline.workload.llm.builtins import serving_requested


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("predict", help="predicted step time, memory and per-layer bounds",
                              description="Predict one step of a model (or one op) on a device.")
    add_model_args(p, allow_op=True)
    add_hw_args(p)
    p.add_argument("--batch", type=text, default="1", help="N, a list 1,8,32, or a range 1:1024 (default 1)")
    add_step_args(p)
    add_serving_args(p)
    p.add_argument("--in-model", action="store_true",
                   help="with --op: price the op as one layer of a model (called after other layers: cold per-call "
                        "costs) instead of alone in a loop (warm)")
    p.add_argument("--allow-oversize", action="store_true",
                   help="predict time even when the batch does not fit the device memory")
    p.add_argument("--html", metavar="FILE.html", help="also write the HTML report (as `roofline report`)")
    p.add_argument("--force", action="store_true", help="let --html overwrite an existing file")
    add_parallel_args(p)
    add_json_flag(p)
    p.set_defaults(handler=run, flag_parser=p)


def add_parallel_args(p: argparse.ArgumentParser) -> None:
    """Data-parallel training: with --gpus, --batch is the global batch, split over every GPU."""
    g = p.add_argument_group("several GPUs: data-parallel training (with --train), tensor-parallel serving (an LLM)")
    g.add_argument("--gpus", type=int, metavar="N",
                   help="GPUs per node running DistributedDataParallel; for an LLM, GPUs one model is split over "
                        "(tensor parallelism: weights and KV cache split N ways, two all-reduces per layer)")
    g.add_argument("--nodes", type=int, default=1, metavar="M", help="nodes of --gpus GPUs each (default 1)")
    g.add_argument("--node", metavar="NAME", help="node profile (default: the one holding --gpu)")
    g.add_argument("--bucket-cap-mb", type=float, default=25.0, metavar="MB", help="DDP bucket cap (default 25)")
    g.add_argument("--grad-accum", type=int, default=1, metavar="K", help="micro-steps per all-reduce (default 1)")
    g.add_argument("--grad-comm", choices=["fp32", "fp16", "bf16"],
                   help="gradient dtype on the wire (fp16/bf16: DDP's compression hooks)")
    g.add_argument("--allreduce", default="auto", metavar="ALGO",
                   help="auto (NCCL's choice; default)|ring|tree|hierarchical|custom (a serving runtime's own one- "
                        "and two-shot kernels inside a node)")
    g.add_argument("--library", default="pytorch-ddp", metavar="NAME",
                   help="data-parallel library whose mechanisms price the gradients: pytorch-ddp (default), horovod "
                        "(Tensor Fusion, 5 ms cycle), apex-ddp-unbucketed, paddle-fleet, tf-replicated-nccl "
                        "(TensorFlow 1's NCCL 1 ring, after the backward)")
    g.add_argument("--shard", choices=["none", "full"], default="none",
                   help="full: FSDP FULL_SHARD / ZeRO-3 (parameters, gradients, optimizer state sharded) instead of "
                        "DDP; the way to fit a model whose replica does not")
    g.add_argument("--plot", metavar="DIR|FILE.png|FILE.svg",
                   help="with --gpus: draw predicted speed-up against GPU count (1 up to gpus x nodes) and the ideal")


def run(args: argparse.Namespace) -> int:
    from roofline import api

    serving = serving_requested(args.model, args.prompt_len, args.output_len, getattr(args, "serve", False))
    check_flag_scope(args, args.flag_parser, serving, several_gpus_only=("plot",))
    if serving:
        from roofline.commands.serving import run_predict

        return run_predict(args)
    if args.gpus is not None:
        return run_data_parallel(args)
    result = api.predict(model_request(args), hw=args.hw, gpu=args.gpu, cpu=args.cpu, batch=args.batch,
                         precision=args.precision or "fp32", train=args.train, optimizer=args.optimizer,
                         pinned=args.pinned, data=args.data,
                         sync=args.sync, channels_last=args.channels_last, reserve_bytes=args.reserve_bytes,
                         allow_oversize=args.allow_oversize, html=args.html, force=args.force,
                         fp32_math=args.fp32_math, attention=args.attention, in_model=args.in_model,
                         gelu_new=args.gelu_new)
    if args.json:
        print_json(result.to_dict())
        return 0
    from roofline.report.predict_view import render_prediction

    render_prediction(result.to_dict())
    return 0


def data_parallel_dict(dp: Any) -> dict[str, Any]:
    """The multi-GPU document: DESIGN's keys and what they follow from."""
    fabric = dp.fabric
    return {
        "gpus": fabric.world, "gpus_per_node": fabric.intra.ranks, "nodes": fabric.nodes,
        "per_gpu_batch": dp.single.batch_size, "accumulation_steps": dp.accumulation_steps,
        "step_time_s": dp.step_time_s, "samples_per_s": dp.samples_per_s,
        "single_gpu_step_time_s": dp.single.step_time_s, "scaling_efficiency": dp.scaling_efficiency,
        "speedup": dp.scaling_efficiency * fabric.world,
        "communication_s": dp.communication_s, "exposed_communication_s": dp.exposed_communication_s,
        "backward_s": dp.backward_s, "gradient_bytes": dp.gradient_bytes,
        "bus_bandwidth_bytes_per_s": fabric.bus_bandwidth_bytes_per_s,
        "fabric": {"intra": vars(fabric.intra), "inter": vars(fabric.inter) if fabric.inter else None},
        "buckets": [{"index": b.index, "tensors": b.tensors, "bytes": b.bytes, "ready_s": b.ready_s,
                     "start_s": b.start_s, "end_s": b.end_s, "allreduce_s": b.allreduce_s} for b in dp.buckets],
    }


def run_data_parallel(args: argparse.Namespace) -> int:
    from roofline.api import layer_rows as layers
    from roofline.model.comm.data_parallel import predict_data_parallel
    from roofline.model.comm.job import data_parallel_job
    from roofline.model.step import predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.request import parse_batches, workload_builder

    profile = selected_profile(args)
    precision = get_precision(args.precision or "fp32")
    if not args.train:
        raise RooflineError("--gpus prices data-parallel training; add --train")
    if args.op:
        raise RooflineError("--gpus needs --model (a whole model's gradients), not --op")
    batches = parse_batches(args.batch)
    if len(batches) != 1:
        raise RooflineError("--gpus takes one global --batch, not a list")
    job = data_parallel_job(profile, args.node, args.gpus, args.nodes, batches[0], args.grad_accum,
                            precision.master_weight_bytes, args.grad_comm, args.allreduce, args.library)
    name, build = workload_builder(model_request(args))
    workload = build(job.per_gpu_batch)
    opts = StepOptions(train=True, optimizer=args.optimizer, sync_points=args.sync,
                       channels_last=args.channels_last, reserve_bytes=args.reserve_bytes,
                       fp32_math=args.fp32_math, attention=args.attention, gelu_new=args.gelu_new,
                       **step_placement(args).fields())
    single = predict_step(workload, profile, precision, opts)
    if args.shard == "full":
        out = _sharded_document(args, name, profile, precision, batches[0], workload, single, job)
    else:
        if not single.fits and not args.allow_oversize:
            raise DoesNotFit(f"{name} at {job.per_gpu_batch} per GPU needs {single.memory.total / 2**30:.2f} GiB "
                             f"but {single.device} has {single.capacity_bytes / 2**30:.2f} GiB; use a smaller "
                             "--batch, more GPUs, or --shard full to shard parameters, gradients and optimizer state")
        dp = predict_data_parallel(workload, single, job.fabric, job.grad_bytes, args.bucket_cap_mb,
                                   job.accumulation_steps, job.algorithm, overlap=job.library.overlaps_backward,
                                   grouping=job.library.grouping, launch_wait_s=job.library.launch_wait_s)
        out = {"model": name, "device": profile.name, "node": job.node.name, "precision": precision.name,
               "train": True, "batch_size": batches[0], "sharding": "none", "library": args.library,
               **data_parallel_dict(dp),
               "memory_bytes": single.memory.total, "layers": layers(single)}
    if args.plot:
        out["plot"] = _scaling_plot(args, profile, precision, build, opts, job, name)
    if args.json:
        print_json(out)
        return 0
    from roofline.report.parallel_view import render_data_parallel

    render_data_parallel(out)
    return 0


def _scaling_plot(args: argparse.Namespace, profile: Any, precision: Any, build: Any, opts: StepOptions, job: Any,
                  name: str) -> str:
    from roofline.model.comm.scaling import weak_scaling
    from roofline.report.plots import plot_path
    from roofline.report.scaling_plot import write_scaling_plot

    target = plot_path(args.plot, f"{name}-scaling", profile.name, args.force)
    points = weak_scaling(build, profile, precision, opts, job.node, job.per_gpu_batch, job.fabric.world,
                          job.grad_bytes, job.library)
    return write_scaling_plot(points, f"{name} on {job.node.name}, batch {job.per_gpu_batch} per GPU, "
                              f"{precision.name}, {args.library}", target, args.force)


def _sharded_document(args: argparse.Namespace, name: str, profile: Any, precision: Any, batch: int, workload: Any,
                      single: Any, job: Any) -> dict[str, Any]:
    from roofline.api import layer_rows as layers
    from roofline.model.comm.sharded import predict_sharded

    if job.accumulation_steps != 1:
        raise RooflineError("--shard full prices one micro-step per all-gather; leave out --grad-accum")
    sharded = predict_sharded(workload, single, job.fabric, job.grad_bytes)
    if sharded.memory.total > single.capacity_bytes and not args.allow_oversize:
        raise DoesNotFit(f"{name} at {job.per_gpu_batch} per GPU needs {sharded.memory.total / 2**30:.2f} GiB even "
                         f"sharded over {job.fabric.world} GPUs; {single.device} has "
                         f"{single.capacity_bytes / 2**30:.2f} GiB")
    fabric = job.fabric
    return {"model": name, "device": profile.name, "node": job.node.name, "precision": precision.name, "train": True,
            "batch_size": batch, "sharding": "full", "gpus": fabric.world, "gpus_per_node": fabric.intra.ranks,
            "nodes": fabric.nodes, "per_gpu_batch": single.batch_size, "accumulation_steps": 1,
            "step_time_s": sharded.step_time_s, "samples_per_s": sharded.samples_per_s,
            "single_gpu_step_time_s": single.step_time_s, "scaling_efficiency": sharded.scaling_efficiency,
            "speedup": sharded.scaling_efficiency * fabric.world, "communication_s": sharded.communication_s,
            "exposed_communication_s": sharded.exposed_communication_s, "buckets": [],
            "bus_bandwidth_bytes_per_s": fabric.bus_bandwidth_bytes_per_s,
            "memory_bytes": sharded.memory.total, "memory": sharded.memory.as_dict(),
            "replica_memory_bytes": single.memory.total, "layers": layers(single)}

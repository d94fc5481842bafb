"""The JSON documents of a language model's serving prediction and serving advice (DESIGN's keys: ttft_s,
tpot_s, tokens_per_s, memory {weights, kv_cache, activations, workspace}, phases {prefill, decode} with
layers; recommended {batch_size, precision, kv_precision} and sweep rows with ttft_s, tpot_s, tokens_per_s)."""

from __future__ import annotations

from typing import Any


def phase_layers(cost: Any) -> list[dict[str, Any]]:
    """One row per distinct op of the phase, with how often it runs; times are totals over its repeats."""
    return [{"name": o.name, "op": o.kind, "count": n, "flops": o.flops * n, "bytes": o.bytes * n,
             "time_s": o.time_s * n, "compute_s": o.compute_s * n, "memory_s": o.memory_s * n,
             "host_s": o.host_s * n, "bound": o.bound, "path": o.path,
             "arithmetic_intensity": o.flops / o.bytes if o.bytes else None, "notes": list(o.notes)}
            for o, n in cost.costs]


def prediction_dict(p: Any) -> dict[str, Any]:
    m = p.memory
    return {
        "model": p.model, "device": p.device, "batch_size": p.batch, "prompt_len": p.prompt_len,
        "output_len": p.output_len, "precision": p.precision.name, "kv_precision": p.precision.kv_name,
        "expert_precision": p.precision.experts.name if p.precision.experts else None,
        "group_size": p.precision.group_size if p.precision.name == "int4" else None, "runtime": p.runtime,
        "quant_kernel": p.precision.quant_kernel if p.precision.weight_only else None,
        "accumulate": p.precision.accumulate,
        "ttft_s": p.ttft_s, "tpot_s": p.tpot_s, "tokens_per_s": p.tokens_per_s,
        "decode_tokens_per_s": p.decode_tokens_per_s, "request_s": p.request_s,
        "step_time_s": p.request_s, "samples_per_s": p.batch / p.request_s,
        "memory_bytes": m.total, "capacity_bytes": p.capacity_bytes, "fits": p.fits,
        "memory": {"weights": m.weights, "kv_cache": m.kv_cache, "activations": m.activations,
                   "workspace": m.workspace, "total": m.total},
        "phases": {
            "prefill": {"time_s": p.prefill.time_s, "tokens_per_sequence": p.prompt_len, "context": p.prompt_len,
                        "flops": p.prefill.flops, "bytes": p.prefill.bytes, "layers": phase_layers(p.prefill)},
            "decode": {"time_s": p.decode.time_s, "tokens_per_sequence": 1, "context": p.decode.phase.context,
                       "flops": p.decode.flops, "bytes": p.decode.bytes, "layers": phase_layers(p.decode)},
        },
        "layers": phase_layers(p.decode),
        "gpus": p.gpus, "tensor_parallel": tensor_parallel_dict(p),
        "transformers": {"release": p.release.label, "adds": p.release.describe()},
        "engine": engine_dict(p),
    }


def engine_dict(p: Any) -> dict[str, Any]:
    """The serving engine's host loop: its time around each forward at this batch, which TTFT and TPOT include."""
    return {"name": p.engine.name, "host_s_per_step": p.engine_host_s, "fixed_s": p.engine.fixed_s,
            "per_sequence_s": p.engine.per_sequence_s, "source": p.engine.source}


def tensor_parallel_dict(p: Any) -> dict[str, Any] | None:
    """The tensor-parallel group: its fabric and each phase's communication (memory above is one GPU's)."""
    if p.tp is None:
        return None
    fabric = p.tp.fabric
    return {"gpus": p.tp.gpus, "node": p.tp.node, "allreduce": p.tp.algorithm,
            "bus_bandwidth_bytes_per_s": fabric.bus_bandwidth_bytes_per_s, "fabric": fabric.intra.provenance,
            "communication_s": {"prefill": p.prefill.communication_s, "decode": p.decode.communication_s},
            "memory_per_gpu": True}


def advice_dict(a: Any) -> dict[str, Any]:
    r = a.recommended
    rows = [{"batch_size": p.batch, "precision": p.precision.name, "kv_precision": p.precision.kv_name,
             "ttft_s": p.ttft_s, "tpot_s": p.tpot_s, "tokens_per_s": p.tokens_per_s,
             "decode_tokens_per_s": p.decode_tokens_per_s, "step_time_s": p.request_s,
             "samples_per_s": p.batch / p.request_s, "memory_bytes": p.memory.total, "meets_targets": meets}
            for p, meets in a.sweep]
    return {
        "model": a.model, "device": a.device, "prompt_len": a.prompt_len, "output_len": a.output_len,
        "runtime": a.runtime, "serve": True,
        "recommended": {"batch_size": r.batch if r else None, "precision": r.precision.name if r else None,
                        "kv_precision": r.precision.kv_name if r else None,
                        "ttft_s": r.ttft_s if r else None, "tpot_s": r.tpot_s if r else None,
                        "tokens_per_s": r.tokens_per_s if r else None,
                        "memory_bytes": r.memory.total if r else None},
        "max_batch_size": max(a.max_batch_by_precision.values()),
        "max_batch_size_by_precision": a.max_batch_by_precision,
        "sweep": rows, "reasons": a.reasons, "reason_numbers": a.numbers, "track_record": a.track_record,
        "transformers": a.sweep[0][0].release.label, "engine": a.sweep[0][0].engine.name,
    }

"""Serving advice for a language model: how many sequences to run at once and in which precision, for the
most output tokens/s within the latency targets and the device's memory, with the reasons in numbers.

Memory is affine in the batch (the KV cache and activations grow with it, weights and workspace do not), so
the largest batch that fits is solved from two evaluations; the sweep predicts powers of two up to it and the
largest itself, for each weight precision and KV cache precision the device runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from roofline.advise.track_record import serving_quotes
from roofline.errors import DoesNotFit
from roofline.model.ceilings import ceilings_for, compute_dtype_for
from roofline.model.llm_precision import ServingPrecision, default_precision, kernel_runs, serving_precision
from roofline.model.llm_step import ServingPrediction, TensorParallel, lm_head_params, predict_serving, serving_memory
from roofline.workload.llm.config import DecoderConfig
from roofline.workload.llm.phases import Layout, kv_cache_bytes_per_token, prefill, unfused_bytes
from roofline.workload.llm.transformers_release import CURRENT, TransformersRelease
from roofline.workload.ops.serving import CachedAttention, LogitsHead
from roofline.workload.precision import get_precision


@dataclass(frozen=True)
class ServingAdvice:
    model: str
    device: str
    prompt_len: int
    output_len: int
    runtime: str
    recommended: ServingPrediction | None
    max_batch_by_precision: dict[str, int]
    sweep: list[tuple[ServingPrediction, bool]]
    """Each prediction and whether it meets the latency targets."""
    reasons: list[str]
    numbers: dict[str, float | int | None]
    track_record: dict[str, Any] | None = None
    """How far held-out published runs of the recommended configuration's kind landed, per phase
    (`roofline.advise.track_record.serving_quotes`)."""


def candidate_precisions(profile, requested: str, kv: str | None, group_size: int,
                         quant_kernel: str = "fused", accumulate: str = "fp32", head_weights: str | None = None,
                         engine: str = "none") -> list[ServingPrecision]:
    """16-bit weights (bf16 where the device has it), fp8 where it has fp8 units, weight-only int8 and int4 (their
    products run by `quant_kernel`); each with a 16-bit KV cache, and an fp8 one where the device has fp8. Products
    accumulating in fp16 (`accumulate`) multiply fp16 operands: fp16 weights, or int8/int4 with fp16 activations."""
    def runs(name: str) -> bool:
        return compute_dtype_for(get_precision(name), profile) is not None

    activation = default_precision(profile, accumulate)
    names = [activation, *(["fp8"] if runs("fp8") and accumulate == "fp32" else []), "int8", "int4"]
    if requested != "auto":
        names = [requested]
    kvs = [kv] if kv else ["fp16", *(["fp8"] if runs("fp8") else [])] if activation != "fp32" else ["fp32"]
    # an explicit precision takes the kernel as asked (serving_precision refuses it for a 16-bit or fp8 one);
    # the auto sweep gives it to the weight-only candidates it runs (tinygemm: int4), the others run fused
    def kernel(name: str) -> str:
        if requested != "auto":
            return quant_kernel
        return quant_kernel if name in ("int8", "int4") and kernel_runs(quant_kernel, name) else "fused"

    return [serving_precision(n, k, group_size, activation, quant_kernel=kernel(n), accumulate=accumulate,
                              head_weights=head_weights, engine=engine)
            for n in names for k in kvs]


def max_batch(cfg: DecoderConfig, prec: ServingPrecision, prompt: int, output: int, capacity: float,
              is_gpu: bool, tp: TensorParallel | None = None, release: TransformersRelease = CURRENT) -> int:
    """Largest batch whose weights, KV cache, activations and workspace fit (affine in the batch) on each of
    the tensor-parallel GPUs, with the activations `release`'s forward holds (every prompt position's logits
    before transformers 4.45)."""
    layout = Layout(tp.gpus if tp else 1, tp.split_lm_head if tp else True, release=release)

    def total(b: int) -> float:
        ratio = prec.kv_bytes / prec.activation_bytes
        return serving_memory(cfg, prec, b, prompt, output, is_gpu, prefill(cfg, b, prompt, ratio, layout),
                              layout).total
    one, two = total(1), total(2)
    if one > capacity:
        return 0
    slope = two - one
    return int((capacity - one) // slope) + 1 if slope > 0 else 1 << 20


def _batches(limit: int) -> list[int]:
    if limit < 1:
        return []
    return sorted({*(1 << i for i in range(int(math.log2(limit)) + 1)), limit})


def advise_serving(cfg: DecoderConfig, profile, prompt: int, output: int, runtime: str = "eager",
                   precision: str = "auto", kv: str | None = None, group_size: int = 128,
                   tpot_s: float | None = None, ttft_s: float | None = None,
                   tp: TensorParallel | None = None, release: TransformersRelease = CURRENT,
                   quant_kernel: str = "fused", accumulate: str = "fp32", engine: str = "none",
                   head_weights: str | None = None) -> ServingAdvice:
    capacity = profile.memory.capacity_bytes.value
    is_gpu = profile.kind == "gpu"
    sweep: list[tuple[ServingPrediction, bool]] = []
    limits: dict[str, int] = {}
    for prec in candidate_precisions(profile, precision, kv, group_size, quant_kernel, accumulate, head_weights,
                                     engine):
        limit = max_batch(cfg, prec, prompt, output, capacity, is_gpu, tp, release)
        limits[f"{prec.name}/{prec.kv_name}"] = limit
        for b in _batches(limit):
            p = predict_serving(cfg, profile, prec, b, prompt, output, runtime, tp, release=release, engine=engine)
            meets = (tpot_s is None or p.tpot_s <= tpot_s) and (ttft_s is None or p.ttft_s <= ttft_s)
            sweep.append((p, meets))
    if not sweep:
        raise DoesNotFit(f"{cfg.name} does not fit on {profile.name} at batch 1 with {prompt + output}-token "
                         f"sequences in any precision ({capacity / 2**30:.1f} GiB); try a larger device or "
                         "several (--gpus N)")
    ok = [p for p, meets in sweep if meets]
    best = max(ok, key=lambda p: (p.tokens_per_s, -p.batch)) if ok else None
    shown = best or sweep[0][0]
    reasons, numbers = _reasons(cfg, shown, limits, tpot_s, ttft_s, ok)
    if (faster := _fp16_accumulate_reason(cfg, profile, shown, runtime, tp, release)) is not None:
        reasons.append(faster)
    if (host := _host_reason(cfg, profile, shown, tp)) is not None:
        reasons.append(host[0])
        numbers.update(host[1])
    records, device = serving_quotes(shown)
    reasons += [r["text"] for r in [*(records or {}).values(), *([device] if device else [])]]
    return ServingAdvice(cfg.name, profile.name, prompt, output, runtime, best, limits, sweep, reasons, numbers,
                         records)


def _head_reason(cfg: DecoderConfig, p: ServingPrediction, bw: float) -> tuple[str, float] | None:
    """What a 16-bit lm_head beside quantised decoder layers costs every decode step (`llm_precision.HEAD_WEIGHTS`):
    at a vocabulary of 128k it is a fifth of an int4 model's bytes, which the toolchain decides, not the GPU."""
    prec = p.precision
    params = lm_head_params(cfg)
    if prec.head is prec or p.gpus > 1 or not params:
        return None
    head = params * prec.head.linear_weight_bytes
    saved = head - params * prec.linear_weight_bytes
    others = "" if prec.name == "fp8" else " (gpt-fast, torchao, llama.cpp)"
    return (f"The lm_head ({head / 1e9:.2f} GB) stays {prec.head.name}, as vLLM's GPTQ/AWQ checkpoints, "
            f"llm-compressor, ModelOpt and AutoAWQ leave it: {head / p.memory.weights:.0%} of the weights every "
            f"decode step reads. A toolchain that quantises it too{others} reads {saved / 1e9:.2f} GB less, "
            f"{saved / bw * 1e3:.2f} ms a step at {bw / 1e9:.0f} GB/s (`--head-weights quantized`).", head)


def _reasons(cfg: DecoderConfig, p: ServingPrediction, limits: dict[str, int], tpot_s: float | None,
             ttft_s: float | None, ok: list[ServingPrediction]) -> tuple[list[str], dict[str, float | int | None]]:
    c = p.ceilings
    bw = c.dram.bandwidth_bytes_per_s
    peak = c.matrix_flops_per_s or c.vector_flops_per_s
    weights = p.memory.weights
    context = p.decode.phase.context
    kv_seq = context * kv_cache_bytes_per_token(cfg, p.precision.kv_bytes, p.gpus)
    flops_seq = p.decode.flops / p.batch
    # decode step time at batch B: compute B x F / peak against memory (W + B x KV) / bw; compute wins when
    # B (F / peak - KV / bw) > W / bw
    margin = flops_seq / peak - kv_seq / bw
    compute_batch = math.ceil(weights / bw / margin) if margin > 0 else None
    kv_batch = math.ceil(weights / kv_seq)
    key = f"{p.precision.name}/{p.precision.kv_name}"
    numbers: dict[str, float | int | None] = {
        "weight_bytes": weights, "weight_bytes_per_token": weights / p.batch, "kv_bytes_per_sequence": kv_seq,
        "decode_flops_per_sequence": flops_seq, "compute_bound_batch": compute_batch,
        "kv_overtakes_weights_batch": kv_batch, "max_batch_size": limits.get(key)}
    reasons = [
        f"Every decode step reads all {weights / 1e9:.2f} GB of {p.precision.name} weights: at batch {p.batch} "
        f"that is {weights / p.batch / 1e6:.1f} MB per generated token ({weights / bw * 1e3:.2f} ms at "
        f"{bw / 1e9:.0f} GB/s), while each sequence adds {flops_seq / 1e9:.1f} GFLOP and "
        f"{kv_seq / 1e6:.1f} MB of KV cache reads at its mean context of {context} tokens.",
        (f"Decode turns compute-bound at about batch {compute_batch}: there B x {flops_seq / 1e9:.1f} GFLOP at "
         f"{peak / 1e12:.0f} TFLOP/s outlasts reading the weights plus B KV caches."
         if compute_batch else
         f"Decode never turns compute-bound at this context: each sequence's KV reads ({kv_seq / bw * 1e6:.1f} "
         f"us) take longer than its FLOPs ({flops_seq / peak * 1e6:.1f} us), so batching stops paying once "
         "KV reads dominate."),
        f"KV cache reads overtake weight reads at batch {kv_batch} ({weights / 1e9:.2f} GB / {kv_seq / 1e6:.1f} MB "
        f"per sequence); an fp8 KV cache halves them.",
        f"The largest batch that fits at {p.prompt_len + p.output_len} tokens per sequence: "
        + ", ".join(f"{k} {v}" for k, v in limits.items()) + ".",
    ]
    if (kept := _head_reason(cfg, p, bw)) is not None:
        reasons.append(kept[0])
        numbers["head_bytes"] = kept[1]
    copy = cache_copy_bytes(cfg, p)
    numbers["cache_copy_bytes_per_step"] = copy
    if copy:
        copy_s = copy / bw
        reasons.append(
            f"Eager generate keeps a DynamicCache that appends each token with torch.cat, reading and rewriting every "
            f"layer's K and V: {copy / 1e9:.2f} GB per decode step at batch {p.batch}, {copy_s * 1e3:.2f} ms of the "
            f"{p.tpot_s * 1e3:.2f} ms step ({copy_s / p.tpot_s:.0%}), growing with batch x context; a StaticCache "
            "or a serving engine's paged cache writes only the new token (`--runtime graph --static-cache "
            f"{p.prompt_len + p.output_len}` prices the first).")
    if p.release.all_logits:
        head = next(s.op for s in p.prefill.phase.steps if isinstance(s.op, LogitsHead))
        act = p.precision.activation_bytes
        held = head.held_bytes(act)
        numbers["prompt_logits_bytes"] = held
        reasons.append(
            f"transformers {p.release.label} computes the prompt's logits at all {p.prompt_len} positions "
            f"({head.rows} x {head.out_features}){' and upcasts them to fp32' if head.upcasts(act) else ''}: "
            f"{held / 1e9:.2f} GB held at once at batch {p.batch}, {held / p.memory.total:.0%} of its memory; "
            "4.45 and later keep the last position's only.")
    if p.engine.per_sequence_s:
        host = p.engine_host_s
        numbers["engine_host_s_per_step"] = host
        reasons.append(
            f"The {p.engine.name} engine loop runs {p.engine.per_sequence_s * 1e3:.3f} ms of Python per running "
            f"sequence around every forward while the GPU waits: {host * 1e3:.2f} ms of the {p.tpot_s * 1e3:.2f} ms "
            f"step at batch {p.batch} ({host / p.tpot_s:.0%}). However fast the GPU, this loop caps decode at "
            f"{1 / p.engine.per_sequence_s:,.0f} tokens/s; an engine that overlaps it (vLLM V1, TensorRT-LLM) "
            "would not (`--engine none`).")
    if (tpot_s or ttft_s) and not ok:
        reasons.append("No configuration meets the latency targets: the smallest batch's TTFT/TPOT exceed them.")
    return reasons, numbers


def _host_reason(cfg: DecoderConfig, profile, p: ServingPrediction,
                 tp: TensorParallel | None) -> tuple[str, dict[str, float | int]] | None:
    """Under a runtime that calls every kernel from Python (eager, fused), a decode step's host calls against
    its kernels' device time, and what a captured graph would make of the same step: the lesson that a Python
    loop's calls, not the GPU, can set the time per token."""
    if p.runtime == "graph" or not p.ceilings.is_gpu:
        return None
    host = sum(o.host_s * n for o, n in p.decode.costs)
    device = sum(o.device_s * n for o, n in p.decode.costs)
    launches = sum(o.launches * n for o, n in p.decode.costs)
    graph = predict_serving(cfg, profile, p.precision, p.batch, p.prompt_len, p.output_len, "graph", tp,
                            engine=p.engine.name)
    whose = "the host's: the GPU waits on the calls" if host > device else "the GPU's: the calls run ahead of it"
    also = (", which also fuses the extra passes over memory eager's separate kernels make"
            if p.runtime == "eager" else "")
    text = (f"The {p.runtime} runtime calls {launches} kernels from Python every decode step: {host * 1e3:.2f} ms "
            f"of host calls against {device * 1e3:.2f} ms of kernels at batch {p.batch}, so the step is {whose}. "
            f"Captured in a CUDA graph (`--runtime graph`{also}) the step would take {graph.tpot_s * 1e3:.2f} ms "
            f"instead of {p.tpot_s * 1e3:.2f} ms.")
    return text, {"decode_host_s": host, "decode_device_s": device, "decode_kernel_calls": launches,
                  "graph_tpot_s": graph.tpot_s}


def _fp16_accumulate_reason(cfg: DecoderConfig, profile, p: ServingPrediction, runtime: str,
                            tp: TensorParallel | None, release: TransformersRelease) -> str | None:
    """On a board whose fp16 products run faster accumulated in fp16 (`ceilings.fp16_accumulate_rate`), what an
    engine that accumulates so would do to the recommended configuration's first token, where it is 5% or more."""
    prec = p.precision
    if prec.accumulate != "fp32" or prec.name not in ("bf16", "fp16", "int8", "int4"):
        return None
    fp32_acc = ceilings_for(profile, get_precision("fp16")).matrix_flops_per_s
    fp16_acc = ceilings_for(profile, get_precision("fp16"), accumulate="fp16").matrix_flops_per_s
    if not fp32_acc or not fp16_acc or fp16_acc < 1.05 * fp32_acc:
        return None
    name = "fp16" if prec.name == "bf16" else prec.name
    faster = serving_precision(name, prec.kv_name, prec.group_size, "fp16", quant_kernel=prec.quant_kernel,
                               accumulate="fp16", head_weights=prec.head_weights)
    q = predict_serving(cfg, profile, faster, p.batch, p.prompt_len, p.output_len, runtime, tp, release=release,
                        engine=p.engine.name)
    if q.ttft_s > 0.95 * p.ttft_s:
        return None
    return (f"On this board fp16 products accumulated in fp16 run at {fp16_acc / 1e12:.0f} TFLOP/s against "
            f"{fp32_acc / 1e12:.0f} with the fp32 accumulation PyTorch, vLLM and TensorRT-LLM use: an engine that "
            f"accumulates in fp16 (ExLlama, TinyChat) would take the first token from {p.ttft_s * 1e3:.0f} to "
            f"{q.ttft_s * 1e3:.0f} ms at batch {p.batch} in {name} (`--accumulate fp16`). llama.cpp asks cuBLAS for "
            "fp16 accumulation too, but its published prompts do not show the gain (benchmarks/LOG.md).")


def cache_copy_bytes(cfg: DecoderConfig, p: ServingPrediction) -> float:
    """Bytes per decode step the eager runtime's cache appends move (`phases.unfused_bytes` of the cached
    attention: torch.cat of the old K and V with the new token's, and the output made contiguous), every layer;
    0 under a compiled runtime, which fuses them."""
    if p.runtime != "eager":
        return 0.0
    prec = p.precision
    return sum(unfused_bytes(cfg, s.op, prec.activation_bytes, prec.kv_bytes) * s.repeat
               for s in p.decode.phase.steps if isinstance(s.op, CachedAttention))

"""`analyze` for a language model: both phases' FLOPs and bytes, at given sizes and as formulas in the batch
B, the prompt length P (prefill) and the context c (decode). The op formulas are plain arithmetic, so the same
phase builders run on sympy symbols; bytes count activations, KV cache and weights at the storage sizes."""

from __future__ import annotations

from typing import Any

from roofline.model.llm_precision import ServingPrecision
from roofline.workload.llm.config import DecoderConfig
from roofline.workload.llm.phases import Phase, decode, prefill
from roofline.workload.ops.serving import LogitsHead


def phase_totals(phase: Phase, prec: ServingPrecision) -> dict[str, Any]:
    act = prec.activation_bytes
    flops = sum(s.op.flops("forward") * s.repeat for s in phase.steps)
    byte_total = 0
    for s in phase.steps:
        stored = prec.head if isinstance(s.op, LogitsHead) else prec
        weight = stored.linear_weight_bytes if s.op.kind == "gemm" and s.op.params() else prec.other_weight_bytes
        byte_total += s.op.traffic("forward").bytes(act, weight) * s.repeat
    return {"flops": flops, "bytes": byte_total}


def llm_analysis(cfg: DecoderConfig, prec: ServingPrecision, batch: int, prompt: int, context: int,
                 symbolic: bool) -> dict[str, Any]:
    ratio = prec.kv_bytes / prec.activation_bytes
    pre, dec = prefill(cfg, batch, prompt, ratio), decode(cfg, batch, context, ratio)
    phases = {"prefill": phase_totals(pre, prec), "decode": phase_totals(dec, prec)}
    out: dict[str, Any] = {
        "model": cfg.name, "batch_size": batch, "prompt_len": prompt, "context": context,
        "precision": prec.name, "kv_precision": prec.kv_name,
        "totals": {"flops": phases["prefill"]["flops"] + phases["decode"]["flops"],
                   "macs": (phases["prefill"]["flops"] + phases["decode"]["flops"]) / 2,
                   "params": cfg.params(), "active_params": cfg.active_params(),
                   "bytes": phases["prefill"]["bytes"] + phases["decode"]["bytes"],
                   "activation_bytes": 0},
        "phases": phases,
        "layers": [{"phase": ph.name, "name": s.op.name, "op": s.op.kind, "count": s.repeat,
                    "flops": s.op.flops("forward") * s.repeat, "shape": s.op.shapes()}
                   for ph in (pre, dec) for s in ph.steps],
    }
    if symbolic:
        import sympy

        b, p, c = (sympy.Symbol(n, positive=True, integer=True) for n in ("B", "P", "c"))
        sym = {"prefill": phase_totals(prefill(cfg, b, p, ratio), prec),
               "decode": phase_totals(decode(cfg, b, c, ratio), prec)}
        out["symbolic"] = {ph: {k: str(sympy.expand(v)) for k, v in d.items()} for ph, d in sym.items()}
    return out

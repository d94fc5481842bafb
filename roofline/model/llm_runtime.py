"""The runtime's share of each generated token: eager Python dispatch per op, or a captured CUDA graph.

Eager (Hugging Face transformers' generate loop): every op of every layer is a Python call that dispatches one
or more kernels; the host pays the framework's per-call dispatch for each, and a GPU waits on the host when
the kernels are shorter than their dispatch (decode at small batch). `EAGER_KERNELS` lists how many kernels an
op of `roofline.workload.llm.phases` is in transformers' modeling_llama.py (version 5.17, read here):
LlamaRMSNorm.forward is to(float32), pow, mean, add eps, rsqrt, mul, to(input dtype), mul weight (8; the two
casts vanish in fp32); apply_rotary_pos_emb is q * cos, rotate_half (neg, cat), * sin, add (5 per tensor);
attention appends K and V to the DynamicCache (2 cats), runs SDPA and makes the output contiguous (4).

Graph-captured (CUDA graphs, as vLLM, TensorRT-LLM and gpt-fast's compiled decode use): the whole step is
replayed by one graph launch; the host cost per op disappears and the kernels run back to back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from roofline.ceilings import Ceilings
from roofline.costmodel import OpCost
from roofline.errors import RooflineError
from roofline.step import drained_pipeline_s

EAGER_KERNELS = {"attn.norm": 8, "mlp.norm": 8, "final.norm": 8, "attn.rope_q": 5, "attn.rope_k": 5,
                 "attn.sdpa": 4}
FP32_CASTS_SKIPPED = {"attn.norm": 2, "mlp.norm": 2, "final.norm": 2}
"""RMSNorm's two .to() casts are no-ops when the model already runs in fp32."""


def eager_kernels(name: str, fp32: bool) -> int:
    return EAGER_KERNELS.get(name, 1) - (FP32_CASTS_SKIPPED.get(name, 0) if fp32 else 0)


def eager_s(costs: list[OpCost], c: Ceilings, fp32: bool) -> tuple[float, list[OpCost]]:
    """Each op charged its kernels' dispatch (and launch floor on a GPU); a GPU overlaps host and device
    (`drained_pipeline_s`), a CPU adds them."""
    charged = []
    for o in costs:
        kernels = eager_kernels(o.name, fp32) if o.bound != "free" else 0
        host = o.host_s / max(o.launches, 1) * kernels if o.launches else c.dispatch_s * kernels
        device = max(o.device_s, c.launch_s * kernels) if c.is_gpu else o.device_s
        bound = "overhead" if max(host, device) > max(o.compute_s, o.memory_s) and kernels else o.bound
        charged.append(replace(o, host_s=host, device_s=device, launches=kernels, bound=bound))
    total = drained_pipeline_s(charged) if c.is_gpu else sum(o.time_s for o in charged)
    return total, charged


def graph_s(costs: list[OpCost], c: Ceilings, fp32: bool) -> tuple[float, list[OpCost]]:
    """One graph launch per forward; kernels back to back, no per-op host time."""
    if not c.is_gpu:
        raise RooflineError("--runtime graph (CUDA graphs) needs a GPU profile; on a CPU use --runtime eager")
    charged = [replace(o, host_s=0.0, bound=o.bound if o.bound != "overhead"
                       else ("compute" if o.compute_s >= o.memory_s else "memory")) for o in costs]
    return c.launch_s + sum(o.device_s for o in charged), charged


RUNTIMES: dict[str, Callable[[list[OpCost], Ceilings, bool], tuple[float, list[OpCost]]]] = {
    "eager": eager_s, "graph": graph_s}

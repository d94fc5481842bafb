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
from dataclasses import dataclass, replace

from roofline.errors import RooflineError
from roofline.model.ceilings import Ceilings
from roofline.model.costmodel import OpCost
from roofline.model.step import drained_pipeline_s

EAGER_KERNELS = {"attn.norm": 8, "mlp.norm": 8, "final.norm": 8, "attn.rope_q": 5, "attn.rope_k": 5,
                 "attn.sdpa": 4}
FP32_CASTS_SKIPPED = {"attn.norm": 2, "mlp.norm": 2, "final.norm": 2}
"""RMSNorm's two .to() casts are no-ops when the model already runs in fp32."""


def eager_kernels(name: str, fp32: bool) -> int:
    return EAGER_KERNELS.get(name, 1) - (FP32_CASTS_SKIPPED.get(name, 0) if fp32 else 0)


def eager_charge(o: OpCost, c: Ceilings, fp32: bool) -> OpCost:
    """The op charged its kernels' dispatch on the host and, on a GPU, one launch floor per kernel."""
    kernels = eager_kernels(o.name, fp32) if o.bound != "free" else 0
    host = c.dispatch_s * kernels if not o.launches else o.host_s / o.launches * kernels
    device = max(o.device_s, c.launch_s * kernels) if c.is_gpu else o.device_s
    bound = "overhead" if kernels and max(host, device) > max(o.compute_s, o.memory_s) else o.bound
    return replace(o, host_s=host, device_s=device, launches=kernels, bound=bound)


def eager_total(sequence: list[OpCost], c: Ceilings) -> float:
    """A GPU overlaps host and device (`drained_pipeline_s`); a CPU adds them."""
    return drained_pipeline_s(sequence) if c.is_gpu else sum(o.time_s for o in sequence)


def graph_charge(o: OpCost, c: Ceilings, fp32: bool) -> OpCost:
    """No per-op host time: the graph replays the kernels back to back."""
    if not c.is_gpu:
        raise RooflineError("--runtime graph (CUDA graphs) needs a GPU profile; on a CPU use --runtime eager")
    bound = o.bound if o.bound != "overhead" else ("compute" if o.compute_s >= o.memory_s else "memory")
    return replace(o, host_s=0.0, bound=bound)


def graph_total(sequence: list[OpCost], c: Ceilings) -> float:
    """One graph launch per forward, then every kernel's device time."""
    return c.launch_s + sum(o.device_s for o in sequence)


@dataclass(frozen=True)
class Runtime:
    """How a runtime charges one op, and how a forward's ops add up."""

    charge: Callable[[OpCost, Ceilings, bool], OpCost]
    total: Callable[[list[OpCost], Ceilings], float]


RUNTIMES = {"eager": Runtime(eager_charge, eager_total), "graph": Runtime(graph_charge, graph_total)}

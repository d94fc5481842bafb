"""The runtime's share of each generated token: eager Python dispatch per op, or a captured CUDA graph.

Eager (Hugging Face transformers' generate loop): every op of every layer is a Python call that dispatches one
or more kernels (`roofline.workload.llm.phases.Step.kernels`, counted from transformers' modeling code); the
host pays the framework's per-call dispatch for each, and a GPU waits on the host when the kernels are
shorter than their dispatch (decode at small batch).

Graph-captured (CUDA graphs, as vLLM, TensorRT-LLM and gpt-fast's compiled decode use): the whole step is
replayed by one graph launch; the host cost per op disappears and the kernels run back to back.

Fused (engines that loop over the layers in Python but launch a few fused kernels a layer: TinyChat, AutoAWQ's
fused modules, ExLlama): each kernel is one Python call into the engine's extension, whose host time is
`kernel_call_s`, and the few tensor calls around them (views, slices, output allocations) cost `view_call_s`
each; the kernels are the engine's (`roofline.workload.llm.phases.fused_kernels`), each one pass over memory.
The host issues them while the device runs the ones before, so at batch 1 the step is the device's unless the
kernels are shorter than their calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from roofline.errors import RooflineError
from roofline.model.ceilings import Ceilings
from roofline.model.costmodel import OpCost
from roofline.model.step import drained_pipeline_s
from roofline.workload.llm.phases import Step, fused_kernels


def view_call_s(c: Ceilings) -> float:
    """Host time of a tensor call that launches no kernel (a view): the measured 'view' cost where the
    ceilings carry one (the runtime profile), else the framework's dispatch of a tiny op."""
    return c.dispatch_s_by_kind.get("view", c.dispatch_s)


def kernel_call_s(c: Ceilings) -> float:
    """Host time of one Python call that launches one kernel, outside any module: the runtime profile's measured
    'kernel_call' where the ceilings carry it, else the queued launch rate (`Ceilings.launch_s`), which
    calibration measures the same way (a tiny op called back to back from Python)."""
    return c.dispatch_s_by_kind.get("kernel_call", c.launch_s)


def eager_charge(o: OpCost, c: Ceilings, kernels: int, views: int = 0) -> OpCost:
    """The op charged its kernels' dispatch on the host and, on a GPU, one launch floor per kernel, and the
    dispatch of its views (`view_call_s`)."""
    kernels = kernels if o.bound != "free" else 0
    host = c.dispatch_s * kernels if not o.launches else o.host_s / o.launches * kernels
    return _launched(o, c, kernels, host + views * view_call_s(c))


def _launched(o: OpCost, c: Ceilings, kernels: int, host: float) -> OpCost:
    """The op with `host` seconds of calls and, on a GPU, one launch floor per kernel; 'overhead'-bound where
    either outlasts its work."""
    device = max(o.device_s, c.launch_s * kernels) if c.is_gpu else o.device_s
    bound = "overhead" if kernels and max(host, device) > max(o.compute_s, o.memory_s) else o.bound
    return replace(o, host_s=host, device_s=device, launches=kernels, bound=bound)


def eager_total(sequence: list[OpCost], c: Ceilings) -> float:
    """A GPU overlaps host and device (`drained_pipeline_s`); a CPU adds them."""
    return drained_pipeline_s(sequence) if c.is_gpu else sum(o.time_s for o in sequence)


def fused_charge(o: OpCost, c: Ceilings, kernels: int, views: int = 0) -> OpCost:
    """The op's fused kernels each charged one Python call (`kernel_call_s`) and one launch floor on the device,
    and its tensor calls that launch nothing (`view_call_s`); an op another op's kernel computes (kernels 0)
    keeps its device time and costs the host nothing."""
    if not c.is_gpu:
        raise RooflineError("--runtime fused (an engine's CUDA kernels called from Python) needs a GPU profile; "
                            "on a CPU use --runtime eager")
    kernels = kernels if o.bound != "free" else 0
    return _launched(o, c, kernels, kernel_call_s(c) * kernels + views * view_call_s(c))


def graph_charge(o: OpCost, c: Ceilings, kernels: int, views: int = 0) -> OpCost:
    """No per-op host time: the graph replays the kernels back to back."""
    if not c.is_gpu:
        raise RooflineError("--runtime graph (CUDA graphs) needs a GPU profile; on a CPU use --runtime eager")
    bound = o.bound if o.bound != "overhead" else ("compute" if o.compute_s >= o.memory_s else "memory")
    return replace(o, host_s=0.0, bound=bound)


def graph_total(sequence: list[OpCost], c: Ceilings) -> float:
    """One graph launch per forward, then every kernel's device time."""
    return c.launch_s + sum(o.device_s for o in sequence)


def transformers_calls(step: Step, fp32: bool) -> tuple[int, int]:
    """(kernels, views) transformers' eager forward runs for the step (`Step.kernels`, `Step.views`)."""
    return step.kernels - (step.fp32_noop if fp32 else 0), step.views


def engine_calls(step: Step, fp32: bool) -> tuple[int, int]:
    """(kernels, views) a fused-module engine runs for the step (`phases.fused_kernels`)."""
    return fused_kernels(step.op)


@dataclass(frozen=True)
class Runtime:
    """How a runtime charges one op, and how a forward's ops add up."""

    charge: Callable[[OpCost, Ceilings, int, int], OpCost]
    total: Callable[[list[OpCost], Ceilings], float]
    unfused: bool
    """Each kernel of an op is its own pass over memory (eager); a compiled graph fuses an op's kernels."""
    calls: Callable[[Step, bool], tuple[int, int]] = transformers_calls
    """(kernels, views) the runtime launches and calls for a step, the model in fp32 or not."""


RUNTIMES = {"eager": Runtime(eager_charge, eager_total, unfused=True),
            "graph": Runtime(graph_charge, graph_total, unfused=False),
            "fused": Runtime(fused_charge, eager_total, unfused=False, calls=engine_calls)}

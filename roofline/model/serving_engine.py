"""The serving engine's host loop: the host time between two forwards, while the GPU waits.

A runtime (`llm_runtime`) says how one forward's kernels are launched. An engine also runs its own loop around
each forward: it schedules the running sequences, builds the next step's inputs, copies the sampled tokens to
the host and processes them (appends each to its sequence, detokenizes, checks stop conditions). Where that
loop is synchronous Python, the GPU idles through it once per step, and the part that walks the sequences grows
with the batch: it adds to the time per output token and caps the tokens/s a larger batch can buy.

Engines written as a C++ loop or overlapping their host work with the next forward (TensorRT-LLM's executor,
gpt-fast's compiled decode, llama.cpp with flash attention) are `none`: no host time between steps is priced.
`llama.cpp` is the same loop with llama.cpp's attention kernels without flash attention, which keep the scores in
memory (`EngineLoop.ggml_attention`).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.errors import RooflineError


@dataclass(frozen=True)
class EngineLoop:
    """Host seconds per engine step: `fixed_s` plus `per_sequence_s` for each running sequence."""

    name: str
    fixed_s: float
    per_sequence_s: float
    source: str
    ggml_attention: bool = False
    """The engine's attention keeps the scores in memory between its kernels (llama.cpp without flash
    attention: `roofline.workload.ops.serving.GgmlAttention`); else one fused kernel."""

    def step_host_s(self, sequences: int) -> float:
        """The host time of one step (prefill or decode) over `sequences` running sequences."""
        return self.fixed_s + self.per_sequence_s * sequences


_V0_OUTPUT_S = {1: 0.2e-3, 32: 3.4e-3}
"""vllm-project/vllm#6913 (megha95, 2024-07-29, 'Asynchronous Output Processor'): time taken by
LLMEngine._process_model_outputs per decode step, Llama-3-70B-Instruct FP8 on 4x H100, 128 input tokens, main of
late July 2024: 0.2 ms at batch 1 and 3.4 ms at batch 32 (its batch-1024 row repeats the batch-1 figures and is
left out)."""
_V0_PER_SEQUENCE_S = (_V0_OUTPUT_S[32] - _V0_OUTPUT_S[1]) / (32 - 1)

ENGINE_LOOPS = {
    "none": EngineLoop("none", 0.0, 0.0, "no host time between forwards (a C++ or overlapped engine loop)"),
    "llama.cpp": EngineLoop(
        "llama.cpp", 0.0, 0.0,
        "llama.cpp (llama-bench, llama-cli, llama-server) without flash attention, its default until 2025: a C++ "
        "loop, no host time between forwards; attention as separate kernels with the scores in memory, the "
        "prompt in micro-batches of 512 tokens (GgmlAttention)", ggml_attention=True),
    "vllm-v0": EngineLoop(
        "vllm-v0", _V0_OUTPUT_S[1] - _V0_PER_SEQUENCE_S, _V0_PER_SEQUENCE_S,
        "vLLM's V0 engine (v0.2-v0.6): LLMEngine.step schedules, rebuilds every sequence's input metadata "
        "(ModelInputForGPUBuilder, per sequence each step), syncs on the sampled tokens and processes each "
        "sequence's output (SingleStepOutputProcessor: append, incremental detokenize, stop checks) while the GPU "
        "waits. The one published curve in the batch is the output processing's, measured at batch 1 and 32 "
        "(vllm-project/vllm#6913): 0.2 ms + 0.103 ms per further sequence; it stands for the whole loop. It "
        "leaves out the scheduler and input preparation, which v0.6's asynchronous output processing does not "
        "hide, and it counts the output processing, which that option overlaps with the next forward: no published "
        "figure separates the two. The host CPU was not named."),
}
"""Engine loops by name (`--engine`)."""


def engine_loop(name: str) -> EngineLoop:
    if name not in ENGINE_LOOPS:
        raise RooflineError(f"unknown --engine '{name}'; choose one of {', '.join(ENGINE_LOOPS)}")
    return ENGINE_LOOPS[name]

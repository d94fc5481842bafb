"""Tensor parallelism for serving a decoder (Megatron-LM's layout).

Megatron-LM splits each attention block by heads and each MLP by its hidden columns then rows, so every
transformer layer needs one all-reduce of its activations after the attention output projection and one
after the MLP's second linear, in the forward pass (Shoeybi et al., 2019, "Megatron-LM", section 3, figure 3:
'g' is an all-reduce in forward). In decoding, each step carries one token per sequence, so a message is
hidden_size x tokens x element bytes, and the step pays 2 x layers all-reduces of it, latency-bound at small
batches. The LLM workloads (roofline/workload/llm/) call this with their own sizes.
"""

from __future__ import annotations

from roofline.model.comm.collectives import Fabric, allreduce_s

ALLREDUCES_PER_LAYER = 2
"""Megatron-LM: one after self-attention, one after the MLP (forward pass)."""


def tp_message_bytes(hidden_size: int, tokens: int, element_bytes: int) -> int:
    """Bytes one all-reduce carries: the layer's output activations for `tokens` tokens."""
    return hidden_size * tokens * element_bytes


def tensor_parallel_token_s(message_bytes: float, layers: int, fabric: Fabric, algorithm: str = "auto") -> float:
    """Communication one forward step of `layers` tensor-parallel layers adds (not overlapped with compute)."""
    return ALLREDUCES_PER_LAYER * layers * allreduce_s(message_bytes, fabric, algorithm)

"""Ranks that share one socket's memory: what each one's step becomes when all run at once.

Local CPU ranks (gloo on one machine) each run one thread, but they read and write through the same memory
controllers: one process alone streams a copy at the socket's single-thread rate, and N processes streaming
together divide the socket's bandwidth between them. A rank's memory-bound work then runs at its share of the
bandwidth; compute-bound work keeps its own core. The share is measured (`gloo_ranks.measure_allreduce`: rank
0's DRAM copy alone against the same copy while every rank copies), not assumed.
"""

from __future__ import annotations

from roofline.hardware.schema import Profile


def rank_profile(profile: Profile, memory_share: float) -> Profile:
    """`profile` with its DRAM bandwidth (measured where calibrated, else the datasheet's) times
    `memory_share`, the fraction one rank gets while every rank streams."""
    if not 0.0 < memory_share <= 1.0:
        raise ValueError(f"memory share {memory_share} is not in (0, 1]")
    if memory_share == 1.0:
        return profile
    if profile.measured is not None:
        measured = profile.measured.model_copy(
            update={"memory_bandwidth": profile.measured.memory_bandwidth * memory_share})
        return profile.model_copy(update={"measured": measured})
    memory = profile.memory
    quoted = memory.bandwidth_bytes_per_s
    figure = quoted.model_copy(update={"value": quoted.value * memory_share})
    return profile.model_copy(update={"memory": memory.model_copy(update={"bandwidth_bytes_per_s": figure})})

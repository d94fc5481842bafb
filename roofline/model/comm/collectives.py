"""Collective costs in the latency-bandwidth (alpha-beta) model, with the algorithms NCCL and gloo run.

A ring collective over n ranks is a sequence of steps; each step pays the link's latency (alpha) and moves
one n-th of the buffer. `bus_bandwidth` is what nccl-tests calls bus bandwidth: the bytes per second one rank
sends, so that a ring all-reduce of S bytes takes 2(n-1)/n * S / bus_bandwidth
(https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md). Step counts and the tree's bandwidth
follow NCCL's own tuner (src/graph/tuning.cc, ncclTopoTuneModel): an all-reduce ring has 2(n-1) steps, of
which 2(nodes-1) cross the network; reduce-scatter and all-gather have n-1; the double binary tree moves the
buffer up and down (algorithm bandwidth half the bus bandwidth) at 0.92 of the bus bandwidth, with
2 * ((ranks per node - 1) intra hops + log2(nodes) network hops) of latency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TREE_BANDWIDTH_FRACTION = 0.92
"""NCCL tuning.cc: `if (a == NCCL_ALGO_TREE) busBw = std::min(busBw*.92, ...)`."""

TREE_HOP_LATENCY_S = 28e-6
"""NCCL tuning.cc hwLat, Tree/Simple: 28 us per hop ('the latency of a 256kB chunk'), NVLink, PCI and NET."""


@dataclass(frozen=True)
class Tier:
    """One level of the fabric: how many ranks it joins and what one rank gets on it."""

    ranks: int
    bus_bandwidth_bytes_per_s: float
    latency_s: float
    """Per ring step."""
    provenance: str
    """'derived: ...' from link profiles, or 'measured: ...' after calibration."""


@dataclass(frozen=True)
class Fabric:
    """The ranks of a job: `intra.ranks` per node on `intra`, `nodes` nodes joined by `inter`."""

    intra: Tier
    nodes: int = 1
    inter: Tier | None = None

    @property
    def world(self) -> int:
        return self.intra.ranks * self.nodes

    @property
    def bus_bandwidth_bytes_per_s(self) -> float:
        """What a flat ring gets: the slower of the GPU's links and its node's NICs (per node, all channels)."""
        if self.nodes > 1 and self.inter is not None:
            return min(self.intra.bus_bandwidth_bytes_per_s, self.inter.bus_bandwidth_bytes_per_s)
        return self.intra.bus_bandwidth_bytes_per_s


def ring_steps_s(steps: int, inter_steps: int, fabric: Fabric) -> float:
    """Latency of a ring's steps, the network ones at the NIC's latency (NCCL tuning.cc's ring formula)."""
    inter_latency = fabric.inter.latency_s if fabric.inter is not None else 0.0
    return (steps - inter_steps) * fabric.intra.latency_s + inter_steps * inter_latency


def ring_allreduce_s(nbytes: float, fabric: Fabric) -> float:
    """2(n-1) steps; each rank sends 2(n-1)/n of the buffer."""
    n = fabric.world
    if n <= 1 or nbytes <= 0:
        return 0.0
    latency = ring_steps_s(2 * (n - 1), 2 * (fabric.nodes - 1), fabric)
    return latency + 2 * (n - 1) / n * nbytes / fabric.bus_bandwidth_bytes_per_s


def ring_reduce_scatter_s(nbytes: float, fabric: Fabric) -> float:
    """n-1 steps; each rank sends (n-1)/n of the (whole, unscattered) buffer. All-gather costs the same."""
    n = fabric.world
    if n <= 1 or nbytes <= 0:
        return 0.0
    latency = ring_steps_s(n - 1, fabric.nodes - 1, fabric)
    return latency + (n - 1) / n * nbytes / fabric.bus_bandwidth_bytes_per_s


ring_all_gather_s = ring_reduce_scatter_s


def tree_allreduce_s(nbytes: float, fabric: Fabric) -> float:
    """NCCL's double binary tree: up and down the tree, at 0.92 of the bus bandwidth."""
    n = fabric.world
    if n <= 1 or nbytes <= 0:
        return 0.0
    hops = 2 * ((fabric.intra.ranks - 1) + math.ceil(math.log2(fabric.nodes)))
    bandwidth = fabric.bus_bandwidth_bytes_per_s * TREE_BANDWIDTH_FRACTION * 0.5
    return hops * TREE_HOP_LATENCY_S + nbytes / bandwidth


def hierarchical_allreduce_s(nbytes: float, fabric: Fabric) -> float:
    """Reduce-scatter inside each node, all-reduce of each rank's shard across nodes on the NICs, all-gather
    inside the node (Horovod's hierarchical all-reduce; gloo between nodes of NCCL-reduced shards)."""
    if fabric.nodes <= 1 or fabric.inter is None:
        return ring_allreduce_s(nbytes, fabric)
    g = fabric.intra.ranks
    node = Fabric(fabric.intra)
    across = Fabric(Tier(fabric.nodes, fabric.inter.bus_bandwidth_bytes_per_s / g, fabric.inter.latency_s,
                         fabric.inter.provenance))
    return 2 * ring_reduce_scatter_s(nbytes, node) + ring_allreduce_s(nbytes / g, across)


ONE_SHOT_MAX_BYTES = 256 * 1024
"""Largest buffer a custom intra-node all-reduce reduces in one shot: PyTorch's IntraNodeComm
(torch/csrc/distributed/c10d/intra_node_comm.cu, kOneShotThreshBytes = 256 KiB; TensorRT-LLM's custom all-reduce
switches from its one-shot to its two-shot kernel at a similar size)."""
TWO_SHOT_MAX_BYTES = 10 * 1024 * 1024
"""Largest buffer IntraNodeComm reduces in two shots (kTwoShotThreshBytes = 10 MiB); beyond it, NCCL."""


def one_shot_allreduce_s(nbytes: float, fabric: Fabric) -> float:
    """A custom one-kernel all-reduce inside one node: the ranks signal each other once over the links (one
    step of latency) and each reads every peer's whole buffer through its own links and sums, (n-1) x S bytes
    in (IntraNodeComm's oneShotAllReduceKernel, TensorRT-LLM's oneShotAllReduceKernel). Measured on H100s
    (sglang PR 2904, TensorRT-LLM-style kernel, 4 KB): 3.9 / 3.7 / 5.7 us on 2 / 4 / 8 GPUs."""
    n = fabric.intra.ranks
    if n <= 1 or nbytes <= 0:
        return 0.0
    return fabric.intra.latency_s + (n - 1) * nbytes / fabric.intra.bus_bandwidth_bytes_per_s


def two_shot_allreduce_s(nbytes: float, fabric: Fabric) -> float:
    """Reduce-scatter then all-gather through peer memory: two steps of latency, each rank moving
    2(n-1)/n of the buffer, as a ring does, without the ring's 2(n-1) steps."""
    n = fabric.intra.ranks
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2 * fabric.intra.latency_s + 2 * (n - 1) / n * nbytes / fabric.intra.bus_bandwidth_bytes_per_s


def custom_allreduce_s(nbytes: float, fabric: Fabric) -> float:
    """What a runtime with its own intra-node all-reduce runs (PyTorch's IntraNodeComm under
    ENABLE_INTRA_NODE_COMM=1, vLLM's and TensorRT-LLM's custom all-reduce): one shot up to
    `ONE_SHOT_MAX_BYTES`, two shots up to `TWO_SHOT_MAX_BYTES`, NCCL beyond, and NCCL across nodes (the
    kernels read peer memory, which only NVLink or PCIe peers share)."""
    if fabric.nodes > 1 or nbytes > TWO_SHOT_MAX_BYTES:
        return nccl_allreduce_s(nbytes, fabric)
    if nbytes <= ONE_SHOT_MAX_BYTES:
        return one_shot_allreduce_s(nbytes, fabric)
    return two_shot_allreduce_s(nbytes, fabric)


def nccl_allreduce_s(nbytes: float, fabric: Fabric) -> float:
    """The fastest of ring and tree, as NCCL's tuner picks the algorithm with the least predicted time."""
    return min(ring_allreduce_s(nbytes, fabric), tree_allreduce_s(nbytes, fabric))


ALLREDUCE = {"ring": ring_allreduce_s, "tree": tree_allreduce_s, "hierarchical": hierarchical_allreduce_s,
             "custom": custom_allreduce_s}
"""The all-reduce algorithms a user can name; 'auto' is NCCL's choice (`nccl_allreduce_s`)."""


def allreduce_s(nbytes: float, fabric: Fabric, algorithm: str = "auto") -> float:
    if algorithm == "auto":
        return nccl_allreduce_s(nbytes, fabric)
    return ALLREDUCE[algorithm](nbytes, fabric)

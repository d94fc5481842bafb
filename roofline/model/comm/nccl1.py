"""NCCL 1.x's single ring, for the libraries that bundled it (TensorFlow's contrib NCCL of 2017).

NCCL 2 lays several rings along the NVLinks among the GPUs of a job (`nvlink_rings`). NCCL 1.3 did not:
'While NCCL 1.3 was only relying on a single ring, it has evolved to use multiple rings to use all NVLinks and
network cards' (the NCCL maintainer, https://github.com/NVIDIA/nccl/issues/43). That one
ring takes the ranks in NVML index order (NVIDIA/nccl@ccfc4567dc3e2a37fb42cfbc64d10eb526e7da7b:src/core.cu,
commBuildMaps after orderRanks: '// Order by nvml index'), and reaches each neighbour by peer access where
cudaDeviceCanAccessPeer allows it and 'via zero-copy host mem' where it does not. Peer access stops at a CPU
socket: 'You can do P2P through PCIe bridges, but not across socket level links at this time, e.g. across CPU
sockets on a multi-socket motherboard' (BVLC/caffe docs/multigpu.md, NVIDIA's multi-GPU notes).

So each hop of the ring is one of three paths, and the ring runs at its slowest hop:
- one NVLink, where the two GPUs share one (a single ring drives one link per hop, whatever else is wired),
  at the fraction of its line rate NCCL 1 was measured to reach (`NCCL1_NVLINK_EFFICIENCY`), not NCCL 2's;
- the GPUs' PCIe slots, between GPUs on one socket without NVLink;
- the slots and the path between the sockets, between GPUs on different sockets (that path's profile holds the
  rate NCCL 1 was measured to reach over it through host memory).
The per-step latency is the largest of the hops' (a ring step ends when its slowest transfer does).
NCCL 2 lays the same ring, in rank order, where its rings cannot close over NVLinks alone ('Could not create
rings, falling back on simple ring', NVIDIA/nccl@f93fe9bf src/misc/rings.cu): `device_order_ring` prices both,
each with its own rate on an NVLink hop.
"""

from __future__ import annotations

from typing import NamedTuple

from roofline.errors import FabricError
from roofline.hardware.fabric_load import find_link
from roofline.hardware.fabric_schema import LinkProfile, NodeProfile
from roofline.model.comm.collectives import Fabric, Tier

NCCL1_NVLINK_EFFICIENCY = 14.55e9 / 20.0e9
"""Bus bandwidth NCCL 1's ring reaches over one NVLink, as a fraction of the link's one-direction line rate:
14.55 GB/s ('all_reduce_perf,2,14.55', a 1 GB all-reduce between GPUs 0 and 1 of a P100 DGX-1, NCCL 1 -
uuudown/Tartan@957d8606979a7d4dbfa8176b8e7a8641a5af03b0:microbenchmark/scale_up_cl/nccl-v1/bandwidth.txt) of
NVLink 1's 20 GB/s. The link profiles' protocol efficiency is NCCL 2's (370 of 450 GB/s on H100, 0.82), which
NCCL 1 did not reach there. The same run over GPUs 0-3 (NVLink hops only) gives 14.25 GB/s, over 0-2 15.81."""


class Hop(NamedTuple):
    """One hop of the ring: from GPU `src` to GPU `dst` over `link`, at the rate NCCL 1 reaches on it."""

    src: int
    dst: int
    link: LinkProfile
    rate_bytes_per_s: float


def _rate(link: LinkProfile) -> float:
    efficiency = link.protocol_efficiency.value if link.protocol_efficiency else 1.0
    return link.bandwidth_bytes_per_s.value * efficiency


def _nvlink_hop(src: int, dst: int, link: LinkProfile, efficiency: float) -> Hop:
    return Hop(src, dst, link, link.bandwidth_bytes_per_s.value * efficiency)


def _link(node: NodeProfile, name: str | None, field: str) -> LinkProfile:
    if name is None:
        raise FabricError(f"{node.name} has no {field} in its profile, so a ring in device order cannot be "
                          f"priced across GPUs without NVLink; add {field}")
    return find_link(name)


def ring_hops(node: NodeProfile, gpus: int, nvlink_efficiency: float = NCCL1_NVLINK_EFFICIENCY) -> list[Hop]:
    """Each hop of the ring over GPUs 0 .. gpus-1, with the link that bounds it; an NVLink hop at
    `nvlink_efficiency` of the link's line rate (NCCL 1's by default)."""
    if node.wiring is None:
        raise FabricError(f"{node.name} has no 'wiring' in its profile (NVLink pairs and sockets), which a single "
                          "ring in device order needs")
    nvlinks = {frozenset(pair) for pair in node.wiring.nvlink_pairs}
    hops = []
    for a in range(gpus):
        b = (a + 1) % gpus
        if frozenset((a, b)) in nvlinks:
            hops.append(_nvlink_hop(a, b, find_link(node.intra_link), nvlink_efficiency))
            continue
        slot = _link(node, node.slot_link, "slot_link")
        if node.wiring.gpu_socket[a] != node.wiring.gpu_socket[b]:
            slot = min((slot, _link(node, node.socket_link, "socket_link")), key=_rate)
        hops.append(Hop(a, b, slot, _rate(slot)))
    return hops


def device_order_ring(node: NodeProfile, gpus: int, nvlink_efficiency: float, library: str) -> Tier:
    """The one ring over GPUs 0 .. gpus-1 in device order, at its slowest hop's bandwidth and latency."""
    hops = ring_hops(node, gpus, nvlink_efficiency)
    slowest = min(hops, key=lambda hop: hop.rate_bytes_per_s)
    latency = max(hop.link.latency_s.value for hop in hops)
    provenance = (f"derived: {library}'s single ring over GPUs 0-{gpus - 1}, bounded by hop "
                  f"{slowest.src}->{slowest.dst} on {slowest.link.name} at {slowest.rate_bytes_per_s / 1e9:.3g} GB/s")
    return Tier(gpus, slowest.rate_bytes_per_s, latency, provenance)


def single_ring_fabric(node: NodeProfile, gpus: int) -> Fabric:
    """The one ring NCCL 1 lays over the node's first `gpus` GPUs: its slowest hop's bandwidth and latency."""
    holds = int(node.gpus_per_node.value)
    if not 1 <= gpus <= holds:
        raise FabricError(f"{node.name} holds {holds} GPUs, not {gpus}")
    if gpus == 1:
        hop = _nvlink_hop(0, 0, find_link(node.intra_link), NCCL1_NVLINK_EFFICIENCY)
        return Fabric(Tier(1, hop.rate_bytes_per_s, hop.link.latency_s.value, f"one GPU on {node.name}"))
    return Fabric(device_order_ring(node, gpus, NCCL1_NVLINK_EFFICIENCY, "NCCL 1"))

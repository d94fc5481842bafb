"""The fabric of a job, from node and link profiles: which bus bandwidth and latency its collectives see.

Through NVSwitch every GPU reaches every other on all its links, and over PCIe on its one slot, so one rank's
bus bandwidth is links per GPU x one link's one-direction bandwidth x the protocol's efficiency on that link
where it is published (NVLink: 370 of 450 GB/s). On a direct NVLink mesh (a DGX-1) a ring only uses the links
among the GPUs that are in it, so the links are the NVLinks' worth NCCL 2's rings over those GPUs carry
(`nvlink_rings`), and where no ring closes over NVLinks alone NCCL 2 runs one ring in device order
(`nccl1.device_order_ring`, at NCCL 2's NVLink rate). Between nodes a ring crosses each node boundary on all of
the node's NIC ports, so that tier's bus bandwidth is NICs per node x one port's bandwidth. A measured bus
bandwidth (from `roofline calibrate --comm`) replaces a derived one.
"""

from __future__ import annotations

from roofline.errors import FabricError
from roofline.hardware.fabric_schema import LinkProfile, NodeProfile
from roofline.model.comm.collectives import Fabric, Tier
from roofline.model.comm.nccl1 import device_order_ring
from roofline.model.comm.nvlink_rings import ring_links


def _efficiency(link: LinkProfile) -> float:
    return link.protocol_efficiency.value if link.protocol_efficiency else 1.0


def _tier(ranks: int, link: LinkProfile, links: float, what: str) -> Tier:
    efficiency = _efficiency(link)
    bandwidth = links * link.bandwidth_bytes_per_s.value * efficiency
    provenance = (f"derived: {links:g} x {link.name} at {link.bandwidth_bytes_per_s.value / 1e9:g} GB/s "
                  f"one direction ({what}) x {efficiency:.3g} protocol efficiency")
    return Tier(ranks, bandwidth, link.latency_s.value, provenance)


def _intra_tier(node: NodeProfile, link: LinkProfile, gpus: int) -> Tier:
    if node.topology != "nvlink-mesh" or gpus == 1:
        return _tier(gpus, link, int(node.intra_links_per_gpu.value), f"{node.topology} per GPU")
    assert node.wiring is not None  # NodeProfile requires it of an nvlink-mesh
    links = ring_links(node.wiring, gpus)
    if links == 0:
        return device_order_ring(node, gpus, _efficiency(link), "NCCL 2")
    return _tier(gpus, link, links, f"NCCL 2's rings over the NVLinks among GPUs 0-{gpus - 1}")


def node_fabric(node: NodeProfile, intra_link: LinkProfile, nic_link: LinkProfile | None, gpus_per_node: int,
                nodes: int = 1) -> Fabric:
    """`gpus_per_node` GPUs (0, 1, ...) in each of `nodes` nodes of this kind."""
    holds = int(node.gpus_per_node.value)
    if gpus_per_node < 1 or nodes < 1:
        raise FabricError(f"--gpus and --nodes must be positive, got {gpus_per_node} and {nodes}")
    if gpus_per_node > holds:
        raise FabricError(f"{node.name} holds {holds} GPUs, not {gpus_per_node}; use --gpus {holds} "
                          f"--nodes {-(-gpus_per_node // holds)} for {gpus_per_node} or more GPUs over several nodes")
    intra = _intra_tier(node, intra_link, gpus_per_node)
    if nodes == 1:
        return Fabric(intra)
    if nic_link is None or node.nics_per_node is None:
        raise FabricError(f"{node.name} has no NIC for compute traffic in its profile, so --nodes {nodes} "
                          "cannot be priced; use a node profile with nic_link and nics_per_node")
    inter = _tier(nodes, nic_link, int(node.nics_per_node.value), "NIC ports per node")
    return Fabric(intra, nodes, inter)


def measured_fabric(ranks: int, bus_bandwidth_bytes_per_s: float, latency_s: float, how: str) -> Fabric:
    """One node whose bus bandwidth and per-step latency were measured (gloo between local processes)."""
    return Fabric(Tier(ranks, bus_bandwidth_bytes_per_s, latency_s, f"measured: {how}"))

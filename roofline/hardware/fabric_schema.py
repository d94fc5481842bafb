"""Schemas of the profiles that connect devices: links (NVLink, PCIe, InfiniBand, Ethernet, a CPU socket's
memory between CPU ranks) and nodes (a GPU profile, the links inside the node, the NICs leaving it).

Like the device profiles they are YAML validated with `extra="forbid"`, and every number is a `Figure` with a
public source, a formula, or 'measured: how'. A missing figure is a validation error naming the file and
the field, so a collective is never priced on a bandwidth nobody gave.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from roofline.hardware.schema import Figure, _Strict


class LinkProfile(_Strict):
    """One kind of link, as one port or lane bundle of it carries data."""

    name: str
    kind: Literal["link"]
    aliases: list[str] = Field(default_factory=list)
    technology: str
    """'NVLink 2.0', 'PCIe 4.0 x16', 'InfiniBand HDR', 'gloo over loopback TCP' ..."""
    scope: Literal["intra-node", "inter-node"]
    """Whether it joins devices in one node or nodes to each other (a NIC port)."""
    bandwidth_bytes_per_s: Figure
    """One direction of one link (one NVLink, one x16 slot, one NIC port), bytes per second."""
    latency_s: Figure
    """Time one step of a ring collective pays on this link besides moving bytes (the alpha term)."""
    protocol_efficiency: Figure | None = None
    """Fraction of the line rate a collective library's protocol delivers as bus bandwidth (headers, flags,
    chunking), where published; None prices collectives at the line rate."""
    notes: str | None = None

    @field_validator("bandwidth_bytes_per_s", "latency_s")
    @classmethod
    def _positive(cls, figure: Figure) -> Figure:
        if not (figure.value > 0 and math.isfinite(figure.value)):
            raise ValueError(f"must be a positive finite number, got {figure.value}")
        return figure

    @field_validator("protocol_efficiency")
    @classmethod
    def _fraction(cls, figure: Figure | None) -> Figure | None:
        if figure is not None and not 0 < figure.value <= 1:
            raise ValueError(f"must lie in (0, 1], got {figure.value}")
        return figure


class Wiring(_Strict):
    """Which GPU pairs share how many NVLinks and which CPU socket each GPU hangs off: the links NCCL 2's rings
    can take among the GPUs of a job, and what a ring in device order (NCCL 1.x, or NCCL 2 where its rings
    cannot close over NVLinks) meets on each hop."""

    nvlink_pairs: list[tuple[int, int]]
    """GPU index pairs, one entry per NVLink: a pair joined by two links is listed twice."""
    gpu_socket: list[int]
    """The CPU socket (NUMA node) of GPU 0, 1, ... in device order."""
    source: str
    """Where the wiring was read (a system whitepaper, a published `nvidia-smi topo -m`)."""
    note: str | None = None

    @model_validator(mode="after")
    def _pairs_in_range(self) -> Wiring:
        gpus = len(self.gpu_socket)
        for a, b in self.nvlink_pairs:
            if not (0 <= a < gpus and 0 <= b < gpus and a != b):
                raise ValueError(f"nvlink pair ({a}, {b}) names no two distinct GPUs of {gpus}")
        return self


class NodeProfile(_Strict):
    """A server: identical GPUs, the links that join them, and the NICs that join it to other servers."""

    name: str
    kind: Literal["node"]
    aliases: list[str] = Field(default_factory=list)
    gpu: str
    """Name or alias of the GPU profile (`hardware_profiles/gpu/`)."""
    gpus_per_node: Figure
    intra_link: str
    """Name of the link profile between GPUs of this node."""
    intra_links_per_gpu: Figure
    """Links of that kind each GPU has (NVLink ports, or 1 PCIe slot): through NVSwitch or PCIe a ring collective
    drives them all; on an NVLink mesh only those among the GPUs of the job (`wiring`)."""
    topology: Literal["nvswitch", "nvlink-mesh", "pcie"]
    """How the links are wired: through NVSwitch (all-to-all at full rate), a direct NVLink mesh (NCCL
    builds rings along its edges), or a PCIe tree through switches and the CPU root complex."""
    nic_link: str | None = None
    """Name of the link profile of one NIC port; None for a node that has none for compute traffic."""
    nics_per_node: Figure | None = None
    wiring: Wiring | None = None
    """NVLink pairs and sockets: required of an nvlink-mesh node, whose rings depend on which GPUs take part."""
    slot_link: str | None = None
    """Link profile of each GPU's PCIe slot: a hop between GPUs without NVLink goes through it."""
    socket_link: str | None = None
    """Link profile of the path between CPU sockets that a hop between GPUs on different sockets crosses."""
    notes: str | None = None

    @field_validator("gpus_per_node", "intra_links_per_gpu", "nics_per_node")
    @classmethod
    def _whole_positive(cls, figure: Figure | None) -> Figure | None:
        if figure is not None and (figure.value < 1 or figure.value != int(figure.value)):
            raise ValueError(f"must be a whole number >= 1, got {figure.value}")
        return figure

    @model_validator(mode="after")
    def _consistent(self) -> NodeProfile:
        if (self.nic_link is None) != (self.nics_per_node is None):
            raise ValueError("give both 'nic_link' and 'nics_per_node', or neither")
        if self.topology == "nvlink-mesh" and self.wiring is None:
            raise ValueError("an nvlink-mesh node needs 'wiring' (its NVLink pairs): NCCL's rings take only the "
                             "links among the GPUs of a job")
        if self.wiring is not None:
            if len(self.wiring.gpu_socket) != int(self.gpus_per_node.value):
                raise ValueError(f"wiring gives sockets for {len(self.wiring.gpu_socket)} GPUs, "
                                 f"gpus_per_node is {int(self.gpus_per_node.value)}")
            for gpu in range(len(self.wiring.gpu_socket)):
                links = sum(gpu in pair for pair in self.wiring.nvlink_pairs)
                if links > self.intra_links_per_gpu.value:
                    raise ValueError(f"wiring gives GPU {gpu} {links} NVLinks, intra_links_per_gpu is "
                                     f"{int(self.intra_links_per_gpu.value)}")
        return self


FabricProfile = LinkProfile | NodeProfile

"""What a host-to-device copy over PCIe delivers of the link's line rate.

A profile's host link is its line rate: lanes x transfer rate x the 128b/130b encoding. A copy engine moving
data from host memory to the GPU issues read requests upstream, and the data comes back in completion packets,
each carrying its payload behind a 3-doubleword header (12 bytes) and the physical layer's 4-byte start token
and 4-byte LCRC. Root complexes return reads in completions of 64 or 128 bytes (their read completion boundary),
so a completion delivers 64 / 84 = 0.76 or 128 / 148 = 0.86 of the wire's bytes as data; flow-control and
acknowledgement packets take a little more. The fraction used is the one measured, which falls between the two.
"""

from __future__ import annotations

from roofline.hardware.schema import HostLink

PCIE_H2D_EFFICIENCY = 49.84e9 / 63.0e9
"""Measured: a pinned 256 MiB host-to-device copy ran at 49.84 GB/s on the H100 lease's PCIe 5.0 x16 link
(line rate 63.0 GB/s); benchmarks/results/gpu-live-h100.json, overheads.copies. Published bandwidthTest runs
agree on other generations (tests/test_host_dma.py): 12.4 GB/s on a PCIe 3.0 x16 link, 26.2 GB/s on an
A100-PCIE-40GB's PCIe 4.0 x16 link."""


def h2d_bytes_per_s(link: HostLink) -> float:
    """Bytes per second a pinned host-to-device copy moves over `link`: a PCIe link's line rate times
    PCIE_H2D_EFFICIENCY; any other kind of link at the rate its profile states."""
    rate = link.bandwidth_bytes_per_s.value
    return rate * PCIE_H2D_EFFICIENCY if link.kind == "PCIe" else rate

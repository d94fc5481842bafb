"""What a host-to-device copy over PCIe delivers of the link's line rate, from pinned and from pageable memory.

A profile's host link is its line rate: lanes x transfer rate x the 128b/130b encoding. A copy engine moving
data from host memory to the GPU issues read requests upstream, and the data comes back in completion packets,
each carrying its payload behind a 3-doubleword header (12 bytes) and the physical layer's 4-byte start token
and 4-byte LCRC. Root complexes return reads in completions of 64 or 128 bytes (their read completion boundary),
so a completion delivers 64 / 84 = 0.76 or 128 / 148 = 0.86 of the wire's bytes as data; flow-control and
acknowledgement packets take a little more. The fraction used is the one measured, which falls between the two.
"""

from __future__ import annotations

from collections.abc import Mapping

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


STAGING_MEMCPY_SHARE = (1 / (1 / 18.18e9 - 1 / 49.84e9)) / 49.84e9
"""A copy from pageable memory is two serial copies: a host memcpy into a pinned staging buffer, then the
DMA over the link, so it runs at 1 / (1 / link + 1 / memcpy). Without a measured pageable rate the memcpy is
taken at the speed relative to its link that the H100 lease's host ran it: a 256 MiB copy ran at 18.18 GB/s
from pageable and 49.84 GB/s from pinned memory (benchmarks/results/gpu-live-h100.json, overheads.copies), a
memcpy of 28.6 GB/s, 0.57 of that link (one thread's memcpy, of the order of its era's PCIe x16 link);
calibration measures the user's own rate."""


def staged_bytes_per_s(pinned_bytes_per_s: float) -> float:
    """Bytes per second of a copy from pageable memory: the staging memcpy and the pinned copy one after the
    other (`STAGING_MEMCPY_SHARE`)."""
    return 1 / (1 / pinned_bytes_per_s + 1 / (pinned_bytes_per_s * STAGING_MEMCPY_SHARE))


def copy_rates(link: HostLink, measured: Mapping[str, float]) -> tuple[float, float]:
    """(pinned, pageable) bytes per second of a host-to-device copy over `link`: a calibration's measured rates
    (`measured`, keyed 'pinned' and 'pageable') where it has them, else `h2d_bytes_per_s` and
    `staged_bytes_per_s` behind it."""
    pinned = measured.get("pinned", h2d_bytes_per_s(link))
    return pinned, measured.get("pageable", staged_bytes_per_s(pinned))

"""A pinned host-to-device copy against published bandwidthTest runs that nobody on this project measured.

jdh4/della-gpu-A100@00d5c87254a67d0611cdf1f12b2dfe68aca2463d:README.md (CUDA 11.3 samples, bandwidthTest
--memory=pinned --mode=range): TIGER's PCIe 3.0 x16 node 12.4 GB/s host to device from 10 MB to 1 GB; at
4b00d9e7dc064ba88d9451caf9f44f049dd916f0 an NVIDIA A100-PCIE-40GB (PCIe 4.0 x16) 26.2 GB/s at 200-500 MB. The
packet arithmetic bounds it: 64-byte completions carry 64 of 84 wire bytes, 128-byte ones 128 of 148.
"""

import pytest

from roofline.hardware.load import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.host_dma import PCIE_H2D_EFFICIENCY
from roofline.workload.precision import get_precision

PUBLISHED_H2D = {"p100-pcie-16gb": 12.4e9, "a100-pcie-40gb": 26.2e9}


@pytest.mark.parametrize("gpu", sorted(PUBLISHED_H2D))
def test_a_pinned_copy_runs_within_six_percent_of_published_bandwidth_test_runs(gpu):
    link = ceilings_for(find_profile(gpu), get_precision("fp32")).host_link_bytes_per_s
    assert link == pytest.approx(PUBLISHED_H2D[gpu], rel=0.06)


def test_the_efficiency_lies_between_64_and_128_byte_read_completions():
    framing = 12 + 4 + 4  # completion header, start token, LCRC
    assert 64 / (64 + framing) < PCIE_H2D_EFFICIENCY < 128 / (128 + framing)

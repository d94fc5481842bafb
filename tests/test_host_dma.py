"""A pinned host-to-device copy against published bandwidthTest runs that nobody on this project measured.

jdh4/della-gpu-A100@00d5c87254a67d0611cdf1f12b2dfe68aca2463d:README.md (CUDA 11.3 samples, bandwidthTest
--memory=pinned --mode=range): TIGER's PCIe 3.0 x16 node 12.4 GB/s host to device from 10 MB to 1 GB; at
4b00d9e7dc064ba88d9451caf9f44f049dd916f0 an NVIDIA A100-PCIE-40GB (PCIe 4.0 x16) 26.2 GB/s at 200-500 MB. The
packet arithmetic bounds it: 64-byte completions carry 64 of 84 wire bytes, 128-byte ones 128 of 148.
"""

from pathlib import Path

import pytest

from roofline.hardware.load import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.host_dma import PCIE_H2D_EFFICIENCY
from roofline.workload.precision import get_precision
from tests.cli_run import run_json

PUBLISHED_H2D = {"p100-pcie-16gb": 12.4e9, "a100-pcie-40gb": 26.2e9}


@pytest.mark.parametrize("gpu", sorted(PUBLISHED_H2D))
def test_a_pinned_copy_runs_within_six_percent_of_published_bandwidth_test_runs(gpu):
    link = ceilings_for(find_profile(gpu), get_precision("fp32")).host_link_bytes_per_s
    assert link == pytest.approx(PUBLISHED_H2D[gpu], rel=0.06)


def test_the_efficiency_lies_between_64_and_128_byte_read_completions():
    framing = 12 + 4 + 4  # completion header, start token, LCRC
    assert 64 / (64 + framing) < PCIE_H2D_EFFICIENCY < 128 / (128 + framing)


def test_hw_show_states_the_line_rate_and_what_copies_move(capsys):
    """The V100 SXM2's PCIe 3.0 x16 host link: 16 lanes x 8 GT/s x 128/130 / 8 bits = 15.75e9 B/s each way (as the
    profile states it); a pinned copy near TIGER's published 12.4 GB/s; a pageable one slower than that."""
    link = run_json(capsys, "hw", "show", "v100")["host_link"]
    assert (link["kind"], link["generation"], link["lanes"]) == ("PCIe", 3, 16)
    assert link["line_rate_bytes_per_s"] == pytest.approx(16 * 8e9 * 128 / 130 / 8, rel=1e-3)
    assert link["pinned_copy_bytes_per_s"] == pytest.approx(12.4e9, rel=0.06)
    assert link["pageable_copy_bytes_per_s"] < link["pinned_copy_bytes_per_s"]


def test_a_cpu_profile_has_no_host_link(capsys):
    assert run_json(capsys, "hw", "show", "textbook-cpu")["host_link"] is None


def test_a_calibrated_profile_shows_its_own_measured_copy_rates(capsys):
    """The H100 lease's calibrated profile: `predict` prices copies at its measured rates, so `hw show` states them."""
    import yaml

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h100-calibrated.yaml"
    measured = yaml.safe_load(path.read_text())["measured"]["host_to_device_bytes_per_s"]
    link = run_json(capsys, "hw", "show", str(path))["host_link"]
    assert link["pinned_copy_bytes_per_s"] == pytest.approx(measured["pinned"])
    assert link["pageable_copy_bytes_per_s"] == pytest.approx(measured["pageable"])
    assert link["packet_efficiency"] is None and link["measured"] == ["pageable", "pinned"]

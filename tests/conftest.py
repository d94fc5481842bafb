"""Fixtures shared by the cost-model tests."""

import pytest

from roofline.hardware.load import SHIPPED_DIR, load_profile


@pytest.fixture(scope="session")
def v100():
    """The shipped V100 SXM2 16 GB with its published measurements (sustained HBM bandwidth, fp16 GEMM rate)
    taken out: tests of a mechanism's arithmetic write their expectations from the datasheet's round
    125e12 FLOP/s and 900e9 B/s. `test_published_measurements_replace_the_datasheet` covers the rest."""
    shipped = load_profile(SHIPPED_DIR / "gpu" / "v100-sxm2-16gb.yaml")
    memory = shipped.memory.model_copy(update={"sustained_bandwidth_bytes_per_s": None})
    tensor = {k: tc.model_copy(update={"sustained_flops_per_s": None}) for k, tc in shipped.tensor_cores.items()}
    return shipped.model_copy(update={"memory": memory, "tensor_cores": tensor})

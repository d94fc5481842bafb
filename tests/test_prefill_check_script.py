"""The CPU-side parts of the prepared device check benchmarks/gpu_prefill_kernels.py, so that a lease is not spent
finding a mistake in them: transformers' eager attention as the script writes it against torch's own causal
scaled_dot_product_attention, and the NVML sampler on a machine without a GPU driver."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import gpu_prefill_kernels as script  # noqa: E402


@pytest.mark.torch
def test_the_eager_attention_path_is_causal_attention():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 16, 32) for _ in range(3))
    mask = torch.full((16, 16), float("-inf")).triu(1)[None, None]
    reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(script._eager_attention(q, k, v, mask), reference, atol=1e-5)


def test_the_clock_sampler_reports_no_samples_without_a_driver():
    with script.ClockSampler(period_s=0.001) as clocks:
        pass
    summary = clocks.summary()
    assert summary["samples"] == 0 or {"sm_mhz_median", "power_w_median"} <= set(summary)

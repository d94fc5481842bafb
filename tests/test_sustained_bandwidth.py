"""A GPU's DRAM level at its measured sustained bandwidth, checked against kernels that did not set it.

The T4, L4 and A100 PCIe 40GB profiles take their sustained bandwidth from NeuSight's fp32 `torch.add` kernels
(sitar-lab/NeuSight@6945927d, scripts/asplos/data/dataset/test/elem.csv, PyTorch 2.1.0+cu121). The same file
times other streaming kernels on the same boards, which the profiles did not use; on a 32768 x 10240 fp32 tensor
(1.34 GB, read once and written once), in ms:

| board | relu | gelu | x * scalar |
|---|---:|---:|---:|
| Tesla T4 | 11.440 | 11.348 | 11.446 |
| NVIDIA L4 | 11.408 | 11.396 | 11.403 |
| NVIDIA A100-PCIE-40GB | 1.950 | 1.930 | 1.950 |

At the datasheet's pin bandwidth (320, 300 and 1555 GB/s) they were priced 21-27% (T4, L4) and 12% (A100) too
fast.
"""

from __future__ import annotations

import pytest

from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.context import CostContext
from roofline.model.costmodel import op_cost
from roofline.workload.ops.pointwise import Activation, Elementwise
from roofline.workload.precision import get_precision

NUMEL = 32768 * 10240
MEASURED_STREAM = {"t4": 244.2e9}
"""NeuSight's fp32 torch.add on the T4 (the profile's source)."""
MEASURED_MS = {
    "t4": {"relu": 11.440, "gelu": 11.348, "scale": 11.446},
    "l4": {"relu": 11.408, "gelu": 11.396, "scale": 11.403},
    "a100-pcie-40gb": {"relu": 1.950, "gelu": 1.930, "scale": 1.950},
}


def _ops():
    return {"relu": Activation("relu", numel=NUMEL, fn="relu"), "gelu": Activation("gelu", numel=NUMEL, fn="gelu"),
            "scale": Elementwise("scale", numel=NUMEL, inputs=1, op="mul")}


@pytest.mark.parametrize("board", sorted(MEASURED_MS))
def test_streaming_kernels_run_at_the_measured_bandwidth(board):
    profile = find_profile(board, kind="gpu")
    ctx = CostContext(ceilings_for(profile, get_precision("fp32")), 4, 4)
    for name, op in _ops().items():
        predicted_ms = op_cost(op, "forward", ctx).device_s * 1e3
        assert predicted_ms == pytest.approx(MEASURED_MS[board][name], rel=0.10), name


@pytest.mark.parametrize("board", sorted(MEASURED_MS))
def test_the_pin_bandwidth_would_price_them_too_fast(board):
    profile = find_profile(board, kind="gpu")
    pin = profile.memory.bandwidth_bytes_per_s.value
    sustained = profile.memory.sustained_bandwidth_bytes_per_s.value
    relu_ms_at_pin = 2 * 4 * NUMEL / pin * 1e3
    assert sustained < 0.9 * pin
    assert relu_ms_at_pin < 0.9 * MEASURED_MS[board]["relu"]


def test_hw_show_states_the_bandwidth_the_cost_model_prices():
    # what `hw show` says a stream sustains is the DRAM rate every uncalibrated prediction on the board uses
    from roofline import api
    from roofline.hardware import list_profiles

    gpus = [e.name for e in list_profiles() if e.kind == "gpu"]
    with_figure = 0
    for name in gpus:
        shown = api.hardware(name).to_dict()
        priced = ceilings_for(find_profile(name, kind="gpu"), get_precision("fp32")).dram.bandwidth_bytes_per_s
        if shown["sustained_memory_bandwidth"] is None:
            assert priced == shown["memory_bandwidth"], name
        else:
            with_figure += 1
            assert priced == shown["sustained_memory_bandwidth"] < shown["memory_bandwidth"], name
    assert with_figure >= 30


def test_explain_names_the_stream_rate_beside_the_datasheet_one():
    from roofline.advise.explain import explain

    out = explain(find_profile("t4", kind="gpu"))
    assert out["memory_bandwidth"] == find_profile("t4", kind="gpu").memory.bandwidth_bytes_per_s.value
    assert out["sustained_memory_bandwidth"] == MEASURED_STREAM["t4"]
    assert explain(find_profile("textbook", kind="cpu"))["sustained_memory_bandwidth"] is None

"""`--data`: where a step's input comes from, priced against closed forms from the V100 profile's PCIe 3
x16 link (16 lanes x 8 GT/s x 128/130 / 8 = 15.754e9 B/s, which the profile states as 15.75e9, of which a
pinned copy moves the 49.84 / 63.0 the H100 lease's PCIe 5 link delivered; no measured pageable rate, so a
pageable copy is a staging memcpy, at the 0.57 of its link the lease's host ran one, then that copy) and
ResNet-50's fp32 input batch (64 x 3 x 224 x 224 x 4 B = 38,535,168 B; AMP keeps the input fp32)."""

from __future__ import annotations

import pytest

from roofline import api
from roofline.errors import RooflineError
from roofline.model.data_placement import DATA_PLACEMENTS, resolve_placement
from tests.cli_run import run_error, run_json

LINK = 15.75e9 * 49.84 / 63.0
STAGED = 1 + 1 / ((1 / (1 / 18.18e9 - 1 / 49.84e9)) / 49.84e9)
"""A pageable copy's time over a pinned one's (the lease: 18.18 GB/s pageable, 49.84 GB/s pinned)."""
INPUT_BYTES = 64 * 3 * 224 * 224 * 4
ARGS = ("predict", "--model", "resnet50", "--gpu", "v100", "--batch", "64", "--precision", "amp")


@pytest.fixture(scope="module")
def steps() -> dict[str, dict]:
    return {name: api.predict("resnet50", gpu="v100", batch=64, precision="amp", data=name).to_dict()
            for name in DATA_PLACEMENTS}


def test_each_placement_copies_what_it_says(steps):
    assert steps["device"]["transfer_s"] == 0.0
    assert steps["pinned"]["transfer_s"] == pytest.approx(INPUT_BYTES / LINK)
    assert steps["prefetched"]["transfer_s"] == pytest.approx(INPUT_BYTES / LINK)
    assert steps["pageable"]["transfer_s"] == pytest.approx(STAGED * INPUT_BYTES / LINK)
    assert {name: s["data"] for name, s in steps.items()} == {name: name for name in DATA_PLACEMENTS}


def test_a_copy_costs_the_step_only_where_it_cannot_overlap(steps):
    device = steps["device"]["step_time_s"]
    # a prefetched copy (3.1 ms) hides under a step of over 20 ms on its own stream
    assert steps["prefetched"]["step_time_s"] == pytest.approx(device)
    # a pinned copy runs on the compute stream between the kernels: its time adds to the device's
    assert steps["pinned"]["step_time_s"] == pytest.approx(device + INPUT_BYTES / LINK)
    # a pageable copy is synchronous: the host waits for it, nothing overlaps it
    assert steps["pageable"]["step_time_s"] == pytest.approx(device + STAGED * INPUT_BYTES / LINK)


def test_pinned_is_data_pinned_and_the_cli_says_so(capsys, steps):
    out = run_json(capsys, *ARGS, "--pinned")
    assert out["data"] == "pinned" and out["step_time_s"] == pytest.approx(steps["pinned"]["step_time_s"])
    assert run_json(capsys, *ARGS, "--data", "device")["transfer_s"] == 0.0
    assert run_json(capsys, "advise", "--model", "mobilenetv3", "--gpu", "v100", "--data", "prefetched")["data"] \
        == "prefetched"


def test_disagreeing_or_unknown_placements_are_refused(capsys):
    assert "--pinned and --data device disagree" in run_error(capsys, *ARGS, "--pinned", "--data", "device")
    assert "expected one of pageable, pinned, prefetched, device" in run_error(capsys, *ARGS, "--data", "gpu")
    with pytest.raises(RooflineError, match="disagree"):
        resolve_placement("pageable", pinned=True)
    assert resolve_placement(None, pinned=False).name == "pageable"


def test_on_a_cpu_every_placement_prices_the_same_step():
    times = {api.predict("mlp", cpu="textbook", batch=8, data=name).step_time_s for name in DATA_PLACEMENTS}
    assert len(times) == 1


def test_the_report_prices_and_names_the_placement(capsys, tmp_path):
    page = tmp_path / "r.html"
    out = run_json(capsys, "report", "--model", "resnet50", "--gpu", "v100", "--data", "device", "-o", str(page))
    assert out["data"] == "device"
    assert "input device (--data), its copy 0 s" in page.read_text()


def test_advise_says_what_the_copy_costs_where_a_placement_would_save_much(capsys):
    """The headline advice (MobileNetV3 on a V100) copies its input from pageable memory by default: the reason
    gives the input's bytes by closed form, the copy staged through host memory before the link, and the step under each
    other placement as `predict --data` prices it."""
    advice = run_json(capsys, "advise", "--model", "mobilenetv3", "--gpu", "v100")
    rec = advice["recommended"]
    transfer = next(r for r in advice["reasons"] if r["kind"] == "transfer")
    assert transfer["input_bytes"] == pytest.approx(rec["batch_size"] * 3 * 224 * 224 * 4)
    assert transfer["transfer_s"] == pytest.approx(STAGED * transfer["input_bytes"] / LINK)
    for name, step in transfer["step_time_by_placement_s"].items():
        same = api.predict("mobilenetv3", gpu="v100", batch=rec["batch_size"], precision=rec["precision"], data=name)
        assert step == pytest.approx(same.step_time_s)
    assert transfer["step_time_by_placement_s"]["device"] < 0.9 * rec["step_time_s"]
    # data already on the device: nothing to say
    placed = run_json(capsys, "advise", "--model", "mobilenetv3", "--gpu", "v100", "--data", "device")
    assert "transfer" not in {r["kind"] for r in placed["reasons"]}

"""The training loop's own kernels and synchronizations on a GPU: Adam as a Python loop of one-tensor ops
(DeepLearningExamples' BertAdam) and host reads of the gradient norm, against closed forms on the V100 profile
(846.5e9 B/s: its published BabelStream Triad, which the profile applies; 10 us dispatch, 10 us sync), with no
runtime profile (runtime None)."""

from __future__ import annotations

import pytest

from roofline.hardware.load import SHIPPED_DIR, load_profile
from roofline.model.step import StepOptions, predict_step
from roofline.workload.ops import Linear, Workload
from roofline.workload.precision import get_precision

HBM, DISPATCH, SYNC = 846.5e9, 10e-6, 10e-6
LAYERS, WIDTH, ROWS = 4, 4096, 8192
PARAMS = LAYERS * WIDTH * WIDTH  # 67,108,864 fp32 weights in 4 tensors, no biases


@pytest.fixture(scope="module")
def v100():
    return load_profile(SHIPPED_DIR / "gpu" / "v100-sxm2-16gb.yaml")


def _step(v100, **opts):
    ops = [Linear(f"fc{i}", batch=ROWS, in_features=WIDTH, out_features=WIDTH, bias=False) for i in range(LAYERS)]
    wl = Workload(name="mlp", batch=ROWS, ops=ops, input_bytes=0)
    return predict_step(wl, v100, get_precision("fp32"), StepOptions(train=True, runtime=None,
                                                                     include_transfer=False, **opts))


def test_unfused_adam_streams_29_tensors_per_parameter(v100):
    # 12 kernels per tensor: 17 fp32 reads and 12 writes of every parameter: 29 x 4 B x 67.1e6 / 846.5e9 = 9.20 ms,
    # against the fused update's 7 (4 reads, 3 writes)
    loop, fused = _step(v100, optimizer="adam-unfused"), _step(v100, optimizer="adam")
    assert loop.optimizer_s == pytest.approx(29 * 4 * PARAMS / HBM, rel=1e-9)
    assert fused.optimizer_s == pytest.approx(7 * 4 * PARAMS / HBM, rel=1e-9)
    # one launch per kernel per tensor from Python: 12 x 4 = 48 dispatches
    assert [o.launches for o in loop.ops if o.name == "optimizer"] == [48]


def test_a_norm_read_exposes_the_update_host_time(v100):
    # without the read the host queues the update while the backward runs; with it the host waits for the
    # backward, pays the round trip (10 us) and then queues the update's 48 kernels (48 x 10 us): on a
    # device-bound step the read adds its norm pass (4 B x 67.1e6 / 846.5e9 = 0.317 ms), the sync and that host
    # time; and a step with a sync in it starts with an idle device, which waits for the first kernel's 10 us
    plain = _step(v100, optimizer="adam-unfused")
    read = _step(v100, optimizer="adam-unfused", norm_reads=1)
    assert read.step_time_s - plain.step_time_s == pytest.approx(
        4 * PARAMS / HBM + SYNC + 48 * DISPATCH + DISPATCH, rel=1e-6)

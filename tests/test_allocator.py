"""The allocator model: glibc's rules on closed-form request sequences, tensor lifetimes from the dataflow, each
kernel's temporaries against a recorded malloc trace, and how a step charges the fresh pages."""

from dataclasses import replace
from pathlib import Path

import pytest

from roofline.allocator import (
    MMAP_THRESHOLD_MAX_BYTES,
    TOP_PAD_BYTES,
    GlibcHeap,
    Request,
    conv_layout,
    conv_temporaries,
    first_touch_bytes,
    inference_requests,
    replay,
)
from roofline.ceilings import ceilings_for
from roofline.costmodel import CostContext, op_cost, with_first_touch
from roofline.hardware import find_profile
from roofline.ops import Conv2d, Elementwise, Linear
from roofline.ops.base import Workload
from roofline.precision import get_precision
from roofline.step import StepOptions, predict_step
from roofline.zoo import build_workload
from roofline.zoo._graph import Graph

MIB = 2**20
PAGE = 4096


def pages(nbytes: int) -> int:
    return -(-nbytes // PAGE) * PAGE


def chunk(nbytes: int) -> int:
    # glibc's request for posix_memalign(64, n): n + 8-byte header rounded to 16, + 64 alignment + 32 minimum
    return -(-(nbytes + 8) // 16) * 16 + 64 + 32


@pytest.fixture
def cpu():
    c = ceilings_for(find_profile("textbook", "cpu"), get_precision("fp32"))
    return replace(c, threads=2, vector_lanes_fp32=8, page_fault_bytes_per_s=2e9)


def test_a_first_large_request_is_mapped_and_its_free_raises_both_thresholds():
    heap = GlibcHeap()
    # 1 MiB >= the initial 128 KiB threshold and the empty heap has no room: mapped, whole pages
    mapped = pages(chunk(MIB) + 8)  # 1048688 + 8 -> 257 pages = 1052672
    assert heap.allocate("a", MIB) == mapped == 1052672
    heap.free("a")
    assert (heap.mmap_threshold, heap.trim_threshold) == (mapped, 2 * mapped)
    # the next 1 MiB request (1048688) is below the page-rounded threshold: the heap grows by it and the pad
    assert heap.allocate("b", MIB) == pages(chunk(MIB) + TOP_PAD_BYTES) == 1183744
    heap.free("b")  # top 1183744 < trim threshold 2105344: kept
    assert heap.allocate("c", MIB) == 0


def test_a_mapping_above_32_mib_never_raises_the_threshold():
    heap = GlibcHeap()
    assert heap.allocate("a", 64 * MIB) == pages(chunk(64 * MIB) + 8)
    heap.free("a")
    assert heap.mmap_threshold == 128 * 2**10 and MMAP_THRESHOLD_MAX_BYTES == 32 * MIB


def test_a_step_whose_top_exceeds_twice_the_threshold_is_trimmed_and_regrown_every_step():
    def step(count: int) -> list[Request]:
        allocs = [Request(0, f"t{i}", MIB) for i in range(count)]
        return allocs + [Request(0, f"t{i}") for i in range(count)]

    # one live 1 MiB tensor at a time: its chunk stays below the 2.1 MB trim threshold; reused every step
    assert replay(step(1), ops=1) == [0.0]
    # three live at once: freeing them leaves a 3.3 MB top, over twice the 1052672 B threshold: trimmed to the
    # pad, so each step grows the heap again by the three chunks less the 128 KiB pad kept, page-rounded
    grown = pages(3 * chunk(MIB) - TOP_PAD_BYTES + TOP_PAD_BYTES)
    assert replay(step(3), ops=1) == [pytest.approx(grown, abs=2 * PAGE)]


def test_a_result_lives_until_its_last_reader_and_an_inplace_result_is_its_input():
    g = Graph("net", 64, (1024,))
    g.linear("fc1", 1024)
    g.act("relu", "relu", inplace=True)
    kept = g.current
    g.linear("fc2", 1024)
    g.elementwise("add", other=kept)
    wl = Workload("net", 64, g.ops, 0, dataflow=g.dataflow)
    reqs = inference_requests(wl.ops, wl.flow(), 4, 8, {})
    allocs = [(r.op, r.key, r.bytes) for r in reqs if r.bytes]
    frees = [(r.op, r.key) for r in reqs if not r.bytes]
    tensor = 64 * 1024 * 4
    # fc1 (op 0), fc2 (op 2), add (op 3) allocate 64 x 1024 fp32 each; the in-place ReLU allocates nothing
    assert allocs == [(0, "fc1", tensor), (2, "fc2", tensor), (3, "add", tensor)]
    # fc1's memory (read as 'relu' by fc2 and add) and fc2's live until the add; the add's result is the output
    assert sorted(frees) == [(3, "add"), (3, "fc1"), (3, "fc2")]
    assert reqs[-1] == Request(3, "add")


def test_a_onednn_nchw_convolution_allocates_blocked_copies_around_its_result():
    conv = Conv2d("c", n=8, c=72, h=16, w=16, k=40, r=3, s=3, pad=1, bias=False)
    # AVX2 blocks of 8: 72 channels stay 72, 40 stay 40; weight 40 x 72 x 3 x 3; then AVX-512's 16: 80 and 48
    assert conv_temporaries(conv, 8, "onednn-nchw") == [
        ("+source", 8 * 72 * 16 * 16), ("+weight", 40 * 72 * 9), ("+blocked", 8 * 40 * 16 * 16), ("-weight", 0),
        ("-source", 0), ("+out", 8 * 40 * 16 * 16), ("-blocked", 0)]
    assert conv_temporaries(conv, 16, "onednn-nchw")[:3] == [
        ("+source", 8 * 80 * 16 * 16), ("+weight", 48 * 80 * 9), ("+blocked", 8 * 48 * 16 * 16)]
    # a stem reads its 3 channels as they are: no input copy, its weight unpadded on them
    stem = Conv2d("s", n=1, c=3, h=224, w=224, k=64, r=7, s=7, stride=2, pad=3, bias=False)
    assert conv_temporaries(stem, 8, "onednn-nchw")[:2] == [("+weight", 64 * 3 * 49), ("+blocked", 64 * 112 * 112)]
    # PyTorch's batch-1 fallback: an im2col buffer of C R S x P Q (none for a 1x1 stride-1 product)
    assert conv_temporaries(stem, 8, "slow2d") == [("+columns", 3 * 49 * 112 * 112), ("+out", 64 * 112 * 112),
                                                   ("-columns", 0)]


def test_the_requests_of_a_recorded_step_are_reproduced_in_order(cpu):
    """An independent reference: the malloc trace of one real MobileNetV3-large step (tests/data)."""
    lines = (Path(__file__).parent / "data" / "malloc-mobilenetv3-large-b8-128px.txt").read_text().splitlines()
    recorded = [int(line) for line in lines if line and not line.startswith("#")]
    wl = build_workload("mobilenetv3", 8, input_size=128)
    ops = wl.inference_ops()
    ctx = CostContext(cpu, 4, 4)
    layouts = {op.name: conv_layout(op, ctx) for op in ops if op.kind == "conv2d"}
    requests = inference_requests(ops, wl.flow(), 4, 8, layouts)
    generated = [int(r.bytes) for r in requests if r.bytes >= 64 * 2**10]  # what the tracer recorded
    assert len(recorded) == 216
    assert generated == recorded


def test_training_predicts_only_what_is_mapped_anew_whatever_the_heap_holds(cpu):
    ctx = CostContext(cpu, 4, 4)
    big = Elementwise("big", numel=16 * MIB, inputs=2)  # writes 64 MiB
    small = Elementwise("small", numel=2 * MIB, inputs=2)  # writes 8 MiB: reused heap memory
    flow = Workload("w", 1, [big, small], 0).flow()
    assert first_touch_bytes([("forward", big), ("forward", small)], flow, True, ctx) == [64 * MIB, 0.0]
    # 64 channels of 64 x 64 at batch 64: the NCHW output and oneDNN's blocked copies of input and output,
    # each 64 MiB; channels-last, only the output
    conv = Conv2d("pw", n=64, c=64, h=64, w=64, k=64, r=1, s=1, bias=False)
    assert first_touch_bytes([("forward", conv)], flow, True, ctx) == [3 * 64 * MIB]
    last = CostContext(cpu, 4, 4, channels_last=True)
    assert first_touch_bytes([("forward", conv)], flow, True, last) == [64 * MIB]


def test_fresh_pages_add_to_the_op_that_took_them(cpu):
    fc = Linear("fc", batch=64, in_features=1024, out_features=1024)
    cost = op_cost(fc, "forward", CostContext(cpu, 4, 4))
    charged = with_first_touch(cost, 4 * MIB, 2e9)
    # 4 MiB / 2e9 B/s = 2.1 ms of faults, after the product (a thread faults as it writes)
    assert charged.device_s == pytest.approx(cost.device_s + 4 * MIB / 2e9)
    assert charged.fresh_bytes == 4 * MIB and charged.bound == "memory:fresh pages"
    assert with_first_touch(cost, 0.0, 2e9) is cost


def test_an_inference_step_maps_a_64_mib_result_anew_every_step():
    from roofline.hardware.schema import Measured

    profile = find_profile("textbook", "cpu")
    big = Elementwise("big", numel=16 * MIB, inputs=1, op="copy")
    wl = Workload("w", 1, [big], 0)

    def step(rate):
        measured = Measured(peak_flops={"fp32": 1e11}, memory_bandwidth=2e10, page_fault_bytes_per_s=rate,
                            environment={})
        return predict_step(wl, profile.model_copy(update={"measured": measured}), get_precision("fp32"),
                            StepOptions())

    plain, faulted = step(None), step(2e9)
    assert plain.fresh_bytes == 0  # no measured first-touch rate: nothing charged
    # 64 MiB is above glibc's largest threshold: mapped (whole pages) at every step, freed after it
    assert faulted.fresh_bytes == pages(chunk(64 * MIB) + 8)
    assert faulted.step_time_s == pytest.approx(plain.step_time_s + faulted.fresh_bytes / 2e9)

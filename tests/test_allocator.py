"""glibc's rules on closed-form request sequences, and how a step charges the fresh pages they take."""

from dataclasses import replace

import pytest

from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.costmodel import CostContext, op_cost, with_first_touch
from roofline.model.cpu_runtime.allocator import MMAP_THRESHOLD_MAX_BYTES, TOP_PAD_BYTES, GlibcHeap, Request, replay
from roofline.model.step import StepOptions, predict_step
from roofline.workload.ops import Elementwise, Linear
from roofline.workload.ops.base import Workload
from roofline.workload.precision import get_precision

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

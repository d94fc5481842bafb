"""What a step asks of the C heap: tensor lifetimes from the dataflow (and, in training, from what each op saves
for backward), each kernel's temporaries, checked against closed forms and recorded malloc traces."""

import difflib
from dataclasses import replace
from pathlib import Path

import pytest

from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.context import CostContext
from roofline.model.cpu_runtime.allocator import Request, replay
from roofline.model.cpu_runtime.heap_requests import (
    conv_backward_temporaries,
    conv_layout,
    conv_temporaries,
    first_touch_bytes,
    inference_requests,
    training_requests,
)
from roofline.model.step_plan import executed
from roofline.workload.ops import Conv2d
from roofline.workload.ops.base import PASSES, Workload
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload, list_models
from roofline.workload.zoo._graph import Graph

DATA = Path(__file__).parent / "data"


@pytest.fixture
def cpu():
    c = ceilings_for(find_profile("textbook", "cpu"), get_precision("fp32"))
    return replace(c, threads=2, vector_lanes_fp32=8, page_fault_bytes_per_s=2e9)


def mlp_workload() -> Workload:
    g = Graph("net", 64, (1024,))
    g.linear("fc1", 1024)
    g.act("relu", "relu", inplace=True)
    g.linear("fc2", 1024)
    return Workload("net", 64, g.ops, 0, dataflow=g.dataflow)


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




def test_a_training_step_holds_what_backward_needs_and_frees_the_weight_gradients_last():
    wl = mlp_workload()
    requests = training_requests(wl.ops, wl.flow(), 4, 4, 8, {})
    tensor, weight, bias = 64 * 1024 * 4, 1024 * 1024 * 4, 1024 * 4
    # positions: forward fc1 0, relu 1, fc2 2; backward fc2 3, relu 4, fc1 5 (n = 3: backward of op i at 5 - i)
    allocs = [(r.op, r.key, r.bytes) for r in requests if r.bytes]
    assert allocs == [
        (0, "fc1", tensor), (2, "fc2", tensor),  # the in-place ReLU writes into fc1's result
        (3, ("grad", "fc2"), tensor),  # the loss's gradient of the logits
        (3, ("grad", "fc2", "dx0"), tensor), (3, ("grad", "fc2", "dw0"), weight), (3, ("grad", "fc2", "dw1"), bias),
        (4, ("grad", "relu", "dx0"), tensor),
        (5, ("grad", "fc1", "dw0"), weight), (5, ("grad", "fc1", "dw1"), bias)]  # no gradient for the input
    frees = [(r.op, r.key) for r in requests if not r.bytes]
    assert frees == [
        (3, ("grad", "fc2")), (4, ("grad", "fc2", "dx0")),
        # fc1's memory is fc2's saved input and ReLU's saved output: held until ReLU's backward has run
        (4, "fc1"), (5, ("grad", "relu", "dx0")),
        # zero_grad(set_to_none=True) frees the weight gradients in parameter order, then the loss lets go
        (5, ("grad", "fc1", "dw0")), (5, ("grad", "fc1", "dw1")), (5, ("grad", "fc2", "dw0")),
        (5, ("grad", "fc2", "dw1")), (5, "fc2")]


def test_a_onednn_nchw_convolution_backward_reorders_for_each_gradient():
    conv = Conv2d("c", n=8, c=72, h=16, w=16, k=40, r=3, s=3, pad=1, bias=False)
    x, x_blocked, y_blocked, weight = 8 * 72 * 16 * 16, 8 * 72 * 16 * 16, 8 * 40 * 16 * 16, 40 * 72 * 9
    assert conv_backward_temporaries(conv, 8, "onednn-nchw", data=True) == [
        ("+dy", y_blocked), ("+weight", weight), ("+dx_blocked", x_blocked), ("-weight", 0), ("-dy", 0),
        ("+dx0", x), ("-dx_blocked", 0),
        ("+dy", y_blocked), ("+source", x_blocked), ("+dw_blocked", weight), ("-source", 0), ("-dy", 0),
        ("+dw0", 40 * 72 * 9), ("-dw_blocked", 0)]
    # the first layer computes no input gradient, and PyTorch's fallback refills its im2col buffer
    assert [a for a, _ in conv_backward_temporaries(conv, 8, "slow2d", data=False)] == [
        "+columns", "+dw0", "-columns"]


@pytest.mark.parametrize("name", [spec.name for spec in list_models()])
def test_every_training_allocation_is_freed_before_its_key_is_reused_and_by_the_steps_end(cpu, name):
    wl = build_workload(name, 2)
    ctx = CostContext(cpu, 4, 4)
    layouts = {op.name: layout for op in wl.ops if op.kind == "conv2d" and (layout := conv_layout(op, ctx))}
    requests = training_requests(wl.ops, wl.flow(), 4, 4, 8, layouts)
    live: set[object] = set()
    for r in requests:  # a key is allocated again (a temporary remade) only after its free
        if r.bytes:
            assert r.key not in live
            live.add(r.key)
        else:
            live.remove(r.key)
    assert not live  # so each step of a replay starts from the same live set
    assert all(0 <= r.op < 2 * len(wl.ops) for r in requests)


def recorded_step(name: str) -> list[Request]:
    """A recorded training step (tests/data) as requests: '+bytes' allocates block i (in order), '-i' frees it."""
    lines = [line for line in (DATA / name).read_text().splitlines() if line and not line.startswith("#")]
    out, count = [], 0
    for line in lines:
        if line[0] == "+":
            out.append(Request(0, count, float(line[1:])))
            count += 1
        else:
            out.append(Request(0, int(line[1:])))
    return out


@pytest.mark.parametrize(("model", "trace"), [("resnet18", "malloc-train-resnet18-b8-112px.txt"),
                                              ("mobilenetv3-small", "malloc-train-mobilenetv3-small-b8-112px.txt")])
def test_a_recorded_training_step_is_reproduced_and_replays_to_the_same_fresh_bytes(cpu, model, trace):
    """Independent references: malloc traces of real eager PyTorch training steps (residual joins, max pooling,
    strided and depthwise convolutions, squeeze-excitation, autograd's clones before in-place hardswish)."""
    recorded = recorded_step(trace)
    wl = build_workload(model, 8, input_size=112)
    ctx = CostContext(cpu, 4, 4)
    layouts = {op.name: layout for op in wl.ops if op.kind == "conv2d" and (layout := conv_layout(op, ctx))}
    generated = [r for r in training_requests(wl.ops, wl.flow(), 4, 4, 8, layouts) if not r.bytes
                 or r.bytes >= 16 * 2**10]
    big = 64 * 2**10
    rec_sizes = [int(r.bytes) for r in recorded if r.bytes >= big]
    gen_sizes = [int(r.bytes) for r in generated if r.bytes >= big]
    matched = sum(b.size for b in difflib.SequenceMatcher(a=rec_sizes, b=gen_sizes, autojunk=False)
                  .get_matching_blocks())
    # what is left unmatched: strided convolutions' backward scratch, the loss's tensors, oneDNN's second
    # depthwise weight-gradient path
    assert matched >= 0.9 * len(rec_sizes)
    assert sum(replay(generated, 2 * len(wl.ops))) == pytest.approx(sum(replay(recorded, 1)), rel=0.1)


def test_a_training_step_charges_an_ops_backward_requests_to_its_first_gradient_pass(cpu):
    wl = mlp_workload()
    pairs = executed(wl.ops, PASSES)
    fresh = first_touch_bytes(pairs, wl.flow(), True, CostContext(cpu, 4, 4))
    by_pair = {(p, op.name): b for (p, op), b in zip(pairs, fresh, strict=True)}
    # every pass of fc1 and fc2 is listed; the backward_weight passes of the ops with an input gradient get none
    assert by_pair[("backward_weight", "fc2")] == 0.0 and by_pair[("backward_weight", "relu")] == 0.0
    assert len(fresh) == len(pairs)


def test_the_heap_replay_is_switched_on_by_the_recorded_runtime():
    from roofline.hardware.load import load_profile
    from roofline.model.cpu_runtime.allocator import GlibcHeap
    from roofline.model.cpu_runtime.runtime import ASSUMED_PAGE_BYTES, recorded_runtime
    from roofline.model.step import StepOptions, predict_step

    assert recorded_runtime({"libc": "glibc 2.36", "page_bytes": 16384}).glibc_heap
    assert not recorded_runtime({"libc": None, "page_bytes": 4096}).glibc_heap  # musl, macOS: not modelled
    assert recorded_runtime({}).glibc_heap and recorded_runtime({}).page_bytes == ASSUMED_PAGE_BYTES
    # a 10^8-byte request (above the mmap threshold) is mapped in whole pages: 10^8 + 8 B of header rounds up
    # to 24,415 x 4,096 = 100,003,840 B, or to 6,104 x 16,384 = 100,007,936 B
    assert GlibcHeap(4096).allocate_chunk("a", 10**8) == 100_003_840
    assert GlibcHeap(16384).allocate_chunk("a", 10**8) == 100_007_936
    profile = load_profile(Path(__file__).resolve().parents[1] / "benchmarks/results/accuracy-cpu-profile.yaml")
    wl, fp32, train = build_workload("mlp", 64), get_precision("fp32"), StepOptions(train=True)
    glibc = predict_step(wl, profile, fp32, train)
    env = {**profile.measured.environment, "libc": None}
    other = profile.model_copy(update={"measured": profile.measured.model_copy(update={"environment": env})})
    assert glibc.fresh_bytes > 0 and predict_step(wl, other, fp32, train).fresh_bytes == 0

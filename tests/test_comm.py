"""Collectives, fabrics and DDP against closed forms; the multi-GPU command's contract."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.hardware.fabric_load import find_link, find_node
from roofline.model.comm.collectives import (
    Fabric,
    Tier,
    hierarchical_allreduce_s,
    ring_all_gather_s,
    ring_allreduce_s,
    ring_reduce_scatter_s,
)
from roofline.model.comm.data_parallel import (
    FIRST_BUCKET_BYTES,
    GROUPINGS,
    build_buckets,
    build_fusion_buffers,
)
from roofline.model.comm.fabric import node_fabric

ROOT = Path(__file__).resolve().parents[1]


def flat(n: int, bandwidth: float, latency: float = 0.0) -> Fabric:
    return Fabric(Tier(n, bandwidth, latency, "test"))


def test_ring_allreduce_moves_2_n_minus_1_over_n_of_the_bytes():
    # 8 ranks, 1 GB at 100 GB/s, no latency: 2 * 7/8 * 1e9 / 1e11 = 0.0175 s
    assert ring_allreduce_s(1e9, flat(8, 1e11)) == pytest.approx(0.0175)
    # latency alone: 2 * (8 - 1) steps x 5 us = 70 us
    assert ring_allreduce_s(1.0, flat(8, 1e30, 5e-6)) == pytest.approx(70e-6)


def test_reduce_scatter_and_all_gather_are_each_half_an_allreduce():
    # 4 ranks, 1 GB at 10 GB/s: 3/4 * 1e9 / 1e10 = 0.075 s each, 0.15 s together = the all-reduce
    f = flat(4, 1e10)
    assert ring_reduce_scatter_s(1e9, f) == pytest.approx(0.075)
    assert ring_all_gather_s(1e9, f) == pytest.approx(0.075)
    assert ring_allreduce_s(1e9, f) == pytest.approx(0.15)


def test_one_rank_communicates_nothing():
    assert ring_allreduce_s(1e9, flat(1, 1e9, 1e-3)) == 0.0


def test_hierarchical_allreduce_across_nodes():
    # 2 nodes x 4 GPUs; 800 MB; intra 100 GB/s, node NICs 40 GB/s together (10 GB/s per GPU's shard), no latency
    # intra reduce-scatter + all-gather: 2 * 3/4 * 8e8 / 1e11 = 0.012 s
    # inter all-reduce of a 200 MB shard between 2 nodes at 10 GB/s: 2 * 1/2 * 2e8 / 1e10 = 0.02 s
    f = Fabric(Tier(4, 1e11, 0.0, "t"), 2, Tier(2, 4e10, 0.0, "t"))
    assert hierarchical_allreduce_s(8e8, f) == pytest.approx(0.032)


def test_dgx1_bus_bandwidth_is_six_nvlinks_one_direction():
    # all 8 GPUs: NCCL 2's six rings, one per direction of the cube-mesh's three rings of single links:
    # 6 links x 25 GB/s x 0.8222 (NCCL's protocol on NVLink) = 123.3 GB/s per GPU; 4 EDR ports x 12.5 GB/s
    # = 50 GB/s per node (no published protocol efficiency: line rate)
    node = find_node("dgx-1-v100")
    f = node_fabric(node, find_link(node.intra_link), find_link(node.nic_link), 8, 2)
    assert f.intra.bus_bandwidth_bytes_per_s == pytest.approx(150e9 * 0.8222)
    assert f.inter.bus_bandwidth_bytes_per_s == pytest.approx(50e9)
    assert f.world == 16


def test_buckets_fill_in_order_first_one_small():
    # 2 MiB tensors (in DDP's order) of fp32 = 8 MiB each... use 1 MiB elements x 4 bytes = 4 MiB per tensor:
    # first bucket closes at its first tensor (4 MiB >= 1 MiB), then 25 MiB buckets take 7 tensors (28 MiB)
    tensors = [(2**20, float(i)) for i in range(10)]
    buckets = build_buckets(tensors, 4, 25 * 2**20)
    assert [b[0] for b in buckets] == [1, 7, 2]
    assert buckets[0][1] == 4 * 2**20 and FIRST_BUCKET_BYTES == 2**20
    assert [b[2] for b in buckets] == [0.0, 7.0, 9.0]  # ready when the last tensor is


def test_horovod_fusion_never_overfills_its_buffer():
    # 20 MiB tensors (5 Mi elements x 4 B) into 64 MiB: 3 fit (60 MiB), a 4th would make 80 -> new buffer;
    # a 100 MiB tensor is all-reduced alone
    tensors = [(5 * 2**20, 0.0)] * 4 + [(25 * 2**20, 1.0), (5 * 2**20, 2.0)]
    buffers = build_fusion_buffers(tensors, 4)
    assert [b[0] for b in buffers] == [3, 1, 1, 1]
    assert [b[1] / 2**20 for b in buffers] == [60, 20, 100, 20]


def test_unbucketed_allreduces_everything_once_at_the_end():
    tensors = [(2**20, float(i)) for i in range(10)]
    (group,) = GROUPINGS["unbucketed"](tensors, 2, 25 * 2**20)
    assert group == (10, 10 * 2 * 2**20, 9.0)


def test_per_tensor_allreduces_each_gradient_when_it_is_ready():
    # tf_cnn_benchmarks' replicated mode: 3 tensors of 1 Mi fp32 elements -> three 4 MiB all-reduces
    tensors = [(2**20, 0.5), (2**20, 1.5), (2**20, 2.5)]
    assert GROUPINGS["per-tensor"](tensors, 4, 25 * 2**20) == [(1, 4 * 2**20, 0.5), (1, 4 * 2**20, 1.5),
                                                              (1, 4 * 2**20, 2.5)]


def test_measured_step_stretches_the_backward_and_the_reference():
    # the same DDP step against a one-GPU step twice as long: every bucket ready twice as late, and the
    # efficiency is measured step / (measured step + exposed)
    from roofline.hardware import find_profile
    from roofline.model.comm.data_parallel import at_measured_step, predict_data_parallel
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.zoo import build_workload

    w = build_workload("mlp", 8)
    single = predict_step(w, find_profile("v100"), get_precision("fp32"), StepOptions(train=True))
    slow = at_measured_step(single, 2 * single.step_time_s)
    assert slow.step_time_s == pytest.approx(2 * single.step_time_s)
    fast_dp = predict_data_parallel(w, single, flat(2, 1e12), 4)
    slow_dp = predict_data_parallel(w, slow, flat(2, 1e12), 4)
    assert slow_dp.backward_s == pytest.approx(2 * fast_dp.backward_s)
    assert [b.ready_s for b in slow_dp.buckets] == pytest.approx([2 * b.ready_s for b in fast_dp.buckets])
    exposed = slow_dp.step_time_s - slow.step_time_s
    assert slow_dp.scaling_efficiency == pytest.approx(slow.step_time_s / (slow.step_time_s + exposed))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *args], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_predict_gpus_document():
    r = run_cli("predict", "--model", "resnet50", "--gpu", "v100", "--train", "--batch", "256", "--gpus", "8",
                "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    for key in ("step_time_s", "samples_per_s", "scaling_efficiency", "communication_s",
                "exposed_communication_s", "buckets"):
        assert key in doc
    assert doc["per_gpu_batch"] == 32
    # ResNet-50 has 25,557,032 parameters (torchvision); fp32 gradients are 4 bytes each
    assert doc["gradient_bytes"] == pytest.approx(25_557_032 * 4)
    assert doc["step_time_s"] >= doc["single_gpu_step_time_s"]
    assert 0 < doc["scaling_efficiency"] <= 1


def test_single_device_prediction_unchanged_without_gpus():
    from roofline.hardware import find_profile
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.zoo import build_workload

    r = run_cli("predict", "--model", "resnet50", "--gpu", "v100", "--train", "--batch", "32", "--json")
    doc = json.loads(r.stdout)
    direct = predict_step(build_workload("resnet50", 32), find_profile("v100"), get_precision("fp32"),
                          StepOptions(train=True))
    assert doc["step_time_s"] == direct.step_time_s
    assert "scaling_efficiency" not in doc and "buckets" not in doc


@pytest.mark.parametrize("args", [
    ("--gpus", "16"),  # more GPUs than a DGX-1 holds, no --nodes
    ("--gpus", "8", "--node", "dgx-9"),  # unknown node
    ("--gpus", "8", "--batch", "100"),  # 100 does not divide over 8 GPUs
    ("--gpus", "8", "--nodes", "2", "--node", "8x-rtx-4090-pcie", "--gpu", "rtx-4090"),  # no NIC to price
    ("--gpus", "8", "--allreduce", "butterfly"),
])
def test_bad_multi_gpu_input_is_one_line_exit_2(args):
    base = ["predict", "--model", "resnet50", "--train"]
    if "--gpu" not in args:
        base += ["--gpu", "v100"]
    if "--batch" not in args:
        base += ["--batch", "256"]
    r = run_cli(*base, *args)
    assert r.returncode == 2
    assert r.stderr.startswith("roofline: error:") and r.stderr.count("\n") == 1


def test_a_batch_that_does_not_divide_names_one_that_does():
    # the default --batch 1 cannot be spread over 8 GPUs x 2 accumulation steps: the error says --batch is the
    # global batch and its suggestion, run as given, is accepted
    r = run_cli("predict", "--model", "resnet50", "--gpu", "v100", "--train", "--gpus", "8", "--grad-accum", "2")
    assert r.returncode == 2 and "global batch" in r.stderr
    suggested = re.search(r"--batch (\d+) for", r.stderr)
    assert suggested and int(suggested.group(1)) % 16 == 0
    ok = run_cli("predict", "--model", "resnet50", "--gpu", "v100", "--train", "--gpus", "8", "--grad-accum", "2",
                 "--batch", suggested.group(1), "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["per_gpu_batch"] * 16 == int(suggested.group(1))


def _predict_on_dgx1_linked_by(tmp_path, intra_link: str):
    """`predict --gpus 8` on a copy of the DGX-1 V100 node whose GPUs are linked by `intra_link`."""
    node = (ROOT / "hardware_profiles/node/dgx-1-v100.yaml").read_text().replace("intra_link: nvlink-2",
                                                                                  f"intra_link: {intra_link}")
    (tmp_path / "node.yaml").write_text(node)
    return run_cli("predict", "--model", "resnet50", "--gpu", "v100", "--train", "--batch", "256", "--gpus", "8",
                   "--node", str(tmp_path / "node.yaml"))


def test_link_profile_missing_a_figure_is_one_line_exit_2(tmp_path):
    link = tmp_path / "link.yaml"
    link.write_text("name: x\nkind: link\ntechnology: x\nscope: intra-node\n"
                    "bandwidth_bytes_per_s: {value: 1.0e9, source: 'https://example.org'}\n")
    r = _predict_on_dgx1_linked_by(tmp_path, str(link))
    assert r.returncode == 2
    assert "latency_s" in r.stderr and r.stderr.count("\n") == 1


def test_node_naming_an_unknown_interconnect_is_one_line_exit_2(tmp_path):
    r = _predict_on_dgx1_linked_by(tmp_path, "nvlink-9")
    assert r.returncode == 2
    assert "nvlink-9" in r.stderr and r.stderr.count("\n") == 1


def test_predict_gpus_plot_draws_speedup_against_gpu_count(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "scaling.png"
    r = run_cli("predict", "--model", "resnet50", "--gpu", "v100", "--train", "--batch", "256", "--gpus", "8",
                "--nodes", "2", "--plot", str(target), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["plot"] == str(target)
    assert target.read_bytes().startswith(b"\x89PNG")


def test_scaling_lesson_closed_form():
    from roofline.model.comm.scaling import amdahl_speedup, fixed_fraction_for

    # 56x on 100 GPUs: C / T1 = (100 / 56 - 1) / 100 = 0.0078571...
    assert fixed_fraction_for(56, 100) == pytest.approx((100 / 56 - 1) / 100)
    assert amdahl_speedup(100, fixed_fraction_for(56, 100)) == pytest.approx(56)
    assert amdahl_speedup(2, 0.0) == pytest.approx(2)  # nothing fixed: linear


def test_world_sizes_fill_a_node_then_whole_nodes():
    from roofline.model.comm.scaling import world_sizes

    assert world_sizes(8, 64) == [(1, 1), (2, 1), (4, 1), (8, 1), (8, 2), (8, 4), (8, 8)]
    assert world_sizes(8, 6)[-1] == (6, 1)


def test_no_overlap_exposes_every_allreduce():
    # CPU ranks with no idle core: the whole communication is added to the step
    from roofline.hardware import find_profile
    from roofline.model.comm.data_parallel import predict_data_parallel
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.zoo import build_workload

    w = build_workload("mlp", 8)
    single = predict_step(w, find_profile("v100"), get_precision("fp32"), StepOptions(train=True))
    dp = predict_data_parallel(w, single, flat(2, 1e9, 1e-4), 4, overlap=False)
    assert dp.exposed_communication_s == pytest.approx(dp.communication_s)
    assert dp.step_time_s == pytest.approx(single.step_time_s + dp.communication_s)


def test_advise_train_gpus_recommends_a_count_with_reasons():
    r = run_cli("advise", "--train", "--model", "resnet50", "--gpu", "v100", "--gpus", "16", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    dp = doc["data_parallel"]
    assert [p["gpus"] for p in dp["sweep"]] == [1, 2, 4, 8, 16]
    assert 1 <= doc["recommended"]["gpus"] <= 16
    assert any("all-reduces" in reason["text"] for reason in dp["reasons"])


def test_explain_scaling_lesson_document():
    r = run_cli("explain", "--scaling", "--gpu", "v100", "--json")
    doc = json.loads(r.stdout)
    assert doc["fixed_fraction_of_one_gpu_step"] == pytest.approx((100 / 56 - 1) / 100)
    at_100 = next(p for p in doc["curve"] if p["gpus"] == 100)
    assert at_100["speedup"] == pytest.approx(56)


def test_tensor_parallel_two_allreduces_per_layer():
    from roofline.model.comm.tensor_parallel import tensor_parallel_token_s, tp_message_bytes

    # one token of a 4096-wide model in fp16: 4096 x 2 = 8192 bytes per all-reduce
    assert tp_message_bytes(hidden_size=4096, tokens=1, element_bytes=2) == 8192
    # 32 layers x 2 all-reduces x ring on 8 ranks, no latency: 64 x 2 x 7/8 x 8192 / 1e11
    f = flat(8, 1e11)
    assert tensor_parallel_token_s(8192, 32, f) == pytest.approx(64 * 2 * 7 / 8 * 8192 / 1e11)


def test_hw_show_node_gives_its_bus_bandwidth():
    # DGX A100: 12 NVLinks x 25 GB/s x 0.8222 = 246.7 GB/s per GPU; 8 HDR ports x 25 GB/s = 200 GB/s per node
    doc = json.loads(run_cli("hw", "show", "dgx-a100", "--json").stdout)
    assert doc["kind"] == "node"
    assert doc["bus_bandwidth_bytes_per_s"] == pytest.approx(300e9 * 0.8222)
    assert doc["nic_bandwidth_bytes_per_s"] == pytest.approx(200e9)


def test_sharding_moves_three_halves_of_ddp_bytes_and_divides_state():
    # ZeRO-3 / FSDP: all-gather (forward) + all-gather (backward) + reduce-scatter = 3 (n-1)/n P against
    # DDP's all-reduce 2 (n-1)/n P; with no latency the ratio of bandwidth terms is exactly 3/2
    from roofline.hardware import find_profile
    from roofline.model.comm.sharded import predict_sharded
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.zoo import build_workload

    w = build_workload("resnet50", 32)
    single = predict_step(w, find_profile("v100"), get_precision("fp32"), StepOptions(train=True))
    f = flat(8, 1e11)
    sharded = predict_sharded(w, single, f, 4)
    assert sharded.communication_s == pytest.approx(1.5 * ring_allreduce_s(25_557_032 * 4, f))
    # gradients and optimizer state divided by 8
    assert sharded.memory.gradients == pytest.approx(single.memory.gradients / 8)
    assert sharded.memory.total < single.memory.total


def test_shard_full_fits_what_a_replica_does_not():
    base = ["predict", "--model", "vgg16", "--gpu", "v100", "--train", "--batch", "1280", "--gpus", "8",
            "--optimizer", "adam", "--json"]
    replica = run_cli(*base)
    sharded = run_cli(*base, "--shard", "full")
    assert replica.returncode == 2 and "--shard full" in replica.stderr
    assert sharded.returncode == 0, sharded.stderr
    doc = json.loads(sharded.stdout)
    assert doc["sharding"] == "full" and doc["memory_bytes"] < doc["replica_memory_bytes"]


def test_gloo_fit_recovers_alpha_and_beta_from_synthetic_times():
    from roofline.measure.gloo_ranks import fit_allreduce

    # 2 ranks, 50 us per step, 1 GB/s: t(S) = 2 x 50e-6 + S / 1e9 (2(n-1)/n = 1)
    sizes = (4, 1 << 20, 4 << 20, 32 << 20)
    fit = fit_allreduce({s: 2 * 50e-6 + s / 1e9 for s in sizes}, 2)
    assert fit.latency_s == pytest.approx(50e-6, rel=1e-4)  # 4 bytes add 4 ns to 100 us
    assert fit.bus_bandwidth_bytes_per_s == pytest.approx(1e9, rel=1e-3)


def test_communication_union_counts_overlapping_allreduces_once():
    from roofline.measure.gloo_ranks import _union_s

    # [0, 2] and [1, 3] overlap on [1, 2]: 3 s in flight; [5, 6] adds 1
    assert _union_s([(1.0, 3.0), (0.0, 2.0), (5.0, 6.0)]) == pytest.approx(4.0)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_FIGURE = st.one_of(st.none(), st.floats(allow_nan=True), st.text(max_size=5),
                    st.fixed_dictionaries({"value": st.floats(allow_nan=True, allow_infinity=True),
                                           "source": st.just("https://example.org")}))


@settings(max_examples=60, deadline=None)
@given(bandwidth=_FIGURE, latency=_FIGURE, scope=st.sampled_from(["intra-node", "inter-node", "nowhere", None]),
       extra=st.dictionaries(st.sampled_from(["speed", "lanes", "note"]), st.integers(), max_size=1))
def test_any_link_yaml_loads_or_fails_as_a_profile_error(tmp_path_factory, bandwidth, latency, scope, extra):
    import yaml as _yaml

    from roofline.errors import ProfileError
    from roofline.hardware.fabric_load import find_link
    from roofline.hardware.fabric_schema import LinkProfile

    doc = {"name": "x", "kind": "link", "technology": "x", "scope": scope, "bandwidth_bytes_per_s": bandwidth,
           "latency_s": latency, **extra}
    path = tmp_path_factory.mktemp("link") / "junk.yaml"
    path.write_text(_yaml.safe_dump({k: v for k, v in doc.items() if v is not None}))
    try:
        link = find_link(str(path))
    except ProfileError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(link, LinkProfile)
        assert 0 < link.bandwidth_bytes_per_s.value < float("inf") and 0 < link.latency_s.value < float("inf")


def test_accumulation_and_fp16_gradient_communication():
    base = ["predict", "--model", "resnet50", "--gpu", "v100", "--train", "--gpus", "8", "--json"]
    one = json.loads(run_cli(*base, "--batch", "256").stdout)
    four = json.loads(run_cli(*base, "--batch", "1024", "--grad-accum", "4").stdout)
    half = json.loads(run_cli(*base, "--batch", "256", "--grad-comm", "fp16").stdout)
    # 1024 = 32 per GPU x 8 GPUs x 4 micro-steps; one all-reduce per 4 micro-steps:
    # step = 4 x one-GPU step + exposed, so the exposed part is the same as with one micro-step
    assert four["per_gpu_batch"] == 32 and four["accumulation_steps"] == 4
    assert four["step_time_s"] == pytest.approx(4 * one["single_gpu_step_time_s"] + one["exposed_communication_s"])
    # fp16 on the wire: 2 bytes per gradient element instead of 4
    assert half["gradient_bytes"] == pytest.approx(one["gradient_bytes"] / 2)


def test_ranks_sharing_a_socket_get_their_share_of_its_memory():
    from roofline.hardware.load import find_profile
    from roofline.model.comm.socket_share import rank_profile
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.ops import Elementwise, Workload
    from roofline.workload.precision import get_precision

    cpu = find_profile("textbook", "cpu")
    half = rank_profile(cpu, 0.5)
    assert half.memory.bandwidth_bytes_per_s.value == cpu.memory.bandwidth_bytes_per_s.value / 2
    assert rank_profile(cpu, 1.0) is cpu
    with pytest.raises(ValueError):
        rank_profile(cpu, 0.0)
    # a DRAM-bound add takes twice as long at half the bandwidth
    add = Workload("add", 1, [Elementwise("add", numel=1 << 28, inputs=2)], 0)
    fp32 = get_precision("fp32")
    alone = predict_step(add, cpu, fp32, StepOptions(runtime=None))
    shared = predict_step(add, half, fp32, StepOptions(runtime=None))
    assert shared.device_s == pytest.approx(2 * alone.device_s, rel=1e-3)

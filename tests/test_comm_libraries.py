"""The data-parallel libraries' mechanisms against closed forms: NCCL 1's single ring, Horovod's cycle."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.hardware.fabric_load import find_link, find_node
from roofline.model.comm.collectives import Fabric, Tier, ring_allreduce_s
from roofline.model.comm.fabric import FabricError
from roofline.model.comm.libraries import HOROVOD_CYCLE_S, LIBRARIES, Library, library_fabric
from roofline.model.comm.nccl1 import ring_hops, single_ring_fabric

NODES = Path(__file__).resolve().parents[1] / "hardware_profiles" / "node"


TARTAN_NCCL1_BUSBW = {3: 15.81e9, 4: 14.25e9, 5: 7.60e9, 6: 7.11e9, 7: 7.51e9}
"""NCCL 1 all_reduce_perf busbw at 1 GB over GPUs 0..N-1 of a P100 DGX-1 (uuudown/Tartan@957d8606:
microbenchmark/scale_up_cl/nccl-v1/bandwidth.txt); the 2- and 8-GPU runs set the model's two hop rates, these
five do not."""

TARTAN_NCCL1_8GPU_BUSBW = {262144: 3.27e9, 524288: 4.71e9, 1048576: 5.90e9, 2097152: 6.71e9, 4194304: 7.25e9,
                           8388608: 7.64e9, 16777216: 7.40e9, 33554432: 7.41e9, 67108864: 7.68e9,
                           134217728: 7.69e9, 268435456: 7.69e9, 536870912: 7.69e9, 1073741824: 7.69e9}
"""A second run over all 8 GPUs, busbw against message size (nccl-v1/packet.txt, all_reduce_perf rows)."""


def test_nccl1_ring_on_four_p100s_runs_on_one_nvlink():
    # GPUs 0-3 of a DGX-1 are all joined by NVLink: every hop is one link at NCCL 1's 14.55 of its 20 GB/s,
    # not the 3 links' worth NCCL 2's rings drive among those four GPUs
    node = find_node("dgx-1-p100")
    fabric = single_ring_fabric(node, 4)
    assert fabric.bus_bandwidth_bytes_per_s == pytest.approx(14.55e9)
    assert fabric.bus_bandwidth_bytes_per_s < library_fabric(LIBRARIES["pytorch-ddp"], node, 4) \
        .bus_bandwidth_bytes_per_s / 3


def test_nccl1_ring_on_eight_p100s_crosses_the_sockets_twice():
    # ring 0-1-...-7-0: hops 3->4 and 7->0 have no NVLink and cross from one socket to the other, bounded by
    # the host-memory path (7.58 GB/s under NCCL 1, below the PCIe 3.0 slot's 15.75 GB/s)
    node = find_node("dgx-1-p100")
    slow = [(hop.src, hop.dst) for hop in ring_hops(node, 8) if hop.link.name != find_link(node.intra_link).name]
    assert slow == [(3, 4), (7, 0)]
    fabric = single_ring_fabric(node, 8)
    assert fabric.bus_bandwidth_bytes_per_s == pytest.approx(7.58e9)
    # 553 MB of VGG-16 gradients: 2 x 7/8 x 553e6 / 7.58e9 = 128 ms, plus 14 steps of 5.7 us
    assert ring_allreduce_s(553e6, fabric) == pytest.approx(2 * 7 / 8 * 553e6 / 7.58e9 + 14 * 5.7e-6)


@pytest.mark.parametrize("gpus", sorted(TARTAN_NCCL1_BUSBW))
def test_nccl1_ring_matches_the_runs_it_was_not_taken_from(gpus):
    # 3-4 GPUs: NVLink hops only; 5-7 GPUs: one or two hops cross the sockets (3->4; 5->0, 6->0)
    fabric = single_ring_fabric(find_node("dgx-1-p100"), gpus)
    assert fabric.bus_bandwidth_bytes_per_s == pytest.approx(TARTAN_NCCL1_BUSBW[gpus], rel=0.08)


def test_nccl1_all_reduce_time_follows_the_measured_size_curve():
    # bandwidth term plus 14 ring steps of 5.7 us against busbw = 2 x 7/8 x size / time, 256 KB to 1 GB
    fabric = single_ring_fabric(find_node("dgx-1-p100"), 8)
    for size, measured in TARTAN_NCCL1_8GPU_BUSBW.items():
        assert 2 * 7 / 8 * size / ring_allreduce_s(size, fabric) == pytest.approx(measured, rel=0.06), size
    # an 8-byte all-reduce took 0.074 ms (nccl-v1/latency.txt): the ring's 14 steps of latency
    assert ring_allreduce_s(8, fabric) == pytest.approx(0.074e-3, rel=0.1)


def test_nccl1_needs_the_node_wiring_and_one_node():
    with pytest.raises(FabricError, match="wiring"):
        single_ring_fabric(find_node("dgx-a100"), 8)
    with pytest.raises(FabricError, match="one node"):
        library_fabric(LIBRARIES["tf-replicated-nccl"], find_node("dgx-1-p100"), 8, nodes=2)


def test_wiring_naming_a_gpu_the_node_lacks_is_a_profile_error(tmp_path):
    from roofline.errors import ProfileError

    text = (NODES / "dgx-1-p100.yaml").read_text().replace("[3, 7]]", "[3, 9]]")
    path = tmp_path / "node.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError, match="nvlink pair"):
        find_node(str(path))


def test_horovod_cycle_delays_each_group_by_half_a_cycle():
    from roofline.hardware import find_profile
    from roofline.model.comm.data_parallel import predict_data_parallel
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.zoo import build_workload

    w = build_workload("mlp", 8)
    single = predict_step(w, find_profile("v100"), get_precision("fp32"), StepOptions(train=True))
    fabric = Fabric(Tier(2, 1e15, 0.0, "test"))  # all-reduces take no time: only the wait shows
    at_once = predict_data_parallel(w, single, fabric, 4, grouping="horovod")
    waiting = predict_data_parallel(w, single, fabric, 4, grouping="horovod",
                                    launch_wait_s=LIBRARIES["horovod"].launch_wait_s)
    assert [b.start_s for b in waiting.buckets] == pytest.approx([b.start_s + 2.5e-3 for b in at_once.buckets])
    # the last group is ready when the backward ends, so half a cycle (2.5 ms) is exposed
    assert waiting.exposed_communication_s == pytest.approx(HOROVOD_CYCLE_S / 2, rel=1e-4)
    assert Library("ddp").launch_wait_s == 0.0


def test_tensorflow_nccl_all_reduces_wait_for_the_backward():
    # tf_cnn_benchmarks' replicated NCCL: every all-reduce exposed, the step is one GPU's plus the sum of them
    from roofline.hardware import find_profile
    from roofline.model.comm.data_parallel import predict_data_parallel
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.zoo import build_workload

    library = LIBRARIES["tf-replicated-nccl"]
    node = find_node("dgx-1-p100")
    w = build_workload("alexnet", 64)
    single = predict_step(w, find_profile(node.gpu, kind="gpu"), get_precision("fp32"), StepOptions(train=True))
    dp = predict_data_parallel(w, single, library_fabric(library, node, 4), 4, grouping=library.grouping,
                               overlap=library.overlaps_backward)
    assert dp.exposed_communication_s == pytest.approx(dp.communication_s)
    assert dp.step_time_s == pytest.approx(single.step_time_s + dp.communication_s)


def test_predict_gpus_takes_the_library():
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(root / "cli.py"), "predict", "--model", "vgg16", "--gpu", "p100",
                               "--train", "--batch", "512", "--gpus", "8", "--node", "dgx-1-p100", *args],
                              capture_output=True, text=True, cwd=root,
                              env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})

    ddp = json.loads(run("--json").stdout)
    nccl1 = json.loads(run("--json", "--library", "tf-replicated-nccl").stdout)
    assert ddp["library"] == "pytorch-ddp" and nccl1["library"] == "tf-replicated-nccl"
    # NCCL 1's ring at 7.58 GB/s, every all-reduce after the backward: all communication exposed
    assert nccl1["bus_bandwidth_bytes_per_s"] == pytest.approx(7.58e9)
    assert nccl1["exposed_communication_s"] == pytest.approx(nccl1["communication_s"])
    assert nccl1["scaling_efficiency"] < ddp["scaling_efficiency"]
    bad = run("--library", "mpi")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_nccl_before_2_4_runs_rings_only():
    from roofline.model.comm.libraries import nccl_algorithm

    assert nccl_algorithm("2.1.15") == "ring" and nccl_algorithm("2.3") == "ring"
    assert nccl_algorithm("2.4.2") == "auto" and nccl_algorithm("2.18.1") == "auto"
    assert LIBRARIES["tf-replicated-nccl"].algorithm == "ring"


def test_ring_only_nccl_pays_the_ring_latency_over_many_nodes():
    # 512 ranks over 128 nodes: a ring all-reduce has 2 x 511 steps, 2 x 127 of them on the NIC (9.6 us) and
    # the rest on PCIe (5.7 us); NCCL's tuner would take the tree, whose latency grows with log2(nodes)
    from roofline.model.comm.collectives import allreduce_s, tree_allreduce_s

    node = find_node("4x-p100-25gbe")
    fabric = library_fabric(LIBRARIES["horovod"], node, 4, 128)
    nbytes = 16e6
    ring = 2 * 511 / 512 * nbytes / 3.125e9 + 2 * 127 * 9.6e-6 + (2 * 511 - 2 * 127) * 5.7e-6
    assert allreduce_s(nbytes, fabric, "ring") == pytest.approx(ring)
    assert allreduce_s(nbytes, fabric, "auto") == pytest.approx(min(ring, tree_allreduce_s(nbytes, fabric)))
    assert allreduce_s(nbytes, fabric, "auto") < allreduce_s(nbytes, fabric, "ring")


def test_xla_autoclustering_starts_every_all_reduce_after_the_backward_and_its_wait():
    # Horovod under XLA auto-clustering: the gradients all appear when the backward ends; the first group waits
    # half a cycle (2.5 ms) and the groups then run back to back, so the step is one GPU's + 2.5 ms + all of them
    from roofline.hardware import find_profile
    from roofline.model.comm.data_parallel import predict_data_parallel
    from roofline.model.comm.libraries import under_xla_autoclustering
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.zoo import build_workload

    library = under_xla_autoclustering(LIBRARIES["horovod"])
    assert not library.overlaps_backward and library.grouping == "horovod" and library.cycle_s == HOROVOD_CYCLE_S
    node = find_node("dgx-1-v100")
    w = build_workload("resnet50", 32)
    single = predict_step(w, find_profile(node.gpu, kind="gpu"), get_precision("fp32"), StepOptions(train=True))
    dp = predict_data_parallel(w, single, library_fabric(library, node, 8), 4, grouping=library.grouping,
                               overlap=library.overlaps_backward, launch_wait_s=library.launch_wait_s)
    assert dp.buckets[0].start_s == pytest.approx(dp.backward_s + HOROVOD_CYCLE_S / 2)
    assert dp.exposed_communication_s == pytest.approx(HOROVOD_CYCLE_S / 2 + dp.communication_s)
    overlapped = predict_data_parallel(w, single, library_fabric(library, node, 8), 4, grouping=library.grouping,
                                       launch_wait_s=library.launch_wait_s)
    assert overlapped.exposed_communication_s < dp.exposed_communication_s


def test_bus_bandwidth_rows_are_priced_with_their_library():
    from benchmarks.published_scaling import predicted_bus_bandwidth

    row = {"node": "dgx-1-p100", "gpus": 8}
    assert predicted_bus_bandwidth({**row, "library": "tf-replicated-nccl"}) == pytest.approx(7.58e9)
    assert predicted_bus_bandwidth(row) == pytest.approx(4 * 20e9 * 0.8222)  # NCCL 2's rings on all 4 NVLinks
    assert predicted_bus_bandwidth({**row, "gpus": 2}) == pytest.approx(20e9 * 0.8222)  # the one between 0 and 1

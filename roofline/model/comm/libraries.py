"""The data-parallel libraries a published run names, as the mechanisms this model prices for each: how it
groups gradients into all-reduces, which ring its collectives take, which all-reduce algorithms its NCCL
has, and how long a ready gradient waits for the library to launch its all-reduce.

A library is data, not a branch in the step model: `predict_data_parallel` takes the grouping, the fabric and
the wait, whichever library they came from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from roofline.hardware.fabric_load import find_link
from roofline.hardware.fabric_schema import NodeProfile
from roofline.model.comm.collectives import Fabric
from roofline.model.comm.fabric import FabricError, node_fabric
from roofline.model.comm.nccl1 import single_ring_fabric

HOROVOD_CYCLE_S = 5e-3
"""Horovod's background loop wakes every 5 ms to negotiate which tensors every rank has ready: a fixed
`sleep_for(std::chrono::milliseconds(5))` 'This delay determines thread frequency and MPI message latency'
from the first release (horovod/horovod@64317537, 2017), then HOROVOD_CYCLE_TIME with `double cycle_time = 5`
(horovod/horovod@92454dae:horovod/common/operations.cc, 2018), until v0.21.0 'Changed default cycle time from
5ms to 1ms' (#2468, November 2020)."""

NCCL_TREE_SINCE = (2, 4)
"""The first NCCL with a tree all-reduce: 2.4.2-1, 'Add tree algorithms for allreduce to improve performance at
scale' (NVIDIA/nccl@1450d42675be325cd3b7a684d4b231eedceb22fb, December 2018). Every earlier NCCL all-reduce,
NCCL 1's included ('implemented using ring algorithms', NVIDIA/nccl@ccfc4567:README.md), ran on rings."""


def nccl_algorithm(version: str) -> str:
    """The all-reduce choice a NCCL release makes: rings only before 2.4, NCCL's tuner between ring and tree
    ('auto', `collectives.nccl_allreduce_s`) from 2.4 on."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return "ring" if (major, minor) < NCCL_TREE_SINCE else "auto"


@dataclass(frozen=True)
class Library:
    grouping: str
    """A key of `data_parallel.GROUPINGS`."""
    ring: Literal["nccl2", "nccl1"] = "nccl2"
    """NCCL 2's rings along every NVLink (`fabric.node_fabric`), or NCCL 1's single ring (`nccl1`)."""
    cycle_s: float = 0.0
    """Period of a background loop that launches all-reduces only when it wakes; 0 launches at once."""
    overlaps_backward: bool = True
    """Whether an all-reduce can start while the backward that produces later gradients still runs."""
    algorithm: str = "auto"
    """The all-reduce algorithm its NCCL runs (`nccl_algorithm`): 'ring' for a NCCL before 2.4."""

    @property
    def launch_wait_s(self) -> float:
        """A gradient group ready at a uniformly random phase of the cycle waits half a cycle on average."""
        return self.cycle_s / 2


LIBRARIES: dict[str, Library] = {
    "pytorch-ddp": Library("ddp"),
    "horovod": Library("horovod", cycle_s=HOROVOD_CYCLE_S),
    "apex-ddp-unbucketed": Library("unbucketed"),
    "paddle-fleet": Library("ddp"),
    "tf-replicated-nccl": Library("per-tensor", ring="nccl1", overlaps_backward=False, algorithm="ring"),
}
"""PaddlePaddle's fused all-reduce was not read from a source: priced as DDP's buckets.

TensorFlow's contrib NCCL of 2017 was NCCL 1 (tensorflow/tensorflow@6535ed7:tensorflow/workspace.bzl,
nccl_archive at NVIDIA/nccl@ccfc4567, April 2017), whose only algorithm is the ring. Its all-reduces are priced
after the backward, a bound kept because it fits the published rows, not because the code fixes it: NcclManager
forms a collective when the last of the towers reaches the gradient and makes the NCCL stream wait for each
tower's compute stream as it stands then (`nccl_stream->stream->ThenWaitFor(p->tensor_stream)`,
tensorflow/contrib/nccl/kernels/nccl_manager.cc, RunCollective), so how much of the backward precedes an
all-reduce is how far the host had queued each tower at that moment. TensorFlow's executor runs GPU kernels
inline as inexpensive ('Kernels executing on GPU tie very few resources on the CPU where the scheduler runs',
tensorflow/core/framework/op_kernel.cc, read in a later version than the page's), which would
put that point a few ops past the gradient's producer and let the all-reduces overlap, and the published VGG16
batch-32 rows do hide at least 33 of 38 ms (2 GPUs) and 47 of 58 ms (4 GPUs) of the measured ring's time; but
priced so, the 8-GPU rows come out 12-29 points above the published ones. Not for want of a slower ring: NCCL 1's
ring over all 8 GPUs of a P100 DGX-1 was measured at 7.58 GB/s (`nccl1`, the socket path's profile), not the
~3 GB/s overlap would need, and AlexNet's 8-GPU row loses exactly that ring's 58 ms (benchmarks/LOG.md, ninth
session, second and third rounds)."""


def under_xla_autoclustering(library: Library) -> Library:
    """The library as TensorFlow runs it with XLA auto-clustering on (`global_jit_level = ON_1`): every all-reduce
    after the backward. The clusters compile the backward into a few XLA launches whose gradients all appear when
    a launch ends, so Horovod's all-reduces, which XLA cannot compile, wait for them: with XLA on, a profile shows
    no compute and communication overlap where it showed good overlap without (horovod/horovod#1283, TensorFlow
    1.14 and Horovod 0.16.4; tensorflow/tensorflow#32808, NGC 19.03), and an NVIDIA engineer answering the same
    report for DeepLearningExamples' BERT: 'Clustering still has some issues due to loss of concurrency. To fix
    them, we need to make some structural change to Tensorflow' (NVIDIA/DeepLearningExamples#156, September
    2019)."""
    return replace(library, overlaps_backward=False)


def library_fabric(library: Library, node: NodeProfile, gpus_per_node: int, nodes: int = 1) -> Fabric:
    """The fabric the library's collectives see on `nodes` nodes of `gpus_per_node` GPUs each."""
    if library.ring == "nccl1":
        if nodes > 1:
            raise FabricError("NCCL 1 joins the GPUs of one node only; --nodes needs a NCCL 2 library")
        return single_ring_fabric(node, gpus_per_node)
    nic = find_link(node.nic_link) if node.nic_link else None
    return node_fabric(node, find_link(node.intra_link), nic, gpus_per_node, nodes)

"""A data-parallel job from what a user names: GPU, node profile, GPUs per node, nodes, global batch."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.errors import RooflineError
from roofline.hardware.fabric_load import find_node
from roofline.hardware.fabric_schema import NodeProfile
from roofline.hardware.load import list_profiles
from roofline.hardware.schema import Profile
from roofline.model.comm.collectives import ALLREDUCE, Fabric
from roofline.model.comm.libraries import LIBRARIES, Library, library_fabric

GRAD_COMM_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
"""Bytes per gradient element on the wire: fp32 buffers, or DDP's fp16/bf16 compression hooks
(torch.distributed.algorithms.ddp_comm_hooks.default_hooks.fp16_compress_hook / bf16_compress_hook)."""


@dataclass(frozen=True)
class DataParallelJob:
    node: NodeProfile
    fabric: Fabric
    per_gpu_batch: int
    accumulation_steps: int
    grad_bytes: int
    algorithm: str
    library: Library


def node_for(gpu: Profile, node_name: str | None) -> NodeProfile:
    """The named node, or the one shipped node profile whose GPU is `gpu`; its GPU must be `gpu`."""
    from roofline.hardware import find_profile

    if node_name:
        node = find_node(node_name)
        if find_profile(node.gpu, kind="gpu").name != gpu.name:
            raise RooflineError(f"node '{node_name}' holds {node.gpu}, not {gpu.name}; name the node's GPU "
                                "with --gpu or pick another --node")
        return node
    candidates = [find_node(str(e.path)) for e in list_profiles() if e.kind == "node"]
    matching = [n for n in candidates if find_profile(n.gpu, kind="gpu").name == gpu.name]
    if not matching:
        raise RooflineError(f"no node profile holds {gpu.name}; name one with --node "
                            "(`roofline hw list` shows the node profiles)")
    return matching[0]


def data_parallel_job(gpu: Profile, node_name: str | None, gpus_per_node: int, nodes: int, global_batch: int,
                      accumulation_steps: int, precision_grad_bytes: int, grad_comm: str | None,
                      algorithm: str, library_name: str = "pytorch-ddp") -> DataParallelJob:
    if gpu.kind != "gpu":
        raise RooflineError("--gpus prices GPUs in a node profile; name one with --gpu (CPU ranks: "
                            "`roofline validate --train --ranks N`)")
    if accumulation_steps < 1:
        raise RooflineError(f"--grad-accum must be a positive integer, got {accumulation_steps}")
    if algorithm not in ("auto", *ALLREDUCE):
        raise RooflineError(f"unknown --allreduce '{algorithm}'; choose auto, {', '.join(ALLREDUCE)}")
    if library_name not in LIBRARIES:
        raise RooflineError(f"unknown --library '{library_name}'; choose {', '.join(LIBRARIES)}")
    library = LIBRARIES[library_name]
    node = node_for(gpu, node_name)
    fabric = library_fabric(library, node, gpus_per_node, nodes)
    share = fabric.world * accumulation_steps
    if global_batch % share:
        raise RooflineError(f"--batch {global_batch} (the global batch) does not divide into {fabric.world} GPUs x "
                            f"{accumulation_steps} accumulation steps; use a multiple of {share}, e.g. --batch "
                            f"{32 * share} for 32 per GPU per step")
    grad_bytes = GRAD_COMM_BYTES[grad_comm] if grad_comm else precision_grad_bytes
    chosen = library.algorithm if algorithm == "auto" else algorithm
    return DataParallelJob(node, fabric, global_batch // share, accumulation_steps, grad_bytes, chosen, library)

"""The ceilings a cost model applies for one device and precision, each tagged datasheet or measured.

A profile carries datasheet figures and, after `roofline calibrate`, measured ones. This module decides,
once, which number each mechanism uses, so the cost model never reaches into a profile and every figure
it applies can be shown with its provenance. Measured values win: a datasheet peak is a bound the
hardware cannot beat, a measured one is what the software stack on this machine actually reaches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.errors import RooflineError
from roofline.hardware.derived import matrix_peak, memory_levels, vector_peak
from roofline.hardware.schema import GpuProfile, Profile
from roofline.precision import Precision

GEMM_TILES = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
"""Output tile shapes a GPU GEMM library chooses among (NVIDIA's matrix-multiplication performance guide
lists 256x128 down to 64x64 for cuBLAS); the cost model picks the fastest, as cuBLAS's heuristics do."""

CPU_GEMM_TILES = ((192, 128), (96, 128), (48, 64))
"""Per-thread output blocks of CPU BLAS kernels (mc x nc panels of oneDNN/OpenBLAS sgemm)."""


@dataclass(frozen=True)
class Level:
    """One memory level as the cost model sees it."""

    name: str
    capacity_bytes: float
    bandwidth_bytes_per_s: float


@dataclass(frozen=True)
class Ceilings:
    """Every number the cost model applies for one (device, precision), with where it came from."""

    device: str
    is_gpu: bool
    units: int
    """SMs or cores: the parallel units work is quantized over."""
    compute_dtype: str
    matrix_flops_per_s: float | None
    """Tensor-core / AMX / best-GEMM peak for the compute dtype; None when the device has none."""
    vector_flops_per_s: float
    """SIMD / CUDA-core peak for the compute dtype (fp32's when the dtype has no native vector path)."""
    alignment_elements: int | None
    """Tensor-core alignment for the compute dtype (GEMM dims must be multiples)."""
    gemm_curve: tuple[tuple[int, float], ...] = ()
    """Measured (n, FLOP/s) for square GEMMs at this dtype: small products do not reach peak."""
    conv_efficiency: dict[str, float] = field(default_factory=dict)
    levels: tuple[Level, ...] = ()
    dispatch_s: float = 0.0
    launch_s: float = 0.0
    sync_s: float = 0.0
    host_link_bytes_per_s: float | None = None
    host_link_pageable_bytes_per_s: float | None = None
    provenance: dict[str, str] = field(default_factory=dict)
    """figure -> 'datasheet' | 'derived' | 'measured'."""

    @property
    def dram(self) -> Level:
        return self.levels[-1]

    @property
    def tiles(self) -> tuple[tuple[int, int], ...]:
        return GEMM_TILES if self.is_gpu else CPU_GEMM_TILES


def compute_dtype_for(precision: Precision, profile: Profile) -> str | None:
    """The dtype the math runs in, or None when the device cannot run this precision.

    `amp` runs fp16 where the device has fp16 tensor cores, else bf16 (CPU autocast uses bf16).
    """
    dtype = precision.compute_dtype
    if precision.name == "amp":
        dtype = "fp16" if isinstance(profile, GpuProfile) and "fp16" in profile.tensor_cores else "bf16"
    if matrix_peak(profile, dtype) is not None or vector_peak(profile, dtype) is not None:
        return dtype
    return None


def supported_precisions(profile: Profile, names: tuple[str, ...]) -> list[str]:
    from roofline.precision import get_precision

    return [n for n in names if compute_dtype_for(get_precision(n), profile) is not None]


def ceilings_for(profile: Profile, precision: Precision) -> Ceilings:
    """Resolve the ceilings for one precision on one device (measured where calibrated)."""
    dtype = compute_dtype_for(precision, profile)
    if dtype is None:
        raise RooflineError(f"{profile.name} has no {precision.name} support (no native {precision.compute_dtype} "
                            "units); `roofline hw show` lists what it has")
    measured = profile.measured
    provenance: dict[str, str] = {}
    matrix = matrix_peak(profile, dtype)
    vector = vector_peak(profile, dtype) or vector_peak(profile, "fp32")
    matrix_value = matrix.value if matrix else None
    provenance["matrix_flops_per_s"] = "datasheet" if matrix else "none"
    vector_value = vector.value if vector else 0.0
    provenance["vector_flops_per_s"] = "derived"
    if measured and dtype in measured.peak_flops:
        best = measured.peak_flops[dtype]
        if matrix_value is not None:
            matrix_value = best
            provenance["matrix_flops_per_s"] = "measured"
        else:
            vector_value = best
            provenance["vector_flops_per_s"] = "measured"
    alignment = None
    if isinstance(profile, GpuProfile) and dtype in profile.tensor_cores:
        alignment = profile.tensor_cores[dtype].alignment_elements
    curve = tuple((p.n, p.flops_per_s) for p in (measured.gemm_curves.get(dtype, []) if measured else []))
    if curve:
        provenance["gemm_curve"] = "measured"
    levels = tuple(Level(*lv) for lv in memory_levels(profile))
    provenance["dram_bandwidth"] = "measured" if measured else "datasheet"
    o = profile.overheads
    dispatch = o.framework_dispatch_s.value
    if measured and measured.framework_dispatch_s:
        dispatch = measured.framework_dispatch_s
    launch = measured.kernel_launch_s if measured and measured.kernel_launch_s else o.kernel_launch_s.value
    sync = measured.sync_s if measured and measured.sync_s is not None else o.sync_s.value
    provenance["dispatch_s"] = "measured" if measured and measured.framework_dispatch_s else "datasheet"
    link = pageable = None
    if isinstance(profile, GpuProfile):
        link = profile.host_link.bandwidth_bytes_per_s.value
        h2d = measured.host_to_device_bytes_per_s if measured else {}
        link = h2d.get("pinned", link)
        pageable = h2d.get("pageable")
        provenance["host_link"] = "measured" if "pinned" in h2d else "datasheet"
    units = int(profile.compute.sm_count.value) if isinstance(profile, GpuProfile) else int(
        profile.compute.cores.value * profile.compute.sockets)
    return Ceilings(
        device=profile.name, is_gpu=isinstance(profile, GpuProfile), units=units, compute_dtype=dtype,
        matrix_flops_per_s=matrix_value, vector_flops_per_s=vector_value, alignment_elements=alignment,
        gemm_curve=curve, conv_efficiency=dict(measured.conv_efficiency) if measured else {},
        levels=levels, dispatch_s=dispatch, launch_s=launch, sync_s=sync, host_link_bytes_per_s=link,
        host_link_pageable_bytes_per_s=pageable, provenance=provenance,
    )

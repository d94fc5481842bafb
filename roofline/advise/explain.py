"""The roofline of one device, in its profile's own numbers: why compute outruns memory, and by how much.

Three facts decide whether an operation is fast: how many bytes per second the arithmetic units can consume
(cores x clock x bytes one core loads per cycle), how many bytes per second DRAM delivers (bus width x data
rate, and the datasheet's figure), and how many FLOPs the operation performs per byte it must move (its
arithmetic intensity). Their quotients are the ratio (compute bytes / memory bytes) and the ridge point
(peak FLOP/s / bandwidth): an operation whose intensity is below the ridge waits on memory. The example
operations are the op IR's own classes, so their FLOPs and bytes are exactly what `predict` charges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from roofline.errors import UnknownName
from roofline.hardware import derived as d
from roofline.hardware.schema import DTYPES, Profile
from roofline.units import format_sci
from roofline.workload.precision import get_precision

EXAMPLE_BATCH, EXAMPLE_CHANNELS, EXAMPLE_SIZE = 1, 64, 56
"""The example convolutions and elementwise ops use a ResNet stage-1 activation: 1 x 64 x 56 x 56."""
EXAMPLE_GEMM_SIZES = (64, 1024)
"""A small and a large square GEMM, either side of most devices' crossover size."""


@dataclass(frozen=True)
class OpPoint:
    """One operation placed on the roofline."""

    name: str
    op: str
    shape: str
    flops: float
    bytes: float
    intensity: float
    """FLOP per byte of compulsory DRAM traffic."""
    bound: str
    """'memory' when the intensity is below the DRAM ridge point, else 'compute'."""
    attainable_flops_per_s: float
    """min(peak, intensity x DRAM bandwidth): the roofline's height at this intensity."""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def peak_rows(profile: Profile) -> list[dict[str, Any]]:
    """Each dtype's peak with the path that gives it (vector units or matrix units) and its formula."""
    rows = []
    for dtype in DTYPES:
        options = [(fig, path) for fig, path in ((d.vector_peak(profile, dtype), "vector"),
                                                 (d.matrix_peak(profile, dtype), "matrix")) if fig is not None]
        if not options:
            continue
        fig, path = max(options, key=lambda fp: fp[0].value)
        rows.append({"dtype": dtype, "path": path, "value": fig.value, "formula": fig.expr,
                     "with_numbers": f"{fig.with_numbers()} = {format_sci(fig.value)} FLOP/s"})
    return rows


def sustained_matrix_rows(profile: Profile) -> list[dict[str, Any]]:
    """What a large tensor-core product sustains per dtype on a GPU without a calibration, and where the figure
    comes from (`ceilings.sustained_matrix_rate`): the rate predictions price the matrix units at, which the
    datasheet peaks above overstate by the board's power limit and the library's kernels. None on a CPU."""
    from roofline.hardware.schema import GpuProfile
    from roofline.model.ceilings import sustained_matrix_rate

    if not isinstance(profile, GpuProfile) or profile.measured:
        return []
    rows = []
    for dtype, cores in profile.tensor_cores.items():
        rate, provenance = sustained_matrix_rate(profile, dtype)
        rows.append({"dtype": dtype, "value": rate, "share": rate / cores.dense_flops_per_s.value,
                     "provenance": provenance})
    return rows


def gemm_crossover_n(ridge: float, element_bytes: float) -> float:
    """Square GEMM size whose intensity equals the ridge point.

    An n x n x n GEMM does 2 n^3 FLOP and moves at least 3 n^2 elements (A, B read, C written), so its
    intensity is 2 n^3 / (3 n^2 x bytes) = 2 n / (3 x bytes); equal to the ridge at n* = 1.5 x ridge x bytes.
    """
    return 1.5 * ridge * element_bytes


def example_ops(n_star: int) -> list[Any]:
    """The operations `explain` places on the roofline, built from the op IR."""
    from roofline.workload.ops import Conv2d, Elementwise, Gemm, Reduce

    b, c, s = EXAMPLE_BATCH, EXAMPLE_CHANNELS, EXAMPLE_SIZE
    sizes = sorted({*EXAMPLE_GEMM_SIZES, n_star})
    return [
        *(Gemm(f"gemm n={n}", m=n, n=n, k=n) for n in sizes),
        Conv2d("conv 3x3", n=b, c=c, h=s, w=s, k=c, r=3, s=3, stride=1, pad=1, dilation=1, groups=1, bias=False),
        Conv2d("depthwise conv 3x3", n=b, c=c, h=s, w=s, k=c, r=3, s=3, stride=1, pad=1, dilation=1, groups=c,
               bias=False),
        Elementwise("elementwise add", numel=b * c * s * s, inputs=2, op="add"),
        Reduce("sum reduction", numel_in=b * c * s * s, numel_out=1),
    ]


def place(op: Any, element_bytes: float, peak: float, bandwidth: float) -> OpPoint:
    """An op's forward pass on the roofline of (peak FLOP/s, DRAM bytes/s)."""
    flops = float(op.flops("forward"))
    moved = float(op.bytes("forward", element_bytes, element_bytes))
    intensity = flops / moved if moved else math.inf
    return OpPoint(name=op.name, op=op.kind, shape=op.shapes(), flops=flops, bytes=moved, intensity=intensity,
                   bound="memory" if intensity < d.ridge_point(peak, bandwidth) else "compute",
                   attainable_flops_per_s=min(peak, intensity * bandwidth))


def explain(profile: Profile, precision: str = "fp32") -> dict[str, Any]:
    """The roofline of `profile` as numbers with their formulas; operations placed at `precision`."""
    prec = get_precision(precision)
    peaks = d.peak_flops(profile)
    if prec.compute_dtype not in peaks:
        raise UnknownName(f"{profile.name} has no {prec.compute_dtype} peak (it has {', '.join(peaks)}); "
                          f"choose --precision from those")
    compute = d.compute_bytes_per_s(profile)
    memory = d.memory_bandwidth(profile)
    bandwidth = profile.memory.bandwidth_bytes_per_s.value
    ratio = compute.value / bandwidth
    ridges = d.ridge_points(peaks, bandwidth)
    peak = peaks[prec.compute_dtype]
    ridge = ridges[prec.compute_dtype]
    n_star = gemm_crossover_n(ridge, prec.storage_bytes)
    ops = [place(op, prec.storage_bytes, peak, bandwidth) for op in example_ops(math.ceil(n_star))]
    sheet = profile.memory.bandwidth_bytes_per_s
    sustained = profile.memory.sustained_bandwidth_bytes_per_s
    return {
        "device": profile.name,
        "kind": profile.kind,
        "peak_flops": peaks,
        "peak_formulas": peak_rows(profile),
        "sustained_matrix": sustained_matrix_rows(profile),
        "compute_bytes_per_s": compute.value,
        "compute_formula": f"{compute.with_numbers()} = {format_sci(compute.value)} B/s",
        "memory_bandwidth": bandwidth,
        "memory_formula": f"{memory.with_numbers()} = {format_sci(memory.value)} B/s "
                          f"(datasheet {format_sci(bandwidth)} B/s)",
        "memory_bandwidth_source": sheet.provenance,
        "sustained_memory_bandwidth": sustained.value if sustained else None,
        "sustained_memory_bandwidth_source": sustained.provenance if sustained else None,
        "ratio": ratio,
        "formula": f"compute_bytes_per_s / memory_bandwidth = {format_sci(compute.value)} B/s / "
                   f"{format_sci(bandwidth)} B/s = {format_sci(ratio)}",
        "ridge_point": ridges,
        "ridge_point_by_level": {level: d.ridge_points(peaks, bw) for level, _, bw in d.memory_levels(profile)},
        "precision": prec.name,
        "compute_dtype": prec.compute_dtype,
        "element_bytes": prec.storage_bytes,
        "gemm_crossover_n": n_star,
        "gemm_crossover_formula": f"n* = 1.5 x ridge x bytes = 1.5 x {format_sci(ridge)} FLOP/B x "
                                  f"{prec.storage_bytes} B = {format_sci(n_star)}",
        "operations": [o.as_dict() for o in ops],
    }

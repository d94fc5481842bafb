"""The figures a calibration measures, one row each: the `schema.Measured` field, its unit, the device it is
measured on, and how several calibrations' values combine (`roofline.measure.calibrate.combine` is driven by
this table). A new calibrated figure is a field in `Measured` and a row here, beside its probe and its use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Combine = Literal["median", "median per key", "median per point", "median per point per key"]
"""'median': of the calibrations that have the figure; 'per key': of each dict key separately; 'per point':
of each point matched across the lists by `point_key`, on its `point_value` field; 'per point per key': the
same within each dict key (a GEMM curve per dtype)."""


@dataclass(frozen=True)
class CalibratedFigure:
    name: str
    """The `Measured` field."""
    unit: str
    device: Literal["cpu", "cuda", "both"]
    """Where calibration measures it: on the CPU only, on a GPU only, or on either."""
    combine: Combine
    point_key: tuple[str, ...] = ()
    point_value: str = ""


CALIBRATED_FIGURES: tuple[CalibratedFigure, ...] = (
    CalibratedFigure("peak_flops", "FLOP/s", "both", "median per key"),
    CalibratedFigure("memory_bandwidth", "B/s", "both", "median"),
    CalibratedFigure("caches", "B/s", "both", "median per point", ("level",), "bandwidth_bytes_per_s"),
    CalibratedFigure("gemm_curves", "FLOP/s", "both", "median per point per key", ("n",), "flops_per_s"),
    CalibratedFigure("skinny_gemm_fp32", "FLOP/s", "both", "median per point", ("small", "other"), "flops_per_s"),
    CalibratedFigure("gemv_rows_fp32", "B/s", "both", "median per point", ("layout", "row_elements"),
                     "bytes_per_s"),
    CalibratedFigure("outer_gemm_fp32", "FLOP/s", "both", "median per point", ("small", "other"), "flops_per_s"),
    CalibratedFigure("conv_efficiency", "1", "both", "median per key"),
    CalibratedFigure("conv_efficiency_points", "1", "both", "median per point", ("key", "weight_share"),
                     "efficiency"),
    CalibratedFigure("conv_fixed_s", "s", "both", "median per key"),
    CalibratedFigure("conv_fixed_warm_s", "s", "both", "median per key"),
    CalibratedFigure("host_to_device_bytes_per_s", "B/s", "cuda", "median per key"),
    CalibratedFigure("kernel_bytes_per_s", "B/s", "both", "median per key"),
    CalibratedFigure("page_fault_bytes_per_s", "B/s", "cpu", "median"),
    CalibratedFigure("layout_conversion_bytes_per_s", "B/s", "cpu", "median per key"),
    CalibratedFigure("dispatch_s_by_kind", "s", "both", "median per key"),
    CalibratedFigure("kernel_launch_s", "s", "cuda", "median"),
    CalibratedFigure("framework_dispatch_s", "s", "both", "median"),
    CalibratedFigure("sync_s", "s", "both", "median"),
    CalibratedFigure("unsteady", "1", "both", "median per key"),
)

"""The hardware profile schema: every figure a cost model uses, each with where it came from.

Profiles are YAML files validated by these pydantic models with `extra="forbid"`, so a misspelt field is an
error that names the file and the field rather than a silently ignored number. A figure is a `Figure`:
`{value, source}` for a datasheet number (public URL), `{value, derived}` for one computed from others
(the formula), or `{value, source: "measured: how"}` for one measured on a real device.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")
"""Compute dtypes a peak can be given for, widest first."""

DTYPE_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
"""Storage bytes per element; tf32 is stored as fp32."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Figure(_Strict):
    """One number with its provenance. Exactly one of `source` or `derived` must be given."""

    value: float
    source: str | None = None
    """A public URL (vendor datasheet, whitepaper), or 'measured: <how>'."""
    derived: str | None = None
    """The formula this figure follows from, in the profile's own field names."""
    note: str | None = None
    """Why this figure may disagree with a derived one (e.g. boost vs sustained clock)."""

    @model_validator(mode="after")
    def _one_provenance(self) -> Figure:
        if (self.source is None) == (self.derived is None):
            raise ValueError("give exactly one of 'source' (a public URL or 'measured: how') or 'derived'")
        return self


class Cache(_Strict):
    """One level of the on-chip memory hierarchy."""

    level: str
    """'L1', 'L2', 'L3' (a GPU's L1 is its combined L1/shared memory)."""
    size_bytes: Figure
    """Capacity of one instance."""
    shared_by: int = Field(ge=1)
    """How many cores (CPU) or SMs (GPU) share one instance; total = size x units / shared_by."""
    line_bytes: int = 64
    bandwidth_bytes_per_cycle: Figure | None = None
    """Bytes per clock cycle one instance delivers (load bandwidth), where published."""


class Memory(_Strict):
    """Off-chip main memory (DRAM/HBM)."""

    type: str
    """e.g. 'HBM2', 'GDDR6X', 'DDR4-3200'."""
    bus_width_bits: Figure
    """Total data bus width over all channels/stacks."""
    data_rate_per_s: Figure
    """Transfers per second per pin (e.g. 1.75e9 for HBM2 at 876 MHz DDR)."""
    capacity_bytes: Figure
    bandwidth_bytes_per_s: Figure
    """The vendor's quoted peak; compared with bus_width_bits / 8 x data_rate_per_s."""
    sustained_bandwidth_bytes_per_s: Figure | None = None
    """A published measurement of what a streaming kernel reaches on this device model (BabelStream's Triad,
    its figure of merit), source 'measured: ...' with where; DRAM refresh, read/write turnaround and page
    misses keep every memory below its pin rate. The cost model prices DRAM traffic at it when this machine
    has no calibration of its own."""


class HostLink(_Strict):
    """How the device talks to the host (GPUs), or to other sockets."""

    kind: str
    """'PCIe', 'SXM (PCIe to host)', 'unified' ..."""
    generation: int | None = None
    lanes: int | None = None
    bandwidth_bytes_per_s: Figure
    """One direction."""


class Interconnect(_Strict):
    """Device-to-device links (NVLink, Infinity Fabric)."""

    kind: str
    links: int | None = None
    bandwidth_bytes_per_s: Figure
    """Total bidirectional bandwidth as the vendor quotes it."""


class TensorCore(_Strict):
    """Matrix-unit support for one dtype: its dense peak and the alignment it needs."""

    dense_flops_per_s: Figure
    sparse_flops_per_s: Figure | None = None
    """2:4 structured sparsity figure, only where the vendor labels it as such; never used as dense."""
    alignment_elements: int = Field(ge=1)
    """GEMM dimensions must be multiples of this for the tensor-core path (bytes = x dtype size)."""
    sustained_flops_per_s: Figure | None = None
    """A published measurement of a large, aligned GEMM on this device model (cuBLAS/cuBLASLt through its
    usual front end), source 'measured: ...': the clock a dense tensor load holds under the power limit and
    the library's main-loop efficiency, which no datasheet states. Applied like a calibrated peak when
    this machine has none."""


class Overheads(_Strict):
    """Fixed costs per operation that no FLOP or byte count explains."""

    kernel_launch_s: Figure
    """Time for the host to launch one kernel / dispatch one op when the device is idle."""
    framework_dispatch_s: Figure
    """Python + framework (PyTorch eager) cost per op on the host thread."""
    sync_s: Figure
    """Round trip of one host-device synchronization (e.g. `.item()`)."""


class MeasuredGemmPoint(_Strict):
    """Measured GEMM throughput at one square size: the efficiency curve the cost model interpolates."""

    n: int
    flops_per_s: float


class MeasuredSkinnyGemmPoint(_Strict):
    """Measured fp32 throughput of a (small x other) @ (other x other) product: the skinny-GEMM surface."""

    small: int
    other: int
    flops_per_s: float


class MeasuredConvPoint(_Strict):
    """One calibration shape's convolution efficiency (see Measured.conv_efficiency) and the weight's share of
    the elements its forward pass reads and writes, the axis along which the cost model fits a kind's trend."""

    key: str
    weight_share: float
    efficiency: float


class MeasuredCache(_Strict):
    level: str
    bandwidth_bytes_per_s: float
    working_set_bytes: int


class Measured(_Strict):
    """Ceilings measured by `roofline calibrate`, and where and how they were measured."""

    peak_flops: dict[str, float]
    """dtype -> best measured FLOP/s."""
    memory_bandwidth: float
    """Best measured DRAM bandwidth, bytes/s (triad-style, read + write counted)."""
    caches: list[MeasuredCache] = []
    gemm_curves: dict[str, list[MeasuredGemmPoint]] = {}
    """dtype -> throughput against size: small GEMMs do not reach peak."""
    skinny_gemm_fp32: list[MeasuredSkinnyGemmPoint] = []
    """fp32 products with a dimension of 1 to 64 (a small batch through a linear layer), which the square
    curve does not describe."""
    outer_gemm_fp32: list[MeasuredSkinnyGemmPoint] = []
    """fp32 (other x small) @ (small x other) products, inner dimension 1 to 64, output cold (a linear
    layer's weight gradient at a small batch): bound by writing the output, not by the few-rows surface."""
    conv_efficiency: dict[str, float] = {}
    """shape kind ('3x3', '1x1', 'stem') -> measured FLOP/s over the fp32 GEMM curve at the implicit GEMM's
    equivalent square size; 'depthwise' -> measured FLOP/s over the fp32 peak (no GEMM to compare with);
    '<kind>:backward' -> the same for the two gradient passes together."""
    conv_efficiency_points: list[MeasuredConvPoint] = []
    """The shapes behind conv_efficiency, each kind's efficiency against its weight share: it falls as the
    weight's share grows (`roofline.measure.probes.conv`), and conv_efficiency is their geometric mean."""
    conv_fixed_s: dict[str, float] = {}
    """Same keys -> fixed seconds per call, fitted with the efficiency over the kind's shapes (t = t0 + ideal /
    efficiency): thread fork and join and library setup at realistic sizes, dispatch included."""
    host_to_device_bytes_per_s: dict[str, float] = {}
    """'pageable' / 'pinned' -> measured copy bandwidth."""
    kernel_bytes_per_s: dict[str, float] = {}
    """op kernel ('pool:max', 'norm:train', 'activation:gelu', ...) -> forward compulsory bytes per second
    on a cache-resident tensor: the kernel's own ceiling where it is slower than the memory feeding it."""
    page_fault_bytes_per_s: float | None = None
    """CPU: rate of first-touching freshly mapped memory (large tensors are mmap'd anew at every allocation)."""
    layout_conversion_bytes_per_s: dict[str, float] = {}
    """CPU: 'cache' / 'dram' -> activation bytes per second at which an NCHW convolution's input and output
    are converted to and from the library's channel-blocked layout, for tensors that fit in the last-level
    cache and for tensors that do not (NCHW time less channels-last time of one depthwise convolution)."""
    dispatch_s_by_kind: dict[str, float] = {}
    """op kernel or kind ('conv2d:depthwise', 'conv2d', 'gemm', ...) -> time of one call of a one-element layer
    of that kind (module call included): what every layer pays however small."""
    kernel_launch_s: float | None = None
    framework_dispatch_s: float | None = None
    sync_s: float | None = None
    environment: dict[str, str | int | float | None]
    """CPU/GPU model, driver, library versions, threads, date: a calibration applies only here."""


class _Device(_Strict):
    name: str
    aliases: list[str] = []
    vendor: str
    architecture: str
    released: int | None = None
    notes: str | None = None
    caches: list[Cache]
    memory: Memory
    overheads: Overheads
    measured: Measured | None = None


class CpuCompute(_Strict):
    cores: Figure
    """Physical cores per socket."""
    threads: Figure
    sockets: int = 1
    base_clock_hz: Figure
    boost_clock_hz: Figure
    """All-core turbo where published (the clock a GEMM sustains), else max single-core turbo."""
    simd_width_bits: Figure
    """Widest vector register (128 NEON/SSE, 256 AVX2, 512 AVX-512)."""
    fma_units_per_core: Figure
    """Vector FMA pipes per core at that width."""
    load_bytes_per_cycle: Figure
    """Bytes one core's L1 can feed to its vector units per cycle (load ports x width)."""
    matrix_extensions: list[str] = []
    """e.g. ['avx512_bf16', 'avx512_vnni', 'amx_bf16', 'amx_int8']."""
    matrix_flops_per_cycle_per_core: dict[str, Figure] = {}
    """dtype -> FLOP/cycle/core for matrix engines (AMX) or dot-product instructions (bf16/int8)."""


class CpuProfile(_Device):
    """A CPU socket (or several, see `compute.sockets`)."""

    kind: Literal["cpu"]
    compute: CpuCompute
    peak_flops_per_s: dict[str, Figure] = {}
    """Vendor-quoted peaks per dtype, where published; compared with the derived ones."""


class GpuCompute(_Strict):
    sm_count: Figure
    """Streaming multiprocessors (NVIDIA) / compute units (AMD)."""
    base_clock_hz: Figure
    boost_clock_hz: Figure
    fp32_lanes_per_sm: Figure
    """FP32 CUDA cores per SM (FMA lanes)."""
    fp64_lanes_per_sm: Figure | None = None
    vector_dtypes: list[str] = ["fp64", "fp32"]
    """Dtypes the CUDA cores compute natively (fp16 from Pascal GP100 on, bf16 from Ampere on)."""
    fp16_to_fp32_ratio: float = 1.0
    """Non-tensor fp16/bf16 throughput relative to fp32 (2 where packed half2 runs at double rate)."""
    bf16_to_fp32_ratio: float | None = None
    """Non-tensor bf16 throughput relative to fp32 where it differs from fp16's (A100: fp16 4x, bf16 2x);
    None means the same as `fp16_to_fp32_ratio`."""
    load_bytes_per_cycle: Figure
    """Bytes one SM's L1 can deliver per cycle."""


class GpuProfile(_Device):
    """One GPU as CUDA sees it (one die of a dual-die board such as K80)."""

    kind: Literal["gpu"]
    form_factor: str
    compute: GpuCompute
    tensor_cores: dict[str, TensorCore] = {}
    """dtype -> dense peak and alignment; absent dtypes run on the CUDA cores."""
    peak_flops_per_s: dict[str, Figure] = {}
    """Vendor-quoted non-tensor peaks (fp64, fp32, fp16 on CUDA cores), compared with derived."""
    host_link: HostLink
    interconnect: Interconnect | None = None
    tdp_watts: Figure | None = None


Profile = CpuProfile | GpuProfile

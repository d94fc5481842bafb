"""The hardware profile schema: every figure a cost model uses, each with where it came from.

Profiles are YAML files validated by these pydantic models with `extra="forbid"`, so a misspelt field is an
error that names the file and the field rather than a silently ignored number. A figure is a `Figure`:
`{value, source}` for a datasheet number (public URL), `{value, derived}` for one computed from others
(the formula), or `{value, source: "measured: how"}` for one measured on a real device.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

Dtype = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
"""A compute dtype a peak can be given for: a key of any per-dtype table (`fp128` is refused where declared)."""

DTYPES: tuple[str, ...] = get_args(Dtype)
"""Compute dtypes a peak can be given for, widest first."""

DTYPE_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
"""Storage bytes per element; tf32 is stored as fp32."""


Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=128)]
"""A device's name, an alias, a cache level, a memory type: short, non-empty text."""
Key = Annotated[str, StringConstraints(min_length=1, max_length=64)]
"""A key of a measured table (a kernel, a shape kind, an environment entry)."""
Text = Annotated[str, StringConstraints(max_length=4000)]
"""A source URL, a formula, a note: bounded so that a corrupted file cannot hold megabytes of it."""
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=1 << 40)]
"""Cores, sockets, lanes, links, line sizes, GEMM sizes: whole and at least one."""
MAX_TABLE = 256
"""Entries in any measured table or list (a calibration writes a few dozen)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Figure(_Strict):
    """One number with its provenance. Exactly one of `source` or `derived` must be given."""

    value: NonNegative
    """Finite and never negative; zero only where a field says so (a CPU's kernel launch and sync overheads),
    every other field is a `PositiveFigure` or a `CountFigure`."""
    source: Text | None = None
    """A public URL (vendor datasheet, whitepaper), or 'measured: <how>'."""
    derived: Text | None = None
    """The formula this figure follows from, in the profile's own field names."""
    note: Text | None = None
    """Why this figure may disagree with a derived one (e.g. boost vs sustained clock)."""

    @model_validator(mode="after")
    def _one_provenance(self) -> Figure:
        if (self.source is None) == (self.derived is None):
            raise ValueError("give exactly one of 'source' (a public URL or 'measured: how') or 'derived'")
        return self

    @property
    def provenance(self) -> str:
        """Where the number comes from, whichever of the two the profile gives: the source or the formula."""
        return self.source or self.derived or ""


def _positive(figure: Figure) -> Figure:
    if figure.value <= 0:
        raise ValueError(f"must be positive, got {figure.value}")
    return figure


def _count(figure: Figure) -> Figure:
    if figure.value < 1 or not float(figure.value).is_integer():
        raise ValueError(f"must be a whole number of at least 1, got {figure.value}")
    return figure


PositiveFigure = Annotated[Figure, AfterValidator(_positive)]
"""A size, rate, clock or bandwidth: zero would divide by zero downstream, and a negative one means nothing."""
CountFigure = Annotated[Figure, AfterValidator(_count)]
"""Cores, threads, SMs, lanes, bit widths, FMA pipes: whole numbers."""


class Cache(_Strict):
    """One level of the on-chip memory hierarchy."""

    level: Name
    """'L1', 'L2', 'L3' (a GPU's L1 is its combined L1/shared memory)."""
    size_bytes: PositiveFigure
    """Capacity of one instance."""
    shared_by: Count
    """How many cores (CPU) or SMs (GPU) share one instance; total = size x units / shared_by."""
    line_bytes: Count = 64
    bandwidth_bytes_per_cycle: PositiveFigure | None = None
    """Bytes per clock cycle one instance delivers (load bandwidth), where published."""


class Memory(_Strict):
    """Off-chip main memory (DRAM/HBM)."""

    type: Name
    """e.g. 'HBM2', 'GDDR6X', 'DDR4-3200'."""
    bus_width_bits: CountFigure
    """Total data bus width over all channels/stacks."""
    data_rate_per_s: PositiveFigure
    """Transfers per second per pin (e.g. 1.75e9 for HBM2 at 876 MHz DDR)."""
    capacity_bytes: PositiveFigure
    bandwidth_bytes_per_s: PositiveFigure
    """The vendor's quoted peak; compared with bus_width_bits / 8 x data_rate_per_s."""
    sustained_bandwidth_bytes_per_s: PositiveFigure | None = None
    """A published measurement of what a streaming kernel reaches on this device model (BabelStream's Triad,
    its figure of merit), source 'measured: ...' with where; DRAM refresh, read/write turnaround and page
    misses keep every memory below its pin rate. The cost model prices DRAM traffic at it when this machine
    has no calibration of its own."""


class HostLink(_Strict):
    """How the device talks to the host (GPUs), or to other sockets."""

    kind: Name
    """'PCIe', 'SXM (PCIe to host)', 'unified' ..."""
    generation: Count | None = None
    lanes: Count | None = None
    bandwidth_bytes_per_s: PositiveFigure
    """One direction."""


class Interconnect(_Strict):
    """Device-to-device links (NVLink, Infinity Fabric)."""

    kind: Name
    links: Count | None = None
    bandwidth_bytes_per_s: PositiveFigure
    """Total bidirectional bandwidth as the vendor quotes it."""


class TensorCore(_Strict):
    """Matrix-unit support for one dtype: its dense peak and the alignment it needs."""

    dense_flops_per_s: PositiveFigure
    sparse_flops_per_s: PositiveFigure | None = None
    """2:4 structured sparsity figure, only where the vendor labels it as such; never used as dense."""
    alignment_elements: Count
    """GEMM dimensions must be multiples of this for the tensor-core path (bytes = x dtype size)."""
    sustained_flops_per_s: PositiveFigure | None = None
    """A published measurement of a large, aligned GEMM on this device model (cuBLAS/cuBLASLt through its
    usual front end), source 'measured: ...': the clock a dense tensor load holds under the power limit and
    the library's main-loop efficiency, which no datasheet states. Applied like a calibrated peak when
    this machine has none."""
    fp16_accumulate_dense_flops_per_s: PositiveFigure | None = None
    """fp16 products accumulated in fp16 (cuBLAS's CUBLAS_COMPUTE_16F or `cublasHgemm`; kernels that say so):
    GeForce boards since Turing run them at twice the rate of fp32 accumulation, the one PyTorch uses (their
    whitepapers' 'with FP16 Accumulate'). Data-center and professional boards run both at one rate, the one
    figure their datasheets give, and leave this out. Only under the fp16 entry."""


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

    n: Count
    flops_per_s: Positive


class MeasuredSkinnyGemmPoint(_Strict):
    """Measured fp32 throughput of a (small x other) @ (other x other) product: the skinny-GEMM surface."""

    small: Count
    other: Count
    flops_per_s: Positive


class MeasuredGemvRowPoint(_Strict):
    """Bytes per second at which a one-row fp32 product streams a weight from DRAM, by how the weight is stored
    ('out_in': nn.Linear's (out, in), rows of `in`; 'in_out': (in, out), rows of `out`) and its row length."""

    layout: Literal["out_in", "in_out"]
    row_elements: Count
    bytes_per_s: Positive


class MeasuredConvPoint(_Strict):
    """One calibration shape's convolution efficiency (see Measured.conv_efficiency) and the weight's share of
    the elements its forward pass reads and writes, the axis along which the cost model fits a kind's trend."""

    key: Key
    weight_share: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    efficiency: Positive


class MeasuredCache(_Strict):
    level: Name
    bandwidth_bytes_per_s: Positive
    working_set_bytes: Count


class Measured(_Strict):
    """Ceilings measured by `roofline calibrate`, and where and how they were measured."""

    peak_flops: dict[Dtype, Positive]
    """dtype -> best measured FLOP/s; fp32 is always measured (see `_fp32_measured`)."""
    memory_bandwidth: Positive
    """Best measured DRAM bandwidth, bytes/s (triad-style, read + write counted)."""
    caches: Annotated[list[MeasuredCache], Field(max_length=8)] = []
    gemm_curves: dict[Dtype, Annotated[list[MeasuredGemmPoint], Field(max_length=MAX_TABLE)]] = {}
    """dtype -> throughput against size: small GEMMs do not reach peak."""
    skinny_gemm_fp32: Annotated[list[MeasuredSkinnyGemmPoint], Field(max_length=MAX_TABLE)] = []
    """fp32 products with a dimension of 1 to 64 (a small batch through a linear layer), which the square
    curve does not describe."""
    gemv_rows_fp32: Annotated[list[MeasuredGemvRowPoint], Field(max_length=MAX_TABLE)] = []
    """One-row products from DRAM by weight layout and row length: a GEMV pays per row of its weight, so a
    wide weight of short rows (an LM head) streams slower than the square surface's (`gemm.row_sweep`)."""
    outer_gemm_fp32: Annotated[list[MeasuredSkinnyGemmPoint], Field(max_length=MAX_TABLE)] = []
    """fp32 (other x small) @ (small x other) products, inner dimension 1 to 64, output cold (a linear
    layer's weight gradient at a small batch): bound by writing the output, not by the few-rows surface."""
    conv_efficiency: Annotated[dict[Key, Positive], Field(max_length=MAX_TABLE)] = {}
    """shape kind ('3x3', '1x1', 'stem') -> measured FLOP/s over the fp32 GEMM curve at the implicit GEMM's
    equivalent square size; 'depthwise' -> measured FLOP/s over the fp32 peak (no GEMM to compare with);
    '<kind>:backward' -> the same for the two gradient passes together."""
    conv_efficiency_points: Annotated[list[MeasuredConvPoint], Field(max_length=MAX_TABLE)] = []
    """The shapes behind conv_efficiency, each kind's efficiency against its weight share: it falls as the
    weight's share grows (`roofline.measure.probes.conv`), and conv_efficiency is their geometric mean."""
    conv_fixed_s: Annotated[dict[Key, Positive], Field(max_length=MAX_TABLE)] = {}
    """Same keys -> fixed seconds per call, fitted with the efficiency over the kind's shapes (t = t0 + ideal /
    efficiency): thread fork and join and library setup at realistic sizes, dispatch included."""
    conv_fixed_warm_s: Annotated[dict[Key, Positive], Field(max_length=MAX_TABLE)] = {}
    """Same keys -> fixed seconds per call when the same convolution runs back to back (its code and the
    library's paths warm), as an op timed alone in a loop runs; conv_fixed_s is a layer's, called in rotation
    with other kinds as a model calls it. Empty in profiles calibrated before it was recorded."""
    host_to_device_bytes_per_s: dict[Literal["pageable", "pinned"], Positive] = {}
    """'pageable' / 'pinned' -> measured copy bandwidth."""
    kernel_bytes_per_s: Annotated[dict[Key, Positive], Field(max_length=MAX_TABLE)] = {}
    """op kernel ('pool:max', 'norm:train', 'activation:gelu', ...) -> forward compulsory bytes per second
    on a cache-resident tensor: the kernel's own ceiling where it is slower than the memory feeding it."""
    page_fault_bytes_per_s: Positive | None = None
    """CPU: rate of first-touching freshly mapped memory (large tensors are mmap'd anew at every allocation)."""
    layout_conversion_bytes_per_s: dict[Literal["cache", "dram"], Positive] = {}
    """CPU: 'cache' / 'dram' -> activation bytes per second at which an NCHW convolution's input and output
    are converted to and from the library's channel-blocked layout, for tensors that fit in the last-level
    cache and for tensors that do not (NCHW time less channels-last time of one depthwise convolution)."""
    dispatch_s_by_kind: Annotated[dict[Key, Positive], Field(max_length=MAX_TABLE)] = {}
    """op kernel or kind ('conv2d:depthwise', 'conv2d', 'gemm', ...) -> time of one call of a one-element layer
    of that kind (module call included): what every layer pays however small."""
    kernel_launch_s: NonNegative | None = None
    framework_dispatch_s: NonNegative | None = None
    sync_s: NonNegative | None = None
    unsteady: Annotated[dict[Text, NonNegative], Field(max_length=MAX_TABLE)] = {}
    """Probe label -> how far apart its rounds' medians lay ((slowest - fastest) / fastest), for the figures
    that could not be measured within `roofline.measure.rounds.STEADY_LIMIT`: each keeps the upper median of
    its rounds (`roofline.measure.timing.Measurement.steadied`)."""
    environment: Annotated[dict[Key, Text | int | float | None], Field(max_length=MAX_TABLE)]
    """CPU/GPU model, driver, library versions, threads, date: a calibration applies only here."""

    @model_validator(mode="after")
    def _fp32_measured(self) -> Measured:
        if "fp32" not in self.peak_flops:
            raise ValueError("peak_flops must hold 'fp32', which every `roofline calibrate` measures; a section "
                             "without it was not written by a calibration")
        return self


class _Device(_Strict):
    name: Name
    aliases: Annotated[list[Name], Field(max_length=16)] = []
    vendor: Name
    architecture: Name
    released: Annotated[int, Field(ge=1940, le=2200)] | None = None
    notes: Text | None = None
    caches: Annotated[list[Cache], Field(min_length=1, max_length=8)]
    memory: Memory
    overheads: Overheads
    measured: Measured | None = None


class CpuCompute(_Strict):
    cores: CountFigure
    """Physical cores per socket."""
    threads: CountFigure
    sockets: Count = 1
    base_clock_hz: PositiveFigure
    boost_clock_hz: PositiveFigure
    """All-core turbo where published (the clock a GEMM sustains), else max single-core turbo."""
    simd_width_bits: CountFigure
    """Widest vector register (128 NEON/SSE, 256 AVX2, 512 AVX-512)."""
    fma_units_per_core: CountFigure
    """Vector FMA pipes per core at that width."""
    load_bytes_per_cycle: PositiveFigure
    """Bytes one core's L1 can feed to its vector units per cycle (load ports x width)."""
    matrix_extensions: Annotated[list[Key], Field(max_length=64)] = []
    """e.g. ['avx512_bf16', 'avx512_vnni', 'amx_bf16', 'amx_int8']."""
    matrix_flops_per_cycle_per_core: dict[Dtype, PositiveFigure] = {}
    """dtype -> FLOP/cycle/core for matrix engines (AMX) or dot-product instructions (bf16/int8)."""


class CpuProfile(_Device):
    """A CPU socket (or several, see `compute.sockets`)."""

    kind: Literal["cpu"]
    compute: CpuCompute
    peak_flops_per_s: dict[Dtype, PositiveFigure] = {}
    """Vendor-quoted peaks per dtype, where published; compared with the derived ones."""


class GpuCompute(_Strict):
    sm_count: CountFigure
    """Streaming multiprocessors (NVIDIA) / compute units (AMD)."""
    base_clock_hz: PositiveFigure
    boost_clock_hz: PositiveFigure
    fp32_lanes_per_sm: CountFigure
    """FP32 CUDA cores per SM (FMA lanes)."""
    fp64_lanes_per_sm: CountFigure | None = None
    vector_dtypes: Annotated[list[Dtype], Field(min_length=1, max_length=len(DTYPES))] = ["fp64", "fp32"]
    """Dtypes the CUDA cores compute natively (fp16 from Pascal GP100 on, bf16 from Ampere on)."""
    fp16_to_fp32_ratio: Positive = 1.0
    """Non-tensor fp16/bf16 throughput relative to fp32 (2 where packed half2 runs at double rate)."""
    bf16_to_fp32_ratio: Positive | None = None
    """Non-tensor bf16 throughput relative to fp32 where it differs from fp16's (A100: fp16 4x, bf16 2x);
    None means the same as `fp16_to_fp32_ratio`."""
    load_bytes_per_cycle: PositiveFigure
    """Bytes one SM's L1 can deliver per cycle."""


class GpuProfile(_Device):
    """One GPU as CUDA sees it (one die of a dual-die board such as K80)."""

    kind: Literal["gpu"]
    form_factor: Name
    compute: GpuCompute
    tensor_cores: dict[Dtype, TensorCore] = {}
    """dtype -> dense peak and alignment; absent dtypes run on the CUDA cores."""
    peak_flops_per_s: dict[Dtype, PositiveFigure] = {}
    """Vendor-quoted non-tensor peaks (fp64, fp32, fp16 on CUDA cores), compared with derived."""
    sustained_flops_per_s: dict[Dtype, PositiveFigure] = {}
    """dtype -> a published measurement of a large product on the CUDA cores (IEEE fp32, no tensor cores),
    source 'measured: ...': like `TensorCore.sustained_flops_per_s`, the clock the board holds under its power
    limit and the library's efficiency on this chip (GA102 and AD102 issue their second fp32 datapath only
    where no integer work competes for it, so their sgemm reaches 60-70% of the datasheet's doubled peak,
    where GV100 reaches 90%). Applied like a calibrated peak when this machine has none."""
    host_link: HostLink
    interconnect: Interconnect | None = None
    tdp_watts: PositiveFigure | None = None


Profile = CpuProfile | GpuProfile

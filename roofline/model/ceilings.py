"""The ceilings a cost model applies for one device and precision, each tagged datasheet or measured.

A profile carries datasheet figures and, after `roofline calibrate`, measured ones. This module decides,
once, which number each mechanism uses, so the cost model never reaches into a profile and every figure
it applies can be shown with its provenance. Measured values win: a datasheet peak is a bound the
hardware cannot beat, a measured one is what the software stack on this machine actually reaches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from roofline.errors import RooflineError
from roofline.hardware.derived import matrix_peak, memory_levels, ridge_point, vector_peak
from roofline.hardware.runtime import EAGER_CUDA, load_runtime
from roofline.hardware.schema import Figure, GpuProfile, MeasuredConvPoint, Profile
from roofline.model.cpu_runtime.runtime import CpuRuntime, recorded_runtime
from roofline.model.host_dma import copy_rates
from roofline.workload.precision import Precision

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
    vector_lanes_fp32: int = 0
    """CPU: fp32 lanes of one SIMD register (simd_width_bits / 32): oneDNN blocks channels by it (aBcd8b on
    AVX2, aBcd16b on AVX-512), so its layout copies pad channels to a multiple of it. 0 on a GPU."""
    sm_cycles_per_s: float = 0.0
    """GPU: SMs x boost clock (`sm_cycles_per_s`), what the runtime profile's kernel rates scale by on the SM side;
    0 on a CPU."""
    fp32_lanes_per_sm: int = 0
    """GPU: fp32 lanes per SM, what an instruction-bound kernel's rate scales by beside the SM-cycles."""
    architecture: str = ""
    """GPU: the profile's architecture family (`Hopper`, `Ampere`, ...): whether the runtime profile's kernel
    rates carry to it by memory and issue time combined (`runtime_figures`); empty on a CPU."""
    threads: int = 1
    """Host threads the framework computes with (the calibration's torch thread count, else the cores): PyTorch
    picks some CPU kernels by it (`roofline.model.cpu_runtime.backend.cpu_conv_backend`)."""
    gemm_curve: tuple[tuple[int, float], ...] = ()
    """Measured (n, FLOP/s) for square GEMMs at this dtype: small products do not reach peak."""
    gemm_fit: GemmFit | None = None
    """Hockney's model fitted to `gemm_curve`: what the cost model applies to GEMM-like ops when measured."""
    skinny_gemm: tuple[tuple[int, int, float], ...] = ()
    """Measured (small, other, FLOP/s) of (small x other) @ (other x other) products at this dtype (fp32)."""
    outer_gemm: tuple[tuple[int, int, float], ...] = ()
    """Measured (inner, other, FLOP/s) of (other x inner) @ (inner x other) products into a cold output (fp32)."""
    gemv_rows: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    """Weight layout ('out_in', 'in_out') -> measured (row elements, bytes/s) of one-row fp32 products streaming a
    weight from DRAM (`Measured.gemv_rows_fp32`), row lengths ascending."""
    conv_efficiency: dict[str, float] = field(default_factory=dict)
    conv_efficiency_fits: dict[str, ConvEfficiencyFit] = field(default_factory=dict)
    """Efficiency key -> its efficiency against the weight share, fitted to the calibration's shapes."""
    conv_fixed_s: dict[str, float] = field(default_factory=dict)
    """Measured fixed seconds per convolution call by efficiency key, dispatch included (see Measured)."""
    conv_fixed_warm_s: dict[str, float] = field(default_factory=dict)
    """The same, called back to back (an op alone in a loop): `CostContext.warm_calls` uses it."""
    kernel_bytes_per_s: dict[str, float] = field(default_factory=dict)
    """Measured forward rate of non-GEMM kernels by `op.kernel`: a ceiling below the memory level's."""
    tf32_across_share: float = 1.0
    """GPU: the share of its priced rate a TF32 product with both operands stored across its reduction runs at
    (the runtime profile's measurement; 1 without a runtime)."""
    levels: tuple[Level, ...] = ()
    dispatch_s: float = 0.0
    dispatch_s_by_kind: dict[str, float] = field(default_factory=dict)
    """Measured host time per call by `op.kernel` or `op.kind`; `dispatch_s` for kinds not measured."""
    page_fault_bytes_per_s: float | None = None
    """CPU: measured first-touch rate of fresh pages, paid by what the allocator takes anew
    (`roofline.model.cpu_runtime.allocator`)."""
    cpu_runtime: CpuRuntime | None = None
    """CPU: the C library and page size the calibration recorded, which switch the heap replay on."""
    layout_conversion_bytes_per_s: dict[str, float] = field(default_factory=dict)
    """CPU: measured NCHW <-> blocked conversion rate, 'cache' and 'dram' (see Measured)."""
    launch_s: float = 0.0
    streaming_fixed_s: float = 0.0
    """GPU: the fixed time of a matrix product whose weight comes from DRAM, added to its weight's streaming time
    (`roofline.model.gemm_cost.streams_weight`; the runtime profile's measurement of cuBLAS)."""
    streaming_share: float = 1.0
    """GPU: the share of the DRAM level's rate at which such a product streams its weight."""
    sync_s: float = 0.0
    host_link_bytes_per_s: float | None = None
    host_link_pageable_bytes_per_s: float | None = None
    provenance: dict[str, str] = field(default_factory=dict)
    """figure -> 'datasheet' | 'derived' | 'measured' (this machine) | 'published measurement' (the device
    model, measured elsewhere, with its source in the profile)."""
    datasheet: dict[str, float] = field(default_factory=dict)
    """The vendor's figures the applied ones replace ('matrix_flops_per_s', 'dram_bandwidth'), for display."""

    @property
    def dram(self) -> Level:
        return self.levels[-1]

    @cached_property
    def l2(self) -> Level | None:
        """The level named L2, looked up once: the cost model asks for it in every op's pass."""
        return next((lv for lv in self.levels if lv.name == "L2"), None)

    @property
    def peak_flops_per_s(self) -> float:
        """The compute dtype's best peak: matrix units where the device has them, else vector units."""
        return self.matrix_flops_per_s or self.vector_flops_per_s

    @property
    def ridge_point(self) -> float:
        """FLOP per DRAM byte at which the step's ops stop being memory-bound (`derived.ridge_point`)."""
        return ridge_point(self.peak_flops_per_s, self.dram.bandwidth_bytes_per_s)

    @property
    def tiles(self) -> tuple[tuple[int, int], ...]:
        return GEMM_TILES if self.is_gpu else CPU_GEMM_TILES

    def conv_efficiency_at(self, key: str, weight_share: float) -> float:
        """The measured efficiency of convolution kind `key` at this weight share (`ConvEfficiencyFit`); the
        kind's single figure where no shapes were recorded (a profile calibrated before they were)."""
        fit = self.conv_efficiency_fits.get(key)
        return fit.at(weight_share) if fit else self.conv_efficiency[key]


def compute_dtype_for(precision: Precision, profile: Profile) -> str | None:
    """The dtype the math runs in, or None when the device cannot run this precision.

    `amp` runs fp16 on a GPU, tensor cores or not (CUDA autocast's default dtype is torch.float16:
    https://docs.pytorch.org/docs/stable/amp.html), and bf16 on a CPU (CPU autocast's default is bfloat16);
    `amp-bf16` runs bf16 everywhere.
    """
    dtype = precision.compute_dtype
    if precision.name == "amp":
        dtype = "fp16" if isinstance(profile, GpuProfile) else "bf16"
    if matrix_peak(profile, dtype) is not None or vector_peak(profile, dtype) is not None:
        return dtype
    return None


@dataclass(frozen=True)
class GemmFit:
    """Hockney's model of a measured GEMM curve: a call costs t0 + 2mnk / r(s), with the rate
    r(s) = r_inf x s / (s + n_half) growing with the product's operand reuse s (`GemmView.equivalent_n`).

    t0 is the fixed cost of a call (dispatch, thread wake-up); n_half is the size at which half of r_inf is
    reached (Hockney and Jesshope, Parallel Computers 2). Fitted to the square-GEMM curve, it predicts a skinny
    product from its reuse without mistaking the small squares' fixed cost for a low rate.
    """

    t0_s: float
    r_inf_flops_per_s: float
    n_half: float
    n_min: float = 1.0
    """Smallest measured size. Below it (a matrix-vector product: reuse 3 at m = 1) the library switches
    to streaming kernels the curve never saw; the rate is held at n_min's and the memory roofline, which
    the cost model applies beside it, bounds such products."""

    def rate(self, equivalent_n: float) -> float:
        """FLOP/s of the work alone (t0 excluded), for comparison with other ceilings."""
        n = max(equivalent_n, self.n_min)
        return self.r_inf_flops_per_s * n / (n + self.n_half)


def fit_gemm_curve(curve: tuple[tuple[int, float], ...]) -> GemmFit | None:
    """Least squares of t(n) = t0 + (2n^3 + 2 n_half n^2) / r_inf over the curve's points, each weighted by
    1 / t(n) so the small and large sizes count alike; None with fewer than three points or an unphysical
    fit (a negative term)."""
    if len(curve) < 3:
        return None
    rows = [(1.0, 2.0 * n**3, 2.0 * n**2, 2.0 * n**3 / rate) for n, rate in curve]
    rows = [(a / t, b / t, c / t, 1.0) for a, b, c, t in rows]
    normal = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    rhs = [sum(r[i] * r[3] for r in rows) for i in range(3)]
    solution = _solve3(normal, rhs)
    if solution is None or min(solution) < 0 or solution[1] == 0:
        return None
    t0, inverse_rate, half_over_rate = solution
    return GemmFit(t0, 1 / inverse_rate, half_over_rate / inverse_rate, float(min(n for n, _ in curve)))


def _solve3(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting for a 3 x 3 system (no numpy on the fast paths)."""
    m = [[*row, value] for row, value in zip(matrix, rhs, strict=True)]
    for col in range(3):
        pivot = max(range(col, 3), key=lambda r: abs(m[r][col]))
        if m[pivot][col] == 0:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, 3):
            factor = m[r][col] / m[col][col]
            m[r] = [a - factor * b for a, b in zip(m[r], m[col], strict=True)]
    out = [0.0, 0.0, 0.0]
    for r in (2, 1, 0):
        out[r] = (m[r][3] - sum(m[r][c] * out[c] for c in range(r + 1, 3))) / m[r][r]
    return out


def _log_bracket(values: list[int], x: float) -> tuple[int, int, float]:
    """The measured values around `x` (held at the ends) and x's position between them in log space."""
    x = min(max(x, values[0]), values[-1])
    hi = next(i for i, v in enumerate(values) if v >= x)
    lo = max(hi - 1, 0)
    if values[hi] == values[lo]:
        return values[lo], values[hi], 0.0
    return values[lo], values[hi], math.log(x / values[lo]) / math.log(values[hi] / values[lo])


def row_rate(points: tuple[tuple[int, float], ...], row_elements: float) -> float:
    """Bytes/s of a one-row product whose weight rows hold `row_elements`, interpolated in log(row) over the
    measured points (`Ceilings.gemv_rows`) and held at their ends."""
    rate = dict(points)
    r0, r1, f = _log_bracket([row for row, _ in points], row_elements)
    if f in (0.0, 1.0):
        return rate[r0] if f == 0.0 else rate[r1]
    return math.exp((1 - f) * math.log(rate[r0]) + f * math.log(rate[r1]))


def skinny_rate(surface: tuple[tuple[int, int, float], ...], small: float, other: float) -> float | None:
    """FLOP/s of a product whose smallest dimension is `small` and whose other two have geometric mean
    `other`, interpolated bilinearly in (log small, log other) over the measured surface and held at its
    edges; None when `small` is beyond the surface (the square curve applies there) or nothing was measured."""
    smalls = sorted({s for s, _, _ in surface})
    others = sorted({o for _, o, _ in surface})
    if not smalls or small > smalls[-1]:
        return None
    rate = {(s, o): r for s, o, r in surface}
    s0, s1, fs = _log_bracket(smalls, small)
    o0, o1, fo = _log_bracket(others, other)
    if any(key not in rate for key in ((s0, o0), (s0, o1), (s1, o0), (s1, o1))):
        return None
    log_rate = ((1 - fs) * (1 - fo) * math.log(rate[s0, o0]) + (1 - fs) * fo * math.log(rate[s0, o1])
                + fs * (1 - fo) * math.log(rate[s1, o0]) + fs * fo * math.log(rate[s1, o1]))
    return math.exp(log_rate)


MIN_SHARE_SPAN = 0.1
"""A kind whose calibration shapes span less weight share than this gets no slope: its shapes differ in other
ways (MobileNetV3's narrow channels, strides), and a slope fitted to them would be one shape's noise."""


@dataclass(frozen=True)
class ConvEfficiencyFit:
    """log(efficiency) = log_intercept + slope x weight share, least squares over a kind's calibration shapes,
    held at the ends of the measured shares: one trend and not shape-by-shape interpolation, so that the
    several activation-heavy shapes of a kind average out rather than each deciding its neighbourhood."""

    lo_share: float
    hi_share: float
    log_intercept: float
    slope: float

    def at(self, weight_share: float) -> float:
        share = min(max(weight_share, self.lo_share), self.hi_share)
        return math.exp(self.log_intercept + self.slope * share)


def fit_conv_efficiencies(points: list[MeasuredConvPoint]) -> dict[str, ConvEfficiencyFit]:
    """Efficiency key -> `ConvEfficiencyFit` of its measured shapes."""
    by_key: dict[str, list[tuple[float, float]]] = {}
    for p in points:
        by_key.setdefault(p.key, []).append((p.weight_share, math.log(p.efficiency)))
    fits = {}
    for key, pts in by_key.items():
        shares = [x for x, _ in pts]
        lo, hi = min(shares), max(shares)
        mean_x, mean_y = sum(shares) / len(pts), sum(y for _, y in pts) / len(pts)
        slope = 0.0
        if hi - lo >= MIN_SHARE_SPAN:
            slope = (sum((x - mean_x) * (y - mean_y) for x, y in pts)
                     / sum((x - mean_x) ** 2 for x, _ in pts))
        fits[key] = ConvEfficiencyFit(lo, hi, mean_y - slope * mean_x, slope)
    return fits


def monotone_curve(points: list[tuple[int, float]]) -> tuple[tuple[int, float], ...]:
    """The measured GEMM curve as a running maximum over size: a bigger square product has at least the
    reuse of a smaller one, so a dip is interference on a shared machine (a descheduled thread), not the
    hardware; without this, one disturbed sample near the top would cap every large GEMM."""
    best = 0.0
    out = []
    for n, rate in sorted(points):
        best = max(best, rate)
        out.append((n, best))
    return tuple(out)


SIXTEEN_BIT_TENSOR_DTYPES = ("bf16", "fp16")


def _published_tensor_rate(profile: GpuProfile, dtype: str) -> tuple[float, str] | None:
    """(FLOP/s, provenance) of the profile's published measurement for `dtype`, or for another dtype of the same
    dense peak (fp16 and bf16 run on the same tensor-core datapath at the same rate since Ampere); None."""
    cores = profile.tensor_cores
    if cores[dtype].sustained_flops_per_s is not None:
        return cores[dtype].sustained_flops_per_s.value, "published measurement"
    dense = cores[dtype].dense_flops_per_s.value
    for other in cores.values():
        if other.sustained_flops_per_s is not None and other.dense_flops_per_s.value == dense:
            return other.sustained_flops_per_s.value, "published measurement (same peak, other dtype)"
    return None


@dataclass(frozen=True)
class BoardShare:
    """The share of its dense peak that a board's 16-bit tensor-core products sustain (`sixteen_bit_share`)."""

    share: float
    dtype: str
    measured: bool
    """From a published figure of this board; else the runtime's library share for the 16-bit dtype."""


def sixteen_bit_share(profile: GpuProfile, runtime: str | None = EAGER_CUDA) -> BoardShare | None:
    """What the board's 16-bit tensor-core products sustain of their peak, at most 1 (a GeForce board's 16-bit
    figure can exceed the fp32-accumulate peak its profile lists); None on a board without 16-bit tensor cores or
    any figure for them. Every tensor-core product of a board runs on the same tensor cores under the same power
    limit and clocks, which bound what any product sustains, so another dtype with no figure of its own takes this
    share (`sustained_matrix_rate`) rather than its datasheet peak or another board's share. The boards with both
    figures published bear it out:
    - 8-bit: cuBLASLt fp8 at 16384^3 on Azure's ND H100 v5 and ND H200 v5 (hardware_profiles/gpu/h100-sxm5-80gb.yaml,
      h200-sxm-141gb.yaml) sustains 0.696 and 0.690 of its peak where bf16 sustains 0.733 and 0.734; before, an L40S
      priced fp8 at 100% of its peak and bf16 at its measured 73%;
    - TF32: on the A100 PCIe 40GB, A10G, A40, H100 PCIe, L4 and RTX 3080 the published TF32 share is 0.62, 0.98,
      0.80, 0.64, 0.43 and 1.07 where the 16-bit one is 0.69, 0.95, 0.74, 0.65, 0.49 and 1.00: the 16-bit share
      times the library's TF32/16-bit ratio (0.967) misses them by 1-11% (median 8.5%), the H100's library share
      alone (0.71) by 11-66% (median 20%)."""
    cores = profile.tensor_cores
    for dtype in SIXTEEN_BIT_TENSOR_DTYPES:
        if dtype in cores:
            published = _published_tensor_rate(profile, dtype)
            if published is not None:
                return BoardShare(min(1.0, published[0] / cores[dtype].dense_flops_per_s.value), dtype, True)
            library = load_runtime(runtime).gemm_sustained_share.by_dtype if runtime else {}
            return BoardShare(library[dtype], dtype, False) if dtype in library else None
    return None


def sustained_matrix_rate(profile: GpuProfile, dtype: str, runtime: str | None = EAGER_CUDA) -> tuple[float, str]:
    """(FLOP/s, provenance) a large tensor-core GEMM sustains in `dtype` on a GPU without a calibration: a published
    measurement (`_published_tensor_rate`); else the share its board's 16-bit products sustain
    (`sixteen_bit_share`), where the board has a 16-bit figure of its own or the runtime measured no share for the
    dtype (8-bit), times the runtime library's ratio between the two dtypes where it measured both (TF32); else the
    datasheet peak times the share cuBLAS was measured to sustain on the runtime profile's GPU (the datasheet peak
    itself when no runtime is named)."""
    published = _published_tensor_rate(profile, dtype)
    if published is not None:
        return published
    dense = profile.tensor_cores[dtype].dense_flops_per_s.value
    library = load_runtime(runtime).gemm_sustained_share.by_dtype if runtime else {}
    board = sixteen_bit_share(profile, runtime) if dtype not in SIXTEEN_BIT_TENSOR_DTYPES else None
    if board is not None and (board.measured or dtype not in library):
        where = "this board's published" if board.measured else "the measured library's"
        if dtype in library and board.dtype in library:
            return (dense * board.share * library[dtype] / library[board.dtype],
                    f"datasheet x {where} {board.dtype} share x the library's {dtype}/{board.dtype} ratio")
        return dense * board.share, f"datasheet x {where} {board.dtype} share"
    share = library.get(dtype)
    if share is None:
        return dense, "datasheet"
    return dense * share, "datasheet x measured library share"


def _sustained_provenance(figure: Figure) -> str:
    """How a profile's sustained figure was obtained: measured on this board, or derived from a measurement of a
    sibling board of the same chip or architecture (its share of that board's datasheet figure, applied to this
    one's)."""
    return "published measurement" if figure.source else "derived from a sibling board's measurement"


def _cuda_core_rate(profile: GpuProfile, dtype: str, datasheet: float,
                    runtime: str | None) -> tuple[float, str] | None:
    """(FLOP/s, provenance) of a GPU's CUDA-core path in `dtype` where no calibration measured it: the profile's
    published sustained figure, else (no calibration at all) the datasheet times the runtime profile's measured
    share; None where neither applies (the datasheet stands)."""
    if dtype in profile.sustained_flops_per_s:
        figure = profile.sustained_flops_per_s[dtype]
        return figure.value, _sustained_provenance(figure)
    if not profile.measured and runtime:
        return datasheet * load_runtime(runtime).gemm_sustained_share.by_dtype.get(dtype, 1.0), \
            "derived x measured library share"
    return None


def _fp32_cuda_core_rate(profile: GpuProfile, datasheet: float, runtime: str | None) -> tuple[float, str]:
    """(FLOP/s, provenance) of the CUDA cores' fp32 path beside TF32 tensor cores: the rate an fp32 step's products
    get on the same board, so a TF32 step that falls back to the CUDA cores gets it too."""
    measured = profile.measured
    if measured and "fp32" in measured.peak_flops:
        return measured.peak_flops["fp32"], "measured"
    return _cuda_core_rate(profile, "fp32", datasheet, runtime) or (datasheet, "derived")


HALF_ON_FP32_LANES = ("fp16", "bf16")
"""16-bit dtypes whose products PyTorch computes in float where no tensor core takes them: a half GEMM is
cublasGemmEx with a float compute type (`at::cuda::blas::gemm<at::Half>` takes float alpha and beta,
`at::opmath_type`), a half convolution a float-math cuDNN descriptor (`ConvolutionDescriptor::set`,
aten/src/ATen/cudnn/Descriptors.h). On a GPU without tensor cores they run on the fp32 lanes, whatever the
chip's half2 rate (a P100's is twice its fp32 one): the 16-bit bytes are halved, the arithmetic is not."""


def sm_cycles_per_s(profile: GpuProfile) -> float:
    """SMs x boost clock: the cycles per second a GPU's kernels issue in, what a rate measured per SM-cycle
    scales by."""
    return profile.compute.sm_count.value * profile.compute.boost_clock_hz.value


RUNTIME_PROVENANCE = "runtime profile"
"""How a figure taken from a framework runtime profile is tagged; the tag goes on to name the machine it was
measured on, since host costs follow that machine's CPU."""


def runtime_provenance(runtime: str) -> str:
    """The provenance of a runtime profile's figure: the profile and the machine it was measured on."""
    return f"{RUNTIME_PROVENANCE} (measured on {load_runtime(runtime).measured_on})"


KERNEL_OVERLAP_EXPONENT = 2.0
"""How a non-GEMM kernel's memory time and its instruction time combine: time = (memory^p + issue^p)^(1/p).
p = 1 would add them (no overlap), p -> infinity take the larger (full overlap, a sharp roofline). Fitted on
an H100 and an H200, which have the same SMs at the same clock and 1.42x apart in copy rate, so a kernel's
issue time is the same on both and only its memory time moves. H100 rates carried to the H200 give signed median
errors of +7.0 / +3.1 / +0.5 / -2.7 / -4.4% at p = 1 / 1.5 / 2 / 2.5 / 4 and -8.7% with the sharp bound over 13
kernels timed alone (BatchNorm, LayerNorm, softmax, dropout, max and average pooling, GELU below 90% of the copy
rate), and +7.1 / +3.0 / +0.9 / -0.5 / -5.6% and -7.7% over the 8 BatchNorm and pooling ops of ResNet-50's
training steps (benchmarks/kernel_carry.py -> benchmarks/results/kernel-carry.md)."""


def carried_kernel_rate(share: float, dram: float, issue_scale: float,
                        exponent: float = KERNEL_OVERLAP_EXPONENT) -> float:
    """Bytes per second of a kernel on another GPU, from its rate on the reference machine as a `share` of that
    machine's copy rate: the kernel moves its bytes at this GPU's DRAM rate (`dram`), and the rest of its
    reference time, which the reference machine's copy rate does not explain, is issue time (instructions,
    latency its warps do not hide), scaled by this GPU's SM-cycles (or fp32 lane-cycles) against the
    reference's: `issue_scale` is that ratio times the reference copy rate. The two combine by
    `exponent` (`KERNEL_OVERLAP_EXPONENT`; infinity takes the larger); on the reference machine the formula gives
    back the measured rate."""
    if math.isinf(exponent):
        return min(dram, share * issue_scale) if share < 1.0 else dram
    issue = max(share ** -exponent - 1.0, 0.0) ** (1.0 / exponent) / issue_scale
    return ((1.0 / dram) ** exponent + issue ** exponent) ** (-1.0 / exponent)


def architecture_family(profile: Profile) -> str:
    """A GPU profile's architecture family, the first word of its `architecture` ('Hopper (GH100)' -> 'Hopper');
    empty for a CPU."""
    return profile.architecture.split()[0] if isinstance(profile, GpuProfile) else ""


ISSUE_KIN_ARCHITECTURES = ("Ampere", "Ada", "Hopper", "Blackwell")
"""Architectures whose SMs issue as the reference's do when they have its fp32 lanes: from Ampere's GA10x chips on,
an SM is four partitions of 32 fp32 lanes with the second fp32 datapath (128 lanes), so a kernel's issue time
scales by SM-cycles between them (GA102, Ada, Hopper, Blackwell; GA100, at 64 lanes, is left out). Chosen in the
twenty-fourth session after the record's errors on those boards had been seen (Ada boards priced 15% too slow at
the median under the lower-of carry); the sixteenth steps set, gathered after it was committed to test it, could
not decide (BERT at batch 1 on an A10G: 12 of 14 rows on the host's floor, 32.0% under either carry)."""


def runtime_figures(runtime: str, levels: tuple[Level, ...], element_bytes: int, sm_cycles_per_s: float,
                    fp32_lanes_per_sm: int, architecture: str) -> tuple[dict[str, float], dict[str, float]]:
    """(host seconds per layer call by kind, kernel streaming rates by kernel key) of eager PyTorch on a GPU
    that has no calibration of its own, from the measured runtime profile (`roofline.hardware.runtime`): the
    host costs as measured, and each kernel's rate carried from the machine it was measured on.

    On a GPU of the reference machine's architecture (`KernelRates.reference_architecture`, Hopper), or of an
    architecture whose SMs issue as its do (`ISSUE_KIN_ARCHITECTURES` with the reference's fp32 lanes), the kernel
    moves its bytes at this GPU's DRAM level and spends the rest of its reference time issuing, scaled by SMs x
    clock (`carried_kernel_rate`). That is what an H200 measured: the H100's 132 SMs at the same clock and 1.42x
    its copy rate, on which max pooling and LayerNorm ran at the H100's rate, BatchNorm in training over fp16 5%
    faster, copy-rate kernels 40% faster. On another architecture the kernel is taken to reach no larger share of
    the copy rate than it reached on the reference, nor more per SM-cycle: the lower of its share times this
    GPU's DRAM level and its share times the SM-cycles scaled to the reference copy rate. Carrying the memory
    term at the full copy rate there too made a held-out set of Turing boards (benchmarks/LOG.md, twenty-third
    session, the fifteenth set) 17.2% -> 22.4% too fast: how an older SM spends its issue time is not the H100's.

    A kernel bound by its instructions over narrow elements (`KernelRates.element_bound_shares`: the same elements
    per second over fp32 and fp16) has its issue time carried by fp32 lane-cycles instead, which differ per SM
    between generations, and on another architecture as far as the share it reached over fp32 allows.
    BatchNorm in eval over fp16 streamed 48% of the H100's copy rate; a V100 (64 lanes an SM) runs it at 23% of
    the H100's rate, an RTX 4090 (41 T lane-cycles/s against the H100's 33 T, a third of its bandwidth) at its
    DRAM rate and issue time combined.
    A kernel whose backward was not measured is given its forward's share: where both were (BatchNorm, ReLU in
    ResNet-50's steps on the H100) they are within 20% of each other, max pooling excepted. A layout's
    own figure (':nchw', one forward kernel timed alone) is not carried to the backward, which keeps the kernel's
    backward measured in a step: with it carried, fp16 NCHW training steps priced 21-57% too slow (ResNet-50 on
    nine GPUs, benchmarks/LOG.md), so the NCHW backward's rate is taken as unknown, not as the forward's."""
    figures = load_runtime(runtime)
    dram = levels[-1].bandwidth_bytes_per_s
    measured = figures.kernel_rates
    sm_scale = sm_cycles_per_s / measured.reference_sm_cycles_per_s * measured.reference_bandwidth_bytes_per_s
    lane_scale = sm_scale * fp32_lanes_per_sm / measured.reference_fp32_lanes_per_sm
    lifted = measured.element_bound_shares(element_bytes)
    same = architecture == measured.reference_architecture or (
        architecture in ISSUE_KIN_ARCHITECTURES and fp32_lanes_per_sm == measured.reference_fp32_lanes_per_sm)

    def carried(key: str, share: float) -> float:
        scale = lane_scale if key in lifted else sm_scale
        if same:
            return carried_kernel_rate(share, dram, scale)
        return min(lifted[key] * dram, share * scale) if key in lifted else share * min(dram, scale)

    rates = {key: carried(key, share) for key, share in measured.shares(element_bytes).items()}
    rates |= {f"{key}:backward": rate for key, rate in rates.items()
              if f"{key}:backward" not in rates and ":nchw" not in key}
    return dict(figures.host_call_s.by_kind), rates


ACCUMULATIONS = ("fp32", "fp16")
"""What a 16-bit product accumulates in: fp32 (PyTorch, cuBLASLt's defaults, TensorRT-LLM, flash attention) or
fp16 (cuBLAS's CUBLAS_COMPUTE_16F and `cublasHgemm`: llama.cpp's cuBLAS path, ExLlama, TinyChat's W4A16 kernels)."""


REALIZED_FP16_ACCUMULATE_RATIO = {"Ada": 53.1 / 31.0}
"""What fp16 accumulation realizes over fp32 accumulation on one architecture's GeForce tensor cores, where it was
measured: a Triton matmul of fp16 operands at size 2048 on an RTX 4060 (Ada, SM89) ran 53.1 TFLOP/s accumulating in
fp16 against 31.0 in fp32, 1.71x of the datasheet's 2x, with the SMs' issue throughput at 87% of its peak
(triton-lang/triton#10851, 2026-07-11)."""


def fp16_accumulate_rate(profile: Profile, fp32_accumulate: float) -> tuple[float, str]:
    """(FLOP/s, provenance) of fp16 products accumulated in fp16, given what the same products sustain with fp32
    accumulation: that rate times the datasheet's ratio of the two peaks (a GeForce board: 2), or the ratio
    measured on the board's architecture where it is lower (`REALIZED_FP16_ACCUMULATE_RATIO`); the same rate on
    a board whose datasheet gives one figure for both (data-center and professional boards)."""
    core = profile.tensor_cores.get("fp16") if isinstance(profile, GpuProfile) else None
    if core is None or core.fp16_accumulate_dense_flops_per_s is None:
        return fp32_accumulate, "one rate for both accumulations"
    ratio = core.fp16_accumulate_dense_flops_per_s.value / core.dense_flops_per_s.value
    realized = REALIZED_FP16_ACCUMULATE_RATIO.get(architecture_family(profile))
    if realized is not None and realized < ratio:
        return fp32_accumulate * realized, "fp16 accumulation, the ratio measured on this architecture"
    return fp32_accumulate * ratio, "fp16 accumulation, the datasheet's ratio to fp32 accumulation"


def ceilings_for(profile: Profile, precision: Precision, runtime: str | None = EAGER_CUDA,
                 accumulate: str = "fp32") -> Ceilings:
    """Resolve the ceilings for one precision on one device (measured where calibrated). On a GPU without a
    calibration, `runtime` names the framework runtime profile whose measured costs apply
    (`roofline.hardware.runtime`); None prices the datasheet roofline alone. `accumulate` 'fp16' prices fp16
    tensor-core products accumulated in fp16 (`fp16_accumulate_rate`); every other dtype accumulates in fp32."""
    if accumulate not in ACCUMULATIONS:
        raise RooflineError(f"unknown accumulation '{accumulate}'; choose {' or '.join(ACCUMULATIONS)}")
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
    elif isinstance(profile, GpuProfile) and dtype in profile.tensor_cores:
        matrix_value, provenance["matrix_flops_per_s"] = sustained_matrix_rate(profile, dtype, runtime)
        if dtype == "tf32":
            vector_value, provenance["vector_flops_per_s"] = _fp32_cuda_core_rate(profile, vector_value, runtime)
    elif (isinstance(profile, GpuProfile) and dtype in HALF_ON_FP32_LANES
          and dtype not in profile.sustained_flops_per_s and (fp32 := vector_peak(profile, "fp32"))):
        vector_value, _ = _fp32_cuda_core_rate(profile, fp32.value, runtime)
        provenance["vector_flops_per_s"] = "fp32 arithmetic (PyTorch's half products)"
    elif isinstance(profile, GpuProfile) and (rate := _cuda_core_rate(profile, dtype, vector_value, runtime)):
        vector_value, provenance["vector_flops_per_s"] = rate
    if accumulate == "fp16" and dtype == "fp16" and matrix_value is not None:
        matrix_value, provenance["matrix_flops_per_s"] = fp16_accumulate_rate(profile, matrix_value)
    alignment = None
    if isinstance(profile, GpuProfile) and dtype in profile.tensor_cores:
        alignment = profile.tensor_cores[dtype].alignment_elements
    curve = monotone_curve([(p.n, p.flops_per_s) for p in (measured.gemm_curves.get(dtype, []) if measured else [])])
    if curve:
        provenance["gemm_curve"] = "measured"
    levels = tuple(Level(*lv) for lv in memory_levels(profile))
    provenance["dram_bandwidth"] = "measured" if measured else "datasheet"
    sustained_dram = profile.memory.sustained_bandwidth_bytes_per_s
    if not measured and sustained_dram is not None:
        levels = (*levels[:-1], Level(levels[-1].name, levels[-1].capacity_bytes, sustained_dram.value))
        provenance["dram_bandwidth"] = _sustained_provenance(sustained_dram)
    o = profile.overheads
    dispatch = o.framework_dispatch_s.value
    if measured and measured.framework_dispatch_s:
        dispatch = measured.framework_dispatch_s
    launch = measured.kernel_launch_s if measured and measured.kernel_launch_s else o.kernel_launch_s.value
    sync = measured.sync_s if measured and measured.sync_s is not None else o.sync_s.value
    provenance["dispatch_s"] = "measured" if measured and measured.framework_dispatch_s else "datasheet"
    link = pageable = None
    if isinstance(profile, GpuProfile):
        h2d = measured.host_to_device_bytes_per_s if measured else {}
        link, pageable = copy_rates(profile.host_link, h2d)
        provenance["host_link"] = "measured" if "pinned" in h2d else "datasheet x PCIe packet efficiency"
    dispatch_by_kind = dict(measured.dispatch_s_by_kind) if measured else {}
    kernel_rates = dict(measured.kernel_bytes_per_s) if measured else {}
    cycles = sm_cycles_per_s(profile) if isinstance(profile, GpuProfile) else 0.0
    lanes_per_sm = int(profile.compute.fp32_lanes_per_sm.value) if isinstance(profile, GpuProfile) else 0
    if isinstance(profile, GpuProfile) and not measured and runtime:
        dispatch_by_kind, kernel_rates = runtime_figures(runtime, levels, precision.storage_bytes, cycles,
                                                         lanes_per_sm, architecture_family(profile))
        provenance["dispatch_s"] = provenance["kernel_rates"] = runtime_provenance(runtime)
    across, streaming = 1.0, None
    if isinstance(profile, GpuProfile) and runtime:
        figures = load_runtime(runtime)
        across, streaming = figures.tf32_operands_across_share.value, figures.streaming_products
        provenance["tf32_across_share"] = provenance["streaming_products"] = runtime_provenance(runtime)
    units = int(profile.compute.sm_count.value) if isinstance(profile, GpuProfile) else int(
        profile.compute.cores.value * profile.compute.sockets)
    is_gpu = isinstance(profile, GpuProfile)
    threads = measured.environment.get("torch_threads") if measured else None
    lanes = 0 if is_gpu else int(profile.compute.simd_width_bits.value) // 32  # type: ignore[union-attr]
    return Ceilings(
        device=profile.name, is_gpu=is_gpu, units=units, vector_lanes_fp32=lanes,
        sm_cycles_per_s=cycles, fp32_lanes_per_sm=lanes_per_sm, architecture=architecture_family(profile),
        threads=int(threads) if isinstance(threads, int | float) and threads else units, compute_dtype=dtype,
        matrix_flops_per_s=matrix_value, vector_flops_per_s=vector_value, alignment_elements=alignment,
        gemm_curve=curve, gemm_fit=fit_gemm_curve(curve),
        skinny_gemm=tuple((p.small, p.other, p.flops_per_s) for p in measured.skinny_gemm_fp32)
        if measured and dtype == "fp32" else (),
        outer_gemm=tuple((p.small, p.other, p.flops_per_s) for p in measured.outer_gemm_fp32)
        if measured and dtype == "fp32" else (),
        gemv_rows={layout: tuple(sorted((p.row_elements, p.bytes_per_s) for p in measured.gemv_rows_fp32
                                        if p.layout == layout))
                   for layout in {p.layout for p in measured.gemv_rows_fp32}} if measured and dtype == "fp32" else {},
        conv_efficiency=dict(measured.conv_efficiency) if measured else {},
        conv_efficiency_fits=fit_conv_efficiencies(measured.conv_efficiency_points) if measured else {},
        conv_fixed_s=dict(measured.conv_fixed_s) if measured else {},
        conv_fixed_warm_s=dict(measured.conv_fixed_warm_s) if measured else {},
        kernel_bytes_per_s=kernel_rates, tf32_across_share=across, levels=levels, dispatch_s=dispatch,
        dispatch_s_by_kind=dispatch_by_kind,
        page_fault_bytes_per_s=measured.page_fault_bytes_per_s if measured and not is_gpu else None,
        cpu_runtime=recorded_runtime(measured.environment) if measured and not is_gpu else None,
        layout_conversion_bytes_per_s=dict(measured.layout_conversion_bytes_per_s) if measured and not is_gpu
        else {},
        launch_s=launch, streaming_fixed_s=streaming.fixed_s if streaming else 0.0,
        streaming_share=streaming.stream_share if streaming else 1.0, sync_s=sync, host_link_bytes_per_s=link,
        host_link_pageable_bytes_per_s=pageable, provenance=provenance,
        datasheet={"dram_bandwidth": profile.memory.bandwidth_bytes_per_s.value,
                   **({"matrix_flops_per_s": matrix.value} if matrix else {})},
    )

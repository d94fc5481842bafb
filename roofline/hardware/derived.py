"""Figures derived from a profile's primary numbers, each with its formula.

A `Derived` holds its formula as a sympy-parsable expression over the profile's field names and the values
bound to them. The number is computed by evaluating that expression with Python arithmetic (sympy costs half
a second to import, and `advise` must answer in well under one); `Derived.sympy()` parses the same string
with sympy for symbolic display. The formulas are the physics: peak = units x clock x lanes x 2 (an FMA is
two FLOPs); bandwidth = bus width / 8 (bits -> bytes) x data rate (transfers per second per pin).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.hardware.schema import DTYPE_BYTES, Figure, GpuProfile, Profile

DISAGREEMENT_THRESHOLD = 0.05
"""A derived figure more than 5% away from the datasheet's is flagged by `hw show`."""


@dataclass(frozen=True)
class Term:
    value: float
    unit: str


@dataclass(frozen=True)
class Derived:
    """A number computed from named terms by a formula, and the datasheet figure it can be checked against."""

    name: str
    expr: str
    terms: dict[str, Term]
    unit: str
    datasheet: Figure | None = None
    value: float = field(init=False)

    def __post_init__(self) -> None:
        namespace = {k: t.value for k, t in self.terms.items()}
        object.__setattr__(self, "value", float(eval(self.expr, {"__builtins__": {}}, namespace)))

    def sympy(self):
        """The formula as a sympy expression (imports sympy)."""
        import sympy

        return sympy.sympify(self.expr)

    def with_numbers(self) -> str:
        """The formula with each term replaced by its value and unit: '80 SM x 1.53e9 Hz x 64 x 2'."""
        text = self.expr
        for name in sorted(self.terms, key=len, reverse=True):
            term = self.terms[name]
            text = text.replace(name, f"{_num(term.value)}{' ' + term.unit if term.unit else ''}")
        return text.replace("*", "x")

    @property
    def disagreement(self) -> float | None:
        """Relative gap (derived - datasheet) / datasheet, or None without a datasheet figure."""
        if self.datasheet is None or self.datasheet.value == 0:
            return None
        return (self.value - self.datasheet.value) / self.datasheet.value

    @property
    def flagged(self) -> bool:
        gap = self.disagreement
        return gap is not None and abs(gap) > DISAGREEMENT_THRESHOLD


def _num(x: float) -> str:
    """Integers as they are; others to 3 significant digits with a plain exponent: 2e9, 1.53e9, 0.5."""
    if float(x).is_integer() and abs(x) < 1e5:
        return str(int(x))
    mantissa, _, exponent = f"{x:.3g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def memory_bandwidth(profile: Profile) -> Derived:
    """DRAM/HBM peak: bus width in bits / 8 bits per byte x transfers per second per pin."""
    mem = profile.memory
    return Derived(
        "memory_bandwidth_bytes_per_s",
        "bus_width_bits / 8 * data_rate_per_s",
        {"bus_width_bits": Term(mem.bus_width_bits.value, "bit"),
         "data_rate_per_s": Term(mem.data_rate_per_s.value, "T/s")},
        "B/s",
        mem.bandwidth_bytes_per_s,
    )


def _units_and_clock(profile: Profile) -> tuple[str, Term, Term]:
    if isinstance(profile, GpuProfile):
        return "sm_count", Term(profile.compute.sm_count.value, "SM"), Term(profile.compute.boost_clock_hz.value,
                                                                            "Hz")
    c = profile.compute
    return "cores", Term(c.cores.value * c.sockets, "cores"), Term(c.boost_clock_hz.value, "Hz")


def vector_peak(profile: Profile, dtype: str) -> Derived | None:
    """Peak on the SIMD / CUDA-core path (no matrix units): units x clock x lanes x 2 (FMA)."""
    unit_name, units, clock = _units_and_clock(profile)
    datasheet = profile.peak_flops_per_s.get(dtype)
    if isinstance(profile, GpuProfile):
        c = profile.compute
        if dtype not in c.vector_dtypes:
            return None
        if dtype == "fp32":
            lanes = Term(c.fp32_lanes_per_sm.value, "lanes")
        elif dtype == "fp64" and c.fp64_lanes_per_sm is not None:
            lanes = Term(c.fp64_lanes_per_sm.value, "lanes")
        elif dtype == "fp16":
            lanes = Term(c.fp32_lanes_per_sm.value * c.fp16_to_fp32_ratio, "lanes")
        elif dtype == "bf16":
            ratio = c.bf16_to_fp32_ratio if c.bf16_to_fp32_ratio is not None else c.fp16_to_fp32_ratio
            lanes = Term(c.fp32_lanes_per_sm.value * ratio, "lanes")
        else:
            return None
        return Derived(f"{dtype}_vector_flops_per_s", f"{unit_name} * clock_hz * lanes * 2",
                       {unit_name: units, "clock_hz": clock, "lanes": lanes}, "FLOP/s", datasheet)
    c = profile.compute
    if dtype not in ("fp64", "fp32"):
        return None
    lanes = Term(c.simd_width_bits.value / (8 * DTYPE_BYTES[dtype]), "lanes")
    return Derived(f"{dtype}_vector_flops_per_s", f"{unit_name} * clock_hz * lanes * fma_units * 2",
                   {unit_name: units, "clock_hz": clock, "lanes": lanes,
                    "fma_units": Term(c.fma_units_per_core.value, "FMA/cycle")}, "FLOP/s", datasheet)


def matrix_peak(profile: Profile, dtype: str) -> Derived | None:
    """Peak on matrix units: a GPU's tensor cores (datasheet) or a CPU's AMX / dot-product instructions."""
    if isinstance(profile, GpuProfile):
        tc = profile.tensor_cores.get(dtype)
        if tc is None:
            return None
        return Derived(f"{dtype}_tensor_flops_per_s", "tensor_dense_flops_per_s",
                       {"tensor_dense_flops_per_s": Term(tc.dense_flops_per_s.value, "FLOP/s")}, "FLOP/s",
                       tc.dense_flops_per_s)
    c = profile.compute
    per_cycle = c.matrix_flops_per_cycle_per_core.get(dtype)
    if per_cycle is None:
        return None
    unit_name, units, clock = _units_and_clock(profile)
    return Derived(f"{dtype}_matrix_flops_per_s", f"{unit_name} * clock_hz * flops_per_cycle",
                   {unit_name: units, "clock_hz": clock, "flops_per_cycle": Term(per_cycle.value, "FLOP/cycle")},
                   "FLOP/s", profile.peak_flops_per_s.get(dtype))


def fp16_accumulate_peak(profile: Profile) -> Derived | None:
    """A GeForce board's fp16 tensor peak with fp16 accumulation, where its whitepaper gives one apart from the fp32
    accumulation figure (`TensorCore.fp16_accumulate_dense_flops_per_s`)."""
    tc = profile.tensor_cores.get("fp16") if isinstance(profile, GpuProfile) else None
    if tc is None or tc.fp16_accumulate_dense_flops_per_s is None:
        return None
    figure = tc.fp16_accumulate_dense_flops_per_s
    return Derived("fp16_accumulate_tensor_flops_per_s", "tensor_dense_flops_per_s_fp16_accumulate",
                   {"tensor_dense_flops_per_s_fp16_accumulate": Term(figure.value, "FLOP/s")}, "FLOP/s", figure)


def peak_flops(profile: Profile) -> dict[str, float]:
    """The best FLOP/s per dtype the device offers on any path (what `hw show` calls peak_flops)."""
    peaks: dict[str, float] = {}
    for dtype in ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"):
        candidates = [d.value for d in (vector_peak(profile, dtype), matrix_peak(profile, dtype)) if d]
        if candidates:
            peaks[dtype] = max(candidates)
    return peaks


def compute_bytes_per_s(profile: Profile) -> Derived:
    """How many bytes per second the arithmetic units can consume: units x clock x L1 load bytes per cycle."""
    unit_name, units, clock = _units_and_clock(profile)
    return Derived("compute_bytes_per_s", f"{unit_name} * clock_hz * load_bytes_per_cycle",
                   {unit_name: units, "clock_hz": clock,
                    "load_bytes_per_cycle": Term(profile.compute.load_bytes_per_cycle.value, "B/cycle")}, "B/s")


def _units(profile: Profile) -> float:
    if isinstance(profile, GpuProfile):
        return profile.compute.sm_count.value
    return profile.compute.cores.value * profile.compute.sockets


def cache_total_bytes(profile: Profile, level: str) -> float:
    """Capacity of one level over the whole chip: size x instances (units / shared_by)."""
    for c in profile.caches:
        if c.level == level:
            return c.size_bytes.value * max(1.0, _units(profile) / c.shared_by)
    raise KeyError(level)


def cache_bandwidth(profile: Profile, level: str) -> Derived | None:
    """Aggregate bandwidth of one cache level: bytes per cycle x instances x clock, where published."""
    for c in profile.caches:
        if c.level == level and c.bandwidth_bytes_per_cycle is not None:
            _, _, clock = _units_and_clock(profile)
            instances = max(1.0, _units(profile) / c.shared_by)
            return Derived(f"{level}_bandwidth_bytes_per_s", "instances * bytes_per_cycle * clock_hz",
                           {"instances": Term(instances, ""),
                            "bytes_per_cycle": Term(c.bandwidth_bytes_per_cycle.value, "B/cycle"),
                            "clock_hz": clock}, "B/s")
    return None


def ridge_point(peak_flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """FLOP per byte at which a kernel stops waiting on a memory level: peak FLOP/s / that level's bytes/s.
    An operation whose intensity is below it is bound by the level's bandwidth. The one place this is
    computed (hw show, explain, analyze, the advisor's reasons all call it)."""
    return peak_flops_per_s / bandwidth_bytes_per_s


def ridge_points(peaks: dict[str, float], bandwidth_bytes_per_s: float) -> dict[str, float]:
    """`ridge_point` per dtype of `peaks`; empty when the bandwidth is unknown (0)."""
    if not bandwidth_bytes_per_s:
        return {}
    return {dtype: ridge_point(flops, bandwidth_bytes_per_s) for dtype, flops in peaks.items()}


def memory_levels(profile: Profile) -> list[tuple[str, float, float]]:
    """(level, total capacity bytes, bandwidth bytes/s) from the fastest cache to DRAM.

    Measured bandwidths replace derived ones when the profile carries a calibration. Levels without a
    bandwidth figure are left out: the cost model cannot use a level whose speed it does not know.
    """
    measured = {m.level: m.bandwidth_bytes_per_s for m in (profile.measured.caches if profile.measured else [])}
    levels: list[tuple[str, float, float]] = []
    for c in profile.caches:
        bw = measured.get(c.level)
        if bw is None:
            derived = cache_bandwidth(profile, c.level)
            bw = derived.value if derived else None
        if bw is not None:
            levels.append((c.level, cache_total_bytes(profile, c.level), bw))
    dram = profile.measured.memory_bandwidth if profile.measured else profile.memory.bandwidth_bytes_per_s.value
    levels.append(("DRAM", profile.memory.capacity_bytes.value, dram))
    return levels

"""A hardware profile of the machine roofline runs on: the CPU always, NVIDIA GPUs when a driver is present.

What the operating system reports (core count, clock, caches, memory size, instruction-set flags) becomes a
`Figure` whose source names the file or library it was read from ('detected: /sys/.../index2/size'). What
no software interface reports is derived from the flags with the assumption spelled out in the figure
(FMA pipes per core, load ports), and DRAM bandwidth, which nothing reports, is an explicit estimate until
`roofline calibrate` measures it. GPUs are read through NVML (package nvidia-ml-py) or torch.cuda, both
imported only when asked for.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from roofline.errors import MissingDependency
from roofline.hardware.schema import Cache, CpuCompute, CpuProfile, Figure, Measured, Memory, Overheads

SYS_CPU = Path("/sys/devices/system/cpu")
PROC = Path("/proc")

ZEN4_URL = "https://chipsandcheese.com/2022/11/05/amds-zen-4-part-1-frontend-and-execution-engine/"
HASWELL_URL = "https://en.wikichip.org/wiki/intel/microarchitectures/haswell_(client)"
DISPATCH_URL = "https://horace.io/brrr_intro.html"

ASSUMED_DRAM_CHANNEL_BITS = 64
"""One DDR channel's data width: the estimate assumes the least any DDR4/DDR5 system has, one channel."""
ASSUMED_DRAM_RATE_PER_S = 3.2e9
"""DDR4-3200, the most common server DIMM speed of the 2020s; a VM hides the real one."""

MATRIX_FLAGS = ("avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8", "amx_tile",
                "bf16", "i8mm", "svebf16", "svei8mm", "asimddp", "asimdhp")
"""Instruction-set flags (Linux /proc/cpuinfo names) for dot-product and matrix instructions."""


def parse_size(text: str) -> int:
    """Sizes as sysfs writes them: '32K' -> 32768, '1024K', '32M', or a plain number of bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text, flags=re.IGNORECASE)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2).upper()]
    return int(match.group(1)) * scale


def parse_cpu_list(text: str) -> set[int]:
    """CPU lists as sysfs writes them: '0-3,8' -> {0, 1, 2, 3, 8}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _detected(value: float, where: str, note: str | None = None) -> Figure:
    return Figure(value=value, source=f"detected: {where}", note=note)


@dataclass(frozen=True)
class Topology:
    """Logical CPU -> (socket, core): what SMT siblings share, so caches and cores count physical cores."""

    core_of: dict[int, tuple[int, int]]
    source: str

    @property
    def threads(self) -> int:
        return len(self.core_of)

    @property
    def cores(self) -> int:
        return len(set(self.core_of.values()))

    @property
    def sockets(self) -> int:
        return len({socket for socket, _ in self.core_of.values()})

    def cores_among(self, cpus: set[int]) -> int:
        """Physical cores behind a set of logical CPUs (a cache's shared_cpu_list)."""
        return len({self.core_of[c] for c in cpus if c in self.core_of}) or len(cpus)


def read_topology(sys_cpu: Path = SYS_CPU) -> Topology:
    """Physical cores from sysfs (core_id, physical_package_id), else os.cpu_count() without SMT."""
    core_of: dict[int, tuple[int, int]] = {}
    for cpu_dir in sys_cpu.glob("cpu[0-9]*"):
        core_id = _read(cpu_dir / "topology" / "core_id")
        if core_id is None:
            continue
        socket = _read(cpu_dir / "topology" / "physical_package_id") or "0"
        core_of[int(cpu_dir.name[3:])] = (int(socket), int(core_id))
    if core_of:
        return Topology(core_of, f"{sys_cpu}/cpu*/topology/core_id")
    count = os.cpu_count() or 1
    return Topology({i: (0, i) for i in range(count)}, "os.cpu_count() (no sysfs topology: SMT not visible)")


def read_caches(topology: Topology, load_bytes_per_cycle: Figure, sys_cpu: Path = SYS_CPU) -> list[Cache]:
    """Data and unified caches of cpu0, fastest first; L1's bandwidth is the core's load bandwidth."""
    caches: list[tuple[int, Cache]] = []
    for index in sorted((sys_cpu / "cpu0" / "cache").glob("index*")):
        level, kind, size = (_read(index / f) for f in ("level", "type", "size"))
        if level is None or size is None or kind == "Instruction":
            continue
        shared = _read(index / "shared_cpu_list")
        shared_by = topology.cores_among(parse_cpu_list(shared)) if shared else 1
        bandwidth = None
        if level == "1":
            bandwidth = Figure(value=load_bytes_per_cycle.value, derived="load_bytes_per_cycle: the L1 data cache "
                               "feeds the vector units at the core's load rate")
        caches.append((int(level), Cache(level=f"L{level}", size_bytes=_detected(parse_size(size), f"{index}/size"),
                                         shared_by=shared_by, bandwidth_bytes_per_cycle=bandwidth)))
    return [c for _, c in sorted(caches, key=lambda lc: lc[0])]


def _khz_file(path: Path) -> float | None:
    text = _read(path)
    return float(text) * 1e3 if text and text.isdigit() else None


def _proc_cpu_mhz(proc: Path) -> float | None:
    text = _read(proc / "cpuinfo") or ""
    match = re.search(r"^cpu MHz\s*:\s*([\d.]+)", text, flags=re.MULTILINE)
    return float(match.group(1)) * 1e6 if match else None


def read_clocks(info: dict[str, Any], sys_cpu: Path = SYS_CPU, proc: Path = PROC) -> tuple[Figure, Figure]:
    """(base, boost) clock: cpufreq where the kernel exposes it, else cpuinfo's advertised or current clock."""
    freq = sys_cpu / "cpu0" / "cpufreq"
    advertised = (info.get("hz_advertised") or [0])[0] or None
    base_hz = _khz_file(freq / "base_frequency")
    base = _detected(base_hz, f"{freq}/base_frequency") if base_hz else None
    if base is None and advertised:
        base = _detected(float(advertised), "py-cpuinfo hz_advertised")
    if base is None:
        mhz = _proc_cpu_mhz(proc)
        if mhz is None:
            raise MissingDependency("cannot read this CPU's clock from cpufreq, py-cpuinfo or /proc/cpuinfo; "
                                    "write a profile by hand (see hardware_profiles/cpu/)")
        base = _detected(mhz, f"{proc}/cpuinfo cpu MHz")
    max_hz = _khz_file(freq / "cpuinfo_max_freq")
    if max_hz:
        return base, _detected(max_hz, f"{freq}/cpuinfo_max_freq", "maximum turbo; all cores together may run lower")
    return base, Figure(value=base.value, derived="base_clock_hz: no turbo clock exposed (a VM's cpufreq is "
                        "hidden); all-core clocks under load are measured by calibration")


def _fma_and_width(info: dict[str, Any], flags: set[str]) -> tuple[Figure, Figure, Figure]:
    """(simd_width_bits, fma_units_per_core, load_bytes_per_cycle) from the flags, assumptions stated."""
    width = 512 if "avx512f" in flags else 256 if flags & {"avx2", "avx"} else 128
    simd = _detected(width, "py-cpuinfo flags (avx512f -> 512, avx2/avx -> 256, else 128)")
    zen4 = "amd" in str(info.get("vendor_id_raw", "")).lower() and info.get("family") == 0x19 and width == 512
    if zen4:
        fma = Figure(value=1, derived="Zen 4 (AMD family 0x19 with avx512f): two 256-bit FMA pipes, which one "
                     "512-bit FMA occupies together", note=ZEN4_URL)
        load = Figure(value=64, derived="2 loads x 256 bit / 8 per cycle (Zen 4)", note=ZEN4_URL)
        return simd, fma, load
    if "fma" in flags or "asimd" in flags:
        fma = Figure(value=2, derived="assumed 2 FMA pipes at full width, as on every AVX2/AVX-512 server core "
                     "since Haswell and on Neoverse; cpuinfo flags show FMA but not the pipe count", note=HASWELL_URL)
    else:
        fma = Figure(value=1, derived="no 'fma' flag: one multiply-add pipe assumed (separate mul and add)")
    load = Figure(value=2 * width / 8, derived=f"assumed 2 loads x {width} bit / 8 per cycle (two load ports, as "
                  "on Haswell and later)", note=HASWELL_URL)
    return simd, fma, load


def _matrix_rates(flags: set[str], simd: Figure, fma: Figure) -> dict[str, Figure]:
    """FLOP/cycle/core of the AVX-512 dot-product instructions the flags show, at the FMA pipes' rate."""
    lanes = simd.value / 32
    rates: dict[str, Figure] = {}
    if "avx512_bf16" in flags:
        rates["bf16"] = Figure(value=lanes * 2 * 2 * fma.value,
                               derived=f"VDPBF16PS: {lanes:g} fp32 lanes x 2 bf16 products x 2 FLOP x "
                               f"{fma.value:g} per cycle (the FMA pipes' rate)")
    if "avx512_vnni" in flags:
        rates["int8"] = Figure(value=lanes * 4 * 2 * fma.value,
                               derived=f"VPDPBUSD: {lanes:g} int32 lanes x 4 int8 products x 2 ops x "
                               f"{fma.value:g} per cycle (the FMA pipes' rate)")
    return rates


def read_memory_capacity(proc: Path = PROC) -> Figure:
    text = _read(proc / "meminfo") or ""
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", text, flags=re.MULTILINE)
    if match:
        return _detected(int(match.group(1)) * 1024, f"{proc}/meminfo MemTotal")
    return _detected(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
                     "os.sysconf(SC_PAGE_SIZE x SC_PHYS_PAGES)")


def estimated_memory(capacity: Figure, measured: Measured | None) -> Memory:
    """DRAM: capacity detected; bandwidth measured by calibration, else an explicit one-channel estimate.

    No software interface reports channel count or DIMM speed (dmidecode needs root, a VM hides both), so
    without a calibration the bandwidth is the floor of any DDR4 system: one 64-bit channel of DDR4-3200.
    """
    width = Figure(value=ASSUMED_DRAM_CHANNEL_BITS, derived="assumed 1 channel x 64 bit: channel count is not "
                   "detectable; `roofline calibrate` measures the real bandwidth")
    rate = Figure(value=ASSUMED_DRAM_RATE_PER_S, derived="assumed DDR4-3200: DIMM speed is not detectable")
    if measured is not None:
        bandwidth = Figure(value=measured.memory_bandwidth, source="measured: roofline calibrate (triad-style)")
    else:
        bandwidth = Figure(value=width.value / 8 * rate.value, derived="bus_width_bits / 8 * data_rate_per_s",
                           note="an estimate, not a measurement: run `roofline calibrate` and pass "
                           "`roofline hw detect --calibration FILE`")
    return Memory(type="unknown (estimate: DDR4-3200, 1 channel)", bus_width_bits=width, data_rate_per_s=rate,
                  capacity_bytes=capacity, bandwidth_bytes_per_s=bandwidth)


def cpu_info() -> dict[str, Any]:
    """py-cpuinfo's description of this CPU (model, vendor, family, flags, advertised clock)."""
    try:
        import cpuinfo
    except ImportError:
        raise MissingDependency("CPU detection needs py-cpuinfo: pip install py-cpuinfo") from None
    return cpuinfo.get_cpu_info()


def detect_cpu(info: dict[str, Any] | None = None, measured: Measured | None = None,
               sys_cpu: Path = SYS_CPU, proc: Path = PROC) -> CpuProfile:
    """This machine's CPU as a profile. `info` is py-cpuinfo's dict (read when not given); `measured` a
    calibration of this machine, whose bandwidth replaces the estimate."""
    info = cpu_info() if info is None else info
    flags = {str(f).lower() for f in info.get("flags", [])}
    topology = read_topology(sys_cpu)
    base, boost = read_clocks(info, sys_cpu, proc)
    simd, fma, load = _fma_and_width(info, flags)
    brand = str(info.get("brand_raw") or info.get("arch_string_raw") or "unknown CPU")
    per_socket = topology.cores // topology.sockets
    compute = CpuCompute(
        cores=_detected(per_socket, topology.source), threads=_detected(topology.threads, topology.source),
        sockets=topology.sockets, base_clock_hz=base, boost_clock_hz=boost, simd_width_bits=simd,
        fma_units_per_core=fma, load_bytes_per_cycle=load,
        matrix_extensions=sorted(flags & set(MATRIX_FLAGS)),
        matrix_flops_per_cycle_per_core=_matrix_rates(flags, simd, fma),
    )
    dispatch = (Figure(value=measured.framework_dispatch_s, source="measured: roofline calibrate")
                if measured is not None and measured.framework_dispatch_s is not None else
                Figure(value=1.0e-5, source=DISPATCH_URL, note="PyTorch eager per-op host overhead, order of 10 us; "
                       "replaced by calibration"))
    family = info.get("family")
    return CpuProfile(
        kind="cpu", name=f"{brand} (detected)", vendor=str(info.get("vendor_id_raw") or "unknown"),
        architecture=f"{info.get('arch_string_raw', '?')} family {family} model {info.get('model')}"
        if family is not None else str(info.get("arch_string_raw", "?")),
        notes="Detected by `roofline hw detect`. DRAM bandwidth is "
        + ("measured by calibration." if measured is not None else "an estimate until `roofline calibrate` runs."),
        compute=compute, caches=read_caches(topology, load, sys_cpu), memory=estimated_memory(
            read_memory_capacity(proc), measured),
        overheads=Overheads(kernel_launch_s=Figure(value=0.0, derived="no device launch on a CPU"),
                            framework_dispatch_s=dispatch,
                            sync_s=Figure(value=0.0, derived="host and device are the same")),
        measured=measured,
    )


@dataclass(frozen=True)
class DetectedGpu:
    """What the driver says about one GPU; enough to find and check its profile, not to replace it."""

    index: int
    name: str
    memory_bytes: int
    source: str
    """'nvml' or 'torch.cuda'."""
    sm_count: int | None = None
    sm_clock_hz: float | None = None
    """Maximum SM clock."""
    memory_clock_hz: float | None = None
    """Maximum memory clock as NVML reports it; DDR moves data on both edges of it."""
    bus_width_bits: int | None = None
    compute_capability: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def memory_bandwidth_bytes_per_s(self) -> float | None:
        """bus width / 8 x memory clock x 2 (data on both clock edges), where both are reported."""
        if self.bus_width_bits is None or self.memory_clock_hz is None:
            return None
        return self.bus_width_bits / 8 * self.memory_clock_hz * 2

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["memory_bandwidth_bytes_per_s"] = self.memory_bandwidth_bytes_per_s
        out["memory_bandwidth_formula"] = "bus_width_bits / 8 * memory_clock_hz * 2 (double data rate)"
        return out


def _nvml_call(nvml: Any, function: str, *args: Any) -> Any:
    """One NVML query; None where the driver does not support it (NVMLError) or the binding lacks it."""
    fn = getattr(nvml, function, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception as exc:
        if type(exc).__name__.startswith("NVMLError"):
            return None
        raise


def gpus_from_nvml(nvml: Any) -> list[DetectedGpu]:
    """Every GPU NVML reports. `nvml` is the pynvml module (or a stand-in with the same functions)."""
    nvml.nvmlInit()
    try:
        found = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            name = nvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else str(name)
            attrs = _nvml_call(nvml, "nvmlDeviceGetAttributes", h)
            sm_clock = _nvml_call(nvml, "nvmlDeviceGetMaxClockInfo", h, nvml.NVML_CLOCK_SM)
            mem_clock = _nvml_call(nvml, "nvmlDeviceGetMaxClockInfo", h, nvml.NVML_CLOCK_MEM)
            cc = _nvml_call(nvml, "nvmlDeviceGetCudaComputeCapability", h)
            found.append(DetectedGpu(
                index=i, name=name, memory_bytes=int(nvml.nvmlDeviceGetMemoryInfo(h).total), source="nvml",
                sm_count=getattr(attrs, "multiprocessorCount", None),
                sm_clock_hz=sm_clock * 1e6 if sm_clock else None,
                memory_clock_hz=mem_clock * 1e6 if mem_clock else None,
                bus_width_bits=_nvml_call(nvml, "nvmlDeviceGetMemoryBusWidth", h),
                compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
            ))
        return found
    finally:
        nvml.nvmlShutdown()


def gpus_from_torch() -> list[DetectedGpu]:
    """Every GPU torch.cuda sees (imports torch: used only where NVML is missing)."""
    import torch

    if not torch.cuda.is_available():
        return []
    found = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        found.append(DetectedGpu(index=i, name=p.name, memory_bytes=int(p.total_memory), source="torch.cuda",
                                 sm_count=int(p.multi_processor_count),
                                 compute_capability=f"{p.major}.{p.minor}",
                                 notes=["torch.cuda reports no clocks or bus width; install nvidia-ml-py for them"]))
    return found


def detect_gpus(nvml: Any = None) -> list[DetectedGpu]:
    """GPUs through NVML when it loads and a driver answers, else torch.cuda when torch is installed, else []."""
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            nvml = None
    if nvml is not None:
        try:
            return gpus_from_nvml(nvml)
        except Exception as exc:
            if not type(exc).__name__.startswith("NVMLError"):
                raise
    if importlib.util.find_spec("torch") is not None:
        return gpus_from_torch()
    return []


VARIANT_WORDS = frozenset({"ti", "super"})
"""Words after a board's number that make it another board: an "RTX 2080 Ti" is not an RTX 2080 (68 SMs, not 46),
so a profile whose alias stops before such a word does not match."""

MAX_ALIAS_WORDS = 4
"""Longest run of a GPU name's words an alias is compared with ("a100-sxm4-80gb" spans three)."""


def _alias_spans(name: str) -> dict[str, int]:
    """Each run of consecutive words of a GPU name, joined with '-' and with nothing ("2080-ti", "2080ti"), mapped
    to how many words it spans, leaving out runs that a variant word (`VARIANT_WORDS`) follows."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    spans: dict[str, int] = {}
    for start in range(len(words)):
        for end in range(start + 1, min(start + MAX_ALIAS_WORDS, len(words)) + 1):
            if end < len(words) and words[end] in VARIANT_WORDS:
                continue
            run = words[start:end]
            for key in ("-".join(run), "".join(run)):
                spans[key] = max(spans.get(key, 0), end - start)
    return spans


def match_gpu_profile(gpu: DetectedGpu) -> str | None:
    """The shipped/user GPU profile this GPU is: a name or alias that spells a run of words of its name (the longest
    run first: "A100-SXM4-80GB" before "A100"; never one a "Ti" or "Super" follows), then the same SM count where
    known, then the closest memory capacity. None when no profile fits."""
    from roofline.hardware.load import list_profiles, load_profile

    spans = _alias_spans(gpu.name)
    candidates = []
    for entry in list_profiles():
        span = max((spans.get(key, 0) for key in (entry.name, *entry.aliases)), default=0)
        if entry.kind != "gpu" or not span:
            continue
        profile = load_profile(entry.path)
        if gpu.sm_count is not None and profile.compute.sm_count.value != gpu.sm_count:
            continue
        candidates.append((-span, abs(profile.memory.capacity_bytes.value - gpu.memory_bytes), entry.name))
    return min(candidates)[2] if candidates else None

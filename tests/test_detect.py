"""`roofline.hardware.detect`: this machine against what the OS reports by other routes, fake sysfs trees for the
topologies this machine does not have, and a fake NVML module so the GPU path runs without a GPU."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from roofline.hardware import derived as d
from roofline.hardware import detect
from roofline.hardware.schema import Measured

SYS_CPU = Path("/sys/devices/system/cpu")
linux_only = pytest.mark.skipif(not (SYS_CPU / "cpu0" / "cache").is_dir() or not Path("/proc/cpuinfo").is_file(),
                                reason="needs Linux sysfs and /proc")


def test_parse_size_and_cpu_list():
    assert detect.parse_size("32K") == 32 * 1024
    assert detect.parse_size("1024K") == 2**20
    assert detect.parse_size("32M") == 32 * 2**20
    assert detect.parse_cpu_list("0-3,8") == {0, 1, 2, 3, 8}
    assert detect.parse_cpu_list("5") == {5}


@pytest.fixture(scope="module")
def this_machine():
    return detect.detect_cpu()


def _proc_cpuinfo_cores_and_flags() -> tuple[int, set[str]]:
    """Physical cores and flags from /proc/cpuinfo ('physical id', 'core id'): a route other than sysfs."""
    text = Path("/proc/cpuinfo").read_text()
    pairs, flags = set(), set()
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        pairs.add((fields.get("physical id", "0"), fields.get("core id", fields.get("processor"))))
        flags |= set(fields.get("flags", "").split())
    return len(pairs), flags


@linux_only
def test_cores_and_simd_width_match_proc_cpuinfo(this_machine):
    cores, flags = _proc_cpuinfo_cores_and_flags()
    c = this_machine.compute
    assert c.cores.value * c.sockets == cores
    expected_width = 512 if "avx512f" in flags else 256 if "avx2" in flags or "avx" in flags else 128
    assert c.simd_width_bits.value == expected_width
    assert c.cores.source.startswith("detected: ")


@linux_only
def test_caches_equal_what_sysfs_reports(this_machine):
    expected = {}
    for index in (SYS_CPU / "cpu0" / "cache").glob("index*"):
        if (index / "type").read_text().strip() == "Instruction":
            continue
        level = f"L{(index / 'level').read_text().strip()}"
        number, unit = re.fullmatch(r"(\d+)([KM]?)", (index / "size").read_text().strip()).groups()
        expected[level] = int(number) * {"": 1, "K": 1024, "M": 1024**2}[unit]
    got = {c.level: c.size_bytes.value for c in this_machine.caches}
    assert got == expected
    assert all(c.size_bytes.source.startswith("detected: /sys/") for c in this_machine.caches)


@linux_only
def test_memory_capacity_is_memtotal_and_bandwidth_is_an_explicit_estimate(this_machine):
    kib = int(re.search(r"MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text()).group(1))
    assert this_machine.memory.capacity_bytes.value == kib * 1024
    bw = this_machine.memory.bandwidth_bytes_per_s
    assert bw.derived and bw.note and "calibrate" in bw.note
    # one 64-bit DDR4-3200 channel: 64 / 8 x 3.2e9 = 25.6e9 B/s
    assert bw.value == pytest.approx(25.6e9)
    assert not d.memory_bandwidth(this_machine).flagged


def _fake_sysfs(root: Path, sockets: int, cores: int, smt: int) -> Path:
    """cpuN/topology and cpu0/cache for `sockets` x `cores` x `smt` logical CPUs, Linux numbering
    (SMT siblings of core i on socket s are s*cores+i + k*sockets*cores)."""
    total = sockets * cores
    for k in range(smt):
        for s in range(sockets):
            for i in range(cores):
                cpu = root / f"cpu{k * total + s * cores + i}" / "topology"
                cpu.mkdir(parents=True)
                (cpu / "core_id").write_text(f"{i}\n")
                (cpu / "physical_package_id").write_text(f"{s}\n")
    caches = {"index0": ("1", "Data", "48K", f"0,{total}"), "index1": ("1", "Instruction", "32K", f"0,{total}"),
              "index2": ("2", "Unified", "2048K", f"0,{total}"),
              "index3": ("3", "Unified", "105M", f"0-{cores - 1},{total}-{total + cores - 1}")}
    for name, (level, kind, size, shared) in caches.items():
        index = root / "cpu0" / "cache" / name
        index.mkdir(parents=True)
        for f, v in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (index / f).write_text(v + "\n")
    return root


INTEL_AVX512 = {"brand_raw": "Intel Xeon", "vendor_id_raw": "GenuineIntel", "family": 6, "model": 143,
                "hz_advertised": [2_000_000_000, 0], "arch_string_raw": "x86_64",
                "flags": ["avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile"]}


def test_two_socket_smt_topology_counts_physical_cores(tmp_path):
    root = _fake_sysfs(tmp_path / "cpu", sockets=2, cores=4, smt=2)
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "meminfo").write_text("MemTotal:       1048576 kB\n")
    p = detect.detect_cpu(info=INTEL_AVX512, sys_cpu=root, proc=proc)
    assert (p.compute.cores.value, p.compute.threads.value, p.compute.sockets) == (4, 16, 2)
    levels = {c.level: c for c in p.caches}
    assert list(levels) == ["L1", "L2", "L3"]  # the instruction cache is left out
    assert levels["L3"].shared_by == 4  # 8 logical CPUs = 4 cores x 2 threads
    assert levels["L3"].size_bytes.value == 105 * 2**20
    assert p.memory.capacity_bytes.value == 2**30
    # no cpufreq: the advertised clock, and boost falls back to it with the reason in the formula
    assert p.compute.base_clock_hz.value == 2e9
    assert p.compute.boost_clock_hz.derived


def test_intel_avx512_rates_agree_with_the_xeon_profile(tmp_path):
    root = _fake_sysfs(tmp_path / "cpu", sockets=1, cores=2, smt=1)
    p = detect.detect_cpu(info=INTEL_AVX512, sys_cpu=root, proc=Path("/proc"))
    c = p.compute
    assert (c.simd_width_bits.value, c.fma_units_per_core.value, c.load_bytes_per_cycle.value) == (512, 2, 128)
    # VPDPBUSD zmm: 16 lanes x 4 int8 products x 2 ops x 2 ports = 256, the Xeon 8380 profile's figure
    assert c.matrix_flops_per_cycle_per_core["int8"].value == 256
    # VDPBF16PS zmm: 16 lanes x 2 bf16 products x 2 FLOP x 2 ports = 128
    assert c.matrix_flops_per_cycle_per_core["bf16"].value == 128
    assert "amx_tile" in c.matrix_extensions


@pytest.mark.parametrize(("flags", "vendor", "family", "width", "fma", "load"), [
    (["avx", "avx2", "fma"], "GenuineIntel", 6, 256, 2, 64),
    (["avx", "avx2", "fma", "avx512f"], "AuthenticAMD", 0x19, 512, 1, 64),  # Zen 4: 2 x 256-bit pipes
    (["avx", "avx2", "fma"], "AuthenticAMD", 0x19, 256, 2, 64),  # Zen 3
    (["sse2"], "GenuineIntel", 6, 128, 1, 32),
])
def test_simd_assumptions_from_flags(tmp_path, flags, vendor, family, width, fma, load):
    info = {**INTEL_AVX512, "flags": flags, "vendor_id_raw": vendor, "family": family}
    p = detect.detect_cpu(info=info, sys_cpu=_fake_sysfs(tmp_path / "cpu", 1, 2, 1), proc=Path("/proc"))
    c = p.compute
    assert (c.simd_width_bits.value, c.fma_units_per_core.value, c.load_bytes_per_cycle.value) == (width, fma, load)
    assert c.fma_units_per_core.derived  # an assumption, stated


def test_calibration_replaces_the_bandwidth_estimate(tmp_path):
    measured = Measured(peak_flops={"fp32": 1e11}, memory_bandwidth=3.1e10, framework_dispatch_s=7e-6,
                        environment={"cpu": "test"})
    p = detect.detect_cpu(info=INTEL_AVX512, measured=measured, sys_cpu=_fake_sysfs(tmp_path / "cpu", 1, 2, 1),
                          proc=Path("/proc"))
    assert p.memory.bandwidth_bytes_per_s.value == 3.1e10
    assert p.memory.bandwidth_bytes_per_s.source.startswith("measured: ")
    assert p.overheads.framework_dispatch_s.value == 7e-6
    assert p.measured == measured


class NVMLError(Exception):
    """Named like pynvml's errors, which the detector recognises by name."""


class FakeNvml:
    """The pynvml functions detect uses, answering like a V100 SXM2 16 GB."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    def __init__(self, sm_attribute_supported: bool = True):
        self.sm_attribute_supported = sm_attribute_supported
        self.shut_down = False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut_down = True

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"handle{i}"

    def nvmlDeviceGetName(self, h):
        return b"Tesla V100-SXM2-16GB"

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=16 * 2**30)

    def nvmlDeviceGetAttributes(self, h):
        if not self.sm_attribute_supported:
            raise NVMLError("Not Supported")
        return SimpleNamespace(multiprocessorCount=80)

    def nvmlDeviceGetMaxClockInfo(self, h, which):
        return {1: 1530, 2: 877}[which]

    def nvmlDeviceGetMemoryBusWidth(self, h):
        return 4096

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return (7, 0)


def test_gpu_path_with_fake_nvml():
    nvml = FakeNvml()
    (gpu,) = detect.detect_gpus(nvml=nvml)
    assert nvml.shut_down
    assert (gpu.name, gpu.sm_count, gpu.compute_capability, gpu.source) == ("Tesla V100-SXM2-16GB", 80, "7.0", "nvml")
    assert gpu.sm_clock_hz == 1530e6
    # 4096 bit / 8 x 877e6 Hz x 2 (DDR) = 898.0e9 B/s; NVIDIA's datasheet says 900 GB/s
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(4096 / 8 * 877e6 * 2)
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(900e9, rel=0.01)
    assert detect.match_gpu_profile(gpu) == "v100-sxm2-16gb"


GiB = 2**30


@pytest.mark.parametrize(("name", "memory_gib", "sm_count", "profile"), [
    # names as NVML and torch.cuda.get_device_name report them
    ("NVIDIA GeForce RTX 2080 Ti", 11, None, "rtx-2080-ti"),
    ("NVIDIA GeForce RTX 2080", 8, None, "rtx-2080"),
    ("NVIDIA GeForce RTX 3080 Ti", 12, None, None),  # no 3080 Ti profile: not the RTX 3080's
    ("NVIDIA GeForce RTX 4070 Ti SUPER", 16, None, None),  # not the 4070 Ti's
    ("NVIDIA GeForce RTX 4070 Ti", 12, None, "rtx-4070-ti"),
    ("NVIDIA GeForce GTX 1080 Ti", 11, None, "gtx-1080-ti"),
    ("NVIDIA TITAN V", 12, None, "titan-v"),
    ("NVIDIA RTX 6000 Ada Generation", 48, None, "rtx-6000-ada"),
    ("Tesla P100-PCIE-16GB", 16, None, "p100-pcie-16gb"),
    ("NVIDIA A100 80GB PCIe", 80, None, "a100-pcie-80gb"),
    ("NVIDIA A100-SXM4-40GB", 40, 108, "a100-sxm4-40gb"),
    ("NVIDIA H100 NVL", 94, None, "h100-nvl-94gb"),
    ("NVIDIA H100 80GB HBM3", 80, 132, "h100-sxm5-80gb"),
])
def test_a_gpu_name_matches_the_profile_of_that_board(name, memory_gib, sm_count, profile):
    gpu = detect.DetectedGpu(index=0, name=name, memory_bytes=memory_gib * GiB, source="nvml", sm_count=sm_count)
    assert detect.match_gpu_profile(gpu) == profile


def test_gpu_path_tolerates_unsupported_queries():
    (gpu,) = detect.detect_gpus(nvml=FakeNvml(sm_attribute_supported=False))
    assert gpu.sm_count is None
    assert detect.match_gpu_profile(gpu) == "v100-sxm2-16gb"  # matched by name and memory alone


def test_no_driver_falls_back_to_torch(monkeypatch):
    class NoDriver(FakeNvml):
        def nvmlInit(self):
            raise type("NVMLError_LibraryNotFound", (Exception,), {})("no libnvidia-ml")

    monkeypatch.setattr(detect, "gpus_from_torch", lambda: ["from torch"])
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: object())
    assert detect.detect_gpus(nvml=NoDriver()) == ["from torch"]
    monkeypatch.setattr(detect.importlib.util, "find_spec", lambda name: None)
    assert detect.detect_gpus(nvml=NoDriver()) == []


@pytest.mark.gpu
def test_real_gpus_agree_with_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gpus = detect.detect_gpus()
    assert len(gpus) == torch.cuda.device_count()
    for gpu in gpus:
        props = torch.cuda.get_device_properties(gpu.index)
        assert gpu.memory_bytes == pytest.approx(props.total_memory, rel=0.05)
        if gpu.sm_count is not None:
            assert gpu.sm_count == props.multi_processor_count
    assert "pynvml" in sys.modules or gpus[0].source == "torch.cuda"

"""Run the microbenchmarks and write a calibrated profile: the datasheet/detected one plus `measured`.

The `measured` section carries the environment it was taken in (CPU and GPU model, driver, library versions,
thread counts, host, date). `check_environment` refuses a calibration from another environment: a ceiling
measured with other hardware, another torch or another thread count does not describe this machine. It reads
nothing slow (no torch import, no py-cpuinfo), so `predict` and `validate` can call it.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
import re
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from roofline.errors import CalibrationMismatch, MissingDependency, ProfileError, RooflineError
from roofline.hardware.calibrated import CALIBRATED_FIGURES, CalibratedFigure
from roofline.hardware.schema import (
    Measured,
    MeasuredCache,
    MeasuredConvPoint,
    MeasuredGemmPoint,
    MeasuredGemvRowPoint,
    MeasuredSkinnyGemmPoint,
    Profile,
)

CHECKED_KEYS = ("cpu_model", "gpu_model", "torch_version", "cpus_available", "omp_num_threads", "torch_threads")
"""Environment entries that must match for a calibration to apply: hardware, framework, threads
(torch_threads only when torch is already loaded: reading it must not cost a torch import)."""


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (fast), else platform.processor()."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    match = re.search(r"^model name\s*:\s*(.+)$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else (platform.processor() or platform.machine())


def current_environment(device: str = "cpu") -> dict[str, str | int | float | None]:
    """What a calibration depends on, as read now. GPU entries only for device 'cuda' (imports torch)."""
    from roofline.measure.timing import thread_settings

    env: dict[str, str | int | float | None] = {
        "device": device, "cpu_model": cpu_model(), "gpu_model": None,
        "torch_version": _version("torch"), "numpy_version": _version("numpy"),
        "python_version": platform.python_version(), "hostname": socket.gethostname(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    env.update(thread_settings())
    env.update(_c_runtime())
    if device == "cuda":
        import torch

        props = torch.cuda.get_device_properties(0)
        env.update(gpu_model=props.name, cuda_version=torch.version.cuda,
                   gpu_compute_capability=f"{props.major}.{props.minor}")
        env["gpu_count"] = torch.cuda.device_count()
        env["gpu_driver"] = _nvml_driver()
    return env


def _c_runtime() -> dict[str, str | int | None]:
    """The C library and page size this process runs on: what the heap replay's rules assume
    (`roofline.model.cpu_runtime.runtime`)."""
    import os

    name, version = platform.libc_ver()
    try:
        page = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        page = None
    return {"libc": f"{name} {version}".strip() or None, "page_bytes": page}


def _nvml_driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None
    return version.decode() if isinstance(version, bytes) else str(version)


def _current_gpu_names() -> list[str]:
    from roofline.hardware.detect import detect_gpus

    return [g.name for g in detect_gpus()]


def check_environment(measured: Measured, gpu_names: Callable[[], list[str]] = _current_gpu_names) -> None:
    """Raise CalibrationMismatch (one line) when `measured` was taken on other hardware or software.

    Compared: CHECKED_KEYS present on both sides (a GPU's model only for a GPU calibration). `gpu_names` is
    injectable for tests.
    """
    then = measured.environment
    now = current_environment("cpu")
    if then.get("gpu_model"):
        names = gpu_names()
        now["gpu_model"] = then["gpu_model"] if then["gpu_model"] in names else (names[0] if names else "no GPU")
    differences = [f"{key} {then.get(key)!r} (now {now.get(key)!r})" for key in CHECKED_KEYS
                   if key in then and key in now and then.get(key) != now.get(key)]
    if differences:
        raise CalibrationMismatch(f"calibration taken with {'; '.join(differences)}: re-run "
                                  "`roofline calibrate --force` on this machine")


def calibrated_path(profile_name: str) -> Path:
    """Default output: <calibrated dir>/<slug of the profile name>-calibrated.yaml (the loader searches it)."""
    from roofline.hardware.load import calibrated_dir

    slug = re.sub(r"[^a-z0-9]+", "-", profile_name.lower().replace("(detected)", "")).strip("-")
    return calibrated_dir() / f"{slug or 'machine'}-calibrated.yaml"


@dataclass(frozen=True)
class Plan:
    """What a run measures; `quick` trades sweep density and repeat budget for time (CI, --quick)."""

    device: str
    quick: bool
    dtypes: tuple[str, ...] | None = None
    """Torch dtypes whose GEMM curves to measure (fp32 always is: every fp32 prediction and convolution
    efficiency rests on it); None: all the device runs, and numpy's."""

    @property
    def gemm_budget_s(self) -> float:
        return 0.2 if self.quick else 0.4

    @property
    def conv_budget_s(self) -> float:
        return 0.12 if self.quick else 0.3

    @property
    def memory_step(self) -> float:
        return 4.0 if self.quick else 2.0

    @property
    def memory_kernels(self) -> tuple[str, ...]:
        return ("scale", "add", "triad") if self.quick else ("copy", "scale", "add", "triad")

    @property
    def memory_budget_s(self) -> float:
        return 0.15 if self.quick else 0.25

    def gemm_sizes(self) -> tuple[int, ...]:
        from roofline.measure.probes import gemm

        if self.device == "cuda":
            return gemm.CUDA_SIZES[:3] if self.quick else gemm.CUDA_SIZES
        return gemm.QUICK_SIZES if self.quick else gemm.FULL_SIZES

    def steps(self) -> list[str]:
        """Step names in order: the progress bar's total and labels (`run` calls its `on_step` with each)."""
        names = ["round 1", "dtypes", "round 2", "round 3"]
        if self.device == "cuda":
            names += ["overheads", "copies"]
        return names


@dataclass
class Calibration:
    measured: Measured
    profile: Profile
    details: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _require_torch(device: str) -> Any:
    try:
        import torch
    except ImportError:
        raise MissingDependency("calibration needs torch: pip install 'roofline[torch]'") from None
    if device == "cuda" and not torch.cuda.is_available():
        raise RooflineError("--device cuda: torch sees no CUDA device here; use --device cpu")
    return torch


def _gpu_profile(hw: str | None) -> Profile:
    from roofline.hardware.detect import DetectedGpu, match_gpu_profile
    from roofline.hardware.load import find_profile

    if hw:
        return find_profile(hw, kind="gpu")
    import torch

    props = torch.cuda.get_device_properties(0)
    name = match_gpu_profile(DetectedGpu(index=0, name=props.name, memory_bytes=int(props.total_memory),
                                         source="torch.cuda", sm_count=int(props.multi_processor_count)))
    if name is None:
        raise ProfileError(f"no GPU profile matches '{props.name}'; write one (see hardware_profiles/gpu/) "
                           "and pass it with --hw NAME")
    return find_profile(name, kind="gpu")


def _cache_totals(profile: Profile) -> list[tuple[str, float]]:
    from roofline.hardware.derived import cache_total_bytes

    return [(c.level, cache_total_bytes(profile, c.level)) for c in profile.caches]


def _plateau_caches(plateaus: list[Any], warnings: list[str]) -> tuple[list[MeasuredCache], float]:
    """Measured cache levels and DRAM bandwidth. A cache measured slower than the level behind it measured
    the kernel's per-row loop overhead, not the cache, so it is left out (the derived figure stays)."""
    dram = plateaus[-1]
    if dram.bandwidth_bytes_per_s is None:
        raise RooflineError("the bandwidth sweep reached no working set beyond the last-level cache")
    caches: list[MeasuredCache] = []
    slower = dram.bandwidth_bytes_per_s
    for p in reversed(plateaus[:-1]):
        if p.bandwidth_bytes_per_s is None:
            continue
        if p.bandwidth_bytes_per_s <= slower:
            warnings.append(f"{p.level}: measured {p.bandwidth_bytes_per_s / 1e9:.0f} GB/s, not above the next "
                            f"level's {slower / 1e9:.0f} GB/s: loop overhead, not the cache; derived figure kept")
            continue
        caches.insert(0, MeasuredCache(level=p.level, bandwidth_bytes_per_s=p.bandwidth_bytes_per_s,
                                       working_set_bytes=int(p.working_set_bytes)))
        slower = p.bandwidth_bytes_per_s
    return caches, dram.bandwidth_bytes_per_s


def base_profile(device: str, hw: str | None = None) -> Profile:
    """The profile a calibration extends: this CPU as detected, or the GPU's datasheet profile."""
    _require_torch(device)
    if device == "cuda":
        return _gpu_profile(hw)
    if hw is not None:
        raise RooflineError(f"--hw {hw}: names the datasheet profile of a GPU to calibrate, so it needs --device "
                            "cuda; a CPU calibration starts from this CPU as detected")
    from roofline.hardware.detect import detect_cpu

    return detect_cpu()


def _flag_plateaus(plateaus: list[Any], points: list[Any], unsteady: dict[str, float]) -> None:
    """Name a cache level or DRAM in `unsteady` (as its figure: `memory_bandwidth`, `caches[level=L3]`) when a
    point inside it was: the level's bandwidth is a median over those points."""
    for plateau in plateaus:
        inside = [p for p in points if plateau.lo_bytes < p.working_set_bytes <= plateau.hi_bytes]
        spreads = [unsteady[p.measurement.label] for p in inside if p.measurement.label in unsteady]
        if spreads:
            name = "memory_bandwidth" if plateau.level == "DRAM" else f"caches[level={plateau.level}]"
            unsteady[name] = max(spreads)


def _flag_peaks(curves: dict[str, list[Any]], unsteady: dict[str, float]) -> None:
    """Name a dtype's peak in `unsteady` (`peak_flops.fp32`) when the curve point that sets it was."""
    for key, points in curves.items():
        if key.startswith("torch") and points:
            best = max(points, key=lambda p: p.flops_per_s)
            if best.measurement.label in unsteady:
                unsteady[f"peak_flops.{key.split()[1]}"] = unsteady[best.measurement.label]


def run(plan: Plan, profile: Profile, on_step: Callable[[str], None] = lambda _: None) -> Calibration:
    """Measure everything the plan names on top of `profile` (from `base_profile`); `on_step(name)` is
    called as each step begins. The probes predictions rest on run in `rounds.ROUNDS` rounds between the
    other steps (see `roofline.measure.rounds`)."""
    from roofline.measure.probes import conv, gemm, memory, overhead
    from roofline.measure.probes.heap import keep_pages_mapped
    from roofline.measure.rounds import STEADY_LIMIT, RoundProbes
    from roofline.measure.timing import last_level_cache_bytes
    from roofline.model.ceilings import fit_gemm_curve, monotone_curve

    torch = _require_torch(plan.device)
    started = time.perf_counter()
    warnings: list[str] = []
    details: dict[str, Any] = {}
    heap_fixed = keep_pages_mapped()
    if not heap_fixed:
        warnings.append("not glibc: the C heap's trim policy could not be fixed, so kernels that allocate may "
                        "include first-touch page faults")

    def wanted(dtype: str) -> bool:
        return dtype == "fp32" or plan.dtypes is None or dtype in plan.dtypes

    if plan.device == "cuda":
        llc = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or None
        round_dtypes, numpy_dtypes = tuple(d for d in gemm.cuda_dtypes() if wanted(d)), ()
    else:
        llc = last_level_cache_bytes()
        round_dtypes = tuple(d for d in gemm.CPU_TORCH_DTYPES if wanted(d))
        numpy_dtypes = gemm.NUMPY_DTYPES if plan.dtypes is None else ()
    if llc is None:
        raise ProfileError("no last-level cache size found (sysfs); cannot size the bandwidth sweep")
    probes = RoundProbes(plan.device, llc, round_dtypes, plan.gemm_sizes(), conv.shapes(plan.quick),
                         plan.gemm_budget_s, plan.memory_budget_s, plan.conv_budget_s,
                         memory_sizes=memory.working_sets(llc, plan.memory_step),
                         memory_kernels=plan.memory_kernels, memory_budget_s=plan.memory_budget_s, host_probes=True)
    measurements = []

    on_step("round 1")
    probes.round()

    on_step("dtypes")
    curves: dict[str, list[gemm.GemmPoint]] = {}
    for dtype in numpy_dtypes:
        curves[f"numpy {dtype}"] = gemm.sweep("numpy", dtype, plan.gemm_sizes(), llc_bytes=llc,
                                              budget_s=plan.gemm_budget_s)

    on_step("round 2")
    probes.round()

    on_step("round 3")
    probes.round()
    unsteady = probes.steady()
    curves.update({f"torch {dtype}": points for dtype, points in probes.gemm.items()})
    order = [f"torch {d}" for d in gemm.CUDA_TORCH_DTYPES] + [f"numpy {d}" for d in gemm.NUMPY_DTYPES]
    curves = {key: curves[key] for key in sorted(curves, key=order.index)}
    measurements += [p.measurement for key, c in curves.items() if key.startswith("numpy") for p in c]
    points = probes.bandwidth
    totals = [("L2", float(llc))] if plan.device == "cuda" else _cache_totals(profile)
    plateaus = memory.plateaus(points, totals)
    _flag_plateaus(plateaus, points, unsteady)
    caches, dram = _plateau_caches(plateaus, warnings)
    conversion: dict[str, float] = {}
    fault_rate = None
    if plan.device == "cpu":
        conversion = probes.layout_conversion(unsteady)
        details["layout_conversion_bytes_per_s"] = conversion
        fault_rate = probes.page_fault_bytes_per_s(unsteady)
        details["page_fault_bytes_per_s"] = fault_rate
    details["bandwidth"] = [{"kernel": p.kernel, "working_set_bytes": p.working_set_bytes,
                             "bytes_per_s": p.bytes_per_s, "spread": p.measurement.spread} for p in points]
    details["plateaus"] = [{"level": p.level, "from_bytes": p.lo_bytes, "to_bytes": p.hi_bytes,
                            "bandwidth_bytes_per_s": p.bandwidth_bytes_per_s} for p in plateaus]
    peak = {key.split()[1]: max(p.flops_per_s for p in c) for key, c in curves.items() if key.startswith("torch")}
    _flag_peaks(curves, unsteady)
    details["gemm"] = {key: [{"n": p.n, "flops_per_s": p.flops_per_s, "spread": p.measurement.spread} for p in c]
                       for key, c in curves.items()}
    details["skinny_gemm_fp32"] = [{"small": p.small, "other": p.other, "flops_per_s": p.flops_per_s}
                                   for p in probes.skinny]
    details["outer_gemm_fp32"] = [{"inner": p.small, "other": p.other, "flops_per_s": p.flops_per_s}
                                  for p in probes.outer]
    details["conv"] = [{"kind": r.shape.key, "flops": r.shape.flops, "flops_per_s": r.flops_per_s}
                       for r in probes.conv]
    details["kernels"] = [{"kernel": r.key, "bytes": r.bytes, "bytes_per_s": r.bytes_per_s}
                          for r in probes.kernel_rates]
    fp32_fit = fit_gemm_curve(monotone_curve([(p.n, p.flops_per_s) for p in curves["torch fp32"]]))
    conv_points = conv.efficiency_points(probes.conv, conv.per_pass(probes.back_to_back), fp32_fit, peak["fp32"])
    measurements += probes.measurements()
    tiny = probes.tiny
    sync_s = probes.sync_s(unsteady)

    launch = None
    if plan.device == "cuda":
        on_step("overheads")
        launch = overhead.dispatch("cuda")
        measurements.append(launch)

    h2d: dict[str, float] = {}
    if plan.device == "cuda":
        on_step("copies")
        copy_points = overhead.copies(overhead.COPY_SIZES_QUICK if plan.quick else overhead.COPY_SIZES_FULL)
        measurements += [p.measurement for p in copy_points]
        summary = overhead.copy_summary(copy_points)
        details["copies"] = summary
        h2d = {k.split()[1]: v["bytes_per_s"] for k, v in summary.items() if k.startswith("h2d")}

    environment = current_environment(plan.device)
    environment["torch_threads"] = torch.get_num_threads()
    environment["quick"] = int(plan.quick)
    environment["heap"] = "glibc trim and mmap thresholds fixed while calibrating" if heap_fixed else "default"
    measured = Measured(
        peak_flops=peak, memory_bandwidth=dram, caches=caches,
        gemm_curves={key.split()[1]: [MeasuredGemmPoint(n=p.n, flops_per_s=p.flops_per_s) for p in c]
                     for key, c in curves.items() if key.startswith("torch")},
        skinny_gemm_fp32=[MeasuredSkinnyGemmPoint(small=p.small, other=p.other, flops_per_s=p.flops_per_s)
                          for p in probes.skinny],
        outer_gemm_fp32=[MeasuredSkinnyGemmPoint(small=p.small, other=p.other, flops_per_s=p.flops_per_s)
                         for p in probes.outer],
        gemv_rows_fp32=[MeasuredGemvRowPoint(layout=p.layout, row_elements=p.row_elements, bytes_per_s=p.bytes_per_s)
                        for p in probes.rows],
        conv_efficiency=conv.summary(conv_points),
        conv_efficiency_points=[MeasuredConvPoint(key=key, weight_share=share, efficiency=eff)
                                for key, points in conv_points.items() for share, eff in points],
        conv_fixed_s=conv.per_pass(probes.in_context), conv_fixed_warm_s=conv.per_pass(probes.back_to_back),
        host_to_device_bytes_per_s=h2d,
        kernel_bytes_per_s={r.key: r.bytes_per_s for r in probes.kernel_rates},
        dispatch_s_by_kind={kind: m.median for kind, m in probes.dispatch.items()},
        page_fault_bytes_per_s=fault_rate if fault_rate and fault_rate != float("inf") else None,
        layout_conversion_bytes_per_s=conversion,
        kernel_launch_s=launch.median if launch is not None else None,
        framework_dispatch_s=tiny.median, sync_s=sync_s, unsteady=unsteady, environment=environment)
    if plan.device == "cpu":
        from roofline.hardware.detect import detect_cpu

        profile = detect_cpu(measured=measured)
    else:
        profile = profile.model_copy(update={"measured": measured})
    warnings += [w for m in measurements for w in m.warnings]
    warnings += [f"{label}: its rounds' medians lie {spread:.0%} apart (over {STEADY_LIMIT:.0%}): the machine's "
                 "speed varied while it was measured; its middle round is kept (the slower of two)"
                 for label, spread in sorted(unsteady.items())]
    details["elapsed_s"] = time.perf_counter() - started
    details["overheads"] = {"framework_dispatch_s": tiny.median, "kernel_launch_s": measured.kernel_launch_s,
                            "sync_s": sync_s}
    return Calibration(measured, profile, details, warnings)


def write_profile(profile: Profile, path: Path, force: bool, create_directory: bool = False) -> None:
    """YAML of the calibrated profile, written whole or not at all; refuses to replace an existing file unless
    `force`. Its directory is created only when `create_directory` (the default calibrated directory, on first
    use): a directory the user named that does not exist is a typo to report, not a path to make."""
    import yaml

    from roofline.files import check_target, make_parent, write_text_atomically

    check_target(path, "--out", force, parent_must_exist=not create_directory)
    header = ("# Written by `roofline calibrate`: `measured` holds this machine's ceilings and the environment\n"
              "# they were taken in; roofline refuses to apply them elsewhere.\n")
    make_parent(path)
    body = yaml.safe_dump(profile.model_dump(mode="json", exclude_none=True), sort_keys=False)
    write_text_atomically(path, header + body, "--out", force)



def this_machine() -> tuple[Profile, Path | None]:
    """This CPU's detected profile, with its calibration when the default calibrated file exists.

    A calibration from another environment is refused (CalibrationMismatch), not silently used.
    """
    from roofline.hardware.detect import detect_cpu
    from roofline.hardware.load import load_profile

    profile = detect_cpu()
    path = calibrated_path(profile.name)
    if not path.is_file():
        return profile, None
    calibrated = load_profile(path.resolve())
    if calibrated.measured is None:
        return profile, None
    check_environment(calibrated.measured)
    return calibrated, path


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _keywise(dicts: list[dict[str, float]]) -> dict[str, float]:
    """Each key's median over the dicts that have it, in first-seen key order."""
    keys = list(dict.fromkeys(k for d in dicts for k in d))
    return {k: statistics.median(d[k] for d in dicts if k in d) for k in keys}


def _pointwise(lists: list[list[Any]], key: Callable[[Any], Any], value: str) -> list[Any]:
    """Points matched by `key` across the lists, each taking the median of its `value` field, in first-seen
    order; a point only some calibrations reached (a GEMM size past one run's time limit) keeps theirs."""
    groups: dict[Any, list[Any]] = {}
    for points in lists:
        for p in points:
            groups.setdefault(key(p), []).append(p)
    return [group[0].model_copy(update={value: statistics.median(getattr(p, value) for p in group)})
            for group in groups.values()]


def _combined(figure: CalibratedFigure, values: list[Any]) -> Any:
    """Several calibrations' values of one figure as one, the way its registry row says."""
    if figure.combine == "median":
        return _median(values)
    if figure.combine == "median per key":
        return _keywise(values)
    key = attrgetter(*figure.point_key)
    if figure.combine == "median per point":
        return _pointwise(values, key, figure.point_value)
    return {k: _pointwise([v.get(k, []) for v in values], key, figure.point_value)
            for k in dict.fromkeys(k for v in values for k in v)}


def combine(calibrations: list[Measured]) -> Measured:
    """One calibration of this machine from several taken at different times: every figure the median of
    theirs. On a shared machine a calibration describes the minute it ran in (a 512^3 fp32 product read
    79, 111 and 134 GFLOP/s within one hour here); calibrations spread over a span of live runs describe
    that span. The environment is the first's, with the number combined and the last one's date."""
    if not calibrations:
        raise RooflineError("no calibrations to combine")
    first, runs = calibrations[0], len(calibrations)
    return first.model_copy(update={
        **{figure.name: _combined(figure, [getattr(m, figure.name) for m in calibrations])
           for figure in CALIBRATED_FIGURES},
        "environment": {**first.environment, "combined_calibrations": runs,
                        "date_last": calibrations[-1].environment.get("date")},
    })

"""Live PyTorch runs against predictions: the step time, and where (which op kinds, which layers) the
model is right or wrong.

For each batch size the same workload is predicted (`roofline.model.step`) and run (`roofline.measure.live`), and the
step is timed by `roofline.measure.timing` (warm-up excluded, median of repeats, inter-quartile spread,
device synchronized before each clock read). The error is signed, `(predicted / measured - 1) x 100`, so a
negative error means the model promised more speed than the machine delivered. The profile defaults to
this machine's: calibrated ceilings when `roofline calibrate` has run here, else the detected datasheet
estimate, and the output says which, because a validation against uncalibrated ceilings tests the
datasheet, not the cost model.

torch is imported inside functions only: importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.errors import CalibrationMismatch, RooflineError
from roofline.hardware.schema import Profile
from roofline.measure.timing import Measurement
from roofline.workload.request import ModelRequest, is_user_module
from roofline.workload.trace import load_module, user_code

MIN_TIMED_REPEATS = 5
"""Fewest timed samples per batch: the median and quartiles of fewer mean little (Timer's MIN_REPEATS)."""
BUDGET_MARGIN = 1.5
"""The timing budget is at least this many times (repeats x one warm step), so the budget never ends the
repeats before MIN_TIMED_REPEATS samples when a step is slower than expected (e.g. a busy machine)."""
WARMUP_STEPS = 2
"""Untimed steps before timing, beyond Timer's own warm-up call: the first steps allocate optimizer state,
create oneDNN/cuDNN primitives for the shapes and fill the caching allocator."""


@dataclass(frozen=True)
class ProfileChoice:
    """The profile predictions use, and where its ceilings come from."""

    profile: Profile
    source: str
    """'calibrated' (measured ceilings), 'detected' (this CPU, estimated) or 'datasheet' (a shipped YAML)."""
    path: str | None = None
    warnings: tuple[str, ...] = ()


def _without_calibration(profile: Profile, source: str, why: str) -> ProfileChoice:
    return ProfileChoice(profile.model_copy(update={"measured": None}), source, None,
                         (f"{why}; predicting with {source} ceilings",))


def calibrate_in_child(device: str, quick: bool, out: str | None = None,
                       dtypes: str | None = None) -> tuple[Profile, str, float]:
    """Run `roofline calibrate` in a child process and return (the calibrated profile, its path, seconds).
    A child because calibration fixes the C heap's trim policy for its own process (`roofline.measure.probes.heap`),
    and the live steps timed after it must run under the allocator's default policy, as the user's would.
    `out` writes the profile there (replacing it) instead of the default calibrated path; `dtypes` is
    calibrate's --dtypes."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from roofline.hardware.load import load_profile

    started = time.perf_counter()
    argv = ["calibrate", "--device", device, "--json", *(["--quick"] if quick else []),
            *(["--out", out, "--force"] if out else []), *(["--dtypes", dtypes] if dtypes else [])]
    code = f"import sys; from cli import main; sys.exit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RooflineError(f"the calibration failed ({last}); run `roofline calibrate` and read its error")
    path = Path(json.loads(done.stdout)["profile_path"])
    return load_profile(path), str(path), time.perf_counter() - started


def quick_calibration(device: str) -> ProfileChoice:
    """Calibrate this machine quickly (`roofline calibrate --quick`) and save it where later runs find it:
    validation exists to test the cost model, which needs this machine's measured ceilings."""
    profile, path, seconds = calibrate_in_child(device, quick=True)
    return ProfileChoice(profile, "calibrated", path, (
        f"no calibration of this machine: ran a quick one ({seconds:.0f} s) and saved it "
        f"to {path}; `roofline calibrate --force` takes a fuller one",))


def choose_profile(device: str, hw: str | None, calibrate: bool = True) -> ProfileChoice:
    """`--hw` when given, else this machine's profile for `device`, calibrated when a calibration exists
    and calibrated now (quickly) when none does, unless `calibrate` is False.

    A calibration from another environment is not applied: the choice falls back to the uncalibrated
    profile and carries the mismatch as a warning, so the user learns why errors may be large.
    """
    from pathlib import Path

    from roofline.hardware.load import find_profile, load_profile
    from roofline.measure.calibrate import calibrated_path, check_environment, this_machine

    if hw:
        profile = find_profile(hw)
        if profile.kind != ("gpu" if device == "cuda" else "cpu"):
            raise RooflineError(f"--hw '{hw}' is a {profile.kind} profile but --device is {device}")
        if profile.measured is None:
            return ProfileChoice(profile, "datasheet")
        try:
            check_environment(profile.measured)
        except CalibrationMismatch as exc:
            return _without_calibration(profile, "datasheet", str(exc))
        return ProfileChoice(profile, "calibrated", hw if Path(hw).is_file() else None)
    if device == "cpu":
        try:
            profile, path = this_machine()
        except CalibrationMismatch as exc:
            from roofline.hardware.detect import detect_cpu

            return _without_calibration(detect_cpu(), "detected", str(exc))
        if path is None and calibrate:
            return quick_calibration("cpu")
        if path is None:
            return ProfileChoice(profile, "detected", None, (
                "no calibration of this machine: predictions use detected (estimated) ceilings; "
                "run `roofline calibrate` first to validate the cost model rather than the estimate",))
        return ProfileChoice(profile, "calibrated", str(path))
    from roofline.measure.calibrate import base_profile

    datasheet = base_profile("cuda")
    path = calibrated_path(datasheet.name)
    if path.is_file():
        calibrated = load_profile(path.resolve())
        if calibrated.measured is not None:
            try:
                check_environment(calibrated.measured)
            except CalibrationMismatch as exc:
                return _without_calibration(datasheet, "datasheet", str(exc))
            return ProfileChoice(calibrated, "calibrated", str(path))
    if calibrate and not path.exists():
        return quick_calibration("cuda")
    return ProfileChoice(datasheet, "datasheet", None, (
        f"no calibration of this GPU: predictions use {datasheet.name}'s datasheet ceilings; "
        "run `roofline calibrate --device cuda` first",))


def live_model(req: ModelRequest) -> Any:
    """A real (weights allocated and initialised) torch module for the request, on the host."""
    model = _required_model(req)
    if not is_user_module(model):
        from roofline.workload.zoo import build_module, get_model

        spec = get_model(model)
        return build_module(spec.name, input_size=req.input_size, num_classes=req.num_classes, seq_len=req.seq_len)
    obj = load_module(model, meta=False)
    if any(p.is_meta for p in obj.parameters()):
        raise RooflineError(f"--model '{req.model}': the module lives on the meta device (no weights); "
                            "give a Module subclass or a factory so validate can build real weights")
    return obj


def _token_range(module: Any) -> int | None:
    """Smallest vocabulary among the module's embeddings: token ids below it are valid for all of them."""
    torch = _torch()
    sizes = [m.num_embeddings for m in module.modules() if isinstance(m, torch.nn.Embedding)]
    return min(sizes) if sizes else None


def live_input(req: ModelRequest, module: Any, batch: int) -> Any:
    """One batch of host-side inputs: the zoo's example, or random data of --input-shape (token ids when
    the module starts with an embedding, as the tracer's int64 fallback assumes)."""
    torch = _torch()
    model = req.model or ""
    if not is_user_module(model):
        from roofline.workload.zoo import example_input

        return example_input(model, batch, input_size=req.input_size, seq_len=req.seq_len)
    shape = (batch, *_required_input_shape(req)[1:])
    generator = torch.Generator().manual_seed(0)
    vocab = _token_range(module)
    if vocab is not None:
        return torch.randint(0, vocab, shape, generator=generator)
    return torch.randn(shape, generator=generator)


def single_output(module: Any) -> Any:
    """`module` wrapped to return its first output where it returns a tuple, list or dict (Hugging Face
    style: last hidden state, pooled output), its tensor otherwise: `live.make_step`'s loss needs one."""
    torch = _torch()

    class FirstOutput(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: Any) -> Any:
            out = self.inner(x)
            if isinstance(out, dict):
                out = next(iter(out.values()))
            return out[0] if isinstance(out, (tuple, list)) else out

    return FirstOutput(module)


def _torch() -> Any:
    from roofline.measure.live import require_torch

    return require_torch()


class _Compared:
    """A predicted and a measured time side by side; the error exists only where both do."""

    predicted_s: float | None
    measured_s: float | None

    @property
    def error_pct(self) -> float | None:
        if not self.predicted_s or not self.measured_s:
            return None
        return error_pct(self.predicted_s, self.measured_s)


@dataclass(frozen=True)
class KindRow(_Compared):
    """Predicted vs profiled seconds per step for one op kind; None where one side has no such kind."""

    kind: str
    predicted_s: float | None
    measured_s: float | None


@dataclass(frozen=True)
class LayerRow(_Compared):
    """Predicted vs measured forward seconds of one leaf module call (named as the tracer names ops)."""

    name: str
    kind: str
    predicted_s: float | None
    measured_s: float | None


@dataclass(frozen=True)
class Run:
    """One batch size: the prediction, the timed steps and the profiled breakdowns; the comparisons are computed
    from them, so the same live run can be compared with another prediction (`repredicted`)."""

    batch_size: int
    prediction: Any
    """roofline.model.step.StepPrediction"""
    measurement: Any
    """roofline.measure.timing.Measurement of the whole step"""
    measured_kinds: dict[str, float] = field(default_factory=dict)
    """torch.profiler self seconds per op kind and step (profiler overhead included)."""
    measured_layers: dict[str, float] = field(default_factory=dict)
    """Forward seconds per leaf-module call, when per-layer timing was asked for."""
    fresh_page_bytes: float | None = None
    """Measured bytes of freshly mapped memory first-touched per step (see fresh_page_bytes_per_step)."""

    @property
    def by_kind(self) -> tuple[KindRow, ...]:
        return kind_rows(predicted_by_kind(self.prediction), self.measured_kinds)

    @property
    def profiled_step_s(self) -> float:
        """Sum of the profiler's per-kind self times for one step."""
        return sum(self.measured_kinds.values())

    @property
    def layers(self) -> tuple[LayerRow, ...]:
        return layer_rows(self.prediction, self.measured_layers) if self.measured_layers else ()

    @property
    def fresh_page_s(self) -> float | None:
        """Those bytes at the calibrated first-touch rate: the step time the allocator costs."""
        rate = self.prediction.ceilings.page_fault_bytes_per_s
        return self.fresh_page_bytes / rate if self.fresh_page_bytes is not None and rate else None

    @property
    def predicted_s(self) -> float:
        return float(self.prediction.step_time_s)

    @property
    def measured_s(self) -> float:
        return float(self.measurement.median)

    @property
    def error_pct(self) -> float:
        return error_pct(self.predicted_s, self.measured_s)


@dataclass(frozen=True)
class Case:
    """What was run: a model, where, at which precision, inference or training, and the environment."""

    model: str
    device: str
    precision: str
    train: bool
    optimizer: str
    environment: dict[str, Any]


@dataclass(frozen=True)
class Validation(Case):
    choice: ProfileChoice
    runs: list[Run]
    warnings: list[str] = field(default_factory=list)

    @property
    def median_abs_error_pct(self) -> float:
        return statistics.median(abs(r.error_pct) for r in self.runs)

    @property
    def max_abs_error_pct(self) -> float:
        return max(abs(r.error_pct) for r in self.runs)


def error_pct(predicted_s: float, measured_s: float) -> float:
    """Signed relative error of a prediction: positive when it predicts a slower step than measured."""
    return (predicted_s / measured_s - 1.0) * 100.0


def predicted_by_kind(prediction: Any) -> dict[str, float]:
    """Predicted seconds per op kind (all passes), free ops left out."""
    out: dict[str, float] = {}
    for cost in prediction.ops:
        if cost.bound != "free":
            out[cost.kind] = out.get(cost.kind, 0.0) + cost.time_s
    return out


def kind_rows(predicted: dict[str, float], measured: dict[str, float]) -> tuple[KindRow, ...]:
    """Both sides joined on kind, largest measured (else predicted) first."""
    kinds = set(predicted) | set(measured)
    rows = [KindRow(k, predicted.get(k), measured.get(k)) for k in kinds]
    return tuple(sorted(rows, key=lambda r: -(r.measured_s or r.predicted_s or 0.0)))


def layer_times(module: Any, step: Callable[[], Any], device: Any, steps: int) -> dict[str, float]:
    """Mean forward seconds per leaf-module call over `steps` steps, named like the tracer's ops: the
    module's qualified name, '#k' for its k-th call in one forward. Hooks synchronize the device around
    each call, so on a GPU this serializes kernels (per-layer times, not a faster or slower step)."""
    torch = _torch()
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    totals: dict[str, float] = {}
    calls: dict[str, int] = {}
    starts: dict[str, float] = {}
    handles = []

    def pre(name: str) -> Callable[..., None]:
        def hook(*_: Any) -> None:
            if sync:
                sync()
            starts[name] = time.perf_counter()
        return hook

    def post(name: str) -> Callable[..., None]:
        def hook(*_: Any) -> None:
            if sync:
                sync()
            elapsed = time.perf_counter() - starts[name]
            calls[name] = calls.get(name, 0) + 1
            key = name if calls[name] == 1 else f"{name}#{calls[name]}"
            totals[key] = totals.get(key, 0.0) + elapsed
        return hook

    for name, sub in module.named_modules():
        if name and not any(True for _ in sub.children()):
            handles.append(sub.register_forward_pre_hook(pre(name)))
            handles.append(sub.register_forward_hook(post(name)))
    try:
        for _ in range(steps):
            calls.clear()
            step()
    finally:
        for h in handles:
            h.remove()
    return {k: v / steps for k, v in totals.items()}


def layer_rows(prediction: Any, measured: dict[str, float]) -> tuple[LayerRow, ...]:
    """Forward-pass predictions per op name joined with measured leaf-module times, in execution order."""
    predicted: dict[str, tuple[str, float]] = {}
    for cost in prediction.ops:
        if cost.pass_ == "forward" and cost.kind not in ("optimizer", "cast"):
            kind, seconds = predicted.get(cost.name, (cost.kind, 0.0))
            predicted[cost.name] = (kind, seconds + cost.time_s)
    rows = [LayerRow(name, kind, seconds if seconds > 0 else None, measured.get(name))
            for name, (kind, seconds) in predicted.items()]
    rows += [LayerRow(name, "?", None, seconds) for name, seconds in measured.items() if name not in predicted]
    return tuple(rows)


def _measure_step(step: Callable[[], Any], device: Any, label: str, budget_s: float, repeats: int,
                  clock: Callable[[], float] = time.perf_counter) -> Any:
    """Warm up, then time with the shared Timer; the budget is stretched to fit `repeats` samples. `clock`
    is the Timer's (tests pass a fake one)."""
    from roofline.measure.timing import Timer

    torch = _torch()
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    started = clock()
    for _ in range(WARMUP_STEPS):
        step()
    if sync:
        sync()
    one_step_s = (clock() - started) / WARMUP_STEPS
    budget = max(budget_s, BUDGET_MARGIN * repeats * one_step_s)
    return Timer(step, label=label, budget_s=budget, min_repeats=repeats, sync=sync, clock=clock).measure()


FAULT_COUNT_STEPS = 3
"""Steps over which minor page faults are counted, after timing (the allocator is in its steady state)."""


def fresh_page_bytes_per_step(step: Callable[[], Any], steps: int = FAULT_COUNT_STEPS) -> float | None:
    """Bytes of freshly mapped memory a step first-touches (minor page faults x page size): what glibc's
    allocator returned to the kernel since the last step and took back (mmap'd large tensors, a trimmed
    heap top). The cost model predicts them by replaying the step's requests
    (`roofline.model.cpu_runtime.heap_requests`); this
    shows what a step really pays.
    None where the platform has no getrusage."""
    try:
        import resource
    except ImportError:
        return None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    return faults * resource.getpagesize() / steps


@dataclass(frozen=True)
class LiveBatch:
    """One batch size run live: the timed steps and the profiled breakdowns, nothing predicted."""

    batch_size: int
    measurement: Measurement
    kinds: dict[str, float] = field(default_factory=dict)
    """torch.profiler self seconds per op kind and step."""
    layers: dict[str, float] = field(default_factory=dict)
    """Forward seconds per leaf-module call, when per-layer timing was asked for."""
    fresh_page_bytes: float | None = None

    def as_dict(self) -> dict[str, Any]:
        m = self.measurement
        return {"batch_size": self.batch_size, "kinds": self.kinds, "layers": self.layers,
                "fresh_page_bytes": self.fresh_page_bytes,
                "measurement": {"label": m.label, "samples_s": list(m.samples_s), "number": m.number,
                                "stop_reason": m.stop_reason}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LiveBatch:
        m = d["measurement"]
        return cls(d["batch_size"], Measurement(m["label"], tuple(m["samples_s"]), m["number"], m["stop_reason"]),
                   d["kinds"], d["layers"], d["fresh_page_bytes"])


@dataclass(frozen=True)
class LiveRuns(Case):
    """A model run live at several batch sizes (`run_live`), in a form that crosses process boundaries
    (`as_dict`): the accuracy benchmark measures each case in a process of its own, as a user's script runs."""

    batches: list[LiveBatch]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "device": self.device, "precision": self.precision, "train": self.train,
                "optimizer": self.optimizer, "environment": self.environment, "warnings": self.warnings,
                "batches": [b.as_dict() for b in self.batches]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LiveRuns:
        return cls(d["model"], d["device"], d["precision"], d["train"], d["optimizer"], d["environment"],
                   [LiveBatch.from_dict(b) for b in d["batches"]], d["warnings"])


def _measure_batch(module: Any, step: Callable[[], Any], device: Any, batch: int, label: str, budget_s: float,
                   repeats: int, kind_steps: int, per_layer: bool, count_faults: bool) -> LiveBatch:
    """The timed step, the bytes it first-touches (when `count_faults`), the profiler's seconds per kind, and
    (when asked) forward seconds per leaf module."""
    from roofline.measure.live import time_by_kind

    torch = _torch()
    try:
        measurement = _measure_step(step, device, label, budget_s, repeats)
        fresh = fresh_page_bytes_per_step(step) if count_faults else None
        kinds = time_by_kind(step, device, kind_steps) if kind_steps else {}
        layers = layer_times(module, step, device, max(kind_steps, 1)) if per_layer else {}
    except torch.cuda.OutOfMemoryError:
        raise RooflineError(f"{label}: out of GPU memory; use a smaller --batch or a 16-bit --precision") from None
    return LiveBatch(batch, measurement, kinds, layers, fresh)


def _check_request(req: ModelRequest, precision_name: str) -> None:
    """Raise on a model or precision that does not exist, without importing torch (a zoo name is looked up,
    a module:attr reference is loaded by the first live step)."""
    from roofline.workload.precision import get_precision
    from roofline.workload.request import workload_builder
    from roofline.workload.trace import import_reference

    model = _required_model(req)
    get_precision(precision_name)
    workload_builder(req)
    if is_user_module(model):
        _required_input_shape(req)
        import_reference(model)


def _required_model(req: ModelRequest) -> str:
    if req.model is None:
        raise RooflineError("validate needs --model NAME or --model module:attr (a single --op has no live run)")
    return req.model


def _required_input_shape(req: ModelRequest) -> tuple[int, ...]:
    if not req.input_shape:
        raise RooflineError(f"--model '{req.model}': a module:attr model needs --input-shape, e.g. 1,3,224,224")
    return req.input_shape


def _checked(device_name: str, repeats: int, budget_s: float, kind_steps: int) -> Any:
    """The torch device, once the arguments are known good (before any calibration or live run)."""
    from roofline.measure.live import resolve_device

    if repeats < 1 or budget_s <= 0 or kind_steps < 0:
        raise RooflineError("--repeats must be >= 1, --budget > 0 and --kind-steps >= 0")
    return resolve_device(device_name)


def run_live(req: ModelRequest, device_name: str, batches: list[int], precision_name: str = "fp32",
             train: bool = False, optimizer: str = "sgd", budget_s: float = 2.0, repeats: int = MIN_TIMED_REPEATS,
             kind_steps: int = 2, per_layer: bool = False, on_batch: Callable[[int], None] = lambda _: None,
             count_faults: bool = True) -> LiveRuns:
    """Run `req` live at each batch size on `device_name` ('cpu' or 'cuda'): the measuring half of `validate`."""
    from roofline.measure.calibrate import current_environment
    from roofline.measure.live import make_step
    from roofline.workload.precision import get_precision
    from roofline.workload.request import workload_builder

    torch = _torch()
    device = _checked(device_name, repeats, budget_s, kind_steps)
    precision = get_precision(precision_name)
    name, _ = workload_builder(req)
    module = live_model(req)
    environment = current_environment(device_name)
    environment["torch_threads"] = torch.get_num_threads()
    environment["torch_interop_threads"] = torch.get_num_interop_threads()
    warnings: list[str] = []
    out = []
    for batch in batches:
        on_batch(batch)
        example = live_input(req, module, batch)
        step = make_step(single_output(module) if train else module, example, device, precision.name, train,
                         optimizer)
        with user_code(name, "its step") if is_user_module(name) else contextlib.nullcontext():
            live = _measure_batch(module, step, device, batch, f"{name} batch {batch}", budget_s, repeats,
                                  kind_steps, per_layer, count_faults)
        warnings.extend(live.measurement.warnings)
        out.append(live)
    return LiveRuns(name, device_name, precision.name, train, optimizer, environment, out, warnings)


def compare(req: ModelRequest, live: LiveRuns, choice: ProfileChoice) -> Validation:
    """Each live batch beside the prediction of `choice`'s profile for it: the comparing half of `validate`."""
    from roofline.model.step import StepOptions, predict_step
    from roofline.workload.precision import get_precision
    from roofline.workload.request import workload_builder

    _, build = workload_builder(req)
    options = StepOptions(train=live.train, optimizer=live.optimizer)
    warnings = list(choice.warnings)
    runs = []
    for batch in live.batches:
        workload = build(batch.batch_size)
        if workload.unsupported:
            warnings.append(f"batch {batch.batch_size}: ops with no formula, predicted as zero time: "
                            + ", ".join(f"{k} x{v}" for k, v in workload.unsupported.items()))
        prediction = predict_step(workload, choice.profile, get_precision(live.precision), options)
        runs.append(Run(batch.batch_size, prediction, batch.measurement, batch.kinds, batch.layers,
                        batch.fresh_page_bytes))
    return Validation(live.model, live.device, live.precision, live.train, live.optimizer, live.environment, choice,
                      runs, warnings + live.warnings)


def validate(req: ModelRequest, device_name: str, batches: list[int], precision_name: str = "fp32",
             train: bool = False, optimizer: str = "sgd", hw: str | None = None, budget_s: float = 2.0,
             repeats: int = MIN_TIMED_REPEATS, kind_steps: int = 2, per_layer: bool = False,
             on_batch: Callable[[int], None] = lambda _: None, calibrate: bool = True) -> Validation:
    """Predict and run `req` at each batch size on `device_name` ('cpu' or 'cuda'). Every argument is checked
    before anything slow happens (a calibration takes tens of seconds and writes into the user's cache)."""
    _check_request(req, precision_name)
    _checked(device_name, repeats, budget_s, kind_steps)
    choice = choose_profile(device_name, hw, calibrate)
    live = run_live(req, device_name, batches, precision_name, train, optimizer, budget_s, repeats, kind_steps,
                    per_layer, on_batch)
    return compare(req, live, choice)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def run_dict(run: Run, per_layer: bool) -> dict[str, Any]:
    m = run.measurement
    out: dict[str, Any] = {
        "batch_size": run.batch_size, "predicted_s": run.predicted_s, "measured_s": run.measured_s,
        "error_pct": run.error_pct, "measured_q1_s": m.q1, "measured_q3_s": m.q3, "measured_iqr_s": m.iqr,
        "measured_min_s": m.min, "spread": _finite(m.spread), "repeats": len(m.samples_s), "steps_per_sample": m.number,
        "stop_reason": m.stop_reason, "samples_s": list(m.samples_s),
        "predicted_samples_per_s": run.prediction.samples_per_s,
        "measured_samples_per_s": run.batch_size / run.measured_s,
        "predicted_host_s": run.prediction.host_s, "predicted_device_s": run.prediction.device_s,
        "profiled_step_s": run.profiled_step_s,
        "fresh_page_bytes_per_step": run.fresh_page_bytes, "fresh_page_s_per_step": run.fresh_page_s,
        "predicted_fresh_page_bytes_per_step": run.prediction.fresh_bytes,
        "by_kind": [{"kind": k.kind, "predicted_s": k.predicted_s, "measured_s": k.measured_s,
                     "error_pct": k.error_pct} for k in run.by_kind],
    }
    if per_layer:
        out["layers"] = [{"name": r.name, "op": r.kind, "predicted_s": r.predicted_s, "measured_s": r.measured_s,
                          "error_pct": r.error_pct} for r in run.layers]
    return out


def validation_dict(v: Validation, per_layer: bool = False) -> dict[str, Any]:
    """The JSON document of `roofline validate`."""
    ceilings = v.runs[0].prediction.ceilings if v.runs else None
    return {
        "model": v.model, "device": v.device, "precision": v.precision, "train": v.train,
        "optimizer": v.optimizer if v.train else None,
        "profile": {"name": v.choice.profile.name, "source": v.choice.source, "calibrated": v.choice.source ==
                    "calibrated", "path": v.choice.path,
                    "provenance": dict(ceilings.provenance) if ceilings else {}},
        "environment": v.environment,
        "threads": v.environment.get("torch_threads"),
        "timing": {"warmup_steps": WARMUP_STEPS + 1, "statistic": "median of repeats",
                   "spread": "inter-quartile range / median",
                   "breakdown": "torch.profiler self time per op kind (profiler overhead included)"},
        "error_definition": "error_pct = (predicted_s / measured_s - 1) * 100",
        "runs": [run_dict(r, per_layer) for r in v.runs],
        "median_abs_error_pct": v.median_abs_error_pct,
        "max_abs_error_pct": v.max_abs_error_pct,
        "warnings": v.warnings,
    }

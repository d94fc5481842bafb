"""A model run live at several batch sizes: each step timed by `roofline.measure.timing` (warm-up excluded,
median of repeats, inter-quartile spread, device synchronized before each clock read), the bytes it
first-touches, the profiler's seconds per op kind and, when asked, each leaf module's forward. Nothing here
predicts; `roofline.validate` puts predictions beside these runs. torch is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.errors import RooflineError
from roofline.measure.live_model import live_input, live_model, live_torch, single_output
from roofline.measure.timing import Measurement
from roofline.workload.request import ModelRequest, is_user_module
from roofline.workload.trace import user_code

MIN_TIMED_REPEATS = 5
"""Fewest timed samples per batch: the median and quartiles of fewer mean little (Timer's MIN_REPEATS)."""
BUDGET_MARGIN = 1.5
"""The timing budget is at least this many times (repeats x one warm step), so the budget never ends the
repeats before MIN_TIMED_REPEATS samples when a step is slower than expected (e.g. a busy machine)."""
WARMUP_STEPS = 2
"""Untimed steps before timing, beyond Timer's own warm-up call: the first steps allocate optimizer state,
create oneDNN/cuDNN primitives for the shapes and fill the caching allocator."""


@dataclass(frozen=True)
class Case:
    """What was run: a model, where, at which precision, inference or training, and the environment."""

    model: str
    device: str
    precision: str
    train: bool
    optimizer: str
    environment: dict[str, Any]


def layer_times(module: Any, step: Callable[[], Any], device: Any, steps: int) -> dict[str, float]:
    """Mean forward seconds per leaf-module call over `steps` steps, named like the tracer's ops: the
    module's qualified name, '#k' for its k-th call in one forward. Hooks synchronize the device around
    each call, so on a GPU this serializes kernels (per-layer times, not a faster or slower step)."""
    torch = live_torch()
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


def _measure_step(step: Callable[[], Any], device: Any, label: str, budget_s: float, repeats: int,
                  clock: Callable[[], float] = time.perf_counter) -> Any:
    """Warm up, then time with the shared Timer; the budget is stretched to fit `repeats` samples. `clock`
    is the Timer's (tests pass a fake one)."""
    from roofline.measure.timing import Timer

    torch = live_torch()
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

    torch = live_torch()
    try:
        measurement = _measure_step(step, device, label, budget_s, repeats)
        fresh = fresh_page_bytes_per_step(step) if count_faults else None
        kinds = time_by_kind(step, device, kind_steps) if kind_steps else {}
        layers = layer_times(module, step, device, max(kind_steps, 1)) if per_layer else {}
    except torch.cuda.OutOfMemoryError:
        raise RooflineError(f"{label}: out of GPU memory; use a smaller --batch or a 16-bit --precision") from None
    return LiveBatch(batch, measurement, kinds, layers, fresh)


def checked_device(device_name: str, repeats: int, budget_s: float, kind_steps: int) -> Any:
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
    from roofline.workload.ops.loss import CrossEntropy
    from roofline.workload.precision import get_precision
    from roofline.workload.request import workload_builder

    torch = live_torch()
    device = checked_device(device_name, repeats, budget_s, kind_steps)
    precision = get_precision(precision_name)
    name, build = workload_builder(req)
    # the loss the prediction prices: a zoo language model's next-token cross-entropy (a traced user module's
    # workload has no loss op)
    zoo = bool(req.model) and req.module is None and not req.op and not is_user_module(req.model or "")
    lm_loss = train and zoo and any(isinstance(op, CrossEntropy) for op in build(1).ops)
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
                         optimizer, lm_loss)
        with user_code(name, "its step") if is_user_module(name) else contextlib.nullcontext():
            live = _measure_batch(module, step, device, batch, f"{name} batch {batch}", budget_s, repeats,
                                  kind_steps, per_layer, count_faults)
        warnings.extend(live.measurement.warnings)
        out.append(live)
    return LiveRuns(name, device_name, precision.name, train, optimizer, environment, out, warnings)

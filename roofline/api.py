"""The public Python API: what the `roofline` command does, callable from a notebook or a script.

    import roofline
    advice = roofline.advise(model="mobilenetv3", gpu="v100", train=True)
    advice.recommended.batch_size, advice.to_json()

Every function returns a pydantic model whose fields are the command's `--json` document (the command line
calls these functions and renders what they return, so the two cannot drift apart); `.to_json()` prints that
document. A model is a zoo name ("resnet50"), a 'package.module:attr' reference, a config (a `ModelRequest`
or a dict of its fields) or an `nn.Module` instance (traced on a meta-device copy; give `input_shape`).
Bad input raises the same `RooflineError` subclasses, with the same one-line messages, as the command line.

Nothing here imports torch until a function needs it (tracing a module, calibrating, validating).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from roofline.errors import DoesNotFit, RooflineError
from roofline.hardware.schema import Profile
from roofline.workload.ops.base import Workload
from roofline.workload.request import ModelRequest, parse_batches

ModelLike = Any
"""str (zoo name or 'module:attr'), ModelRequest, dict of ModelRequest fields, or an nn.Module instance."""


class Result(BaseModel):
    """A command's JSON document as a typed record. Fields the contract fixes are declared; the rest of the
    document (diagnostics that grow with the model) is kept as extra fields, so nothing in `--json` is lost."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True, defer_build=True)
    """defer_build: a command builds the validators of the one result it returns, not of all of them."""

    def to_dict(self) -> dict[str, Any]:
        """The document as plain JSON-safe Python (inf/nan as None), exactly what `--json` prints."""
        from roofline.report.json_doc import json_safe

        return json_safe(self.model_dump())

    def to_json(self, indent: int | None = 2) -> str:
        from roofline.report.json_doc import json_text

        return json_text(self.model_dump(), indent)


class Cache(Result):
    level: str
    size: float
    bandwidth: float | None


class HardwareResult(Result):
    """`roofline hw show NAME`."""

    name: str
    title: str
    kind: str
    aliases: list[str]
    peak_flops: dict[str, float]
    memory_bandwidth: float
    memory_capacity: float
    compute_bytes_per_s: float
    caches: list[Cache]
    ridge_point: dict[str, float]
    ridge_point_by_level: dict[str, dict[str, float]]
    measured: dict[str, Any] | None


class Layer(Result):
    name: str
    op: str
    flops: float
    bytes: float
    time_s: float
    bound: str
    arithmetic_intensity: float | None


class BatchRow(Result):
    batch_size: int
    step_time_s: float
    samples_per_s: float
    memory_bytes: float


class PredictResult(Result):
    """`roofline predict`: the first batch in full, every batch in `batches`."""

    model: str
    device: str
    batch_size: int
    precision: str
    train: bool
    step_time_s: float
    samples_per_s: float
    memory_bytes: float
    capacity_bytes: float
    fits: bool
    time_by_bound_s: dict[str, float]
    ceilings: dict[str, Any]
    layers: list[Layer]
    batches: list[BatchRow]
    context: Literal["alone", "model"] = "model"
    """'alone': one op called back to back in a loop (warm calls, a steady heap: first-touch faults noted, not
    charged); 'model': a model's step, or an op priced as one of its layers (`in_model`)."""
    data: str = "pageable"
    """Where each step's input came from (`--data`: pageable, pinned, prefetched, device)."""
    track_record: dict[str, Any] | None = None
    """On a GPU, how far predictions of held-out published runs like this step landed (`cell`, `rows`,
    `median_error`, `implied_time_s`, `text`); None for an op, a CPU, or a kind of run the record lacks."""
    device_record: dict[str, Any] | None = None
    """On a GPU, the record's held-out runs on this GPU (`rows`, `fitted_rows`, `median_error`, `text`); None for an
    op (the record holds whole steps) or on a CPU."""
    input_record: dict[str, Any] | None = None
    """On a GPU, the record's held-out runs whose input reached the GPU as `data` says (`rows`, `median_error`,
    `other_paths`: the other placements' medians, `text`; `roofline.advise.input_record`); None for an op or on a
    CPU."""


class SweepRow(BatchRow):
    precision: str


class Recommended(BatchRow):
    precision: str


class AdviseResult(Result):
    """`roofline advise`."""

    model: str
    device: str
    train: bool
    recommended: Recommended
    max_batch_size: int
    max_batch_size_by_precision: dict[str, int]
    neighbours: list[BatchRow]
    sweep: list[SweepRow]
    reasons: list[dict[str, Any]]
    data: str = "pageable"
    """Where each step's input comes from (`--data`)."""


class AnalyzeResult(Result):
    """`roofline analyze`."""

    model: str
    batch_size: int
    precision: str
    train: bool
    totals: dict[str, float]
    layers: list[dict[str, Any]]
    unsupported: Any


class CalibrateResult(Result):
    """`roofline calibrate`."""

    measured: dict[str, Any]
    profile_path: str
    warnings: list[str]
    calibration: Any = Field(default=None, exclude=True, repr=False)
    """The measurement record itself (measure.calibrate.Calibration), for renderers; not in the document."""


class ValidateRun(Result):
    batch_size: int
    predicted_s: float
    measured_s: float
    error_pct: float


class ValidateResult(Result):
    """`roofline validate`."""

    model: str
    device: str
    precision: str
    train: bool
    runs: list[ValidateRun]
    median_abs_error_pct: float | None
    warnings: list[str]


def select_profile(hw: str | None = None, gpu: str | None = None, cpu: str | None = None) -> Profile:
    """The profile named by exactly one of hw (any profile, name or YAML path), gpu or cpu."""
    from roofline.hardware import find_profile

    given = [(k, v) for k, v in (("hw", hw), ("gpu", gpu), ("cpu", cpu)) if v is not None]
    if len(given) != 1:
        raise RooflineError("name one device: hw=NAME|PATH, gpu=NAME or cpu=NAME "
                            f"(got {', '.join(k for k, _ in given) or 'none'})")
    kind, name = given[0]
    if not isinstance(name, str):
        raise RooflineError(f"{kind}={name!r}: expected a profile name or a YAML path")
    return find_profile(name, kind=None if kind == "hw" else kind)


def model_request(model: ModelLike = None, *, op: str | None = None, input_shape: Sequence[int] | None = None,
                  input_size: int | None = None, seq_len: int | None = None,
                  num_classes: int | None = None) -> ModelRequest:
    """A ModelRequest from whatever the caller handed in; every number is checked here, once."""
    shape = tuple(int(v) for v in input_shape) if input_shape is not None else None
    if shape is not None and (not shape or any(v < 1 for v in shape)):
        raise RooflineError(f"--input-shape {shape}: every dimension must be positive")
    for flag, value in (("input_size", input_size), ("seq_len", seq_len), ("num_classes", num_classes)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise RooflineError(f"--{flag.replace('_', '-')} must be a positive integer, got {value}")
    fields = {"op": op, "input_shape": shape, "input_size": input_size, "seq_len": seq_len,
              "num_classes": num_classes}
    if isinstance(model, ModelRequest):
        return model
    if isinstance(model, dict):
        try:
            return ModelRequest(**{**fields, **model})
        except TypeError as exc:
            raise RooflineError(f"model config: {exc}; expected keys of ModelRequest "
                                "(model, op, input_size, seq_len, num_classes, input_shape)") from None
    if model is None or isinstance(model, str):
        return ModelRequest(model=model, **fields)
    if callable(getattr(model, "forward", None)) and callable(getattr(model, "parameters", None)):
        return ModelRequest(module=model, **fields)
    raise RooflineError(f"model={type(model).__name__}: expected a zoo name, 'package.module:attr', a config "
                        "(dict or ModelRequest) or an nn.Module")


def _builder(req: ModelRequest) -> tuple[str, Callable[[int], Workload]]:
    from roofline.workload.request import workload_builder

    return workload_builder(req)


def _batches(batch: int | Sequence[int] | str) -> list[int]:
    if isinstance(batch, bool):
        raise RooflineError(f"--batch {batch}: expected a positive integer")
    if isinstance(batch, int):
        return parse_batches(str(batch))
    if isinstance(batch, str):
        return parse_batches(batch)
    return parse_batches(",".join(str(b) for b in batch))


def _options(train: bool, optimizer: str, pinned: bool, sync: int, channels_last: bool,
             reserve_bytes: float | None, fp32_math: str = "pytorch", attention: str = "fused",
             alone: bool = False, data: str | None = None, gelu_new: bool = False) -> Any:
    from roofline.model.data_placement import resolve_placement
    from roofline.model.fp32_math import get_fp32_math
    from roofline.model.step import StepOptions
    from roofline.workload.ops.attention import ATTENTION_PATHS

    if optimizer not in ("sgd", "momentum", "adam"):
        raise RooflineError(f"--optimizer '{optimizer}': expected sgd, momentum or adam")
    if not isinstance(sync, int) or sync < 0:
        raise RooflineError(f"--sync {sync}: expected a non-negative integer")
    if attention not in ATTENTION_PATHS:
        raise RooflineError(f"--attention '{attention}': expected one of {', '.join(ATTENTION_PATHS)}")
    return StepOptions(train=train, optimizer=optimizer, sync_points=sync, channels_last=channels_last,
                       reserve_bytes=reserve_bytes, fp32_math=get_fp32_math(fp32_math).name, attention=attention,
                       gelu_new=gelu_new, alone=alone, **resolve_placement(data, pinned).fields())


def profile_name(name_or_path: str) -> str:
    """The identifier `hw list` shows for what the user typed: a profile's file stem."""
    from roofline.hardware import list_profiles

    key = name_or_path.strip().lower()
    for e in list_profiles():
        if key == e.name or key in e.aliases:
            return e.name
    return Path(name_or_path).stem


def hardware(name: str) -> HardwareResult:
    """One profile with its derived figures (`roofline hw show NAME`)."""
    from roofline.hardware import find_profile
    from roofline.report.hw_view import profile_summary

    if not isinstance(name, str):
        raise RooflineError(f"hardware({name!r}): expected a profile name, alias or YAML path")
    return HardwareResult(**profile_summary(find_profile(name), profile_name(name)))


def layer_rows(pred: Any) -> list[dict[str, Any]]:
    """One row per op, its passes summed; bound is that of the pass that takes longest."""
    rows: dict[str, dict[str, Any]] = {}
    longest: dict[str, float] = {}
    for o in pred.ops:
        if o.bound == "free" and o.name in rows:
            continue
        row = rows.setdefault(o.name, {"name": o.name, "op": o.kind, "flops": 0.0, "bytes": 0.0, "time_s": 0.0,
                                       "compute_s": 0.0, "memory_s": 0.0, "host_s": 0.0, "bound": o.bound,
                                       "path": o.path, "notes": [], "passes": {}})
        row["flops"] += o.flops
        row["bytes"] += o.bytes
        row["time_s"] += o.time_s
        row["compute_s"] += o.compute_s
        row["memory_s"] += o.memory_s
        row["host_s"] += o.host_s
        row["passes"][o.pass_] = o.time_s
        row["notes"] = list(dict.fromkeys(row["notes"] + list(o.notes)))
        if o.time_s > longest.get(o.name, -1.0):
            longest[o.name] = o.time_s
            row["bound"], row["path"] = o.bound, o.path
    for row in rows.values():
        row["arithmetic_intensity"] = row["flops"] / row["bytes"] if row["bytes"] else None
    return list(rows.values())


def _prediction_dict(pred: Any) -> dict[str, Any]:
    return {
        "model": pred.model, "device": pred.device, "batch_size": pred.batch_size, "precision": pred.precision,
        "train": pred.train, "step_time_s": pred.step_time_s, "samples_per_s": pred.samples_per_s,
        "memory_bytes": pred.memory.total, "memory": pred.memory.as_dict(), "capacity_bytes": pred.capacity_bytes,
        "fits": pred.fits, "host_s": pred.host_s, "device_s": pred.device_s, "transfer_s": pred.transfer_s,
        "sync_s": pred.sync_s, "optimizer_s": pred.optimizer_s, "amp_cast_s": pred.amp_cast_s,
        "flops": pred.flops, "bytes": pred.bytes, "time_by_bound_s": pred.time_by_bound(),
        "ceilings": {"compute_dtype": pred.ceilings.compute_dtype,
                     "matrix_flops_per_s": pred.ceilings.matrix_flops_per_s,
                     "vector_flops_per_s": pred.ceilings.vector_flops_per_s,
                     "memory_levels": [{"level": lv.name, "capacity_bytes": lv.capacity_bytes,
                                        "bandwidth_bytes_per_s": lv.bandwidth_bytes_per_s}
                                       for lv in pred.ceilings.levels],
                     "dispatch_s": pred.ceilings.dispatch_s, "launch_s": pred.ceilings.launch_s,
                     "provenance": pred.ceilings.provenance},
        "layers": layer_rows(pred),
    }


def predict(model: ModelLike = None, *, op: str | None = None, hw: str | None = None, gpu: str | None = None,
            cpu: str | None = None, batch: int | Sequence[int] | str = 1, precision: str = "fp32",
            train: bool = False, optimizer: str = "sgd", pinned: bool = False, sync: int = 0,
            channels_last: bool = False, reserve_bytes: float | None = None, allow_oversize: bool = False,
            input_shape: Sequence[int] | None = None, input_size: int | None = None, seq_len: int | None = None,
            num_classes: int | None = None, html: str | Path | None = None, force: bool = False,
            fp32_math: str = "pytorch", attention: str = "fused", in_model: bool = False,
            data: str | None = None, gelu_new: bool = False) -> PredictResult:
    """The predicted step (or one op, `op="gemm(m=..,n=..,k=..)"`) at each batch size (`roofline predict`).
    An op is priced as a script timing it alone in a loop runs it (`StepOptions.alone`: warm per-call costs)
    unless `in_model`, which prices it as one layer of a model (called cold, after other layers). `data` is
    where each step's input comes from (`roofline.model.data_placement`: pageable, pinned, prefetched, device;
    `pinned=True` is `data="pinned"`). `gelu_new` prices a tanh GELU as Hugging Face's gelu_new formula runs it.
    `html` also writes the HTML report of the first batch (an existing file only with force=True)."""
    from roofline.advise.input_record import input_quote
    from roofline.advise.track_record import model_family, step_quotes
    from roofline.model.step import predict_step
    from roofline.workload.precision import get_precision

    target = _html_target(html, force)
    profile = select_profile(hw, gpu, cpu)
    prec = get_precision(precision)
    req = model_request(model, op=op, input_shape=input_shape, input_size=input_size, seq_len=seq_len,
                        num_classes=num_classes)
    name, build = _builder(req)
    batches = _batches(batch)
    if req.op and batches != [1]:
        raise RooflineError(f"--batch {batch} does not apply to --op: an op's shapes are literal; put the "
                            "batch in the spec, e.g. 'linear(batch=32,in_features=1024,out_features=1024)'")
    if in_model and not req.op:
        raise RooflineError("--in-model applies to --op (a model's layers are always priced in their model)")
    opts = _options(train, optimizer, pinned, sync, channels_last, reserve_bytes, fp32_math, attention,
                    alone=bool(req.op) and not in_model, data=data, gelu_new=gelu_new)
    preds = [predict_step(build(b), profile, prec, opts) for b in batches]
    for p in preds:
        if not p.fits and not allow_oversize:
            raise DoesNotFit(f"{name} at batch {p.batch_size} ({p.precision}{', training' if p.train else ''}) needs "
                             f"{p.memory.total / 2**30:.2f} GiB but {p.device} has "
                             f"{p.capacity_bytes / 2**30:.2f} GiB; use a smaller --batch, "
                             f"{'' if prec.storage_bytes <= 2 else 'a 16-bit --precision, '}"
                             "or --allow-oversize to see the time anyway")
    out = _prediction_dict(preds[0])
    out["batches"] = [{"batch_size": p.batch_size, "step_time_s": p.step_time_s, "samples_per_s": p.samples_per_s,
                       "memory_bytes": p.memory.total} for p in preds]
    out["context"] = "alone" if opts.alone else "model"
    out["data"] = opts.data
    out["track_record"], out["device_record"] = (None, None) if req.op else step_quotes(preds[0], req.model,
                                                                                       opts.autocast)
    out["input_record"] = None if req.op else input_quote(preds[0], opts.data, model_family(req.model))
    result = PredictResult(**out)
    if target is not None:
        result.html = _write_report(target, profile, hw or gpu or cpu or "", result, None, force)
    return result


def _advice_dict(advice: Any) -> dict[str, Any]:
    rec = advice.recommended
    return {
        "model": advice.model, "device": advice.device, "train": advice.train,
        "recommended": {"batch_size": advice.recommended_batch, "precision": advice.recommended_precision,
                        "step_time_s": rec.step_time_s, "samples_per_s": rec.samples_per_s,
                        "memory_bytes": rec.memory.total},
        "max_batch_size": advice.max_batch_size,
        "max_batch_size_by_precision": advice.max_batch_by_precision,
        "neighbours": [{"batch_size": p.batch_size, "step_time_s": p.step_time_s, "samples_per_s": p.samples_per_s,
                        "memory_bytes": p.memory.total} for p in advice.neighbours],
        "sweep": [{"batch_size": p.batch_size, "precision": p.precision, "step_time_s": p.step_time_s,
                   "samples_per_s": p.samples_per_s, "memory_bytes": p.memory.total}
                  for p in sorted(advice.sweep, key=lambda p: (p.precision, p.batch_size))],
        "reasons": advice.reasons,
    }


def advise(model: ModelLike = None, *, hw: str | None = None, gpu: str | None = None, cpu: str | None = None,
           train: bool = False, precision: str = "auto", optimizer: str = "sgd", pinned: bool = False,
           sync: int = 0, channels_last: bool = False, reserve_bytes: float | None = None,
           plot: str | None = None, input_shape: Sequence[int] | None = None, input_size: int | None = None,
           seq_len: int | None = None, num_classes: int | None = None, html: str | Path | None = None,
           force: bool = False, fp32_math: str = "pytorch", attention: str = "fused",
           data: str | None = None, gelu_new: bool = False) -> AdviseResult:
    """Batch size and precision for a model on a device, the sweep behind them and why (`roofline advise`).
    `data`: where each step's input comes from, as in `predict`.
    `plot` (a directory, or a .png/.svg/.pdf path) also writes the matplotlib figures; `html` the HTML report
    (`roofline report`), with the recommended step on the roofline (an existing file only with force=True)."""
    from roofline.advise.advisor import advise as run_advisor

    target = _html_target(html, force)
    profile = select_profile(hw, gpu, cpu)
    req = model_request(model, input_shape=input_shape, input_size=input_size, seq_len=seq_len,
                        num_classes=num_classes)
    name, build = _builder(req)
    plot_target = None
    if plot is not None:
        from roofline.report.plots import plot_path

        plot_target = plot_path(plot, name, profile.name, force)
    opts = _options(train, optimizer, pinned, sync, channels_last, reserve_bytes, fp32_math, attention, data=data,
                    gelu_new=gelu_new)
    advice = run_advisor(name, build, profile, train, precision, opts)
    out = _advice_dict(advice)
    out["data"] = opts.data
    if plot_target is not None:
        from roofline.report.plots import write_advice_plots

        out["plot"] = write_advice_plots(advice, profile, plot_target, force)
    result = AdviseResult(**out)
    if target is not None:
        rec = result.recommended
        step = predict(req, hw=hw, gpu=gpu, cpu=cpu, batch=rec.batch_size, precision=rec.precision, train=train,
                       optimizer=optimizer, pinned=pinned, sync=sync, channels_last=channels_last,
                       reserve_bytes=reserve_bytes, allow_oversize=True, fp32_math=fp32_math, attention=attention,
                       data=data, gelu_new=gelu_new)
        result.html = _write_report(target, profile, hw or gpu or cpu or "", step, result, force)
    return result


def _html_target(html: str | Path | None, force: bool) -> Path | None:
    """Checked before any work: a refusal to overwrite costs nothing."""
    from roofline.files import check_target

    if html is None:
        return None
    check_target(Path(html), "--html", force)
    return Path(html)


def _write_report(target: Path, profile: Profile, name: str, step: PredictResult,
                  advice: AdviseResult | None, force: bool) -> str:
    from roofline.files import write_text_atomically
    from roofline.report.html import render_report
    from roofline.report.hw_view import profile_summary

    page = render_report(profile_summary(profile, profile_name(name)), step.to_dict(),
                         advice.to_dict() if advice is not None else None)
    write_text_atomically(target, page, "--html", force)
    return str(target.resolve())


def analyze(model: ModelLike = None, *, op: str | None = None, batch: int = 1, precision: str = "fp32",
            train: bool = False, hw: str | None = None, gpu: str | None = None, cpu: str | None = None,
            symbolic: bool = False, input_shape: Sequence[int] | None = None, input_size: int | None = None,
            seq_len: int | None = None, num_classes: int | None = None) -> AnalyzeResult:
    """FLOPs, bytes, parameters and activations per layer; with a device, where each layer crosses its ridge
    point; with `symbolic`, the totals as formulas in the batch size (`roofline analyze`)."""
    from roofline.advise import analyze as counts
    from roofline.model.ceilings import ceilings_for
    from roofline.workload.precision import get_precision
    from roofline.workload.request import is_user_module

    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise RooflineError(f"--batch {batch}: the batch size must be a positive integer")
    prec = get_precision(precision)
    req = model_request(model, op=op, input_shape=input_shape, input_size=input_size, seq_len=seq_len,
                        num_classes=num_classes)
    name, build = _builder(req)
    ridge = None
    if hw is not None or gpu is not None or cpu is not None:
        profile = select_profile(hw, gpu, cpu)
        ridge = (profile.name, ceilings_for(profile, prec).ridge_point)
    workload = build(batch)
    second = build(batch + 1) if ridge and not req.op else None
    out: dict[str, Any] = {
        "model": name, "batch_size": batch, "precision": prec.name, "train": train,
        "totals": counts.totals(workload, prec, train),
        "layers": counts.layer_rows(workload, second, prec, train, ridge[1] if ridge else None),
        "unsupported": workload.unsupported,
    }
    if ridge:
        out["device"], out["ridge_point"] = ridge
    if ridge and second is not None:
        out["model_crossing_batch"], out["model_intensity_limit"] = counts.model_crossing(
            workload, second, prec, train, ridge[1])
    if symbolic:
        exact = not (req.op or req.module is not None or is_user_module(req.model or ""))
        sym = counts.symbolic_totals(build, prec, train, exact)
        out["symbolic"] = {key: str(value) for key, value in sym.items() if key != "symbol"}
        if ridge:
            out["symbolic"]["model_ridge_root"] = counts.symbolic_root(sym, ridge[1])
    return AnalyzeResult(**out)


def calibrate(device: str = "cpu", *, quick: bool = False, out: str | Path | None = None,
              dtypes: Sequence[str] | None = None, force: bool = False, hw: str | None = None,
              on_step: Callable[[str], None] = lambda _: None) -> CalibrateResult:
    """Measure this machine's ceilings and write a calibrated profile (`roofline calibrate`); an existing
    `out` is replaced only with force=True, checked before any benchmark runs."""
    from roofline.files import check_target
    from roofline.measure import calibrate as cal
    from roofline.measure.probes.gemm import CPU_TORCH_DTYPES, CUDA_TORCH_DTYPES

    if device not in ("cpu", "cuda"):
        raise RooflineError(f"--device '{device}': expected cpu or cuda")
    if dtypes is not None:
        known = dict.fromkeys((*CPU_TORCH_DTYPES, *CUDA_TORCH_DTYPES))
        dtypes = tuple(dtypes)
        if not dtypes or any(d not in known for d in dtypes):
            raise RooflineError(f"--dtypes '{','.join(dtypes)}': expected a comma list of {', '.join(known)}")
    plan = cal.Plan(device, quick, dtypes)
    profile = cal.base_profile(device, hw)
    path = Path(out) if out is not None else cal.calibrated_path(profile.name)
    # a directory the user named must exist (a typo is refused before minutes of measuring); only the default
    # calibrated directory is created on first use
    check_target(path, "--out", force, parent_must_exist=out is not None)
    result = cal.run(plan, profile, on_step)
    cal.write_profile(result.profile, path, force, create_directory=out is None)
    return CalibrateResult(measured=result.measured.model_dump(mode="json"), profile_path=str(path.resolve()),
                           details=result.details, warnings=list(result.warnings), calibration=result)


def calibration_steps(device: str = "cpu", quick: bool = False) -> int:
    """How many steps `calibrate` reports through on_step (for a progress bar)."""
    from roofline.measure import calibrate as cal

    return len(cal.Plan(device, quick, None).steps())


def validate(model: ModelLike = None, *, device: str = "cpu", batch: int | Sequence[int] | str = 1,
             precision: str = "fp32", train: bool = False, optimizer: str = "sgd", hw: str | None = None,
             budget_s: float = 2.0, repeats: int = 5, kind_steps: int = 2, per_layer: bool = False,
             calibrate: bool = True, on_batch: Callable[[int], None] = lambda _: None,
             input_shape: Sequence[int] | None = None, input_size: int | None = None, seq_len: int | None = None,
             num_classes: int | None = None, keep_heap: bool = False) -> ValidateResult:
    """Run the model live with PyTorch and compare with the prediction (`roofline validate`). Live runs build
    the model with real weights, so `model` is a zoo name, a 'module:attr' reference or a config of one.
    `keep_heap` runs it again in a child process whose C heap keeps its pages (model.cpu_runtime.heap_setting:
    glibc reads the setting at process start), predicted without fresh-page faults, and adds the measured
    and predicted gains as `kept_heap`."""
    from roofline.validate.document import validation_dict
    from roofline.validate.run import validate as run_validation

    req = model_request(model, input_shape=input_shape, input_size=input_size, seq_len=seq_len,
                        num_classes=num_classes)
    if req.module is not None:
        raise RooflineError("validate rebuilds the model with real weights in a timed loop: give a zoo name or "
                            "'package.module:attr' (a factory or Module subclass) rather than an instance")
    batches = _batches(batch)
    result = run_validation(req, device, batches, precision, train, optimizer, hw, budget_s, repeats,
                            kind_steps, per_layer, on_batch, calibrate=calibrate)
    out = validation_dict(result, per_layer)
    if keep_heap:
        argv = ["--device", device, "--batch", ",".join(map(str, batches)), "--precision", precision,
                "--optimizer", optimizer, "--budget", str(budget_s), "--repeats", str(repeats),
                "--kind-steps", str(kind_steps), *(["--train"] if train else []), *(["--hw", hw] if hw else []),
                *([] if calibrate else ["--no-calibrate"]), *(["--per-layer"] if per_layer else [])]
        out["kept_heap"] = _kept_heap_runs(req, argv, out["runs"])
    return ValidateResult(**out)


def _model_argv(req: ModelRequest) -> list[str]:
    argv = ["--model", str(req.model)]
    for flag, value in (("--input-size", req.input_size), ("--seq-len", req.seq_len),
                        ("--num-classes", req.num_classes)):
        if value is not None:
            argv += [flag, str(value)]
    if req.input_shape:
        argv += ["--input-shape", ",".join(map(str, req.input_shape))]
    return argv


def _kept_heap_runs(req: ModelRequest, argv: list[str], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The same validation in a child process started with the heap-keeping environment, and per batch the
    measured and predicted step-time ratio between this process's runs and the child's."""
    import json
    import os
    import subprocess
    import sys

    from roofline.model.cpu_runtime.heap_setting import KEEP_HEAP_ENV

    child = subprocess.run([sys.executable, "-m", "roofline", "validate", *_model_argv(req), *argv, "--json"],
                           capture_output=True, text=True, env={**os.environ, **KEEP_HEAP_ENV})
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["no message"])[-1]
        raise RooflineError(f"validate --keep-heap: the child process with {KEEP_HEAP_ENV} failed: {last}")
    kept = json.loads(child.stdout)
    by_batch = {r["batch_size"]: r for r in runs}
    gains = [{"batch_size": k["batch_size"], "measured_s": by_batch[k["batch_size"]]["measured_s"],
              "kept_measured_s": k["measured_s"], "predicted_s": by_batch[k["batch_size"]]["predicted_s"],
              "kept_predicted_s": k["predicted_s"],
              "measured_speedup": by_batch[k["batch_size"]]["measured_s"] / k["measured_s"],
              "predicted_speedup": by_batch[k["batch_size"]]["predicted_s"] / k["predicted_s"]}
             for k in kept["runs"]]
    return {"environment": dict(KEEP_HEAP_ENV), "runs": kept["runs"],
            "median_abs_error_pct": kept["median_abs_error_pct"], "gains": gains}


def _serving_precision(profile: Profile, precision: str | None, kv_precision: str | None, group_size: int,
                       experts: str | None = None, quant_kernel: str = "fused", accumulate: str = "fp32",
                       head_weights: str | None = None, engine: str = "none") -> Any:
    """The requested weight precision (default: bf16 where the device has it, else fp16, else fp32; fp16 when
    the products accumulate in fp16)."""
    from roofline.model.llm_precision import activation_for, default_precision, serving_precision

    return serving_precision(precision or default_precision(profile, accumulate), kv_precision, group_size,
                             activation_for(profile), experts, quant_kernel, accumulate, head_weights, engine)


def predict_serving(model: str, *, hw: str | None = None, gpu: str | None = None, cpu: str | None = None,
                    batch: int | Sequence[int] | str = 1, prompt_len: int = 512, output_len: int = 128,
                    precision: str | None = None, kv_precision: str | None = None, group_size: int = 128,
                    runtime: str = "eager", allow_oversize: bool = False, gpus: int = 1, node: str | None = None,
                    nodes: int = 1, allreduce: str = "auto", lm_head: str = "split",
                    static_cache: int | None = None, decode_attention: str = "grouped",
                    expert_precision: str | None = None, transformers: str | None = None,
                    quant_kernel: str = "fused", accumulate: str = "fp32", engine: str = "none",
                    head_weights: str | None = None) -> dict[str, Any]:
    """A language model served on a device: time to first token, time per output token, tokens/s, memory and
    both phases per op (the `predict --model LLM --prompt-len P --output-len O` document). `gpus` > 1 splits
    the model over that many GPUs of a node (tensor parallelism), the lm_head split by vocabulary or
    replicated (`lm_head`); `static_cache` is transformers' StaticCache length (graph runtime);
    `decode_attention` the decode kernel ('grouped', or TensorRT-LLM's 'per-head' masked MHA);
    `expert_precision` a mixture of experts' 16-bit type where it differs from `precision`; `transformers`
    the release whose eager generate runs ('4.35'; None: the current one); `quant_kernel` the kernel of int8/int4
    weight-only products (`llm_precision.QUANT_KERNELS`: 'fused', PyTorch's 'tinygemm', llama.cpp's 'mmq' or
    'mmq-dp4a', 'dequant' to a 16-bit copy first, 'convert' for an uncompiled int8 conversion, or ONNX Runtime's
    'matmulnbits'); `accumulate` what
    the products' fp16 multiplies accumulate in ('fp32', or 'fp16' as llama.cpp's cuBLAS path, ExLlama and
    TinyChat run them); `engine` the serving engine's host loop around each forward
    (`roofline.model.serving_engine`: 'none', or vLLM's V0 engine 'vllm-v0'); `head_weights` how a quantised
    model stores its lm_head ('16-bit' or 'quantized'; None: as the toolchain behind `quant_kernel` and
    `engine` leaves it, `llm_precision.HEAD_WEIGHTS`)."""
    from roofline.advise.track_record import serving_quotes
    from roofline.model.llm_step import predict_serving as predict_request
    from roofline.model.llm_step import require_fit, tensor_parallel_group
    from roofline.report.serving_doc import prediction_dict
    from roofline.workload.llm.builtins import get_config
    from roofline.workload.llm.transformers_release import transformers_release

    cfg = get_config(model)
    if expert_precision is not None and cfg.experts <= 1:
        raise RooflineError(f"--expert-precision applies to a mixture of experts; {cfg.name} has none")
    release = transformers_release(transformers, cfg)
    profile = select_profile(hw, gpu, cpu)
    prec = _serving_precision(profile, precision, kv_precision, group_size, expert_precision, quant_kernel,
                              accumulate, head_weights, engine)
    tp = tensor_parallel_group(profile, gpus, node, nodes, allreduce, lm_head)
    preds = [predict_request(cfg, profile, prec, b, prompt_len, output_len, runtime, tp, static_cache,
                             decode_attention, release, engine) for b in _batches(batch)]
    if not allow_oversize:
        for p in preds:
            require_fit(p)
    out = prediction_dict(preds[0])
    out["track_record"], out["device_record"] = serving_quotes(preds[0])
    out["batches"] = [{"batch_size": p.batch, "ttft_s": p.ttft_s, "tpot_s": p.tpot_s,
                       "tokens_per_s": p.tokens_per_s, "memory_bytes": p.memory.total} for p in preds]
    if tp is not None:
        # DESIGN's multi-GPU keys: the request's all-reduces (none overlapped), against one GPU running it alone
        # (priced even where the model would not fit one GPU: time only)
        first = preds[0]
        single = predict_request(cfg, profile, prec, first.batch, prompt_len, output_len, runtime,
                                 static_cache=static_cache, decode_attention=decode_attention, release=release,
                                 engine=engine)
        communication = first.prefill.communication_s + (output_len - 1) * first.decode.communication_s
        out |= {"communication_s": communication, "exposed_communication_s": communication,
                "scaling_efficiency": single.request_s / (tp.gpus * first.request_s),
                "single_gpu_request_s": single.request_s, "buckets": []}
    return out


def advise_serving(model: str, *, hw: str | None = None, gpu: str | None = None, cpu: str | None = None,
                   prompt_len: int = 512, output_len: int = 128, precision: str = "auto",
                   kv_precision: str | None = None, group_size: int = 128, runtime: str = "eager",
                   tpot_ms: float | None = None, ttft_ms: float | None = None,
                   plot: str | Path | None = None, force: bool = False, gpus: int = 1,
                   node: str | None = None, allreduce: str = "auto", lm_head: str = "split",
                   transformers: str | None = None, quant_kernel: str = "fused",
                   accumulate: str = "fp32", engine: str = "none", head_weights: str | None = None) -> dict[str, Any]:
    """Concurrent sequences, weight precision and KV precision for the most tokens/s within the latency
    targets and memory, with reasons in numbers (the `advise --serve` document); on `gpus` tensor-parallel
    GPUs of a node when more than one; `transformers` the release whose eager generate runs (None: current);
    `quant_kernel` the kernel of the int8/int4 candidates' products and `accumulate` what their fp16 multiplies
    accumulate in, `engine` the serving engine's loop and `head_weights` how the quantised candidates store
    their lm_head (`predict_serving`)."""
    from roofline.advise.serving import advise_serving as advise_request
    from roofline.model.llm_step import tensor_parallel_group
    from roofline.report.serving_doc import advice_dict
    from roofline.workload.llm.builtins import get_config
    from roofline.workload.llm.transformers_release import transformers_release

    for flag, value in (("tpot-ms", tpot_ms), ("ttft-ms", ttft_ms)):
        if value is not None and not value > 0:
            raise RooflineError(f"--{flag} must be a positive number of milliseconds, got {value}")
    cfg = get_config(model)
    release = transformers_release(transformers, cfg)
    profile = select_profile(hw, gpu, cpu)
    tp = tensor_parallel_group(profile, gpus, node, 1, allreduce, lm_head)
    target = None
    if plot:
        from roofline.report.plots import plot_path

        target = plot_path(str(plot), cfg.name, profile.name, force)
    advice = advise_request(cfg, profile, prompt_len, output_len, runtime, precision or "auto", kv_precision,
                            group_size, tpot_ms / 1e3 if tpot_ms else None, ttft_ms / 1e3 if ttft_ms else None, tp,
                            release, quant_kernel, accumulate, engine, head_weights)
    out = advice_dict(advice)
    if target is not None:
        from roofline.report.serving_plot import write_serving_plots

        out["plot"] = write_serving_plots(advice, target, force)
    return out

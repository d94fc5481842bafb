"""Comparer for `kind: gpu-steps`: published single-GPU training and inference throughput against
`roofline.model.step.predict_step` on the shipped GPU profiles (no calibration of ours).

Each row is predicted with the settings it states, and only those; what a row does not state is set by one
rule for every row, written here, never per row or per source:
- data `synthetic-device` (inputs made on the GPU): no host-to-device copy; `loader`: the batch is copied from
  pinned host memory each step on the compute stream; `loader-pageable`: the batch comes from a DataLoader
  without pin_memory and `.to('cuda')` inside the timed step copies it from pageable memory (synchronous, through
  a staging buffer); `prefetched`: the loader copies the next batch on a stream of its own during the step
  (DeepLearningExamples' PrefetchedWrapper and DALI), so the copy overlaps it. Each is one of `predict --data`'s
  placements (`DATA_PLACEMENT`), so a row is predicted as a user asking for the same would be;
- one host-device synchronization per step (SYNC_POINTS_PER_STEP);
- optimizer `none` (forward and backward timed without an update): the predicted optimizer time is left out;
- fp32 products on TF32 tensor cores as the row's PyTorch version and container do by default
  (`roofline.model.fp32_math.pytorch_fp32_math`); a row that names no PyTorch version, today's default.
The time metric is the time of one step: `step_time_s` where the source prints it, else batch / samples_per_s.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from benchmarks.published_kinds.agreement import agreement_section
from benchmarks.published_kinds.record import (
    HELD_OUT_SETS,
    Comparison,
    DatasetError,
    SourceBlock,
    first_error,
    source_blocks,
)
from roofline.advise.track_record import precision_class, step_bound
from roofline.errors import RooflineError
from roofline.hardware import find_profile
from roofline.model.data_placement import get_placement
from roofline.model.fp32_math import DEFAULT_FP32_MATH, pytorch_fp32_math, pytorch_version
from roofline.model.step import StepOptions, predict_step
from roofline.workload.precision import get_precision
from roofline.workload.zoo import build_workload, get_model

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: a row's `model` may be a config.json path relative to it."""
RESULT_STEM = "published-gpu"
TITLE = "Single-GPU steps: predicted vs published"
METRIC = "time per step"
GROUP_KEYS = ("model", "gpu", "mode", "precision", "source", "family", "generation", "bound")
TARGET_GROUPS = ("family", "generation")
SYNC_POINTS_PER_STEP = 1
"""Every harness in the record times each step to completion: DeepLearningExamples calls
torch.cuda.synchronize() per iteration, timm's benchmark.py reads CUDA-synchronized timestamps, Torch7's
timer synchronizes cutorch."""
GIB = 2**30
SET_TO_NONE_DEFAULT_VERSION = (2, 0)
"""`Optimizer.zero_grad(set_to_none=True)` became the default in PyTorch 2.0 (pytorch/pytorch#92731)."""
FOREACH_DEFAULT_VERSION = (2, 1)
"""torch.optim's optimizers run their foreach kernels by default on CUDA from PyTorch 2.1 on (pytorch/pytorch#92306,
January 2023, and #95862, March 2023: before it, a model's nn.Parameters were not recognised and the for-loop ran)."""


class GpuStepRow(BaseModel):
    """One published measurement, after the block's defaults are filled in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    model: str
    """A zoo model, or a GPT-2 config.json's path from the repository root (`roofline.workload.zoo.hf_step`)."""
    gpu: str
    mode: Literal["train", "inference"]
    precision: Literal["fp32", "tf32", "amp", "amp-bf16", "fp16", "bf16"]
    batch: int = Field(ge=1)
    input_size: int | None = Field(default=None, ge=1)
    seq_len: int | None = Field(default=None, ge=1)
    data: Literal["synthetic-device", "loader", "loader-pageable", "prefetched"]
    channels_last: bool = False
    optimizer: Literal["sgd", "momentum", "adam", "adam-unfused", "none"] | None = None
    norm_reads: int = Field(default=0, ge=0)
    """Host reads of the gradients' norm per step (`StepOptions.norm_reads`)."""
    pytorch: str | None = None
    """The PyTorch version the source names (MAJOR.MINOR), None for another framework or none stated."""
    ngc_container: bool = False
    """Run inside an NVIDIA NGC PyTorch container (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1)."""
    module_training: bool = False
    """An inference row (a forward pass timed alone) whose module was left in training mode: BatchNorm's batch
    statistics, dropout on (`roofline.model.step.StepOptions.forward_only`)."""
    attention: Literal["fused", "eager"] = "fused"
    """How the model's self-attention runs (`roofline.model.step.StepOptions.attention`)."""
    gelu_new: bool = False
    """GPT-2's tanh GELU as Hugging Face's gelu_new formula runs it (`roofline.model.step.StepOptions.gelu_new`)."""
    amp_engine: Literal["autocast", "apex-o2"] = "autocast"
    """How an `amp` row's mixed precision ran: torch.autocast or apex's O1 (per-op casts to the op lists' dtypes),
    or apex's O2 (the model itself in fp16, fp32 master weights in the optimizer:
    `roofline.model.step.StepOptions.autocast`)."""
    samples_per_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    step_time_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    other_predictions: dict[str, float] = {}
    """Other predictors' published predictions of the row's step time, seconds, by predictor: compared beside
    ours (`extra_sections`), never used by the prediction."""
    notes: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> GpuStepRow:
        if (self.samples_per_s is None) == (self.step_time_s is None):
            raise ValueError("give exactly one of samples_per_s or step_time_s")
        if (self.input_size is None) == (self.seq_len is None):
            raise ValueError("give exactly one of input_size (images) or seq_len (tokens)")
        if (self.mode == "train") != (self.optimizer is not None):
            raise ValueError("training rows name their optimizer (sgd, momentum, adam, none); inference rows none")
        if self.module_training and self.mode != "inference":
            raise ValueError("module_training marks a forward pass timed alone: an inference row")
        if self.amp_engine != "autocast" and self.precision != "amp":
            raise ValueError("amp_engine describes an amp row")
        return self

    @property
    def fp32_math(self) -> str:
        """The fp32 math mode the row's software ran in by default."""
        return pytorch_fp32_math(self.pytorch, self.ngc_container).name if self.pytorch else DEFAULT_FP32_MATH

    @property
    def optimizer_run(self) -> str:
        """The optimizer as the row's PyTorch ran it: SGD with momentum is a Python loop over the parameters
        before 2.1 (`roofline.model.step.OPTIMIZER_TRAFFIC`, 'momentum-unfused'), the foreach kernels after."""
        optimizer = self.optimizer if self.optimizer not in (None, "none") else "sgd"
        if optimizer == "momentum" and self.pytorch and pytorch_version(self.pytorch) < FOREACH_DEFAULT_VERSION:
            return "momentum-unfused"
        return optimizer

    @property
    def zero_grad_to_none(self) -> bool:
        """zero_grad drops the gradients from PyTorch 2.0 on and zeroes them with a kernel each before it."""
        return not self.pytorch or pytorch_version(self.pytorch) >= SET_TO_NONE_DEFAULT_VERSION

    @property
    def published_step_s(self) -> float:
        return self.step_time_s if self.step_time_s is not None else self.batch / self.samples_per_s

    def settings(self) -> str:
        size = f"{self.input_size} px" if self.input_size else f"seq {self.seq_len}"
        layout = ", NHWC" if self.channels_last else ""
        update = f", {self.optimizer}" if self.optimizer else ""
        engine = f" ({self.amp_engine})" if self.amp_engine != "autocast" else ""
        return (f"{self.model} {self.mode} {self.gpu} {self.precision}{engine} b{self.batch} {size}{layout}, "
                f"{self.data}{update}")


DATA_PLACEMENT = {"synthetic-device": "device", "loader": "pinned", "loader-pageable": "pageable",
                  "prefetched": "prefetched"}
"""The record's `data` values as `predict --data` names them (`roofline.model.data_placement`)."""


def _predict(row: GpuStepRow) -> tuple[float, Any, str, str]:
    """(predicted step seconds, the StepPrediction, model family, GPU generation)."""
    model = str(ROOT / row.model) if row.model.endswith(".json") else row.model
    spec = get_model(model)
    profile = find_profile(row.gpu, kind="gpu")
    workload = build_workload(model, row.batch, input_size=row.input_size, seq_len=row.seq_len)
    opts = StepOptions(train=row.mode == "train", optimizer=row.optimizer_run,
                       **get_placement(DATA_PLACEMENT[row.data]).fields(),
                       zero_grad_to_none=row.zero_grad_to_none,
                       channels_last=row.channels_last, sync_points=SYNC_POINTS_PER_STEP, fp32_math=row.fp32_math,
                       attention=row.attention, gelu_new=row.gelu_new, norm_reads=row.norm_reads,
                       autocast=row.amp_engine == "autocast",
                       forward_only=row.module_training)
    pred = predict_step(workload, profile, get_precision(row.precision), opts)
    step_s = pred.step_time_s - (pred.optimizer_s if row.optimizer == "none" else 0.0)
    return step_s, pred, spec.family, profile.architecture.split()[0]


def rows(dataset: dict[str, Any]) -> list[tuple[SourceBlock, GpuStepRow]]:
    """(source block, row) for every row, validated."""
    out = []
    for block in source_blocks(dataset):
        for raw in block.merged_rows():
            try:
                out.append((block, GpuStepRow.model_validate(raw)))
            except ValidationError as exc:
                raise DatasetError(f"{block.id} row {raw.get('id', '?')}: {first_error(exc)}") from None
    return out


def compare(dataset: dict[str, Any]) -> list[Comparison]:
    comparisons = []
    for block, row in rows(dataset):
        try:
            predicted, pred, family, generation = _predict(row)
        except RooflineError as exc:
            raise DatasetError(f"{block.id} row {row.id}: {exc}") from None
        bound = step_bound(pred)
        comparisons.append(Comparison(
            row_id=row.id, source_id=block.id, holdout=block.holdout, later_set=block.held_out_set,
            published=row.published_step_s,
            predicted=predicted, settings=row.settings(),
            groups={"model": row.model, "gpu": row.gpu, "mode": row.mode, "precision": row.precision,
                    "source": block.id, "family": family, "generation": generation, "bound": bound},
            extra={"memory_bytes": pred.memory.total, "capacity_bytes": pred.capacity_bytes, "fits": pred.fits,
                   "published_samples_per_s": row.batch / row.published_step_s,
                   "predicted_samples_per_s": row.batch / predicted,
                   "other_predictions": dict(row.other_predictions),
                   "precision_class": precision_class(row.precision, model_in_16_bit=row.amp_engine == "apex-o2"),
                   "bound": bound, "data": DATA_PLACEMENT[row.data]}))
    return comparisons


EXTRA_COLUMNS = [
    ("published /s", lambda c: f"{c.extra['published_samples_per_s']:.0f}"),
    ("predicted /s", lambda c: f"{c.extra['predicted_samples_per_s']:.0f}"),
    ("predicted memory", lambda c: f"{c.extra['memory_bytes'] / GIB:.1f} GiB"),
    ("fits", lambda c: "yes" if c.extra["fits"] else "NO"),
]


PRECISION_CLASS = {"fp32": "fp32/tf32", "tf32": "fp32/tf32", "amp": "amp/fp16", "fp16": "amp/fp16", "bf16": "bf16",
                   "amp-bf16": "bf16"}
"""Labels sources use for the same arithmetic: PyTorch runs fp32 convolutions on TF32 tensor cores on Ampere and
later by default, and "fp16" training in these sources keeps fp32 master weights, as AMP does."""


def extra_sections(dataset: dict[str, Any], comparisons: list[Comparison]) -> list[str]:
    return (against_other_predictors(comparisons) + agreement_section(comparisons, lambda c: c.settings)
            + disagreements(comparisons))


def against_other_predictors(comparisons: list[Comparison]) -> list[str]:
    """Our |error| beside other predictors' published ones, over the rows whose source also published their
    predictions, overall and per GPU: the same rows, the same measured figures."""
    rows = [c for c in comparisons if c.extra["other_predictions"]]
    if not rows:
        return []
    names = sorted({name for c in rows for name in c.extra["other_predictions"]})

    def cells(members: list[Comparison]) -> str:
        out = []
        for name in ("roofline (this tool)", *names):
            errors = [abs(c.error if name == "roofline (this tool)" else c.extra["other_predictions"][name]
                          / c.published - 1) for c in members
                      if name == "roofline (this tool)" or name in c.extra["other_predictions"]]
            out.append(f"{100 * statistics.median(errors):.1f}% / {100 * max(errors):.0f}%" if errors else "-")
        return " | ".join(out)

    lines = ["", "## Against other predictors", "",
             "Median / worst |error| of the step time on the rows whose source published other predictors' "
             "predictions of the same runs (`other_predictions`; the source block says where they were read). "
             "Ours is the shipped profiles without calibration, as everywhere in this report.", "",
             f"| rows | n | {' | '.join(('roofline (this tool)', *names))} |",
             f"|---|---:|{'---:|' * (len(names) + 1)}",
             f"| all | {len(rows)} | {cells(rows)} |"]
    for gpu in sorted({c.groups['gpu'] for c in rows}):
        members = [c for c in rows if c.groups["gpu"] == gpu]
        lines.append(f"| {gpu} | {len(members)} | {cells(members)} |")
    return lines


def disagreements(comparisons: list[Comparison]) -> list[str]:
    """Where the record disagrees with itself: the same model, GPU, mode and precision class measured by more
    than one source, side by side, with the spread of their published throughput."""
    by_key: dict[tuple[str, ...], list[Comparison]] = {}
    for c in comparisons:
        g = c.groups
        by_key.setdefault((g["model"], g["gpu"], g["mode"], PRECISION_CLASS[g["precision"]]), []).append(c)
    lines = ["", "## Where the record disagrees with itself", "",
             "Same model, GPU, mode and precision class from more than one source (batch and layout may differ; "
             "the settings say how).", "",
             "| model | gpu | mode | precision | source: settings, published /s | spread (max / min) |",
             "|---|---|---|---|---|---:|"]
    for key, rows in sorted(by_key.items()):
        if len({c.source_id for c in rows}) < 2:
            continue
        rates = [c.extra["published_samples_per_s"] for c in rows]
        cells = "; ".join(f"{c.source_id}: {c.settings}, {c.extra['published_samples_per_s']:.0f}" for c in rows)
        lines.append(f"| {' | '.join(key)} | {cells} | {max(rates) / min(rates):.2f}x |")
    return lines


HELD_OUT_NAMES = {"held_out": "held out", **{f"{s}_held_out": f"{s} held-out" for s in HELD_OUT_SETS}}
"""Each held-out part as the legend names it."""


def _held_out_label(block: Any) -> str:
    """Which part a source block's rows are in, as the legend names it."""
    return f" ({HELD_OUT_NAMES[block.part]})" if block.part in HELD_OUT_NAMES else ""


def legend(dataset: dict[str, Any]) -> list[str]:
    blocks = source_blocks(dataset)
    parts = []
    for part, name in HELD_OUT_NAMES.items():
        if members := [b for b in blocks if b.part == part]:
            parts.append(f"{name}: {', '.join(b.id for b in members)} ({sum(len(b.rows) for b in members)} rows)")
    lines = [
        f"Dataset: benchmarks/published/gpu-steps.yaml, {sum(len(b.rows) for b in blocks)} rows from "
        f"{len(blocks)} source blocks; {'; '.join(parts)}.",
        f"Held-out rule (committed before any error was computed): {dataset.get('holdout_rule', 'not stated')}",
        "Predicted: `predict_step` with the shipped profiles, no calibration; each row's stated settings; inputs "
        "from a loader copied from pinned memory each step (on a stream of their own where the loader prefetches), "
        "synthetic inputs not copied; one synchronization per step; optimizer `none` rows leave the predicted "
        "update out. Bound: `host` where the predicted step's host dispatch outlasts its device work "
        "(`roofline.advise.track_record.step_bound`), so the host's speed, which no row states, decides the "
        "row; else `device`.",
        "",
        "Sources:",
    ]
    lines += [f"- `{b.id}`{_held_out_label(b)}: {b.citation or b.script} ({b.framework})" for b in blocks]
    return lines

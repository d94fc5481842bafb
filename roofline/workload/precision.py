"""Numeric precisions a user can ask for, and what each means for storage and for compute units.

`tf32` stores fp32 (4 bytes) but multiplies on tensor cores with a 10-bit mantissa; `amp` is automatic
mixed precision (torch.autocast) in CUDA's default float16 with GradScaler's loss scaling, `amp-bf16` the same in
bfloat16 (`torch.autocast(dtype=torch.bfloat16)`, no scaler: what Lightning's 'bf16-mixed' and the Hugging Face
Trainer's bf16=True run): 16-bit compute on tensor cores, fp32 master weights. The storage size is
what moves through memory; the compute dtype picks the ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.errors import UnknownName, did_you_mean


@dataclass(frozen=True)
class Precision:
    """A user-facing precision: what activations/weights are stored as and which peak the math runs at."""

    name: str
    storage_bytes: int
    """Bytes per element of activations and (inference) weights in memory."""
    compute_dtype: str
    """Key into a profile's peak table: fp32, tf32, fp16, bf16, fp8, int8."""
    master_weight_bytes: int
    """Bytes per parameter of the weights the optimizer updates (fp32 master copy under AMP)."""
    caveat: str


PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision("fp32", 4, "fp32", 4, "full range and precision; the reference."),
        Precision("tf32", 4, "tf32", 4, "fp32 storage, 10-bit mantissa in tensor-core products; "
                  "default-safe for training on Ampere and later."),
        Precision("fp16", 2, "fp16", 2, "5-bit exponent: training needs loss scaling to avoid underflow."),
        Precision("bf16", 2, "bf16", 2, "keeps fp32's 8-bit exponent (range), 8-bit mantissa; "
                  "no loss scaling needed."),
        Precision("amp", 2, "fp16", 4, "fp16 compute under autocast with fp32 master weights and dynamic loss "
                  "scaling (GradScaler); on a CPU, autocast's bfloat16."),
        Precision("amp-bf16", 2, "bf16", 4, "bf16 compute under autocast with fp32 master weights; fp32's "
                  "exponent range, so no loss scaling; Ampere and later."),
        Precision("fp8", 1, "fp8", 2, "inference, or training with per-tensor scaling (Transformer "
                  "Engine); needs calibration."),
        Precision("int8", 1, "int8", 1, "inference only; needs post-training quantization and "
                  "calibration data."),
    )
}


def get_precision(name: str) -> Precision:
    """Look up a precision by name, case-insensitively."""
    key = name.strip().lower()
    if key not in PRECISIONS:
        raise UnknownName(f"unknown precision '{name}'{did_you_mean(key, list(PRECISIONS))}; "
                          f"choose one of {', '.join(PRECISIONS)}")
    return PRECISIONS[key]

"""Which units an "fp32" product runs on: PyTorch's TF32 switches, as a function of the version and container.

On Ampere and later GPUs a float32 convolution or matrix product may run on TF32 tensor cores (fp32 storage,
10-bit mantissa in the multiply, fp32 accumulate) instead of the CUDA cores, and whether it does is decided by
two switches, not by the tensors' dtype, so a run labelled "fp32" says nothing about which ran:

- convolutions, `torch.backends.cudnn.allow_tf32`: True by default since PyTorch 1.7;
- matrix products, `torch.backends.cuda.matmul.allow_tf32`: True by default in PyTorch 1.7 to 1.11, False
  from 1.12 (https://docs.pytorch.org/docs/stable/notes/cuda.html, "TensorFloat-32 (TF32) on Ampere (and
  later) devices"; the change: https://dev-discuss.pytorch.org/t/pytorch-and-tensorfloat32/504);
- NVIDIA's NGC PyTorch containers set `ENV TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1`, which turns the matmul switch
  back on (https://docs.monai.io/en/stable/precision_accelerating.html, "TensorFloat-32 (TF32)": "If you are
  using an NGC PyTorch container, the container includes a layer ENV TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1").

A mode applies only to fp32 precision on a device with TF32 tensor cores; elsewhere fp32 is fp32.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.errors import RooflineError


@dataclass(frozen=True)
class Fp32Math:
    """Which fp32 products may use TF32 tensor cores."""

    name: str
    convolutions_tf32: bool
    matmuls_tf32: bool
    meaning: str


FP32_MATH: dict[str, Fp32Math] = {
    m.name: m
    for m in (
        Fp32Math("pytorch", True, False, "PyTorch >= 1.12 defaults: convolutions in TF32 (cudnn.allow_tf32), "
                 "matrix products in IEEE fp32 (cuda.matmul.allow_tf32 False)"),
        Fp32Math("tf32", True, True, "convolutions and matrix products in TF32: PyTorch 1.7-1.11, an NGC "
                 "container (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1), or torch.set_float32_matmul_precision('high')"),
        Fp32Math("ieee", False, False, "IEEE fp32 on CUDA cores throughout: PyTorch < 1.7, or both switches off"),
    )
}
DEFAULT_FP32_MATH = "pytorch"
"""What a current PyTorch does when nobody says otherwise."""

TF32_DEFAULT_VERSIONS = ((1, 7), (1, 12))
"""[first, last) PyTorch versions whose matmul.allow_tf32 defaulted to True; TF32 itself arrived in 1.7."""


def get_fp32_math(name: str) -> Fp32Math:
    """The mode by name; a one-line error naming the choices otherwise."""
    key = name.strip().lower()
    if key not in FP32_MATH:
        raise RooflineError(f"--fp32-math '{name}': expected one of {', '.join(FP32_MATH)}")
    return FP32_MATH[key]


def pytorch_version(text: str) -> tuple[int, int]:
    """(major, minor) of a PyTorch version string ('1.12', '2.4.0')."""
    parts = text.strip().split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise RooflineError(f"PyTorch version '{text}': expected MAJOR.MINOR like 1.12") from None


def pytorch_fp32_math(version: str, ngc_container: bool = False) -> Fp32Math:
    """The mode a PyTorch `version` ("1.12", "2.4.0") runs fp32 in by default, inside an NGC container or not.
    Every NGC container that runs on an Ampere GPU has TF32 on for both (20.06, the first for the A100, shipped
    a 1.6 pre-release with it); before Ampere the mode changes nothing."""
    v = pytorch_version(version)
    first, last = TF32_DEFAULT_VERSIONS
    if ngc_container:
        return FP32_MATH["tf32"]
    if v < first:
        return FP32_MATH["ieee"]
    return FP32_MATH["tf32"] if v < last else FP32_MATH["pytorch"]

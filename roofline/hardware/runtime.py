"""Framework runtime profiles: what the software stack costs on top of the chip, measured once, as data.

A GPU profile says what the silicon can do; how fast eager PyTorch feeds it is a property of the framework and
the host: the host's time per layer call, and how close each non-GEMM kernel streams to the memory ceiling (a
normalisation or a max pool reaches a fifth to a half of what a copy does). A runtime profile holds those
figures as measured on one real machine, with the machine and the method named, so that a GPU that has never
been calibrated is priced with measured framework costs rather than none. Its kernel rates are stored beside
the copy bandwidth measured in the same run, so they transfer to another GPU as shares of that GPU's memory
ceiling; its host costs transfer as they are (the host, not the GPU, spends them).
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from roofline.errors import ProfileError, UnknownName, did_you_mean
from roofline.hardware.load import _read_yaml, list_profiles

EAGER_CUDA = "pytorch-eager-cuda"
"""The runtime a GPU profile without a calibration of its own is priced with."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HostCallCosts(_Strict):
    source: str = Field(min_length=1)
    by_kind: dict[str, float] = Field(min_length=1)
    """Host seconds per layer call by `op.kernel` or `op.kind` (the cost model's dispatch keys)."""


class KernelRates(_Strict):
    source: str = Field(min_length=1)
    reference_bandwidth_bytes_per_s: float = Field(gt=0, allow_inf_nan=False)
    reference: str
    bytes_per_s: dict[str, dict[int, float]]
    """kernel key -> {bytes per element: compulsory bytes read + written per second}."""

    def shares(self, element_bytes: int) -> dict[str, float]:
        """Each kernel's rate as a share of the reference copy rate, for tensors of `element_bytes`."""
        return {key: rates[element_bytes] / self.reference_bandwidth_bytes_per_s
                for key, rates in self.bytes_per_s.items() if element_bytes in rates}


class GemmShares(_Strict):
    source: str = Field(min_length=1)
    note: str = ""
    by_dtype: dict[Literal["fp32", "tf32", "fp16", "bf16", "fp8"], float]
    """Compute dtype -> the measured share of the datasheet peak a large square GEMM sustains."""


class LoopCost(_Strict):
    fixed: float = Field(ge=0, allow_inf_nan=False)
    per_param_tensor: float = Field(ge=0, allow_inf_nan=False)

    def seconds(self, param_tensors: int) -> float:
        return self.fixed + self.per_param_tensor * param_tensors


class TrainingLoopHost(_Strict):
    """Host seconds of the training loop's Python around the model: the optimizer step, GradScaler, zero_grad."""

    source: str = Field(min_length=1)
    note: str = ""
    optimizer_step: LoopCost
    grad_scaler: LoopCost
    zero_grad: LoopCost


class Factor(_Strict):
    value: float = Field(gt=0, allow_inf_nan=False)
    source: str = Field(min_length=1)
    note: str = ""


class RuntimeProfile(_Strict):
    name: str
    kind: Literal["runtime"]
    aliases: list[str] = []
    measured_on: str = Field(min_length=1)
    host_call_s: HostCallCosts
    kernel_rates: KernelRates
    gemm_sustained_share: GemmShares
    training_loop_host_s: TrainingLoopHost
    training_host_factor: Factor
    """How much more a layer call costs the host in a training step than in inference (autograd's recording
    and backward engine), measured."""


@cache
def load_runtime(name: str) -> RuntimeProfile:
    """The runtime profile `name` (its file stem or an alias) from the profile search path."""
    key = name.lower()
    entries = [e for e in list_profiles() if e.kind == "runtime"]
    entry = next((e for e in entries if key == e.name or key in e.aliases), None)
    if entry is None:
        raise UnknownName(f"unknown runtime profile '{name}'"
                          f"{did_you_mean(name, [e.name for e in entries])}")
    try:
        return RuntimeProfile.model_validate(_read_yaml(entry.path))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ProfileError(f"{entry.path}: field '{'.'.join(map(str, first['loc']))}': {first['msg']}") from None

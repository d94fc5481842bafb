"""The schema of a framework runtime profile (`roofline.hardware.runtime` says what one is and loads it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
    reference_sm_cycles_per_s: float = Field(gt=0, allow_inf_nan=False)
    """SMs x clock of the GPU the rates were measured on: what its kernels' issue and latency limits scale by."""
    reference_sm_cycles_source: str = Field(min_length=1)
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
    tf32_operands_across_share: Factor
    """The rate a TF32 product whose two operands are both stored across its reduction (a weight gradient)
    runs at, as a share of what the cost model prices the same product at, measured."""

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


ELEMENT_BOUND_SPREAD = 1.25
"""How much more elements per second a kernel may stream over narrower elements and still count as bound by its
instructions rather than its memory (`KernelRates.element_bound_shares`): a memory-bound kernel streams bytes at
the same rate, so halving its elements' size doubles its elements per second."""


class KernelRates(_Strict):
    source: str = Field(min_length=1)
    reference_bandwidth_bytes_per_s: float = Field(gt=0, allow_inf_nan=False)
    reference: str
    reference_sm_cycles_per_s: float = Field(gt=0, allow_inf_nan=False)
    """SMs x clock of the GPU the rates were measured on: what its kernels' issue and latency limits scale by."""
    reference_sm_cycles_source: str = Field(min_length=1)
    reference_architecture: str = Field(min_length=1)
    """The architecture family of the machine the rates were measured on (a GPU profile's `architecture`, first
    word): what `roofline.model.ceilings.runtime_figures` carries by memory and issue time combined."""
    reference_fp32_lanes_per_sm: int = Field(gt=0)
    """fp32 lanes per SM of the reference machine: an instruction-bound kernel's rate scales by fp32 lane-cycles
    (`element_bound_shares`), which differ per SM between generations (64 on Volta, Turing and GA100; 128 on
    GA102, Ada, Hopper and Blackwell)."""
    bytes_per_s: dict[str, dict[int, float]]
    """kernel key -> {bytes per element: compulsory bytes read + written per second}."""

    def shares(self, element_bytes: int) -> dict[str, float]:
        """Each kernel's rate as a share of the reference copy rate, for tensors of `element_bytes`."""
        return {key: rates[element_bytes] / self.reference_bandwidth_bytes_per_s
                for key, rates in self.bytes_per_s.items() if element_bytes in rates}

    def element_bound_shares(self, element_bytes: int) -> dict[str, float]:
        """The kernels bound by their instructions over elements of this size on the reference machine, each
        with the share of the copy rate its memory access reached over wider elements. A kernel runs at the lower
        of what its access pattern gets out of memory and what its instructions allow; one that streamed the same
        elements per second over wider and narrower elements (within `ELEMENT_BOUND_SPREAD`) was held back by its
        instructions over the narrower ones (BatchNorm in eval on the H100: 301 and 358 G elements/s over fp32
        and fp16, 80% and 48% of the copy rate). A memory-bound kernel streams bytes at the same rate instead."""
        out = {}
        for key, rates in self.bytes_per_s.items():
            wider = [b for b in rates if b > element_bytes]
            if element_bytes not in rates or not wider:
                continue
            own = rates[element_bytes] / element_bytes
            if max(own / (rates[b] / b) for b in wider) <= ELEMENT_BOUND_SPREAD:
                out[key] = max(rates[b] for b in wider) / self.reference_bandwidth_bytes_per_s
        return out


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


class StreamingProducts(_Strict):
    """How cuBLAS runs a matrix product whose weight comes from DRAM (a decode step's: it streams its weight once
    and does little arithmetic with it): a fixed time per product on top of its bytes, which stream at a share of
    the profile's sustained DRAM rate. The share may exceed 1: the sustained rate is a Triad's (two reads, one
    write), and a weight is only read."""

    source: str = Field(min_length=1)
    fixed_s: float = Field(ge=0, allow_inf_nan=False)
    stream_share: float = Field(gt=0, le=2, allow_inf_nan=False)


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
    streaming_products: StreamingProducts

"""The model-level facts one op's cost depends on beyond the op and the device (precision bytes, what the
step touches between two uses of a weight, the activations' layout): shared by the cost model and the CPU
runtime beneath it, so neither imports the other for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from roofline.model.ceilings import Ceilings
from roofline.workload.ops.base import Op

KERNEL_VARIANTS = (":native", ":nchw")
"""Suffixes of a kernel key for what runs instead of the library's channels-last kernel, in the order they are
looked up: the framework's own kernel (16-bit model parameters), then the library's NCHW kernel."""


@dataclass(frozen=True)
class CostContext:
    """Model-level facts one op's cost depends on."""

    ceilings: Ceilings
    activation_bytes: float
    """Bytes per activation element at this precision (what an op reads; a mean over its inputs where autocast
    gives them different dtypes)."""
    weight_bytes: int
    """Bytes per weight element the kernels read (fp16 copies under AMP)."""
    weight_reuse_bytes: float = 0.0
    """Bytes a step touches between two uses of one weight (all weights and every activation the step
    writes): a weight is read once per step, so it stays in the smallest level that holds all of them; an
    LRU cache cycled through more than it holds keeps none of it."""
    channels_last: bool = False
    """Activations stored NHWC (`model.to(memory_format=torch.channels_last)`), as tensor-core kernels want."""
    warm_calls: bool = False
    """The op runs back to back on its own (`StepOptions.alone`): per-call costs are the warm figures
    calibration measured back to back, not those of a layer called after other layers evicted its code."""
    output_bytes: float | None = None
    """Bytes per element of what the op writes where that differs from what it reads (an autocast cast, an add
    that promotes an fp16 input to fp32: `roofline.model.autocast`); None: `activation_bytes`."""
    native_norm: bool = False
    """PyTorch runs BatchNorm on its native kernels instead of cuDNN's, which take neither a bfloat16 input nor a
    float16 one with 16-bit scale and shift (`_batch_norm_impl_index`, later `_select_batch_norm_backend`, in
    aten/src/ATen/native/Normalization.cpp: cuDNN needs `input.scalar_type() != at::kBFloat16 &&
    weight.scalar_type() != at::kBFloat16 && (input.scalar_type() != at::kHalf || weight.scalar_type() ==
    at::kFloat)`): the model's own parameters are 16-bit (`model.half()`, `.bfloat16()`), or bf16 autocast hands
    BatchNorm the bf16 output of a convolution (BatchNorm is on neither of autocast's lists)."""
    host_call_factor: float = 1.0
    """How much more each layer call costs the host than the per-call figures say: the runtime profile's
    training factor in a GPU training step (autograd's recording and backward engine), else 1."""

    def kernel_rate(self, kernel: str, suffix: str = "") -> tuple[str, float | None]:
        """(key, measured rate) of a kernel (`kernel` + `suffix`, e.g. 'norm:train' + ':backward') as this context
        runs it: for activations not in channels_last the framework's own kernel first where the model's
        parameters are 16-bit ('norm:train:native': `native_norm`, measured over NCHW only, so a 16-bit model in
        channels_last is priced at cuDNN's figures), then the layout's own measurement ('norm:train:nchw': a
        library runs another kernel over NCHW tensors), then the kernel's own."""
        rates = self.ceilings.kernel_bytes_per_s
        if not self.channels_last:
            for variant in KERNEL_VARIANTS if self.native_norm else KERNEL_VARIANTS[1:]:
                specific = f"{kernel}{variant}{suffix}"
                if specific in rates:
                    return specific, rates[specific]
        return f"{kernel}{suffix}", rates.get(f"{kernel}{suffix}")


ContextFor = Callable[[Op, str], CostContext]
"""The context one pass of one op is priced in; the contexts it hands out are kept, not made per call, so that
`op_costs` can tell two apart by identity."""

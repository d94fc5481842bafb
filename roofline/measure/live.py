"""Live PyTorch steps for validation: build the step function, and attribute profiled time to op kinds.

Kept apart from `roofline.validate` (which compares) and beside `live_runs` (which times these steps), so that
what is measured is defined in one place: a forward pass under `torch.no_grad()` for inference; forward, loss,
backward and an optimizer step for training, exactly the work `roofline.model.step` predicts (one input copy
per step on a GPU, no synchronization inside the step; the timing module synchronizes before reading the
clock).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roofline.errors import MissingDependency, RooflineError

ATEN_KIND = {
    "aten::convolution": "conv2d", "aten::_convolution": "conv2d", "aten::cudnn_convolution": "conv2d",
    "aten::mkldnn_convolution": "conv2d", "aten::convolution_backward": "conv2d",
    "aten::_slow_conv2d_forward": "conv2d", "aten::_slow_conv2d_backward": "conv2d",
    "aten::addmm": "gemm", "aten::mm": "gemm", "aten::bmm": "gemm", "aten::linear": "gemm",
    "aten::matmul": "gemm",
    "aten::native_batch_norm": "norm", "aten::_native_batch_norm_legit": "norm",
    "aten::_native_batch_norm_legit_no_training": "norm", "aten::native_batch_norm_backward": "norm",
    "aten::cudnn_batch_norm": "norm", "aten::cudnn_batch_norm_backward": "norm",
    "aten::native_layer_norm": "norm", "aten::native_layer_norm_backward": "norm",
    "aten::relu": "activation", "aten::relu_": "activation", "aten::threshold_backward": "activation",
    "aten::hardtanh": "activation", "aten::hardtanh_": "activation", "aten::hardtanh_backward": "activation",
    "aten::hardswish": "activation", "aten::hardswish_": "activation", "aten::hardswish_backward": "activation",
    "aten::hardsigmoid": "activation", "aten::hardsigmoid_": "activation",
    "aten::hardsigmoid_backward": "activation", "aten::gelu": "activation", "aten::gelu_backward": "activation",
    "aten::silu": "activation", "aten::sigmoid": "activation",
    "aten::add": "elementwise", "aten::add_": "elementwise", "aten::mul": "elementwise", "aten::mul_": "elementwise",
    "aten::max_pool2d_with_indices": "pool", "aten::max_pool2d_with_indices_backward": "pool",
    "aten::adaptive_avg_pool2d": "pool", "aten::_adaptive_avg_pool2d": "pool", "aten::mean": "pool",
    "aten::avg_pool2d": "pool", "aten::_softmax": "softmax", "aten::_log_softmax": "loss",
    "aten::nll_loss_forward": "loss", "aten::embedding": "embedding", "aten::native_dropout": "dropout",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "attention",
    "aten::_scaled_dot_product_efficient_attention": "attention",
    "aten::_scaled_dot_product_flash_attention": "attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": "attention",
    "aten::_scaled_dot_product_efficient_attention_backward": "attention",
    "aten::_scaled_dot_product_flash_attention_backward": "attention",
    "aten::clamp_min": "activation", "aten::clamp_min_": "activation", "aten::gelu_": "activation",
    "aten::silu_backward": "activation", "aten::sigmoid_backward": "activation",
    "aten::embedding_dense_backward": "embedding", "aten::native_dropout_backward": "dropout",
    "aten::_softmax_backward_data": "softmax", "aten::cat": "concat",
    "aten::adaptive_avg_pool2d_backward": "pool", "aten::_adaptive_avg_pool2d_backward": "pool",
    "aten::avg_pool2d_backward": "pool",
    "aten::_foreach_add_": "optimizer", "aten::_foreach_mul_": "optimizer", "aten::_foreach_add": "optimizer",
    "aten::_foreach_addcmul_": "optimizer", "aten::_foreach_addcdiv_": "optimizer",
    "aten::_foreach_lerp_": "optimizer", "aten::_foreach_sqrt": "optimizer", "aten::_foreach_div_": "optimizer",
}
"""Profiler event name -> op kind of the IR, for the leaf kernels whose self time we attribute."""


def require_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingDependency("live validation needs torch: pip install 'roofline[torch]'") from None
    return torch


def resolve_device(name: str) -> Any:
    torch = require_torch()
    if name not in ("cpu", "cuda"):
        raise RooflineError(f"--device '{name}': expected cpu or cuda")
    if name == "cuda" and not torch.cuda.is_available():
        raise RooflineError("--device cuda: no CUDA device is visible to torch on this machine; use --device cpu")
    return torch.device(name)


def torch_dtype(precision: str) -> Any:
    torch = require_torch()
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
            "amp": torch.float32, "amp-bf16": torch.float32}.get(precision)


def make_step(module: Any, example: Any, device: Any, precision: str, train: bool,
              optimizer: str = "sgd", lm_loss: bool = False) -> Callable[[], Any]:
    """A zero-argument callable running one step on `device`, inputs copied from host memory each step. The
    training loss is the output's mean square (cheap, as the predictions of models without a loss op assume), or
    with `lm_loss` a language model's next-token cross-entropy of its logits against its own input ids (the
    `CrossEntropy` op its workload prices)."""
    torch = require_torch()
    dtype = torch_dtype(precision)
    if dtype is None:
        raise RooflineError(f"live validation supports fp32, tf32, fp16, bf16, amp and amp-bf16, not {precision}")
    # set on every step built, so a tf32 run does not leave TF32 products on for a later fp32 run in the same
    # process: fp32 gets PyTorch's defaults since 1.12 (matrix products IEEE, convolutions on TF32 where the GPU
    # has it), which is what predictions assume (`roofline.model.fp32_math`, mode 'pytorch')
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = True
    module = module.to(device)
    if precision in ("fp16", "bf16"):
        module = module.to(dtype)
    host_input = example if example.dtype in (torch.int64, torch.int32) else example.to(
        dtype if precision in ("fp16", "bf16") else torch.float32)
    autocast_dtype = None
    if precision == "amp":
        autocast_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    elif precision == "amp-bf16":
        autocast_dtype = torch.bfloat16
    if not train:
        module.eval()

        def infer() -> Any:
            with torch.no_grad(), torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
                return module(host_input.to(device, non_blocking=False))

        return infer
    module.train()
    opt_cls = {"sgd": lambda p: torch.optim.SGD(p, lr=1e-3),
               "momentum": lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9),
               "adam": lambda p: torch.optim.Adam(p, lr=1e-3)}[optimizer]
    opt = opt_cls(module.parameters())
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "amp" and device.type == "cuda")

    def train_step() -> Any:
        x = host_input.to(device)
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            out = module(x)
            if lm_loss:
                loss = torch.nn.functional.cross_entropy(out.float().flatten(0, 1), x.flatten())
            else:
                loss = out.float().square().mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        return loss

    return train_step


def time_by_kind(step: Callable[[], Any], device: Any, steps: int = 3) -> dict[str, float]:
    """Seconds per step attributed to op kinds by torch.profiler (self time of the kernels / aten ops);
    events the table does not know are summed under 'other'."""
    torch = require_torch()
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
    totals: dict[str, float] = {}
    for evt in prof.key_averages():
        self_us = (evt.self_device_time_total if device.type == "cuda" else evt.self_cpu_time_total)
        if self_us <= 0:
            continue
        kind = ATEN_KIND.get(evt.key, "other")
        totals[kind] = totals.get(kind, 0.0) + self_us * 1e-6 / steps
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))

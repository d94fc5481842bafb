"""Which PyTorch CPU kernel runs a convolution: oneDNN or the batch-1 fallback. Part of the CPU runtime
beneath the cost model: the cost model prices the kernel it names, the heap replay allocates what it
allocates."""

from __future__ import annotations

from roofline.workload.ops.conv import Conv2d

MKLDNN_MIN_ELEMENTS = 20480
"""PyTorch takes its oneDNN convolution for a batch-1, 1x1-or-3x3 input only above this many input elements
(ConvParams::use_mkldnn, aten/src/ATen/native/Convolution.cpp: 'for some case, native is faster')."""


def cpu_conv_backend(op: Conv2d, threads: int) -> str:
    """Which PyTorch CPU kernel runs an fp32 convolution: 'mkldnn' (oneDNN, a fixed cost of several primitive
    calls, see `roofline.measure.probes.conv.FIXED_PROBES`) or 'slow2d' (im2col and one BLAS product, a plain call).
    ConvParams::use_mkldnn: oneDNN when (strided or dilated or batch >= 16 or not 1x1 or more than one
    thread) and (grouped or a kernel larger than 3x3 in both sides or batch > 1 or more than 20480 input
    elements); checked against torch._C._select_conv_backend on torch 2.13."""
    stride, dilation = tuple(op.stride), tuple(op.dilation)
    r, s, n = op.r, op.s, op.n
    one_by_one = r == 1 and s == 1
    takes = stride != (1, 1) or dilation != (1, 1) or n >= 16 or not one_by_one or threads > 1
    worth = op.groups > 1 or (r > 3 and s > 3) or n > 1 or n * op.c * op.h * op.w > MKLDNN_MIN_ELEMENTS
    return "mkldnn" if takes and worth else "slow2d"

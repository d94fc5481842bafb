"""The op IR: every operation a model is made of, with its FLOPs, bytes, parameters and saved activations
for the forward pass and both backward passes, as formulas in the shapes (see base.py for the contract)."""

from roofline.workload.ops.attention import Attention, Embedding, Softmax
from roofline.workload.ops.base import PASSES, GemmView, Op, Traffic, Workload
from roofline.workload.ops.conv import Conv2d
from roofline.workload.ops.gemm import Gemm, Linear
from roofline.workload.ops.loss import CrossEntropy
from roofline.workload.ops.norm import BatchNorm, LayerNorm
from roofline.workload.ops.pointwise import Activation, Concat, Dropout, Elementwise, Reduce, Reshape
from roofline.workload.ops.pooling import AdaptiveAvgPool2d, Pool2d

__all__ = [
    "PASSES", "Activation", "AdaptiveAvgPool2d", "Attention", "BatchNorm", "Concat", "Conv2d", "CrossEntropy",
    "Dropout", "Elementwise", "Embedding", "Gemm", "GemmView", "LayerNorm", "Linear", "Op", "Pool2d", "Reduce",
    "Reshape", "Softmax", "Traffic", "Workload",
]

"""cuDNN's Winograd algorithm for a 3x3 stride-1 convolution: its products and its transforms' traffic, which
the cost model weighs against the direct (implicit-GEMM) convolution where a convolution runs on a GPU's CUDA
cores (fp32, or fp16 without tensor cores).

Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks" (CVPR 2016): F(m x m, 3 x 3) computes an
m x m output tile from an (m + 2) x (m + 2) input tile with (m + 2)^2 multiplications per pair of channels instead
of 9 m^2, 36 against 144 for F(4 x 4, 3 x 3): 4x fewer. cuDNN's non-fused variant (`*_ALGO_WINOGRAD_NONFUSED` of
cudnnConvolutionFwdAlgo_t, cudnnConvolutionBwdDataAlgo_t and cudnnConvolutionBwdFilterAlgo_t, since cuDNN 5.1)
runs it as three kinds of kernel through memory: a transform writes the tiles of its input as (m + 2)^2 matrices
of tiles x channels, (m + 2)^2 independent products multiply them by the transformed filters, and an inverse
transform reads the products' results and writes the output. Nothing here is fitted: the products are priced as
any product on the device's units, the transforms as the bytes they move.

What it explains (cnn-benchmarks, jcjohnson/cnn-benchmarks outputs/titan_xm_cudnn{4,50,51}/*.json, Torch7 on the
Maxwell GTX Titan X at batch 16; total = forward + backward): VGG-16, whose 3x3 layers are wide and large, took
338.7 ms with cuDNN 4 (no Winograd), 262.3 with 5.0 (the fused F(2x2, 3x3)) and 192.8 with 5.1 (the non-fused
F(4x4, 3x3)): 1.76x; ResNet-50, whose 3x3 layers are a third of its work and narrow where they are large, 178.8,
166.1 and 159.6 ms: 1.12x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline.workload.ops.base import GemmView
from roofline.workload.ops.conv import Conv2d

OUTPUT_TILE = 4
"""m of F(m x m, 3 x 3): the non-fused kernels' 4 x 4 output tile (the fused WINOGRAD algorithm's F(2 x 2, 3 x 3)
keeps its transforms in shared memory at 2.25x fewer multiplications; not priced: its kernels' efficiency has no
published figure)."""

POSITIONS = (OUTPUT_TILE + 2) ** 2
"""Independent products, one per element of the 6 x 6 transformed tile."""


@dataclass(frozen=True)
class WinogradPlan:
    """One pass of a convolution run as Winograd F(4x4, 3x3), in elements."""

    products: GemmView
    """The 36 products: tiles x channels against channels x channels (the weight gradient reduces over tiles)."""
    product_elements: float
    """What the products read (the transformed input and filters) and write (their results)."""
    transform_elements: float
    """What the transforms read and write: the input tiles and filters into the transformed domain, the products'
    results back out."""


def winograd_plan(op: Conv2d, pass_: str) -> WinogradPlan | None:
    """The pass as cuDNN's non-fused Winograd runs it, or None where it has no such algorithm: filters other than
    3 x 3, strides or dilations other than 1, grouped convolutions."""
    if (op.groups != 1 or (op.r, op.s) != (3, 3) or op.stride != (1, 1) or op.dilation != (1, 1)):
        return None
    n, c, k = int(op.n), int(op.c), int(op.k)
    x, y = n * c * int(op.h) * int(op.w), n * k * int(op.p) * int(op.q)
    filters, transformed_filters = 9 * c * k, POSITIONS * c * k
    if pass_ == "backward_input":
        # dX is the full convolution of dY with the flipped filters: k channels in, c out, tiles over h x w
        tiles = n * math.ceil(int(op.h) / OUTPUT_TILE) * math.ceil(int(op.w) / OUTPUT_TILE)
        return _data_pass(GemmView(tiles, c, k, POSITIONS), y, x, k, c, filters)
    tiles = n * math.ceil(int(op.p) / OUTPUT_TILE) * math.ceil(int(op.q) / OUTPUT_TILE)
    if pass_ == "forward":
        return _data_pass(GemmView(tiles, k, c, POSITIONS), x, y, c, k, filters)
    # the weight gradient: x and dY transformed, 36 products reducing over the tiles, their c x k results
    # transformed back into the 3 x 3 filters' gradient
    transformed = POSITIONS * tiles * (c + k)
    return WinogradPlan(GemmView(c, k, tiles, POSITIONS), float(transformed + transformed_filters),
                        float(x + y + transformed + transformed_filters + filters))


def _data_pass(products: GemmView, source: int, target: int, channels_in: int, channels_out: int,
               filters: int) -> WinogradPlan:
    """A pass that maps a tensor to a tensor through the filters (the forward, the input gradient): the source's
    tiles and the filters transformed, the products, their results transformed into the target."""
    tiles = int(products.m)
    transformed_in = POSITIONS * tiles * channels_in
    transformed_out = POSITIONS * tiles * channels_out
    transformed_filters = POSITIONS * channels_in * channels_out
    transforms = source + transformed_in + filters + transformed_filters + transformed_out + target
    return WinogradPlan(products, float(transformed_in + transformed_filters + transformed_out), float(transforms))

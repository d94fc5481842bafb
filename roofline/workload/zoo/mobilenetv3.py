"""MobileNetV3 large and small (Howard et al. 2019) as torchvision builds them: the block tables of
torchvision/models/mobilenetv3.py (_mobilenet_v3_conf, width 1.0), inverted residual blocks with optional
squeeze-and-excitation (ReLU inside, hardsigmoid gate), hardswish in the later stages, BatchNorm with eps
1e-3, and a Linear -> hardswish -> Dropout(0.2) -> Linear classifier. The tables are shared with the torch
module (roofline.workload.zoo.modules.mobilenetv3), so the two cannot drift apart."""

from __future__ import annotations

from typing import NamedTuple

from roofline.workload.zoo._graph import Graph


class Block(NamedTuple):
    """One inverted residual block: torchvision's InvertedResidualConfig at width multiplier 1."""

    in_ch: int
    kernel: int
    expanded: int
    out_ch: int
    se: bool
    act: str
    """'relu' or 'hardswish'."""
    stride: int

    @property
    def squeeze(self) -> int:
        """Squeeze-and-excitation width: a quarter of the expanded channels, rounded to a multiple of 8."""
        return make_divisible(self.expanded // 4)

    @property
    def residual(self) -> bool:
        return self.stride == 1 and self.in_ch == self.out_ch


RE, HS = "relu", "hardswish"

LARGE = (
    Block(16, 3, 16, 16, False, RE, 1), Block(16, 3, 64, 24, False, RE, 2), Block(24, 3, 72, 24, False, RE, 1),
    Block(24, 5, 72, 40, True, RE, 2), Block(40, 5, 120, 40, True, RE, 1), Block(40, 5, 120, 40, True, RE, 1),
    Block(40, 3, 240, 80, False, HS, 2), Block(80, 3, 200, 80, False, HS, 1), Block(80, 3, 184, 80, False, HS, 1),
    Block(80, 3, 184, 80, False, HS, 1), Block(80, 3, 480, 112, True, HS, 1), Block(112, 3, 672, 112, True, HS, 1),
    Block(112, 5, 672, 160, True, HS, 2), Block(160, 5, 960, 160, True, HS, 1), Block(160, 5, 960, 160, True, HS, 1),
)
SMALL = (
    Block(16, 3, 16, 16, True, RE, 2), Block(16, 3, 72, 24, False, RE, 2), Block(24, 3, 88, 24, False, RE, 1),
    Block(24, 5, 96, 40, True, HS, 2), Block(40, 5, 240, 40, True, HS, 1), Block(40, 5, 240, 40, True, HS, 1),
    Block(40, 5, 120, 48, True, HS, 1), Block(48, 5, 144, 48, True, HS, 1), Block(48, 5, 288, 96, True, HS, 2),
    Block(96, 5, 576, 96, True, HS, 1), Block(96, 5, 576, 96, True, HS, 1),
)
VARIANTS = {"large": (LARGE, 1280), "small": (SMALL, 1024)}
"""variant -> (blocks, width of the classifier's hidden layer)."""

STEM_CHANNELS = 16
BN_EPS = 0.001
DROPOUT = 0.2


def make_divisible(value: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible: round to the nearest multiple of `divisor`, never 10% below `value`."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def last_conv_channels(blocks: tuple[Block, ...]) -> int:
    """The 1x1 convolution after the blocks widens 6x (960 for large, 576 for small)."""
    return 6 * blocks[-1].out_ch


def build(g: Graph, variant: str, num_classes: int) -> None:
    blocks, hidden = VARIANTS[variant]
    _conv_bn_act(g, "features.0", STEM_CHANNELS, 3, 2, 1, HS)
    for i, block in enumerate(blocks, start=1):
        _inverted_residual(g, f"features.{i}", block)
    _conv_bn_act(g, f"features.{len(blocks) + 1}", last_conv_channels(blocks), 1, 1, 1, HS)
    g.adaptive_avg_pool("avgpool", 1)
    g.flatten("flatten")
    g.linear("classifier.0", hidden)
    g.act("classifier.1", HS, inplace=True)
    g.dropout("classifier.2", DROPOUT, inplace=True)
    g.linear("classifier.3", num_classes)


def _conv_bn_act(g: Graph, prefix: str, out: int, kernel: int, stride: int, groups: int, act: str | None) -> None:
    """torchvision's Conv2dNormActivation: conv (no bias) '.0', BatchNorm '.1', activation in place '.2'."""
    g.conv(f"{prefix}.0", out, kernel, stride=stride, groups=groups)
    g.batch_norm(f"{prefix}.1")
    if act:
        g.act(f"{prefix}.2", act, inplace=True)


def _inverted_residual(g: Graph, prefix: str, b: Block) -> None:
    """Expand 1x1 (when wider), depthwise kxk, squeeze-and-excitation (a gate times its own input), project
    1x1; the block's input added in place when shapes match (`out += x`)."""
    block_input = g.current
    layer = 0
    if b.expanded != b.in_ch:
        _conv_bn_act(g, f"{prefix}.block.{layer}", b.expanded, 1, 1, 1, b.act)
        layer += 1
    _conv_bn_act(g, f"{prefix}.block.{layer}", b.expanded, b.kernel, b.stride, b.expanded, b.act)
    layer += 1
    if b.se:
        se = f"{prefix}.block.{layer}"
        features, gated = g.shape, g.current
        g.adaptive_avg_pool(f"{se}.avgpool", 1)
        g.conv(f"{se}.fc1", b.squeeze, 1, bias=True)
        g.act(f"{se}.activation", RE)
        g.conv(f"{se}.fc2", b.expanded, 1, bias=True)
        g.act(f"{se}.scale_activation", "hardsigmoid")
        g.shape = features
        g.elementwise(f"{se}.mul", op="mul", other=gated)
        layer += 1
    _conv_bn_act(g, f"{prefix}.block.{layer}", b.out_ch, 1, 1, 1, None)
    if b.residual:
        g.elementwise(f"{prefix}.add", other=block_input, inplace=True)

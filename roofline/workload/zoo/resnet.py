"""ResNet-18, -50, -101 and -152 (He et al. 2015) as torchvision builds them: v1.5, i.e. a Bottleneck's stride sits
on its 3x3 convolution (torchvision/models/resnet.py); BasicBlock for 18, Bottleneck (4x expansion) for the rest;
a 1x1 projection (conv + BatchNorm) on the identity path where stride or width changes."""

from __future__ import annotations

from roofline.workload.zoo._graph import Graph

DEPTHS = {"resnet18": ("basic", (2, 2, 2, 2)), "resnet50": ("bottleneck", (3, 4, 6, 3)),
          "resnet101": ("bottleneck", (3, 4, 23, 3)), "resnet152": ("bottleneck", (3, 8, 36, 3))}
"""model -> (block type, blocks per stage)."""
EXPANSION = {"basic": 1, "bottleneck": 4}
STAGE_WIDTHS = (64, 128, 256, 512)


def build(g: Graph, model: str, num_classes: int) -> None:
    block, depths = DEPTHS[model]
    g.conv("conv1", 64, 7, stride=2, pad=3)
    g.batch_norm("bn1")
    g.act("relu", "relu", inplace=True)
    g.max_pool("maxpool", 3, 2, 1)
    in_ch = 64
    for stage, (width, depth) in enumerate(zip(STAGE_WIDTHS, depths, strict=True), start=1):
        for i in range(depth):
            stride = 2 if stage > 1 and i == 0 else 1
            _block(g, f"layer{stage}.{i}", block, in_ch, width, stride)
            in_ch = width * EXPANSION[block]
    g.adaptive_avg_pool("avgpool", 1)
    g.flatten("flatten")
    g.linear("fc", num_classes)


def _block(g: Graph, prefix: str, block: str, in_ch: int, width: int, stride: int) -> None:
    """Main path, then the projection of the input (torchvision computes it after the main path), the in-place
    add of the identity (`out += identity`), ReLU in place."""
    identity, block_input = g.shape, g.current
    out_ch = width * EXPANSION[block]
    if block == "basic":
        g.conv(f"{prefix}.conv1", width, 3, stride=stride)
        g.batch_norm(f"{prefix}.bn1")
        g.act(f"{prefix}.relu", "relu", inplace=True)
        g.conv(f"{prefix}.conv2", width, 3)
        g.batch_norm(f"{prefix}.bn2")
    else:
        g.conv(f"{prefix}.conv1", width, 1)
        g.batch_norm(f"{prefix}.bn1")
        g.act(f"{prefix}.relu", "relu", inplace=True)
        g.conv(f"{prefix}.conv2", width, 3, stride=stride)
        g.batch_norm(f"{prefix}.bn2")
        g.act(f"{prefix}.relu", "relu", inplace=True)
        g.conv(f"{prefix}.conv3", out_ch, 1)
        g.batch_norm(f"{prefix}.bn3")
    main, main_shape = g.current, g.shape
    if stride != 1 or in_ch != out_ch:
        g.current, g.shape = block_input, identity
        g.conv(f"{prefix}.downsample.0", out_ch, 1, stride=stride)
        g.batch_norm(f"{prefix}.downsample.1")
        block_input, g.current, g.shape = g.current, main, main_shape
    g.elementwise(f"{prefix}.add", other=block_input, inplace=True)
    g.act(f"{prefix}.relu", "relu", inplace=True)

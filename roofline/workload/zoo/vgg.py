"""VGG-16 (Simonyan & Zisserman 2014, configuration D) as torchvision.models.vgg16 builds it: thirteen 3x3
convolutions with bias and ReLU, no BatchNorm, five 2x2 max pools, AdaptiveAvgPool2d(7) and a
Linear-ReLU-Dropout(0.5) x2 -> Linear classifier."""

from __future__ import annotations

from roofline.workload.zoo._graph import Graph

CONFIG_D = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")
"""Output channels of each 3x3 convolution, 'M' for a 2x2 max pool with stride 2."""
POOLED = 7
HIDDEN = 4096
DROPOUT = 0.5


def _layers() -> tuple[tuple[str, int], ...]:
    """The features Sequential, item by item: each conv is followed by its ReLU as a separate module."""
    out: list[tuple[str, int]] = []
    for item in CONFIG_D:
        out.extend([("pool", 2)] if item == "M" else [("conv", int(item)), ("relu", 0)])
    return tuple(out)


CONFIG_D_LAYERS = _layers()


def build(g: Graph, num_classes: int) -> None:
    for i, (kind, value) in enumerate(CONFIG_D_LAYERS):
        if kind == "conv":
            g.conv(f"features.{i}", value, 3, bias=True)
        elif kind == "relu":
            g.act(f"features.{i}", "relu", inplace=True)
        else:
            g.max_pool(f"features.{i}", 2, 2)
    g.adaptive_avg_pool("avgpool", POOLED)
    g.flatten("flatten")
    g.linear("classifier.0", HIDDEN)
    g.act("classifier.1", "relu", inplace=True)
    g.dropout("classifier.2", DROPOUT)
    g.linear("classifier.3", HIDDEN)
    g.act("classifier.4", "relu", inplace=True)
    g.dropout("classifier.5", DROPOUT)
    g.linear("classifier.6", num_classes)

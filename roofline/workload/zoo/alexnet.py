"""AlexNet as torchvision.models.alexnet builds it: the single-tower variant of Krizhevsky's 'one weird
trick' paper (2014), 64-192-384-256-256 channels, AdaptiveAvgPool2d(6), dropout before each hidden Linear."""

from __future__ import annotations

from roofline.workload.zoo._graph import Graph

FEATURES = (
    ("conv", 64, 11, 4, 2), ("relu",), ("pool", 3, 2),
    ("conv", 192, 5, 1, 2), ("relu",), ("pool", 3, 2),
    ("conv", 384, 3, 1, 1), ("relu",),
    ("conv", 256, 3, 1, 1), ("relu",),
    ("conv", 256, 3, 1, 1), ("relu",), ("pool", 3, 2),
)
"""The features Sequential: ('conv', out, kernel, stride, pad), ('relu',), ('pool', kernel, stride)."""
POOLED = 6
HIDDEN = 4096
DROPOUT = 0.5


def build(g: Graph, num_classes: int) -> None:
    for i, layer in enumerate(FEATURES):
        if layer[0] == "conv":
            _, out, kernel, stride, pad = layer
            g.conv(f"features.{i}", out, kernel, stride=stride, pad=pad, bias=True)
        elif layer[0] == "relu":
            g.act(f"features.{i}", "relu", inplace=True)
        else:
            g.max_pool(f"features.{i}", layer[1], layer[2])
    g.adaptive_avg_pool("avgpool", POOLED)
    g.flatten("flatten")
    g.dropout("classifier.0", DROPOUT)
    g.linear("classifier.1", HIDDEN)
    g.act("classifier.2", "relu", inplace=True)
    g.dropout("classifier.3", DROPOUT)
    g.linear("classifier.4", HIDDEN)
    g.act("classifier.5", "relu", inplace=True)
    g.linear("classifier.6", num_classes)

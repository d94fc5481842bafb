"""The issue's multilayer perceptron: 512 input features -> Linear(2048) + ReLU -> Linear(512) + ReLU ->
Linear(1). Every op is a GEMM or a pointwise op, which makes it the plainest test of the GEMM roofline
and of per-op overhead at small batch. `input_size` sets the number of input features."""

from __future__ import annotations

from roofline.workload.zoo._graph import Graph

IN_FEATURES = 512
HIDDEN = (2048, 512)
OUTPUTS = 1


def build(g: Graph, num_classes: int) -> None:
    for i, width in enumerate(HIDDEN, start=1):
        g.linear(f"fc{i}", width)
        g.act(f"relu{i}", "relu", inplace=True)
    g.linear(f"fc{len(HIDDEN) + 1}", num_classes)

"""The zoo's MLP (see roofline.workload.zoo.mlp): (Linear + ReLU) per hidden width, then Linear."""

from __future__ import annotations

from torch import Tensor, nn

from roofline.workload.zoo.mlp import HIDDEN, IN_FEATURES, OUTPUTS


class MLP(nn.Module):
    def __init__(self, input_size: int = IN_FEATURES, num_classes: int = OUTPUTS) -> None:
        super().__init__()
        features = input_size
        for i, width in enumerate(HIDDEN, start=1):
            self.add_module(f"fc{i}", nn.Linear(features, width))
            self.add_module(f"relu{i}", nn.ReLU(inplace=True))
            features = width
        self.add_module(f"fc{len(HIDDEN) + 1}", nn.Linear(features, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.children():
            x = layer(x)
        return x

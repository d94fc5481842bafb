"""AlexNet as torchvision.models.alexnet builds it, with the same parameter names."""

from __future__ import annotations

from torch import Tensor, nn

from roofline.workload.zoo.alexnet import DROPOUT, FEATURES, HIDDEN, POOLED


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for layer in FEATURES:
            if layer[0] == "conv":
                _, out, kernel, stride, pad = layer
                layers.append(nn.Conv2d(channels, out, kernel, stride, pad))
                channels = out
            elif layer[0] == "relu":
                layers.append(nn.ReLU(inplace=True))
            else:
                layers.append(nn.MaxPool2d(layer[1], layer[2]))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(POOLED)
        self.flatten = nn.Flatten(1)
        self.classifier = nn.Sequential(
            nn.Dropout(DROPOUT), nn.Linear(channels * POOLED * POOLED, HIDDEN), nn.ReLU(inplace=True),
            nn.Dropout(DROPOUT), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(inplace=True),
            nn.Linear(HIDDEN, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.flatten(self.avgpool(self.features(x))))

"""VGG-16 without BatchNorm as torchvision.models.vgg16 builds it, with the same parameter names."""

from __future__ import annotations

from torch import Tensor, nn

from roofline.workload.zoo.vgg import CONFIG_D_LAYERS, DROPOUT, HIDDEN, POOLED


class VGG16(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for kind, value in CONFIG_D_LAYERS:
            if kind == "conv":
                layers.append(nn.Conv2d(channels, value, 3, padding=1))
                channels = value
            elif kind == "relu":
                layers.append(nn.ReLU(inplace=True))
            else:
                layers.append(nn.MaxPool2d(value, value))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(POOLED)
        self.flatten = nn.Flatten(1)
        self.classifier = nn.Sequential(
            nn.Linear(channels * POOLED * POOLED, HIDDEN), nn.ReLU(True), nn.Dropout(DROPOUT),
            nn.Linear(HIDDEN, HIDDEN), nn.ReLU(True), nn.Dropout(DROPOUT),
            nn.Linear(HIDDEN, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.flatten(self.avgpool(self.features(x))))

"""MobileNetV3 as torchvision.models.mobilenet_v3_large/_small builds it, from the shared block tables."""

from __future__ import annotations

from torch import Tensor, nn

from roofline.workload.zoo.mobilenetv3 import BN_EPS, DROPOUT, HS, STEM_CHANNELS, VARIANTS, Block, last_conv_channels

_ACTS = {"relu": nn.ReLU, "hardswish": nn.Hardswish}


class ConvBNAct(nn.Sequential):
    """Conv2d (no bias), BatchNorm2d(eps=1e-3, momentum=0.01), optional in-place activation."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1,
                 act: str | None = HS) -> None:
        layers: list[nn.Module] = [
            nn.Conv2d(c_in, c_out, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(c_out, eps=BN_EPS, momentum=0.01),
        ]
        if act:
            layers.append(_ACTS[act](inplace=True))
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    """Global average -> 1x1 conv -> ReLU -> 1x1 conv -> hardsigmoid, a per-channel gate on the input."""

    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = nn.ReLU()
        self.scale_activation = nn.Hardsigmoid()

    def forward(self, x: Tensor) -> Tensor:
        scale = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return scale * x


class InvertedResidual(nn.Module):
    def __init__(self, b: Block) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        if b.expanded != b.in_ch:
            layers.append(ConvBNAct(b.in_ch, b.expanded, 1, act=b.act))
        layers.append(ConvBNAct(b.expanded, b.expanded, b.kernel, b.stride, groups=b.expanded, act=b.act))
        if b.se:
            layers.append(SqueezeExcitation(b.expanded, b.squeeze))
        layers.append(ConvBNAct(b.expanded, b.out_ch, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.use_res_connect = b.residual

    def forward(self, x: Tensor) -> Tensor:
        out = self.block(x)
        if self.use_res_connect:
            out += x
        return out


class MobileNetV3(nn.Module):
    def __init__(self, variant: str = "large", num_classes: int = 1000) -> None:
        super().__init__()
        blocks, hidden = VARIANTS[variant]
        last = last_conv_channels(blocks)
        self.features = nn.Sequential(
            ConvBNAct(3, STEM_CHANNELS, 3, 2),
            *(InvertedResidual(b) for b in blocks),
            ConvBNAct(blocks[-1].out_ch, last, 1),
        )
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.classifier = nn.Sequential(
            nn.Linear(last, hidden), nn.Hardswish(inplace=True), nn.Dropout(DROPOUT, inplace=True),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.flatten(self.avgpool(self.features(x))))

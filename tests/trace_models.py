"""User-style modules for test_trace, referenced as 'trace_models:ATTR' the way a user writes
`--model mynet:Net` (pytest puts tests/ on sys.path). Imported only by tests that have torch."""

import torch
from torch import nn


class TinyNet(nn.Module):
    """conv(3->8, 3x3, pad 1, no bias) -> BN -> ReLU -> +residual conv(8->8, 1x1) -> global pool -> fc(8->10)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.proj = nn.Conv2d(8, 8, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn(self.conv(x)))
        x = x + self.proj(x)
        return self.fc(torch.flatten(self.pool(x), 1))


class CumsumNet(nn.Module):
    """A Linear followed by two cumulative sums, an op the IR has no formula for."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(torch.cumsum(self.fc(x), dim=1), dim=1)


class HugeNet(nn.Module):
    """A 100000 x 100000 Linear: 10^10 weights, 40 GB in fp32, so tracing it proves nothing is allocated."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(100_000, 100_000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class TokenNet(nn.Module):
    """Embedding -> attention over the tokens -> LayerNorm: needs int64 token ids as input."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.norm = nn.LayerNorm(32)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)                                   # (B, T, 32)
        q = x.view(x.shape[0], x.shape[1], 4, 8).transpose(1, 2)  # (B, 4 heads, T, 8)
        y = nn.functional.scaled_dot_product_attention(q, q, q)
        return self.norm(y.transpose(1, 2).reshape(x.shape))


def tiny_factory() -> nn.Module:
    return TinyNet()


tiny_instance = TinyNet()
NOT_A_MODULE = 3


def not_a_module_factory() -> str:
    return "a string"

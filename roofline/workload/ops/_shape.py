"""Shape helpers shared by the ops: pairs, output sizes, and sanity checks that raise on impossible shapes."""

from __future__ import annotations

from typing import Any

from roofline.workload.ops.base import Num


def pair(value: Any) -> tuple[Any, Any]:
    """An int or an (h, w) pair as an (h, w) tuple: PyTorch accepts both for stride, padding, dilation."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"expected an int or an (h, w) pair, got {value!r}")
        return value[0], value[1]
    return value, value


def window_out(size: int, kernel: int, stride: int, pad: int, dilation: int = 1) -> int:
    """Output length of a sliding window, PyTorch's floor formula."""
    out = (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    if out < 1:
        raise ValueError(f"input {size} with kernel {kernel}, stride {stride}, padding {pad} leaves no output")
    return out


def positive(**dims: Num) -> None:
    """Refuse non-positive integer dimensions; symbolic ones (the batch size B) are positive by definition."""
    for key, value in dims.items():
        if isinstance(value, (int, float)) and value < 1:
            raise ValueError(f"{key}={value} must be >= 1")

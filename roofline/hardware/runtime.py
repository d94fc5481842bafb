"""Framework runtime profiles: what the software stack costs on top of the chip, measured once, as data.

A GPU profile says what the silicon can do; how fast eager PyTorch feeds it is a property of the framework and
the host: the host's time per layer call, and how close each non-GEMM kernel streams to the memory ceiling (a
normalisation or a max pool reaches a fifth to a half of what a copy does). A runtime profile holds those
figures as measured on one real machine, with the machine and the method named, so that a GPU that has never
been calibrated is priced with measured framework costs rather than none. Its kernel rates are stored beside
the copy bandwidth measured in the same run, so they transfer to another GPU as shares of that GPU's memory
ceiling; its host costs transfer as they are (the host, not the GPU, spends them).
"""

from __future__ import annotations

from functools import cache

from roofline.hardware.load import find_other
from roofline.hardware.runtime_schema import RuntimeProfile

EAGER_CUDA = "pytorch-eager-cuda"
"""The runtime a GPU profile without a calibration of its own is priced with."""


@cache
def load_runtime(name_or_path: str) -> RuntimeProfile:
    """The runtime profile by file stem, alias or YAML path, from the profile search path."""
    runtime = find_other(name_or_path, "runtime")
    assert isinstance(runtime, RuntimeProfile)
    return runtime

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
from pathlib import Path

from pydantic import ValidationError

from roofline.errors import ProfileError, UnknownName, did_you_mean
from roofline.hardware.load import _read_yaml, list_profiles
from roofline.hardware.runtime_schema import RuntimeProfile

EAGER_CUDA = "pytorch-eager-cuda"
"""The runtime a GPU profile without a calibration of its own is priced with."""


@cache
def load_runtime(name: str) -> RuntimeProfile:
    """The runtime profile `name` (its file stem or an alias) from the profile search path."""
    given = Path(name)
    if given.suffix in (".yaml", ".yml") and given.is_file():
        path = given
    else:
        key = name.lower()
        entries = [e for e in list_profiles() if e.kind == "runtime"]
        entry = next((e for e in entries if key == e.name or key in e.aliases), None)
        if entry is None:
            raise UnknownName(f"unknown runtime profile '{name}'"
                              f"{did_you_mean(name, [e.name for e in entries])}")
        path = entry.path
    try:
        return RuntimeProfile.model_validate(_read_yaml(path))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ProfileError(f"{path}: field '{'.'.join(map(str, first['loc']))}': {first['msg']}") from None

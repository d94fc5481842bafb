"""roofline: predict how fast a deep-learning model runs on a CPU or GPU, explain why, and check it live.

The package is layered one way only: hardware profiles and workloads are plain data, the cost model is a
pure function of (op, hardware, precision), the advisor composes predictions, and `cli.py` only parses and
renders. The Python API (roofline.advise, predict, analyze, calibrate, validate, hw) lives in
roofline/api.py and is loaded on first use. Nothing here imports torch at module level: commands that only
predict must answer in well under a second on a machine without it.
"""

__version__ = "0.1.0"

import importlib
import types

__all__ = ["RooflineError", "advise", "analyze", "calibrate", "hw", "predict", "validate"]

_LAZY = {"predict": "predict", "analyze": "analyze", "calibrate": "calibrate", "hw": "hardware"}
"""Top-level API names -> roofline.api functions, loaded on first use."""


class _CallablePackage(types.ModuleType):
    """A subpackage whose name is also an API call: `roofline.advise(...)` calls roofline.api.advise while
    `roofline.advise.advisor` stays the module it is. Python keeps one attribute per name on a package, and
    the layout's packages advise/ and validate/ own these two."""

    def __call__(self, *args, **kwargs):
        from roofline import api

        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


for _package in ("advise", "validate"):  # docstring-only __init__ files: importing them costs nothing
    importlib.import_module(f"roofline.{_package}").__class__ = _CallablePackage


def __getattr__(name: str):
    """`roofline.predict(...)` etc. load roofline.api on first use, so `import roofline` stays cheap.
    `roofline.hw("v100")` is `roofline.api.hardware`: the name `roofline.hardware` is the profiles' package,
    whose import (pydantic, YAML) is not free."""
    if name in _LAZY:
        from roofline import api

        return getattr(api, _LAZY[name])
    if name == "RooflineError":
        from roofline.errors import RooflineError

        return RooflineError
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")

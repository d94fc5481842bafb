"""Parse `--op SPEC` strings such as `gemm(m=1024,n=1024,k=1024)` or
`conv2d(n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,groups=1)` into one op of the IR.

The keyword names are the op constructors' own parameter names, and each value's type comes from the
constructor's annotation (a size is a whole number, `causal` a boolean, `fn` a name, `p` a fraction), so the
spec language needs no table of its own: a misspelt key is reported with the parameters the op accepts, and a
value is checked for its type and range before any op is built. Sizes are plain decimal digits: `0x10`,
`2**10`, `1e3` and `1.5` are refused rather than guessed at.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re

from roofline.errors import RooflineError, ShapeError, UnknownName, did_you_mean
from roofline.workload.ops.base import Op, Workload

MAX_SPEC_CHARS = 1000
"""Longest spec read: the longest real one (a convolution with every option) is about 90 characters."""
MAX_DIMENSION = 1 << 31
"""Largest size a spec may give: a dimension beyond two billion elements is a typo, not a workload."""

_SPEC = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*)\)\s*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTEGER = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _op_classes() -> dict[str, type[Op]]:
    import roofline.workload.ops as ops

    table: dict[str, type[Op]] = {}
    for name in dir(ops):
        obj = getattr(ops, name)
        if inspect.isclass(obj) and issubclass(obj, Op) and not inspect.isabstract(obj):
            table[name.lower()] = obj
    return table


def _parameters(cls: type[Op]) -> dict[str, dataclasses.Field]:
    """The constructor's keyword parameters (all but `name`), each with its declared field."""
    return {f.name: f for f in dataclasses.fields(cls) if f.init and f.name != "name"}


def _typed(kind: str, key: str, text: str, field: dataclasses.Field) -> int | float | bool | str:
    """`text` as the field's declared type: bool, str (a name), float (finite), else a size (a whole number, at
    least 1, or at least 0 where the default is 0, such as padding)."""
    declared = str(field.type)
    if declared == "bool":
        if text.lower() not in ("true", "false"):
            raise RooflineError(f"--op {kind}: {key}={text!r}: expected true or false")
        return text.lower() == "true"
    if declared == "str":
        if not _WORD.fullmatch(text):
            raise RooflineError(f"--op {kind}: {key}={text!r}: expected a name such as relu")
        return text
    if declared == "float":
        if not _DECIMAL.fullmatch(text) or not math.isfinite(float(text)):
            raise RooflineError(f"--op {kind}: {key}={text!r}: expected a finite decimal number such as 0.1")
        return float(text)
    if not _INTEGER.fullmatch(text):
        raise RooflineError(f"--op {kind}: {key}={text!r}: expected a whole number in decimal digits, e.g. {key}=1024")
    value = int(text)
    least = 0 if field.default == 0 else 1
    if not least <= value <= MAX_DIMENSION:
        raise RooflineError(f"--op {kind}: {key}={value}: expected {least} to {MAX_DIMENSION}")
    return value


def parse_op(spec: str) -> Op:
    """One op from its spec; errors name the op, the parameter and what it accepts."""
    shown = spec if len(spec) <= 80 else spec[:77] + "..."
    if len(spec) > MAX_SPEC_CHARS:
        raise RooflineError(f"--op '{shown}': longer than {MAX_SPEC_CHARS} characters")
    match = _SPEC.fullmatch(spec)
    if not match:
        raise RooflineError(f"--op '{shown}': expected NAME(key=value,...) with one pair of parentheses, e.g. "
                            "gemm(m=1024,n=1024,k=1024)")
    kind, body = match.group(1).lower(), match.group(2)
    table = _op_classes()
    if kind not in table:
        raise UnknownName(f"unknown op '{kind}'{did_you_mean(kind, list(table))}; known: {', '.join(sorted(table))}")
    cls = table[kind]
    params = _parameters(cls)
    takes = ", ".join(params)
    kwargs: dict[str, object] = {}
    for part in (p.strip() for p in body.split(",")):
        if not part and body.strip():
            raise RooflineError(f"--op '{shown}': an empty item between commas")
        if not part:
            continue
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not _KEY.fullmatch(key):
            raise RooflineError(f"--op '{shown}': '{part}' is not key=value")
        if key not in params:
            raise RooflineError(f"--op {kind}: unknown parameter '{key}'{did_you_mean(key, list(params))}; "
                                f"{kind} takes {takes}")
        if key in kwargs:
            raise RooflineError(f"--op {kind}: '{key}' given twice")
        kwargs[key] = _typed(kind, key, value, params[key])
    missing = [k for k, f in params.items() if k not in kwargs and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise RooflineError(f"--op {kind}: missing {', '.join(missing)}; {kind} takes {takes}")
    try:
        return cls(name=kind, **kwargs)
    except (ValueError, ZeroDivisionError) as exc:
        raise ShapeError(f"--op {kind}: impossible shapes ({exc})") from None


def op_workload(spec: str) -> Workload:
    """A one-op workload: its shapes are literal, so there is no batch to vary."""
    op = parse_op(spec)
    return Workload(name=spec.strip(), batch=1, ops=[op], input_bytes=0)

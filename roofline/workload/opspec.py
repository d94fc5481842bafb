"""Parse `--op SPEC` strings such as `gemm(m=1024,n=1024,k=1024)` or
`conv2d(n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,groups=1)` into one op of the IR.

The keyword names are the op constructors' own parameter names, so the spec language needs no table of
its own: a misspelt key is reported with the parameters the op accepts.
"""

from __future__ import annotations

import inspect
import re

from roofline.errors import RooflineError, ShapeError, UnknownName, did_you_mean
from roofline.workload.ops.base import Op, Workload

_SPEC = re.compile(r"^\s*([A-Za-z_][\w]*)\s*\((.*)\)\s*$")


def _op_classes() -> dict[str, type[Op]]:
    import roofline.workload.ops as ops

    table: dict[str, type[Op]] = {}
    for name in dir(ops):
        obj = getattr(ops, name)
        if inspect.isclass(obj) and issubclass(obj, Op) and not inspect.isabstract(obj):
            table[name.lower()] = obj
    return table


def _value(text: str) -> int | float | str | bool:
    text = text.strip()
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text.strip("'\"")


def parse_op(spec: str) -> Op:
    """One op from its spec; errors name the op and the accepted parameters."""
    match = _SPEC.match(spec)
    if not match:
        raise RooflineError(f"--op '{spec}': expected NAME(key=value,...), e.g. gemm(m=1024,n=1024,k=1024)")
    kind, body = match.group(1).lower(), match.group(2)
    table = _op_classes()
    if kind not in table:
        raise UnknownName(f"unknown op '{kind}'{did_you_mean(kind, list(table))}; known: {', '.join(sorted(table))}")
    cls = table[kind]
    kwargs: dict[str, object] = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        if "=" not in part:
            raise RooflineError(f"--op '{spec}': '{part}' is not key=value")
        key, value = part.split("=", 1)
        kwargs[key.strip()] = _value(value)
    params = [p for p in inspect.signature(cls).parameters if p != "name"]
    unknown = [k for k in kwargs if k not in params]
    if unknown:
        raise RooflineError(f"--op {kind}: unknown parameter(s) {', '.join(unknown)}; {kind} takes "
                            f"{', '.join(params)}")
    try:
        return cls(name=kind, **kwargs)
    except TypeError as exc:
        raise RooflineError(f"--op {kind}: {exc}; it takes {', '.join(params)}") from None
    except (ValueError, ZeroDivisionError) as exc:
        raise ShapeError(f"--op {kind}: impossible shapes ({exc})") from None


def op_workload(spec: str) -> Workload:
    """A one-op workload: its shapes are literal, so there is no batch to vary."""
    op = parse_op(spec)
    return Workload(name=spec.strip(), batch=1, ops=[op], input_bytes=0)

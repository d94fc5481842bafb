"""What a workload costs before any hardware is involved: FLOPs, compulsory bytes, parameters and saved
activations per layer, and, given a device, the batch size at which each layer crosses its ridge point.

Every count in the IR is affine in the batch size B (a term per sample plus the weights, which do not
grow with B), so the ridge crossing has a closed form: intensity(B) = (a B + b) / (c B + d) equals the
ridge R at B* = (R d - b) / (a - R c). `crossing_batch` uses it and `symbolic_totals` (sympy, imported
only when asked for) prints the formulas themselves; the tests check one against the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline.errors import RooflineError
from roofline.model.memory import saved_activation_elements
from roofline.workload.ops.base import PASSES, Op, Workload
from roofline.workload.precision import Precision


@dataclass(frozen=True)
class Affine:
    """f(B) = slope x B + intercept, read off an exact count at B = 1 and B = 2."""

    slope: float
    intercept: float

    def __call__(self, batch: float) -> float:
        return self.slope * batch + self.intercept


def passes_for(train: bool) -> tuple[str, ...]:
    return PASSES if train else ("forward",)


def run_ops(workload: Workload, train: bool) -> list[Op]:
    """The ops a step runs: all of them in training, their eval-mode forms in inference."""
    return workload.ops if train else workload.inference_ops()


def op_flops(op: Op, train: bool) -> float:
    return float(sum(op.flops(p) for p in passes_for(train)))


def op_bytes(op: Op, train: bool, precision: Precision) -> float:
    b = precision.storage_bytes
    return float(sum(op.bytes(p, b, b) for p in passes_for(train)))


def op_macs(op: Op) -> float:
    """Forward multiply-accumulates of the op's matrix products (convolution, linear, matmul, attention)."""
    return float(sum(v.flops for v in op.gemm_views("forward"))) / 2


def ridge_root(flops: Affine, moved: Affine, ridge: float) -> float | None:
    """The B solving flops(B) = ridge x bytes(B), or None when both sides grow alike (no single root)."""
    denominator = flops.slope - ridge * moved.slope
    if denominator == 0:
        return None
    return (ridge * moved.intercept - flops.intercept) / denominator


def crossing_batch(flops: Affine, moved: Affine, ridge: float) -> float | None:
    """Smallest batch at which intensity reaches `ridge`: 1.0 when already there at B = 1, None when the
    intensity's limit a / c (B -> infinity) stays below the ridge, so no batch makes the layer compute-bound."""
    if moved(1) and flops(1) / moved(1) >= ridge:
        return 1.0
    if flops.slope <= ridge * moved.slope:
        return None
    root = ridge_root(flops, moved, ridge)
    return max(1.0, root) if root is not None else None


def layer_rows(one: Workload, two: Workload | None, precision: Precision, train: bool,
               ridge: float | None) -> list[dict[str, Any]]:
    """Per-op counts of `one`; with the same model at another batch (`two`) and a ridge, the crossing batch."""
    act = precision.storage_bytes
    rows = []
    others = run_ops(two, train) if two is not None else []
    for index, op in enumerate(run_ops(one, train)):
        if op.is_free:
            continue
        flops, moved = op_flops(op, train), op_bytes(op, train, precision)
        row: dict[str, Any] = {
            "name": op.name, "op": op.kind, "shapes": op.shapes(), "flops": flops, "macs": op_macs(op),
            "bytes": moved, "arithmetic_intensity": flops / moved if moved else None,
            "params": float(op.params()), "saved_bytes": float(op.saved_elements()) * act if train else 0.0,
            "output_bytes": float(op.output_elements()) * act,
        }
        if ridge is not None and row["arithmetic_intensity"] is not None:
            row["bound"] = "compute" if row["arithmetic_intensity"] >= ridge else "memory"
        if two is not None and ridge is not None:
            other = others[index]
            b1, b2 = float(one.batch), float(two.batch)
            f = _affine_from(b1, flops, b2, op_flops(other, train))
            m = _affine_from(b1, moved, b2, op_bytes(other, train, precision))
            cross = crossing_batch(f, m, ridge) if flops else None
            row["crossing_batch"] = math.ceil(cross) if cross is not None else None
            row["intensity_limit"] = f.slope / m.slope if m.slope else None
        rows.append(row)
    return rows


def _affine_from(b1: float, at1: float, b2: float, at2: float) -> Affine:
    slope = (at2 - at1) / (b2 - b1)
    return Affine(slope, at1 - slope * b1)


def model_crossing(one: Workload, two: Workload, precision: Precision, train: bool,
                   ridge: float) -> tuple[int | None, float | None]:
    """The whole model's crossing batch (None: never) and the intensity it tends to as the batch grows."""
    t1, t2 = totals(one, precision, train), totals(two, precision, train)
    b1, b2 = float(one.batch), float(two.batch)
    flops = _affine_from(b1, t1["flops"], b2, t2["flops"])
    moved = _affine_from(b1, t1["bytes"], b2, t2["bytes"])
    cross = crossing_batch(flops, moved, ridge)
    return (None if cross is None else math.ceil(cross)), (flops.slope / moved.slope if moved.slope else None)


def totals(workload: Workload, precision: Precision, train: bool) -> dict[str, float]:
    act = precision.storage_bytes
    ops = run_ops(workload, train)
    return {
        "flops": sum(op_flops(op, train) for op in ops),
        "macs": sum(op_macs(op) for op in ops),
        "params": float(workload.params()),
        "param_bytes": float(workload.params()) * act,
        "bytes": sum(op_bytes(op, train, precision) for op in ops),
        "activation_bytes": (float(saved_activation_elements(workload)) if train
                             else max((float(op.output_elements()) for op in ops if not op.is_free), default=0.0))
        * act,
        "input_bytes": float(workload.input_bytes),
    }


def symbolic_totals(build: Callable[[Any], Workload], precision: Precision, train: bool,
                    exact: bool = True) -> dict[str, Any]:
    """FLOPs(B), bytes(B) and saved activation bytes(B) as sympy expressions in the batch size B.

    Zoo builders are plain arithmetic and take the symbol itself (`exact`). A traced module needs concrete
    shapes, so its formulas are fitted through the totals at B = 1 and B = 2 and checked at B = 3.
    """
    import sympy

    batch = sympy.Symbol("B", positive=True, integer=True)
    if not exact:
        at = {b: totals(build(b), precision, train) for b in (1, 2, 3)}
        out: dict[str, Any] = {"symbol": batch}
        for key, total_key in (("flops", "flops"), ("bytes", "bytes"), ("saved_bytes", "activation_bytes"),
                               ("params", "params")):
            slope = at[2][total_key] - at[1][total_key]
            if not math.isclose(at[3][total_key], at[2][total_key] + slope, rel_tol=1e-9):
                raise RooflineError(f"{key} of this module is not affine in the batch size; no formula to print")
            out[key] = sympy.nsimplify(slope) * batch + sympy.nsimplify(at[1][total_key] - slope)
        if not train:
            out["saved_bytes"] = sympy.Integer(0)
        return out
    wl = build(batch)
    b = precision.storage_bytes
    passes = passes_for(train)
    ops = run_ops(wl, train)
    flops = sympy.expand(sum(op.flops(p) for op in ops for p in passes))
    moved = sympy.expand(sum(op.bytes(p, b, b) for op in ops for p in passes))
    saved = sympy.expand(saved_activation_elements(wl) * b) if train else sympy.Integer(0)
    return {"symbol": batch, "flops": flops, "bytes": moved, "saved_bytes": saved, "params": sympy.expand(wl.params())}


def symbolic_root(sym: dict[str, Any], ridge: float) -> float | None:
    """sympy's solution of flops(B) = ridge x bytes(B) for the formulas of `symbolic_totals`, any sign."""
    import sympy

    free = sympy.Symbol("b")
    equation = sympy.Eq(sym["flops"].subs(sym["symbol"], free), ridge * sym["bytes"].subs(sym["symbol"], free))
    roots = [float(r) for r in sympy.solve(equation, free) if r.is_real]
    return roots[0] if len(roots) == 1 else None

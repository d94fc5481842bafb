"""One matrix product four ways (the textbook's lesson): why the same 2 n^3 FLOPs take 1000x longer or not.

C = A @ B for n x n float32 matrices, computed
- element by element: n^2 Python calls of np.dot(row, column), each on vectors of length n;
- column by column:   n calls of A @ B[:, j] (matrix-vector: every element of A read once per call);
- as a whole:         one call of A @ B (BLAS GEMM: blocks for every cache level, all cores);
- in blocks:          (n/b)^3 calls of a b x b block product (+ an accumulate), b chosen so three blocks fit
                      in one core's share of a cache level.
Each strategy's model time is (numpy/Python calls x the profile's per-op dispatch cost) + its FLOPs at the
rate that strategy can reach: a dot product or matrix-vector product does 2 FLOPs per 4-byte element it reads,
so it is bound by the bandwidth of the level its operands live in; whole and blocked products run at the
profile's GEMM rate for their size (the cost model's fit of the measured curve after calibration, else the
peak).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline.measure.timing import Measurement, Timer
from roofline.model.ceilings import Ceilings, Level

ELEMENT_BYTES = 4
"""float32."""
BLOCK_OPERANDS = 3
"""Blocks of A, B and C live in the cache together while one block product runs."""


@dataclass(frozen=True)
class Prediction:
    calls: int
    flops: float
    dispatch_s: float
    """calls x per-call dispatch."""
    compute_s: float
    """FLOPs at the strategy's reachable rate."""
    rate_reason: str

    @property
    def time_s(self) -> float:
        return self.dispatch_s + self.compute_s


@dataclass(frozen=True)
class StrategyResult:
    name: str
    prediction: Prediction
    measurement: Measurement

    @property
    def measured_flops_per_s(self) -> float:
        return self.prediction.flops / self.measurement.median

    @property
    def predicted_flops_per_s(self) -> float:
        return self.prediction.flops / self.prediction.time_s

    def why(self) -> str:
        """The dominant term of the model, and what the measurement says about per-call cost."""
        p = self.prediction
        share = p.dispatch_s / p.time_s
        per_call = self.measurement.median / p.calls
        if share > 0.5:
            return (f"{p.calls} calls: per-call overhead is {share:.0%} of the model "
                    f"({p.dispatch_s / p.calls * 1e6:.2f} us/call assumed, {per_call * 1e6:.2f} us/call measured)")
        return f"{p.rate_reason}; calls cost {share:.0%} of the model"


def level_for(levels: tuple[Level, ...], working_set_bytes: float) -> Level:
    """The fastest memory level whose capacity holds the working set."""
    return next((lv for lv in levels if working_set_bytes <= lv.capacity_bytes), levels[-1])


def gemm_rate(c: Ceilings, n: int) -> tuple[float, str]:
    """FLOP/s for an n x n x n product as the cost model prices a GEMM: its Hockney fit of the measured curve
    (`roofline.model.ceilings.GemmFit`: r_inf x n / (n + n_half)), else the profile's peak. The call's fixed
    cost is the strategy's per-call dispatch, counted apart."""
    if c.gemm_fit is None:
        return c.matrix_flops_per_s or c.vector_flops_per_s, "GEMM at the profile's peak (not calibrated)"
    fit = c.gemm_fit
    return fit.rate(n), (f"the cost model's fit of the measured GEMM curve at n={n}: "
                         f"{fit.r_inf_flops_per_s / 1e9:.3g} GFLOP/s x n / (n + {fit.n_half:.0f})")


def streaming_rate(c: Ceilings, operand_bytes: float) -> tuple[float, str]:
    """A dot / matrix-vector product reads one 4-byte element per 2 FLOPs: bandwidth x 0.5 FLOP/byte,
    never above the peak."""
    level = level_for(c.levels, operand_bytes)
    peak = c.matrix_flops_per_s or c.vector_flops_per_s
    rate = min(peak, level.bandwidth_bytes_per_s * 2 / ELEMENT_BYTES)
    return rate, f"2 FLOPs per 4 bytes read from {level.name} ({level.bandwidth_bytes_per_s / 1e9:.0f} GB/s)"


def block_size(c: Ceilings, n: int, cores: int) -> tuple[int, str]:
    """Largest power of two b <= n/2 such that three b x b blocks fit in one core's share of a cache level."""
    for level in reversed(c.levels[:-1]):
        share = level.capacity_bytes / cores
        b = 2 ** int(math.log2(math.sqrt(share / (BLOCK_OPERANDS * ELEMENT_BYTES))))
        if b <= n // 2:
            return b, f"3 blocks of {b}x{b} fit in one core's {level.name} share ({share / 1024:.0f} KiB)"
    return max(1, n // 2), "no cache level small enough: half the matrix"


def predict(c: Ceilings, n: int, cores: int) -> dict[str, Prediction]:
    flops = 2.0 * n**3
    d = c.dispatch_s
    matrix_bytes = n * n * ELEMENT_BYTES
    dot_rate, dot_why = streaming_rate(c, 2 * matrix_bytes)
    mv_rate, mv_why = streaming_rate(c, matrix_bytes)
    whole_rate, whole_why = gemm_rate(c, n)
    b, b_why = block_size(c, n, cores)
    blocks = math.ceil(n / b) ** 3
    block_rate, block_rate_why = gemm_rate(c, b)
    return {
        "element": Prediction(n * n, flops, n * n * d, flops / dot_rate, dot_why),
        "column": Prediction(n, flops, n * d, flops / mv_rate, mv_why),
        "whole": Prediction(1, flops, d, flops / whole_rate, whole_why),
        "blocked": Prediction(2 * blocks, flops, 2 * blocks * d, flops / block_rate, f"{b_why}; {block_rate_why}"),
    }


def _strategies(n: int, b: int):
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    bm = rng.random((n, n), dtype=np.float32)
    out = np.zeros((n, n), dtype=np.float32)

    def element():
        for i in range(n):
            row = a[i]
            for j in range(n):
                out[i, j] = np.dot(row, bm[:, j])

    def column():
        for j in range(n):
            out[:, j] = a @ bm[:, j]

    def whole():
        np.matmul(a, bm, out=out)

    def blocked():
        out[:] = 0
        for i in range(0, n, b):
            for j in range(0, n, b):
                for k in range(0, n, b):
                    out[i:i + b, j:j + b] += a[i:i + b, k:k + b] @ bm[k:k + b, j:j + b]

    def check(strategy) -> None:
        strategy()
        if not np.allclose(out, a @ bm, rtol=1e-3):
            raise AssertionError(f"{strategy.__name__} computed a wrong product")

    return {"element": element, "column": column, "whole": whole, "blocked": blocked}, check


def run(c: Ceilings, n: int, cores: int, budget_s: float = 1.0) -> list[StrategyResult]:
    """Measure the four strategies (each checked against A @ B first) beside their predictions."""
    predictions = predict(c, n, cores)
    b, _ = block_size(c, n, cores)
    strategies, check = _strategies(n, b)
    results = []
    for name, fn in strategies.items():
        check(fn)
        m = Timer(fn, label=f"{name} n={n}", work=2.0 * n**3, work_unit="FLOP", budget_s=budget_s,
                  min_repeats=3).measure()
        results.append(StrategyResult(name, predictions[name], m))
    return results

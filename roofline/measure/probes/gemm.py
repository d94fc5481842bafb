"""GEMM throughput per dtype over a size sweep: the efficiency-versus-size curve the cost model interpolates.

A square n x n x n product is 2 n^3 FLOPs (n^3 multiply-adds, a MAC = 2 FLOPs). Operands rotate through
copies spanning twice the last-level cache, so a call reads them from DRAM as a layer of a network does.
A dtype whose single call already exceeds `max_call_s` stops its sweep there (fp16 on a CPU without native
fp16 arithmetic runs a scalar fallback at a few GFLOP/s; timing it at n=1024 would take minutes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from roofline.measure.timing import Measurement, Rotation, Timer, interleaved

CPU_TORCH_DTYPES = ("fp64", "fp32", "bf16", "fp16")
CUDA_TORCH_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
NUMPY_DTYPES = ("fp64", "fp32")
QUICK_SIZES = (64, 256, 1024)
FULL_SIZES = (32, 64, 128, 256, 512, 768, 1024, 1536)
CUDA_SIZES = (256, 1024, 2048, 4096, 8192)


def gemm_flops(m: int, n: int, k: int) -> float:
    """FLOPs of an (m x k) @ (k x n) product: m n k multiply-adds, 2 FLOPs each."""
    return 2.0 * m * n * k


@dataclass(frozen=True)
class GemmPoint:
    library: str
    dtype: str
    n: int
    measurement: Measurement

    @property
    def flops_per_s(self) -> float:
        return self.measurement.rate


def _torch_dtype(name: str):
    import torch

    return {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
            "fp16": torch.float16, "fp8": getattr(torch, "float8_e4m3fn", None)}[name]


def cuda_dtypes() -> list[str]:
    """Dtypes this GPU multiplies natively: tf32 and bf16 from compute capability 8.0, fp8 from 8.9."""
    import torch

    major, minor = torch.cuda.get_device_capability()
    out = ["fp64", "fp32", "fp16"]
    if major >= 8:
        out += ["tf32", "bf16"]
    if (major, minor) >= (8, 9) and _torch_dtype("fp8") is not None and hasattr(torch, "_scaled_mm"):
        out.append("fp8")
    return out


def _torch_call(dtype: str, n: int, device: str, llc_bytes: int | None) -> Callable[[], object]:
    import torch

    tdt = _torch_dtype(dtype)
    if dtype == "fp8":
        scale = torch.ones((), device=device)

        def make_fp8():
            a = torch.randn(n, n, device=device).to(tdt)
            b = torch.randn(n, n, device=device).to(tdt).t()
            return a, b

        rot = Rotation(make_fp8, 2 * n * n, llc_bytes)
        return lambda: torch._scaled_mm(*rot.next(), scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
    out = torch.empty(n, n, dtype=tdt, device=device)
    rot = Rotation(lambda: (torch.randn(n, n, device=device).to(tdt), torch.randn(n, n, device=device).to(tdt)),
                   2 * n * n * out.element_size(), llc_bytes)
    return lambda: torch.mm(*rot.next(), out=out)


def _numpy_call(dtype: str, n: int, llc_bytes: int | None) -> Callable[[], object]:
    import numpy as np

    ndt = {"fp64": np.float64, "fp32": np.float32}[dtype]
    rng = np.random.default_rng(0)
    out = np.empty((n, n), dtype=ndt)
    rot = Rotation(lambda: (rng.random((n, n)).astype(ndt), rng.random((n, n)).astype(ndt)),
                   2 * n * n * out.itemsize, llc_bytes)
    return lambda: np.matmul(*rot.next(), out=out)


def probe_s(call: Callable[[], object], sync: Callable[[], object] | None = None) -> float:
    """Duration of one call after a first (warm-up) call: is this size affordable at all?"""
    import time

    call()
    if sync:
        sync()
    start = time.perf_counter()
    call()
    if sync:
        sync()
    return time.perf_counter() - start


def sweep(library: str, dtype: str, sizes: Sequence[int], *, device: str = "cpu", llc_bytes: int | None = None,
          budget_s: float = 0.3, max_call_s: float = 0.05) -> list[GemmPoint]:
    """Time n x n GEMMs for each size until one call exceeds max_call_s; returns the points measured, in
    size order. The sizes are timed round-robin (`timing.interleaved`): measured one after another, a slow
    spell of this shared machine landed on one or two sizes and bent the curve (256^3 read 92 GFLOP/s in
    one calibration and 143 in the one before, with 512^3 at 155 in both)."""
    sync = None
    if device == "cuda":
        import torch

        sync = torch.cuda.synchronize
        if dtype == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
        elif dtype == "fp32":
            torch.backends.cuda.matmul.allow_tf32 = False
    timers: dict[int, Timer] = {}
    last_rate = 0.0
    for n in sizes:
        if last_rate and gemm_flops(n, n, n) / last_rate > max_call_s:
            break  # the last size's rate already says a call would be too long (CPU fp16: seconds)
        call = _numpy_call(dtype, n, llc_bytes) if library == "numpy" else _torch_call(dtype, n, device, llc_bytes)
        one_call_s = probe_s(call, sync)
        if one_call_s > max_call_s and timers:
            break
        last_rate = gemm_flops(n, n, n) / one_call_s if one_call_s > 0 else 0.0
        timers[n] = Timer(call, label=f"{library} {dtype} gemm n={n}", work=gemm_flops(n, n, n), work_unit="FLOP",
                          budget_s=budget_s, sync=sync)
    return [GemmPoint(library, dtype, n, m) for n, m in interleaved(timers).items()]


SKINNY_SMALL = (1, 4, 16, 64, 256)
SKINNY_OTHER = (256, 1024, 4096)
"""The skinny-GEMM surface: (s x o) @ (o x o) for a small dimension s (a batch of 1 to 256 rows, or a
sequence of tokens, through a linear layer) and o from an L2-resident to a DRAM-resident (67 MB fp32)
weight. The square curve's largest operands fit in the last-level cache, and a product whose weight streams
from DRAM runs below the rate of a square product of the same reuse: GPT-2's (128 x 768) @ (768 x 50257)
output layer, 61 GFLOP/s where the square curve says 119."""


@dataclass(frozen=True)
class SkinnyPoint:
    small: int
    other: int
    measurement: Measurement

    @property
    def flops_per_s(self) -> float:
        return self.measurement.rate


def skinny_sweep(device: str = "cpu", budget_s: float = 0.2, smalls: Sequence[int] = SKINNY_SMALL,
                 others: Sequence[int] = SKINNY_OTHER) -> list[SkinnyPoint]:
    """Time fp32 products whose smallest dimension is a few rows. The square curve does not predict them: a
    library's micro-kernel computes a block of rows at once and a product of 1 to 16 rows leaves most of it
    idle, while the weight is still packed and streamed whole (measured here: 8 to 40 GFLOP/s at 4 rows,
    against 100+ for a square product of the same reuse). No rotation: a layer's weight stays where its
    size puts it between steps, which the o sweep spans."""
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else None
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    timers = {}
    for other in others:
        weight = torch.randn(other, other, device=device)
        for small in smalls:
            rows = torch.randn(small, other, device=device)
            out = torch.empty(small, other, device=device)
            timers[small, other] = Timer(lambda rows=rows, out=out, weight=weight: torch.mm(rows, weight, out=out),
                                         label=f"torch fp32 gemm {small}x{other}x{other}",
                                         work=gemm_flops(small, other, other), work_unit="FLOP", budget_s=budget_s,
                                         sync=sync)
    # round-robin, so that a slow spell of this shared machine does not land on one point of the surface
    return [SkinnyPoint(small, other, m) for (small, other), m in interleaved(timers).items()]


ROW_ELEMENTS = (256, 512, 1024, 4096)
"""Row lengths (fp32 elements) of the weight a one-row product streams in `row_sweep`."""
ROW_SWEEP_ELEMENTS = SKINNY_OTHER[-1] ** 2
"""Every row-sweep weight holds as many elements as the skinny surface's largest (4096^2 fp32, 64 MiB), so the
two agree where their rows do and the weight comes from DRAM as a decode step's does."""
WEIGHT_LAYOUTS = ("out_in", "in_out")
"""How a layer stores its weight: nn.Linear's (out, in), read by F.linear one row of `in` elements per output;
or (in, out), a product x @ W as GPT-2's Conv1D runs it, one row of `out` elements per input element."""


@dataclass(frozen=True)
class RowPoint:
    layout: str
    row_elements: int
    measurement: Measurement

    @property
    def bytes_per_s(self) -> float:
        return self.measurement.rate


def row_sweep(device: str = "cpu", budget_s: float = 0.2) -> list[RowPoint]:
    """A one-row product streaming a 64 MiB fp32 weight, in both layouts, at each row length: the weight's bytes
    per second. The skinny surface times square weights, whose rows are as long as the product is wide, but a
    decode step's weights are not square: an LM head of 50257 x 768 is 50257 rows of 768. A GEMV's kernel pays
    a cost per row beside the bytes (measured on this project's 2-core VM from DRAM: 10.7 GB/s with rows of
    512 against 20.3 with rows of 4096, F.linear; 11.9 against 24.0, x @ W), so the row length is measured
    rather than assumed."""
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else None
    product = {"out_in": torch.nn.functional.linear, "in_out": torch.mm}
    timers = {}
    for layout in WEIGHT_LAYOUTS:
        for row in ROW_ELEMENTS:
            other = ROW_SWEEP_ELEMENTS // row
            # (out, in) weight: one output per row of `row` inputs; (in, out): one input element per row
            x = torch.randn(1, row if layout == "out_in" else other, device=device)
            w = torch.randn(other, row, device=device)
            timers[layout, row] = Timer(lambda f=product[layout], x=x, w=w: f(x, w),
                                        label=f"torch fp32 gemv {layout} rows of {row}",
                                        work=4.0 * ROW_SWEEP_ELEMENTS, work_unit="B", budget_s=budget_s, sync=sync)
    return [RowPoint(layout, row, m) for (layout, row), m in interleaved(timers).items()]


OUTER_INNER = (1, 8, 64)
OUTER_SIDE = (512, 2048)
"""The short-inner-dimension surface: (o x k) @ (k x o) for k from 1 to 64 (a linear layer's weight gradient
dW = dY^T X at batch k) and o from a 1 MiB to a 16 MiB output."""


def outer_sweep(device: str = "cpu", budget_s: float = 0.2, llc_bytes: int | None = None,
                inners: Sequence[int] = OUTER_INNER, sides: Sequence[int] = OUTER_SIDE) -> list[SkinnyPoint]:
    """Time fp32 products whose inner dimension is a few elements. Neither the square curve nor the few-rows
    surface describes them: each output element is the sum of k products, so the product is bound by writing
    an o x o output it has not touched since the last step (each call writes into the next of output copies
    spanning `timing.FLUSH_FACTOR` x the last-level cache). Measured here: 2048x8 @ 8x512 takes 205 us
    with its output in cache and 750 us with it in DRAM (22 GFLOP/s), where (8 x 1024) @ (1024 x 1024),
    the few-rows surface's nearest point, runs at 50-110 GFLOP/s."""
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else None
    timers = {}
    for side in sides:
        for inner in inners:
            a = torch.randn(side, inner, device=device)
            b = torch.randn(inner, side, device=device)
            outs = Rotation(lambda s=side: torch.zeros(s, s, device=device), 4 * side * side, llc_bytes)
            timers[inner, side] = Timer(lambda a=a, b=b, outs=outs: torch.mm(a, b, out=outs.next()),
                                        label=f"torch fp32 gemm {side}x{inner}x{side}",
                                        work=gemm_flops(side, side, inner), work_unit="FLOP", budget_s=budget_s,
                                        sync=sync)
    return [SkinnyPoint(inner, side, m) for (inner, side), m in interleaved(timers).items()]

"""A GEMM's time on the device: the tensor-core or vector rate its operands' alignment allows, tile and wave
quantization with split-K (`gemm_compute_s`), the L2 panel re-reads, and the measured few-rows and
outer-product surfaces (`skinny_gemm_rate`). See `costmodel` for how an op's passes combine them."""

from __future__ import annotations

import functools
import math

from roofline.model.ceilings import Ceilings, row_rate, skinny_rate
from roofline.model.context import CostContext
from roofline.model.notes import Note
from roofline.workload.ops.base import GemmView, Op
from roofline.workload.ops.conv import Conv2d
from roofline.workload.ops.gemm import Gemm, Linear

SURFACE_ELEMENT_BYTES = 4
"""The skinny and outer-product surfaces are timed in fp32."""

LOAD_ALIGNMENT_BYTES = 16
"""Widest vector load a tensor-core GEMM kernel issues (128-bit LDG/LDS); alignment_elements x dtype
bytes equals this on every NVIDIA profile shipped. Fewer aligned bytes -> proportionally more loads."""
SPLIT_K_MIN_DEPTH = 64
"""Split-K halves a product's depth k while the tiles leave units idle, but keeps each slice at least this deep.
The model's own bound, not a measured or published figure: the reduction of the partial sums is not priced,
so this floor is what stops split-K from cutting a shallow product into slices too thin to pay for it."""
TILE_DEPTH_OVERHEAD = 128
"""Extra depth, in elements of k, every output tile of a GPU GEMM pays beyond its own k: the main loop starts
only once the first k-blocks of its A and B panels have arrived (the pipeline's fill) and the tile's output is
stored after it (the epilogue), neither hidden under the tile's own products. So a product's rate falls with its
depth, which a square benchmark never shows: XLA's measured H100 table (openxla/xla
xla/service/gpu/model/matmul_interpolator_data.h, "sm_90": 375 (b, m, n, k) shapes, m, n, k in 256..4096, the
median CUPTI kernel time of five runs) has b x m x n >= 2 x 4096 x 2048 products at k = 256, 512, 1024, 2048 run
at 0.52, 0.71, 0.88, 0.94 of their k = 4096 rate in bf16 and 0.66, 0.87, 0.93, 0.97 in TF32. Against this cost
model (tile and wave quantization, the profile's sustained rate) the products over 8 GFLOP there are predicted
31% too fast at k = 256 and 3% too slow at 4096 in bf16 (TF32: 31% and 17% too fast); 128 elements of depth per
tile leaves a median of -16, -4, -6, -5, +4% across k = 256..4096 in bf16 and -6, -13, -12, -16, -16% in TF32:
the depth trend removed, the level left to each dtype's measured rate."""
SUSTAINED_REFERENCE_DEPTH = 8192
"""Depth of the square products the profiles' sustained GEMM rates were measured on (8192^3: zzc0721's
torch-performance-test-data runs and the project's H100 bf16 and fp16 figures; the runtime profile's TF32 share was
taken at 4096^3), which paid `TILE_DEPTH_OVERHEAD` once per tile too: the units' own rate is the sustained one
times (reference + overhead) / reference."""
GEMV_MAX_ROWS = 8
"""The most rows a product on the CUDA cores runs as a matrix-vector kernel (`gemm_compute_s`): llama.cpp's mmvq
kernels take up to MMVQ_MAX_BATCH_SIZE = 8 (ggml/src/ggml-cuda/mmvq.cuh), cuBLAS's gemv one; more rows go to
tiled GEMM kernels."""
MMA_MIN_ROWS = 8
"""The fewest rows a tensor-core tile of a matrix product takes: the n = 8 side of the mma.sync m16n8k16 shape
(PTX ISA, warp-level matrix multiply-accumulate for .f16/.bf16), which a product of few rows puts them on. The
H100's own decode step (benchmarks/results/gpu-decode-kernels-h100.json, step section: Llama-3-8B at batch 1 in
bf16) ran every one-row product on cuBLAS's nvjet_sm90_tst_64x8 kernels, 64 weight columns by 8 rows a tile. A
product of at most `GEMV_MAX_ROWS` rows on the tensor cores is priced on tiles of these rows, not padded to
`ceilings.GEMM_TILES`' 64: where a board's 16-bit tensor rate is low against its DRAM (a GeForce Ampere board
accumulating in fp32 at half rate) 64-row padding priced a one-row decode product compute-bound. Set in the
thirty-fourth session after the thirty-fifth serving set's RTX 3090 row had been seen (benchmarks/LOG.md)."""
SIMT_NARROW_TILES = ((32, 128),)
"""An output tile (rows x columns) 32 rows tall, which a product of fewer rows than `ceilings.GEMM_TILES`' 64 may
take on the CUDA cores: cuBLAS's algorithm enum names such SGEMM kernels in every generation since Maxwell
(cublas_api.h of CUDA 9, cublasGemmAlgo_t: CUBLAS_GEMM_ALGO2 "maxwell_sgemm_128x32_nt", ALGO20 and ALGO23
"sliced 128x32" without and with split-K; cuBLAS names PyTorch's x @ W^T a product of W's columns by x's rows,
so its 128x32 is 32 of x's rows by 128 columns), and Ampere's ampere_sgemm_128x32 appears in public profiler
traces of fp32 linear layers. The header's 32x32 and 64x32 kernels arrived with later releases and are left out.
Without it a product of 9 to 32 rows was priced as a 64-row tile: AlexNet's first classifier layer at batch 16
on an A100 at 4x its arithmetic and 5x the 8-row product's time, so fp32 throughput fell from batch 8 to 16."""
QUANTIZATION_NOTE_RATIO = 1.25
"""A GEMM gets a note on its tile and wave quantization when that costs more than this times its ideal time
(display only: it changes no time)."""


def _aligned_fraction(dims: list[int], align: int) -> float:
    """Largest power-of-two divisor (<= align) common to all dims, as a fraction of align."""
    a = align
    while a > 1 and any(int(d) % a for d in dims):
        a //= 2
    return a / align


def _alignment_dims(op: Op, view: GemmView) -> list[int]:
    """The dimensions whose alignment decides load width: channels for convolutions, n and k for GEMMs."""
    if isinstance(op, Conv2d):
        return [op.c // op.groups, op.k // op.groups]
    return [view.n, view.k]


def gemm_rate(op: Op, view: GemmView, ctx: CostContext) -> tuple[float, str, list[Note]]:
    """Peak FLOP/s available to this GEMM view: tensor path scaled by alignment, else vector path."""
    c = ctx.ceilings
    notes: list[Note] = []
    if c.matrix_flops_per_s is None:
        return c.vector_flops_per_s, f"{'CUDA cores' if c.is_gpu else 'SIMD'} {c.compute_dtype}", notes
    rate = c.matrix_flops_per_s
    path = f"{'tensor cores' if c.is_gpu else 'matrix units'} {c.compute_dtype}"
    if c.alignment_elements:
        dims = _alignment_dims(op, view)
        fraction = _aligned_fraction(dims, c.alignment_elements)
        if fraction < 1.0:
            scaled = rate * fraction
            element_bytes = LOAD_ALIGNMENT_BYTES // c.alignment_elements
            if scaled < c.vector_flops_per_s:
                notes.append(Note("alignment", f"dims {dims} not multiples of {c.alignment_elements}: tensor cores "
                                  f"unusable, {c.vector_flops_per_s / 1e12:.1f} TFLOP/s CUDA-core path"))
                return c.vector_flops_per_s, f"CUDA cores {c.compute_dtype}", notes
            notes.append(Note("alignment", f"dims {dims} not multiples of {c.alignment_elements} "
                              f"({c.alignment_elements * element_bytes} B): loads "
                              f"{int(fraction * LOAD_ALIGNMENT_BYTES)} B wide, tensor rate x{fraction:g}"))
            rate = scaled
    return rate, path, notes


def _panel_bytes(view: GemmView, tile: tuple[int, int], element_bytes: float) -> float:
    """L2 -> SM traffic of a tiled GEMM: each output tile streams its A panel (tm x k) and B panel (k x tn),
    so A is read ceil(n / tn) times and B ceil(m / tm) times."""
    m, n, k = float(view.m), float(view.n), float(view.k)
    return (m * k * math.ceil(n / tile[1]) + k * n * math.ceil(m / tile[0])) * float(view.count) * element_bytes


def _largest_power_of_two(limit: int) -> int:
    """The largest power of two not above `limit`, 1 when `limit` < 2: split-K doubles the slices while the
    tiles still fit the units once more and each slice stays `SPLIT_K_MIN_DEPTH` deep."""
    return 1 << (limit.bit_length() - 1) if limit >= 2 else 1


def tile_depth_overhead(op: Op, ctx: CostContext) -> int:
    """`TILE_DEPTH_OVERHEAD` for a matrix product on a GPU, on the tensor cores (what the table it comes from
    measured) or the CUDA cores (a SIMT kernel's tiles fill the same pipeline and store the same epilogue; no
    table of its own was found, so the measured depth is taken); 0 for a convolution (cuDNN's implicit-GEMM
    kernels, which the table does not time, and whose published rows the square rate already matches) and on a
    CPU."""
    if not ctx.ceilings.is_gpu or isinstance(op, Conv2d):
        return 0
    return TILE_DEPTH_OVERHEAD


def kernel_fixed_s(op: Op, view: GemmView, ctx: CostContext) -> float:
    """Time a GPU matrix-product kernel takes beyond its tiles' work, paid once per product (each GEMM view is
    a kernel of its own): the grid's launch and the first tiles' start, which no tile's products hide, so it
    adds to the tiles' time rather than only flooring it. Its size is the profile's kernel launch time (5 us on
    the NVIDIA profiles, or the calibrated figure): XLA's measured H100 table (openxla/xla
    xla/service/gpu/model/matmul_interpolator_data.h, "sm_90", read at ROCm/xla@d02afb4f) times a 256^3 bf16
    product, whose work is 0.05 us, at 5.0 us, and products of 1 to 8 GFLOP at about 5 us more than their tiles'
    time: priced with the launch only as a floor, those 150 products were 42% too fast at the median (all 375
    shapes 22% median |error|), with it added 5% (9%); TF32 54% -> 31% too fast; on the same table's B200
    (sm_100_B200, checked after the H100 choice) bf16 38% -> 12%, TF32 53% -> 21%.

    Scope: tiled products that fill the smallest tile in both output dimensions, as every product of the table
    does (m, n >= 256): cuBLAS-style `Gemm` and `Linear`, and cuDNN's implicit-GEMM convolutions (`Conv2d`, each
    pass its own kernel). For the convolutions the evidence is the project's H100 run
    (benchmarks/results/gpu-live-h100-half.json): ResNet-50 training at batch 12 in fp16 over NCHW spends 2.97 ms
    of device time in its 159 convolution passes, transposes included, which the launch as a floor priced at
    1.84 ms; with it added, 2.43 ms. A product of fewer rows (a decode step's GEMV) runs a kernel that streams its
    weight, whose fixed time the launch floor already prices (the graph-captured decode rows of
    benchmarks/published/llm-serving.yaml: adding it to the tile model's time there made gpt-fast's batch-1
    decode on 8 GPUs 19% too slow). That product's own fixed time was later measured on an H100, with no host in
    the time: `Ceilings.streaming_fixed_s` (`streams_weight`), which `costmodel.op_cost` adds to its memory time
    rather than to its arithmetic. Fused attention kernels (several products in one kernel) keep the floor only."""
    c = ctx.ceilings
    if (not c.is_gpu or not isinstance(op, (Gemm, Linear, Conv2d))
            or min(int(view.m), int(view.n)) < min(min(tile) for tile in c.tiles)):
        return 0.0
    return c.launch_s


def streams_weight(op: Op, c: Ceilings, cold_weight: bool) -> bool:
    """A GPU matrix product whose weight comes from DRAM (`cold_weight`: a decode step reads every weight once),
    which cuBLAS streams with kernels whose memory time, measured over cold weights inside CUDA graphs on an H100
    and an H200 (benchmarks/gpu_decode_kernels.py, skinny section: Llama-3-8B's product shapes, 8 MB to 1.05 GB),
    is a fixed time plus the weight at a share of the sustained DRAM rate (`Ceilings.streaming_fixed_s`,
    `Ceilings.streaming_share`: the runtime profile's `streaming_products`, fitted on 1 to 32 rows), which
    `costmodel.op_cost` takes as the product's memory time. The same line held at 64 and 128 rows (a tiled
    product still bound by its weight), which were not fitted. The sustained rate alone with the launch as a floor
    priced the fitted points 16% too fast at the median on both machines (the H100's k and v projections of
    8.4 MB at 5.0 us against 8.1 measured). Weight-only int8/int4 products run their libraries' own kernels, not
    cuBLAS: `llm_step.phase_cost` prices them with the library kernel's measured fixed time and the DRAM rate
    (`llm_step.WEIGHT_ONLY_FIXED_S`)."""
    return cold_weight and c.is_gpu and isinstance(op, (Gemm, Linear))


def gemm_compute_s(view: GemmView, rate: float, ctx: CostContext, depth_overhead: int = 0,
                   simt: bool = False, library_product: bool = False) -> tuple[float, tuple[int, int], int, float]:
    """Time of the GEMM under tile and wave quantization; returns (seconds, tile, split-K factor, L2 bytes).

    The tile is the one that minimises max(compute, L2 panel traffic): small tiles waste fewer wave slots
    but re-read the operands more often, the trade-off a GEMM library's heuristic makes. CPUs have no
    wave quantization across cores beyond partial blocks, and their panel traffic is not modelled (0).
    `depth_overhead` (`tile_depth_overhead`) is added to every tile's depth.

    `simt`: the product runs on the CUDA cores. One of at most `GEMV_MAX_ROWS` rows (a decode step's) then runs
    as a matrix-vector kernel that computes only its rows: each thread block takes a slice of the weight's
    columns and every row, so nothing pads the rows to a tile, where a tensor core's mma instruction takes
    operands of 8 or 16 rows. Priced with 64-row tiles, a Llama-2-7B decode step on a P100 in fp16 came out at
    7x its weights' read time. On the tensor cores such a product pads its rows to `MMA_MIN_ROWS`, not to a
    64-row tile when it is a library's matrix product (`library_product`: cuBLAS's `Gemm` and `Linear`);
    attention kernels tile their queries in blocks of their own. One of fewer rows than the smallest tile may
    also take `SIMT_NARROW_TILES`.
    """
    c = ctx.ceilings
    m, n, k, count = int(view.m), int(view.n), int(view.k), int(view.count)
    if min(m, n, k, count) <= 0:
        return 0.0, (0, 0), 1, 0.0
    l2_bytes_per_s = c.l2.bandwidth_bytes_per_s if c.is_gpu and c.l2 is not None else None
    tiles = c.tiles
    if c.is_gpu and m <= GEMV_MAX_ROWS and (simt or library_product):
        tiles = tuple(sorted({(m if simt else MMA_MIN_ROWS, tn) for _, tn in tiles}))
    elif simt and c.is_gpu and m < min(tm for tm, _ in tiles):
        tiles = tiles + SIMT_NARROW_TILES
    return _quantized(m, n, k, count, rate, c.units, c.is_gpu, tiles, l2_bytes_per_s, ctx.activation_bytes,
                      depth_overhead)


@functools.lru_cache(maxsize=8192)
def _quantized(m: int, n: int, k: int, count: int, rate: float, units: int, is_gpu: bool,
               tile_shapes: tuple[tuple[int, int], ...], l2_bytes_per_s: float | None,
               element_bytes: float, depth_overhead: int) -> tuple[float, tuple[int, int], int, float]:
    """`gemm_compute_s` of one product shape at one rate on one device's units, tiles and L2: a pure function,
    remembered because a sweep prices the same product again at another precision of equal rate (fp16 and
    bf16; an fp32 step's convolutions on TF32 tensor cores and the TF32 step's)."""
    per_unit = rate * (SUSTAINED_REFERENCE_DEPTH + depth_overhead) / SUSTAINED_REFERENCE_DEPTH / units
    deepest_split = _largest_power_of_two(k // SPLIT_K_MIN_DEPTH)
    view = GemmView(m, n, k, count)
    best = (math.inf, math.inf, (0, 0), 1, 0.0)
    for tm, tn in tile_shapes:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * count
        split = min(_largest_power_of_two(units // tiles), deepest_split)
        waves = math.ceil(tiles * split / units)
        if is_gpu:
            tile_flops = 2 * tm * tn * (math.ceil(k / split) + depth_overhead)
        else:
            tile_flops = 2 * min(tm, m) * min(tn, n) * math.ceil(k / split)
        t = waves * tile_flops / per_unit
        panel = _panel_bytes(view, (tm, tn), element_bytes) if l2_bytes_per_s is not None else 0.0
        limit = max(t, panel / l2_bytes_per_s) if l2_bytes_per_s is not None else t
        if limit < best[0]:
            best = (limit, t, (tm, tn), split, panel)
    return best[1], best[2], best[3], best[4]


def skinny_gemm_rate(view: GemmView, c: Ceilings, cold_weight: bool = False,
                     weight_rows: tuple[str, int] | None = None) -> tuple[float, str] | None:
    """The measured rate for a view whose smallest dimension a measured surface covers (1 to 64), at the
    geometric mean of the other two dimensions, with the note that says which; None otherwise. A short
    inner dimension (a weight gradient at a small batch) writes a large output from little work and has
    its own surface; a few rows or columns (a small batch through a layer) stream the weight: the few-rows
    surface.

    `cold_weight`: the weight comes from DRAM in this step (a decode step reads every weight once). The
    surface's points were timed back to back, so those whose weight fits the last-level cache read it from
    there; such a product is read at least at the first size whose weight did not fit (measured here: a
    1-row product streams a 67 MB weight at 22 GB/s against a 31 GB/s copy, and a 4 MB one from cache at 45).
    `weight_rows` (the weight's layout and row length, `Linear.weight_rows`): a one-row product from DRAM is
    scaled by the measured one-row rate at its rows over the rate at the surface point's (square weight stored
    (in, out), rows as long as it is wide), because a GEMV pays per row of its weight (`Ceilings.gemv_rows`).
    Products of several rows run other kernels, which the row sweep did not time: the surface alone prices
    them."""
    small = min(view.m, view.n, view.k)
    outer = view.k == small and view.k < min(view.m, view.n) and bool(c.outer_gemm)
    surface = c.outer_gemm if outer else c.skinny_gemm
    if not surface or small <= 0:
        return None
    other = math.sqrt(float(view.m) * float(view.n) * float(view.k) / small)
    if cold_weight and not outer and len(c.levels) > 1:
        llc = c.levels[-2].capacity_bytes
        beyond = [o for _, o, _ in surface if o * o * SURFACE_ELEMENT_BYTES > llc]
        if beyond:
            other = max(other, float(min(beyond)))
    rate = skinny_rate(surface, float(small), other)
    if rate is None:
        return None
    what = f"inner dimension {small}: measured outer-product" if outer else f"{small}-row product: measured skinny-GEMM"
    where = " (weight from DRAM)" if cold_weight and not outer else ""
    one_row = small == 1 and not outer
    rows = c.gemv_rows.get(weight_rows[0]) if weight_rows and cold_weight and one_row else None
    square = c.gemv_rows.get("in_out")
    if rows and square:
        factor = row_rate(rows, weight_rows[1]) / row_rate(square, other)  # type: ignore[index]
        rate *= factor
        where += f", {weight_rows[1]}-element rows {factor:.2f}x the square weight's"  # type: ignore[index]
    return rate, f"{what} rate {rate / 1e9:.3g} GFLOP/s{where}"

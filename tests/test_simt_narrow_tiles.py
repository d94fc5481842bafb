"""A CUDA-core (SIMT) product of 9 to 32 rows runs in tiles 32 rows tall, not padded to the 64 rows of the
tensor-core tile list: cuBLAS's own algorithm enum names such kernels (cublas_api.h of CUDA 9, cublasGemmAlgo_t:
CUBLAS_GEMM_ALGO2 "maxwell_sgemm_128x32_nt", ALGO20 and ALGO23 "sliced 128x32", without and with split-K; cuBLAS
calls PyTorch's x @ W^T a product of W's columns by x's rows, so its 128x32 is 32 of x's rows by 128 columns).

The independent reference is the arithmetic: padded to 32 rows a 16-row product does at most twice its own
multiply-adds, where a 64-row tile did four times."""

from __future__ import annotations

from roofline.api import predict
from roofline.model.gemm_cost import gemm_compute_s
from roofline.workload.ops.base import GemmView
from tests.cost_context import gpu_context


def test_a_16_row_fp32_product_is_tiled_32_rows_tall():
    ctx = gpu_context("a100-sxm4-40gb", "fp32")
    rate = ctx.ceilings.vector_flops_per_s
    t16, tile, _, _ = gemm_compute_s(GemmView(16, 4096, 9216, 1), rate, ctx, simt=True)
    t64, _, _, _ = gemm_compute_s(GemmView(64, 4096, 9216, 1), rate, ctx, simt=True)
    assert tile[0] == 32
    ideal = 2 * 16 * 4096 * 9216 / rate
    assert t16 < 2 * ideal * 1.8  # padding x2, wave and depth overheads below 1.8x (108 SMs)
    assert t16 < t64 / 1.5


def test_alexnet_fp32_throughput_does_not_fall_from_batch_8_to_16_on_an_a100():
    batches = predict("alexnet", gpu="a100-sxm4-40gb", batch=[8, 16]).batches
    assert batches[1].samples_per_s >= batches[0].samples_per_s


def test_a_one_row_tensor_core_product_pads_to_the_8_row_mma_side_not_a_64_row_tile():
    """A decode step's one-row bf16 product on an RTX 3090 (16-bit tensor rate with fp32 accumulation half the
    fp16-accumulate one): padded to the mma.sync m16n8k16 shape's 8 rows it does at most 8x its own multiply-adds,
    where a 64-row tile did 64x, and its weight's bytes at the DRAM rate, not that padding, bound it."""
    ctx = gpu_context("rtx-3090", "bf16")
    rate = ctx.ceilings.matrix_flops_per_s
    view = GemmView(1, 3072, 3072, 1)
    t, tile, _, _ = gemm_compute_s(view, rate, ctx, library_product=True)
    t_attention_like, tile64, _, _ = gemm_compute_s(view, rate, ctx)
    assert tile[0] == 8 and tile64[0] == 64
    ideal = 2 * 3072 * 3072 / rate
    assert 8 * ideal <= t < 8 * ideal * 2.5  # padding x8; wave and depth overheads below 2.5x (82 SMs)
    assert t < 3072 * 3072 * 2 / ctx.ceilings.dram.bandwidth_bytes_per_s < t_attention_like

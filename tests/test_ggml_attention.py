"""llama.cpp's attention without flash attention (`GgmlAttention`, `--engine llama.cpp`): the scores its
micro-batches compute, counted in closed form, and the time their traffic adds, bounded below by the peak DRAM
rate."""

from __future__ import annotations

import pytest

from roofline.hardware import find_profile
from roofline.model.llm_precision import serving_precision
from roofline.model.llm_step import predict_serving
from roofline.workload.llm.builtins import get_config
from roofline.workload.ops.serving import GGML_SCORE_BYTES, GgmlAttention


def _op(seq_q: int, seq_kv: int) -> GgmlAttention:
    return GgmlAttention("attn", batch=2, heads=32, seq_q=seq_q, seq_kv=seq_kv, head_dim=128, causal=False,
                         kv_heads=8)


def test_a_long_prompt_is_scored_micro_batch_by_micro_batch_against_every_cell_so_far():
    # 4096 tokens in eight micro-batches of 512: the i-th spans 512 i cells, so 512 x 512 x (1 + ... + 8)
    assert _op(4096, 4096).kept == 512 * 512 * 36
    assert _op(4096, 4096).scores == 2 * 32 * 512 * 512 * 36


def test_the_span_is_rounded_up_to_256_cells_and_capped_by_the_cache():
    assert _op(494, 512).kept == 494 * 512    # one micro-batch, 494 cells padded to 512
    assert _op(300, 300).kept == 300 * 300    # padded to 512, but the cache holds 300 cells
    assert _op(1, 1000).kept == 1000          # decode: one token against the whole cache


def test_score_bytes_are_twenty_bytes_a_score():
    op = _op(512, 512)
    assert op.score_bytes() == pytest.approx(2 * 32 * 512 * 512 * GGML_SCORE_BYTES)


def test_the_scores_traffic_slows_a_long_prompt_by_at_least_its_bytes_at_peak_bandwidth():
    cfg = get_config("llama-3-8b")
    gpu = find_profile("rtx-4090")
    prec = serving_precision("fp16", None, 128, "fp16")
    fused = predict_serving(cfg, gpu, prec, 1, 4096, 1, "graph")
    ggml = predict_serving(cfg, gpu, prec, 1, 4096, 1, "graph", engine="llama.cpp")
    scores = cfg.layers * cfg.heads * 512 * 512 * 36 * GGML_SCORE_BYTES
    assert ggml.ttft_s - fused.ttft_s >= scores / gpu.memory.bandwidth_bytes_per_s.value
    assert ggml.tpot_s == pytest.approx(fused.tpot_s, rel=0.05)


def test_llama_cpp_under_the_eager_runtime_is_a_one_line_error(capsys):
    from roofline.cli import main

    code = main(["predict", "--model", "llama-3-8b", "--gpu", "rtx-4090", "--engine", "llama.cpp",
                 "--runtime", "eager", "--prompt-len", "512", "--output-len", "8"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "--runtime graph" in err

"""LLM serving predictions: DESIGN's JSON keys, mechanisms checked by closed forms, bad input -> exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_error, run_json

import cli
from roofline.errors import RooflineError
from roofline.hardware import find_profile
from roofline.model.ceilings import ceilings_for
from roofline.model.llm_precision import serving_precision
from roofline.model.llm_step import engine_kv_tokens, predict_serving, tensor_parallel_group, weight_bytes
from roofline.workload.llm.builtins import get_config

LAYER_KEYS = {"name", "op", "flops", "bytes", "time_s", "bound"}


@pytest.mark.parametrize("gpu", ["a100", "h100"])
def test_predict_json_has_the_design_keys(capsys, gpu):
    out = run_json(capsys, "predict", "--model", "llama-3-8b", "--gpu", gpu, "--prompt-len", "1024",
                   "--output-len", "256", "--batch", "16", "--precision", "int4")
    assert {"ttft_s", "tpot_s", "tokens_per_s", "memory", "phases"} <= set(out)
    assert set(out["memory"]) >= {"weights", "kv_cache", "activations", "workspace"}
    for phase in ("prefill", "decode"):
        rows = out["phases"][phase]["layers"]
        assert rows and all(set(r) >= LAYER_KEYS for r in rows)
    # 16 sequences x 256 tokens over TTFT + 255 x TPOT
    assert out["tokens_per_s"] == pytest.approx(16 * 256 / (out["ttft_s"] + 255 * out["tpot_s"]))
    # KV cache: 16 x 1280 tokens x 131072 B (2 x 32 layers x 8 KV heads x 128 x 2 B)
    assert out["memory"]["kv_cache"] == 16 * 1280 * 131072


def test_int4_weight_bytes_closed_form():
    cfg = get_config("llama-2-7b")
    # the decoder layers' linear weights 32 x (4 x 4096^2 + 3 x 4096 x 11008) = 6476005376, the lm_head
    # 32000 x 4096 = 131072000, the token table and 65 RMSNorm weights 131338240 at 2 bytes; int4 g128 stores
    # 0.5 + 4 / 128 bytes per linear weight
    layers, head, rest = 6476005376, 131072000, 131338240
    int4 = 0.5 + 4 / 128
    # vLLM's GPTQ/AWQ checkpoints, llm-compressor and ModelOpt leave the lm_head 16-bit (the fused kernel's default)
    assert weight_bytes(cfg, serving_precision("int4", group_size=128)) == pytest.approx(
        layers * int4 + head * 2 + rest * 2)
    # gpt-fast's and torchao's quantisers replace it with the rest
    for quantised in (serving_precision("int4", group_size=128, quant_kernel="tinygemm"),
                      serving_precision("int4", group_size=128, head_weights="quantized")):
        assert weight_bytes(cfg, quantised) == pytest.approx((layers + head) * int4 + rest * 2)


def test_a_16_bit_lm_head_streams_its_16_bit_bytes_every_token():
    """Llama-3-8B's lm_head is 128256 x 4096 = 525336576 weights (its config.json): a decode step reads them at
    2 bytes where the toolchain leaves it 16-bit and at int4's 0.53125 where it quantises it, and under fp8 the
    16-bit head multiplies on the 16-bit units."""
    cfg, hw = get_config("llama-3-8b"), find_profile("a100")
    head = 128256 * 4096
    kept = predict_serving(cfg, hw, serving_precision("int4"), 1, 16, 2, "graph")
    quantised = predict_serving(cfg, hw, serving_precision("int4", head_weights="quantized"), 1, 16, 2, "graph")
    assert kept.decode.bytes - quantised.decode.bytes == pytest.approx(head * (2 - 0.53125), rel=1e-9)
    assert kept.tpot_s > quantised.tpot_s
    fp8 = serving_precision("fp8", activation="bf16")
    assert (fp8.head_weights, fp8.head.name, fp8.head.linear_weight_bytes) == ("16-bit", "bf16", 2)
    assert serving_precision("int8", quant_kernel="mmq").head_weights == "quantized"
    assert serving_precision("int4", engine="llama.cpp").head_weights == "quantized"


def test_head_weights_flag(capsys):
    args = ("predict", "--model", "llama-3-8b", "--gpu", "a100", "--precision", "int4", "--runtime", "graph")
    kept = run_json(capsys, *args)
    quantised = run_json(capsys, *args, "--head-weights", "quantized")
    assert kept["memory"]["weights"] - quantised["memory"]["weights"] == pytest.approx(128256 * 4096 * (2 - 0.53125))
    assert "--head-weights applies to serving" in run_error(capsys, "predict", "--model", "resnet50", "--gpu", "a100",
                                                            "--head-weights", "16-bit")


def test_decode_at_batch_one_is_weight_bandwidth_bound_on_a_gpu():
    """With a captured graph, bf16 decode of a 7B model reads ~13.5 GB per token: its time is at least weight
    bytes / DRAM bandwidth and at most that plus one kernel floor (launch_s) for each of its kernels (the small
    norms, adds and rope ops are each shorter than a launch), and int8 weights (half the bytes) are faster but
    less than 2x (the same kernel floors, and dequantisation)."""
    hw = find_profile("a100-sxm4-80gb")
    cfg = get_config("llama-2-7b")
    bf16 = predict_serving(cfg, hw, serving_precision("bf16"), 1, 8, 64, "graph")
    floor = bf16.memory.weights / bf16.ceilings.dram.bandwidth_bytes_per_s
    kernels = sum(n for _, n in bf16.decode.costs)
    assert floor <= bf16.tpot_s <= floor + kernels * bf16.ceilings.launch_s
    int8 = predict_serving(cfg, hw, serving_precision("int8"), 1, 8, 64, "graph")
    assert 1.0 < bf16.tpot_s / int8.tpot_s < 2.0


def test_eager_runtime_costs_more_per_token_than_a_graph():
    hw = find_profile("h100")
    cfg = get_config("llama-2-7b")
    eager = predict_serving(cfg, hw, serving_precision("bf16"), 1, 8, 64, "eager")
    graph = predict_serving(cfg, hw, serving_precision("bf16"), 1, 8, 64, "graph")
    assert eager.tpot_s > graph.tpot_s


def test_unfused_eager_passes_closed_form():
    """Bytes eager transformers moves beyond one fused kernel per op, Llama-3-8B shapes (h 4096, 8 KV heads of
    128), bf16 activations and KV cache (2 B)."""
    from roofline.workload.llm.phases import decode, prefill, unfused_bytes

    cfg = get_config("llama-3-8b")
    ops = {s.op.name: s.op for s in prefill(cfg, 2, 16).steps}
    # RMSNorm: fp32 pow 8 + mean 4 + mul 8 = 20, casts (2 + 4) + (4 + 2) = 12: 32 B per element, 2 x 16 x 4096 elements
    assert unfused_bytes(cfg, ops["attn.norm"], 2, 2) == 2 * 16 * 4096 * 32
    # in fp32 the casts are no-ops: 20 B per element
    assert unfused_bytes(cfg, ops["attn.norm"], 4, 4) == 2 * 16 * 4096 * 20
    # rotary embedding on k: 6 more elements of 2 B per element of 2 x 16 x 1024
    assert unfused_bytes(cfg, ops["attn.rope_k"], 2, 2) == 2 * 16 * 1024 * 6 * 2
    # prefill: no old cache to copy; the output made contiguous: read + write 2 x 16 x 4096 x 2 B
    assert unfused_bytes(cfg, ops["attn.sdpa"], 2, 2) == 2 * 2 * 16 * 4096 * 2
    # decode at context 100: torch.cat reads and rewrites 99 old tokens of K and V (8 x 128 x 2 B each)
    sdpa = next(s.op for s in decode(cfg, 2, 100).steps if s.op.name == "attn.sdpa")
    assert unfused_bytes(cfg, sdpa, 2, 2) == 2 * 2 * 2 * 8 * 99 * 128 * 2 + 2 * 2 * 4096 * 2
    assert unfused_bytes(cfg, ops["mlp.gate"], 2, 2) == 0


def test_long_prompt_attention_extra_passes_stream_at_dram_closed_form():
    """Over a 128000-token prompt the attention kernel's own time is its tiles' re-reads of K and V, far slower
    per compulsory byte than a copy. Eager's extra pass over the attention (the output made contiguous: read and
    written once, 2 x 128000 x 4096 x 2 B per layer, Llama-3.1-8B in bf16) is a copy kernel of its own, so on an
    A100 80GB it adds those bytes at the profile's DRAM rate to each of the 32 layers, not at the attention's."""
    hw = find_profile("a100-sxm4-80gb")
    cfg = get_config("llama-3.1-8b")
    prec = serving_precision("bf16")
    eager = predict_serving(cfg, hw, prec, 1, 128000, 1, "eager")
    graph = predict_serving(cfg, hw, prec, 1, 128000, 1, "graph")

    def sdpa(p):
        return next((cost, n) for cost, n in p.prefill.costs if cost.name == "attn.sdpa")

    (eager_op, layers), (graph_op, _) = sdpa(eager), sdpa(graph)
    extra_bytes = 2 * 128000 * 4096 * 2
    dram = ceilings_for(hw, prec.compute).dram.bandwidth_bytes_per_s
    assert layers == 32 and eager_op.bytes - graph_op.bytes == extra_bytes
    assert eager_op.device_s - graph_op.device_s == pytest.approx(extra_bytes / dram, rel=1e-9)


def test_graph_runtime_has_no_unfused_passes():
    """The eager runtime's extra passes make its prefill slower than the graph's on a device-bound prompt."""
    hw = find_profile("h100")
    cfg = get_config("llama-3-8b")
    eager = predict_serving(cfg, hw, serving_precision("bf16"), 32, 512, 2, "eager")
    graph = predict_serving(cfg, hw, serving_precision("bf16"), 32, 512, 2, "graph")
    assert eager.prefill.bytes > graph.prefill.bytes


def test_moe_reads_more_experts_at_larger_batch():
    hw = find_profile("h100")
    cfg = get_config("mixtral-8x7b")
    one = predict_serving(cfg, hw, serving_precision("int4"), 1, 8, 8, "graph")
    many = predict_serving(cfg, hw, serving_precision("int4"), 64, 8, 8, "graph")
    assert many.decode.bytes > 2 * one.decode.bytes


def test_16_bit_experts_under_fp8_closed_form():
    """Mixtral 8x7B with fp8 weights but its experts in fp16 (TensorRT-LLM v0.9's MoE plugin has no fp8 path):
    each of the 32 layers' 8 experts has three 4096 x 14336 matrices (Mixtral's config.json), 45.1e9 parameters,
    stored at 2 bytes instead of 1; the experts' products run on the 16-bit tensor cores, so a large prefill's
    expert products cost what an all-fp16 engine's do, while the attention projections keep fp8's rate."""
    cfg, hw = get_config("mixtral-8x7b"), find_profile("h100")
    fp8, mixed = serving_precision("fp8", "fp8"), serving_precision("fp8", "fp8", experts="fp16")
    expert_params = 32 * 8 * 3 * 4096 * 14336
    assert weight_bytes(cfg, mixed) - weight_bytes(cfg, fp8) == pytest.approx(expert_params, rel=1e-12)
    ops = {name: {o.name: o for o, _ in predict_serving(cfg, hw, prec, 8, 2048, 2, "graph").prefill.costs}
           for name, prec in (("fp8", fp8), ("mixed", mixed), ("fp16", serving_precision("fp16", "fp8")))}
    assert ops["mixed"]["mlp.experts.up"].compute_s == ops["fp16"]["mlp.experts.up"].compute_s
    assert ops["mixed"]["mlp.experts.up"].compute_s > ops["fp8"]["mlp.experts.up"].compute_s
    assert ops["mixed"]["attn.q_proj"].compute_s == ops["fp8"]["attn.q_proj"].compute_s


def test_expert_precision_cli(capsys):
    argv = ("predict", "--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "2", "--precision", "fp8",
            "--kv-precision", "fp8", "--runtime", "graph", "--batch", "16", "--prompt-len", "512", "--output-len", "64")
    fp8, mixed = run_json(capsys, *argv), run_json(capsys, *argv, "--expert-precision", "fp16")
    assert fp8["expert_precision"] is None and mixed["expert_precision"] == "fp16"
    assert mixed["memory"]["weights"] > fp8["memory"]["weights"] and mixed["tpot_s"] > fp8["tpot_s"]
    assert "mixture of experts" in run_error(capsys, "predict", "--model", "llama-3-8b", "--gpu", "h100",
                                             "--expert-precision", "fp16")


@pytest.mark.parametrize("argv, message", [
    (("--model", "llama-3-8b", "--gpu", "a100", "--prompt-len", "8000", "--output-len", "500"), "maximum"),
    (("--model", "llama-2-70b", "--gpu", "a100-sxm4-40gb", "--prompt-len", "16", "--output-len", "16"),
     "needs"),
    (("--model", "llama-3-8b", "--gpu", "a100", "--precision", "int3"), "unknown serving precision"),
    (("--model", "llama-3-8b", "--gpu", "a100", "--kv-precision", "int2"), "unknown KV cache precision"),
    (("--model", "llama-3-8b", "--cpu", "textbook", "--runtime", "graph"), "needs a GPU"),
    (("--model", "llama-3-8b", "--cpu", "textbook", "--runtime", "fused"), "needs a GPU"),
    (("--model", "missing/config.json", "--gpu", "a100"), "no such config file"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, message):
    assert message in run_error(capsys, "predict", *argv)


BAD_CONFIGS = [
    ({"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2, "vocab_size": 10,
      "max_position_embeddings": 64}, "missing 'intermediate_size'"),
    ({"hidden_size": 4000, "num_attention_heads": 48, "num_hidden_layers": 2, "vocab_size": 10,
      "intermediate_size": 64, "max_position_embeddings": 64}, "do not divide the hidden size"),
    ({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 10,
      "intermediate_size": 64, "max_position_embeddings": 16}, "maximum"),
    ({"hidden_size": 16384, "num_attention_heads": 128, "num_hidden_layers": 160, "vocab_size": 32000,
      "intermediate_size": 65536, "max_position_embeddings": 4096}, "GiB"),
]


@pytest.mark.parametrize("command", ["predict", "advise"])
@pytest.mark.parametrize("raw, message", BAD_CONFIGS, ids=["missing key", "heads", "context", "too big"])
def test_bad_config_json_is_one_line_exit_2(capsys, tmp_path, command, raw, message):
    """A config.json with a missing key, heads that do not divide the hidden size, a context beyond its
    maximum (16 tokens here) or a model too big for the GPU at batch 1 (a 520B-parameter shape on an 80 GB A100):
    one line on stderr, exit 2, from predict and from advise --serve."""
    path = tmp_path / "bad" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(raw))
    serve = ("--serve",) if command == "advise" else ("--batch", "1")
    assert message in run_error(capsys, command, "--model", str(path), "--gpu", "a100", *serve,
                                "--prompt-len", "16", "--output-len", "8")


def test_advise_serve_keys_targets_and_memory(capsys):
    out = run_json(capsys, "advise", "--model", "llama-3-8b", "--gpu", "h100", "--serve", "--prompt-len", "1024",
                   "--output-len", "256", "--tpot-ms", "20", "--runtime", "graph")
    rec = out["recommended"]
    assert {"batch_size", "precision", "kv_precision"} <= set(rec)
    rows = out["sweep"]
    assert rows and all({"ttft_s", "tpot_s", "tokens_per_s", "batch_size", "precision"} <= set(r) for r in rows)
    chosen = [r for r in rows if r["batch_size"] == rec["batch_size"] and r["precision"] == rec["precision"]
              and r["kv_precision"] == rec["kv_precision"]]
    assert chosen and chosen[0]["tpot_s"] <= 0.020
    assert rec["tokens_per_s"] == max(r["tokens_per_s"] for r in rows if r["tpot_s"] <= 0.020)
    # the largest batch that fits: bf16 weights 16.06 GB + B x 1280 tokens x 131072 B (+ activations) within
    # 80 GiB less the workspace; the KV cache alone bounds it by (80 GiB - 16.06 GB) / 167.8 MB = 416
    assert out["max_batch_size_by_precision"]["bf16/fp16"] < 416
    assert len(out["reasons"]) >= 4


def test_advise_serve_is_fast_and_torch_free():
    """`advise --serve` must not import torch and answers in well under a second of CPU time."""
    import subprocess
    import sys

    code = "\n".join([
        "import contextlib, io, resource, sys",
        "import cli",
        "argv = ['advise', '--model', 'llama-3-8b', '--gpu', 'a100', '--serve', '--prompt-len', '512',"
        " '--output-len', '128', '--json']",
        "with contextlib.redirect_stdout(io.StringIO()):",
        "    cli.main(argv)",
        "print('torch' in sys.modules, resource.getrusage(resource.RUSAGE_SELF).ru_utime)",
    ])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split()
    assert out[0] == "False"
    assert float(out[1]) < 1.0


def test_validate_serve_times_transformers_generate(capsys, tmp_path):
    """A two-layer Llama-shaped config, built by transformers with random weights, timed live on the CPU; the
    document carries both phases predicted and measured (no accuracy claim: the machine may be loaded)."""
    pytest.importorskip("transformers")
    path = tmp_path / "tiny" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
                                "vocab_size": 256, "max_position_embeddings": 128}))
    textbook = str(Path(__file__).resolve().parents[1] / "hardware_profiles" / "cpu" / "textbook-cpu.yaml")
    out = run_json(capsys, "validate", "--model", str(path), "--serve", "--hw", textbook, "--prompt-len", "8",
                   "--output-len", "16", "--repeats", "3")
    run = out["runs"][0]
    for phase in ("prefill", "decode"):
        assert run[phase]["measured_s"] > 0 and run[phase]["predicted_s"] > 0
    assert set(out["median_abs_error_pct_by_phase"]) == {"prefill", "decode"}
    from importlib.metadata import version
    major, minor = version("transformers").split(".")[:2]
    assert out["transformers"] == f"{major}.{minor}"


@pytest.mark.parametrize("argv", [
    ("predict", "--model", "llama-3-8b", "--gpu", "h100", "--prompt-len", "256", "--output-len", "64"),
    ("advise", "--model", "mixtral-8x7b", "--gpu", "h100", "--serve", "--prompt-len", "256", "--output-len", "64",
     "--tpot-ms", "40"),
])
def test_human_views_render(capsys, argv):
    assert cli.main(list(argv)) == 0
    out = capsys.readouterr().out
    assert "time" in out.lower() and "tokens/s" in out


def test_analyze_symbolic_phases(capsys):
    out = run_json(capsys, "analyze", "--model", "llama-2-7b", "--symbolic")
    decode = out["symbolic"]["decode"]
    # KV cache read per token of context: 2 x 32 layers x 4096 x 2 bytes = 524288 B per sequence
    assert "524288.0*B*c" in decode["bytes"]
    # attention FLOPs per key: 32 layers x (4 x 32 heads x 128 + 5 x 32 softmax) = 529408 per sequence
    assert "529408*B*c" in decode["flops"]
    assert {"flops", "bytes"} <= set(out["symbolic"]["prefill"])
    assert out["totals"]["params"] == 6738415616


def test_advise_serve_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "serve.png"
    out = run_json(capsys, "advise", "--model", "gpt2", "--gpu", "a100", "--serve", "--prompt-len", "128",
                   "--output-len", "32", "--plot", str(target))
    assert out["plot"] == [str(target)] and target.stat().st_size > 0


def test_zoo_gpt2_stays_a_whole_step_unless_serving_is_asked(capsys):
    step = run_json(capsys, "predict", "--model", "gpt2", "--gpu", "v100", "--precision", "fp16")
    assert "step_time_s" in step and "ttft_s" not in step
    served = run_json(capsys, "predict", "--model", "gpt2", "--gpu", "v100", "--precision", "fp16",
                      "--prompt-len", "128", "--output-len", "16")
    assert "ttft_s" in served


def test_eager_views_cost_the_host_one_dispatch_each():
    """A tensor call that launches nothing still pays Python and the dispatcher: the H100 runtime profile's
    measured 3.91 us each, so LlamaAttention's 14 views add 14 x 3.91 = 54.7 us of host to the op."""
    from dataclasses import replace

    from roofline.model.ceilings import ceilings_for
    from roofline.model.llm_runtime import eager_charge
    from roofline.workload.precision import get_precision

    c = ceilings_for(find_profile("h100"), get_precision("bf16"))
    pred = predict_serving(get_config("llama-3-8b"), find_profile("h100"), serving_precision("bf16"), 1, 8, 4, "graph")
    sdpa = next(o for o, _ in pred.decode.costs if o.name == "attn.sdpa")
    base = replace(sdpa, host_s=10e-6, launches=1)
    assert eager_charge(base, c, 4, 14).host_s - eager_charge(base, c, 4, 0).host_s == pytest.approx(14 * 3.91e-6)


def test_fused_runtime_charges_twelve_kernel_calls_and_ten_views_a_layer():
    """TinyChat 2.0's decode layer, read in its code: 12 kernels (two RMSNorms, the qkv, o, gate, up and down
    products, the attention kernel that also rotates q and k, SiLU, the gate's multiply, two residual adds) and
    10 tensor calls that launch none. On the H100 runtime profile's measured host costs (8.13 us a Python call
    launching a kernel, 3.91 us one launching none) a layer's host time is 12 x 8.13 + 10 x 3.91 = 136.7 us."""
    cfg, hw = get_config("llama-2-7b"), find_profile("h100")
    pred = predict_serving(cfg, hw, serving_precision("int4"), 1, 4, 256, "fused")
    layer = [o for o, n in pred.decode.costs if n == cfg.layers]
    assert sum(o.launches for o in layer) == 12
    assert sum(o.host_s for o in layer) == pytest.approx(12 * 8.13e-6 + 10 * 3.91e-6)
    graph = predict_serving(cfg, hw, serving_precision("int4"), 1, 4, 256, "graph")
    eager = predict_serving(cfg, hw, serving_precision("int4"), 1, 4, 256, "eager")
    assert graph.tpot_s <= pred.tpot_s < eager.tpot_s


def test_fused_runtime_is_host_bound_when_its_calls_outlast_the_kernels():
    """TinyLlama-1.1B in int4 on an H100 reads about 0.6 GB a token (well under 0.5 ms at 3 TB/s), while its 22
    layers issue 22 x 136.7 us = 3.0 ms of Python calls: the step is the host's, at least those calls."""
    cfg = get_config("tinyllama-1.1b")
    pred = predict_serving(cfg, find_profile("h100"), serving_precision("int4"), 1, 4, 64, "fused")
    assert pred.tpot_s >= cfg.layers * (12 * 8.13e-6 + 10 * 3.91e-6)


def test_advise_serve_says_whose_step_a_python_loop_sets(capsys):
    """Under --runtime fused Llama-2-7B's decode step calls 32 x 12 layer kernels and 4 outside them (embedding,
    final norm, lm_head, argmax): 388 Python calls at 8.13 us, and 32 x 10 + 1 tensor calls at 3.91 us, 4.41 ms of
    host against the int4 weights' 3.8 GB of kernels at an RTX 4090's ~0.9 TB/s: the GPU's step, which a graph
    takes in the same time; under eager on an H100 the calls outlast the kernels."""
    out = run_json(capsys, "advise", "--model", "llama-2-7b", "--gpu", "rtx-4090", "--serve", "--runtime", "fused",
                   "--precision", "int4", "--prompt-len", "4", "--output-len", "64", "--tpot-ms", "6")
    numbers = out["reason_numbers"]
    assert numbers["decode_kernel_calls"] == 388
    assert numbers["decode_host_s"] == pytest.approx(388 * 8.13e-6 + 321 * 3.91e-6)
    assert numbers["decode_device_s"] > numbers["decode_host_s"]
    assert any("the GPU's" in r for r in out["reasons"])
    eager = run_json(capsys, "advise", "--model", "llama-2-7b", "--gpu", "h100", "--serve", "--prompt-len", "512",
                     "--output-len", "128", "--tpot-ms", "30")
    assert eager["reason_numbers"]["decode_host_s"] > eager["reason_numbers"]["decode_device_s"]
    assert any("the host's" in r for r in eager["reasons"])
    graph = run_json(capsys, "advise", "--model", "llama-2-7b", "--gpu", "h100", "--serve", "--runtime", "graph",
                     "--prompt-len", "512", "--output-len", "128")
    assert "decode_host_s" not in graph["reason_numbers"]


def test_tensor_parallel_splits_weights_and_kv_cache_closed_form():
    """Llama-2-70B (h 8192, 80 layers, 64 heads, 8 KV heads of 128, MLP 28672, vocab 32000) on 4 H100s of a
    DGX H100: each GPU holds a quarter of every linear layer and of the lm_head, the embedding and norms whole,
    and 2 of the 8 KV heads."""
    from roofline.model.llm_step import tensor_parallel_group

    hw, cfg = find_profile("h100"), get_config("llama-2-70b")
    tp = tensor_parallel_group(hw, 4)
    p = predict_serving(cfg, hw, serving_precision("bf16"), 8, 128, 64, "graph", tp)
    layer_linear = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672  # q, o; k, v; gate, up, down
    linear = 80 * layer_linear + 32000 * 8192  # + lm_head
    rest = 32000 * 8192 + 80 * 2 * 8192 + 8192  # embedding, two norms a layer, final norm
    assert p.memory.weights == pytest.approx((linear / 4 + rest) * 2)
    # K and V, 80 layers, 2 KV heads of 128 on this GPU, 2 B, for 8 x (128 + 64) tokens
    assert p.memory.kv_cache == pytest.approx(8 * 192 * 2 * 80 * 2 * 128 * 2)


def test_tensor_parallel_communication_closed_form():
    """Two all-reduces a layer of hidden x tokens x 2 B (Megatron-LM) and one all-gather of the logits, on the
    DGX H100's NVSwitch fabric: bus bandwidth 18 x 25 GB/s x 0.822 = 370 GB/s, 3.4 us a ring step (NCCL's
    tuner). Decode at batch 16 on 8 GPUs: a 16 x 8192 x 2 = 262144 B all-reduce is a ring of 2 x 7 steps:
    14 x 3.4 us + 2 x 7/8 x 262144 / 370e9 = 47.6 + 1.24 us (the tree's 14 hops x 28 us are slower), and
    the logits' 16 x 32000 x 2 = 1024000 B all-gather 7 x 3.4 us + 7/8 x 1024000 / 370e9."""
    from roofline.model.llm_step import tensor_parallel_group

    hw, cfg = find_profile("h100"), get_config("llama-2-70b")
    tp = tensor_parallel_group(hw, 8)
    bw = tp.fabric.bus_bandwidth_bytes_per_s
    assert bw == pytest.approx(18 * 25e9 * 0.822, rel=1e-3)
    allreduce = 14 * 3.4e-6 + 2 * 7 / 8 * 262144 / bw
    gather = 7 * 3.4e-6 + 7 / 8 * 1024000 / bw
    p = predict_serving(cfg, hw, serving_precision("bf16"), 16, 128, 64, "graph", tp)
    assert p.decode.communication_s == pytest.approx(2 * 80 * allreduce + gather)
    one = predict_serving(cfg, hw, serving_precision("bf16"), 16, 128, 64, "graph")
    assert one.decode.communication_s == 0
    # the per-GPU ops do an eighth of the linear layers' work: decode FLOPs fall by nearly 8x
    assert 7.0 < one.decode.flops / p.decode.flops <= 8.0


def test_tensor_parallel_cli(capsys):
    out = run_json(capsys, "predict", "--model", "llama-2-70b", "--gpu", "h100", "--gpus", "4", "--prompt-len", "128",
                   "--output-len", "64", "--precision", "fp8", "--runtime", "graph")
    assert out["gpus"] == 4 and out["tensor_parallel"]["communication_s"]["decode"] > 0
    # DESIGN's multi-GPU keys; nothing overlaps the all-reduces, and 4 GPUs cannot be more than 4x one
    assert out["exposed_communication_s"] == out["communication_s"] > 0 and out["buckets"] == []
    assert 0 < out["scaling_efficiency"] <= 1
    assert "heads do not divide over 3" in run_error(capsys, "predict", "--model", "llama-3-8b", "--gpu", "h100",
                                                     "--gpus", "3")
    assert "no node profile" in run_error(capsys, "predict", "--model", "llama-3-8b", "--gpu", "l40s", "--gpus", "2")
    advice = run_json(capsys, "advise", "--serve", "--model", "llama-2-70b", "--gpu", "h100", "--gpus", "8",
                      "--precision", "bf16")
    assert advice["max_batch_size"] > 0  # 138 GB of bf16 weights: 17 GB a GPU
    assert "--gpus" in run_error(capsys, "advise", "--serve", "--model", "llama-2-70b", "--gpu", "h100",
                                 "--precision", "bf16")
    custom = run_json(capsys, "predict", "--model", "llama-2-7b", "--gpu", "a100", "--gpus", "8", "--prompt-len", "5",
                      "--output-len", "200", "--runtime", "graph", "--allreduce", "custom", "--lm-head", "replicated")
    nccl = run_json(capsys, "predict", "--model", "llama-2-7b", "--gpu", "a100", "--gpus", "8", "--prompt-len", "5",
                    "--output-len", "200", "--runtime", "graph")
    assert custom["tpot_s"] < nccl["tpot_s"]
    assert "--lm-head" in run_error(capsys, "predict", "--model", "llama-2-7b", "--gpu", "a100", "--gpus", "2",
                                    "--allreduce", "custom", "--lm-head", "sideways")


def test_int4_products_pad_to_the_16_row_mma_tile():
    """tinygemm (int4mm.cu, kMTileSize 16): a batch-1 int4 q_proj of Llama-2-7B on an A100 computes 16 padded
    rows, 2 x 16 x 4096 x 4096 FLOP at the sustained bf16 tensor rate (271.2 TFLOP/s), plus dequantising
    4096 x 4096 weights at 4 operations each on the bf16 vector units (2 x 19.49 TFLOP/s)."""
    hw = find_profile("a100-sxm4-80gb")
    p = predict_serving(get_config("llama-2-7b"), hw, serving_precision("int4", group_size=32), 1, 5, 200, "graph")
    q = next(o for o, _ in p.decode.costs if o.name == "attn.q_proj")
    vector = p.ceilings.vector_flops_per_s
    assert q.compute_s == pytest.approx(2 * 16 * 4096 * 4096 / 271.2e12 + 4096 * 4096 * 4 / vector)


def test_int8_products_of_one_row_pad_to_the_16_row_mma_tile_and_stream_their_weights():
    """Marlin's 16-row m blocks, not a 16-bit GEMM's 64-row tile: a batch-1 int8 mlp.gate of Llama-2-7B (11008 x
    4096) on a V100 computes 2 x 16 x 11008 x 4096 FLOP at the fp16 tensor rate plus 2 operations a weight on the
    vector units, well under its 45 MB of int8 weights at the DRAM rate, so the product is memory-bound."""
    hw = find_profile("v100-pcie-16gb")
    p = predict_serving(get_config("llama-2-7b"), hw, serving_precision("int8", activation="fp16"), 1, 8, 256,
                        "graph")
    gate = next(o for o, _ in p.decode.costs if o.name == "mlp.gate")
    c = p.ceilings
    weights = 11008 * 4096
    assert gate.compute_s == pytest.approx(2 * 16 * weights / c.matrix_flops_per_s
                                           + 2 * weights / c.vector_flops_per_s)
    assert gate.bound.startswith("memory")
    assert gate.memory_s >= weights / c.dram.bandwidth_bytes_per_s


@pytest.mark.parametrize("model, prompt, batch, measured_bytes", [
    # torch.cuda.max_memory_allocated() around transformers generate (bf16, 1 and 65 new tokens) on one H100,
    # benchmarks/results/gpu-live-h100.json, llm section, run 1
    ("llama-3-8b", 512, 1, 16256888320), ("llama-3-8b", 512, 8, 17154321920),
    ("llama-3-8b", 512, 32, 20231237120), ("llama-3-8b", 512, 64, 24333790720),
    ("llama-3-8b", 2048, 8, 20231237120), ("llama-2-7b", 512, 1, 13864300032),
])
def test_serving_memory_matches_the_measured_peak_allocation(model, prompt, batch, measured_bytes):
    """Weights, KV cache and the largest live activation pair (the allocator's peak; the workspace reserve is
    the CUDA context and cuBLAS's, outside it) within 5% of what PyTorch's allocator measured."""
    p = predict_serving(get_config(model), find_profile("h100"), serving_precision("bf16"), batch, prompt, 65)
    tensors = p.memory.total - p.memory.workspace
    assert tensors == pytest.approx(measured_bytes, rel=0.05)


def test_fp8_serving_keeps_activations_16_bit():
    """fp8 weights quantise only the products' operands: a norm moves 16-bit activations, and an fp8 KV cache is
    read at one byte per element (TensorRT-LLM's gpt_attention.md: the attention operator's inputs and outputs
    stay 16-bit under fp8)."""
    assert serving_precision("fp8", "fp8").activation_bytes == 2
    assert serving_precision("bf16").activation_bytes == 2
    assert serving_precision("fp32").activation_bytes == 4
    p = predict_serving(get_config("llama-2-7b"), find_profile("h100"), serving_precision("fp8", "fp8"), 1, 128, 2,
                        "graph")
    norm = next(o for o, _ in p.prefill.costs if o.name == "attn.norm")
    # 128 tokens x 4096 read and written at 2 B, plus the 4096 weights at 2 B (norms stay 16-bit)
    assert norm.bytes == 128 * 4096 * 2 * 2 + 4096 * 2
    attention = next(o for o, _ in p.decode.costs if o.name == "attn.sdpa")
    # decode at context 128 + 1 + 1 = 130: K and V of 32 heads x 128 dims at 1 B, q and o at 2 B, 1 token appended
    assert attention.bytes == 2 * 32 * 130 * 128 * 1 + 2 * 32 * 128 * 2 + 2 * 32 * 128 * 1


def test_custom_allreduce_closed_form():
    """A runtime's own intra-node all-reduce: one shot up to 256 KiB (one step of NVLink latency, then each GPU
    reads its 7 peers' buffers), two shots up to 10 MiB, NCCL beyond (IntraNodeComm's thresholds)."""
    from roofline.model.comm.collectives import allreduce_s, nccl_allreduce_s

    fabric = tensor_parallel_group(find_profile("a100-sxm4-80gb"), 8).fabric
    bus = 12 * 25e9 * 0.8222  # DGX A100: 12 NVLink 3 links per GPU x 25 GB/s one way x NCCL's 370/450
    # decode at batch 1 on Llama-2-7B: 4096 x 2 B = 8 KiB: 3.4 us + 7 x 8192 B / bus
    assert allreduce_s(8192, fabric, "custom") == pytest.approx(3.4e-6 + 7 * 8192 / bus)
    # 1 MiB: two shots, 2 x 3.4 us + 2 x 7/8 x 1 MiB / bus
    assert allreduce_s(2**20, fabric, "custom") == pytest.approx(2 * 3.4e-6 + 2 * 7 / 8 * 2**20 / bus)
    assert allreduce_s(20 * 2**20, fabric, "custom") == nccl_allreduce_s(20 * 2**20, fabric)
    # NCCL's ring pays 2 x 7 steps of 3.4 us for the same 8 KiB: 48 us against 3.6
    assert allreduce_s(8192, fabric) > 10 * allreduce_s(8192, fabric, "custom")


def test_replicated_lm_head_reads_the_whole_head_and_gathers_nothing():
    """gpt-fast's tp.py leaves the output layer whole on every GPU: each GPU holds and reads all 32000 x 4096
    lm_head weights and gathers no logits; split by vocabulary, one GPU holds 4000 x 4096."""
    cfg, hw, prec = get_config("llama-2-7b"), find_profile("a100-sxm4-80gb"), serving_precision("bf16")
    split = predict_serving(cfg, hw, prec, 1, 5, 200, "graph", tensor_parallel_group(hw, 8))
    whole = predict_serving(cfg, hw, prec, 1, 5, 200, "graph", tensor_parallel_group(hw, 8, lm_head="replicated"))
    assert whole.memory.weights - split.memory.weights == (32000 - 4000) * 4096 * 2
    head = {p: next(o for o, _ in x.decode.costs if o.name == "lm_head") for p, x in (("split", split),
                                                                                      ("whole", whole))}
    assert head["whole"].flops == 8 * head["split"].flops
    gathered = split.decode.communication_s - whole.decode.communication_s
    from roofline.model.comm.collectives import ring_all_gather_s

    assert gathered == pytest.approx(ring_all_gather_s(32000 * 2, split.tp.fabric))


def test_static_cache_is_read_whole_with_grouped_heads_copied_out():
    """transformers' StaticCache of 1024 tokens (Llama-3-8B, 32 query heads over 8 KV heads, batch 8): under its
    mask SDPA takes no grouped heads, so repeat_kv copies K and V out to 32 heads over all 1024 positions, and
    attention reads them all whatever the context; the cache is allocated whole."""
    cfg, hw, prec = get_config("llama-3-8b"), find_profile("h100"), serving_precision("bf16")
    p = predict_serving(cfg, hw, prec, 8, 512, 64, "graph", static_cache=1024)
    ops = {o.name: o for o, _ in p.decode.costs}
    per_head = 2 * 8 * 1024 * 128 * 2  # K and V, 8 sequences, 1024 positions, 128 dims, 2 B
    assert ops["attn.repeat_kv"].bytes == per_head * 8 + per_head * 32
    # q and o of 32 heads (8 x 32 x 128 x 2 B each), K and V of 32 heads read, one token's appended
    assert ops["attn.sdpa"].bytes == per_head * 32 + 2 * 8 * 32 * 128 * 2 + 2 * 8 * 32 * 128 * 2
    assert p.memory.kv_cache == 8 * 1024 * 131072
    growing = predict_serving(cfg, hw, prec, 8, 512, 64, "graph")
    assert "attn.repeat_kv" not in {o.name for o, _ in growing.decode.costs} and p.tpot_s > growing.tpot_s
    for runtime, length in (("eager", 1024), ("graph", 512)):
        with pytest.raises(RooflineError, match="static-cache"):
            predict_serving(cfg, hw, prec, 8, 512, 64, runtime, static_cache=length)


def test_static_cache_cli(capsys):
    out = run_json(capsys, "predict", "--model", "llama-3-8b", "--gpu", "h100", "--batch", "8", "--prompt-len", "512",
                   "--output-len", "64", "--runtime", "graph", "--static-cache", "1024")
    assert out["memory"]["kv_cache"] == 8 * 1024 * 131072
    assert "static-cache" in run_error(capsys, "predict", "--model", "llama-3-8b", "--gpu", "h100", "--static-cache",
                                       "1024")


def test_fp8_attention_products_run_in_16_bits():
    """Under fp8 weights TensorRT-LLM's context attention is its 16-bit fused kernel (FusedMHARunnerV2 built in
    the plugin's fp16/bf16 type, v0.5-0.6.1): a 2048-token prompt's attention costs what it does in bf16, while
    the fp8 products run faster than the bf16 ones."""
    cfg, hw = get_config("llama-2-7b"), find_profile("h100")
    ops = {p: {o.name: o for o, _ in predict_serving(cfg, hw, serving_precision(p), 1, 2048, 2, "graph").prefill.costs}
           for p in ("fp8", "bf16")}
    assert ops["fp8"]["attn.sdpa"].compute_s == ops["bf16"]["attn.sdpa"].compute_s
    assert ops["fp8"]["attn.q_proj"].compute_s < ops["bf16"]["attn.q_proj"].compute_s


def test_per_head_decode_attention_loads_each_kv_head_per_query_head():
    """Llama-2-70B on 4 H100s, batch 8, 128 + 64 tokens (decode priced at context 128 + 32 + 1 = 161): each GPU
    holds 16 query heads over 2 KV heads, and the masked MHA's 16 blocks a sequence load their KV head 8 times:
    7 loads more of K and V (2 x 8 seqs x 2 KV heads x 161 x 128 x 1 B, fp8) than a grouped kernel, in every
    layer. Llama-2-7B has a KV head per query head: the same bytes either way."""
    hw, prec = find_profile("h100"), serving_precision("fp8", "fp8")
    tp = tensor_parallel_group(hw, 4)

    def attention(model: str, kernel: str, group=None):
        p = predict_serving(get_config(model), hw, prec, 8, 128, 64, "graph", group, decode_attention=kernel)
        return next(o for o, _ in p.decode.costs if o.name == "attn.sdpa")

    extra = attention("llama-2-70b", "per-head", tp).bytes - attention("llama-2-70b", "grouped", tp).bytes
    assert extra == 7 * 2 * 8 * 2 * 161 * 128 * 1
    assert attention("llama-2-7b", "per-head").bytes == attention("llama-2-7b", "grouped").bytes
    with pytest.raises(RooflineError, match="decode-attention"):
        predict_serving(get_config("llama-2-7b"), hw, prec, 8, 128, 64, "graph", decode_attention="xqa")


def test_masked_mha_against_xqa_matches_nvidias_h200_measurement():
    """NVIDIA measured Llama-2-70B fp8 (fp8 KV cache) on one H200, 128 tokens in and 2048 out at batch 192:
    1227 tok/s with TensorRT-LLM's masked MHA (November's build, v0.6a) and 2941 with its XQA kernel (December's,
    v0.7a): docs/source/blogs/Falcon180B-H200.md at e093e484 (batch 192 in the caption, the bars in
    media/Falcon180B-H200_DecvOct.png), the same two figures as 'Throughput w/o XQA' and 'w/ XQA' in
    docs/source/blogs/XQA-kernel.md. Both runs are predicted faster than measured (about 5300 and 2000 tok/s:
    what else those runs paid is not priced), so the test is on what the kernel changes, the ratio."""
    cfg, hw, prec = get_config("llama-2-70b"), find_profile("h200-sxm-141gb"), serving_precision("fp8", "fp8")
    grouped = predict_serving(cfg, hw, prec, 192, 128, 2048, "graph")
    per_head = predict_serving(cfg, hw, prec, 192, 128, 2048, "graph", decode_attention="per-head")
    assert grouped.tokens_per_s / per_head.tokens_per_s == pytest.approx(2941 / 1227, rel=0.15)


def test_decode_attention_cli(capsys):
    argv = ("predict", "--model", "llama-2-70b", "--gpu", "h100", "--gpus", "4", "--batch", "64", "--prompt-len",
            "1024", "--output-len", "64", "--precision", "fp8", "--kv-precision", "fp8", "--runtime", "graph")
    grouped = run_json(capsys, *argv)
    per_head = run_json(capsys, *argv, "--decode-attention", "per-head")
    assert per_head["tpot_s"] > grouped["tpot_s"] and per_head["ttft_s"] == grouped["ttft_s"]
    assert "give one or the other" in run_error(capsys, *argv, "--decode-attention", "per-head", "--static-cache",
                                                 "1024")


@pytest.mark.parametrize("max_model_len, published_blocks, published_concurrency", [(20000, 1952, 1.56),
                                                                                     (29000, 1478, 0.82)])
def test_largest_batch_matches_vllms_published_concurrency(max_model_len, published_blocks, published_concurrency):
    """vLLM on an RTX 3090 serving Llama-3.1-8B-Instruct in bf16 at gpu_memory_utilization 0.90, the device
    reporting total_gpu_memory=23.58GiB (vllm-project/vllm#10517, comment of 2024-12-02): '# GPU blocks: 1952 ...
    Maximum concurrency for 20000 tokens per request: 1.56x', and 1478 blocks, 0.82x at 29000. The largest batch
    at that context is the KV tokens the budget leaves (16 per block) over the context: within 10%."""
    tokens = engine_kv_tokens(get_config("llama-3.1-8b"), serving_precision("bf16"), 0.90 * 23.58 * 2**30,
                              max_model_len, block_tokens=16)
    assert tokens == pytest.approx(published_blocks * 16, rel=0.10)
    assert tokens / max_model_len == pytest.approx(published_concurrency, rel=0.10)


def test_a_decode_step_on_cuda_cores_reads_its_weights_without_padding_rows_to_a_tile():
    # closed form: batch-1 decode on a GPU without tensor cores streams every weight once per token, so its time is
    # the weights' bytes over the board's stream bandwidth plus a few percent of other work; priced as 64-row tiles
    # on the CUDA cores it came out at 7x that
    profile = find_profile("p100-pcie-16gb", kind="gpu")
    pred = predict_serving(get_config("llama-2-7b"), profile, serving_precision("fp16", activation="fp16"), 1, 1, 128,
                           runtime="graph")
    read_s = pred.memory.weights / profile.memory.sustained_bandwidth_bytes_per_s.value
    assert read_s < pred.tpot_s < 1.15 * read_s


def test_eager_serving_advice_says_what_the_dynamic_cache_copies_per_step():
    # closed form: torch.cat of each layer's old K and V with the new token's reads and rewrites both (2 tensors x
    # read + write) at the mean decode context, and the attention output is made contiguous (read + write of
    # batch x heads x head_dim); a compiled runtime has no such copies
    from roofline import api

    advice = api.advise_serving("llama-2-7b", gpu="a100", prompt_len=256, output_len=512)
    batch = advice["recommended"]["batch_size"]
    cfg = get_config("llama-2-7b")
    old = 256 + 512 // 2 + 1 - 1
    per_layer = (2 * 2 * batch * cfg.kv_heads * old * cfg.head_dim * 2
                 + 2 * batch * cfg.heads * cfg.head_dim * 2)
    assert advice["reason_numbers"]["cache_copy_bytes_per_step"] == pytest.approx(cfg.layers * per_layer)
    assert any("DynamicCache" in r for r in advice["reasons"])
    compiled = api.advise_serving("llama-2-7b", gpu="a100", prompt_len=256, output_len=512, runtime="graph")
    assert compiled["reason_numbers"]["cache_copy_bytes_per_step"] == 0
    assert not any("DynamicCache" in r for r in compiled["reasons"])


def test_advise_names_the_16_bit_lm_head_and_what_quantising_it_saves(capsys):
    """Llama-3-8B's 525336576-weight lm_head at 2 bytes beside int4 decoder layers; quantised at int4's 0.53125
    bytes it would read 525336576 x 1.46875 bytes less each step."""
    out = run_json(capsys, "advise", "--model", "llama-3-8b", "--gpu", "h100", "--serve", "--runtime", "graph",
                   "--precision", "int4")
    assert out["reason_numbers"]["head_bytes"] == pytest.approx(128256 * 4096 * 2)
    assert any("lm_head (1.05 GB) stays bf16" in r and f"reads {128256 * 4096 * 1.46875 / 1e9:.2f} GB less" in r
               for r in out["reasons"])
    kept = run_json(capsys, "advise", "--model", "llama-3-8b", "--gpu", "h100", "--serve", "--runtime", "graph",
                    "--precision", "int4", "--head-weights", "quantized")
    assert "head_bytes" not in kept["reason_numbers"]

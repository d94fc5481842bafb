"""A Hugging Face GPT-2 config.json priced as a whole-sequence step (`roofline.workload.zoo.hf_step`): the counts
by closed form, the same ops as the zoo's GPT-2 at the same shape, the routing between a step and serving, and
the configs it refuses in one line."""

from __future__ import annotations

import json

import pytest

from roofline.errors import RooflineError
from roofline.workload.zoo import build_workload, get_model
from tests.cli_run import run_error, run_json


def _config(tmp_path, name: str = "gpt2-3b.json", **fields) -> str:
    """A GPT-2 config.json 2560 wide, 32 layers (a field given as None is left out)."""
    raw = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 2560, "n_layer": 32,
           "n_head": 32, "n_positions": 2048, "vocab_size": 50257, "activation_function": "gelu_new", **fields}
    raw = {k: v for k, v in raw.items() if v is not None}
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    return str(path)


def test_counts_closed_form(tmp_path):
    wl = build_workload(_config(tmp_path), 1, seq_len=2048)
    # a block: c_attn h x 3h + 3h, c_proj h x h + h, c_fc h x 4h + 4h, mlp c_proj 4h x h + h, two LayerNorms 4h
    # = 12 h^2 + 13 h; wte 50257 x h, wpe 2048 x h, ln_f 2h, lm_head tied: with h = 2560, 32 layers:
    # 32 x (78,643,200 + 33,280) + 52,305 x 2560 + 5,120 = 2,517,647,360 + 133,900,800 + 5,120 = 2,651,553,280
    assert wl.params() == 2_651_553_280
    # MACs per token: 12 h^2 x 32 layers + h x 50257 (lm_head), over 2048 tokens
    products = sum(v.flops for op in wl.ops if op.kind == "gemm" for v in op.gemm_views("forward")) // 2
    assert products == 2048 * (32 * 12 * 2560**2 + 2560 * 50_257)


def test_a_config_of_a_zoo_shape_is_the_zoo_model(tmp_path):
    # gpt2-large's config.json on the Hugging Face hub: 36 layers, 1280 wide, 20 heads, 1024 positions
    path = _config(tmp_path, "config.json", n_embd=1280, n_layer=36, n_head=20, n_positions=1024)
    ours, zoo = build_workload(path, 2, seq_len=256), build_workload("gpt2-large", 2, seq_len=256)
    assert [(op.kind, op.flops("forward")) for op in ours.ops] == [(op.kind, op.flops("forward")) for op in zoo.ops]
    assert ours.params() == zoo.params() == 774_030_080
    assert get_model(path).name == tmp_path.name  # a config.json takes its folder's name


def test_the_module_matches_the_workload(tmp_path):
    torch = pytest.importorskip("torch")
    from roofline.workload.zoo import build_module

    path = _config(tmp_path, n_layer=2)
    with torch.device("meta"):
        module = build_module(path)
    assert sum(p.numel() for p in module.parameters()) == build_workload(path, 1).params()


@pytest.mark.parametrize(("fields", "message"), [
    ({"model_type": "opt", "n_embd": None}, "model_type 'opt' has no whole-sequence step"),
    ({"tie_word_embeddings": False}, "tie_word_embeddings is false"),
    ({"activation_function": "relu"}, "activation_function 'relu'"),
    ({"resid_pdrop": 1.5}, "resid_pdrop must be a probability"),
    ({"n_head": 7}, "7 attention heads do not divide the hidden size 2560"),
    ({"n_layer": 10**30}, "beyond the 1024 layers"),
    ({"tie_word_embeddings": "12"}, "tie_word_embeddings must be true or false"),
    ({"n_inner": 0}, "intermediate must be a positive integer"),
    ({"layer_norm_epsilon": 1.5}, "layer_norm_epsilon must be a small positive number"),
    ({"model_type": 12}, "model_type '12' has no whole-sequence step"),
])
def test_configs_the_step_cannot_price_are_refused(tmp_path, fields, message):
    path = _config(tmp_path, **fields)
    with pytest.raises(RooflineError, match=message):
        build_workload(path, 1)


def test_a_gpt2_config_is_a_step_unless_serving_is_asked_for(capsys, tmp_path):
    path = _config(tmp_path, n_layer=4)
    step = run_json(capsys, "predict", "--model", path, "--gpu", "a100", "--train", "--seq-len", "512")
    assert step["step_time_s"] > 0 and "ttft_s" not in step
    served = run_json(capsys, "predict", "--model", path, "--gpu", "a100", "--prompt-len", "64", "--output-len", "8")
    assert served["ttft_s"] > 0
    assert "--train does not apply to serving" in run_error(capsys, "predict", "--model", path, "--gpu", "a100",
                                                            "--train", "--prompt-len", "64", "--output-len", "8")

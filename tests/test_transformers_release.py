"""`--transformers X.Y`: what an older transformers release's eager generate runs, checked by closed forms."""

from __future__ import annotations

import pytest
from cli_run import run_error, run_json

from roofline.errors import RooflineError
from roofline.hardware import find_profile
from roofline.model.llm_precision import serving_precision
from roofline.model.llm_step import predict_serving
from roofline.workload.llm.builtins import get_config
from roofline.workload.llm.phases import Layout, decode, prefill, unfused_bytes
from roofline.workload.llm.transformers_release import CURRENT, parse_version, transformers_release


@pytest.mark.parametrize("text, version", [("4.35", (4, 35)), ("4.35.2", (4, 35)), ("v4.36.0", (4, 36)),
                                           ("4.35.0.dev0", (4, 35)), ("5.17", (5, 17))])
def test_versions_parse(text, version):
    assert parse_version(text) == version


@pytest.mark.parametrize("text", ["four", "4", "4.x", ""])
def test_bad_versions_are_refused(text):
    with pytest.raises(RooflineError, match=r"MAJOR\.MINOR"):
        parse_version(text)


def test_each_change_takes_effect_at_its_release():
    """Llama-style: eager attention before 4.36, all logits (upcast) before 4.45, K/V repeated before 4.54 for
    grouped heads only; GPT-2: eager before 4.42, logits in its own dtype."""
    llama, mistral, gpt2 = get_config("llama-2-7b"), get_config("mistral-7b"), get_config("gpt2")
    assert transformers_release(None, llama) == CURRENT
    old = transformers_release("4.35", mistral)
    assert old.eager_attention and old.repeat_kv and old.all_logits and old.fp32_logits
    assert not transformers_release("4.35", llama).repeat_kv
    mid = transformers_release("4.37", mistral)
    assert not mid.eager_attention and mid.repeat_kv and mid.all_logits
    assert not transformers_release("4.45", mistral).all_logits
    assert not transformers_release("4.54", mistral).repeat_kv
    assert transformers_release("4.41", gpt2).eager_attention and not transformers_release("4.42", gpt2).eager_attention
    assert transformers_release("4.41", gpt2).all_logits and not transformers_release("4.41", gpt2).fp32_logits


def test_eager_attention_moves_its_scores_closed_form():
    """Llama-2-7B (32 heads of 128, MHA), 2 sequences of 16 prompt tokens, fp16 (2 B): beyond the SDPA path's
    output copy, every one of the 2 x 32 x 16 x 16 scores is written, scaled, masked, softmaxed into fp32 and
    cast back, read by P V: 9 x 2 + 8 bytes; V (2 x 32 x 16 x 128) is copied before P V."""
    cfg = get_config("llama-2-7b")
    layout = Layout(release=transformers_release("4.35", cfg))
    op = next(s.op for s in prefill(cfg, 2, 16, layout=layout).steps if s.op.name == "attn.sdpa")
    out = 2 * 2 * 16 * 4096 * 2
    scores = 2 * 32 * 16 * 16
    v_copy = 2 * 2 * 32 * 16 * 128 * 2
    assert unfused_bytes(cfg, op, 2, 2) == out + scores * (9 * 2 + 8) + v_copy
    # fp32 activations: softmax already writes fp32 and the cast back launches nothing
    assert unfused_bytes(cfg, op, 4, 4) == 2 * out + scores * 9 * 4 + 2 * v_copy
    # the full square is computed: twice a causal kernel's products, plus the softmax
    fused = next(s.op for s in prefill(cfg, 2, 16).steps if s.op.name == "attn.sdpa")
    assert op.flops("forward") == 4 * 2 * 32 * 16 * 16 * 128 + 5 * scores
    assert op.flops("forward") > fused.flops("forward")


def test_repeated_kv_is_copied_and_read_per_query_head():
    """Mistral-7B (32 query heads over 8 KV heads of 128) decoding 2 sequences at context 100 under 4.37:
    repeat_kv reads the 8 heads' K and V and writes 32 heads' worth, which attention then reads."""
    cfg = get_config("mistral-7b")
    steps = {s.op.name: s for s in decode(cfg, 2, 100, layout=Layout(release=transformers_release("4.37", cfg))).steps}
    repeat = steps["attn.repeat_kv"].op.traffic("forward")
    assert repeat.activations_read == 2 * 2 * 8 * 100 * 128
    assert repeat.activations_written == 2 * 2 * 32 * 100 * 128
    assert steps["attn.repeat_kv"].kernels == 2
    read = steps["attn.sdpa"].op.traffic("forward").activations_read
    assert read == 2 * 32 * 128 + 2 * 2 * 32 * 100 * 128
    grouped = next(s.op for s in decode(cfg, 2, 100).steps if s.op.name == "attn.sdpa")
    assert grouped.traffic("forward").activations_read == 2 * 32 * 128 + 2 * 2 * 8 * 100 * 128
    assert "attn.repeat_kv" not in {s.op.name for s in decode(get_config("llama-2-7b"), 2, 100).steps}


def test_old_releases_compute_and_hold_every_prompt_positions_logits():
    """Before 4.45 the prompt's lm_head runs on all B x P rows (2 x rows x 4096 x 32000 FLOPs) and its fp32 copy
    sits beside the 16-bit logits: B x P x 32000 x (2 + 4) bytes at once."""
    cfg, hw = get_config("llama-2-7b"), find_profile("a100-sxm4-80gb")
    prec = serving_precision("fp16", activation="fp16")
    new = predict_serving(cfg, hw, prec, 8, 512, 2)
    old = predict_serving(cfg, hw, prec, 8, 512, 2, release=transformers_release("4.44", cfg))
    head = {p: next(o for o, _ in q.prefill.costs if o.name == "lm_head") for p, q in (("new", new), ("old", old))}
    assert head["new"].flops == 2 * 8 * 4096 * 32000
    assert head["old"].flops == 2 * 8 * 512 * 4096 * 32000
    upcast = next(o for o, _ in old.prefill.costs if o.name == "lm_head.float")
    assert upcast.bytes == 8 * 512 * 32000 * (2 + 4)
    assert old.memory.activations >= 8 * 512 * 32000 * 6
    assert old.ttft_s > new.ttft_s
    assert not any(o.name == "lm_head.float" for o, _ in predict_serving(
        cfg, hw, serving_precision("fp32", activation="fp32"), 8, 512, 2, release=transformers_release("4.44", cfg)
    ).prefill.costs)


def test_transformers_cli(capsys):
    argv = ("predict", "--model", "mistral-7b", "--gpu", "a100", "--batch", "4", "--prompt-len", "512",
            "--output-len", "16")
    new, old = run_json(capsys, *argv), run_json(capsys, *argv, "--transformers", "4.35")
    assert new["transformers"] == {"release": "current", "adds": []}
    assert old["transformers"]["release"] == "4.35" and len(old["transformers"]["adds"]) == 3
    assert old["ttft_s"] > new["ttft_s"] and old["tpot_s"] > new["tpot_s"]
    assert "MAJOR.MINOR" in run_error(capsys, *argv, "--transformers", "latest")
    assert "--runtime eager" in run_error(capsys, *argv, "--transformers", "4.35", "--runtime", "graph")
    assert "applies to serving" in run_error(capsys, "predict", "--model", "resnet50", "--gpu", "a100",
                                             "--transformers", "4.35")


def test_advise_counts_an_old_releases_logits_in_the_largest_batch(capsys):
    """Under 4.40, Llama-3-8B's prompt logits (B x 512 x 128256, fp16 then fp32: 6 bytes each) are held at once,
    so fewer sequences fit than under the current release, and the advice says how much they take."""
    argv = ("advise", "--model", "llama-3-8b", "--gpu", "a100", "--serve", "--prompt-len", "512", "--output-len",
            "64", "--precision", "bf16", "--kv-precision", "fp16")
    new, old = run_json(capsys, *argv), run_json(capsys, *argv, "--transformers", "4.40")
    assert old["transformers"] == "4.40" and new["transformers"] == "current"
    assert old["max_batch_size"] < new["max_batch_size"]
    batch = old["recommended"]["batch_size"]
    assert old["reason_numbers"]["prompt_logits_bytes"] == batch * 512 * 128256 * 6
    assert any("4.45 and later keep the last position's only" in r for r in old["reasons"])
    assert "prompt_logits_bytes" not in new["reason_numbers"]

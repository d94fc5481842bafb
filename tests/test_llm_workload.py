"""Decoder configs and the prefill/decode op lists, against independent references: transformers' own
parameter counts (models built on the meta device from the same config), published counts, closed forms."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from roofline.workload.llm.builtins import BUILTINS, get_config
from roofline.workload.llm.config import ConfigError, read_hf_config
from roofline.workload.llm.phases import decode, kv_cache_bytes_per_token, prefill
from roofline.workload.ops.serving import CachedAttention, MaskedMultiheadAttention, expected_distinct_experts

HF_KEYS = {
    "gpt2": ("gpt2", {}),
    "llama-2-7b": ("llama", {}),
    "llama-3-8b": ("llama", {}),
    "mistral-7b": ("mistral", {}),
    "mixtral-8x7b": ("mixtral", {}),
    "qwen2.5-7b": ("qwen2", {}),
    "phi-3-mini": ("phi3", {}),
    "tinyllama-1.1b": ("llama", {}),
}


def _hf_dict(name: str) -> dict:
    c = BUILTINS[name]
    model_type, _ = HF_KEYS[name]
    if model_type == "gpt2":
        return {"model_type": "gpt2", "n_embd": c.hidden, "n_layer": c.layers, "n_head": c.heads,
                "vocab_size": c.vocab, "n_positions": c.max_positions}
    raw = {"model_type": model_type, "hidden_size": c.hidden, "num_hidden_layers": c.layers,
           "num_attention_heads": c.heads, "num_key_value_heads": c.kv_heads, "intermediate_size": c.intermediate,
           "vocab_size": c.vocab, "max_position_embeddings": c.max_positions, "tie_word_embeddings": False}
    if c.experts > 1:
        raw.update(num_local_experts=c.experts, num_experts_per_tok=c.top_k)
    return raw


@pytest.mark.parametrize("name", sorted(HF_KEYS))
def test_params_match_transformers_meta_model(name, tmp_path):
    """transformers builds the architecture from the config on the meta device (no memory, no download) and
    counts its parameters: an independent count of the same shapes. The config also round-trips through our
    config.json reader."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    raw = _hf_dict(name)
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    expected = sum(p.numel() for p in model.parameters())
    path = tmp_path / name / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(raw))
    assert read_hf_config(str(path)).params() == expected
    assert BUILTINS[name].params() == expected


PUBLISHED_PARAMS = [
    # (built-in, published count, the half-unit of its last printed digit, where it is printed)
    ("gpt2", 124e6, 0.5e6, "huggingface.co/openai-community/gpt2 model card: 'the smallest version of GPT-2, with 124M "
                           "parameters'"),
    ("gpt2-medium", 355e6, 0.5e6, "huggingface.co/openai-community/gpt2-medium: 'the 355M parameter version'"),
    ("gpt2-large", 774e6, 0.5e6, "huggingface.co/openai-community/gpt2-large: 'the 774M parameter version'"),
    # named by size only ('the 1.5B parameter version'): within the 5% such a name rounds to
    ("gpt2-xl", 1.5e9, 0.075e9, "huggingface.co/openai-community/gpt2-xl: 'the 1.5B parameter version'"),
    ("llama-2-7b", 6.74e9, 0.005e9, "Llama 2 paper (arXiv 2307.09288) Table 1 sizes; 6.74B on the 7B checkpoint"),
    ("llama-2-13b", 13.0e9, 0.05e9, "Llama 2 paper (arXiv 2307.09288) Table 1: 13B"),
    ("llama-2-70b", 69.0e9, 0.05e9, "Llama 2 70B checkpoint: 69.0B ('70B' by name)"),
    ("llama-3-8b", 8.03e9, 0.005e9, "huggingface.co/meta-llama/Meta-Llama-3-8B: 8.03B params"),
    ("llama-3.1-8b", 8.03e9, 0.005e9, "huggingface.co/meta-llama/Llama-3.1-8B: 8.03B params"),
    ("llama-3-70b", 70.6e9, 0.05e9, "huggingface.co/meta-llama/Meta-Llama-3-70B: 70.6B params"),
    ("mistral-7b", 7.24e9, 0.005e9, "huggingface.co/mistralai/Mistral-7B-v0.1: 7.24B params (the release blog's "
                                    "'7.3B' rounds it up)"),
    ("mixtral-8x7b", 46.7e9, 0.05e9, "Mixtral paper (Jiang et al. 2024): 46.7B parameters in total"),
    ("qwen2.5-7b", 7.61e9, 0.01e9, "huggingface.co/Qwen/Qwen2.5-7B model card: 'Number of Parameters: 7.61B' "
                                   "(printed truncated: 7,615,616,512)"),
    ("phi-3-mini", 3.8e9, 0.05e9, "Phi-3 technical report (arXiv 2404.14219): 'phi-3-mini, a 3.8 billion parameter "
                                  "language model'"),
    ("tinyllama-1.1b", 1.1e9, 0.05e9, "TinyLlama paper (arXiv 2401.02385): 'a compact 1.1B language model'"),
    # model cards read in public copies (ZHUI/paddlenlp_model_readme@40a7101e, Qwen's GGUF cards in
    # JoseAdrianRodriguezGonzalez/Llm-Component@0dd5e6e9, OpenMOSE/RWKV-LM-RLHF@c394e06d); a figure printed
    # truncated is checked as the interval it truncates
    ("llama-3.1-70b", 70e9, 3.5e9, "Llama 3.1 model card: '70B' (named by size)"),
    ("llama-3.2-1b", 1.235e9, 0.005e9, "Llama 3.2 model card: '1.23B' (printed truncated)"),
    ("llama-3.2-3b", 3.215e9, 0.005e9, "Llama 3.2 model card: '3.21B' (printed truncated)"),
    ("qwen2.5-72b", 72.75e9, 0.05e9, "Qwen2.5-72B model card: 'Number of Parameters: 72.7B' (truncated)"),
    ("qwen3-14b", 14.8e9, 0.05e9, "Qwen3-14B model card: 'Number of Parameters: 14.8B'"),
    ("qwen3-32b", 32.8e9, 0.05e9, "Qwen3-32B model card: 'Number of Parameters: 32.8B'"),
    ("qwen3-30b-a3b", 30.55e9, 0.05e9, "Qwen3-30B-A3B model card: '30.5B in total' (truncated)"),
    ("mistral-nemo-12b", 12e9, 0.6e9, "Mistral NeMo: '12B' (named by size)"),
    ("mistral-small-24b", 24e9, 1.2e9, "Mistral-Small-24B-Instruct-2501 model card: '24B' (named by size)"),
    ("phi-4", 14e9, 0.7e9, "microsoft/phi-4 model card: 'Architecture: 14B parameters' (named by size)"),
]


@pytest.mark.parametrize("name, published, half_unit, where", PUBLISHED_PARAMS,
                         ids=[row[0] for row in PUBLISHED_PARAMS])
def test_published_parameter_counts(name, published, half_unit, where):
    """Every built-in against the count its publisher prints, to the digits printed."""
    assert abs(get_config(name).params() - published) <= half_unit, where


BUILTIN_FAMILIES = {"llama-3.1-70b": "llama", "llama-3.2-1b": "llama", "llama-3.2-3b": "llama",
                    "qwen2.5-14b": "qwen2", "qwen2.5-32b": "qwen2", "qwen2.5-72b": "qwen2", "qwen3-8b": "qwen3",
                    "qwen3-14b": "qwen3", "qwen3-32b": "qwen3", "qwen3-30b-a3b": "qwen3_moe", "gemma-2-9b": "gemma2",
                    "gemma-2-27b": "gemma2", "mistral-nemo-12b": "mistral", "mistral-small-24b": "mistral",
                    "phi-4": "phi3"}


@pytest.mark.parametrize("name", sorted(BUILTIN_FAMILIES))
def test_newer_builtins_match_transformers_meta_model(name):
    """Each built-in written out as its family's config.json, built by transformers on the meta device."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    c = BUILTINS[name]
    raw = {"model_type": BUILTIN_FAMILIES[name], "hidden_size": c.hidden, "num_hidden_layers": c.layers,
           "num_attention_heads": c.heads, "num_key_value_heads": c.kv_heads, "head_dim": c.head_dim,
           "intermediate_size": c.intermediate, "vocab_size": c.vocab, "max_position_embeddings": c.max_positions,
           "tie_word_embeddings": c.tied_embeddings}
    if c.experts > 1:
        raw.update(num_experts=c.experts, num_experts_per_tok=c.top_k, moe_intermediate_size=c.intermediate)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**raw))
    assert c.params() == sum(p.numel() for p in model.parameters())


def test_gemma_2_counts_match_the_report_less_its_larger_vocabulary():
    """The Gemma 2 report (arXiv 2408.00118) Table 2 counts a 256128-token table where the config.json has 256000
    (read in public transcriptions of the table): 9B 917,962,752 embedding + 8,324,201,984 non-embedding =
    9,242,164,736; 27B 27,227,718,144 in all."""
    nine, twenty_seven = BUILTINS["gemma-2-9b"], BUILTINS["gemma-2-27b"]
    assert (256128 * nine.hidden, nine.params() - nine.vocab * nine.hidden) == (917_962_752, 8_324_201_984)
    for c, total in ((nine, 9_242_164_736), (twenty_seven, 27_227_718_144)):
        assert c.params() + (256128 - c.vocab) * c.hidden == total, c.name


def test_published_active_and_non_embedding_counts():
    # Mixtral paper: 12.9B parameters used per token (2 of 8 experts)
    assert get_config("mixtral-8x7b").active_params() / 1e9 == pytest.approx(12.9, abs=0.05)
    # Qwen2.5-7B model card: 'Number of Paramaters (Non-Embedding): 6.53B' (the token table and the untied lm_head,
    # 2 x 152064 x 3584, excluded)
    qwen = get_config("qwen2.5-7b")
    assert (qwen.params() - 2 * qwen.vocab * qwen.hidden) / 1e9 == pytest.approx(6.53, abs=0.005)


def test_kv_cache_per_token_closed_form():
    # Llama-2-7B: 2 (K, V) x 32 layers x 32 heads x 128 dims x 2 bytes = 524288 B = 0.5 MiB per token
    assert kv_cache_bytes_per_token(get_config("llama-2-7b"), 2) == 524288
    # Llama-3-8B (GQA, 8 KV heads): 2 x 32 x 8 x 128 x 2 = 131072 B
    assert kv_cache_bytes_per_token(get_config("llama-3-8b"), 2) == 131072


def test_decode_attention_reads_the_cache_once_per_kv_head():
    a = CachedAttention("a", batch=2, heads=32, seq_q=1, seq_kv=100, head_dim=128, kv_heads=8)
    # cache read: 2 (K, V) x 2 seqs x 8 KV heads x 100 tokens x 128 = 409600; q: 2 x 32 x 128 = 8192
    assert a.traffic("forward").activations_read == 409600 + 8192
    # FLOPs: 4 x (2 x 32 pairs) x 100 keys x 128 + 5 x 64 x 100 softmax = 3276800 + 32000
    assert a.flops("forward") == 3308800


def test_masked_mha_loads_each_kv_head_once_per_query_head():
    """TensorRT-LLM's masked MHA (v0.5-0.6.1) runs a thread block per query head, each loading its KV head: 32
    query heads over 8 KV heads load every KV head 4 times; the FLOPs are the grouped kernel's, on the CUDA
    cores (no GEMM views); one KV head per query head loads the cache once, as a grouped kernel does."""
    kw = dict(batch=2, heads=32, seq_q=1, seq_kv=100, head_dim=128)
    masked, grouped = MaskedMultiheadAttention("m", kv_heads=8, **kw), CachedAttention("g", kv_heads=8, **kw)
    # cache: 4 x (2 (K, V) x 2 seqs x 8 KV heads x 100 tokens x 128) = 4 x 409600; q: 2 x 32 x 128 = 8192
    assert masked.traffic("forward").activations_read == 4 * 409600 + 8192
    assert masked.traffic("forward").activations_written == grouped.traffic("forward").activations_written
    assert masked.flops("forward") == grouped.flops("forward") and masked.gemm_views("forward") == []
    mha = MaskedMultiheadAttention("m", kv_heads=32, **kw)
    assert mha.traffic("forward") == CachedAttention("g", kv_heads=32, **kw).traffic("forward")


def test_expected_experts():
    assert expected_distinct_experts(1, 8, 2) == pytest.approx(2.0)
    # two tokens: 8 x (1 - (6/8)^2) = 8 x 0.4375 = 3.5
    assert expected_distinct_experts(2, 8, 2) == pytest.approx(3.5)
    assert expected_distinct_experts(256, 8, 2) == pytest.approx(8.0)


def test_decode_flops_near_two_per_weight():
    """Decode does 2 FLOPs per weight per token (a MAC per weight) plus attention: for one token at short
    context, within 1% of 2 x (params - embedding table) for Llama-2-7B."""
    cfg = get_config("llama-2-7b")
    d = decode(cfg, batch=1, context=16)
    assert d.flops() == pytest.approx(2 * (cfg.params() - cfg.vocab * cfg.hidden), rel=0.01)
    p = prefill(cfg, batch=1, prompt=16)
    assert p.flops() > 15 * d.flops()


@pytest.mark.parametrize("raw, message", [
    ({"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 2, "vocab_size": 10,
      "max_position_embeddings": 64}, "missing 'intermediate_size'"),
    ({"hidden_size": 4000, "num_attention_heads": 48, "num_hidden_layers": 2, "vocab_size": 10,
      "intermediate_size": 64, "max_position_embeddings": 64}, "do not divide the hidden size"),
    ({"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 5, "num_hidden_layers": 2,
      "vocab_size": 10, "intermediate_size": 64, "max_position_embeddings": 64}, "key/value heads"),
    ({"hidden_size": "big", "num_attention_heads": 32, "num_hidden_layers": 2, "vocab_size": 10,
      "intermediate_size": 64, "max_position_embeddings": 64}, "wrong type|positive integer"),
    ([1, 2], "JSON object"),
])
def test_bad_configs_raise_config_error(raw, message, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=message):
        read_hf_config(str(path))


def test_context_beyond_maximum():
    with pytest.raises(ConfigError, match="exceeds the model's maximum of 1024"):
        prefill(get_config("gpt2"), batch=1, prompt=2048)


def test_eager_kernel_counts_follow_each_architecture():
    """transformers' LlamaRMSNorm launches 8 kernels (2 of them casts, no-ops in fp32), GPT-2's LayerNorm 1;
    GPT-2 projects q, k, v with one fused c_attn, Llama with three."""
    llama = {s.op.name: s for s in decode(get_config("llama-2-7b"), 1, 8).steps}
    gpt2 = {s.op.name: s for s in decode(get_config("gpt2"), 1, 8).steps}
    assert (llama["attn.norm"].kernels, llama["attn.norm"].fp32_noop) == (8, 2)
    assert (gpt2["attn.norm"].kernels, gpt2["attn.norm"].fp32_noop) == (1, 0)
    assert "attn.c_attn" in gpt2 and "attn.q_proj" not in gpt2
    assert {"attn.q_proj", "attn.k_proj", "attn.v_proj"} <= set(llama)
    # c_attn: 768 -> 3 x 768 with bias, the same parameters as three 768 -> 768 layers
    assert gpt2["attn.c_attn"].op.params() == 768 * 2304 + 2304


FAMILY_CONFIGS = {
    # config.json fields of each model as its publisher ships it (the fields the shape needs)
    "qwen3-8b": {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936,
                 "max_position_embeddings": 40960, "tie_word_embeddings": False},
    # 16 heads of 128 over a hidden size of 1024: head_dim is not hidden / heads
    "qwen3-0.6b": {"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
                   "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072, "vocab_size": 151936,
                   "max_position_embeddings": 40960, "tie_word_embeddings": True},
    "qwen3-30b-a3b": {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
                      "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                      "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
                      "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
                      "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False},
    # Gemma ties its lm_head by default (GemmaConfig), GeGLU is gated
    "gemma-7b": {"model_type": "gemma", "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
                 "num_key_value_heads": 16, "head_dim": 256, "intermediate_size": 24576, "vocab_size": 256000,
                 "max_position_embeddings": 8192},
    "gemma-2-9b": {"model_type": "gemma2", "hidden_size": 3584, "num_hidden_layers": 42, "num_attention_heads": 16,
                   "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336, "vocab_size": 256000,
                   "max_position_embeddings": 8192},
    "gemma-3-1b": {"model_type": "gemma3_text", "hidden_size": 1152, "num_hidden_layers": 26,
                   "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 6912,
                   "vocab_size": 262144, "max_position_embeddings": 32768},
    "mistral-nemo-12b": {"model_type": "mistral", "hidden_size": 5120, "num_hidden_layers": 40,
                         "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                         "intermediate_size": 14336, "vocab_size": 131072, "max_position_embeddings": 1024000},
    "pythia-6.9b": {"model_type": "gpt_neox", "hidden_size": 4096, "num_hidden_layers": 32,
                    "num_attention_heads": 32, "intermediate_size": 16384, "vocab_size": 50432,
                    "max_position_embeddings": 2048},
    "starcoder2-3b": {"model_type": "starcoder2", "hidden_size": 3072, "num_hidden_layers": 30,
                      "num_attention_heads": 24, "num_key_value_heads": 2, "intermediate_size": 12288,
                      "vocab_size": 49152, "max_position_embeddings": 16384, "use_bias": True},
}


def _read(raw: dict, tmp_path, name: str):
    path = tmp_path / name / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(raw))
    return read_hf_config(str(path))


@pytest.mark.parametrize("name", sorted(FAMILY_CONFIGS))
def test_other_families_match_transformers_meta_model(name, tmp_path):
    """Each family as transformers builds it from the same config.json on the meta device: explicit head widths,
    query/key norms, four norms a layer, experts of their own width, tied heads by default, two-matrix MLPs."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    raw = FAMILY_CONFIGS[name]
    config = transformers.AutoConfig.for_model(**raw)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    expected = sum(p.numel() for p in model.parameters())
    assert _read(raw, tmp_path, name).params() == expected


def test_other_families_published_counts(tmp_path):
    # Pythia paper (arXiv 2304.01373), Table 1's 6.9B model: 6,857,302,016 parameters
    assert _read(FAMILY_CONFIGS["pythia-6.9b"], tmp_path, "p").params() == 6_857_302_016
    # Gemma paper (arXiv 2403.08295), Table 2: the 7B model's 786,432,000 embedding and 7,751,248,896 non-embedding
    gemma = _read(FAMILY_CONFIGS["gemma-7b"], tmp_path, "g")
    assert (gemma.vocab * gemma.hidden, gemma.params() - gemma.vocab * gemma.hidden) == (786_432_000, 7_751_248_896)
    # Qwen3 model cards print truncated figures: 8B '8.2B' total, '6.95B' non-embedding; 0.6B '0.6B', '0.44B';
    # 30B-A3B '30.5B in total and 3.3B activated', '29.9B' non-embedding
    for name, total, non_embedding in (("qwen3-8b", 8.1, 6.94), ("qwen3-0.6b", 0.5, 0.44),
                                       ("qwen3-30b-a3b", 30.5, 29.9)):
        cfg = _read(FAMILY_CONFIGS[name], tmp_path, name)
        table = cfg.vocab * cfg.hidden * (1 if cfg.tied_embeddings else 2)
        assert total <= cfg.params() / 1e9 < total + 0.1, name
        assert non_embedding <= (cfg.params() - table) / 1e9 < non_embedding + 0.01, name
    assert 3.3 <= _read(FAMILY_CONFIGS["qwen3-30b-a3b"], tmp_path, "a").active_params() / 1e9 < 3.4


def test_an_explicit_head_width_sets_q_and_the_cache(tmp_path):
    cfg = _read(FAMILY_CONFIGS["qwen3-0.6b"], tmp_path, "q")
    # 2 (K, V) x 28 layers x 8 KV heads x 128 x 2 bytes, where hidden / heads would give 64 wide heads
    assert kv_cache_bytes_per_token(cfg, 2) == 2 * 28 * 8 * 128 * 2
    ops = {s.op.name: s.op for s in decode(cfg, 1, 8).steps}
    assert (ops["attn.q_proj"].out_features, ops["attn.o_proj"].in_features) == (16 * 128, 16 * 128)
    # the query and key norms run over each head's 128 values: 16 query heads and 8 key heads for one token
    assert (ops["attn.q_norm"].rows, ops["attn.k_norm"].rows, ops["attn.q_norm"].features) == (16, 8, 128)


@pytest.mark.parametrize("raw, message", [
    ({"model_type": "opt", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
      "ffn_dim": 3072, "vocab_size": 50272, "max_position_embeddings": 2048}, "'opt'"),
    ({"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128, "num_hidden_layers": 61,
      "kv_lora_rank": 512, "intermediate_size": 18432, "vocab_size": 129280, "max_position_embeddings": 163840},
     "latent attention"),
    ({"model_type": "qwen2_moe", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24,
      "intermediate_size": 5632, "num_experts": 60, "shared_expert_intermediate_size": 5632, "vocab_size": 151936,
      "max_position_embeddings": 8192}, "shared expert"),
    ({"model_type": "some_moe", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 24,
      "intermediate_size": 5632, "num_experts": 60, "mlp_only_layers": [0], "vocab_size": 151936,
      "max_position_embeddings": 8192}, "dense layers"),
    ({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
      "intermediate_size": 3072, "hidden_act": "gelu", "vocab_size": 30522, "max_position_embeddings": 512},
     "whether its MLP is gated"),
])
def test_configs_of_undescribed_models_are_refused(raw, message, tmp_path):
    """A config whose model this reader would price as another model is a one-line error, not a wrong number."""
    with pytest.raises(ConfigError, match=message):
        _read(raw, tmp_path, "m")


def test_a_multimodal_config_is_read_as_its_text_model(tmp_path):
    """Gemma 3's config.json nests its language model under text_config and may leave out that model's type: the
    tokens are generated by it, so it is what is priced (the vision tower runs over images only)."""
    text = {k: v for k, v in FAMILY_CONFIGS["gemma-3-1b"].items() if k != "model_type"}
    wrapped = {"model_type": "gemma3", "text_config": text, "vision_config": {"hidden_size": 1152}}
    assert _read(wrapped, tmp_path, "gemma") == replace(_read(FAMILY_CONFIGS["gemma-3-1b"], tmp_path, "text"),
                                                         name="gemma", source="gemma")

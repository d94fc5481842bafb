"""The zoo's models by name: what each is, its defaults and published reference figures, and the two ways
to get it, as a Workload (pure Python, no torch) or as a torch nn.Module (imported lazily)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.errors import MissingDependency, RooflineError, ShapeError, UnknownName, did_you_mean
from roofline.workload.ops.base import Num, Workload
from roofline.workload.zoo import alexnet, hf_step, mlp, mobilenetv3, resnet, transformer, vgg
from roofline.workload.zoo._graph import Graph

TORCHVISION_DOCS = "https://docs.pytorch.org/vision/stable/models/generated/torchvision.models.{}.html"
IMAGE_BYTES = 4
"""Images arrive as float32."""
TOKEN_BYTES = 8
"""Token ids arrive as int64, the dtype nn.Embedding expects."""
MAX_PROBE_SIZE = 4096
"""Largest image side tried when looking for the smallest input a CNN accepts (only after one failed)."""


@dataclass(frozen=True)
class Reference:
    """Published figures for the default input, each with the unit of its last printed digit, so a test
    can check agreement to the precision the source gives (0.22 GMACs printed: step 0.01e9)."""

    params: float
    params_step: float
    macs: float | None
    macs_step: float | None
    source: str
    note: str = ""
    """Where the published figure is looser than its digits suggest."""


@dataclass(frozen=True)
class ModelSpec:
    """A zoo model: its names, input defaults, published reference, and how to build it both ways."""

    name: str
    aliases: tuple[str, ...]
    family: str
    """'vision' (NCHW images), 'mlp' (images flattened) or 'text' (token ids)."""
    description: str
    build: Callable[[Graph, int | None], None] = field(repr=False, compare=False)
    """Appends the model's ops to a Graph holding the input shape; the int is num_classes."""
    module: tuple[str, str, dict[str, Any]] = field(repr=False, compare=False)
    """(module under roofline.workload.zoo.modules, class name, constructor keywords) of the torch implementation."""
    input_size: int | None = None
    """Default image side in pixels (vision and mlp)."""
    seq_len: int | None = None
    """Default sequence length in tokens (text)."""
    max_seq_len: int | None = None
    """Longest sequence the learned position embeddings allow."""
    num_classes: int | None = None
    in_channels: int = 3
    vocab_size: int | None = None
    """Token ids are drawn from range(vocab_size) (text)."""
    reference: Reference | None = None


def _torchvision(name: str, params: int, gmacs: float) -> Reference:
    """torchvision's model page: num_params exact, 'GFLOPS' (multiply-adds in fact) with two decimals."""
    return Reference(params=params, params_step=1, macs=gmacs * 1e9, macs_step=0.01e9,
                     source=TORCHVISION_DOCS.format(name))


def _vision(name: str, aliases: tuple[str, ...], description: str, reference: Reference,
            build: Callable[[Graph, int | None], None], module: tuple[str, str, dict[str, Any]]) -> ModelSpec:
    return ModelSpec(name=name, aliases=aliases, family="vision", description=description, input_size=224,
                     num_classes=1000, reference=reference, build=build, module=module)


def _resnet(name: str) -> tuple[Callable[[Graph, int | None], None], tuple[str, str, dict[str, Any]]]:
    """(IR builder, torch module) of one depth of the ResNet family (`resnet.DEPTHS`), for `_vision`."""
    return (lambda g, n: resnet.build(g, name, n)), ("resnet", "ResNet", {"model": name})


def _bert_large(name: str, aliases: tuple[str, ...], description: str, holds: str,
                build: Callable[[Graph, transformer.Config], None], module_class: str) -> ModelSpec:
    """A model on BERT-large's encoder (bert-large-uncased's config), against the paper's '340M'."""
    cfg = transformer.BERT_LARGE
    return ModelSpec(name=name, aliases=aliases, family="text", description=description, seq_len=128,
                     max_seq_len=cfg.positions, vocab_size=cfg.vocab,
                     reference=Reference(params=340e6, params_step=10e6, macs=None, macs_step=None,
                                         source="https://arxiv.org/abs/1810.04805",
                                         note=f"the paper's '340M' is rounded to tens of millions: {holds}"),
                     build=lambda g, n: build(g, cfg), module=("transformer", module_class, {"cfg": cfg}))


MODELS: tuple[ModelSpec, ...] = (
    _vision("mobilenetv3-large", ("mobilenetv3", "mobilenet_v3_large", "mobilenetv3_large", "mobilenet-v3-large"),
            "MobileNetV3-Large (torchvision): inverted residuals, squeeze-excitation, hardswish",
            _torchvision("mobilenet_v3_large", 5_483_032, 0.22),
            lambda g, n: mobilenetv3.build(g, "large", n), ("mobilenetv3", "MobileNetV3", {"variant": "large"})),
    _vision("mobilenetv3-small", ("mobilenet_v3_small", "mobilenetv3_small", "mobilenet-v3-small"),
            "MobileNetV3-Small (torchvision): inverted residuals, squeeze-excitation, hardswish",
            _torchvision("mobilenet_v3_small", 2_542_856, 0.06),
            lambda g, n: mobilenetv3.build(g, "small", n), ("mobilenetv3", "MobileNetV3", {"variant": "small"})),
    _vision("resnet18", ("resnet-18",), "ResNet-18 (torchvision): BasicBlocks [2, 2, 2, 2]",
            _torchvision("resnet18", 11_689_512, 1.81),
            *_resnet("resnet18")),
    _vision("resnet50", ("resnet-50", "resnet50-v1.5"), "ResNet-50 v1.5 (torchvision): Bottlenecks [3, 4, 6, 3]",
            _torchvision("resnet50", 25_557_032, 4.09),
            *_resnet("resnet50")),
    _vision("resnet101", ("resnet-101",), "ResNet-101 v1.5 (torchvision): Bottlenecks [3, 4, 23, 3]",
            Reference(params=44.5e6, params_step=0.1e6, macs=7.801e9, macs_step=0.001e9,
                      source="https://huggingface.co/lucid-dl/resnet-101",
                      note="torchvision's ResNet101_Weights.IMAGENET1K_V1 figures as a port's model card prints them "
                           "(44.5M parameters, 7.801 GFLOPs, multiply-adds in fact); torchvision's own page was "
                           "not readable here"),
            *_resnet("resnet101")),
    _vision("resnet152", ("resnet-152",), "ResNet-152 v1.5 (torchvision): Bottlenecks [3, 8, 36, 3]",
            _torchvision("resnet152", 60_192_808, 11.51),
            *_resnet("resnet152")),
    _vision("vgg16", ("vgg-16",), "VGG-16 without BatchNorm (torchvision): 13 3x3 convolutions, 3 Linear",
            _torchvision("vgg16", 138_357_544, 15.47), vgg.build, ("vgg", "VGG16", {})),
    _vision("alexnet", (), "AlexNet (torchvision's one-tower variant): 5 convolutions, 3 Linear",
            _torchvision("alexnet", 61_100_840, 0.71), alexnet.build, ("alexnet", "AlexNet", {})),
    ModelSpec(name="mlp", aliases=(), family="mlp",
              description="MLP 512 -> 2048 -> 512 -> 1 with ReLU on 512 float32 features per sample",
              input_size=mlp.IN_FEATURES, num_classes=mlp.OUTPUTS, build=mlp.build, module=("mlp", "MLP", {})),
    ModelSpec(name="bert-base", aliases=("bert", "bert-base-uncased", "bert_base"), family="text",
              description="BERT-base encoder (Hugging Face BertModel with pooler): 12 layers, 768 hidden, 12 heads",
              seq_len=128, max_seq_len=transformer.BERT.positions, vocab_size=transformer.BERT.vocab,
              reference=Reference(params=110e6, params_step=1e6, macs=None, macs_step=None,
                                  source="https://arxiv.org/abs/1810.04805",
                                  note="the paper's '110M' is rounded up: BertModel with pooler holds 109,482,240"),
              build=lambda g, n: transformer.build_bert(g), module=("transformer", "BertModel", {})),
    _bert_large("bert-large", ("bert-large-uncased", "bert_large"),
                "BERT-large encoder (Hugging Face BertModel with pooler): 24 layers, 1024 hidden, 16 heads",
                "BertModel with pooler holds 335,141,888", transformer.build_bert, "BertModel"),
    _bert_large("bert-large-pretraining", ("bert-large-mlm", "bertforpretraining"),
                "BERT-large with its pre-training heads (Hugging Face BertForPreTraining): masked-language-model head "
                "over every position (tied to the word embedding) and next-sentence head; training adds the "
                "masked-language-model cross-entropy",
                "BertForPreTraining holds 336,226,108", transformer.build_bert_pretraining, "BertForPreTraining"),
    ModelSpec(name="gpt2", aliases=("gpt-2", "gpt2-small"), family="text",
              description="GPT-2 small (Hugging Face GPT2LMHeadModel, tied lm_head): 12 layers, 768 hidden, causal",
              seq_len=128, max_seq_len=transformer.GPT2.positions, vocab_size=transformer.GPT2.vocab,
              reference=Reference(params=124e6, params_step=1e6, macs=None, macs_step=None,
                                  source="https://huggingface.co/openai-community/gpt2"),
              build=lambda g, n: transformer.build_gpt2(g), module=("transformer", "GPT2LMHeadModel", {})),
    *(ModelSpec(name=name, aliases=(name.replace("gpt2", "gpt-2"),), family="text",
                description=f"GPT-2 {size} (Hugging Face GPT2LMHeadModel, tied lm_head): {cfg.layers} layers, "
                            f"{cfg.hidden} hidden, causal",
                seq_len=128, max_seq_len=cfg.positions, vocab_size=cfg.vocab,
                reference=Reference(params=params, params_step=step, macs=None, macs_step=None,
                                    source=f"https://huggingface.co/openai-community/{name}", note=note),
                build=lambda g, n, cfg=cfg: transformer.build_gpt2(g, cfg),
                module=("transformer", "GPT2LMHeadModel", {"cfg": cfg}))
      for name, size, cfg, params, step, note in (
          ("gpt2-medium", "medium", transformer.GPT2_MEDIUM, 355e6, 1e6, ""),
          ("gpt2-large", "large", transformer.GPT2_LARGE, 774e6, 1e6, ""),
          ("gpt2-xl", "XL", transformer.GPT2_XL, 1.5e9, 0.1e9,
           "the model card's '1.5B' is truncated: GPT2LMHeadModel holds 1,557,611,200"))),
    ModelSpec(name="opt-1.3b", aliases=("facebook/opt-1.3b", "opt-1_3b", "opt1.3b"), family="text",
              description="OPT-1.3B (Hugging Face OPTForCausalLM, tied lm_head): 24 pre-norm layers, 2048 hidden, "
                          "32 heads, ReLU MLP 8192 wide, causal",
              seq_len=128, max_seq_len=transformer.OPT_1_3B.positions, vocab_size=transformer.OPT_1_3B.vocab,
              reference=Reference(params=1.3e9, params_step=0.1e9, macs=None, macs_step=None,
                                  source="https://huggingface.co/facebook/opt-1.3b",
                                  note="the model card's '1.3B' is rounded: OPTForCausalLM holds 1,315,758,080"),
              build=lambda g, n: transformer.build_opt(g), module=("transformer", "OPTForCausalLM", {})),
)

_BY_NAME = {key: spec for spec in MODELS for key in (spec.name, *spec.aliases)}


def list_models() -> list[ModelSpec]:
    return list(MODELS)


def get_model(name: str) -> ModelSpec:
    """The model called `name` or one of its aliases, case-insensitively, or a GPT-2 config.json's path."""
    if name.strip().lower().endswith(".json"):
        return config_model(name.strip())
    spec = _BY_NAME.get(name.strip().lower())
    if spec is None:
        raise UnknownName(f"unknown model '{name}'{did_you_mean(name, [s.name for s in MODELS])}; "
                          f"known: {', '.join(s.name for s in MODELS)}")
    return spec


def config_model(path: str) -> ModelSpec:
    """A Hugging Face GPT-2 config.json as a zoo model: the `gpt2` family's builder and module at its shape."""
    name, cfg = hf_step.gpt2_step_config(path)
    return ModelSpec(name=name, aliases=(), family="text",
                     description=f"GPT-2 architecture from {path} (Hugging Face GPT2LMHeadModel, tied lm_head): "
                                 f"{cfg.layers} layers, {cfg.hidden} hidden, {cfg.heads} heads, causal",
                     seq_len=min(128, cfg.positions), max_seq_len=cfg.positions, vocab_size=cfg.vocab,
                     build=lambda g, n: transformer.build_gpt2(g, cfg),
                     module=("transformer", "GPT2LMHeadModel", {"cfg": cfg}))


@dataclass(frozen=True)
class _Inputs:
    """One sample's input as the model receives it, after defaults and checks."""

    shape: tuple[int, ...]
    num_classes: int | None
    element_bytes: int


def _inputs(spec: ModelSpec, input_size: int | None, num_classes: int | None, seq_len: int | None) -> _Inputs:
    if spec.family == "text":
        if input_size is not None or num_classes is not None:
            raise RooflineError(f"{spec.name} reads token ids: give --seq-len, not --input-size or --num-classes")
        seq = spec.seq_len if seq_len is None else seq_len
        if not 1 <= seq <= spec.max_seq_len:
            raise ShapeError(f"{spec.name}: sequence length {seq} is outside 1..{spec.max_seq_len}, the positions "
                             "its embeddings cover; pass --seq-len in that range")
        return _Inputs((seq,), None, TOKEN_BYTES)
    if seq_len is not None:
        raise RooflineError(f"{spec.name} reads images: give --input-size (pixels), not --seq-len")
    size = spec.input_size if input_size is None else input_size
    classes = spec.num_classes if num_classes is None else num_classes
    if size < 1 or classes < 1:
        raise ShapeError(f"{spec.name}: input size ({size}) and number of classes ({classes}) must be positive")
    if spec.family == "mlp":
        return _Inputs((size,), classes, IMAGE_BYTES)
    return _Inputs((spec.in_channels, size, size), classes, IMAGE_BYTES)


def _check_batch(batch: Num) -> None:
    """Numbers must be positive integers; a sympy Symbol stands for any positive batch."""
    if isinstance(batch, (int, float)) and (batch < 1 or batch != int(batch)):
        raise ShapeError(f"batch size must be a positive integer, got {batch}")


def build_workload(name: str, batch: Num, input_size: int | None = None, num_classes: int | None = None,
                   seq_len: int | None = None) -> Workload:
    """The model's ops in execution order for `batch` samples (an int, or a sympy Symbol for formulas)."""
    spec = get_model(name)
    _check_batch(batch)
    inputs = _inputs(spec, input_size, num_classes, seq_len)
    g = Graph(spec.name, batch, inputs.shape)
    try:
        spec.build(g, inputs.num_classes)
    except ShapeError as exc:
        raise ShapeError(f"{exc}; the smallest input {spec.name} accepts is {_smallest_input(spec)} pixels "
                         "(--input-size)") from None
    sample = "x".join(str(d) for d in inputs.shape)
    dtype = "int64 token ids" if spec.family == "text" else "float32"
    element_count = batch
    for d in inputs.shape:
        element_count = element_count * d
    return Workload(name=spec.name, batch=batch, ops=g.ops, input_bytes=element_count * inputs.element_bytes,
                    description=f"{spec.description}; input {batch}x{sample} {dtype}", dataflow=g.dataflow)


def _smallest_input(spec: ModelSpec) -> int:
    """Image side of the smallest input the convolutions and pools leave at least one pixel of."""
    for size in range(1, MAX_PROBE_SIZE + 1):
        try:
            spec.build(Graph(spec.name, 1, (spec.in_channels, size, size)), spec.num_classes)
        except ShapeError:
            continue
        return size
    raise ShapeError(f"{spec.name}: no input up to {MAX_PROBE_SIZE} pixels fits")


def build_module(name: str, input_size: int | None = None, num_classes: int | None = None,
                 seq_len: int | None = None):
    """The model as a torch nn.Module (our own implementation; random initialisation, train mode).

    Build it under `with torch.device('meta'):` to allocate no weights. CNNs accept any input size that
    survives their strides (adaptive pooling before the classifier); the MLP's first layer depends on it.
    """
    spec = get_model(name)
    inputs = _inputs(spec, input_size, num_classes, seq_len)
    module_name, class_name, kwargs = spec.module
    try:
        mod = importlib.import_module(f"roofline.workload.zoo.modules.{module_name}")
    except ImportError as exc:
        if exc.name == "torch":
            raise MissingDependency("building a torch module needs torch: pip install 'roofline[torch]'") from None
        raise
    kwargs = dict(kwargs)
    if spec.family != "text":
        kwargs["num_classes"] = inputs.num_classes
    if spec.family == "mlp":
        kwargs["input_size"] = inputs.shape[-1]
    return getattr(mod, class_name)(**kwargs)


def example_input(name: str, batch: int, input_size: int | None = None, seq_len: int | None = None):
    """A CPU tensor the module accepts: standard-normal float32 images, or uniform random int64 token ids
    (seeded, so runs are repeatable)."""
    try:
        import torch
    except ImportError:
        raise MissingDependency("example inputs are torch tensors: pip install 'roofline[torch]'") from None
    spec = get_model(name)
    _check_batch(batch)
    inputs = _inputs(spec, input_size, None, seq_len)
    generator = torch.Generator().manual_seed(0)
    if spec.family == "text":
        return torch.randint(0, spec.vocab_size, (batch, *inputs.shape), generator=generator, dtype=torch.int64)
    return torch.randn((batch, *inputs.shape), generator=generator, dtype=torch.float32)

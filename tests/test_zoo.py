"""The model zoo against independent references: torchvision's published parameter and multiply-add counts,
closed forms for the transformers (arithmetic in the comments), torch's own FLOP counter run on our torch
modules, and the tracer's view of those modules (a second route to the same ops)."""

import subprocess
import sys
from dataclasses import replace

import pytest

from roofline.errors import RooflineError, ShapeError, UnknownName
from roofline.workload.zoo import build_workload, get_model, list_models

ALL = [spec.name for spec in list_models()]
VISION = [spec.name for spec in list_models() if spec.family == "vision"]
GEMM_LIKE = ("conv2d", "gemm")


def small(name: str) -> dict:
    """Options that keep torch runs quick: 64-pixel images, 32-token sequences (the MLP keeps 28x28)."""
    family = get_model(name).family
    return {"seq_len": 32} if family == "text" else {"input_size": 64} if family == "vision" else {}


def macs(workload) -> int:
    """Multiply-adds of the convolutions and linear layers, through their GEMM views (2 FLOPs per MAC)."""
    return sum(v.flops for op in workload.ops if op.kind in GEMM_LIKE for v in op.gemm_views("forward")) // 2


@pytest.mark.parametrize("name", VISION)
def test_vision_models_match_torchvision_published_counts(name):
    ref = get_model(name).reference
    wl = build_workload(name, 1)
    # torchvision prints num_params exactly and GFLOPS (multiply-adds) to two decimals at 224x224
    assert abs(wl.params() - ref.params) <= ref.params_step / 2
    assert abs(macs(wl) - ref.macs) <= ref.macs_step / 2
    assert ref.source.startswith(("https://docs.pytorch.org/vision/", "https://huggingface.co/lucid-dl/"))


def test_bert_base_counts_closed_form():
    wl = build_workload("bert-base", 1)  # sequence of 128 tokens
    # embeddings (30522 + 512 + 2) x 768 + LayerNorm 2 x 768                               = 23,837,184
    # layer: q, k, v, o 4 x (768 x 768 + 768) = 2,362,368; FFN 768 x 3072 + 3072 = 2,362,368
    #        and 3072 x 768 + 768 = 2,360,064; two LayerNorms 3,072                         = 7,087,872
    # pooler 768 x 768 + 768                                                                = 590,592
    # 23,837,184 + 12 x 7,087,872 + 590,592                                                 = 109,482,240
    assert wl.params() == 109_482_240
    ref = get_model("bert-base").reference
    assert wl.params() == pytest.approx(ref.params, rel=0.005)  # Devlin et al.: "110M", a rounded figure
    # per layer: 4 x 128 x 768 x 768 + 2 x 128 x 768 x 3072 = 905,969,664 linear MACs, plus
    # attention Q K^T and P V 2 x 12 heads x 128 x 128 x 64 = 25,165,824 -> 931,135,488; x 12 = 11,173,625,856
    # pooler 768 x 768 = 589,824                                                  total 11,174,215,680
    attention = sum(v.flops for op in wl.ops if op.kind == "attention" for v in op.gemm_views("forward")) // 2
    assert macs(wl) + attention == 11_174_215_680
    # 128 int64 token ids
    assert wl.input_bytes == 128 * 8


def test_gpt2_counts_closed_form():
    wl = build_workload("gpt2", 1)  # sequence of 128 tokens
    # wte 50257 x 768 + wpe 1024 x 768 = 39,383,808; layer: c_attn 768 x 2304 + 2304 = 1,771,776,
    # c_proj 590,592, c_fc 2,362,368, mlp c_proj 2,360,064, two LayerNorms 3,072 = 7,087,872; ln_f 1,536;
    # lm_head shares wte's matrix: 39,383,808 + 12 x 7,087,872 + 1,536                     = 124,439,808
    assert wl.params() == 124_439_808
    ref = get_model("gpt2").reference
    assert wl.params() == pytest.approx(ref.params, rel=0.005)  # "124M parameters"
    # per token and layer 768 x (2304 + 768 + 3072) + 3072 x 768 = 7,077,888; x 128 tokens x 12 layers
    # = 10,871,635,968; lm_head 128 x 768 x 50257 = 4,940,464,128                    total 15,812,100,096
    assert macs(wl) == 15_812_100_096


def test_bert_large_counts_closed_form():
    wl = build_workload("bert-large", 1)  # sequence of 128 tokens
    # embeddings (30522 + 512 + 2) x 1024 + LayerNorm 2 x 1024                             = 31,795,200
    # layer: q, k, v, o 4 x (1024 x 1024 + 1024) = 4,198,400; FFN 1024 x 4096 + 4096 = 4,198,400
    #        and 4096 x 1024 + 1024 = 4,195,328; two LayerNorms 4,096                       = 12,596,224
    # pooler 1024 x 1024 + 1024                                                             = 1,049,600
    # 31,795,200 + 24 x 12,596,224 + 1,049,600                                              = 335,141,888
    assert wl.params() == 335_141_888
    ref = get_model("bert-large").reference
    assert abs(wl.params() - ref.params) <= ref.params_step / 2  # Devlin et al.: "340M", to tens of millions
    # per layer: 4 x 128 x 1024^2 + 2 x 128 x 1024 x 4096 = 1,610,612,736 linear MACs, plus attention
    # Q K^T and P V 2 x 16 heads x 128 x 128 x 64 = 33,554,432 -> 1,644,167,168; x 24 = 39,460,012,032
    # pooler 1024 x 1024 = 1,048,576                                              total 39,461,060,608
    attention = sum(v.flops for op in wl.ops if op.kind == "attention" for v in op.gemm_views("forward")) // 2
    assert macs(wl) + attention == 39_461_060_608


def test_bert_large_pretraining_counts_closed_form():
    wl = build_workload("bert-large-pretraining", 1)  # sequence of 128 tokens
    # BertModel 335,141,888; MLM transform dense 1024 x 1024 + 1024 = 1,049,600 and LayerNorm 2,048; the decoder
    # shares the word embedding's 30522 x 1024 matrix and has its own bias of 30,522; next-sentence head
    # 1024 x 2 + 2 = 2,050: 335,141,888 + 1,049,600 + 2,048 + 30,522 + 2,050               = 336,226,108
    assert wl.params() == 336_226_108
    # BertModel's 39,461,060,608 MACs, the transform 128 x 1024^2 = 134,217,728, the decoder over every
    # position 128 x 1024 x 30522 = 4,000,579,584, the next-sentence head 1024 x 2 = 2,048 -> 43,595,859,968
    attention = sum(v.flops for op in wl.ops if op.kind == "attention" for v in op.gemm_views("forward")) // 2
    assert macs(wl) + attention == 43_595_859_968
    assert [op.kind for op in wl.ops][-1] == "loss"


@pytest.mark.parametrize(("name", "layers", "hidden", "params"), [
    # Hugging Face's model cards: "355M", "774M", "1.5B" parameters
    ("gpt2-medium", 24, 1024, 354_823_168),
    ("gpt2-large", 36, 1280, 774_030_080),
    ("gpt2-xl", 48, 1600, 1_557_611_200),
])
def test_gpt2_family_counts_closed_form(name, layers, hidden, params):
    wl = build_workload(name, 1)  # sequence of 128 tokens
    # wte 50257 x h + wpe 1024 x h; a block: c_attn h x 3h + 3h, c_proj h x h + h, c_fc h x 4h + 4h,
    # mlp c_proj 4h x h + h, two LayerNorms 4h = 12 h^2 + 13 h; ln_f 2h; lm_head tied to wte
    # e.g. gpt2-large: 51,281 x 1280 + 36 x (12 x 1280^2 + 13 x 1280) + 2,560 = 774,030,080
    assert params == 51_281 * hidden + layers * (12 * hidden**2 + 13 * hidden) + 2 * hidden
    assert wl.params() == params
    ref = get_model(name).reference
    assert abs(wl.params() - ref.params) < ref.params_step  # the cards round ("355M") or truncate ("1.5B")
    # MACs per token: 12 h^2 per block and h x 50257 for the lm_head, over 128 tokens
    assert macs(wl) == 128 * (layers * 12 * hidden**2 + hidden * 50_257)


def test_opt_counts_closed_form():
    wl = build_workload("opt-1.3b", 1)  # sequence of 128 tokens
    # embed_tokens 50272 x 2048 = 102,957,056; embed_positions (2048 + 2) x 2048 = 4,198,400; a layer: q, k, v,
    # out_proj 4 x (2048^2 + 2048) = 16,785,408, fc1 2048 x 8192 + 8192 = 16,785,408, fc2 8192 x 2048 + 2048 =
    # 16,779,264, two LayerNorms 8,192 = 50,358,272; final LayerNorm 4,096; lm_head tied:
    # 102,957,056 + 4,198,400 + 24 x 50,358,272 + 4,096                                     = 1,315,758,080
    assert wl.params() == 1_315_758_080
    ref = get_model("opt-1.3b").reference
    assert abs(wl.params() - ref.params) < ref.params_step  # the model card's "1.3B"
    # MACs per token: 24 x (4 x 2048^2 + 2 x 2048 x 8192) + 2048 x 50272 (lm_head), over 128 tokens
    assert macs(wl) == 128 * (24 * (4 * 2048**2 + 2 * 2048 * 8192) + 2048 * 50_272)
    # the query is scaled by a kernel of its own in every layer, and attention drops nothing (attention_dropout 0)
    assert sum(op.name.endswith("self_attn.mul") for op in wl.ops) == 24
    assert all(op.dropout_p == 0 for op in wl.ops if op.kind == "attention")


def test_mlp_counts_closed_form():
    wl = build_workload("mlp", 1)
    # 512 x 2048 + 2048 = 1,050,624; 2048 x 512 + 512 = 1,049,088; 512 x 1 + 1 = 513
    assert wl.params() == 2_100_225
    # 512 x 2048 + 2048 x 512 + 512 x 1 = 1,048,576 + 1,048,576 + 512
    assert macs(wl) == 2_097_664
    # 512 float32 features
    assert wl.input_bytes == 512 * 4


@pytest.mark.parametrize("name", ALL)
def test_module_parameters_equal_workload_parameters(name):
    torch = pytest.importorskip("torch")
    from roofline.workload.zoo import build_module

    with torch.device("meta"):
        module = build_module(name)
    # parameters() yields a shared tensor once: GPT-2's tied lm_head is not counted twice
    assert sum(p.numel() for p in module.parameters()) == build_workload(name, 1).params()


@pytest.mark.parametrize("name", ALL)
def test_torch_flop_counter_agrees(name):
    """FlopCounterMode counts convolutions and matrix products as 2 x MACs and attention through the math
    backend's two batched products, the full square even when causal; we count the causal half, so the
    square is rebuilt from the attention op's shape (4 b h L S d) for the comparison."""
    torch = pytest.importorskip("torch")
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from roofline.workload.zoo import build_module, example_input

    with torch.device("meta"):
        module = build_module(name, **small(name)).eval()
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        module(example_input(name, 2, **small(name)).to("meta"))
    wl = build_workload(name, 2, **small(name))
    attention = [op for op in wl.ops if op.kind == "attention"]
    square = sum(4 * op.batch * op.heads * op.seq_q * op.seq_kv * op.head_dim for op in attention)
    assert counter.get_total_flops() == 2 * macs(wl) + square
    for op in attention:
        views = sum(v.flops for v in op.gemm_views("forward"))
        full = 4 * op.batch * op.heads * op.seq_q * op.seq_kv * op.head_dim
        if op.causal:
            # 32 x 33 / 2 = 528 of 1024 scores kept; each product rounds up to whole rows (17 of 32)
            assert full / 2 < views <= full * 17 / 32
        else:
            assert views == full


@pytest.mark.parametrize("name", ALL)
def test_forward_flops_are_linear_in_batch(name):
    one, eight = build_workload(name, 1), build_workload(name, 8)
    assert eight.flops() == 8 * one.flops()
    assert macs(eight) == 8 * macs(one)
    assert eight.params() == one.params()
    assert eight.input_bytes == 8 * one.input_bytes


@pytest.mark.parametrize("name", ALL)
def test_symbolic_batch_matches_numeric(name):
    sympy = pytest.importorskip("sympy")
    batch = sympy.Symbol("B", positive=True, integer=True)
    wl, four = build_workload(name, batch), build_workload(name, 4)
    for pass_ in ("forward", "backward_input", "backward_weight"):
        assert sympy.expand(wl.flops(pass_)).subs(batch, 4) == four.flops(pass_)
    assert sympy.sympify(wl.input_bytes).subs(batch, 4) == four.input_bytes
    assert wl.params() == four.params()


@pytest.mark.parametrize("name", ALL)
def test_backward_of_matrix_products_is_twice_forward(name):
    """dX and dW are each a product the size of the forward one; the bias gradient (a sum of dY, one add per
    output element) mirrors the forward's bias add once. The first convolution's input needs no gradient in
    training, but the workload keeps its backward_input: dropping it is the step model's choice, not the zoo's."""
    for op in build_workload(name, 2).ops:
        if op.kind in GEMM_LIKE:
            bias = op.output_elements() if op.bias else 0
            product = op.flops("forward") - bias
            assert op.flops("backward_input") + op.flops("backward_weight") == 2 * product + bias, op.name


@pytest.mark.parametrize("name", ALL)
def test_traced_module_has_the_same_ops(name):
    """The tracer names ops after the modules that made them; the builders mirror the modules' forwards."""
    torch = pytest.importorskip("torch")
    from roofline.workload.trace import trace_module
    from roofline.workload.zoo import build_module, example_input

    with torch.device("meta"):
        module = build_module(name, **small(name))
    traced = trace_module(module, tuple(example_input(name, 2, **small(name)).shape))
    built = build_workload(name, 2, **small(name))
    # a language model's builder ends with its training loss, which the module's forward (logits) leaves out
    losses = [op for op in built.ops if op.kind == "loss"]
    assert len(losses) == (name.startswith(("gpt2", "opt")) or name.endswith("-pretraining"))
    built = replace(built, ops=[op for op in built.ops if op.kind != "loss"],
                    dataflow=replace(built.flow(), reads={k: v for k, v in built.flow().reads.items()
                                                          if k not in {op.name for op in losses}}))
    assert traced.unsupported == {}
    assert [(op.name, op.kind) for op in traced.ops] == [(op.name, op.kind) for op in built.ops]
    assert traced.flops() == built.flops()
    assert traced.input_bytes == built.input_bytes
    assert traced.params() == built.params()  # GPT-2's lm_head shares wte's weight: counted once by both
    # what each op reads and which write in place, from the tensors' storages in the trace: the builders'
    # hand-kept names agree (eval mode returns dropout's input itself, so dropouts are read through)
    assert _resolved_flow(built) == _resolved_flow(traced)


def _resolved_flow(workload) -> tuple[dict[str, tuple[str, ...]], frozenset[str]]:
    flow = workload.flow()
    dropouts = {op.name for op in workload.ops if op.kind == "dropout"}

    def through(name: str) -> str:
        while name in dropouts:
            name = flow.reads[name][0]
        return name

    reads = {name: tuple(dict.fromkeys(through(r) for r in rs)) for name, rs in flow.reads.items()
             if name not in dropouts}
    return reads, flow.inplace - dropouts


def test_layer_names_follow_the_modules():
    names = [op.name for op in build_workload("resnet18", 1).ops]
    assert names[:4] == ["conv1", "bn1", "relu", "maxpool"]
    # BasicBlock calls its ReLU module twice; the residual add is the block's own
    assert names[names.index("layer1.0.add") - 2:names.index("layer1.0.add") + 2] == [
        "layer1.0.conv2", "layer1.0.bn2", "layer1.0.add", "layer1.0.relu#2"]
    assert "layer2.0.downsample.0" in names and names[-2:] == ["flatten", "fc"]
    mobilenet = [op.name for op in build_workload("mobilenetv3", 1).ops]
    assert mobilenet[:3] == ["features.0.0", "features.0.1", "features.0.2"]
    assert "features.4.block.2.scale_activation" in mobilenet and "features.2.add" not in mobilenet


def test_names_are_case_insensitive_with_aliases():
    assert get_model("ResNet50").name == "resnet50"
    for alias in ("mobilenetv3", "mobilenet_v3_large", "mobilenetv3_large", "MobileNetV3-Large"):
        assert get_model(alias).name == "mobilenetv3-large"
    assert len({s.name for s in list_models()}) == len(list_models()) == 17
    assert {s.family for s in list_models()} == {"vision", "mlp", "text"}


def test_unknown_model_suggests_the_closest():
    with pytest.raises(UnknownName, match=r"unknown model 'resnet5' \(did you mean: resnet50, "):
        get_model("resnet5")
    with pytest.raises(UnknownName):
        build_workload("notanet", 1)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"name": "vgg16", "batch": 1, "input_size": 16}, "smallest input vgg16 accepts is 32"),
    # torchvision's model pages give min_size 32 for vgg16 and 63 for alexnet
    ({"name": "alexnet", "batch": 1, "input_size": 62}, "smallest input alexnet accepts is 63"),
    ({"name": "resnet50", "batch": 0}, "positive integer"),
    ({"name": "resnet50", "batch": 2.5}, "positive integer"),
    ({"name": "bert-base", "batch": 1, "seq_len": 513}, "1..512"),
    ({"name": "gpt2", "batch": 1, "seq_len": 1025}, "1..1024"),
    ({"name": "resnet50", "batch": 1, "input_size": 0}, "must be positive"),
])
def test_bad_shapes_are_one_line_shape_errors(kwargs, message):
    with pytest.raises(ShapeError, match=message) as info:
        build_workload(**kwargs)
    assert "\n" not in str(info.value)


def test_vgg16_smallest_input_is_two_to_the_fifth():
    # five 2x2 max pools without padding: 32 -> 16 -> 8 -> 4 -> 2 -> 1, and 31 leaves 0 at the fifth
    build_workload("vgg16", 1, input_size=32)
    with pytest.raises(ShapeError):
        build_workload("vgg16", 1, input_size=31)


def test_options_of_the_other_family_are_refused():
    with pytest.raises(RooflineError, match="--input-size"):
        build_workload("resnet50", 1, seq_len=64)
    with pytest.raises(RooflineError, match="--seq-len"):
        build_workload("gpt2", 1, input_size=224)


def test_input_bytes_and_options():
    # 2 x 3 x 224 x 224 float32 images
    assert build_workload("resnet50", 2).input_bytes == 2 * 3 * 224 * 224 * 4
    # 4 x 64 int64 token ids
    assert build_workload("gpt2", 4, seq_len=64).input_bytes == 4 * 64 * 8
    # num_classes changes only the last Linear: 2048 x (10 - 1000) weights and (10 - 1000) biases
    assert build_workload("resnet50", 1).params() - build_workload("resnet50", 1, num_classes=10).params() == (
        2048 * 990 + 990)


def test_example_inputs_run_the_modules_on_cpu():
    torch = pytest.importorskip("torch")
    from roofline.workload.zoo import build_module, example_input

    images = example_input("mobilenetv3-small", 2, input_size=32)
    assert images.dtype == torch.float32 and tuple(images.shape) == (2, 3, 32, 32)
    with torch.no_grad():
        assert tuple(build_module("mobilenetv3-small", num_classes=7).eval()(images).shape) == (2, 7)
        assert tuple(build_module("mlp")(example_input("mlp", 3)).shape) == (3, 1)
    ids = example_input("bert-base", 2, seq_len=16)
    assert ids.dtype == torch.int64 and tuple(ids.shape) == (2, 16) and int(ids.max()) < 30522


def test_zoo_workloads_do_not_import_torch_or_sympy():
    code = ("import sys; from roofline.workload.zoo import build_workload, list_models\n"
            "[build_workload(s.name, 1) for s in list_models()]\n"
            "print('torch' in sys.modules, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]

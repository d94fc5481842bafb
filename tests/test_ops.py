"""The op IR against closed forms written out by hand (the arithmetic is in the comments)."""

import pytest
import sympy

from roofline.workload import ops
from roofline.workload.ops import PASSES


def total(op, pass_, element_bytes=4):
    return op.flops(pass_), op.bytes(pass_, element_bytes, element_bytes)


def test_resnet_stem_conv_counts():
    # conv1 of ResNet: 3 -> 64, 7x7, stride 2, pad 3 on 224x224: output (224 + 6 - 7) // 2 + 1 = 112.
    conv = ops.Conv2d("conv1", n=1, c=3, h=224, w=224, k=64, r=7, s=7, stride=2, pad=3, bias=False)
    assert (conv.p, conv.q) == (112, 112)
    # MACs = 112 * 112 * 64 * 3 * 7 * 7 = 118,013,952 (torchvision's per-layer figure for resnet conv1).
    assert conv.flops("forward") == 2 * 118_013_952
    assert conv.params() == 64 * 3 * 7 * 7 == 9408
    # fp32 bytes: input 3*224*224 + output 64*112*112 + weights 9408, each 4 B.
    assert conv.bytes("forward", 4, 4) == 4 * (150_528 + 802_816 + 9_408)


@pytest.mark.parametrize("stride,groups", [(1, 1), (2, 1), (1, 32), (2, 4)])
def test_conv_backward_is_twice_forward(stride, groups):
    # dX and dW each take one multiply-add per forward multiply-add: n k p q (c/g) r s of them.
    conv = ops.Conv2d("c", n=8, c=32, h=28, w=28, k=64, r=3, s=3, stride=stride, pad=1, groups=groups, bias=False)
    fwd = conv.flops("forward")
    assert conv.flops("backward_input") + conv.flops("backward_weight") == 2 * fwd
    # The weight-gradient GEMM view holds exactly the forward's MACs.
    assert conv.gemm_views("backward_weight")[0].flops == fwd


def test_linear_backward_and_bias():
    lin = ops.Linear("fc", batch=32, in_features=2048, out_features=1000)
    # forward 2 * 32 * 2048 * 1000 = 131,072,000 plus 32 * 1000 bias adds
    assert lin.flops("forward") == 131_072_000 + 32_000
    # dX = dY W: 2 * 32 * 1000 * 2048; dW = dY^T X: the same, plus the bias gradient's 32 * 1000 adds
    assert lin.flops("backward_input") == 131_072_000
    assert lin.flops("backward_weight") == 131_072_000 + 32_000
    assert lin.params() == 2048 * 1000 + 1000


def test_gemm_of_two_activations_has_two_backward_products():
    g = ops.Gemm("scores", m=128, n=128, k=64, count=12)
    assert g.flops("forward") == 2 * 128 * 128 * 64 * 12
    assert g.flops("backward_input") == 2 * g.flops("forward")
    assert g.flops("backward_weight") == 0 and g.params() == 0


def test_depthwise_conv_intensity_is_low():
    # Depthwise 3x3 on 64 channels of 56x56, fp32: 2 * 9 FLOPs per output element over about 2 x 4 B moved per
    # element (in + out) -> about 18 / 8 = 2.25 FLOP/B, whatever the channel count.
    dw = ops.Conv2d("dw", n=1, c=64, h=56, w=56, k=64, r=3, s=3, pad=1, groups=64, bias=False)
    flops, moved = total(dw, "forward")
    assert flops == 2 * 9 * 64 * 56 * 56
    assert moved == 4 * (2 * 64 * 56 * 56 + 64 * 9)
    assert 2.2 < flops / moved < 2.3


def test_elementwise_and_activation_bytes():
    n = 1 << 20
    add = ops.Elementwise("add", numel=n, inputs=2, op="add")
    assert total(add, "forward") == (n, 3 * n * 4)  # two reads and one write of n fp32 elements
    assert total(add, "backward_input") == (0, 0)  # autograd hands dY to both inputs
    mul = ops.Elementwise("mul", numel=n, inputs=2, op="mul")
    assert total(mul, "backward_input") == (2 * n, 5 * n * 4)  # read dY, a, b; write da, db
    assert mul.bytes("backward_input", 2, 2) == 5 * n * 2  # the same elements at 2 B in fp16
    relu = ops.Activation("relu", numel=n, fn="relu")
    assert total(relu, "forward") == (n, 2 * n * 4)
    assert total(relu, "backward_input")[1] == 3 * n * 4  # dY and the saved tensor in, dX out


def test_norm_bytes_and_params():
    bn = ops.BatchNorm("bn", n=8, c=64, spatial=56 * 56)
    numel = 8 * 64 * 56 * 56
    assert bn.params() == 2 * 64
    # training: statistics pass reads x, normalize pass reads x and writes y; gamma and beta
    assert bn.bytes("forward", 2, 2) == 2 * (3 * numel + 2 * 64)
    # reduce pass reads dY and x, elementwise pass reads them again and writes dX; gamma and beta
    assert bn.bytes("backward_input", 2, 2) == 2 * (5 * numel + 2 * 64)
    # eval mode: x in, y out
    assert bn.for_inference().bytes("forward", 2, 2) == 2 * (2 * numel + 2 * 64)
    ln = ops.LayerNorm("ln", rows=128, features=768)
    assert ln.params() == 2 * 768 and ln.output_elements() == 128 * 768


def test_pooling_counts():
    # MaxPool 3x3 stride 2 pad 1 on 112x112: (112 + 2 - 3) // 2 + 1 = 56.
    pool = ops.Pool2d("maxpool", n=1, c=64, h=112, w=112, r=3, s=3, stride=2, pad=1)
    assert (pool.p, pool.q) == (56, 56)
    assert pool.flops("forward") == 64 * 56 * 56 * 9
    gap = ops.AdaptiveAvgPool2d("avgpool", n=1, c=2048, h=7, w=7)
    assert gap.output_elements() == 2048
    assert gap.bytes("forward", 4, 4) == 4 * (2048 * 49 + 2048)


def test_attention_counts_and_causal_half():
    a = ops.Attention("attn", batch=2, heads=12, seq_q=128, seq_kv=128, head_dim=64)
    # Q K^T and P V: 2 products of 2 * 128 * 128 * 64 FLOPs per (batch, head) pair, 24 pairs.
    assert sum(v.flops for v in a.gemm_views("forward")) == 4 * 24 * 128 * 128 * 64
    causal = ops.Attention("attn", batch=2, heads=12, seq_q=128, seq_kv=128, head_dim=64, causal=True)
    # Lower triangle with the diagonal: 128 * 129 / 2 = 8256 of 16384 scores.
    assert causal.kept == 8256
    assert causal.flops("forward") < 0.51 * a.flops("forward")
    # Flash backward: five products the size of one forward product = 2.5 x the forward products.
    assert sum(v.flops for v in a.gemm_views("backward_input")) == pytest.approx(
        2.5 * sum(v.flops for v in a.gemm_views("forward")))


def test_embedding_gathers_rows_and_scatters_a_full_gradient():
    emb = ops.Embedding("wte", num_embeddings=50257, dim=768, tokens=4 * 128)
    assert emb.params() == 50257 * 768
    assert emb.traffic("forward").weights_read == 512 * 768  # only the rows looked up
    assert emb.traffic("backward_weight").weights_written == 50257 * 768  # dense gradient of the whole table
    assert emb.flops("backward_input") == 0


def test_reshape_is_free_and_eval_mode_variants():
    assert ops.Reshape("flatten", numel=100).is_free
    drop = ops.Dropout("drop", numel=1000, p=0.2)
    assert drop.for_inference() is None
    relu = ops.Activation("a", numel=10, fn="relu")
    assert relu.for_inference() is relu
    bn = ops.BatchNorm("bn", n=2, c=8, spatial=16)
    # training: a statistics pass reads x, then the normalize pass reads x and writes y (3 x 256 elements);
    # eval: running statistics, one pass (2 x 256)
    assert bn.traffic("forward").activations_read + bn.traffic("forward").activations_written == 3 * 256
    inference = bn.for_inference()
    assert inference.traffic("forward").activations_read + inference.traffic("forward").activations_written == 512


def test_counts_are_formulas_in_the_batch():
    b = sympy.Symbol("B", positive=True)
    conv = ops.Conv2d("c", n=b, c=64, h=56, w=56, k=64, r=3, s=3, pad=1)
    for pass_ in PASSES:
        assert sympy.expand(conv.flops(pass_)).subs(b, 8) == ops.Conv2d(
            "c", n=8, c=64, h=56, w=56, k=64, r=3, s=3, pad=1).flops(pass_)


@pytest.mark.parametrize("make", [
    lambda: ops.Conv2d("c", n=1, c=3, h=4, w=4, k=8, r=7, s=7),          # kernel larger than the input
    lambda: ops.Conv2d("c", n=1, c=6, h=8, w=8, k=8, r=3, s=3, groups=4),  # channels not divisible by groups
    lambda: ops.Linear("l", batch=0, in_features=4, out_features=4),
    lambda: ops.Activation("a", numel=4, fn="swish2"),
])
def test_impossible_shapes_raise(make):
    with pytest.raises(ValueError):
        make()


def test_the_stem_rule_is_few_input_channels_per_group():
    from roofline.model.costmodel import conv_kind
    from roofline.workload.ops.conv import STEM_MAX_INPUT_CHANNELS

    assert STEM_MAX_INPUT_CHANNELS == 4  # RGB (3) and RGBA (4) first layers
    rgb = ops.Conv2d("stem", n=1, c=3, h=224, w=224, k=64, r=7, s=7, stride=2, pad=3)
    mid = ops.Conv2d("3x3", n=1, c=64, h=56, w=56, k=64, r=3, s=3, pad=1)
    dw = ops.Conv2d("dw", n=1, c=64, h=56, w=56, k=64, r=3, s=3, pad=1, groups=64)
    assert rgb.stem and not mid.stem
    assert [conv_kind(o) for o in (rgb, mid, dw)] == ["stem", "3x3", "depthwise"]

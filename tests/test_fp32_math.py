"""Which fp32 products run on TF32 tensor cores (PyTorch's switches by version and container), and the eager
attention kernels, each against the published defaults and closed forms."""

from __future__ import annotations

import pytest

from roofline.errors import RooflineError
from roofline.hardware.load import SHIPPED_DIR, load_profile
from roofline.model.fp32_math import get_fp32_math, pytorch_fp32_math
from roofline.model.step import StepOptions, predict_step
from roofline.workload.ops import Attention, Conv2d, Linear, Workload
from roofline.workload.ops.attention import eager_attention_ops, with_eager_attention
from roofline.workload.precision import get_precision


@pytest.mark.parametrize(("version", "ngc", "mode"), [
    ("1.6", False, "ieee"),  # TF32 arrived in 1.7
    ("1.7", False, "tf32"),  # 1.7-1.11: cuda.matmul.allow_tf32 and cudnn.allow_tf32 both default True
    ("1.11.0", False, "tf32"),
    ("1.12", False, "pytorch"),  # 1.12 turned the matmul default off, convolutions stay TF32
    ("2.4.0", False, "pytorch"),
    ("1.13", True, "tf32"),  # NGC: ENV TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1
    ("1.6", True, "tf32"),  # NGC 20.06 shipped a 1.6 pre-release with TF32 for the A100
])
def test_pytorch_defaults_by_version_and_container(version, ngc, mode):
    assert pytorch_fp32_math(version, ngc).name == mode


def test_unknown_mode_and_version_are_one_line_errors():
    with pytest.raises(RooflineError, match="expected one of pytorch, tf32, ieee"):
        get_fp32_math("fast")
    with pytest.raises(RooflineError, match="expected MAJOR"):
        pytorch_fp32_math("latest")


def _step(profile: str, op, mode: str):
    hw = load_profile(SHIPPED_DIR / "gpu" / f"{profile}.yaml")
    wl = Workload(name="one", batch=1, ops=[op], input_bytes=0)
    return predict_step(wl, hw, get_precision("fp32"), StepOptions(runtime=None, include_transfer=False,
                                                                  fp32_math=mode))


LINEAR = Linear("fc", batch=8192, in_features=8192, out_features=8192, bias=False)
CONV = Conv2d("conv", n=256, c=256, h=56, w=56, k=256, r=3, s=3, pad=1, bias=False)


def test_a100_products_follow_the_mode():
    # A100: 19.18e12 fp32 CUDA-core FLOP/s (the profile's published sgemm measurement; 19.5e12 on the datasheet);
    # TF32 has no figure of its own, so its 156e12 dense tensor FLOP/s sustain the board's published bf16 share of
    # its peak (no runtime named: no library ratio): the compute time of one product differs by that rate over
    # 19.18e12 between the paths (within the tile choice, which weighs L2 panel traffic)
    hw = load_profile(SHIPPED_DIR / "gpu" / "a100-sxm4-80gb.yaml")
    bf16 = hw.tensor_cores["bf16"]
    tf32_rate = 156e12 * bf16.sustained_flops_per_s.value / bf16.dense_flops_per_s.value
    ieee, tf32 = _step("a100-sxm4-80gb", LINEAR, "ieee"), _step("a100-sxm4-80gb", LINEAR, "tf32")
    assert ieee.ops[0].path == "CUDA cores fp32" and tf32.ops[0].path == "tensor cores tf32"
    assert ieee.ops[0].compute_s / tf32.ops[0].compute_s == pytest.approx(tf32_rate / 19.18e12, rel=1e-2)
    # PyTorch's default since 1.12: the matrix product stays IEEE, the convolution goes to TF32
    assert _step("a100-sxm4-80gb", LINEAR, "pytorch").ops[0].path == "CUDA cores fp32"
    assert _step("a100-sxm4-80gb", CONV, "pytorch").ops[0].path == "tensor cores tf32"
    assert _step("a100-sxm4-80gb", CONV, "ieee").ops[0].path == "CUDA cores fp32"


def test_volta_has_no_tf32_so_the_mode_changes_nothing():
    assert _step("v100-sxm2-16gb", LINEAR, "tf32").step_time_s == _step("v100-sxm2-16gb", LINEAR,
                                                                         "ieee").step_time_s


ATT = Attention("attn", batch=2, heads=12, seq_q=384, seq_kv=384, head_dim=64, dropout_p=0.1)
N = 2 * 12 * 384 * 384  # 3,538,944 scores
QKV = 2 * 12 * 384 * 64  # 589,824 elements in each of Q, K, V and the output


def test_eager_attention_moves_the_scores_through_memory():
    kernels = eager_attention_ops(ATT)
    assert [k.kind for k in kernels] == ["elementwise", "elementwise", "gemm", "elementwise", "elementwise",
                                         "softmax", "dropout", "elementwise", "gemm"]
    moved = sum(k.traffic("forward").activations_read + k.traffic("forward").activations_written for k in kernels)
    # Q and K^T copied out of their head-split views (torch.matmul's reshape: each read and written, 4 QKV);
    # Q K^T reads Q, K and writes N; scale and mask each read and write N; softmax reads and writes N; dropout
    # reads N, writes N and a 1-byte mask (N / 4 fp32 elements); V copied (2 QKV); P @ V reads N and V and
    # writes the output: 4 QKV + 2 QKV + N + 2N + 2N + 2N + 2.25N + 2 QKV + N + 2 QKV = 10.25 N + 10 QKV
    assert moved == pytest.approx(10.25 * N + 10 * QKV)
    # each copy is copied back in the backward: the gradients return to the projections' layout
    copies = [k for k in kernels if getattr(k, "op", "") == "copy"]
    assert [k.traffic("backward_input").activations_written for k in copies] == [QKV, QKV, QKV]
    # the same FLOPs in the two products as the fused kernel's: 4 b h L S d
    assert sum(k.flops("forward") for k in kernels if k.kind == "gemm") == 4 * N * 64
    # inference: no dropout kernel
    assert "dropout" not in [k.kind for k in eager_attention_ops(ATT.for_inference())]


def test_eager_workload_keeps_readers_and_the_fused_one_is_untouched():
    wl = Workload(name="att", batch=2, ops=[ATT, Linear("out", batch=2, in_features=768, out_features=768,
                                                       tokens=384)], input_bytes=0)
    eager = with_eager_attention(wl)
    assert [op.name for op in eager.ops][-2:] == ["attn", "out"]  # the last product keeps the name
    assert eager.flow().reads["attn"] == ("attn.dropout", "attn.v_copy")
    assert eager.flow().reads["attn.scores"] == ("attn.q_copy", "attn.k_copy")
    assert len(wl.ops) == 2


def test_the_mode_and_the_attention_path_are_user_options():
    from roofline import api

    ieee = api.predict("resnet50", gpu="a100-sxm4-80gb", batch=8, fp32_math="ieee").to_dict()
    default = api.predict("resnet50", gpu="a100-sxm4-80gb", batch=8).to_dict()
    assert ieee["step_time_s"] > default["step_time_s"]
    with pytest.raises(RooflineError, match="--fp32-math 'fast'"):
        api.predict("resnet50", gpu="a100-sxm4-80gb", fp32_math="fast")
    with pytest.raises(RooflineError, match="--attention 'flash'"):
        api.predict("bert-base", gpu="a100-sxm4-80gb", attention="flash")
    eager = api.predict("bert-base", gpu="a100-sxm4-80gb", batch=8, seq_len=384, attention="eager").to_dict()
    fused = api.predict("bert-base", gpu="a100-sxm4-80gb", batch=8, seq_len=384).to_dict()
    assert eager["step_time_s"] > fused["step_time_s"]
    assert any(row["op"] == "softmax" for row in eager["layers"])

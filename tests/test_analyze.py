"""`roofline analyze` and the ridge-crossing algebra, against hand arithmetic and sympy's own solver."""


import pytest
from cli_run import run_json

from cli import main
from roofline.advise import analyze
from roofline.workload.ops import Linear, Workload
from roofline.workload.precision import get_precision

FP16 = get_precision("fp16")
V100_RIDGE = 125e12 / 900e9  # fp16 tensor-core peak over HBM2 bandwidth, both from the V100 datasheet: 138.9 FLOP/B
V100_SUSTAINED_RIDGE = 97.36e12 / 846.5e9
"""The ridge analyze uses: the shipped profile's published measurements (a torch.matmul fp16 8192^3 on a
V100-SXM2-16GB, BabelStream's Triad on a V100's HBM2): 115.0 FLOP/B."""


def linear_model(batch):
    return Workload("fc", batch, [Linear("fc", batch=batch, in_features=4096, out_features=4096)], input_bytes=0)


def test_linear_crossing_matches_hand_algebra():
    # flops(B) = 2 x 4096^2 B + 4096 B (bias) = 33,558,528 B
    # bytes(B) = 2 B/element x (4096 B in + 4096 B out + 4096^2 + 4096 weights) = 16,384 B + 33,562,624
    # flops = R x bytes  ->  B* = R x 33,562,624 / (33,558,528 - R x 16,384)
    expected = V100_RIDGE * 33_562_624 / (33_558_528 - V100_RIDGE * 16_384)
    rows = analyze.layer_rows(linear_model(1), linear_model(2), FP16, False, V100_RIDGE)
    assert expected == pytest.approx(149.01, abs=0.01)
    assert rows[0]["crossing_batch"] == 150  # the first whole batch at or past 149.01
    # as B grows, intensity tends to 33,558,528 / 16,384 = 2048.25 FLOP/B, far above the ridge
    assert rows[0]["intensity_limit"] == pytest.approx(33_558_528 / 16_384)


def test_closed_form_agrees_with_sympy_solve():
    sym = analyze.symbolic_totals(linear_model, FP16, False)
    root = analyze.symbolic_root(sym, V100_RIDGE)
    one, two = analyze.totals(linear_model(1), FP16, False), analyze.totals(linear_model(2), FP16, False)
    flops = analyze.Affine(two["flops"] - one["flops"], 2 * one["flops"] - two["flops"])
    moved = analyze.Affine(two["bytes"] - one["bytes"], 2 * one["bytes"] - two["bytes"])
    assert analyze.ridge_root(flops, moved, V100_RIDGE) == pytest.approx(root, rel=1e-9)


def test_elementwise_never_crosses():
    from roofline.workload.ops import Elementwise

    def build(b):
        return Workload("add", b, [Elementwise("add", numel=1000 * b)], input_bytes=0)

    rows = analyze.layer_rows(build(1), build(2), FP16, False, V100_RIDGE)
    # 1 FLOP per 3 x 2 bytes at any batch: 1/6 FLOP/B, below every ridge
    assert rows[0]["crossing_batch"] is None
    assert rows[0]["intensity_limit"] == pytest.approx(1 / 6)


def test_analyze_resnet50_json(capsys):
    out = run_json(capsys, "analyze", "--model", "resnet50", "--batch", "1")
    t = out["totals"]
    assert {"flops", "macs", "params", "bytes", "activation_bytes"} <= set(t)
    # torchvision: 25,557,032 parameters, 4.09 GMACs at 224x224
    assert t["params"] == 25_557_032
    assert t["macs"] == pytest.approx(4.09e9, rel=0.01)
    assert sum(row["flops"] for row in out["layers"]) == pytest.approx(t["flops"])
    assert out["unsupported"] == {}


def test_analyze_training_counts_three_passes(capsys):
    infer = run_json(capsys, "analyze", "--model", "resnet18", "--batch", "2")["totals"]
    train = run_json(capsys, "analyze", "--model", "resnet18", "--batch", "2", "--train")["totals"]
    # conv and linear dominate; their two backward passes each cost a forward, so about 3x in all
    assert 2.8 < train["flops"] / infer["flops"] < 3.2
    assert train["activation_bytes"] > infer["activation_bytes"]


def test_analyze_with_device_reports_crossings(capsys):
    out = run_json(capsys, "analyze", "--model", "mlp", "--batch", "1", "--gpu", "v100", "--precision", "fp16",
                   "--symbolic")
    assert out["ridge_point"] == pytest.approx(V100_SUSTAINED_RIDGE)
    fc1 = next(r for r in out["layers"] if r["name"] == "fc1")
    # fc1: 512 -> 2048. flops = 2 x 512 x 2048 B + 2048 B = 2,099,200 B;
    # bytes = 2 x (512 B + 2048 B + 512 x 2048 + 2048) = 5,120 B + 2,101,248
    expected = V100_SUSTAINED_RIDGE * 2_101_248 / (2_099_200 - V100_SUSTAINED_RIDGE * 5_120)
    assert fc1["crossing_batch"] == -(-expected // 1)
    relu = next(r for r in out["layers"] if r["name"] == "relu1")
    assert relu["crossing_batch"] is None
    assert out["symbolic"]["flops"].endswith("*B") or "B" in out["symbolic"]["flops"]


@pytest.mark.parametrize("argv", [
    ["analyze", "--model", "resnet5"],
    ["analyze", "--model", "resnet50", "--batch", "0"],
    ["analyze", "--model", "vgg16", "--input-size", "8"],
    ["analyze", "--model", "resnet50", "--gpu", "v1OO"],
])
def test_bad_input_is_one_line_exit_2(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("roofline: error:") and "\n" not in err

"""The tracer: nn.Module -> op IR on the meta device, checked against closed forms, torch's own FLOP
counter and the zoo's hand-written workloads (two independent routes to the same counts)."""

import pytest

torch = pytest.importorskip("torch")

from roofline.errors import RooflineError  # noqa: E402
from roofline.workload.request import ModelRequest, workload_builder  # noqa: E402
from roofline.workload.trace import load_module, trace_module, trace_module_workload  # noqa: E402


def gemm_flops(workload) -> int:
    """FLOPs of the matrix products (conv, linear, matmul) through their GEMM views."""
    return sum(view.flops for op in workload.ops for view in op.gemm_views("forward"))


def by_name(workload):
    return {op.name: op for op in workload.ops}


def test_tiny_net_closed_forms():
    wl = trace_module_workload("trace_models:TinyNet", batch=2, input_shape=(1, 3, 16, 16))
    ops = by_name(wl)
    # conv 3->8, 3x3 on 2x3x16x16, pad 1: output 2x8x16x16; MACs = 2*8*16*16 * 3*3*3 = 110592 -> 221184 FLOPs
    assert sum(v.flops for v in ops["conv"].gemm_views("forward")) == 221184
    # proj 1x1 conv 8->8: MACs = 2*8*16*16 * 8 = 32768 -> 65536 FLOPs
    assert sum(v.flops for v in ops["proj"].gemm_views("forward")) == 65536
    # fc 8->10 on 2 rows: 2*10*8 MACs = 160 -> 320 FLOPs
    assert sum(v.flops for v in ops["fc"].gemm_views("forward")) == 320
    # params: conv 8*3*3*3 = 216, bn 2*8 = 16, proj 8*8+8 = 72, fc 8*10+10 = 90 -> 394
    assert wl.params() == 394
    assert ops["bn"].kind == "norm" and ops["relu"].kind == "activation" and ops["pool"].kind == "pool"
    # The residual add is made by TinyNet's own forward, so it is named after the root and the op.
    assert any(op.kind == "elementwise" for op in wl.ops)
    assert wl.unsupported == {}
    assert wl.batch == 2
    # input 2x3x16x16 float32 = 1536 elements x 4 bytes
    assert wl.input_bytes == 6144


def test_torch_flop_counter_agrees_on_matmuls():
    """torch.utils.flop_counter counts conv/mm/addmm as 2 x MACs, as we do; no bias or pointwise ops."""
    from torch.utils.flop_counter import FlopCounterMode
    from trace_models import TinyNet

    with torch.device("meta"):
        net = TinyNet().eval()
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        net(torch.empty(2, 3, 16, 16, device="meta"))
    wl = trace_module(net, (2, 3, 16, 16))
    assert gemm_flops(wl) == counter.get_total_flops()  # 221184 + 65536 + 320 = 287040


@pytest.mark.parametrize("ref", ["trace_models:TinyNet", "trace_models:tiny_factory", "trace_models:tiny_instance"])
def test_class_factory_and_instance_refs_agree(ref):
    wl = trace_module_workload(ref, batch=1, input_shape=(8, 3, 16, 16))
    # batch 1 replaces the leading 8: conv FLOPs are half of batch 2's 221184
    assert sum(v.flops for v in by_name(wl)["conv"].gemm_views("forward")) == 110592
    assert wl.params() == 394


def test_no_weights_allocated():
    module = load_module("trace_models:HugeNet")
    assert all(p.is_meta for p in module.parameters())
    wl = trace_module(module, (4, 100_000))
    # 100000 x 100000 weights + 100000 biases, held by no storage at all
    assert wl.params() == 100_000 * 100_000 + 100_000
    assert load_module("trace_models:tiny_instance").conv.weight.is_meta


def test_unmappable_ops_are_counted_not_dropped():
    wl = trace_module_workload("trace_models:CumsumNet", batch=3, input_shape=(1, 16))
    assert wl.unsupported == {"aten.cumsum": 2}
    assert [op.name for op in wl.ops if op.kind != "reshape"] == ["fc"]


def test_token_model_gets_int_ids_and_attention():
    wl = trace_module_workload("trace_models:TokenNet", batch=2, input_shape=(1, 12))
    kinds = [op.kind for op in wl.ops if not op.is_free]
    # reshape of the transposed attention output cannot be a view: torch copies it (an elementwise copy)
    assert kinds == ["embedding", "attention", "elementwise", "norm"]
    assert wl.input_bytes == 2 * 12 * 8  # int64 token ids
    # embedding 100 x 32 = 3200, LayerNorm 2 x 32 = 64
    assert wl.params() == 3264


def test_workload_builder_routes_module_refs():
    name, build = workload_builder(ModelRequest(model="trace_models:TinyNet", input_shape=(1, 3, 16, 16)))
    assert name == "trace_models:TinyNet"
    assert build(4).batch == 4


@pytest.mark.parametrize(("ref", "shape", "message"), [
    ("no_such_module_xyz:Net", (1, 3), "not importable"),
    ("trace_models:Missing", (1, 3), "has no attribute"),
    ("trace_models:NOT_A_MODULE", (1, 3), "not an nn.Module"),
    ("trace_models:not_a_module_factory", (1, 3), "not an nn.Module"),
    ("trace_models:TinyNet", None, "--input-shape"),
    ("trace_models:TinyNet", (1, 5, 16, 16), "failed"),
    ("trace_models", (1, 3), "package.module:attr"),
])
def test_user_errors_are_one_line(ref, shape, message):
    with pytest.raises(RooflineError, match=message) as info:
        trace_module_workload(ref, batch=1, input_shape=shape)
    assert "\n" not in str(info.value)


ZOO_CNNS = ["mobilenetv3", "mobilenetv3-small", "resnet18", "resnet50", "vgg16", "alexnet", "mlp"]


@pytest.mark.parametrize("name", ZOO_CNNS)
def test_traced_zoo_module_equals_zoo_workload(name):
    """The zoo's hand-built IR and the IR traced from its torch module agree; size 64 keeps it quick and
    the counts are formulas of shapes, so agreement at 64 is agreement at any size."""
    zoo = pytest.importorskip("roofline.workload.zoo")
    kwargs = {} if name == "mlp" else {"input_size": 64}
    expected = zoo.build_workload(name, 2, **kwargs)
    with torch.device("meta"):
        module = zoo.build_module(name, **kwargs)
    shape = (2, 512) if name == "mlp" else (2, 3, 64, 64)
    traced = trace_module(module, shape)
    assert traced.unsupported == {}
    assert traced.params() == expected.params()
    assert traced.flops() == pytest.approx(expected.flops(), rel=1e-3)
    assert gemm_flops(traced) == gemm_flops(expected)
    gemm_like = ("conv2d", "gemm")
    assert sum(op.kind in gemm_like for op in traced.ops) == sum(op.kind in gemm_like for op in expected.ops)


def test_importing_the_tracer_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, roofline.workload.trace; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_layers_are_named_by_owning_module():
    from torch import nn

    with torch.device("meta"):
        net = nn.Sequential(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()), nn.Flatten(), nn.ReLU())
    names = [op.name for op in trace_module(net, (1, 3, 8, 8)).ops]
    assert names == ["0.0", "0.1", "1", "2"]

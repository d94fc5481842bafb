"""How a product's operands are stored, against PyTorch itself: every matrix-product call autograd makes
(`aten.mm`, `addmm`, `bmm`, `baddbmm`), caught with a TorchDispatchMode, and for each the number of its two
operands whose reduction dimension does not have stride 1, against `GemmView.operands_across` of the same layer's
views. The operands' strides are what the library receives: a TF32 product with both stored across its reduction
runs slower (`roofline.model.costmodel._operand_layout_share`)."""

from __future__ import annotations

import pytest

from roofline.workload.ops.gemm import Gemm, Linear

torch = pytest.importorskip("torch")
F = torch.nn.functional
aten = torch.ops.aten
dispatch = pytest.importorskip("torch.utils._python_dispatch")


class _ProductOperands(dispatch.TorchDispatchMode):
    """Per matrix-product call, how many of its operands are read across their storage order."""

    def __init__(self) -> None:
        super().__init__()
        self.across: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        packet = func.overloadpacket
        if packet in (aten.mm, aten.bmm, aten.addmm, aten.baddbmm):
            a, b = args[-2:] if packet in (aten.mm, aten.bmm) else args[1:3]
            self.across.append(sum(1 for operand, reduction in ((a, -1), (b, -2))
                                   if operand.shape[reduction] > 1 and operand.stride(reduction) != 1))
        return func(*args, **(kwargs or {}))


def _across(run) -> list[int]:
    with _ProductOperands() as seen:
        run()
    return sorted(seen.across)


def _forward_and_backward(make):
    """(forward products, backward products) of `make()`'s output, each as sorted operand-across counts."""
    out = None

    def forward() -> None:
        nonlocal out
        out = make()

    forward_across = _across(forward)
    return forward_across, _across(lambda: out.backward(torch.randn_like(out)))


def _views(op, passes) -> list[int]:
    return sorted(v.operands_across for p in passes for v in op.gemm_views(p))


@pytest.mark.parametrize(("rows", "tokens", "inp", "out"), [(6, 1, 40, 24), (3, 5, 16, 48)])
def test_linear_views_match_autograds_products(rows: int, tokens: int, inp: int, out: int) -> None:
    x = torch.randn(rows, tokens, inp, requires_grad=True)
    weight = torch.randn(out, inp, requires_grad=True)
    bias = torch.randn(out, requires_grad=True)
    forward, backward = _forward_and_backward(lambda: F.linear(x, weight, bias))
    op = Linear("fc", batch=rows, in_features=inp, out_features=out, tokens=tokens)
    assert forward == _views(op, ["forward"]) == [0]
    assert backward == _views(op, ["backward_input", "backward_weight"]) == [1, 2]


def test_gpt2_conv1d_weight_views_match() -> None:
    """GPT-2's Conv1D stores its weight (in, out) and computes addmm(bias, x, weight)."""
    x = torch.randn(8, 16, requires_grad=True)
    weight = torch.randn(16, 32, requires_grad=True)
    forward, backward = _forward_and_backward(lambda: torch.addmm(torch.zeros(32), x, weight))
    op = Linear("c_fc", batch=8, in_features=16, out_features=32, weight_layout="in_out")
    assert forward == _views(op, ["forward"]) == [1]
    assert backward == _views(op, ["backward_input", "backward_weight"]) == [0, 2]


@pytest.mark.parametrize("b_layout", ["k_n", "n_k"])
def test_batched_product_views_match(b_layout: str) -> None:
    count, m, k, n = 4, 9, 12, 7
    a = torch.randn(count, m, k, requires_grad=True)
    stored = (torch.randn(count, k, n) if b_layout == "k_n" else torch.randn(count, n, k)).requires_grad_(True)
    b = stored if b_layout == "k_n" else stored.transpose(1, 2)
    forward, backward = _forward_and_backward(lambda: torch.bmm(a, b))
    op = Gemm("bmm", m=m, n=n, k=k, count=count, b_layout=b_layout)
    assert forward == _views(op, ["forward"])
    assert backward == _views(op, ["backward_input"])
    assert max(backward) == 2

"""Saved activations against PyTorch's autograd itself: the bytes autograd keeps for backward, counted with
`torch.autograd.graph.saved_tensors_hooks` (each storage once, parameters left out), against the memory model's
count for the same zoo model, batch and input. Dropout runs as on a GPU (`native_dropout`: a 1-byte bool mask;
CPU's F.dropout keeps a float32 noise tensor instead), attention as DeepLearningExamples' eager BERT computes it
(matmul, divide by sqrt(d), softmax, dropout, matmul) for the eager workload."""

from __future__ import annotations

import math

import pytest

from roofline.model.memory import saved_activation_elements
from roofline.workload.ops.attention import with_eager_attention
from roofline.workload.zoo import build_workload

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _gpu_like_dropout(x, p=0.5, training=True, inplace=False):
    return torch.native_dropout(x, p, training)[0] if training and p > 0 else x


def _eager_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **_):
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = scores + attn_mask
    return torch.matmul(F.dropout(torch.softmax(scores, dim=-1), p=dropout_p, training=True), v)


def _autograd_saved_bytes(module, x) -> int:
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    kept: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params and (t.is_floating_point() or t.dtype == torch.bool):
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x)
    return sum(kept.values())


@pytest.mark.parametrize(("name", "kwargs"), [
    ("resnet18", {"input_size": 64}),
    ("resnet50", {"input_size": 64}),   # the block input kept once by conv1 and the downsample conv
    ("mobilenetv3-small", {"input_size": 64}),   # in-place hardswish: its input kept apart from its output
    ("bert-base", {"seq_len": 32}),   # query, key and value keep their one input once
])
def test_saved_activations_match_autograd(name, kwargs, monkeypatch):
    from roofline.workload.zoo import build_module, example_input

    monkeypatch.setattr(F, "dropout", _gpu_like_dropout)
    monkeypatch.setattr(F, "scaled_dot_product_attention", _eager_attention)
    torch.manual_seed(0)
    module = build_module(name, **kwargs).train()
    measured = _autograd_saved_bytes(module, example_input(name, 2, **kwargs))
    workload = build_workload(name, 2, **kwargs)
    if name == "bert-base":
        workload = with_eager_attention(workload)
    # fp32: 4 bytes an element; dropout masks are counted by the model as a quarter element (1 byte)
    assert float(saved_activation_elements(workload)) * 4 == pytest.approx(measured, rel=0.05)

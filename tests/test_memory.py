"""The memory model against a Linear-only MLP computed by hand, and the largest batch that fits."""

from __future__ import annotations

import pytest

from roofline.model.memory import max_batch_that_fits, memory_breakdown
from roofline.workload.ops import Activation, Linear, Workload
from roofline.workload.precision import get_precision

# MLP 784 -> 512 -> relu -> 10 (MNIST-sized)
PARAMS = 784 * 512 + 512 + 512 * 10 + 10  # 401408 + 512 + 5120 + 10 = 407050


def mlp(batch: int) -> Workload:
    ops = [Linear("fc1", batch=batch, in_features=784, out_features=512),
           Activation("relu", numel=batch * 512, fn="relu"),
           Linear("fc2", batch=batch, in_features=512, out_features=10)]
    return Workload(name="mlp", batch=batch, ops=ops, input_bytes=batch * 784 * 4)


def test_param_count():
    assert mlp(1).params() == PARAMS == 407050


def test_training_fp32_adam_by_hand():
    b = 64
    m = memory_breakdown(mlp(b), get_precision("fp32"), train=True, optimizer="adam")
    assert m.weights == PARAMS * 4  # 1.628 MB of fp32 weights
    assert m.gradients == PARAMS * 4  # one fp32 gradient per weight
    assert m.optimizer_state == PARAMS * 4 * 2  # Adam: exp_avg and exp_avg_sq, fp32 each
    assert m.amp_weight_copies == 0
    # saved for backward: fc1 keeps its input (b x 784), relu its output (b x 512), and fc2 its input, which
    # is that same relu output tensor (autograd holds it once); plus the largest output (b x 512) and its
    # gradient alive together during backward
    saved = b * (784 + 512)
    assert m.activations == (saved + 2 * b * 512) * 4
    assert m.input_batch == b * 784 * 4
    assert m.total == pytest.approx(PARAMS * 16 + (saved + 2 * b * 512) * 4 + b * 784 * 4)


def test_sgd_keeps_no_state_and_momentum_one_buffer():
    sgd = memory_breakdown(mlp(8), get_precision("fp32"), train=True, optimizer="sgd")
    momentum = memory_breakdown(mlp(8), get_precision("fp32"), train=True, optimizer="momentum")
    assert sgd.optimizer_state == 0
    assert momentum.optimizer_state == PARAMS * 4


def test_amp_keeps_fp32_masters_and_fp16_copies():
    b = 32
    m = memory_breakdown(mlp(b), get_precision("amp"), train=True, optimizer="adam")
    assert m.weights == PARAMS * 4  # fp32 master weights
    assert m.amp_weight_copies == PARAMS * 2  # fp16 copies the kernels read
    assert m.gradients == PARAMS * 4
    assert m.activations == (b * (784 + 512) + 2 * b * 512) * 2  # fp16 activations


def test_inference_keeps_only_the_largest_live_pair():
    b = 100
    m = memory_breakdown(mlp(b), get_precision("fp16"), train=False)
    assert m.weights == PARAMS * 2
    assert m.gradients == m.optimizer_state == 0
    # outputs: fc1 b x 512, relu b x 512, fc2 b x 10; the largest consecutive pair is 2 x b x 512 fp16
    assert m.activations == 2 * b * 512 * 2


def test_reserve_is_added():
    m = memory_breakdown(mlp(1), get_precision("fp32"), train=False, reserve_bytes=123.0)
    assert m.workspace_and_reserve == 123.0
    assert m.total == pytest.approx(PARAMS * 4 + 2 * 512 * 4 + 784 * 4 + 123.0)


def test_max_batch_closed_form():
    # footprint 1000 + 10 B bytes, capacity 2000: (2000 - 1000) / 10 = 100 exactly
    assert max_batch_that_fits(lambda b: 1000 + 10 * b, 2000) == 100
    assert max_batch_that_fits(lambda b: 1000 + 10 * b, 1999) == 99
    # does not fit even at batch 1
    assert max_batch_that_fits(lambda b: 1000 + 10 * b, 1009) == 0


def test_max_batch_corrects_a_non_affine_footprint():
    # 1000 + 10 B, plus a 500-byte workspace from B = 50 on: the affine guess (100) is too big;
    # the answer is the largest B with 1500 + 10 B <= 2000, i.e. 50
    def footprint(b):
        return 1000 + 10 * b + (500 if b >= 50 else 0)

    assert max_batch_that_fits(footprint, 2000) == 50


def test_max_batch_monotone_in_capacity_and_exact_on_the_mlp():
    prec = get_precision("fp32")

    def footprint(b):
        return memory_breakdown(mlp(b), prec, train=True, optimizer="adam").total

    previous = 0
    for capacity in (2e7, 5e7, 1e8, 1e9, 1e10):
        b = max_batch_that_fits(footprint, capacity)
        assert b >= previous
        assert footprint(b) <= capacity < footprint(b + 1)
        previous = b
    # by hand: 16 x 407050 = 6.51 MB fixed; per sample (784 + 512 + 1024) x 4 + 784 x 4 = 12416 B;
    # (1e8 - 6512800) / 12416 = 7529.6 -> 7529
    assert max_batch_that_fits(footprint, 1e8) == (1e8 - 16 * PARAMS) // ((784 + 512 + 1024) * 4 + 784 * 4) == 7529


def test_inference_under_autocast_keeps_fp32_weights_and_16_bit_copies():
    # torch.autocast leaves the module in fp32 and caches a 16-bit cast of each parameter it casts until the
    # region exits: both Linear layers' weights and biases are on its 16-bit list
    b = 100
    m = memory_breakdown(mlp(b), get_precision("amp"), train=False, autocast_params=PARAMS)
    assert m.weights == PARAMS * 4
    assert m.amp_weight_copies == PARAMS * 2
    assert m.activations == 2 * b * 512 * 2


def test_autocast_copies_only_the_parameters_it_casts():
    half_of_them = memory_breakdown(mlp(8), get_precision("amp"), train=True, autocast_params=PARAMS / 2)
    assert half_of_them.amp_weight_copies == PARAMS / 2 * 2
    assert half_of_them.weights == PARAMS * 4


def test_torch_autocast_holds_a_cast_of_each_parameter_under_no_grad():
    """The premise, checked in the installed torch: a forward under torch.no_grad() and autocast (CPU, bf16)
    leaves one live 16-bit copy per parameter until the autocast region exits."""
    torch = pytest.importorskip("torch")
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode

    casts: list[tuple[StorageWeakRef, int]] = []

    class RecordCasts(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func is torch.ops.aten._to_copy.default:
                casts.append((StorageWeakRef(out.untyped_storage()), out.untyped_storage().nbytes()))
            return out

    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    x = torch.randn(100, 784)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        with RecordCasts():
            model(x)
            model(x)
        held = sum(n for ref, n in casts if not ref.expired())
    assert held == PARAMS * 2
    assert all(ref.expired() for ref, _ in casts)

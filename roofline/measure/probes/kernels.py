"""What the roofline alone does not know about eager PyTorch's non-GEMM kernels: their own streaming rate,
and the host time one module call costs.

Streaming rate: a memory-bound kernel should run at the bandwidth of the level holding its operands, but
some reach far less. PyTorch's CPU max pooling over NCHW tensors is a scalar loop (vectorised only for
channels-last), 50x slower than a ReLU over the same bytes here. Each kernel kind is timed on a
cache-resident tensor (so DRAM does not limit it) and its rate is the IR's compulsory bytes over the time:
the cost model then charges max(bytes / level bandwidth, bytes / kernel rate) for that kind's forward pass.
A gradient pass runs another loop (batch norm's backward reduces dY and dY x_hat per channel, then writes
dX), so each kind's backward kernel is timed too, called through `torch.ops.aten` on saved tensors as
autograd calls it, under the key `Op.kernel_key` gives its gradient passes ('norm:train:backward').

Dispatch: a tiny `nn.Conv2d` call costs several times a tiny `torch.add` (module __call__, argument
checks, the functional, the dispatcher), and every layer of an eager model pays its own kind's cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline.measure.timing import Measurement, Timer, interleaved, rotated
from roofline.workload.ops import Activation, AdaptiveAvgPool2d, BatchNorm, Elementwise, LayerNorm, Op, Pool2d
from roofline.workload.ops.base import BACKWARD_PASSES

CHANNELS = 64
SIDE = 56
"""Activation tensors of ResNet's first stage: (n, 64, 56, 56), n chosen from the cache size."""
TOKENS_FEATURES = 768
"""LayerNorm over BERT-base's hidden size."""
FP32_BYTES = 4


@dataclass(frozen=True)
class KernelRate:
    key: str
    """The op's `kernel_key` for the pass timed: 'pool:max', 'norm:eval', 'norm:train:backward', ..."""
    bytes: float
    measurement: Measurement

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.measurement.median if self.measurement.median > 0 else float("inf")


def _batch_for(cache_bytes: float | None) -> int:
    """Largest n whose input and output (2 x n x 64 x 56 x 56 fp32) fill at most half the cache, at least 1."""
    per_sample = 2 * CHANNELS * SIDE * SIDE * FP32_BYTES
    return max(1, int((cache_bytes or 8 * per_sample) // (2 * per_sample)))


def _cases(torch: Any, n: int, device: str) -> list[tuple[Op, Callable[[], Any]]]:
    f = torch.nn.functional
    x = torch.randn(n, CHANNELS, SIDE, SIDE, device=device)
    y = torch.randn_like(x)
    mean, var = torch.zeros(CHANNELS, device=device), torch.ones(CHANNELS, device=device)
    gamma, beta = torch.ones(CHANNELS, device=device), torch.zeros(CHANNELS, device=device)
    rows = x.numel() // TOKENS_FEATURES
    tokens = torch.randn(rows, TOKENS_FEATURES, device=device)
    numel = x.numel()
    return [
        (Pool2d("max", n=n, c=CHANNELS, h=SIDE, w=SIDE, r=3, s=3, stride=2, pad=1, mode="max"),
         lambda: f.max_pool2d(x, 3, 2, 1)),
        (AdaptiveAvgPool2d("avg", n=n, c=CHANNELS, h=SIDE, w=SIDE), lambda: f.adaptive_avg_pool2d(x, 1)),
        (BatchNorm("bn", n=n, c=CHANNELS, spatial=SIDE * SIDE, training=False),
         lambda: f.batch_norm(x, mean, var, gamma, beta, training=False)),
        (BatchNorm("bn", n=n, c=CHANNELS, spatial=SIDE * SIDE, training=True),
         lambda: f.batch_norm(x, mean.clone(), var.clone(), gamma, beta, training=True)),
        (LayerNorm("ln", rows=rows, features=TOKENS_FEATURES),
         lambda: f.layer_norm(tokens, (TOKENS_FEATURES,))),
        (Activation("relu", numel=numel, fn="relu"), lambda: f.relu(x)),
        (Activation("hardswish", numel=numel, fn="hardswish"), lambda: f.hardswish(x)),
        (Activation("gelu", numel=numel, fn="gelu"), lambda: f.gelu(x)),
        (Elementwise("add", numel=numel, inputs=2, op="add"), lambda: torch.add(x, y)),
        (Elementwise("mul", numel=numel, inputs=2, op="mul"), lambda: torch.mul(x, y)),
    ]




def _backward_cases(torch: Any, n: int, device: str) -> list[tuple[Op, Callable[[], Any]]]:
    """Each kind's backward kernel with the tensors autograd saved for it (input or output, batch statistics,
    max pooling's indices) and a gradient of the output's shape."""
    aten = torch.ops.aten
    x = torch.randn(n, CHANNELS, SIDE, SIDE, device=device)
    dy = torch.randn_like(x)
    mean, var = torch.zeros(CHANNELS, device=device), torch.ones(CHANNELS, device=device)
    gamma, beta = torch.ones(CHANNELS, device=device), torch.zeros(CHANNELS, device=device)
    _, save_mean, save_invstd = aten.native_batch_norm(x, gamma, beta, mean, var, True, 0.1, 1e-5)
    rows = x.numel() // TOKENS_FEATURES
    tokens, d_tokens = torch.randn(rows, TOKENS_FEATURES, device=device), torch.randn(rows, TOKENS_FEATURES,
                                                                                     device=device)
    ln_w, ln_b = torch.ones(TOKENS_FEATURES, device=device), torch.zeros(TOKENS_FEATURES, device=device)
    _, ln_mean, ln_rstd = aten.native_layer_norm(tokens, [TOKENS_FEATURES], ln_w, ln_b, 1e-5)
    pooled, indices = aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])
    d_pooled = torch.randn_like(pooled)
    d_avg = torch.randn(n, CHANNELS, 1, 1, device=device)
    relu_out = torch.relu(x)
    numel = x.numel()
    return [
        (Pool2d("max", n=n, c=CHANNELS, h=SIDE, w=SIDE, r=3, s=3, stride=2, pad=1, mode="max"),
         lambda: aten.max_pool2d_with_indices_backward(d_pooled, x, [3, 3], [2, 2], [1, 1], [1, 1], False,
                                                       indices)),
        (AdaptiveAvgPool2d("avg", n=n, c=CHANNELS, h=SIDE, w=SIDE),
         lambda: aten._adaptive_avg_pool2d_backward(d_avg, x)),
        (BatchNorm("bn", n=n, c=CHANNELS, spatial=SIDE * SIDE, training=True),
         lambda: aten.native_batch_norm_backward(dy, x, gamma, mean, var, save_mean, save_invstd, True, 1e-5,
                                                 [True, True, True])),
        (LayerNorm("ln", rows=rows, features=TOKENS_FEATURES),
         lambda: aten.native_layer_norm_backward(d_tokens, tokens, [TOKENS_FEATURES], ln_mean, ln_rstd, ln_w, ln_b,
                                                 [True, True, True])),
        (Activation("relu", numel=numel, fn="relu"), lambda: aten.threshold_backward(dy, relu_out, 0)),
        (Activation("hardswish", numel=numel, fn="hardswish"), lambda: aten.hardswish_backward(dy, x)),
        (Activation("gelu", numel=numel, fn="gelu"), lambda: aten.gelu_backward(dy, x)),
    ]


def streaming_rates(device: str = "cpu", cache_bytes: float | None = None, budget_s: float = 0.2) -> list[KernelRate]:
    """Rate of each kernel kind's forward and backward kernel on cache-resident fp32 tensors, in compulsory bytes
    (the IR's, over the passes the kernel runs) per second."""
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else None
    n = _batch_for(cache_bytes)
    out = []
    with torch.no_grad():
        for passes, cases in ((("forward",), _cases(torch, n, device)),
                              (BACKWARD_PASSES, _backward_cases(torch, n, device))):
            for op, call in cases:
                key = op.kernel_key(passes[0])
                moved = float(sum(op.bytes(p, FP32_BYTES, FP32_BYTES) for p in passes))
                timer = Timer(call, label=f"kernel {key}", work=moved, work_unit="B", budget_s=budget_s, sync=sync)
                out.append(KernelRate(key, moved, timer.measure()))
    return out


DEPTHWISE_PROBE_CHANNELS = 16
"""A depthwise layer over 16 one-pixel channels: oneDNN's depthwise path costs about 40-75 us per call here
however small the tensor, several times a dense convolution's 7 us, so it gets its own entry."""


def dispatch_by_kind(device: str = "cpu", budget_s: float = 0.2) -> dict[str, Measurement]:
    """Time of one call of a one-element layer of each kind (the depthwise one of 16 channels): what every
    layer pays however small, called cold as in a model (`timing.evict_private_caches` before each call)."""
    import torch

    from roofline.measure.timing import evict_private_caches

    cold = evict_private_caches() if device == "cpu" else None

    nn = torch.nn
    x = torch.randn(1, 1, 1, 1, device=device)
    x16 = torch.randn(1, DEPTHWISE_PROBE_CHANNELS, 1, 1, device=device)
    depthwise = nn.Conv2d(DEPTHWISE_PROBE_CHANNELS, DEPTHWISE_PROBE_CHANNELS, 3, padding=1,
                          groups=DEPTHWISE_PROBE_CHANNELS).to(device)
    layers: dict[str, Callable[[], Any]] = {
        "conv2d": nn.Conv2d(1, 1, 1).to(device), "gemm": nn.Linear(1, 1).to(device),
        "norm": nn.BatchNorm2d(1).to(device).eval(), "activation": nn.ReLU(), "pool": nn.MaxPool2d(1),
    }
    calls: dict[str, Callable[[], Any]] = {kind: lambda layer=layer: layer(x) for kind, layer in layers.items()}
    calls["conv2d:depthwise"] = lambda: depthwise(x16)
    calls["elementwise"] = lambda: torch.add(x, x)
    timers = {kind: Timer(call, label=f"dispatch {kind}", work=1, work_unit="call", budget_s=budget_s, setup=cold)
              for kind, call in calls.items()}
    with torch.no_grad():
        return rotated(timers) if device == "cpu" else interleaved(timers)


FAULT_PROBE_BYTES = 64 * 2**20
"""Above glibc's largest mmap threshold (32 MiB): what the allocator maps anew for every tensor this large."""


def _fresh_fill(numel: int) -> None:
    """Map `numel` fp32 elements of anonymous memory, fill them, unmap them: what glibc does for a tensor above
    its mmap threshold. The probe maps its own memory because calibration keeps the C heap from trimming
    (`roofline.measure.probes.heap`), and a heap that earlier probes grew serves a 64 MiB `torch.empty` from a freed
    chunk without a single fault (measured here: 246 GB/s through the heap, 3.2 GB/s mapped)."""
    import mmap

    import torch

    region = mmap.mmap(-1, numel * FP32_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    tensor = torch.frombuffer(region, dtype=torch.float32)
    tensor.fill_(0.0)
    del tensor
    region.close()


def page_fault_probe(budget_s: float = 0.3) -> tuple[Measurement, Measurement]:
    """Time to fill an existing 64 MiB tensor, and to map, fill and unmap new memory of that size: their
    difference is first touch (`fault_rate`). PyTorch's CPU allocator hands tensors of 32 MiB and
    more to mmap and back on free, so each step's large activations and gradients pay this again."""
    import torch

    numel = FAULT_PROBE_BYTES // FP32_BYTES
    kept = torch.empty(numel)
    kept.fill_(1.0)
    existing = Timer(lambda: kept.fill_(0.0), label="fill existing 64 MiB", work=FAULT_PROBE_BYTES,
                     work_unit="B", budget_s=budget_s).measure()
    fresh = Timer(lambda: _fresh_fill(numel), label="fill fresh 64 MiB", work=FAULT_PROBE_BYTES,
                  work_unit="B", budget_s=budget_s).measure()
    return existing, fresh


def fault_rate(existing: Measurement, fresh: Measurement) -> float:
    """Bytes per second at which first-touching freshly mapped memory runs: FAULT_PROBE_BYTES over the extra
    time of filling fresh memory (inf where there was none)."""
    extra = fresh.median - existing.median
    return FAULT_PROBE_BYTES / extra if extra > 0 else float("inf")

"""Measure, on a real GPU, the kernels a graph-replayed decode step is made of, each without the host.

A decode step under CUDA graphs (vLLM, TensorRT-LLM, gpt-fast, MLC) is a few hundred kernels replayed back to
back: products of a few rows that stream their weights, a dozen small elementwise kernels per layer, and the
attention over the KV cache. The cost model prices them with the stream copy rate and a per-kernel floor; this
script measures each of those on the device, inside captured graphs so that no host launch is in the time:

- `floors`: a graph of `FLOOR_KERNELS` identical small kernels (decode-sized: one row of 4096 or 14336 bf16
  values, or 64 rows), seconds per kernel; beside it the same kernels launched eagerly (the host's pace);
- `ramp`: an in-place add over bf16 buffers from 4 KiB to 256 MiB, rotated so that buffers beyond L2 come
  from DRAM: the size at which a kernel stops costing its floor and starts costing its bytes;
- `skinny`: y = x @ W^T (F.linear, cuBLAS) for Llama-shaped weights and 1 to 256 rows, bf16, weights rotated
  across copies that together exceed L2 twice, so every product reads its weight from DRAM as a decode does;
- `int4`: the same products through PyTorch's tinygemm int4 kernel (`torch._weight_int4pack_mm`, torchao's
  and gpt-fast's int4 weight-only path), groups of 32 and 128;
- `attention`: SDPA of one query token per sequence over a KV cache (a decode step's attention) for batches,
  contexts, grouped or full KV heads and each SDPA backend, caches rotated past L2, seconds and cache bytes/s;
- `compiled`: the same decode step compiled by torch.compile (inductor fuses the elementwise ops around the
  products, which stay cuBLAS calls) and captured in one graph, as gpt-fast and vLLM's compiled runs are;
- `skinny_check`, `int4_check`: the same products for Llama-2-7B's and 13B's weight shapes, which no fit saw;
- `int8wo`: weight-only int8 products as gpt-fast's and torchao's int8 paths write them, `F.linear(x,
  w.to(x.dtype)) * scales`, compiled by torch.compile with inductor's defaults and uncompiled (a bf16 copy of the
  weight, then cuBLAS); `int8wo_gptfast`: compiled with gpt-fast's coordinate_descent_tuning, at 1 and 8 rows;
- `step`: a whole Llama-3-8B-shaped decode step (32 layers, GQA, RoPE, SDPA over a KV cache, SwiGLU, lm_head,
  argmax) in plain PyTorch ops, captured in one graph at several batches and contexts, timed per replay, with
  its kernels' device time by name from the profiler; and prefills of the same model the same way.

    python benchmarks/gpu_decode_kernels.py --out decode-kernels.json [--sections floors,ramp,skinny,attention]

Weights are random (timing does not depend on values); nothing is downloaded. Writes one JSON document,
rewritten after each section, so a run stopped at its limit returns what it measured.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_live import cuda_time, run_sections, section_args  # noqa: E402

FLOOR_KERNELS = 200
"""Kernels per captured graph in `floors`: their replay lasts hundreds of microseconds, so the one graph launch
per replay is a negligible share."""
COLD_BYTES = 160 << 20
"""Rotated buffers or weight copies total at least this (over three times the H100's 50 MiB L2), so each
kernel reads data the previous ones evicted."""
SKINNY_SHAPES = [(1024, 4096), (4096, 4096), (6144, 4096), (14336, 4096), (4096, 14336), (28672, 4096),
                 (128256, 4096), (2048, 2048)]
"""(out features N, in features K) of Llama-3-8B's products (k/v, q/o, fused qkv, gate or up, down, fused
gate-up, lm_head) and a small one."""
SKINNY_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
INT4_ROWS = (1, 4, 16, 32, 64)
INT4_CASES = [(shape, 128) for shape in SKINNY_SHAPES[:6]] + [((14336, 4096), 32)]
CHECK_SHAPES = [(11008, 4096), (4096, 11008), (4096, 4096), (32000, 4096), (13824, 5120), (5120, 13824),
                (5120, 5120), (15360, 5120)]
"""Llama-2-7B's and 13B's weight shapes (MLP, attention, lm_head, fused qkv of 13B), which the streaming and
tinygemm fits did not see: the `check` sections time them the same way."""
CHECK_INT4_CASES = [(shape, 64) for shape in CHECK_SHAPES[:4]] + [((11008, 4096), 128), ((13824, 5120), 128)]
"""Group 64 is torchao's int4wo-64, the setting of the record's torchao rows."""
LLAMA3_8B = dict(hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, layers=32, vocab=128256)
ATTENTION_BATCHES = (1, 8, 64)
ATTENTION_CONTEXTS = (512, 4096)
ATTENTION_KV_HEADS = (8, 32)
"""Llama-3-8B's grouped KV heads (8 for 32 query heads) and Llama-2-7B's full ones, head dimension 128."""
STEP_CASES = [(1, 1, 512), (8, 1, 512), (32, 1, 512), (64, 1, 512), (8, 1, 2048), (64, 1, 2048),
              (1, 512, 0), (1, 2048, 0), (8, 512, 0)]
"""(batch, tokens, context): decode steps (one token against a cache of `context`) like the tenth held-out
serving set's and the eager H100 runs', then prefills of 512 and 2048 tokens."""


def graph_time(body: Callable[[], Any], min_s: float = 0.05) -> dict[str, float]:
    """Seconds per replay of `body` captured once in a CUDA graph (warmed on a side stream first, as capture
    requires: cuBLAS picks its kernel and workspace there)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        body()
        body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    result = cuda_time(graph.replay, min_s=min_s, warmup=2)
    del graph
    return result


def floors() -> list[dict[str, Any]]:
    """Per-kernel device time of small decode kernels replayed back to back in a graph, and launched eagerly."""
    import torch
    import torch.nn.functional as F

    rows = []
    for rows_, width in ((1, 4096), (1, 14336), (64, 4096), (64, 14336)):
        a, b, c = (torch.randn(rows_, width, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        w = torch.ones(width, device="cuda", dtype=torch.bfloat16)
        cases: dict[str, Callable[[], Any]] = {
            "add_": lambda a=a, b=b: a.add_(b),
            "mul_out": lambda a=a, b=b, c=c: torch.mul(a, b, out=c),
            "silu": lambda a=a: F.silu(a),
            "copy_": lambda a=a, c=c: c.copy_(a),
            "rms_norm": lambda a=a, w=w, width=width: F.rms_norm(a, (width,), w, 1e-5),
            "fp32_cast": lambda a=a: a.float(),
            "argmax": lambda a=a: a.argmax(-1),
        }
        for name, fn in cases.items():
            def body(fn=fn) -> None:
                for _ in range(FLOOR_KERNELS):
                    fn()
            try:
                graphed = graph_time(body)["median_s"] / FLOOR_KERNELS
                eager = cuda_time(body, min_s=0.05)["median_s"] / FLOOR_KERNELS
            except RuntimeError as exc:
                rows.append({"kernel": name, "rows": rows_, "width": width, "error": str(exc)[:200]})
                continue
            rows.append({"kernel": name, "rows": rows_, "width": width, "dtype": "bf16",
                         "graph_s_per_kernel": graphed, "eager_s_per_kernel": eager})
        print("floors", rows_, width, flush=True)
    return rows


def ramp() -> list[dict[str, Any]]:
    """In-place bf16 add (read + write) over rotated buffers of one size per row, inside a graph."""
    import torch

    rows = []
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    for log2 in range(12, 29, 2):
        size = 1 << log2
        copies = max(2, min(FLOOR_KERNELS, math.ceil(COLD_BYTES / size)))
        bufs = [torch.zeros(size // 2, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]

        def body(bufs=bufs) -> None:
            for buf in bufs:
                buf.add_(1.0)
        t = graph_time(body)["median_s"] / copies
        rows.append({"bytes": size, "copies": copies, "cold": size * copies > 2 * l2,
                     "s_per_kernel": t, "read_write_bytes_per_s": 2 * size / t})
        del bufs
    torch.cuda.empty_cache()
    return rows


def _rotated(make: Callable[[], Any], nbytes: int) -> list[Any]:
    """Copies of a weight that together exceed `COLD_BYTES` (one if it alone does)."""
    return [make() for _ in range(max(1, math.ceil(COLD_BYTES / nbytes)))]


def skinny(deadline: float, shapes: list[tuple[int, int]] = SKINNY_SHAPES) -> list[dict[str, Any]]:
    """bf16 F.linear over rotated weights: seconds per product and the weight's bytes per second."""
    import torch
    import torch.nn.functional as F

    rows = []
    for n, k in shapes:
        if time.time() > deadline:
            rows.append({"skipped": [n, k], "why": "budget"})
            continue
        weights = _rotated(lambda n=n, k=k: torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02,
                           2 * n * k)
        for m in SKINNY_ROWS:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)

            def body(x=x, weights=weights) -> None:
                for w in weights:
                    F.linear(x, w)
            t = graph_time(body, min_s=0.03)["median_s"] / len(weights)
            moved = 2 * (n * k + m * k + m * n)
            rows.append({"n": n, "k": k, "m": m, "copies": len(weights), "s_per_product": t,
                         "bytes_per_s": moved / t, "flops_per_s": 2 * m * n * k / t})
        print("skinny", n, k, flush=True)
        del weights
        torch.cuda.empty_cache()
    return rows


def int4(deadline: float, cases: list[tuple[tuple[int, int], int]] = INT4_CASES) -> list[dict[str, Any]]:
    """tinygemm int4 (bf16 activations, int4 weights with bf16 scales and zeros per group) over rotated
    weights; bytes counted as the packed weight plus its scales and zeros."""
    import torch

    rows = []
    for (n, k), group in cases:
        if time.time() > deadline:
            rows.append({"skipped": [n, k, group], "why": "budget"})
            continue
        try:
            def make(n=n, k=k) -> Any:
                nibbles = torch.randint(0, 16, (n, k), dtype=torch.int32, device="cuda")
                packed = (nibbles[:, ::2] << 4 | nibbles[:, 1::2]).to(torch.uint8)
                return torch._convert_weight_to_int4pack(packed, 8)
            scale_bytes = (k // group) * n * 2 * 2
            weights = _rotated(make, n * k // 2 + scale_bytes)
            scales = torch.ones(k // group, n, 2, device="cuda", dtype=torch.bfloat16)
            for m in INT4_ROWS:
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)

                def body(x=x, weights=weights, scales=scales, group=group) -> None:
                    for w in weights:
                        torch._weight_int4pack_mm(x, w, group, scales)
                t = graph_time(body, min_s=0.03)["median_s"] / len(weights)
                moved = n * k // 2 + scale_bytes + 2 * (m * k + m * n)
                rows.append({"n": n, "k": k, "m": m, "group": group, "copies": len(weights), "s_per_product": t,
                             "bytes_per_s": moved / t, "flops_per_s": 2 * m * n * k / t})
            del weights
        except (RuntimeError, TypeError, AttributeError) as exc:
            rows.append({"n": n, "k": k, "group": group, "error": str(exc)[:300]})
        print("int4", n, k, group, flush=True)
        torch.cuda.empty_cache()
    return rows


INT8WO_SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336)]
INT8WO_ROWS = (1, 8, 32)


def int8wo(deadline: float, rows_of: tuple[int, ...] = INT8WO_ROWS, modes: tuple[str, ...] = ("compiled", "eager"),
           coordinate_descent: bool = False) -> list[dict[str, Any]]:
    """int8 weights with a bf16 scale per output channel, bf16 activations, over rotated weights: compiled (one
    inductor kernel per shape) and eager; bytes counted as the int8 weight and its scales. `coordinate_descent`
    sets inductor's coordinate_descent_tuning, as gpt-fast's generate.py does: with it inductor turns a one-row
    product into a multiply and a reduction, into which the int8-to-bf16 conversion fuses."""
    import torch
    import torch.nn.functional as F

    torch._inductor.config.coordinate_descent_tuning = coordinate_descent

    def product(x: Any, w: Any, s: Any) -> Any:
        return F.linear(x, w.to(x.dtype)) * s

    for limit in ("cache_size_limit", "recompile_limit"):  # one compiled kernel per shape, none falling back to eager
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 64)

    rows = []
    for n, k in INT8WO_SHAPES:
        weights = _rotated(lambda n=n, k=k: torch.randint(-127, 127, (n, k), dtype=torch.int8, device="cuda"), n * k)
        scales = torch.rand(n, device="cuda", dtype=torch.bfloat16)
        for m in rows_of:
            if time.time() > deadline:
                rows.append({"skipped": [n, k, m], "why": "budget"})
                continue
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            for mode in modes:
                try:
                    fn = torch.compile(product, dynamic=False) if mode == "compiled" else product

                    def body(x=x, weights=weights, fn=fn, scales=scales) -> None:
                        for w in weights:
                            fn(x, w, scales)
                    t = graph_time(body, min_s=0.03)["median_s"] / len(weights)
                    moved = n * k + 2 * n + 2 * (m * k + m * n)
                    rows.append({"n": n, "k": k, "m": m, "mode": mode, "coordinate_descent": coordinate_descent,
                                 "copies": len(weights), "s_per_product": t, "bytes_per_s": moved / t,
                                 "flops_per_s": 2 * m * n * k / t})
                except (RuntimeError, TypeError, AttributeError, AssertionError) as exc:
                    rows.append({"n": n, "k": k, "m": m, "mode": mode, "error": str(exc)[:300]})
            print("int8wo", n, k, m, flush=True)
        del weights
        torch.cuda.empty_cache()
    return rows


def attention(deadline: float) -> list[dict[str, Any]]:
    """Decode attention (q: batch x 32 heads x 1 x 128) over bf16 caches, per SDPA backend, inside a graph."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"default": None, "flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    rows: list[dict[str, Any]] = []
    for batch in ATTENTION_BATCHES:
        for context in ATTENTION_CONTEXTS:
            for kv in ATTENTION_KV_HEADS:
                if time.time() > deadline:
                    rows.append({"skipped": [batch, context, kv], "why": "budget"})
                    continue
                cache_bytes = 2 * batch * kv * context * 128 * 2
                q = torch.randn(batch, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
                caches = _rotated(lambda b=batch, kv=kv, c=context: (
                    torch.randn(b, kv, c, 128, device="cuda", dtype=torch.bfloat16),
                    torch.randn(b, kv, c, 128, device="cuda", dtype=torch.bfloat16)), cache_bytes)
                for name, backend in backends.items():
                    def body(q=q, caches=caches, kv=kv, backend=backend) -> None:
                        for k, v in caches:
                            if backend is None:
                                F.scaled_dot_product_attention(q, k, v, enable_gqa=kv != 32)
                            else:
                                with sdpa_kernel(backend):
                                    F.scaled_dot_product_attention(q, k, v, enable_gqa=kv != 32)
                    try:
                        t = graph_time(body, min_s=0.03)["median_s"] / len(caches)
                    except RuntimeError as exc:
                        rows.append({"batch": batch, "context": context, "kv_heads": kv, "backend": name,
                                     "error": str(exc)[:160]})
                        continue
                    rows.append({"batch": batch, "context": context, "kv_heads": kv, "heads": 32, "head_dim": 128,
                                 "backend": name, "copies": len(caches), "s_per_call": t,
                                 "cache_bytes_per_s": cache_bytes / t})
                del caches
                torch.cuda.empty_cache()
        print("attention", batch, flush=True)
    return rows


class LlamaForward:
    """One forward of a Llama-shaped model as plain PyTorch ops (HF transformers' eager Llama), either a decode
    step (one token per sequence against a KV cache of `context` positions, written in place at a fixed
    position so the step can be captured) or a prefill (`tokens` per sequence, causal SDPA over themselves).
    Per layer: RMSNorm, q/k/v products, RoPE (rotate-half), the cache write (decode), SDPA with grouped KV
    heads, o product and residual, RMSNorm, gate and up products, SiLU, product, down product and residual;
    then the final norm, lm_head on each sequence's last position, and argmax."""

    def __init__(self, shape: dict[str, int], batch: int, tokens: int, context: int,
                 device: str = "cuda") -> None:
        import torch

        d, h, kv, hd, f = (shape[key] for key in ("hidden", "heads", "kv_heads", "head_dim", "ffn"))
        bf = dict(device=device, dtype=torch.bfloat16)

        def weight(n: int, k: int) -> Any:
            return torch.randn(n, k, **bf) * 0.02

        def cache() -> Any:
            return torch.randn(batch, kv, context + 1, hd, **bf) if tokens == 1 else None

        self.shape, self.batch, self.tokens, self.context = shape, batch, tokens, context
        self.layers = [dict(n1=torch.ones(d, **bf), q=weight(h * hd, d), k=weight(kv * hd, d), v=weight(kv * hd, d),
                            o=weight(d, h * hd), n2=torch.ones(d, **bf), gate=weight(f, d), up=weight(f, d),
                            down=weight(d, f), kc=cache(), vc=cache())
                       for _ in range(shape["layers"])]
        self.norm = torch.ones(d, **bf)
        self.lm_head = weight(shape["vocab"], d)
        self.x = torch.randn(batch, tokens, d, **bf)
        angles = torch.rand(1, 1, tokens, hd, device=device, dtype=torch.float32)
        self.cos, self.sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)

    @staticmethod
    def _rotate_half(t: Any) -> Any:
        import torch

        half = t.shape[-1] // 2
        return torch.cat((-t[..., half:], t[..., :half]), dim=-1)

    def _attend(self, layer: dict[str, Any], q: Any, k: Any, v: Any) -> Any:
        import torch.nn.functional as F

        if self.tokens > 1:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        ctx = self.context
        layer["kc"][:, :, ctx:ctx + 1].copy_(k)
        layer["vc"][:, :, ctx:ctx + 1].copy_(v)
        return F.scaled_dot_product_attention(q, layer["kc"], layer["vc"], enable_gqa=True)

    def __call__(self) -> Any:
        import torch.nn.functional as F

        b, t = self.batch, self.tokens
        d, h, kv, hd = (self.shape[key] for key in ("hidden", "heads", "kv_heads", "head_dim"))
        x = self.x
        for layer in self.layers:
            a = F.rms_norm(x, (d,), layer["n1"], 1e-5)
            q = F.linear(a, layer["q"]).view(b, t, h, hd).transpose(1, 2)
            k = F.linear(a, layer["k"]).view(b, t, kv, hd).transpose(1, 2)
            v = F.linear(a, layer["v"]).view(b, t, kv, hd).transpose(1, 2)
            q = q * self.cos + self._rotate_half(q) * self.sin
            k = k * self.cos + self._rotate_half(k) * self.sin
            out = self._attend(layer, q, k, v)
            x = x + F.linear(out.transpose(1, 2).reshape(b, t, h * hd), layer["o"])
            a = F.rms_norm(x, (d,), layer["n2"], 1e-5)
            x = x + F.linear(F.silu(F.linear(a, layer["gate"])) * F.linear(a, layer["up"]), layer["down"])
        logits = F.linear(F.rms_norm(x[:, -1:], (d,), self.norm, 1e-5), self.lm_head)
        return logits.argmax(-1)


def replayed_forward(forward: Callable[[], Any], replays: int = 3) -> dict[str, Any]:
    """A whole forward captured in one graph: seconds per replay (`graph_time`), then the kernels of `replays`
    replays under the profiler, per replay, by device time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    timed = graph_time(forward, min_s=0.1)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        forward()
    graph.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    kernels = sorted(({"kernel": e.key[:140], "calls": e.count / replays,
                       "device_s": e.self_device_time_total * 1e-6 / replays}
                      for e in prof.key_averages() if e.self_device_time_total > 0), key=lambda e: -e["device_s"])
    return {"step_s": timed["median_s"], "step_min_s": timed["min_s"], "step_max_s": timed["max_s"],
            "kernels": kernels[:40], "kernel_count": sum(e["calls"] for e in kernels),
            "kernel_device_s": sum(e["device_s"] for e in kernels)}


COMPILED_CASES = [(1, 512), (8, 512), (64, 512)]
"""(batch, context) of the compiled decode steps."""


def compiled(deadline: float) -> list[dict[str, Any]]:
    """The decode step compiled by torch.compile (default mode: products stay cuBLAS calls, elementwise ops fuse
    into Triton kernels) then captured in a graph: seconds per replay, kernels per step, compile seconds."""
    import torch

    rows: list[dict[str, Any]] = []
    for batch, context in COMPILED_CASES:
        if time.time() > deadline:
            rows.append({"skipped": [batch, context], "why": "budget"})
            continue
        try:
            with torch.no_grad():
                forward = LlamaForward(LLAMA3_8B, batch, 1, context)
                fn = torch.compile(forward.__call__, dynamic=False)
                started = time.time()
                fn()
                torch.cuda.synchronize()
                compile_s = time.time() - started
                measured = replayed_forward(fn)
            rows.append({"model": "llama-3-8b", "batch": batch, "tokens": 1, "context": context, "dtype": "bf16",
                         "compile_s": compile_s, **measured})
            del forward, fn
        except Exception as exc:
            # a compiler failure of any kind is recorded, and the other cases still run
            rows.append({"batch": batch, "context": context, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        torch.cuda.empty_cache()
        print("compiled", {k: rows[-1].get(k) for k in ("batch", "context", "step_s", "compile_s", "kernel_count",
                                                        "error")}, flush=True)
    return rows


def step(deadline: float) -> list[dict[str, Any]]:
    """The captured forward per (batch, tokens, context): seconds per replay, and the profiler's kernels."""
    import torch

    rows: list[dict[str, Any]] = []
    for batch, tokens, context in STEP_CASES:
        if time.time() > deadline:
            rows.append({"skipped": [batch, tokens, context], "why": "budget"})
            continue
        try:
            with torch.no_grad():
                forward = LlamaForward(LLAMA3_8B, batch, tokens, context)
                measured = replayed_forward(forward)
            rows.append({"model": "llama-3-8b", "batch": batch, "tokens": tokens, "context": context, "dtype": "bf16",
                         **measured})
            del forward
        except (RuntimeError, TypeError) as exc:
            rows.append({"batch": batch, "tokens": tokens, "context": context, "error": str(exc)[:300]})
        torch.cuda.empty_cache()
        print("step", {k: rows[-1].get(k) for k in ("batch", "tokens", "context", "step_s", "kernel_count", "error")},
              flush=True)
    return rows


def main() -> int:
    args = section_args(__doc__.splitlines()[0], "floors,ramp,skinny,int4,attention,step,compiled", 240.0)
    start = time.time()
    runs: list[tuple[str, Callable[[], Any]]] = [
        ("floors", floors), ("ramp", ramp), ("skinny", lambda: skinny(start + args.budget_s * 0.45)),
        ("int4", lambda: int4(start + args.budget_s * 0.55)),
        ("attention", lambda: attention(start + args.budget_s * 0.7)), ("step", lambda: step(start + args.budget_s)),
        ("compiled", lambda: compiled(start + args.budget_s)),
        ("skinny_check", lambda: skinny(start + args.budget_s * 0.6, CHECK_SHAPES)),
        ("int4_check", lambda: int4(start + args.budget_s, CHECK_INT4_CASES)),
        ("int8wo", lambda: int8wo(start + args.budget_s)),
        ("int8wo_gptfast", lambda: int8wo(start + args.budget_s, (1, 8), ("compiled",), coordinate_descent=True))]
    run_sections(args.out, "benchmarks/gpu_decode_kernels.py", runs, args.sections.split(","), start)
    return 0


if __name__ == "__main__":
    sys.exit(main())

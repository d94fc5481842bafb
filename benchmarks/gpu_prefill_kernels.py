"""Measure, on a real GPU, what a prefill (the prompt's forward, which sets the time to first token) is made of.

The published record's time to first token is predicted too fast on most GPUs (the track record's median
held-out ratio is about 1.2x), while decode is not. A prefill is products of a few hundred to a few thousand
rows over the layer's weights, causal attention over the prompt, and the elementwise kernels between them.
This script times those parts apart, on the device, where the record can only give their sum:

- `products`: y = x @ W^T (F.linear, cuBLAS) for the weight shapes of Llama-2-7B, Llama-2-13B and Llama-3-8B
  at 128 to 8192 rows, fp16 (what most published runs used) and bf16 for some, weights rotated across copies
  past L2 as a prefill reads each weight once, each inside a captured graph (no host in the time);
- `attention`: causal SDPA over the prompt (batch x 32 heads x P x 128, fp16, grouped or full KV heads) per
  backend, and the eager path that transformers ran before SDPA (QK^T, scale, causal mask, softmax in fp32,
  cast, AV) as separate kernels;
- `forward`: a whole transformers forward of a Llama-2-7B-shaped model (random fp16 weights, made on the GPU)
  over B prompts of P tokens, with `attn_implementation` eager and sdpa, as optimum-benchmark's
  `forward.latency` and optimum's prefill tables time it (no graph: the host's launches are in it), and the
  kernels of one forward by device time from the profiler;
- `clocks`: the SM clock and board power sampled by NVML every 20 ms while each section runs.

    python benchmarks/gpu_prefill_kernels.py --out prefill-kernels.json [--sections products,attention,forward]

Weights are random (timing does not depend on values); nothing is downloaded. Writes one JSON document,
rewritten after each section, so a run stopped at its limit returns what it measured.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_decode_kernels import _rotated, graph_time  # noqa: E402
from gpu_live import cuda_time, run_sections, section_args  # noqa: E402

PRODUCT_SHAPES = [(4096, 4096), (11008, 4096), (4096, 11008), (5120, 5120), (13824, 5120), (5120, 13824),
                  (1024, 4096), (14336, 4096), (4096, 14336)]
"""(out features N, in features K): Llama-2-7B's q/k/v/o, gate/up and down; Llama-2-13B's; Llama-3-8B's k/v,
gate/up and down (its q/o are Llama-2-7B's)."""
PRODUCT_ROWS = (128, 256, 512, 1024, 2048, 4096, 8192)
BF16_SHAPES = PRODUCT_SHAPES[:3]
"""The shapes timed in bf16 as well: whether fp16 and bf16 run at one rate."""
ATTENTION_CASES = [(1, 512), (1, 2048), (1, 8192), (8, 512), (8, 2048), (4, 8192)]
"""(batch, prompt tokens) of the causal attention."""
EAGER_SCORES_LIMIT = 8 << 30
"""The eager path materialises batch x heads x P x P scores (fp16, then fp32 for softmax); beyond this many
bytes of fp16 scores it is not run."""
LLAMA2_7B = dict(model_type="llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096,
                 tie_word_embeddings=False)
FORWARD_CASES = [(1, 128), (1, 512), (1, 2048), (4, 512), (16, 128), (16, 512), (4, 2048), (2, 256), (8, 256)]
"""(batch, prompt tokens) of the whole forwards: optimum-benchmark's 256-token prompts at batches 1-16,
optimum's 512-token prefills, and longer prompts."""
PROFILED = {(1, 512), (4, 2048), (16, 128)}
"""The forwards whose kernels are also read by the profiler."""


class ClockSampler:
    """SM clock (MHz) and board power (W) read by NVML every `period_s` in a thread, while a section runs."""

    def __init__(self, period_s: float = 0.02) -> None:
        self.period_s, self.samples, self._stop = period_s, [], threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ClockSampler:
        try:
            import pynvml

            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self._nvml = pynvml
        except Exception:  # NVML missing or refused: the section runs unsampled
            return self
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        nv = self._nvml
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # one failed read is skipped
                self.samples.append((nv.nvmlDeviceGetClockInfo(self._handle, nv.NVML_CLOCK_SM),
                                     nv.nvmlDeviceGetPowerUsage(self._handle) / 1000))
            time.sleep(self.period_s)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {"samples": 0}
        clocks = sorted(s[0] for s in self.samples)
        power = sorted(s[1] for s in self.samples)
        return {"samples": len(clocks), "sm_mhz_median": clocks[len(clocks) // 2], "sm_mhz_min": clocks[0],
                "sm_mhz_max": clocks[-1], "power_w_median": power[len(power) // 2], "power_w_max": power[-1]}


def products(deadline: float) -> list[dict[str, Any]]:
    """F.linear over rotated weights at prefill row counts: seconds per product, FLOP/s, and the clock."""
    import torch
    import torch.nn.functional as F

    rows: list[dict[str, Any]] = []
    cases = [(shape, torch.float16) for shape in PRODUCT_SHAPES] + [(shape, torch.bfloat16) for shape in BF16_SHAPES]
    for (n, k), dtype in cases:
        if time.time() > deadline:
            rows.append({"skipped": [n, k, str(dtype)], "why": "budget"})
            continue
        weights = _rotated(lambda n=n, k=k, dtype=dtype: torch.randn(n, k, device="cuda", dtype=dtype) * 0.02,
                           2 * n * k)
        with ClockSampler() as clocks:
            for m in PRODUCT_ROWS:
                x = torch.randn(m, k, device="cuda", dtype=dtype)

                def body(x=x, weights=weights) -> None:
                    for w in weights:
                        F.linear(x, w)
                t = graph_time(body, min_s=0.03)["median_s"] / len(weights)
                rows.append({"n": n, "k": k, "m": m, "dtype": str(dtype).removeprefix("torch."),
                             "copies": len(weights), "s_per_product": t, "flops_per_s": 2 * m * n * k / t})
        rows[-1]["clocks"] = clocks.summary()
        print("products", n, k, dtype, rows[-1]["flops_per_s"] / 1e12, clocks.summary(), flush=True)
        del weights
        torch.cuda.empty_cache()
    return rows


def _eager_attention(q: Any, k: Any, v: Any, mask: Any) -> Any:
    """transformers' eager attention (Llama, before SDPA became the default): kernels of their own."""
    import math

    import torch

    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(q.shape[-1])
    scores = scores + mask
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(probs, v)


def _attention_case(batch: int, tokens: int, kv: int) -> list[dict[str, Any]]:
    """One (batch, prompt, KV heads) case: every SDPA backend, and the eager path where its scores fit."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    half = dict(device="cuda", dtype=torch.float16)
    q = torch.randn(batch, 32, tokens, 128, **half)
    k, v = (torch.randn(batch, kv, tokens, 128, **half) for _ in range(2))
    gqa = kv != 32

    def sdpa(backend: Any) -> Callable[[], Any]:
        def call() -> Any:
            if backend is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        return call

    calls = {"default": sdpa(None), "flash": sdpa(SDPBackend.FLASH_ATTENTION),
             "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION), "efficient": sdpa(SDPBackend.EFFICIENT_ATTENTION)}
    if not gqa and batch * 32 * tokens * tokens * 2 <= EAGER_SCORES_LIMIT:
        mask = torch.full((tokens, tokens), float("-inf"), **half).triu(1)[None, None]
        calls["eager"] = lambda: _eager_attention(q, k, v, mask)
    rows: list[dict[str, Any]] = []
    causal_flops = 4 * batch * 32 * 128 * tokens * (tokens + 1) / 2
    for name, call in calls.items():
        case = {"batch": batch, "tokens": tokens, "kv_heads": kv, "heads": 32, "head_dim": 128, "dtype": "float16",
                "backend": name}
        try:
            t = graph_time(call, min_s=0.03)["median_s"]
        except RuntimeError as exc:
            rows.append({**case, "error": str(exc)[:160]})
            continue
        rows.append({**case, "s_per_call": t, "causal_flops_per_s": causal_flops / t})
    return rows


def attention(deadline: float) -> list[dict[str, Any]]:
    """Causal prefill attention (fp16, 32 heads of 128), per SDPA backend and the eager path, inside a graph."""
    import torch

    rows: list[dict[str, Any]] = []
    for batch, tokens in ATTENTION_CASES:
        for kv in (8, 32):
            if time.time() > deadline:
                rows.append({"skipped": [batch, tokens, kv], "why": "budget"})
                continue
            rows.extend(_attention_case(batch, tokens, kv))
            torch.cuda.empty_cache()
        print("attention", batch, tokens, flush=True)
    return rows


def _model(impl: str) -> Any:
    """Llama-2-7B's shape with random fp16 weights made on the GPU, attention as `impl`."""
    import torch
    import transformers

    cfg_kwargs = dict(LLAMA2_7B)
    cfg = transformers.AutoConfig.for_model(cfg_kwargs.pop("model_type"), **cfg_kwargs)
    with torch.device("cuda"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float16, attn_implementation=impl)
        except TypeError:
            model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float16,
                                                                  attn_implementation=impl)
    return model.eval()


def _kernels(call: Callable[[], Any]) -> dict[str, Any]:
    """The kernels of one call under the profiler, by device time, and their total."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    kernels = sorted(({"kernel": e.key[:140], "calls": e.count, "device_s": e.self_device_time_total * 1e-6}
                      for e in prof.key_averages() if e.self_device_time_total > 0), key=lambda e: -e["device_s"])
    return {"kernels": kernels[:30], "kernel_count": sum(e["calls"] for e in kernels),
            "kernel_device_s": sum(e["device_s"] for e in kernels)}


def forward(deadline: float) -> list[dict[str, Any]]:
    """One transformers forward over the prompts (use_cache as the library defaults it), timed between CUDA
    events with the host's launches in it."""
    import torch

    rows: list[dict[str, Any]] = []
    for impl in ("sdpa", "eager"):
        if time.time() > deadline:
            rows.append({"skipped": impl, "why": "budget"})
            continue
        model = _model(impl)
        for batch, tokens in FORWARD_CASES:
            if time.time() > deadline:
                rows.append({"skipped": [impl, batch, tokens], "why": "budget"})
                continue
            ids = torch.randint(0, LLAMA2_7B["vocab_size"], (batch, tokens), device="cuda")

            def call(ids=ids, model=model) -> Any:
                return model(input_ids=ids, attention_mask=torch.ones_like(ids))

            try:
                with torch.inference_mode(), ClockSampler() as clocks:
                    torch.cuda.reset_peak_memory_stats()
                    timed = cuda_time(call, min_s=0.2, repeats=3, warmup=2)
                    profiled = _kernels(call) if (batch, tokens) in PROFILED else {}
                rows.append({"model": "llama-2-7b", "dtype": "float16", "attn_implementation": impl, "batch": batch,
                             "tokens": tokens, "forward_s": timed["median_s"], "forward_min_s": timed["min_s"],
                             "forward_max_s": timed["max_s"], "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
                             "clocks": clocks.summary(), **profiled})
            except (RuntimeError, ValueError, TypeError) as exc:
                rows.append({"attn_implementation": impl, "batch": batch, "tokens": tokens, "error": str(exc)[:300]})
            print("forward", {k: rows[-1].get(k) for k in ("attn_implementation", "batch", "tokens", "forward_s",
                                                           "kernel_device_s", "error")}, flush=True)
        del model
        torch.cuda.empty_cache()
    return rows


def main() -> int:
    args = section_args(__doc__.splitlines()[0], "products,attention,forward", 200.0)
    start = time.time()
    runs: list[tuple[str, Callable[[], Any]]] = [
        ("products", lambda: products(start + args.budget_s * 0.35)),
        ("attention", lambda: attention(start + args.budget_s * 0.55)),
        ("forward", lambda: forward(start + args.budget_s))]
    run_sections(args.out, "benchmarks/gpu_prefill_kernels.py", runs, args.sections.split(","), start)
    return 0


if __name__ == "__main__":
    sys.exit(main())

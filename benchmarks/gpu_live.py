"""Measure a real GPU: its ceilings, the zoo's training and inference steps, and LLM prefill/decode.

The published record is the ground truth for GPUs this project has never held; when a session is lent one,
this script turns its time into a second, independent test set: every figure here is measured with the
settings written beside it (torch and cuDNN versions, cudnn.benchmark, data already on the device, the
optimizer), so predictions can be compared row by row. It writes one JSON document, rewritten after every
section so that a run stopped at its time limit still returns what it measured.

    python benchmarks/gpu_live.py --out gpu-live.json [--sections micro,zoo,half,launches,grad,decode,llm]
        [--budget-s 480]

Timing: CUDA events around `steps` consecutive steps after warm-up (cuDNN autotuning happens there), the
median over repeats; memory: torch's peak allocated and reserved bytes of the step.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MIN_TIMED_S = 0.25
"""Each repeat runs enough steps to last this long, so event resolution (about 0.5 us) is negligible."""
REPEATS = 3


def emit(doc: dict[str, Any], out: Path | None) -> None:
    """A device check's result as JSON: into `out` (what the device run brings back under $OUT), else stdout."""
    text = json.dumps(doc, indent=1)
    if out:
        out.write_text(text)
    else:
        print(text)


def cuda_time(fn: Callable[[], Any], min_s: float = MIN_TIMED_S, repeats: int = REPEATS,
              warmup: int = 3) -> dict[str, float]:
    """Seconds per call of fn: warm-up calls, then `repeats` windows of n calls between CUDA events."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    one = max(start.elapsed_time(end) * 1e-3, 1e-6)
    n = max(1, min(10_000, int(min_s / one)))
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3 / n)
    samples.sort()
    return {"median_s": samples[len(samples) // 2], "min_s": samples[0], "max_s": samples[-1], "calls": n}


def environment() -> dict[str, Any]:
    import torch

    props = torch.cuda.get_device_properties(0)
    env: dict[str, Any] = {
        "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "gpu": props.name, "sm_count": props.multi_processor_count, "memory_bytes": props.total_memory,
        "l2_bytes": getattr(props, "L2_cache_size", None), "date": time.strftime("%Y-%m-%d"),
    }
    query = "clocks.max.sm,clocks.max.mem,clocks.sm,power.limit,power.max_limit,driver_version"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        env["nvidia_smi"] = dict(zip(query.split(","), (s.strip() for s in out.split(",")), strict=False))
    except (OSError, subprocess.SubprocessError) as exc:
        env["nvidia_smi"] = f"unavailable: {exc}"
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        env["transformers"] = None
    return env


def cpu_checked_args(description: str, budget_s: float) -> argparse.Namespace:
    """The command line of a device check that also runs on a CPU for its tests: --out (else stdout), --budget-s,
    --device (cuda, or cpu) and --small (the CPU's shrunken shapes)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--budget-s", type=float, default=budget_s)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--small", action="store_true")
    return parser.parse_args()


def section_args(description: str, sections: str, budget_s: float) -> argparse.Namespace:
    """The command line of a sectioned device script: --out, --sections (default `sections`), --budget-s."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sections", default=sections)
    parser.add_argument("--budget-s", type=float, default=budget_s)
    return parser.parse_args()


def run_sections(out: Path, script: str, runs: list[tuple[str, Callable[[], Any]]], sections: list[str],
                 start: float) -> None:
    """Run each named section that `sections` asks for, in order, into one JSON document at `out` (the
    environment, the script, each section's rows or its error, the seconds so far), rewritten after every section
    so that a run stopped at its limit still returns what it measured."""
    doc: dict[str, Any] = {"environment": environment(), "script": script}
    for name, fn in runs:
        if name not in sections:
            continue
        try:
            doc[name] = fn()
        except (RuntimeError, ValueError, TypeError, AttributeError, ImportError) as exc:
            doc[name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(name, "done", round(time.time() - start, 1), flush=True)
        doc["elapsed_s"] = time.time() - start
        out.write_text(json.dumps(doc, indent=1))


def gemm_rates() -> list[dict[str, Any]]:
    """C = A @ B for square sizes and for few-row products (decode-shaped), per dtype, in FLOP/s (2 per MAC)."""
    import torch

    rows = []
    shapes = [(n, n, n) for n in (256, 512, 1024, 2048, 4096, 8192)]
    shapes += [(m, 4096, 4096) for m in (1, 8, 32, 128, 512)] + [(m, 14336, 4096) for m in (1, 16, 64)]
    for dtype_name in ("fp32", "tf32", "fp16", "bf16", "fp8"):
        for m, n, k in shapes:
            if dtype_name in ("fp32", "tf32") and m == n == k == 8192:
                continue
            torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
            if dtype_name == "fp8":
                if not hasattr(torch, "_scaled_mm") or m % 16:
                    continue
                a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
                b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
                one = torch.tensor(1.0, device="cuda")

                def call(a=a, b=b, one=one) -> Any:
                    return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                dt = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
                      "bf16": torch.bfloat16}[dtype_name]
                a, b = torch.randn(m, k, device="cuda", dtype=dt), torch.randn(k, n, device="cuda", dtype=dt)

                def call(a=a, b=b) -> Any:
                    return a @ b
            try:
                t = cuda_time(call, min_s=0.05)
            except RuntimeError as exc:
                rows.append({"dtype": dtype_name, "m": m, "n": n, "k": k, "error": str(exc)[:200]})
                continue
            rows.append({"dtype": dtype_name, "m": m, "n": n, "k": k, "time_s": t["median_s"],
                         "flops_per_s": 2 * m * n * k / t["median_s"]})
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def memory_rates() -> list[dict[str, Any]]:
    """Streaming kernels over sizes from L2-resident to HBM: bytes read + written per second."""
    import torch

    rows = []
    for size in (1 << 20, 8 << 20, 32 << 20, 128 << 20, 512 << 20, 2 << 30):
        n = size // 4
        a, b, c = (torch.ones(n, device="cuda") for _ in range(3))
        kernels = {
            "copy": (lambda a=a, b=b: a.copy_(b), 2 * size),
            "scale": (lambda a=a, b=b: torch.mul(b, 3.0, out=a), 2 * size),
            "add": (lambda a=a, b=b, c=c: torch.add(b, c, out=a), 3 * size),
            "triad": (lambda a=a, b=b, c=c: torch.add(b, c, alpha=3.0, out=a), 3 * size),
            "read_sum": (lambda b=b: b.sum(), size),
        }
        for name, (fn, moved) in kernels.items():
            t = cuda_time(fn, min_s=0.05)
            rows.append({"kernel": name, "bytes": size, "time_s": t["median_s"],
                         "bytes_per_s": moved / t["median_s"]})
        del a, b, c
    torch.cuda.empty_cache()
    return rows


def kernel_rates() -> list[dict[str, Any]]:
    """Non-GEMM kernels of a model step at a large size (fp32 and fp16): compulsory bytes per second."""
    import torch

    return [row for dtype in (torch.float32, torch.float16) for row in _kernel_rates(dtype)]


def _kernel_rates(dtype: Any) -> list[dict[str, Any]]:
    import torch
    import torch.nn.functional as F

    x4 = torch.randn(64, 256, 56, 56, device="cuda", dtype=dtype)
    x2 = torch.randn(64 * 512, 768, device="cuda", dtype=dtype)
    bn = torch.nn.BatchNorm2d(256).cuda().to(dtype)
    ln = torch.nn.LayerNorm(768).cuda().to(dtype)
    e4, e2 = x4.numel() * x4.element_size(), x2.numel() * x2.element_size()
    cases = {
        "relu": (lambda: F.relu(x4), 2 * e4), "relu_": (lambda: F.relu_(x4), 2 * e4),
        "hardswish": (lambda: F.hardswish(x4), 2 * e4), "gelu": (lambda: F.gelu(x2), 2 * e2),
        "add": (lambda: x4 + x4, 3 * e4), "batchnorm_train": (lambda: bn.train()(x4), 2 * e4),
        "batchnorm_eval": (lambda: bn.eval()(x4), 2 * e4), "layernorm": (lambda: ln(x2), 2 * e2),
        "softmax": (lambda: torch.softmax(x2, -1), 2 * e2), "dropout": (lambda: F.dropout(x2, 0.1), 2 * e2),
        "maxpool3s2": (lambda: F.max_pool2d(x4, 3, 2, 1), e4 + e4 // 4),
        "avgpool_global": (lambda: F.adaptive_avg_pool2d(x4, 1), e4),
    }
    rows = []
    for name, (fn, moved) in cases.items():
        with torch.no_grad():
            t = cuda_time(fn, min_s=0.05)
        rows.append({"kernel": name, "dtype": str(dtype).removeprefix("torch."), "bytes": moved,
                     "time_s": t["median_s"], "bytes_per_s": moved / t["median_s"]})
    return rows


def overheads() -> dict[str, Any]:
    """Launch throughput (queued tiny ops), launch-to-completion latency, and host-device copies."""
    import torch

    x = torch.ones(1, device="cuda")
    queued = cuda_time(lambda: x.add_(1.0), min_s=0.1)["median_s"]
    for _ in range(100):
        x.add_(1.0)
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(1000):
        x.add_(1.0)
        torch.cuda.synchronize()
    synced = (time.perf_counter() - t0) / 1000
    t0 = time.perf_counter()
    for _ in range(1000):
        x.add_(1.0).item()
    item = (time.perf_counter() - t0) / 1000
    copies = []
    for size in (1 << 20, 64 << 20, 256 << 20):
        dev = torch.empty(size, dtype=torch.uint8, device="cuda")
        for pinned in (False, True):
            host = torch.empty(size, dtype=torch.uint8, pin_memory=pinned)
            h2d = cuda_time(lambda dev=dev, host=host: dev.copy_(host), min_s=0.1)["median_s"]
            d2h = cuda_time(lambda dev=dev, host=host: host.copy_(dev), min_s=0.1)["median_s"]
            copies.append({"bytes": size, "pinned": pinned, "h2d_bytes_per_s": size / h2d,
                           "d2h_bytes_per_s": size / d2h})
    return {"queued_tiny_op_s": queued, "tiny_op_then_synchronize_s": synced, "tiny_op_then_item_s": item,
            "copies": copies}


ZOO_CASES: list[tuple[str, str, str, tuple[int, ...]]] = [
    # (model, mode, precision, batches); autocast CNN steps run channels-last as NVIDIA's published runs do.
    ("resnet50", "train", "fp32", (64, 256)), ("resnet50", "train", "tf32", (256,)),
    ("resnet50", "train", "amp", (64, 256)), ("resnet50", "inference", "fp32", (1, 256)),
    ("resnet50", "inference", "tf32", (256,)), ("resnet50", "inference", "amp", (1, 8, 64, 256)),
    ("resnet18", "train", "tf32", (256,)), ("resnet18", "train", "amp", (256,)),
    ("resnet18", "inference", "amp", (1, 256)), ("resnet18", "inference", "fp32", (256,)),
    ("mobilenetv3-large", "train", "amp", (256,)), ("mobilenetv3-large", "train", "tf32", (256,)),
    ("mobilenetv3-large", "inference", "amp", (1, 256)), ("mobilenetv3-large", "inference", "fp32", (256,)),
    ("mobilenetv3-small", "inference", "amp", (256,)),
    ("vgg16", "train", "tf32", (64,)), ("vgg16", "train", "amp", (64,)), ("vgg16", "inference", "amp", (64,)),
    ("vgg16", "train", "fp32", (64,)),
    ("alexnet", "train", "fp32", (256,)), ("alexnet", "train", "amp", (256,)),
    ("alexnet", "inference", "amp", (256,)),
    ("bert-base", "train", "amp", (32,)), ("bert-base", "train", "tf32", (32,)),
    ("bert-base", "inference", "amp", (1, 32, 128)), ("bert-base", "inference", "fp32", (32,)),
    ("gpt2", "train", "amp", (8,)), ("gpt2", "inference", "amp", (1, 8)),
    ("resnet50", "train", "amp-bf16", (256,)), ("bert-base", "train", "amp-bf16", (32,)),
    ("mlp", "train", "fp32", (64,)), ("mlp", "inference", "fp32", (1, 1024)),
]
SEQ_LEN = {"bert-base": 128, "gpt2": 1024}


def zoo_step(model: str, mode: str, precision: str, batch: int, data: str = "device") -> dict[str, Any]:
    """Times one training (SGD with momentum, cross-entropy, GradScaler under AMP) or inference step."""
    import torch

    step, settings = build_step(model, mode, precision, batch, data)
    torch.cuda.reset_peak_memory_stats()
    t = cuda_time(step, min_s=0.4, warmup=5)
    return {**settings, "step_s": t["median_s"], "step_min_s": t["min_s"], "step_max_s": t["max_s"],
            "steps_timed": t["calls"], "samples_per_s": batch / t["median_s"],
            "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
            "peak_reserved_bytes": torch.cuda.max_memory_reserved()}


def build_step(model: str, mode: str, precision: str, batch: int, data: str = "device",
               layout: str | None = None, optimizer: str = "momentum",
               seq_len: int | None = None, grad: bool = False) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The step as a callable, and the settings it runs under. precision 'fp16' is the model itself in
    16-bit (`model.half()` and a half input, no autocast, no GradScaler), as many published harnesses ran;
    layout None is channels-last for AMP CNNs and NCHW otherwise; optimizer 'none' is a training step
    without an update (zero_grad, forward, loss, backward), as those harnesses timed it; grad runs an
    inference forward with autograd recording (no `torch.no_grad()`), as harnesses written for PyTorch 0.4
    and earlier did."""
    import torch
    import torch.nn.functional as F

    from roofline.workload.zoo import build_module, example_input, get_model

    spec = get_model(model)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.benchmark = True
    seq = seq_len or SEQ_LEN.get(model)
    channels_last = spec.family == "vision" and (layout == "nhwc" if layout else precision in ("amp", "amp-bf16"))
    module = build_module(model, seq_len=seq).cuda()
    host = example_input(model, batch, seq_len=seq)
    if precision == "fp16":
        module = module.half()
        if host.is_floating_point():
            host = host.half()
    if channels_last:
        module = module.to(memory_format=torch.channels_last)
        host = host.contiguous(memory_format=torch.channels_last)
    if data == "pinned":
        host = host.pin_memory()
    x_dev = host.cuda()
    labels = torch.randint(0, spec.num_classes or 2, (batch,), device="cuda")
    amp = precision in ("amp", "amp-bf16")
    autocast_dtype = torch.bfloat16 if precision == "amp-bf16" else torch.float16

    def inputs() -> Any:
        return x_dev if data == "device" else host.to("cuda", non_blocking=data == "pinned")

    def loss_of(out: Any) -> Any:
        if isinstance(out, tuple):
            out = out[0]
        if model == "gpt2":
            return F.cross_entropy(out.float().flatten(0, 1), x_dev.flatten())
        if spec.family == "text" or (spec.num_classes or 0) < 2:
            return out.float().square().mean()
        return F.cross_entropy(out.float(), labels)

    if mode == "inference":
        module.eval()

        def step() -> Any:
            with torch.set_grad_enabled(grad), torch.autocast("cuda", dtype=autocast_dtype, enabled=amp):
                return module(inputs())
    elif optimizer == "none":
        module.train()

        def step() -> Any:
            module.zero_grad()
            with torch.autocast("cuda", dtype=autocast_dtype, enabled=amp):
                loss = loss_of(module(inputs()))
            loss.backward()
            return loss
    else:
        module.train()
        opt = torch.optim.SGD(module.parameters(), lr=1e-3, momentum=0.9)
        scaler = torch.amp.GradScaler("cuda", enabled=precision == "amp")

        def step() -> Any:
            with torch.autocast("cuda", dtype=autocast_dtype, enabled=amp):
                loss = loss_of(module(inputs()))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            return loss

    return step, {"model": model, "mode": mode, "precision": precision, "batch": batch, "data": data,
                  "channels_last": channels_last, "seq_len": seq,
                  "optimizer": optimizer if mode == "train" else None, "grad": grad if mode == "inference" else None}


BREAKDOWN_CASES = [("bert-base", "train", "amp", 32), ("bert-base", "train", "tf32", 32),
                   ("bert-base", "inference", "amp", 128), ("gpt2", "train", "amp", 8),
                   ("resnet50", "train", "amp", 256), ("resnet50", "train", "fp32", 64),
                   ("mobilenetv3-large", "train", "amp", 256), ("resnet50", "inference", "amp", 1),
                   ("vgg16", "train", "amp", 64), ("alexnet", "train", "amp", 256), ("mlp", "train", "fp32", 64)]
PROFILED_STEPS = 5


def breakdown(deadline: float, models: set[str] | None = None) -> list[dict[str, Any]]:
    """Where a step's time goes: torch.profiler's device (kernel) self time and host self time per aten op,
    over PROFILED_STEPS steps after warm-up, beside the step's wall time; a device busy for less than the
    wall time means the host (Python and dispatch) sets the pace."""
    import torch

    rows: list[dict[str, Any]] = []
    for case in BREAKDOWN_CASES:
        if models is not None and case[0] not in models:
            continue
        if time.time() > deadline:
            rows.append({"skipped": list(case), "why": "budget"})
            continue
        try:
            rows.append(_profiled(build_step(*case)))
        except (RuntimeError, ValueError) as exc:
            rows.append({"case": list(case), "error": str(exc)[:300]})
        print("breakdown", rows[-1].get("model", case), rows[-1].get("profiled_wall_s"), flush=True)
        torch.cuda.empty_cache()
    return rows


def _profiled(built: tuple[Callable[[], Any], dict[str, Any]]) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    step, settings = built
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(PROFILED_STEPS):
            step()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / PROFILED_STEPS
    ops = [{"op": e.key, "calls": e.count // PROFILED_STEPS,
            "device_s": e.self_device_time_total * 1e-6 / PROFILED_STEPS,
            "host_s": e.self_cpu_time_total * 1e-6 / PROFILED_STEPS}
           for e in prof.key_averages() if e.key.startswith("aten::") or e.self_device_time_total > 0]
    ops.sort(key=lambda o: -o["device_s"])
    kernels = sum(e.self_device_time_total for e in prof.key_averages() if not e.key.startswith("aten::"))
    return {**settings, "profiled_wall_s": wall, "kernel_time_s": kernels * 1e-6 / PROFILED_STEPS,
            "aten_ops": [o for o in ops if o["op"].startswith("aten::")][:60],
            "kernels": [{"kernel": o["op"][:160], "calls": o["calls"], "device_s": o["device_s"]}
                        for o in ops if not o["op"].startswith("aten::")][:40]}


HOST_CASES = [("mlp", "fp32"), ("mlp", "amp"), ("resnet50", "fp32"), ("resnet50", "amp"), ("resnet18", "amp"),
              ("mobilenetv3-large", "amp"), ("vgg16", "amp"), ("alexnet", "amp"), ("bert-base", "fp32"),
              ("bert-base", "amp"), ("gpt2", "amp")]
HOST_REPEATS = 30


def host_phases(deadline: float) -> list[dict[str, Any]]:
    """The host's time for each phase of a training step at batch 1, where the device's work is too small to
    matter: forward (with the loss), backward, optimizer step (through GradScaler under AMP) and zero_grad,
    each ended by a synchronize and timed on the wall clock; medians of HOST_REPEATS steps after warm-up."""
    import torch
    import torch.nn.functional as F

    from roofline.workload.zoo import build_module, example_input, get_model

    rows: list[dict[str, Any]] = []
    for model, precision in HOST_CASES:
        if time.time() > deadline:
            rows.append({"skipped": [model, precision], "why": "budget"})
            continue
        spec = get_model(model)
        module = build_module(model, seq_len=SEQ_LEN.get(model)).cuda().train()
        x = example_input(model, 1, seq_len=SEQ_LEN.get(model)).cuda()
        amp = precision == "amp"
        opt = torch.optim.SGD(module.parameters(), lr=1e-3, momentum=0.9)
        scaler = torch.amp.GradScaler("cuda", enabled=amp)
        times: dict[str, list[float]] = {"forward": [], "backward": [], "optimizer": [], "zero_grad": []}
        for i in range(HOST_REPEATS + 5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                out = module(x)
                out = out[0] if isinstance(out, tuple) else out
                loss = out.float().square().mean() if spec.family == "text" or (spec.num_classes or 0) < 2 \
                    else F.cross_entropy(out.float(), torch.zeros(1, dtype=torch.long, device="cuda"))
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            scaler.scale(loss).backward()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            scaler.step(opt)
            scaler.update()
            torch.cuda.synchronize()
            t3 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            t4 = time.perf_counter()
            if i >= 5:
                for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                    times[key].append(dt)
        row = {"model": model, "precision": precision, "batch": 1, "seq_len": SEQ_LEN.get(model),
               "param_tensors": sum(1 for _ in module.parameters())}
        row |= {f"{k}_s": sorted(v)[len(v) // 2] for k, v in times.items()}
        rows.append(row)
        print("host", row, flush=True)
        del module, opt
        torch.cuda.empty_cache()
    return rows


def zoo(deadline: float, models: set[str] | None, precisions: set[str] | None = None) -> list[dict[str, Any]]:
    import torch

    rows: list[dict[str, Any]] = []
    cases = [(m, mode, p, b, "device") for m, mode, p, bs in ZOO_CASES for b in bs]
    cases += [("resnet50", "inference", "amp", b, "device") for b in (127, 128, 129)]
    cases += [("resnet50", mode, "amp", 256, d) for mode in ("inference", "train") for d in ("pageable", "pinned")]
    cases = [c for c in cases if (models is None or c[0] in models) and (precisions is None or c[2] in precisions)]
    for case in cases:
        if time.time() > deadline:
            rows.append({"skipped": list(case), "why": "budget"})
            continue
        try:
            rows.append(zoo_step(*case))
        except (RuntimeError, ValueError) as exc:
            rows.append({"case": list(case), "error": str(exc)[:300]})
        torch.cuda.empty_cache()
        print("zoo", rows[-1], flush=True)
    return rows


Case = tuple[str, str, str, int, str, str, int | None]
"""(model, mode, precision, batch, layout, optimizer, sequence length): one step as `build_step` builds it."""
HALF_CASES: list[Case] = [
    # (model, mode, precision, batch, layout, optimizer, sequence length): the published harnesses that ran
    # the model itself in 16-bit over NCHW tensors (ryujaehun/pytorch-gpu-benchmark: batch 12, no update;
    # u39kun/deep-learning-benchmark: VGG-16 at batch 16), beside the same step in fp32 and under autocast,
    # and the layouts apart at sizes where the device sets the pace; then BERT as transformer-deploy and
    # NVIDIA's SQuAD inference ran it (autocast or model.half() at 384 tokens).
    *[(m, mode, p, 12, "nchw", "none", None) for p in ("fp16", "fp32") for m in ("resnet18", "resnet50", "vgg16")
      for mode in ("inference", "train")],
    ("vgg16", "inference", "fp16", 16, "nchw", "none", None), ("vgg16", "train", "fp16", 16, "nchw", "none", None),
    ("resnet50", "inference", "fp16", 256, "nchw", "none", None),
    ("resnet50", "inference", "fp16", 256, "nhwc", "none", None),
    ("resnet50", "inference", "amp", 256, "nchw", "none", None),
    ("resnet50", "train", "fp16", 256, "nchw", "none", None), ("resnet50", "train", "amp", 256, "nchw", "none", None),
    ("resnet50", "train", "amp", 256, "nhwc", "none", None),
    ("resnet18", "inference", "fp16", 256, "nchw", "none", None),
    ("vgg16", "inference", "fp16", 64, "nchw", "none", None), ("vgg16", "inference", "amp", 64, "nchw", "none", None),
    *[("bert-base", "inference", p, 16, "nchw", "none", 384) for p in ("amp", "fp16", "fp32")],
    ("bert-base", "inference", "fp16", 32, "nchw", "none", 128),
    *[("bert-large", "inference", p, 8, "nchw", "none", 384) for p in ("amp", "fp16")],
    ("bert-base", "train", "amp", 16, "nchw", "none", 384), ("bert-base", "train", "fp16", 16, "nchw", "none", 384),
]
HALF_BREAKDOWN: list[Case] = [("resnet50", "inference", "fp16", 256, "nchw", "none", None),
                  ("resnet50", "inference", "amp", 256, "nchw", "none", None),
                  ("resnet50", "train", "fp16", 12, "nchw", "none", None),
                  ("bert-base", "inference", "amp", 16, "nchw", "none", 384),
                  ("bert-base", "inference", "fp16", 16, "nchw", "none", 384)]
SYNCED_STEPS = 20


def synced_step_s(step: Callable[[], Any]) -> float:
    """The median of SYNCED_STEPS steps each between torch.cuda.synchronize() calls on the wall clock: how the
    published harnesses timed a step, the host's issue time and the device's tail both in it."""
    import torch

    samples = []
    for _ in range(SYNCED_STEPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - t0)
    return sorted(samples)[SYNCED_STEPS // 2]


def half(deadline: float) -> dict[str, list[dict[str, Any]]]:
    """HALF_CASES timed two ways: queued back to back between CUDA events (the device's pace), and each step
    between torch.cuda.synchronize() calls on the wall clock, as the published harnesses timed them (the
    median of SYNCED_STEPS); then HALF_BREAKDOWN under the profiler, with its kernels by name."""
    import torch

    def timed(step: Callable[[], Any]) -> dict[str, Any]:
        torch.cuda.reset_peak_memory_stats()
        t = cuda_time(step, min_s=0.3, warmup=5)
        return {"step_s": t["median_s"], "step_min_s": t["min_s"], "step_max_s": t["max_s"],
                "steps_timed": t["calls"], "synced_step_s": synced_step_s(step),
                "peak_allocated_bytes": torch.cuda.max_memory_allocated()}

    return {"steps": run_cases(HALF_CASES, deadline, "half", timed),
            "breakdown": run_cases(HALF_BREAKDOWN, deadline, "half breakdown", lambda step: _profiled((step, {})))}


def run_cases(cases: list[Case], deadline: float, label: str,
              measure: Callable[[Callable[[], Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case's step (`build_step`) measured by `measure`, beside the settings it ran under, while the
    deadline allows; a case that fails is recorded with its error rather than ending the run."""
    import torch

    rows: list[dict[str, Any]] = []
    for case in cases:
        if time.time() > deadline:
            rows.append({"skipped": list(case), "why": "budget"})
            continue
        model, mode, precision, batch, layout, optimizer, seq = case
        try:
            step, settings = build_step(model, mode, precision, batch, layout=layout, optimizer=optimizer,
                                        seq_len=seq)
            rows.append({**settings, **measure(step)})
        except (RuntimeError, ValueError) as exc:
            rows.append({"case": list(case), "error": str(exc)[:300]})
        torch.cuda.empty_cache()
        print(label, {k: v for k, v in rows[-1].items() if not isinstance(v, (list, dict))}, flush=True)
    return rows


LAUNCH_CASES: list[Case] = [
    # (model, mode, precision, batch, layout, optimizer, sequence length): steps small enough that the host
    # sets the pace, in every precision and layout a published harness ran them
    *[(m, "inference", p, 1, layout, "none", None) for m in ("resnet18", "resnet50")
      for p, layout in (("fp32", "nchw"), ("fp16", "nchw"), ("fp16", "nhwc"), ("amp", "nhwc"), ("amp", "nchw"))],
    *[("mobilenetv3-large", "inference", p, 1, layout, "none", None) for p, layout in (("fp16", "nchw"),
                                                                                      ("amp", "nhwc"))],
    *[("bert-base", "inference", p, 1, "nchw", "none", 128) for p in ("fp32", "fp16", "amp")],
    *[("resnet50", "train", p, 1, layout, "none", None) for p, layout in (("fp32", "nchw"), ("fp16", "nchw"),
                                                                          ("amp", "nhwc"))],
]
GRAD_CASES: list[tuple[str, int, str]] = [
    # (model, batch, data): fp32 inference forwards, each timed with autograd off and on; batch 1 where the host
    # sets the pace, 32 where the device does, and inputs copied from pageable memory as a DataLoader loop does
    *[(m, 1, "device") for m in ("resnet50", "resnet18", "vgg16", "mobilenetv3-large", "bert-base", "mlp")],
    ("resnet50", 32, "device"), ("vgg16", 32, "device"), ("resnet50", 1, "pageable"), ("resnet50", 32, "pageable"),
]


def grad_mode(deadline: float) -> list[dict[str, Any]]:
    """GRAD_CASES with autograd recording off (`torch.no_grad()`) and on: queued between CUDA events (the
    device's pace) and each forward between synchronizes on the wall clock (the host's issue time where it
    sets the pace), so an inference harness that never disabled autograd can be priced."""
    import torch

    rows: list[dict[str, Any]] = []
    for model, batch, data in GRAD_CASES:
        for grad in (False, True):
            if time.time() > deadline:
                rows.append({"skipped": [model, batch, data, grad], "why": "budget"})
                continue
            try:
                step, settings = build_step(model, "inference", "fp32", batch, data, layout="nchw", grad=grad)
                t = cuda_time(step, min_s=0.3, warmup=5)
                rows.append({**settings, "step_s": t["median_s"], "synced_step_s": synced_step_s(step)})
            except (RuntimeError, ValueError) as exc:
                rows.append({"case": [model, batch, data, grad], "error": str(exc)[:300]})
            torch.cuda.empty_cache()
            print("grad", {k: v for k, v in rows[-1].items() if not isinstance(v, (list, dict))}, flush=True)
    return rows


RUNTIME_CALL_PREFIXES = ("cuda", "cu")
"""Profiler events of the CUDA runtime and driver APIs the host calls (cudaLaunchKernel, cuLaunchKernelEx,
cudaMemcpyAsync, ...): the launches a step's host pays for, counted apart from the framework's own ops."""


def launches(deadline: float) -> list[dict[str, Any]]:
    """What the host spends per step where it sets the pace: the step between torch.cuda.synchronize() calls
    (median of SYNCED_STEPS) and queued back to back, then under the profiler the aten ops it dispatched and the
    CUDA API calls it made (count and host time per step), so host time can be split between the framework's
    dispatch per op and the driver's per kernel launch."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    def host(step: Callable[[], Any]) -> dict[str, Any]:
        queued = cuda_time(step, min_s=0.2, warmup=10)["median_s"]
        synced = synced_step_s(step)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(PROFILED_STEPS):
                step()
            torch.cuda.synchronize()
        events = prof.key_averages()
        api = {e.key: {"calls": e.count / PROFILED_STEPS, "host_s": e.self_cpu_time_total * 1e-6 / PROFILED_STEPS}
               for e in events if e.key.startswith(RUNTIME_CALL_PREFIXES) and e.self_device_time_total == 0}
        aten = [e for e in events if e.key.startswith("aten::")]
        kernels = sum(e.count for e in events if e.self_device_time_total > 0 and not e.key.startswith("aten::"))
        return {"step_s": queued, "synced_step_s": synced,
                "aten_calls": sum(e.count for e in aten) / PROFILED_STEPS,
                "aten_self_host_s": sum(e.self_cpu_time_total for e in aten) * 1e-6 / PROFILED_STEPS,
                "kernels": kernels / PROFILED_STEPS,
                "kernel_device_s": sum(e.self_device_time_total for e in events
                                       if not e.key.startswith("aten::")) * 1e-6 / PROFILED_STEPS,
                "runtime_api": api,
                "aten_ops": sorted(({"op": e.key, "calls": e.count / PROFILED_STEPS,
                                     "host_s": e.self_cpu_time_total * 1e-6 / PROFILED_STEPS} for e in aten),
                                   key=lambda o: -o["host_s"])[:40]}

    return run_cases(LAUNCH_CASES, deadline, "launches", host)


LLM_CONFIGS: dict[str, dict[str, Any]] = {
    # Shapes of the published models (their Hugging Face config.json); weights random, nothing downloaded.
    "llama-3-8b": dict(model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                       num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                       max_position_embeddings=8192, rope_theta=500000.0, tie_word_embeddings=False),
    "llama-2-7b": dict(model_type="llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                       num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                       max_position_embeddings=4096, tie_word_embeddings=False),
    "gpt2": dict(model_type="gpt2", n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024),
}
LLM_CASES: list[tuple[str, int, tuple[int, ...], str]] = [
    # (config, prompt length, batches, runtime), in the order a short budget should keep them
    ("llama-3-8b", 512, (1, 8), "static"), ("llama-3-8b", 128, (128, 256), "eager"),
    ("llama-2-7b", 512, (16, 1), "eager"), ("llama-3-8b", 512, (1, 8, 32, 64), "eager"),
    ("llama-3-8b", 2048, (1, 8), "eager"), ("gpt2", 512, (1, 32), "eager"),
]
STATIC_CACHE_LEN = 1024
"""Every generate call of the static runtime gets a cache of this length, so compiled graphs keep one shape."""
NEW_TOKENS = 64


def _random_llm(cfg: Any) -> Any:
    """The model with random bf16 weights made on the GPU (transformers 5 calls the keyword `dtype`)."""
    import torch
    import transformers

    with torch.device("cuda"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        except TypeError:
            model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    return model.eval()


def llm(deadline: float, models: set[str] | None, runtimes: set[str] | None = None) -> list[dict[str, Any]]:
    """transformers' generate (greedy), bf16: TTFT is generate with one new token, TPOT is
    (T(1 + n) - T(1)) / n. Runtime 'eager' grows a DynamicCache; 'static' hands generate a StaticCache of
    STATIC_CACHE_LEN, with which transformers compiles the forward on CUDA (the row records the graphs dynamo
    made, so one can see whether it did)."""
    import torch
    import transformers

    rows: list[dict[str, Any]] = []
    cases = [c for c in LLM_CASES if runtimes is None or c[3] in runtimes]
    for name, prompt, batches, runtime in cases:
        if models is not None and name not in models:
            continue
        if time.time() > deadline:
            rows.append({"skipped": name, "why": "budget"})
            continue
        cfg_kwargs = dict(LLM_CONFIGS[name])
        cfg = transformers.AutoConfig.for_model(cfg_kwargs.pop("model_type"), **cfg_kwargs)
        model = _random_llm(cfg)
        params = sum(p.numel() for p in model.parameters())
        for batch in batches:
            if time.time() > deadline:
                break
            ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")

            def gen(n: int, ids=ids, model=model, cfg=cfg, runtime=runtime) -> None:
                extra = {}
                if runtime == "static":
                    extra["past_key_values"] = transformers.StaticCache(config=cfg, max_cache_len=STATIC_CACHE_LEN)
                model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                               do_sample=False, pad_token_id=0, **extra)

            try:
                with torch.no_grad():
                    torch.cuda.reset_peak_memory_stats()
                    ttft = cuda_time(lambda: gen(1), min_s=0.2, repeats=3, warmup=1)["median_s"]
                    full = cuda_time(lambda: gen(1 + NEW_TOKENS), min_s=0.2, repeats=3, warmup=1)["median_s"]
                graphs = dict(torch._dynamo.utils.counters["stats"])
                rows.append({"model": name, "params": params, "prompt_len": prompt, "batch": batch,
                             "new_tokens": NEW_TOKENS, "dtype": "bf16", "runtime": runtime, "dynamo_stats": graphs,
                             "ttft_s": ttft, "tpot_s": (full - ttft) / NEW_TOKENS,
                             "decode_tokens_per_s": batch * NEW_TOKENS / (full - ttft),
                             "peak_allocated_bytes": torch.cuda.max_memory_allocated()})
            except (RuntimeError, ValueError, TypeError) as exc:
                rows.append({"model": name, "batch": batch, "error": str(exc)[:300]})
            print("llm", rows[-1], flush=True)
        del model
        torch.cuda.empty_cache()
    return rows


DECODE_CASES: list[tuple[str, int, int]] = [("llama-3-8b", 512, 8), ("llama-3-8b", 512, 64), ("llama-3-8b", 2048, 8),
                                             ("llama-2-7b", 512, 64)]
"""(config, prompt length, batch): eager decode steps whose time per output token the cost model misses by a
third (llama-3-8b at batch 64 x 512 and 8 x 2048) beside one it gets (batch 8 x 512) and an MHA model."""
DECODE_STEPS = 8


def decode_breakdown(deadline: float) -> list[dict[str, Any]]:
    """Where an eager decode step's time goes: the prompt run through the model once (a DynamicCache), then
    DECODE_STEPS single-token forwards timed between CUDA events and, after a fresh prefill, under the profiler:
    each step's kernels and aten ops by device time, per step, as transformers' generate runs them (greedy,
    bf16, no padding)."""
    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile

    rows: list[dict[str, Any]] = []
    for name, prompt, batch in DECODE_CASES:
        if time.time() > deadline:
            rows.append({"skipped": [name, prompt, batch], "why": "budget"})
            continue
        cfg_kwargs = dict(LLM_CONFIGS[name])
        cfg = transformers.AutoConfig.for_model(cfg_kwargs.pop("model_type"), **cfg_kwargs)
        model = _random_llm(cfg)
        try:
            with torch.no_grad():
                ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")

                def prefill(ids=ids, model=model) -> tuple[Any, Any]:
                    out = model(input_ids=ids, use_cache=True)
                    return out.past_key_values, out.logits[:, -1:].argmax(-1)

                def steps(cache: Any, token: Any, n: int, model=model) -> None:
                    for _ in range(n):
                        out = model(input_ids=token, past_key_values=cache, use_cache=True)
                        cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)

                steps(*prefill(), 2)
                cache, token = prefill()
                torch.cuda.synchronize()
                start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start_event.record()
                steps(cache, token, DECODE_STEPS)
                end_event.record()
                end_event.synchronize()
                step_s = start_event.elapsed_time(end_event) * 1e-3 / DECODE_STEPS
                cache, token = prefill()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    steps(cache, token, DECODE_STEPS)
                    torch.cuda.synchronize()
            events = prof.key_averages()
            kernels = sorted(({"kernel": e.key[:160], "calls": e.count / DECODE_STEPS,
                               "device_s": e.self_device_time_total * 1e-6 / DECODE_STEPS}
                              for e in events if e.self_device_time_total > 0 and not e.key.startswith("aten::")),
                             key=lambda k: -k["device_s"])[:40]
            aten = sorted(({"op": e.key, "calls": e.count / DECODE_STEPS,
                            "device_s": e.self_device_time_total * 1e-6 / DECODE_STEPS,
                            "host_s": e.self_cpu_time_total * 1e-6 / DECODE_STEPS}
                           for e in events if e.key.startswith("aten::")), key=lambda o: -o["device_s"])[:40]
            rows.append({"model": name, "prompt_len": prompt, "batch": batch, "decode_steps": DECODE_STEPS,
                         "step_s": step_s, "kernels": kernels, "aten_ops": aten,
                         "kernel_device_s": sum(k["device_s"] for k in kernels)})
        except (RuntimeError, ValueError, TypeError) as exc:
            rows.append({"model": name, "batch": batch, "error": str(exc)[:300]})
        print("decode", {k: rows[-1].get(k) for k in ("model", "prompt_len", "batch", "step_s", "error")}, flush=True)
        del model
        torch.cuda.empty_cache()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sections", default="micro,zoo,llm")
    parser.add_argument("--budget-s", type=float, default=480.0)
    parser.add_argument("--models", help="comma-separated zoo and LLM names to run (default: all)")
    parser.add_argument("--runtimes", help="LLM runtimes to run: eager,static (default: both)")
    parser.add_argument("--precisions", help="comma-separated zoo precisions to run (default: all), e.g. amp,amp-bf16")
    args = parser.parse_args()
    start = time.time()
    sections = args.sections.split(",")
    models = set(args.models.split(",")) if args.models else None
    doc: dict[str, Any] = {"environment": environment(), "script": "benchmarks/gpu_live.py"}

    def save() -> None:
        doc["elapsed_s"] = time.time() - start
        args.out.write_text(json.dumps(doc, indent=1))

    save()
    if "micro" in sections:
        for key, fn in (("gemm", gemm_rates), ("memory", memory_rates), ("kernels", kernel_rates),
                        ("overheads", overheads)):
            try:
                doc[key] = fn()
            except (RuntimeError, ValueError) as exc:
                doc[key] = {"error": str(exc)[:300]}
            print(key, "done", round(time.time() - start, 1), flush=True)
            save()
    if "host" in sections:
        doc["host"] = host_phases(start + args.budget_s)
        save()
    if "breakdown" in sections:
        doc["breakdown"] = breakdown(start + args.budget_s * 0.5, models)
        save()
    if "grad" in sections:
        doc["grad"] = grad_mode(start + args.budget_s)
        save()
    if "decode" in sections:
        doc["decode"] = decode_breakdown(start + args.budget_s)
        save()
    if "launches" in sections:
        doc["launches"] = launches(start + args.budget_s)
        save()
    if "half" in sections:
        doc["half"] = half(start + args.budget_s)
        save()
    if "zoo" in sections:
        doc["zoo"] = zoo(start + args.budget_s * (0.6 if "llm" in sections else 1.0), models,
                         set(args.precisions.split(",")) if args.precisions else None)
        save()
    if "llm" in sections:
        doc["llm"] = llm(start + args.budget_s, models, set(args.runtimes.split(",")) if args.runtimes else None)
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())

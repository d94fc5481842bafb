"""Measure, on a Hopper GPU, how fast a matrix product runs when its kernel cannot use Hopper's wgmma instruction.

TensorRT-LLM v0.9.0's mixture-of-experts GEMMs (CUTLASS 2.x grouped kernels dispatched as Sm80 for every SM 8.0
and later) and vLLM 0.3.x's fused_moe (Triton 2.1.0, which emits no wgmma) run Ampere-style kernels on an H100:
warp-level mma.sync fed from shared memory by cp.async. What such a kernel reaches on Hopper is not settled by
the published figures (a second-hand 494 of 757 TFLOP/s on an H800 from a microbenchmark paper, 117 against
160 TFLOP/s for CUTLASS's SM80 and SM90 grouped kernels in one pull request, and a register-only WMMA loop at the
full dense rate). This script settles it for one kernel: the same Triton product compiled twice, once as Triton
compiles it for Hopper (wgmma) and once with DISABLE_MMA_V3=1 (mma.sync, the only path Triton 2.1 had), each in
a process of its own so each compiles afresh, beside cuBLAS (torch.matmul) on the same shapes.

    python benchmarks/gpu_mma_sync.py --out mma-sync.json

Shapes: an expert's products in Mixtral-8x7B (14336 x 4096 and 4096 x 14336) at 64 to 4096 rows, Llama-2-7B's
MLP product, and a square 8192 product; fp16 in (TensorRT-LLM v0.9's Mixtral experts ran in fp16), fp32
accumulate. Needs a GPU and Triton (`measure('cpu', ...)` under TRITON_INTERPRET=1 checks the kernel's result).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_live import cuda_time, emit  # noqa: E402

SHAPES = [(m, 14336, 4096) for m in (64, 256, 1024, 4096)] + [(m, 4096, 14336) for m in (256, 4096)] + [
    (2048, 11008, 4096), (8192, 8192, 8192)]
"""(M, N, K) of y = x @ W with x (M, K) and W (K, N)."""
CONFIGS = [(128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4)]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) tried per shape; the fastest is kept, as an autotuned kernel would."""


def _kernel() -> Any:
    """The Triton product: one program per output tile, the K loop of tl.dot over pipelined loads (K a
    compile-time constant, as each shape compiles anyway)."""
    import triton
    import triton.language as tl

    @triton.jit
    def matmul(a, b, c, M, N, sam, sak, sbk, sbn, scm, scn, K: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            x = tl.load(a + rm[:, None] * sam + (k0 + rk)[None, :] * sak, mask=rm[:, None] < M, other=0.0)
            w = tl.load(b + (k0 + rk)[:, None] * sbk + rn[None, :] * sbn, mask=rn[None, :] < N, other=0.0)
            acc += tl.dot(x, w)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    return matmul


def measure(device: str = "cuda", shapes: list[tuple[int, int, int]] = SHAPES) -> list[dict[str, Any]]:
    """Each shape: the fastest Triton configuration's seconds, and cuBLAS's; run in the mode this process's
    DISABLE_MMA_V3 sets."""
    import torch

    matmul = _kernel()
    rows = []
    for m, n, k in shapes:
        x = torch.randn(m, k, device=device, dtype=torch.float16)
        w = torch.randn(k, n, device=device, dtype=torch.float16)
        y = torch.empty(m, n, device=device, dtype=torch.float16)
        best: tuple[float, tuple[int, ...]] | None = None
        for bm, bn, bk, warps, stages in CONFIGS:
            grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)

            def run(x=x, w=w, y=y, shape=(m, n, k), grid=grid, tile=(bm, bn, bk), warps=warps, stages=stages) -> None:
                matmul[grid](x, w, y, shape[0], shape[1], x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                             y.stride(0), y.stride(1), K=shape[2], BM=tile[0], BN=tile[1], BK=tile[2],
                             num_warps=warps, num_stages=stages)
            try:
                t = cuda_time(run, min_s=0.05, warmup=1)["median_s"] if device == "cuda" else (run() or 0.0)
            except Exception as exc:  # a configuration the compiler refuses is skipped, the others still run
                print("config", (bm, bn, bk, warps, stages), type(exc).__name__, str(exc)[:120], flush=True)
                continue
            if best is None or t < best[0]:
                best = (t, (bm, bn, bk, warps, stages))
        if device != "cuda":
            torch.testing.assert_close(y.float(), (x.float() @ w.float()), rtol=2e-2, atol=2e-1)
            rows.append({"m": m, "n": n, "k": k, "checked": True})
            continue
        cublas = cuda_time(lambda x=x, w=w: torch.matmul(x, w), min_s=0.05, warmup=1)["median_s"]
        flops = 2.0 * m * n * k
        row: dict[str, Any] = {"m": m, "n": n, "k": k, "cublas_s": cublas, "cublas_flops_per_s": flops / cublas}
        if best is not None:
            row |= {"triton_s": best[0], "triton_flops_per_s": flops / best[0], "config": list(best[1])}
        rows.append(row)
        print("shape", (m, n, k), {key: row.get(key) for key in ("triton_flops_per_s", "cublas_flops_per_s")},
              flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--mode", choices=("wgmma", "mma-sync"), help="measure in this process, in one mode")
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(measure()))
        return 0
    doc: dict[str, Any] = {"script": "benchmarks/gpu_mma_sync.py", "date": time.strftime("%Y-%m-%d")}
    for mode, flag in (("wgmma", "0"), ("mma-sync", "1")):
        env = dict(os.environ, DISABLE_MMA_V3=flag)
        run = subprocess.run([sys.executable, __file__, "--mode", mode], env=env, capture_output=True, text=True,
                             timeout=300)
        lines = run.stdout.strip().splitlines()
        doc[mode] = json.loads(lines[-1]) if run.returncode == 0 and lines else {"error": run.stderr[-600:]}
        print(mode, "done", flush=True)
    emit(doc, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

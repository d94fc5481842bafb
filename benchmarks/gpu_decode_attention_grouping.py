"""Measure, on a GPU, whether a per-query-head decode attention kernel reloads its KV head from DRAM per query head.

Under grouped-query attention several query heads share one KV head. A per-head kernel (TensorRT-LLM's masked
multi-head attention before v0.7, vLLM V0's paged attention, FasterTransformer's kernel in AutoAWQ) runs one thread
block per query head and sequence, each loading its KV head over the whole context; a grouped kernel loads each KV
head once. `--decode-attention per-head` prices every block's loads at DRAM (roofline.workload.ops.serving,
MaskedMultiheadAttention), which matched NVIDIA's XQA-against-masked-MHA ratio on an H200 (Llama-2-70B, batch 192)
and beats grouped pricing at the median of every per-head block of the record, but prices its Mistral and Mixtral
rows at the largest batches and contexts 75-129% too slow (benchmarks/LOG.md, twenty-eighth session). The blocks
that share a KV head are launched one after another (the query head is the grid's fastest index), so they may run
together and meet in L2, reading the head from DRAM less often than once per block.

This script settles it for one kernel: the same Triton decode attention (one query token per sequence, an online
softmax over blocks of the context, fp16 in, fp32 accumulate), launched per query head (one program per query
head and sequence, the masked-MHA grid) and grouped (one program per KV head and sequence, its query heads
together), beside a copy's bandwidth on the same board; and per head again with the grid's indices swapped, so
that the blocks sharing a KV head run far apart in time. Per shape it reports the times and their ratios to the
grouped launch: near 1, the siblings share their loads in L2; near the group size, each reloads from DRAM.

    python benchmarks/gpu_decode_attention_grouping.py --out decode-attention-grouping.json

Needs a GPU and Triton (`measure('cpu', SMALL)` under TRITON_INTERPRET=1 checks the kernel's result).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_live import cuda_time, emit  # noqa: E402

HEAD_DIM = 128
SHAPES = [(8, 32, 8, 2048), (56, 32, 8, 3072), (120, 32, 8, 1152), (32, 32, 8, 4096), (192, 64, 8, 1152),
          (32, 32, 32, 2048)]
"""(sequences, query heads, KV heads, context): Mistral-7B's 32 over 8 at the record's TensorRT-LLM and AutoAWQ
batches and contexts, Llama-2-70B's 64 over 8 at NVIDIA's batch 192, and a multi-head control (group 1)."""
SMALL = [(2, 8, 2, 100), (3, 4, 4, 70)]
"""Shapes the interpreter checks against PyTorch's attention (a context that is not a multiple of the block)."""
BLOCK_T = 64
"""Context positions per step of a program's loop."""
ROWS = 16
"""Query rows a program holds: tl.dot needs 16; a per-head program fills one, a grouped one its group."""


def _kernel() -> Any:
    """One program: `per_program` consecutive query heads of one sequence (1, or the group when grouped), their
    KV head's K and V streamed in blocks of BLOCK_T positions, an online softmax in fp32."""
    import triton
    import triton.language as tl

    @triton.jit
    def attend(q, k, v, o, context, group, per_program, scale, sqb, sqh, skb, skh, skt, sob, soh,
               D: tl.constexpr, BT: tl.constexpr, R: tl.constexpr, HEAD_FAST: tl.constexpr):
        if HEAD_FAST:
            p, b = tl.program_id(0), tl.program_id(1)
        else:
            b, p = tl.program_id(0), tl.program_id(1)
        first = p * per_program
        kv_head = first // group
        r = tl.arange(0, R)
        d = tl.arange(0, D)
        t = tl.arange(0, BT)
        rows = r < per_program
        qb = tl.load(q + b * sqb + (first + r)[:, None] * sqh + d[None, :], mask=rows[:, None], other=0.0)
        m = tl.full((R,), float("-inf"), tl.float32)
        den = tl.zeros((R,), tl.float32)
        acc = tl.zeros((R, D), tl.float32)
        base = b * skb + kv_head * skh
        for t0 in range(0, context, BT):
            pos = t0 + t
            inside = pos < context
            kt = tl.load(k + base + pos[:, None] * skt + d[None, :], mask=inside[:, None], other=0.0)
            vt = tl.load(v + base + pos[:, None] * skt + d[None, :], mask=inside[:, None], other=0.0)
            s = tl.dot(qb, tl.trans(kt)) * scale
            s = tl.where(inside[None, :], s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            alpha = tl.exp(m - m_new)
            w = tl.exp(s - m_new[:, None])
            den = den * alpha + tl.sum(w, 1)
            acc = acc * alpha[:, None] + tl.dot(w.to(vt.dtype), vt)
            m = m_new
        out = acc / den[:, None]
        tl.store(o + b * sob + (first + r)[:, None] * soh + d[None, :], out.to(o.dtype.element_ty),
                 mask=rows[:, None])

    return attend


def _launcher(attend: Any, q: Any, k: Any, v: Any) -> Any:
    """launch(per_program, out, head_fast): the kernel over every sequence, `per_program` query heads to a program;
    head_fast launches a sequence's programs one after another (the masked-MHA grid), else a head's programs for
    every sequence first, which keeps the blocks that share a KV head apart in time."""
    batch, heads, kv_heads, context = q.shape[0], q.shape[1], k.shape[1], k.shape[2]

    def launch(per_program: int, out: Any, head_fast: bool = True) -> None:
        programs = heads // per_program
        attend[(programs, batch) if head_fast else (batch, programs)](
            q, k, v, out, context, heads // kv_heads, per_program, HEAD_DIM ** -0.5, q.stride(0), q.stride(1),
            k.stride(0), k.stride(1), k.stride(2), out.stride(0), out.stride(1),
            D=HEAD_DIM, BT=BLOCK_T, R=ROWS, HEAD_FAST=head_fast, num_warps=4)

    return launch


def _shape(attend: Any, device: str, batch: int, heads: int, kv_heads: int, context: int) -> dict[str, Any]:
    """One shape: both launches' seconds on a GPU; off one, both results checked against PyTorch's attention."""
    import torch

    group = heads // kv_heads
    q = torch.randn(batch, heads, HEAD_DIM, device=device, dtype=torch.float16)
    k = torch.randn(batch, kv_heads, context, HEAD_DIM, device=device, dtype=torch.float16)
    v = torch.randn(batch, kv_heads, context, HEAD_DIM, device=device, dtype=torch.float16)
    launch = _launcher(attend, q, k, v)
    kernels = {"per_head": (1, True), "per_head_apart": (1, False), "grouped": (group, True)}
    row: dict[str, Any] = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "context": context, "group": group}
    if device != "cuda":
        reference = torch.nn.functional.scaled_dot_product_attention(
            q.float()[:, :, None, :], k.float().repeat_interleave(group, 1),
            v.float().repeat_interleave(group, 1))[:, :, 0, :]
        for per_program, head_fast in kernels.values():
            out = torch.empty_like(q)
            launch(per_program, out, head_fast)
            torch.testing.assert_close(out.float(), reference, rtol=2e-2, atol=2e-2)
        return row | {"checked": True}
    kv_bytes = 2.0 * batch * kv_heads * context * HEAD_DIM * 2
    row["kv_bytes_once"] = kv_bytes
    for name, (per_program, head_fast) in kernels.items():
        out = torch.empty_like(q)
        seconds = cuda_time(lambda p=per_program, o=out, f=head_fast: launch(p, o, f), min_s=0.05,
                            warmup=2)["median_s"]
        row[f"{name}_s"] = seconds
        row[f"{name}_kv_once_bytes_per_s"] = kv_bytes / seconds
    row["per_head_over_grouped"] = row["per_head_s"] / row["grouped_s"]
    row["per_head_apart_over_grouped"] = row["per_head_apart_s"] / row["grouped_s"]
    return row


def measure(device: str = "cuda", shapes: list[tuple[int, int, int, int]] = SHAPES) -> list[dict[str, Any]]:
    """Each shape's row (`_shape`), printed as it comes."""
    attend = _kernel()
    rows = []
    for shape in shapes:
        rows.append(_shape(attend, device, *shape))
        print("shape", shape, {key: rows[-1].get(key) for key in ("per_head_s", "grouped_s", "per_head_over_grouped")},
              flush=True)
    return rows


def copy_rate() -> float:
    """Bytes read + written per second by a copy of 2 GiB: the board's streaming reference."""
    import torch

    a = torch.empty(2**30, device="cuda", dtype=torch.float16)
    b = torch.empty_like(a)
    seconds = cuda_time(lambda: a.copy_(b), min_s=0.1)["median_s"]
    return 2.0 * a.numel() * a.element_size() / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("needs a CUDA GPU; TRITON_INTERPRET=1 python -c 'import gpu_decode_attention_grouping as g; "
              "g.measure(\"cpu\", g.SMALL)' checks the kernel without one", file=sys.stderr)
        return 2
    doc: dict[str, Any] = {"script": "benchmarks/gpu_decode_attention_grouping.py", "date": time.strftime("%Y-%m-%d"),
                           "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                           "copy_bytes_per_s": copy_rate(), "rows": measure()}
    emit(doc, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a step's tensors cost the C allocator on a CPU: the bytes it first-touches in fresh pages.

Eager PyTorch allocates every result and every kernel temporary from the C heap (glibc's malloc) and frees
a tensor as soon as its last reader has run. glibc serves a request from a free chunk of its heap when one
fits; otherwise it grows the heap, or maps the request anew if it is at least its mmap threshold. The
threshold starts at 128 KiB and rises to the size of the largest mapped chunk freed so far (up to 32 MiB);
after a free, the heap's top is returned to the kernel once more than twice the threshold is free there
(mallopt(3), glibc's malloc.c). Every fresh page costs a fault and a zeroed page on first touch, a cost the
calibration measures (`roofline.bench.kernels.page_fault_rate`: 2.3-3.2 GB/s on this project's VM).

Inference: the allocation sequence follows from the dataflow (a result lives until its last reader runs, a
view or an in-place result is the tensor it was made from) and from what each kernel allocates around its
result, recorded with a malloc tracer (LD_PRELOAD) in eager PyTorch 2.13: a oneDNN convolution over NCHW
tensors reorders its input, its weight and its output into channel-blocked temporaries; PyTorch's batch-1
fallback convolution fills an im2col buffer; max pooling writes int64 indices it then drops. `GlibcHeap`
replays that sequence under glibc's rules for a few steps, and the steady step's fresh bytes are charged to
the ops whose requests took them. Replayed from the recorded traces, these rules gave 75, 244 and 34 MB per
step where MobileNetV3-small (batch 64), ResNet-18 (64) and MobileNetV3-large (8) first-touch 56-108,
212-257 and 17-26 MB (the range is the process's history: what ran before decides the heap's layout).

Training: autograd interleaves many small objects with the large ones (97,207 small requests in one
MobileNetV3-small step at batch 8), and they keep much of the heap's top from being trimmed: replaying the
large requests alone over-predicted CNN training 2-4x, while replaying all 195,303 requests gave 13.8 MB
where 17-24 MB were measured. Parameter gradients, which `zero_grad(set_to_none=True)` frees together at
the end of a step, are faulted in again in part, by how the process's other allocations fall: the MLP's
8.4 MB of gradients gave 0-8.3 MB a step at batch 1 over six fresh processes, ResNet-18's 44.7 MB gave
16-45 MB. So for training only what is mapped anew whatever the heap holds is predicted: tensors of
MMAP_THRESHOLD_MAX_BYTES and more; the rest is measured (`roofline validate`'s fresh pages), not predicted.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

from roofline.costmodel import CostContext, cpu_conv_backend
from roofline.ops.base import MODEL_INPUT, Dataflow, Op

MMAP_THRESHOLD_MAX_BYTES = 32 * 2**20
"""glibc's largest dynamic mmap threshold on 64-bit Linux (DEFAULT_MMAP_THRESHOLD_MAX, mallopt(3):
https://man7.org/linux/man-pages/man3/mallopt.3.html): a request this large is mapped anew whenever no
free chunk of the heap holds it, and unmapped on free."""
MMAP_THRESHOLD_START_BYTES = 128 * 2**10
"""glibc's initial mmap threshold (DEFAULT_MMAP_THRESHOLD); the trim threshold starts at twice it."""
TOP_PAD_BYTES = 128 * 2**10
"""Extra bytes glibc grows the heap by and keeps at its top after a trim (DEFAULT_TOP_PAD)."""
PAGE_BYTES = 4096
ALIGNMENT_BYTES = 64
"""PyTorch's CPU allocator asks posix_memalign for 64-byte alignment; glibc serves it by requesting the size
plus the alignment plus a minimum chunk (32 bytes) and trimming the slack off (_int_memalign)."""
TRACKED_MIN_BYTES = 1024
"""Smaller requests are left out: glibc serves them from its per-thread caches (tcache, up to 1032 bytes),
refilled by chunks freed the step before, so they never move the heap's top. From here up, a request takes
the best-fitting free chunk, and small ones split large free chunks: counting them from 1 KiB instead of
64 KiB moved MobileNetV3-large at batch 64 from 495 to 457 MB a step (405-467 measured)."""
STEADY_STEPS = 3
"""Steps replayed, the last one reported: the thresholds settle in the first, the heap in the second (every
zoo inference case gives the same bytes with 3 steps as with 4)."""
INDEX_BYTES = 8
"""Max pooling's indices are int64."""


@dataclass(frozen=True)
class Request:
    """One allocation (bytes > 0) or free (bytes == 0) of the block `key`, made by op number `op`."""

    op: int
    key: Hashable
    bytes: float = 0.0


def _padded(channels: int, block: int) -> int:
    return -(-channels // block) * block


def conv_temporaries(op: Op, block: int, layout: str) -> list[tuple[str, float]]:
    """What one forward convolution allocates around its result, in elements, as ('+name', elements) and
    ('-name', 0) in order; '+out' is the result. `layout` is 'onednn-nchw' (oneDNN over NCHW tensors),
    'onednn' (channels-last), 'slow2d' (PyTorch's batch-1 fallback, see `costmodel.cpu_conv_backend`).
    oneDNN over NCHW (ONEDNN_VERBOSE=1: aBcd8b activations and ABcd8b8a weights on AVX2, 16 on AVX-512,
    `block` channels): input copy, weight copy, output copy, then the weight and input copies freed, the
    NCHW result allocated and the output copy freed; a stem's few input channels are read as they are, and
    its weight keeps them unpadded."""
    n, c, h, w = op.n, op.c, op.h, op.w  # type: ignore[attr-defined]
    k, p, q, r, s, groups = op.k, op.p, op.q, op.r, op.s, op.groups  # type: ignore[attr-defined]
    stem = c // groups <= 4 and groups == 1
    weight = (_padded(k, block) * (c if stem else _padded(c, block)) * r * s) if groups == 1 else k * r * s
    if layout == "slow2d":
        one_by_one = (r, s) == (1, 1) and tuple(op.stride) == (1, 1) and op.pad == 0  # type: ignore[attr-defined]
        columns = 0 if one_by_one else c * r * s * p * q * n
        return [("+columns", columns), ("+out", k * p * q * n), ("-columns", 0)]
    if layout == "onednn":
        return [("+weight", weight), ("+out", k * p * q * n), ("-weight", 0)]
    source = [] if stem else [("+source", n * _padded(c, block) * h * w)]
    return [*source, ("+weight", weight), ("+blocked", n * _padded(k, block) * p * q), ("-weight", 0),
            *([] if stem else [("-source", 0)]), ("+out", k * p * q * n), ("-blocked", 0)]


def forward_requests(op: Op, inplace: bool, conv_layout: str | None, block: int) -> list[tuple[str, float]]:
    """An op's own allocations in a forward pass, in elements ('+out' its result; see `conv_temporaries`)."""
    if op.is_free or inplace:
        return []
    if op.kind == "conv2d" and conv_layout:
        return conv_temporaries(op, block, conv_layout)
    if op.kind == "pool" and getattr(op, "mode", "") == "max":
        out = op.output_elements()
        return [("+out", out), ("+indices", out * INDEX_BYTES / 4), ("-indices", 0)]
    return [("+out", op.output_elements())]


def inference_requests(ops: list[Op], flow: Dataflow, element_bytes: int, block: int,
                       conv_layout: dict[str, str]) -> list[Request]:
    """The allocations and frees of one forward pass, in order: each op's own (`forward_requests`), then the
    results whose last reader it was. `conv_layout` maps a convolution's name to its kernel (see
    `conv_temporaries`); ops missing from `ops` (dropout in eval mode) are read through."""
    present = {op.name for op in ops}

    def source(name: str) -> str:
        while name not in present and name != MODEL_INPUT and flow.reads.get(name):
            name = flow.reads[name][0]
        return name

    storage: dict[str, str] = {MODEL_INPUT: MODEL_INPUT}
    last_read: dict[str, int] = {}
    for index, op in enumerate(ops):
        reads = [storage.get(source(r), MODEL_INPUT) for r in flow.reads.get(op.name, ())]
        aliases = op.is_free or op.name in flow.inplace
        storage[op.name] = reads[0] if aliases and reads else op.name
        for s in reads:
            last_read[s] = index
    freed_after: dict[int, list[str]] = {}
    for s, last in last_read.items():
        if s != MODEL_INPUT:
            freed_after.setdefault(last, []).append(s)
    out: list[Request] = []
    for index, op in enumerate(ops):
        own = op.name if storage[op.name] == op.name else None
        for action, elements in forward_requests(op, op.name in flow.inplace, conv_layout.get(op.name), block):
            name = action[1:]
            key = own if name == "out" else (op.name, name)
            if key is None:
                continue
            out.append(Request(index, key, elements * element_bytes if action[0] == "+" else 0.0))
        done = freed_after.get(index, [])
        if own and own not in last_read and index < len(ops) - 1:
            done = [*done, own]  # a result nothing reads
        out += [Request(index, s) for s in done]
    final = storage[ops[-1].name] if ops else MODEL_INPUT
    if final != MODEL_INPUT:
        out.append(Request(len(ops) - 1, final))
    return out


class _Chunk:
    """A heap chunk in address order (`before`, `after` are its neighbours; the last one borders the top)."""

    __slots__ = ("after", "before", "free", "size", "start")

    def __init__(self, start: int, size: int, before: _Chunk | None) -> None:
        self.start, self.size, self.free = start, size, False
        self.before, self.after = before, None


class GlibcHeap:
    """glibc's main arena as far as large requests see it: chunks in address order below a top chunk, best-fit
    reuse of free chunks, the dynamic mmap and trim thresholds, and the fresh bytes each request takes."""

    def __init__(self) -> None:
        self.last: _Chunk | None = None
        """The highest chunk below the top."""
        self.free_chunks: set[_Chunk] = set()
        self.top_start = 0
        self.end = 0
        self.mmap_threshold = MMAP_THRESHOLD_START_BYTES
        self.trim_threshold = 2 * MMAP_THRESHOLD_START_BYTES
        self.live: dict[Hashable, _Chunk | int] = {}
        """key -> its heap chunk, or the size of its mapping."""

    @property
    def top(self) -> int:
        return self.end - self.top_start

    @staticmethod
    def request_bytes(nbytes: float) -> int:
        """What glibc asks its arena for when PyTorch allocates `nbytes`: posix_memalign's size, header and
        alignment slack included (see ALIGNMENT_BYTES)."""
        return math.ceil((nbytes + 8) / 16) * 16 + ALIGNMENT_BYTES + 32

    def allocate(self, key: Hashable, nbytes: float) -> int:
        """Serve a request; returns the bytes it takes in fresh pages (heap growth or a new mapping). A mapping
        is whole pages, and it is that page-rounded size a freed mapping raises the threshold to, so the next
        request of the same size stays below it and is served by the heap."""
        size = self.request_bytes(nbytes)
        fits = [c for c in self.free_chunks if c.size >= size]
        if fits:
            chunk = min(fits, key=lambda c: (c.size, c.start))
            self.free_chunks.discard(chunk)
            if chunk.size - size >= TRACKED_MIN_BYTES:
                rest = _Chunk(chunk.start + size, chunk.size - size, chunk)
                rest.free, rest.after = True, chunk.after
                if chunk.after is not None:
                    chunk.after.before = rest
                else:
                    self.last = rest
                chunk.after, chunk.size = rest, size
                self.free_chunks.add(rest)
            chunk.free = False
            self.live[key] = chunk
            return 0
        if size >= self.mmap_threshold and self.top < size:
            mapped = -(-(size + 8) // PAGE_BYTES) * PAGE_BYTES
            self.live[key] = mapped
            return mapped
        fresh = 0
        if self.top < size:
            fresh = -(-(size - self.top + TOP_PAD_BYTES) // PAGE_BYTES) * PAGE_BYTES
            self.end += fresh
        chunk = _Chunk(self.top_start, size, self.last)
        if self.last is not None:
            self.last.after = chunk
        self.last = chunk
        self.top_start += size
        self.live[key] = chunk
        return fresh

    def _merge_up(self, low: _Chunk, high: _Chunk) -> None:
        """`low` takes in `high`, the chunk just above it, which is free or being freed."""
        self.free_chunks.discard(low)
        self.free_chunks.discard(high)
        low.size += high.size
        low.after = high.after
        if high.after is not None:
            high.after.before = low
        else:
            self.last = low

    def free(self, key: Hashable) -> None:
        """Release a block: a mapping is unmapped (and may raise the thresholds); a heap chunk coalesces with
        free neighbours and the top, which is trimmed to the pad once it exceeds the trim threshold."""
        chunk = self.live.pop(key)
        if isinstance(chunk, int):
            if self.mmap_threshold < chunk <= MMAP_THRESHOLD_MAX_BYTES:
                self.mmap_threshold, self.trim_threshold = chunk, 2 * chunk
            return
        chunk.free = True
        after = chunk.after
        if after is not None and after.free:
            self._merge_up(chunk, after)
        before = chunk.before
        if before is not None and before.free:
            self._merge_up(before, chunk)
            chunk = before
        if chunk.after is None:
            self.top_start = chunk.start
            self.last = chunk.before
            if self.last is not None:
                self.last.after = None
        else:
            self.free_chunks.add(chunk)
        if self.top >= self.trim_threshold:
            self.end -= (self.top - TOP_PAD_BYTES) // PAGE_BYTES * PAGE_BYTES


def replay(requests: list[Request], ops: int, steps: int = STEADY_STEPS) -> list[float]:
    """Fresh bytes per op in the last of `steps` steps of `requests` on one heap. A step frees everything it
    allocates, so its keys are free again when the next step starts."""
    tracked = [r for r in requests if not r.bytes or r.bytes >= TRACKED_MIN_BYTES]
    heap = GlibcHeap()
    fresh = [0.0] * ops
    for _ in range(steps):
        fresh = [0.0] * ops
        for req in tracked:
            if req.bytes:
                fresh[req.op] += heap.allocate(req.key, req.bytes)
            elif req.key in heap.live:
                heap.free(req.key)
    return fresh


def conv_layout(op: Op, ctx: CostContext) -> str | None:
    """Which kernel allocates for a CPU convolution (see `conv_temporaries`); None on a GPU."""
    if ctx.ceilings.is_gpu:
        return None
    if cpu_conv_backend(op, ctx.ceilings.threads) != "mkldnn":
        return "slow2d"
    return "onednn" if ctx.channels_last else "onednn-nchw"


def training_copies(op: Op, pass_: str, block: int) -> list[float]:
    """Elements of the channel-blocked activation copies a oneDNN convolution over NCHW tensors makes in one
    training pass: the tensor it reads and the one it writes (a stem's input is read as it is)."""
    n, c, h, w = op.n, op.c, op.h, op.w  # type: ignore[attr-defined]
    k, p, q = op.k, op.p, op.q  # type: ignore[attr-defined]
    x = 0 if op.c // op.groups <= 4 and op.groups == 1 else n * _padded(c, block) * h * w  # type: ignore[attr-defined]
    y = n * _padded(k, block) * p * q
    return {"forward": [x, y], "backward_input": [y, x], "backward_weight": [x, y]}[pass_]


def first_touch_bytes(pairs: list[tuple[str, Op]], flow: Dataflow, train: bool, ctx: CostContext) -> list[float]:
    """Bytes each executed (pass, op) takes in fresh pages in a steady step on a CPU: replayed on glibc's rules
    for inference; for training, the tensors of MMAP_THRESHOLD_MAX_BYTES and more it writes, oneDNN's blocked
    copies included (see the module doc)."""
    block = max(1, ctx.ceilings.vector_lanes_fp32)
    layouts = {op.name: conv_layout(op, ctx) for _, op in pairs if op.kind == "conv2d"}
    if not train:
        ops = [op for _, op in pairs]
        return replay(inference_requests(ops, flow, ctx.activation_bytes, block, layouts), len(ops))
    out = []
    for pass_, op in pairs:
        written = [float(op.traffic(pass_).activations_written) * ctx.activation_bytes]
        if pass_ == "backward_weight":
            written += [float(e) * ctx.weight_bytes for e in op.param_sizes()]
        if layouts.get(op.name) == "onednn-nchw":
            written += [float(e) * ctx.activation_bytes for e in training_copies(op, pass_, block)]
        out.append(sum(b for b in written if b >= MMAP_THRESHOLD_MAX_BYTES))
    return out

"""glibc's malloc as far as a step's tensors see it: which requests take fresh pages, first-touched.

Eager PyTorch allocates every result and every kernel temporary from the C heap (glibc's malloc) and frees
a tensor as soon as its last holder lets go of it. glibc serves a request from a free chunk of its heap when
one fits; otherwise it grows the heap, or maps the request anew if it is at least its mmap threshold. The
threshold starts at 128 KiB and rises to the size of the largest mapped chunk freed so far (up to 32 MiB);
after a free, the heap's top is returned to the kernel once more than twice the threshold is free there
(mallopt(3), glibc's malloc.c). Every fresh page costs a fault and a zeroed page on first touch, a cost the
calibration measures (`roofline.measure.probes.kernels.fault_rate`: 2.3-3.2 GB/s on this project's VM).

`GlibcHeap` replays a step's request sequence (`roofline.model.cpu_runtime.heap_requests`) under these rules
for a few steps,
and the steady step's fresh bytes are charged to the ops whose requests took them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Hashable
from dataclasses import dataclass

from roofline.model.cpu_runtime.runtime import ASSUMED_PAGE_BYTES

MMAP_THRESHOLD_MAX_BYTES = 32 * 2**20
"""glibc's largest dynamic mmap threshold on 64-bit Linux (DEFAULT_MMAP_THRESHOLD_MAX, mallopt(3):
https://man7.org/linux/man-pages/man3/mallopt.3.html): a request this large is mapped anew whenever no
free chunk of the heap holds it, and unmapped on free."""
MMAP_THRESHOLD_START_BYTES = 128 * 2**10
"""glibc's initial mmap threshold (DEFAULT_MMAP_THRESHOLD); the trim threshold starts at twice it."""
TOP_PAD_BYTES = 128 * 2**10
"""Extra bytes glibc grows the heap by and keeps at its top after a trim (DEFAULT_TOP_PAD)."""
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


@dataclass(frozen=True)
class Request:
    """One allocation (bytes > 0) or free (bytes == 0) of the block `key`, made by op number `op`."""

    op: int
    key: Hashable
    bytes: float = 0.0


class _FreeChunks:
    """Free chunks below the top ordered by (size, address): glibc's best fit, the smallest chunk that holds a
    request and the lowest of equal ones, found by bisection rather than a scan (a training step's replay makes
    thousands of requests against hundreds of free chunks)."""

    def __init__(self) -> None:
        self.order: list[tuple[int, int]] = []
        self._chunks: dict[tuple[int, int], _Chunk] = {}

    def add(self, chunk: _Chunk) -> None:
        key = (chunk.size, chunk.start)
        bisect.insort(self.order, key)
        self._chunks[key] = chunk

    def discard(self, chunk: _Chunk) -> None:
        key = (chunk.size, chunk.start)
        if self._chunks.get(key) is chunk:
            del self._chunks[key]
            del self.order[bisect.bisect_left(self.order, key)]

    def best_fit(self, size: int) -> _Chunk | None:
        at = bisect.bisect_left(self.order, (size, -1))
        return self._chunks[self.order[at]] if at < len(self.order) else None


class _Chunk:
    """A heap chunk in address order (`before`, `after` are its neighbours; the last one borders the top)."""

    __slots__ = ("after", "before", "free", "size", "start")

    def __init__(self, start: int, size: int, before: _Chunk | None) -> None:
        self.start, self.size, self.free = start, size, False
        self.before, self.after = before, None


class GlibcHeap:
    """glibc's main arena as far as large requests see it: chunks in address order below a top chunk, best-fit
    reuse of free chunks, the dynamic mmap and trim thresholds, and the fresh bytes each request takes."""

    def __init__(self, page_bytes: int = ASSUMED_PAGE_BYTES) -> None:
        self.page_bytes = page_bytes
        """Granularity of the heap's growth, trims and mappings (the calibration's page size)."""
        self.last: _Chunk | None = None
        """The highest chunk below the top."""
        self.free_chunks = _FreeChunks()
        self.top_start = 0
        self.end = 0
        self.mmap_threshold = MMAP_THRESHOLD_START_BYTES
        self.trim_threshold = 2 * MMAP_THRESHOLD_START_BYTES
        self.live: dict[Hashable, _Chunk | int] = {}
        """key -> its heap chunk, or the size of its mapping."""

    def state(self) -> tuple[Hashable, ...]:
        """Everything the next request's outcome depends on, once a step has freed what it allocated."""
        return (self.end, self.top_start, self.mmap_threshold, tuple(self.free_chunks.order), tuple(self.live))

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
        return self.allocate_chunk(key, self.request_bytes(nbytes))

    def allocate_chunk(self, key: Hashable, size: int) -> int:
        """`allocate` for a request already in glibc's terms (`request_bytes`)."""
        chunk = self.free_chunks.best_fit(size)
        if chunk is not None:
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
            mapped = -(-(size + 8) // self.page_bytes) * self.page_bytes
            self.live[key] = mapped
            return mapped
        fresh = 0
        if self.top < size:
            fresh = -(-(size - self.top + TOP_PAD_BYTES) // self.page_bytes) * self.page_bytes
            self.end += fresh
        chunk = _Chunk(self.top_start, size, self.last)
        if self.last is not None:
            self.last.after = chunk
        self.last = chunk
        self.top_start += size
        self.live[key] = chunk
        return fresh

    def _merge_up(self, low: _Chunk, high: _Chunk, freeing: _Chunk) -> None:
        """`low` takes in `high`, the chunk just above it; one of them is `freeing`, not yet among the free ones."""
        self.free_chunks.discard(high if low is freeing else low)
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
            self._merge_up(chunk, after, chunk)
        before = chunk.before
        if before is not None and before.free:
            self._merge_up(before, chunk, chunk)
            chunk = before
        if chunk.after is None:
            self.top_start = chunk.start
            self.last = chunk.before
            if self.last is not None:
                self.last.after = None
        else:
            self.free_chunks.add(chunk)
        if self.top >= self.trim_threshold:
            self.end -= (self.top - TOP_PAD_BYTES) // self.page_bytes * self.page_bytes


def replay(requests: list[Request], ops: int, steps: int = STEADY_STEPS,
           page_bytes: int = ASSUMED_PAGE_BYTES) -> list[float]:
    """Fresh bytes per op in the last of `steps` steps of `requests` on one heap. A step frees everything it
    allocates, so its keys are free again when the next step starts."""
    tracked = [(r.op, r.key, GlibcHeap.request_bytes(r.bytes) if r.bytes else 0) for r in requests
               if not r.bytes or r.bytes >= TRACKED_MIN_BYTES]
    heap = GlibcHeap(page_bytes)
    allocate, free, live = heap.allocate_chunk, heap.free, heap.live
    fresh = [0.0] * ops
    ended = None
    for _ in range(steps):
        fresh = [0.0] * ops
        for op, key, size in tracked:
            if size:
                fresh[op] += allocate(key, size)
            elif key in live:
                free(key)
        state = heap.state()
        if state == ended:  # a step that ends as the last one did repeats it: this one is the steady step
            break
        ended = state
    return fresh

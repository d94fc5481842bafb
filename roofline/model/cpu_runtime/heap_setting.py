"""The C-heap setting that removes a CPU step's fresh-page faults, and how to tell whether a process runs with it.

glibc hands memory back to the kernel in two ways, and takes it back (faulted and zeroed page by page) on the
next step: blocks at least the mmap threshold are mapped on malloc and unmapped on free, and free memory at
the heap's top beyond the trim threshold is returned with a negative sbrk (allocator.py models both). Two
environment variables read at process start turn both off (glibc manual, "Malloc Tunable Parameters",
https://www.gnu.org/software/libc/manual/html_node/Malloc-Tunable-Parameters.html): MALLOC_MMAP_MAX_=0
("disables all use of mmap") serves every block from the heap, and a trim threshold above anything the
process frees keeps the heap's top. After the first step the heap holds the step's peak and no page is
fresh. A preloaded jemalloc or tcmalloc, which reuse memory instead of returning it, is what PyTorch's CPU
performance tuning guide recommends for the same reason ("Switch Memory allocator",
https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html).
"""

from __future__ import annotations

from collections.abc import Mapping

KEEP_TRIM_THRESHOLD_BYTES = 64 * 2**30
"""A trim threshold no step's free memory at the heap's top reaches (64 GiB): the top is never returned."""

KEEP_HEAP_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(KEEP_TRIM_THRESHOLD_BYTES)}
"""The environment of a process whose heap keeps what it took (set before the process starts)."""

KEEP_HEAP_TUNABLES = f"glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold={KEEP_TRIM_THRESHOLD_BYTES}"
"""The same setting as one GLIBC_TUNABLES value (glibc 2.26 and later)."""

PRELOAD_ALLOCATORS = "LD_PRELOAD=libjemalloc.so.2 or LD_PRELOAD=libtcmalloc.so.4"


def _tunables(environ: Mapping[str, str]) -> dict[str, str]:
    pairs = (item.partition("=") for item in environ.get("GLIBC_TUNABLES", "").split(":") if "=" in item)
    return {key: value for key, _, value in pairs}


def _as_int(text: str | None) -> int | None:
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def keeps_heap(environ: Mapping[str, str]) -> bool:
    """Whether a process started with `environ` keeps its heap: no mmap'd blocks and a trim threshold at
    least KEEP_TRIM_THRESHOLD_BYTES, set by the MALLOC_*_ variables or GLIBC_TUNABLES (or both)."""
    tunables = _tunables(environ)
    mmap_max = _as_int(environ.get("MALLOC_MMAP_MAX_", tunables.get("glibc.malloc.mmap_max")))
    trim = _as_int(environ.get("MALLOC_TRIM_THRESHOLD_", tunables.get("glibc.malloc.trim_threshold")))
    return mmap_max == 0 and trim is not None and trim >= KEEP_TRIM_THRESHOLD_BYTES

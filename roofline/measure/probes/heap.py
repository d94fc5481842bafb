"""Keep the C heap's pages mapped while calibrating, so that a kernel's time is the kernel's.

glibc's malloc returns freed memory at the top of its heap to the kernel once more than a trim threshold is
free there, and serves requests above a (dynamic) mmap threshold with fresh mappings; the next allocation
of that memory first-touches it again, at about a microsecond per 4 KiB page on this kind of VM. Which
calls pay depends on everything the process allocated before (here a depthwise convolution's NCHW layout
conversion measured 1.9 or 30 GB/s in two processes), so a probe timed under the default policy measures
the heap's history, not the kernel. Calibration fixes the policy (mallopt(3): trim threshold at its
maximum, and no mmap at all, as the allocator advice's MALLOC_MMAP_MAX_=0 does; a ceiling of 32 MiB on the mmap
threshold alone still mapped, and faulted on every call, the buffers of probes larger than that: the DRAM
layout-conversion probe's reorders, which then measured first touch as conversion, and a steady-heap depthwise
convolution at batch 8 was predicted at 4.7 ms against 1.2 ms measured); first-touch costs are measured on
their own (`kernels.fault_rate`) and charged by the cost model where the allocator hands out fresh pages.
Only the calibrating process is changed: `roofline validate` calibrates in a child process.
"""

from __future__ import annotations

import ctypes
import ctypes.util

from roofline.model.cpu_runtime.allocator import MMAP_THRESHOLD_MAX_BYTES

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
"""mallopt(3) parameter numbers (malloc.h)."""
TRIM_THRESHOLD_MAX_BYTES = 2**31 - 1


def keep_pages_mapped() -> bool:
    """Fix glibc's trim and mmap thresholds for this process; False where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        mallopt = None
    if mallopt is None or not hasattr(libc, "gnu_get_libc_version"):
        return False
    return bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_MAX_BYTES)) and bool(
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX_BYTES)) and bool(mallopt(M_MMAP_MAX, 0))

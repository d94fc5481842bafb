"""Which CPU runtime a step runs on, as the calibration recorded it: the C library and the page size. The
heap replay (`heap_requests` on `allocator`'s rules) is glibc's malloc; it is switched on by this record,
never by an `if` on the platform inside the cost model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ASSUMED_PAGE_BYTES = 4096
"""The base page of x86-64 Linux, used where a calibration recorded no page size."""


@dataclass(frozen=True)
class CpuRuntime:
    libc: str | None
    """'glibc 2.36' as `platform.libc_ver()` read it when calibrating; None where the calibration predates
    the record or the library is not one Python names."""
    page_bytes: int
    """The page size the calibration read (`os.sysconf('SC_PAGE_SIZE')`)."""
    recorded: bool
    """Whether the calibration recorded the runtime at all (calibrations before this record did not)."""

    @property
    def glibc_heap(self) -> bool:
        """Whether glibc's allocator rules apply: recorded glibc, or no record at all (calibrations from
        before the record keep the replay they were made with)."""
        return not self.recorded or (self.libc or "").startswith("glibc")


def recorded_runtime(environment: dict[str, Any]) -> CpuRuntime:
    """The runtime a calibration's environment records (`roofline.measure.calibrate.current_environment`)."""
    recorded = "libc" in environment
    page = environment.get("page_bytes")
    return CpuRuntime(environment.get("libc") or None, int(page) if page else ASSUMED_PAGE_BYTES, recorded)

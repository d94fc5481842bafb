"""Calibration's fixed heap policy: the pattern below re-faults its 48 MiB every round under glibc's default
policy (a 20 MiB free raises the mmap threshold to 20 MiB and the trim threshold to 40 MiB; three 16 MiB
buffers then come from the heap and, freed, leave 48 MiB at its top, which is trimmed), and never once the
policy is fixed. Each case runs in a fresh interpreter: mallopt cannot be undone."""

import platform
import subprocess
import sys

import pytest

PATTERN = """
import resource, sys
if sys.argv[1] == "fixed":
    from roofline.measure.probes.heap import keep_pages_mapped
    assert keep_pages_mapped()
first = bytearray(20 * 2**20)
del first
for i in range(6):
    if i == 2:
        start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buffers = [bytearray(16 * 2**20) for _ in range(3)]
    del buffers
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) * 4096 / 4 / 2**20)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc policy")
def test_fixed_heap_policy_keeps_freed_pages_mapped():
    def refaulted_mib_per_round(policy: str) -> float:
        done = subprocess.run([sys.executable, "-c", PATTERN, policy], capture_output=True, text=True, check=True)
        return float(done.stdout)

    assert refaulted_mib_per_round("default") == pytest.approx(48, abs=1)
    assert refaulted_mib_per_round("fixed") == pytest.approx(0, abs=0.5)

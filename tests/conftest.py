"""Fixtures shared across test files: a temporary home for the whole session, one quick calibration shared by
the tests that need a real one, and the cost-model tests' V100."""

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from roofline.hardware.load import SHIPPED_DIR, load_profile

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def temporary_home(tmp_path_factory):
    """Every test, and every process a test starts, sees an empty home (HOME, XDG_CACHE_HOME and ROOFLINE_HOME
    under a temporary directory): no test reads a calibration the user made, and none writes into the user's
    cache, where it would change later runs."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        patch.setenv("ROOFLINE_HOME", str(home / ".cache" / "roofline"))
        yield home


@dataclass(frozen=True)
class QuickCalibration:
    document: dict
    """What `roofline calibrate --quick --json` printed."""
    path: Path
    """The profile it wrote."""


@pytest.fixture(scope="session")
def quick_calibration(tmp_path_factory, temporary_home) -> QuickCalibration:
    """One real `roofline calibrate --device cpu --quick` of this machine (tens of seconds), run once for the
    session in its own process, as `roofline validate` runs it, and shared by every test that needs one."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("calibration") / "cal.yaml"
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "calibrate", "--device", "cpu", "--quick", "--json",
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    return QuickCalibration(json.loads(done.stdout), out)


@pytest.fixture(scope="session")
def v100():
    """The shipped V100 SXM2 16 GB with its published measurements (sustained HBM bandwidth, fp16 and fp32 GEMM
    rates) taken out: tests of a mechanism's arithmetic write their expectations from the datasheet's round
    125e12 FLOP/s and 900e9 B/s. `test_published_measurements_replace_the_datasheet` covers the rest."""
    shipped = load_profile(SHIPPED_DIR / "gpu" / "v100-sxm2-16gb.yaml")
    memory = shipped.memory.model_copy(update={"sustained_bandwidth_bytes_per_s": None})
    tensor = {k: tc.model_copy(update={"sustained_flops_per_s": None}) for k, tc in shipped.tensor_cores.items()}
    return shipped.model_copy(update={"memory": memory, "tensor_cores": tensor, "sustained_flops_per_s": {}})

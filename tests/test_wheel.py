"""The product as a new user gets it: a wheel built from the clone and installed in a fresh virtual environment,
run from a directory outside the clone, knows the shipped hardware and still reads a user profile directory.

Offline by construction: the venv sees the system's site-packages (numpy, pydantic, ...) and the wheel is built
and installed with --no-build-isolation / --no-deps, so nothing is downloaded. The sources are copied to a
temporary directory first, so a stale build/ in the clone can never leak into the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "README.md", "roofline", "hardware_profiles")


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv's bin directory, the built wheel)."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    built = _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                  "-w", str(work / "dist")], cwd=work)
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "dist").glob("roofline-*.whl")
    venv = work / "venv"
    made = _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], cwd=work)
    assert made.returncode == 0, made.stderr
    bin_dir = venv / "bin"
    done = _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], cwd=work)
    assert done.returncode == 0, done.stderr
    return bin_dir, wheel


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROOFLINE_PROFILE_PATH")}
    return {**env, "HOME": str(home), "ROOFLINE_HOME": str(home / "roofline"), **extra}


def test_the_wheel_carries_every_profile_once_and_no_top_level_module_but_roofline(installed):
    _, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(p.relative_to(ROOT / "hardware_profiles").as_posix()
                     for p in (ROOT / "hardware_profiles").rglob("*.yaml"))
    packaged = sorted(n.removeprefix("roofline/hardware_profiles/") for n in names
                      if n.startswith("roofline/hardware_profiles/"))
    assert packaged == shipped
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"roofline"}


def test_the_installed_command_answers_the_headline_from_outside_the_clone(installed, tmp_path):
    bin_dir, _ = installed
    where = _run([str(bin_dir / "python"), "-c", "import roofline; print(roofline.__file__)"], cwd=tmp_path,
                 env=_env(tmp_path))
    assert where.stdout.strip().startswith(str(bin_dir.parent)), where.stdout  # the wheel, not the clone
    done = _run([str(bin_dir / "roofline"), "advise", "--model", "mobilenetv3", "--gpu", "v100", "--json"],
                cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["device"] == "NVIDIA Tesla V100 SXM2 16 GB"
    assert doc["recommended"]["batch_size"] >= 1


def test_the_installed_command_reads_a_user_profile_directory(installed, tmp_path):
    bin_dir, _ = installed
    mine = tmp_path / "profiles"
    mine.mkdir()
    shutil.copy2(ROOT / "hardware_profiles" / "cpu" / "textbook-cpu.yaml", mine / "my-lab-cpu.yaml")  # name = stem
    env = _env(tmp_path, ROOFLINE_PROFILE_PATH=str(mine))
    listed = _run([str(bin_dir / "python"), "-m", "roofline", "hw", "list", "--json"], cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    names = {p["name"] for p in json.loads(listed.stdout)["profiles"]}
    assert {"my-lab-cpu", "textbook-cpu", "v100-sxm2-16gb"} <= names
    shown = _run([str(bin_dir / "roofline"), "hw", "show", "my-lab-cpu", "--json"], cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr

"""Which profile a validation predicts with, and where its ceilings come from: a `--hw` profile, this
machine's calibration, a quick calibration run now (in a child process), or the detected/datasheet figures
with a warning that says why."""

from __future__ import annotations

import time
from dataclasses import dataclass

from roofline.errors import CalibrationMismatch, RooflineError
from roofline.hardware.schema import Profile


@dataclass(frozen=True)
class ProfileChoice:
    """The profile predictions use, and where its ceilings come from."""

    profile: Profile
    source: str
    """'calibrated' (measured ceilings), 'detected' (this CPU, estimated) or 'datasheet' (a shipped YAML)."""
    path: str | None = None
    warnings: tuple[str, ...] = ()


def _without_calibration(profile: Profile, source: str, why: str) -> ProfileChoice:
    return ProfileChoice(profile.model_copy(update={"measured": None}), source, None,
                         (f"{why}; predicting with {source} ceilings",))


def calibrate_in_child(device: str, quick: bool, out: str | None = None,
                       dtypes: str | None = None) -> tuple[Profile, str, float]:
    """Run `roofline calibrate` in a child process and return (the calibrated profile, its path, seconds).
    A child because calibration fixes the C heap's trim policy for its own process (`roofline.measure.probes.heap`),
    and the live steps timed after it must run under the allocator's default policy, as the user's would.
    `out` writes the profile there (replacing it) instead of the default calibrated path; `dtypes` is
    calibrate's --dtypes."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from roofline.hardware.load import load_profile

    started = time.perf_counter()
    argv = ["calibrate", "--device", device, "--json", *(["--quick"] if quick else []),
            *(["--out", out, "--force"] if out else []), *(["--dtypes", dtypes] if dtypes else [])]
    code = f"import sys; from cli import main; sys.exit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RooflineError(f"the calibration failed ({last}); run `roofline calibrate` and read its error")
    path = Path(json.loads(done.stdout)["profile_path"])
    return load_profile(path), str(path), time.perf_counter() - started


def quick_calibration(device: str) -> ProfileChoice:
    """Calibrate this machine quickly (`roofline calibrate --quick`) and save it where later runs find it:
    validation exists to test the cost model, which needs this machine's measured ceilings."""
    profile, path, seconds = calibrate_in_child(device, quick=True)
    return ProfileChoice(profile, "calibrated", path, (
        f"no calibration of this machine: ran a quick one ({seconds:.0f} s) and saved it "
        f"to {path}; `roofline calibrate --force` takes a fuller one",))


def choose_profile(device: str, hw: str | None, calibrate: bool = True) -> ProfileChoice:
    """`--hw` when given, else this machine's profile for `device`, calibrated when a calibration exists
    and calibrated now (quickly) when none does, unless `calibrate` is False.

    A calibration from another environment is not applied: the choice falls back to the uncalibrated
    profile and carries the mismatch as a warning, so the user learns why errors may be large.
    """
    from pathlib import Path

    from roofline.hardware.load import find_profile, load_profile
    from roofline.measure.calibrate import calibrated_path, check_environment, this_machine

    if hw:
        profile = find_profile(hw)
        if profile.kind != ("gpu" if device == "cuda" else "cpu"):
            raise RooflineError(f"--hw '{hw}' is a {profile.kind} profile but --device is {device}")
        if profile.measured is None:
            return ProfileChoice(profile, "datasheet")
        try:
            check_environment(profile.measured)
        except CalibrationMismatch as exc:
            return _without_calibration(profile, "datasheet", str(exc))
        return ProfileChoice(profile, "calibrated", hw if Path(hw).is_file() else None)
    if device == "cpu":
        try:
            profile, path = this_machine()
        except CalibrationMismatch as exc:
            from roofline.hardware.detect import detect_cpu

            return _without_calibration(detect_cpu(), "detected", str(exc))
        if path is None and calibrate:
            return quick_calibration("cpu")
        if path is None:
            return ProfileChoice(profile, "detected", None, (
                "no calibration of this machine: predictions use detected (estimated) ceilings; "
                "run `roofline calibrate` first to validate the cost model rather than the estimate",))
        return ProfileChoice(profile, "calibrated", str(path))
    from roofline.measure.calibrate import base_profile

    datasheet = base_profile("cuda")
    path = calibrated_path(datasheet.name)
    if path.is_file():
        calibrated = load_profile(path.resolve())
        if calibrated.measured is not None:
            try:
                check_environment(calibrated.measured)
            except CalibrationMismatch as exc:
                return _without_calibration(datasheet, "datasheet", str(exc))
            return ProfileChoice(calibrated, "calibrated", str(path))
    if calibrate and not path.exists():
        return quick_calibration("cuda")
    return ProfileChoice(datasheet, "datasheet", None, (
        f"no calibration of this GPU: predictions use {datasheet.name}'s datasheet ceilings; "
        "run `roofline calibrate --device cuda` first",))

"""Find and load hardware profiles: shipped ones, a user directory, or any YAML path.

A profile's name is its file stem (`v100-sxm2-16gb`); its `aliases` (`v100`) also find it, ignoring case.
Users add profiles with `--hw path.yaml` or by pointing ROOFLINE_PROFILE_PATH (os.pathsep-separated
directories) at their own; those are searched before the shipped ones so a user can shadow a profile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml
from pydantic import TypeAdapter, ValidationError

from roofline.errors import ProfileError, UnknownName, did_you_mean
from roofline.hardware.schema import CpuProfile, GpuProfile, Profile

PROFILE_PATH_ENV = "ROOFLINE_PROFILE_PATH"
HOME_ENV = "ROOFLINE_HOME"


def _shipped_dir() -> Path:
    """The profiles that come with roofline. An installed wheel carries the top-level hardware_profiles/ as
    the package data directory roofline/hardware_profiles (setup.py maps it, no second copy in the source);
    a clone, or an editable install, reads hardware_profiles/ beside the package."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "hardware_profiles"
    return installed if installed.is_dir() else package.parent / "hardware_profiles"


SHIPPED_DIR = _shipped_dir()

_PROFILE_ADAPTER: TypeAdapter[Profile] = TypeAdapter(Profile)


@dataclass(frozen=True)
class ProfileEntry:
    """What `hw list` shows without validating every file: name, kind, aliases, path."""

    name: str
    kind: str
    aliases: tuple[str, ...]
    path: Path


def calibrated_dir() -> Path:
    """Where `roofline calibrate` writes by default: $ROOFLINE_HOME/calibrated, else ~/.cache/roofline/calibrated."""
    home = os.environ.get(HOME_ENV)
    return (Path(home) if home else Path.home() / ".cache" / "roofline") / "calibrated"


def profile_dirs() -> list[Path]:
    """User directories first (they shadow shipped profiles), then calibrated ones, then the shipped one."""
    user = [Path(p) for p in os.environ.get(PROFILE_PATH_ENV, "").split(os.pathsep) if p]
    return [*user, calibrated_dir(), SHIPPED_DIR]


def _read_yaml(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ProfileError(f"{path}:{where} is not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping of profile fields at the top level")
    return data


@cache
def _entries() -> tuple[ProfileEntry, ...]:
    seen: dict[str, ProfileEntry] = {}
    for directory in profile_dirs():
        if not directory.is_dir():
            continue
        for path in sorted(directory.rglob("*.yaml")):
            name = path.stem.lower()
            if name in seen:
                continue
            data = _read_yaml(path)
            aliases = tuple(str(a).lower() for a in data.get("aliases", []) or [])
            seen[name] = ProfileEntry(name, str(data.get("kind", "?")), aliases, path)
    return tuple(seen.values())


def list_profiles() -> list[ProfileEntry]:
    """Every profile the search path holds, shipped and user, sorted by kind then name."""
    return sorted(_entries(), key=lambda e: (e.kind, e.name))


def _format_validation_error(path: Path, exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = [str(p) for p in first["loc"] if str(p) not in ("CpuProfile", "GpuProfile", "cpu", "gpu")]
    field = ".".join(loc) or "(top level)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{path}: field '{field}': {first['msg']}{more}"


@cache
def load_profile(path: Path) -> Profile:
    """Validate one YAML file against the schema; the error names the file and the first bad field."""
    data = _read_yaml(Path(path))
    if data.get("kind") not in ("cpu", "gpu"):
        raise ProfileError(f"{path}: field 'kind': expected 'cpu' or 'gpu', got {data.get('kind')!r}")
    model = CpuProfile if data["kind"] == "cpu" else GpuProfile
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(_format_validation_error(Path(path), exc)) from None


def find_profile(name_or_path: str, kind: str | None = None) -> Profile:
    """A profile by file stem, alias (case-insensitive) or path to a YAML file.

    `kind` ('cpu'/'gpu') restricts the search for `--cpu` / `--gpu` and makes a mismatch an error.
    """
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or candidate.is_file():
        if not candidate.is_file():
            raise ProfileError(f"{candidate}: no such profile file")
        profile = load_profile(candidate.resolve())
    else:
        key = name_or_path.strip().lower()
        matches = [e for e in _entries() if key == e.name or key in e.aliases]
        if not matches:
            pool = [e for e in _entries() if kind is None or e.kind == kind]
            names = [n for e in pool for n in (e.name, *e.aliases)]
            what = f"{kind} " if kind else ""
            raise UnknownName(f"unknown {what}hardware '{name_or_path}'{did_you_mean(key, names)}; "
                              "`roofline hw list` shows them all")
        profile = load_profile(matches[0].path)
    if kind is not None and profile.kind != kind:
        raise UnknownName(f"'{name_or_path}' is a {profile.kind} profile, not a {kind}; "
                          f"use --{profile.kind} or --hw")
    return profile


def profile_adapter() -> TypeAdapter[Profile]:
    """The pydantic adapter for the union, for `hw schema`."""
    return _PROFILE_ADAPTER

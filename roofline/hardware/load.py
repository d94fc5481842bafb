"""Find and load hardware profiles: shipped ones, a user directory, or any YAML path.

A profile's name is its file stem (`v100-sxm2-16gb`); its `aliases` (`v100`) also find it, ignoring case.
Users add profiles with `--hw path.yaml` or by pointing ROOFLINE_PROFILE_PATH (os.pathsep-separated
directories) at their own; those are searched before the shipped ones so a user can shadow a profile.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml
from pydantic import TypeAdapter, ValidationError

from roofline import files
from roofline.errors import ProfileError, UnknownName, did_you_mean
from roofline.hardware.fabric_schema import LinkProfile, NodeProfile
from roofline.hardware.runtime_schema import RuntimeProfile
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


MAX_PROFILE_BYTES = 1 << 20
"""Largest profile file read: the shipped ones are under 8 kB and a calibrated one a few tens of kB, so 1 MiB
is far above any real profile and far below what could take noticeable time or memory to parse."""
MAX_NESTING = 16
"""Deepest nesting of mappings and sequences: a profile needs 5 (measured.gemm_curves.fp32[0].n). Checked on the
parser's event stream before any document is built, because building a deeply nested one recurses in C and
overflows the stack (100,000 levels is a segfault)."""
MAX_NODES = 100_000
"""Most nodes a profile may hold with every alias expanded (a calibrated profile has a few thousand): aliases
that refer to aliases multiply (nine levels of nine make a 'billion laughs'), and anything that walks the
document afterwards pays for every expanded node."""
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f]")
"""Characters YAML refuses (its printable set keeps tab, line breaks and NEL): refused here in one line."""


def _read_text(path: Path) -> str:
    """The file's text, refused before parsing when it is too large, binary or not UTF-8."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_PROFILE_BYTES + 1)
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ProfileError(f"{path}: cannot read ({exc})") from None
    if len(raw) > MAX_PROFILE_BYTES:
        raise ProfileError(f"{path}: larger than {MAX_PROFILE_BYTES // 1024} KiB; a profile is a few kB of YAML")
    if b"\x00" in raw:
        raise ProfileError(f"{path}: contains NUL bytes (a binary file, or UTF-16/32 text); save it as UTF-8 YAML")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ProfileError(f"{path}: line {line} is not UTF-8 (byte 0x{raw[exc.start]:02x}); save it as UTF-8 "
                           "YAML") from None
    bad = _CONTROL.search(text)
    if bad:
        raise ProfileError(f"{path}: line {text.count(chr(10), 0, bad.start()) + 1} holds control character "
                           f"{bad.group()!r}; YAML text allows only tabs and line breaks")
    return text


def _check_structure(path: Path, text: str) -> None:
    """Refuse deep nesting and alias expansion beyond the bounds above, walking the parser's events (flat, no
    recursion, no document built), so a hostile file costs at most one linear pass."""
    loader = _LOADER(text)
    depth = nodes = 0
    starts: list[tuple[str | None, int]] = []
    expanded: dict[str, int] = {}
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_NESTING:
                    raise ProfileError(f"{path}: nested deeper than {MAX_NESTING} levels (line "
                                       f"{event.start_mark.line + 1}); a profile needs 5")
                starts.append((event.anchor, nodes))
                nodes += 1
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
                anchor, first = starts.pop()
                if anchor is not None:
                    expanded[anchor] = nodes - first
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
                if event.anchor is not None:
                    expanded[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                nodes += expanded.get(event.anchor, 1)
            if nodes > MAX_NODES:
                raise ProfileError(f"{path}: more than {MAX_NODES} values once aliases are expanded (line "
                                   f"{event.start_mark.line + 1}); a profile holds a few thousand")
    except yaml.YAMLError as exc:
        raise ProfileError(_yaml_message(path, exc)) from None
    finally:
        loader.dispose()


def _yaml_message(path: Path, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" line {mark.line + 1}" if mark is not None else ""
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    return f"{path}:{where} is not valid YAML ({problem})"


def _read_yaml(path: Path) -> dict:
    text = _read_text(path)
    _check_structure(path, text)
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise ProfileError(_yaml_message(path, exc)) from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping of profile fields at the top level")
    return data


def _profile_files(directory: Path) -> list[Path]:
    """The YAML files under one search directory; an unreadable directory is the user's to fix, said once."""
    try:
        return sorted(directory.rglob("*.yaml")) if directory.is_dir() else []
    except (OSError, ValueError) as exc:
        raise ProfileError(f"{directory}: cannot search for profiles ({getattr(exc, 'strerror', None) or exc}); "
                           f"check {PROFILE_PATH_ENV}") from None


@cache
def _entries() -> tuple[ProfileEntry, ...]:
    """Every profile in the search path. A user's or a calibrated file is validated here, so a broken one is named
    whatever command runs; a shipped file is read (its kind and aliases) and validated when it is loaded, since
    the test suite validates every shipped profile and this keeps a command's start under a second."""
    seen: dict[str, ProfileEntry] = {}
    for directory in profile_dirs():
        shipped = directory == SHIPPED_DIR
        for path in _profile_files(directory):
            name = path.stem.lower()
            if name in seen:
                continue
            if shipped:
                kind, aliases = _kind_and_aliases(path)
            else:
                kind, aliases = _validated(path)
            seen[name] = ProfileEntry(name, kind, tuple(a.lower() for a in aliases), path)
    return tuple(seen.values())


def _kind_and_aliases(path: Path) -> tuple[str, list[str]]:
    """A shipped file's kind and aliases, from its two top-level lines where both are one-liners (`kind: gpu`,
    `aliases: [a, b]`, as every shipped profile writes them), else from the whole file: parsing 50 files whole
    took a tenth of every command's start, for two fields."""
    lines = [line for line in _read_text(path).splitlines() if line.startswith(("kind:", "aliases:"))]
    one_line = len(lines) == 2 and all(line.split(":", 1)[1].strip() for line in lines)
    data = yaml.load("\n".join(lines), Loader=_LOADER) if one_line else _read_yaml(path)
    if not isinstance(data, dict):
        data = _read_yaml(path)
    return str(data.get("kind", "?")), [str(a) for a in data.get("aliases") or []]


def _validated(path: Path) -> tuple[str, list[str]]:
    """(kind, aliases) of one file, validated against its kind's schema: a device (cpu, gpu), a link or node of
    a multi-GPU fabric, or a framework runtime."""
    data = _read_yaml(path)
    kind = data.get("kind")
    if kind in ("cpu", "gpu"):
        return kind, list(load_profile(path).aliases)
    if kind not in OTHER_SCHEMAS:
        raise ProfileError(f"{path}: field 'kind': expected one of cpu, gpu, link, node, runtime, got {kind!r}")
    return kind, list(load_other(path, kind).aliases)


OTHER_SCHEMAS = {"link": LinkProfile, "node": NodeProfile, "runtime": RuntimeProfile}
"""The profiles that are not devices: a multi-GPU fabric's links and nodes, and framework runtimes."""


@cache
def load_other(path: Path, kind: str) -> LinkProfile | NodeProfile | RuntimeProfile:
    """Validate one link, node or runtime profile; the error names the file and the first bad field."""
    data = _read_yaml(path)
    if data.get("kind") != kind:
        raise ProfileError(f"{path}: field 'kind': expected '{kind}', got {data.get('kind')!r}")
    try:
        return OTHER_SCHEMAS[kind].model_validate(data)
    except ValidationError as exc:
        raise ProfileError(_format_validation_error(path, exc)) from None


def find_other(name_or_path: str, kind: str) -> LinkProfile | NodeProfile | RuntimeProfile:
    """A link, node or runtime profile by file stem, alias (case-insensitive) or path to a YAML file."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        if not candidate.is_file():
            raise ProfileError(f"{candidate}: no such {kind} profile file")
        return load_other(candidate.resolve(), kind)
    key = name_or_path.strip().lower()
    pool = [e for e in _entries() if e.kind == kind]
    matches = [e for e in pool if key == e.name or key in e.aliases]
    if not matches:
        names = [n for e in pool for n in (e.name, *e.aliases)]
        raise UnknownName(f"unknown {kind} '{name_or_path}'{did_you_mean(key, names)}; "
                          f"`roofline hw list` shows the {kind} profiles")
    return load_other(matches[0].path, kind)


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
    if not name_or_path.strip():
        raise UnknownName("empty hardware name; `roofline hw list` shows the profiles")
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or is_file(candidate):
        if not is_file(candidate):
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


def is_file(path: Path) -> bool:
    """Path.is_file for a profile path, the OS's refusals a ProfileError (`roofline.files.is_file`)."""
    return files.is_file(path, "profile", ProfileError)


def profile_adapter() -> TypeAdapter[Profile]:
    """The pydantic adapter for the union, for `hw schema`."""
    return _PROFILE_ADAPTER

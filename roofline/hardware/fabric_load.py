"""Find link and node profiles by name or alias, on the same search path as the device profiles."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import ValidationError

from roofline.errors import ProfileError, UnknownName, did_you_mean
from roofline.hardware.fabric_schema import LinkProfile, NodeProfile
from roofline.hardware.load import _entries, _format_validation_error, _read_yaml

_MODELS = {"link": LinkProfile, "node": NodeProfile}


@cache
def _load(path: Path, kind: str) -> LinkProfile | NodeProfile:
    data = _read_yaml(path)
    if data.get("kind") != kind:
        raise ProfileError(f"{path}: field 'kind': expected '{kind}', got {data.get('kind')!r}")
    try:
        return _MODELS[kind].model_validate(data)
    except ValidationError as exc:
        raise ProfileError(_format_validation_error(path, exc)) from None


def _find(name_or_path: str, kind: str) -> LinkProfile | NodeProfile:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        if not candidate.is_file():
            raise ProfileError(f"{candidate}: no such {kind} profile file")
        return _load(candidate.resolve(), kind)
    key = name_or_path.strip().lower()
    pool = [e for e in _entries() if e.kind == kind]
    matches = [e for e in pool if key == e.name or key in e.aliases]
    if not matches:
        names = [n for e in pool for n in (e.name, *e.aliases)]
        raise UnknownName(f"unknown {kind} '{name_or_path}'{did_you_mean(key, names)}; "
                          f"`roofline hw list` shows the {kind} profiles")
    return _load(matches[0].path, kind)


def find_link(name_or_path: str) -> LinkProfile:
    """A link profile (`hardware_profiles/link/`) by name, alias or YAML path."""
    link = _find(name_or_path, "link")
    assert isinstance(link, LinkProfile)
    return link


def find_node(name_or_path: str) -> NodeProfile:
    """A node profile (`hardware_profiles/node/`) by name, alias or YAML path."""
    node = _find(name_or_path, "node")
    assert isinstance(node, NodeProfile)
    return node

"""Find link and node profiles by name or alias, on the same search path as the device profiles."""

from __future__ import annotations

from roofline.hardware.fabric_schema import LinkProfile, NodeProfile
from roofline.hardware.load import find_other


def find_link(name_or_path: str) -> LinkProfile:
    """A link profile (`hardware_profiles/link/`) by name, alias or YAML path."""
    link = find_other(name_or_path, "link")
    assert isinstance(link, LinkProfile)
    return link


def find_node(name_or_path: str) -> NodeProfile:
    """A node profile (`hardware_profiles/node/`) by name, alias or YAML path."""
    node = find_other(name_or_path, "node")
    assert isinstance(node, NodeProfile)
    return node

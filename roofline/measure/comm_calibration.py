"""`calibrate --comm`: measure gloo all-reduce between local processes and write it as a link profile.

The profile (kind `link`, figures 'measured: ...') is what `validate --train --ranks N` and a user's own node
profile can name; its bus bandwidth and latency replace derived ones.
"""

from __future__ import annotations

import datetime
import platform
from pathlib import Path
from typing import Any

import yaml

from roofline.hardware.load import calibrated_dir
from roofline.measure.gloo_ranks import AllreduceFit

LINK_NAME = "gloo-local"


def default_path() -> Path:
    return calibrated_dir() / "link" / f"{LINK_NAME}.yaml"


def link_document(fit: AllreduceFit) -> dict[str, Any]:
    import torch

    how = (f"gloo all-reduce between {fit.ranks} processes on {platform.node()} (one thread each, torch "
           f"{torch.__version__}, {datetime.date.today().isoformat()}), median of repeats")
    return {
        "name": f"gloo between local processes ({platform.node()})", "kind": "link", "aliases": ["gloo"],
        "technology": "gloo over loopback TCP", "scope": "intra-node",
        "bandwidth_bytes_per_s": {"value": fit.bus_bandwidth_bytes_per_s,
                                  "source": f"measured: {how}; bus bandwidth 2(n-1)/n x bytes / time, median over "
                                            "1-32 MiB"},
        "latency_s": {"value": fit.latency_s, "source": f"measured: {how}; a 4-byte all-reduce / 2(n-1) steps"},
    }


def write_link(fit: AllreduceFit, path: Path, force: bool, create_directory: bool) -> None:
    """The link profile, written whole or not at all (roofline.files); only the default calibrated directory is
    created, a directory the user named must exist."""
    from roofline.files import check_target, make_parent, write_text_atomically

    check_target(path, "--out", force, parent_must_exist=not create_directory)
    make_parent(path)
    write_text_atomically(path, yaml.safe_dump(link_document(fit), sort_keys=False), "--out", force)

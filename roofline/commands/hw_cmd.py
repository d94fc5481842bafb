"""`roofline hw`: list, show, detect and describe hardware profiles.

`show` and `detect` print the same document (see report/hw_view.py): the figures DESIGN.md fixes plus every
derived figure next to the datasheet's. `detect --save` writes this machine's profile as YAML that any
command then takes with `--hw FILE`; it never overwrites a file unless `--force` says so.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from roofline.commands.common import add_json_flag, print_json, text
from roofline.errors import RooflineError


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("hw", help="hardware profiles: list, show, detect, schema",
                              description="List, show and detect hardware profiles.")
    sub = p.add_subparsers(dest="hw_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="all profiles (shipped and in ROOFLINE_PROFILE_PATH)")
    add_json_flag(ls)
    ls.set_defaults(handler=run_list)
    show = sub.add_parser("show", help="one profile with its derived figures and ridge points")
    show.add_argument("profile", type=text, metavar="NAME|PATH", help="profile name, alias or YAML path")
    add_json_flag(show)
    show.set_defaults(handler=run_show)
    det = sub.add_parser("detect", help="profile this machine (CPU, and GPUs through NVML or torch.cuda)")
    det.add_argument("--save", type=text, metavar="FILE", help="write the CPU profile as YAML (usable with --hw FILE)")
    det.add_argument("--force", action="store_true", help="let --save overwrite an existing file")
    det.add_argument("--calibration", type=text, metavar="FILE",
                     help="a calibrated profile of this machine (from `roofline calibrate`) whose measured "
                     "ceilings replace the estimates")
    det.add_argument("--no-gpu", action="store_true", help="skip GPU detection")
    add_json_flag(det)
    det.set_defaults(handler=run_detect)
    schema = sub.add_parser("schema", help="the JSON schema a profile YAML must follow")
    add_json_flag(schema)
    schema.set_defaults(handler=run_schema)


def run_list(args: argparse.Namespace) -> int:
    from roofline.hardware import list_profiles

    entries = list_profiles()
    out = {"profiles": [{"name": e.name, "kind": e.kind, "aliases": list(e.aliases), "path": str(e.path)}
                        for e in entries]}
    if args.json:
        print_json(out)
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="hardware profiles (`roofline hw show NAME` for one)")
    for col in ("name", "kind", "aliases", "file"):
        t.add_column(col, overflow="fold")
    for row in out["profiles"]:
        t.add_row(row["name"], row["kind"], ", ".join(row["aliases"]), row["path"])
    Console().print(t)
    return 0


def _print_summary(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(summary)
        return
    from roofline.report.hw_view import render_profile

    render_profile(summary)


def run_show(args: argparse.Namespace) -> int:
    from roofline import api

    fabric = _fabric_kind(args.profile)
    if fabric:
        return _show_fabric(args.profile, fabric, args.json)
    _print_summary(api.hardware(args.profile).to_dict(), args.json)
    return 0


def _fabric_kind(name: str) -> str | None:
    """'link', 'node' or 'runtime' when the name is one of those profiles, else None (a device, or unknown)."""
    from roofline.hardware import list_profiles
    from roofline.hardware.load import OTHER_SCHEMAS, _read_yaml, is_file

    path = Path(name)
    if path.suffix in (".yaml", ".yml") and is_file(path):
        kind = _read_yaml(path).get("kind")
        return kind if kind in OTHER_SCHEMAS else None
    key = name.strip().lower()
    return next((e.kind for e in list_profiles()
                 if e.kind in OTHER_SCHEMAS and (key == e.name or key in e.aliases)), None)


def _show_fabric(name: str, kind: str, as_json: bool) -> int:
    """A link, node or runtime profile as validated, and for a node the bus bandwidth its collectives are priced
    at."""
    from roofline.hardware.fabric_load import find_link
    from roofline.hardware.load import find_other

    profile = find_other(name, kind)
    out: dict[str, Any] = {"name": profile.name, "kind": kind, **profile.model_dump(exclude={"name", "kind"})}
    if kind == "node":
        from roofline.model.comm.fabric import node_fabric

        nic = find_link(profile.nic_link) if profile.nic_link else None
        whole = node_fabric(profile, find_link(profile.intra_link), nic, int(profile.gpus_per_node.value))
        out["bus_bandwidth_bytes_per_s"] = whole.bus_bandwidth_bytes_per_s
        out["bus_bandwidth_provenance"] = whole.intra.provenance
        if nic is not None and profile.nics_per_node is not None:
            out["nic_bandwidth_bytes_per_s"] = nic.bandwidth_bytes_per_s.value * profile.nics_per_node.value
    if as_json:
        print_json(out)
        return 0
    print(json.dumps(out, indent=2, default=str))
    return 0


def _calibration(path_text: str | None):
    if path_text is None:
        return None
    from roofline.hardware.load import is_file, load_profile

    path = Path(path_text)
    if not is_file(path):
        raise RooflineError(f"--calibration {path}: no such file; `roofline calibrate --out FILE` writes one")
    profile = load_profile(path.resolve())
    if profile.measured is None:
        raise RooflineError(f"--calibration {path}: the profile has no 'measured' section; "
                            "`roofline calibrate --out FILE` writes one")
    return profile.measured


def save_profile(profile: Any, path: Path, force: bool) -> None:
    """YAML of the profile, loadable with --hw PATH, written whole or not at all; refuses to replace a file
    unless forced."""
    import yaml

    from roofline.files import check_target, write_text_atomically

    check_target(path, "--save", force)
    header = "# Written by `roofline hw detect`: figures say where each number came from.\n"
    body = yaml.safe_dump(profile.model_dump(mode="json", exclude_none=True), sort_keys=False)
    write_text_atomically(path, header + body, "--save", force)


def run_detect(args: argparse.Namespace) -> int:
    from roofline.hardware.detect import detect_cpu, detect_gpus, match_gpu_profile
    from roofline.report.hw_view import profile_summary

    profile = detect_cpu(measured=_calibration(args.calibration))
    summary = profile_summary(profile, "detected")
    gpus = [] if args.no_gpu else detect_gpus()
    summary["gpus"] = [{**g.as_dict(), "matched_profile": match_gpu_profile(g)} for g in gpus]
    if args.save:
        save_profile(profile, Path(args.save), args.force)
        summary["saved_to"] = str(Path(args.save).resolve())
    _print_summary(summary, args.json)
    if not args.json:
        from rich.console import Console

        console = Console()
        for g in summary["gpus"]:
            console.print(f"GPU {g['index']}: {g['name']}, {g['sm_count']} SMs, "
                          f"{g['memory_bytes'] / 2**30:.1f} GiB ({g['source']}); profile: "
                          f"{g['matched_profile'] or 'none matches: write one (see hardware_profiles/gpu/)'}")
        if args.save:
            console.print(f"saved to {summary['saved_to']}: use it with --hw {args.save}")
    return 0


def run_schema(args: argparse.Namespace) -> int:
    from roofline.hardware.load import profile_adapter

    print(json.dumps(profile_adapter().json_schema(), indent=2))
    return 0

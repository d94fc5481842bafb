"""Dump what `predict`, `advise`, `analyze`, `explain` and `hw show` answer (`--json`) over the zoo x devices
x modes, to one file.

A refactor that claims "behaviour unchanged" runs this before and after and compares the two files byte for
byte (`cmp before.json after.json`). Every command runs in this process through `cli.main` (no subprocess per
configuration), so the whole grid takes a few minutes; an error answer (exit status 2, e.g. a batch that does
not fit) is recorded with its status and message, since a changed error is a changed behaviour too.

Run: python benchmarks/predictions_snapshot.py /tmp/snapshot.json [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cli import main  # noqa: E402  (the repository root, not an installed copy)

MODELS = ["mobilenetv3", "mobilenetv3-small", "resnet18", "resnet50", "vgg16", "alexnet", "mlp", "bert-base", "gpt2"]
DEVICES = [
    ["--gpu", "v100"],
    ["--gpu", "a100"],
    ["--gpu", "h100"],
    ["--gpu", "t4"],
    ["--cpu", "textbook"],
    ["--cpu", "xeon-8380"],
    ["--cpu", "apple-m2"],
    ["--hw", "benchmarks/results/accuracy-cpu-profile.yaml"],
]
BATCHES = ["1", "8", "32"]
PRECISIONS = ["fp32", "fp16", "bf16"]
MODES = [[], ["--train"]]


def answer(argv: list[str]) -> dict:
    """One command's JSON document, or its exit status and stderr when it refuses."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    if status == 0:
        return json.loads(out.getvalue())
    return {"status": status, "stderr": err.getvalue().strip()}


def configurations(quick: bool) -> list[list[str]]:
    """argv lists: analyze per model and batch; predict per model, device, mode, precision, batch; advise
    per model, device and mode; explain and hw show per device. `quick` keeps two models and two devices."""
    models = MODELS[:1] + MODELS[-2:-1] if quick else MODELS
    devices = DEVICES[:1] + DEVICES[-1:] if quick else DEVICES
    runs = [["analyze", "--model", m, "--batch", b, "--json"] for m in models for b in BATCHES]
    runs += [["analyze", "--model", m, *d, "--batch", "8", "--json"] for m in models for d in devices]
    runs += [[command, *d, "--json"] for command in ("explain",) for d in devices]
    runs += [["hw", "show", d[1], "--json"] for d in devices]
    for model in models:
        for device in devices:
            for mode in MODES:
                runs += [["predict", "--model", model, *device, *mode, "--precision", p, "--batch", ",".join(BATCHES),
                          "--allow-oversize", "--json"] for p in PRECISIONS]
                runs.append(["advise", "--model", model, *device, *mode, "--json"])
    return runs


def main_snapshot() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="JSON file to write")
    parser.add_argument("--quick", action="store_true", help="two models x two devices")
    args = parser.parse_args()
    args.out = args.out.resolve()
    os.chdir(ROOT)  # profile paths above are relative to the repository root
    runs = configurations(args.quick)
    snapshot = {" ".join(argv): answer(argv) for argv in runs}
    args.out.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n")
    print(f"{len(runs)} configurations -> {args.out}")


if __name__ == "__main__":
    main_snapshot()

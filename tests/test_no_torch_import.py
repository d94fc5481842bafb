"""The fast commands never import torch (seconds to import), nor sympy (half a second) nor matplotlib:
`advise`, `predict`, `analyze`, `hw` and `explain` must answer in well under a second. Each command runs in
a fresh interpreter, since an earlier import in this test process would hide a later one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "sympy", "matplotlib")

PROBE = f"""
HEAVY = {HEAVY!r}
import contextlib, io, json, sys
import cli
with contextlib.redirect_stdout(io.StringIO()):
    rc = cli.main(sys.argv[1:])
print(json.dumps({{"rc": rc, "loaded": [m for m in HEAVY if m in sys.modules]}}))
"""

COMMANDS = [
    ["hw", "list", "--json"],
    ["hw", "show", "v100", "--json"],
    ["explain", "--cpu", "textbook", "--json"],
    ["analyze", "--model", "resnet50", "--batch", "8", "--json"],
    ["analyze", "--model", "bert-base", "--gpu", "v100", "--json"],
    ["predict", "--model", "resnet50", "--gpu", "v100", "--batch", "32", "--precision", "fp16", "--json"],
    ["predict", "--op", "conv2d(n=8,c=64,h=56,w=56,k=64,r=3,s=3,pad=1)", "--gpu", "v100", "--json"],
    ["advise", "--model", "mobilenetv3", "--gpu", "v100", "--json"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_fast_paths_import_no_heavy_modules(argv):
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0
    assert result["loaded"] == [], f"roofline {' '.join(argv)} imported {result['loaded']}"

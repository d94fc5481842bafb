"""Running the command line inside a test, as the contract states it: `--json` prints one document and exits 0;
a user error prints one line on stderr, nothing on stdout, and exits 2."""

from __future__ import annotations

import json

import cli


def run_json(capsys, *argv: str) -> dict:
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def run_error(capsys, *argv: str) -> str:
    """A user error: exit 2, nothing on stdout, exactly one line on stderr (returned)."""
    assert cli.main(list(argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]

"""`roofline hw ...` through the CLI entry point: the JSON contract of DESIGN.md, one-line errors with exit
status 2, --save's refusal to overwrite, and no torch import on the fast paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cli_run import run_error, run_json

import cli
from roofline.hardware.load import SHIPPED_DIR

TEXTBOOK = SHIPPED_DIR / "cpu" / "textbook-cpu.yaml"
SHOW_KEYS = {"name", "kind", "peak_flops", "memory_bandwidth", "memory_capacity", "caches", "ridge_point",
             "measured"}


def test_list_has_every_shipped_profile(capsys):
    out = run_json(capsys, "hw", "list")
    names = {p["name"]: p for p in out["profiles"]}
    for stem in ("textbook-cpu", "xeon-platinum-8380", "epyc-9654", "graviton3", "apple-m2",
                 "i7-7920hq-macbook-pro-2017", "v100-sxm2-16gb"):
        assert {"name", "kind", "aliases"} <= set(names[stem])
    assert names["v100-sxm2-16gb"]["kind"] == "gpu" and "v100" in names["v100-sxm2-16gb"]["aliases"]


def test_show_textbook_keys_and_values(capsys):
    out = run_json(capsys, "hw", "show", "textbook")
    assert set(out) >= SHOW_KEYS
    assert out["name"] == "textbook-cpu" and out["kind"] == "cpu" and out["measured"] is None
    # 16 cores x 2e9 Hz x 16 fp32 lanes x 2 FMA units x 2 = 2.048e12 FLOP/s; ridge = 2.048e12 / 100e9 = 20.48
    assert out["peak_flops"]["fp32"] == pytest.approx(2.048e12)
    assert out["ridge_point"]["fp32"] == pytest.approx(20.48)
    assert out["memory_bandwidth"] == 100e9 and out["memory_capacity"] == 128 * 2**30
    assert all({"level", "size", "bandwidth"} <= set(c) for c in out["caches"])
    # L1: 16 instances x 32 B/cycle x 2e9 Hz = 1.024e12 B/s
    assert out["caches"][0]["bandwidth"] == pytest.approx(1.024e12)
    rows = {r["name"]: r for r in out["derived"]}
    mem = rows["memory_bandwidth_bytes_per_s"]
    # 256 bit / 8 x 3.2e9 = 102.4e9 against the chapter's 100e9: +2.4%, under the 5% flag
    assert mem["value"] == pytest.approx(102.4e9) and mem["datasheet"] == 100e9 and mem["flagged"] is False
    assert out["ridge_point_by_level"]["L1"]["fp32"] == pytest.approx(2.048e12 / 1.024e12)


def test_show_gpu_and_flagged_disagreement(capsys, tmp_path):
    data = yaml.safe_load((SHIPPED_DIR / "gpu" / "v100-sxm2-16gb.yaml").read_text())
    data["memory"]["bandwidth_bytes_per_s"]["value"] = 800e9  # derived 4096/8 x 1.752e9 = 897e9: +12%
    path = tmp_path / "v100-wrong.yaml"
    path.write_text(yaml.safe_dump(data))
    out = run_json(capsys, "hw", "show", str(path))
    assert out["name"] == "v100-wrong" and out["kind"] == "gpu"
    mem = next(r for r in out["derived"] if r["name"] == "memory_bandwidth_bytes_per_s")
    assert mem["flagged"] is True and mem["disagreement"] == pytest.approx(4096 / 8 * 1.752e9 / 800e9 - 1)


def test_show_measured_as_percent_of_datasheet(capsys, tmp_path):
    data = yaml.safe_load(TEXTBOOK.read_text())
    data["measured"] = {"peak_flops": {"fp32": 1.024e12}, "memory_bandwidth": 80e9,
                        "environment": {"cpu": "textbook", "date": "2024-01-01"}}
    path = tmp_path / "calibrated.yaml"
    path.write_text(yaml.safe_dump(data))
    m = run_json(capsys, "hw", "show", str(path))["measured"]
    assert {"peak_flops", "memory_bandwidth", "caches", "environment"} <= set(m)
    assert m["percent_of_datasheet"]["memory_bandwidth"] == pytest.approx(80)  # 80e9 / 100e9
    assert m["percent_of_datasheet"]["peak_flops"]["fp32"] == pytest.approx(50)  # 1.024e12 / 2.048e12
    assert cli.main(["hw", "show", str(path)]) == 0
    assert "% of peak" in capsys.readouterr().out


def test_unknown_name_suggests(capsys):
    assert run_error(capsys, "hw", "show", "v1OO").startswith(
        "roofline: error: unknown hardware 'v1OO' (did you mean: v100?)")


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda text: text.replace("kind: cpu", "kind: cpu\n  bad: [unclosed"), "not valid YAML"),
    (lambda text: text.split("memory:")[0], "field 'memory'"),
    (lambda text: text.replace("cores: {value: 16,", "cores: {value: many,"), "field 'compute.cores.value'"),
    (lambda text: text.replace("vendor: generic", "vendor: generic\ncolour: blue"), "field 'colour'"),
])
def test_bad_profile_names_file_and_field(capsys, tmp_path, edit, expected):
    path = tmp_path / "broken.yaml"
    path.write_text(edit(TEXTBOOK.read_text()))
    message = run_error(capsys, "hw", "show", str(path))
    assert str(path) in message and expected in message


def test_detect_keys_and_save_refuses_to_overwrite(capsys, tmp_path):
    target = tmp_path / "this-machine.yaml"
    out = run_json(capsys, "hw", "detect", "--no-gpu", "--save", str(target))
    assert set(out) >= SHOW_KEYS and out["gpus"] == []
    saved = run_json(capsys, "hw", "show", str(target))
    assert saved["peak_flops"] == pytest.approx(out["peak_flops"])
    assert "--force" in run_error(capsys, "hw", "detect", "--no-gpu", "--save", str(target))
    assert cli.main(["hw", "detect", "--no-gpu", "--save", str(target), "--force", "--json"]) == 0


def test_detect_with_calibration(capsys, tmp_path):
    data = yaml.safe_load(TEXTBOOK.read_text())
    data["measured"] = {"peak_flops": {"fp32": 5e10}, "memory_bandwidth": 2e10, "environment": {"cpu": "x"}}
    path = tmp_path / "calibrated.yaml"
    path.write_text(yaml.safe_dump(data))
    out = run_json(capsys, "hw", "detect", "--no-gpu", "--calibration", str(path))
    assert out["memory_bandwidth"] == 2e10 and out["measured"]["memory_bandwidth"] == 2e10
    assert "no 'measured' section" in run_error(capsys, "hw", "detect", "--calibration", str(TEXTBOOK))


def test_schema_is_json_schema(capsys):
    assert cli.main(["hw", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "CpuProfile" in schema["$defs"] and "GpuProfile" in schema["$defs"]


@pytest.mark.parametrize("argv", [["hw", "list"], ["hw", "show", "textbook"], ["hw", "show", "v100"],
                                  ["explain", "--cpu", "textbook"], ["explain", "--gpu", "v100"]])
def test_fast_paths_import_neither_torch_nor_sympy(argv):
    code = ("import sys, contextlib, io, cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = cli.main({argv!r} + ['--json'])\n"
            "print(rc, 'torch' in sys.modules, 'sympy' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=Path(cli.__file__).parent, timeout=60)
    assert result.stdout.split() == ["0", "False", "False"], result.stderr


def test_every_shipped_profiles_index_entry_matches_its_whole_file():
    """The index reads a shipped file's kind and aliases from its two top-level lines; the whole file says the same."""
    import yaml

    from roofline.hardware.load import SHIPPED_DIR, _kind_and_aliases

    files = sorted(SHIPPED_DIR.rglob("*.yaml"))
    assert len(files) > 40
    for path in files:
        data = yaml.safe_load(path.read_text())
        assert _kind_and_aliases(path) == (str(data["kind"]), [str(a) for a in data.get("aliases") or []]), path

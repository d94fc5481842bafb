"""`roofline report` / `--html`: one self-contained page, checked in a real headless Chromium (Debian's
`chromium`, which .ci/run installs where missing) for what a person sees: a non-blank screenshot, one visible
point per layer with the layer's name as its hover text, and no console message (no error, no failed load)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs it)")

PROBE = """<script>
const layers = [...document.querySelectorAll('svg circle.layer')];
const visible = layers.filter(c => {
  const r = c.getBoundingClientRect(), s = c.ownerSVGElement.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.left >= s.left && r.right <= s.right && r.top >= s.top
    && r.bottom <= s.bottom;
});
document.title = JSON.stringify({
  visible: visible.length,
  hover: visible.map(c => c.querySelector('title').textContent),
  svgs: document.querySelectorAll('svg').length,
  rows: document.querySelectorAll('table tr').length,
});
</script>"""
"""Added to a copy of the page for the test only: it measures what the browser laid out and reports it through
the document's title, which --dump-dom prints."""


def _roofline(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *args], capture_output=True, text=True, cwd=cwd)


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True, text=True, timeout=90)


def _console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _seen(page: Path, tmp_path: Path) -> tuple[dict, list[str]]:
    """(what the probe measured in the laid-out page, the page's console messages)."""
    probed = tmp_path / f"probed-{page.name}"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    done = _chromium("--dump-dom", probed.as_uri())
    title = re.search(r"<title>(\{.*?\})</title>", done.stdout)
    assert title, done.stderr[-2000:]
    return json.loads(title.group(1).replace("&quot;", '"')), _console_messages(done.stderr)


def _expected_points(predict_doc: dict) -> list[str]:
    """Layers with FLOPs, bytes and time: each must be one point (at FLOP/byte, FLOP/s) on the roofline."""
    return [r["name"] for r in predict_doc["layers"] if r["flops"] > 0 and r["bytes"] > 0 and r["time_s"] > 0]


@needs_chromium
def test_the_report_shows_every_layer_and_no_error_in_a_real_browser(tmp_path):
    from PIL import Image

    page = tmp_path / "report.html"
    done = _roofline("report", "--model", "mobilenetv3", "--gpu", "v100", "--train", "-o", str(page), "--json",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rec = json.loads(done.stdout)["recommended"]
    predicted = _roofline("predict", "--model", "mobilenetv3", "--gpu", "v100", "--train", "--batch",
                          str(rec["batch_size"]), "--precision", rec["precision"], "--json", cwd=tmp_path)
    names = _expected_points(json.loads(predicted.stdout))
    assert len(names) > 50  # MobileNetV3-Large has 60+ convolution, norm and activation layers

    html = page.read_text()
    assert "<script" not in html and not re.search(r"(src|href)=", html)  # nothing to fetch, nothing to run

    seen, console = _seen(page, tmp_path)
    assert console == []
    assert seen["visible"] == len(names)
    assert sorted(h.split(" (")[0] for h in seen["hover"]) == sorted(names)
    assert seen["svgs"] == 3  # roofline, throughput and memory against batch
    assert seen["rows"] > len(names)  # the per-layer table (and the precision table)

    shot = tmp_path / "shot.png"
    taken = _chromium("--window-size=1200,900", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file(), taken.stderr[-2000:]
    assert _console_messages(taken.stderr) == []
    pixels = Image.open(shot).convert("RGB")
    colours = pixels.getcolors(maxcolors=1 << 20)
    non_white = sum(n for n, c in colours if c != (255, 255, 255))
    assert non_white > 0.02 * pixels.width * pixels.height  # text, axes, lines and points, not a blank page
    assert len(colours) > 20  # the ceilings' colours and anti-aliased text, not one flat fill


@needs_chromium
def test_the_console_check_catches_a_broken_page(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><script>undefined_function()</script></body></html>")
    done = _chromium("--dump-dom", broken.as_uri())
    assert any("undefined_function" in line for line in _console_messages(done.stderr))


def test_an_existing_file_is_kept_without_force_and_replaced_atomically_with_it(tmp_path):
    page = tmp_path / "mine.html"
    page.write_text("my notes")
    refused = _roofline("advise", "--model", "resnet18", "--gpu", "t4", "--html", str(page), cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.startswith("roofline: error: ") and refused.stderr.count("\n") == 1
    assert page.read_text() == "my notes"
    forced = _roofline("predict", "--model", "resnet18", "--gpu", "t4", "--batch", "1,8,32", "--html", str(page),
                       "--force", "--json", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["html"] == str(page.resolve())
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.count("<svg") == 3  # roofline, throughput, memory
    assert [p.name for p in tmp_path.iterdir()] == ["mine.html"]  # no temporary file left beside it


def test_a_missing_directory_is_refused_before_the_sweep(tmp_path):
    done = _roofline("report", "--model", "resnet18", "--gpu", "t4", "-o", str(tmp_path / "no" / "r.html"),
                     cwd=tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr

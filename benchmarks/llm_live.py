"""Language models served live on this CPU: `roofline validate --serve` over a grid, predicted vs measured per phase.

The engine is Hugging Face transformers' `generate` (random weights from a config, no download, greedy, fp32),
as issue 18 asks: GPT-2 small, a small Llama-shaped config (benchmarks/configs/llama-tiny) and TinyLlama-1.1B,
each at two prompt lengths, batch 1. One quick calibration is taken first and written beside the results
(llm-live-cpu-profile.yaml); every case then runs in a process of its own (`roofline validate --serve --hw`
that profile), as a user's script would. Prefill is `generate(max_new_tokens=1)`; the time per output token is
(generate(O) - generate(1)) / (O - 1) (`roofline.measure.llm_live`). Error = predicted / measured - 1.
Targets (issue 18): median |error| <= 15% on prefill and on time per output token, worst <= 35%.

    python benchmarks/llm_live.py [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEDIAN_TARGET_PCT = 15.0
WORST_TARGET_PCT = 35.0
CASES: list[tuple[str, int, int, int]] = [
    # (model, prompt tokens, output tokens, repeats): the 1.1B model's steps take seconds, so fewer of them
    ("gpt2", 64, 32, 5),
    ("gpt2", 256, 32, 5),
    ("benchmarks/configs/llama-tiny/config.json", 64, 32, 5),
    ("benchmarks/configs/llama-tiny/config.json", 256, 32, 5),
    ("tinyllama-1.1b", 64, 16, 3),
    ("tinyllama-1.1b", 256, 16, 3),
]


def _cli(*args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "cli", *args, "--json"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"roofline {' '.join(args)} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(done.stdout)


def markdown(rows: list[dict], profile: str, elapsed_s: float, load: tuple[float, float]) -> str:
    errors = {phase: [r[phase]["error_pct"] for r in rows] for phase in ("prefill", "decode")}
    lines = ["# Language models served live on this CPU (`python benchmarks/llm_live.py`)", "",
             f"transformers {rows[0]['versions']['transformers']}, torch {rows[0]['versions']['torch']}, "
             f"{rows[0]['threads']} threads; profile {profile} (one quick calibration just before); batch 1, fp32, "
             f"greedy. 1-minute load average {load[0]:.2f} before, {load[1]:.2f} after; {elapsed_s:.0f} s in all.",
             "", "| model | prompt | output | prefill predicted / measured ms | error | time per output token "
             "predicted / measured ms | error |", "|---|---:|---:|---|---:|---|---:|"]
    for r in rows:
        p, d = r["prefill"], r["decode"]
        lines.append(f"| {r['model']} | {r['prompt_len']} | {r['output_len']} | {p['predicted_s'] * 1e3:.1f} / "
                     f"{p['measured_s'] * 1e3:.1f} | {p['error_pct']:+.1f}% | {d['predicted_s'] * 1e3:.2f} / "
                     f"{d['measured_s'] * 1e3:.2f} | {d['error_pct']:+.1f}% |")
    lines.append("")
    for phase, values in errors.items():
        median = statistics.median(abs(e) for e in values)
        worst = max(abs(e) for e in values)
        met = median <= MEDIAN_TARGET_PCT and worst <= WORST_TARGET_PCT
        lines.append(f"{phase}: median |error| {median:.1f}%, worst {worst:.1f}% (targets {MEDIAN_TARGET_PCT:g}% "
                     f"and {WORST_TARGET_PCT:g}%: {'met' if met else 'NOT met'}).")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    profile = args.out / "llm-live-cpu-profile.yaml"
    _cli("calibrate", "--quick", "--dtypes", "fp32", "--out", str(profile), "--force")
    rows = []
    for model, prompt, output, repeats in CASES:
        print(f"{model} P={prompt} O={output}", file=sys.stderr, flush=True)
        doc = _cli("validate", "--model", model, "--serve", "--prompt-len", str(prompt), "--output-len", str(output),
                   "--repeats", str(repeats), "--hw", str(profile))
        rows += [{**r, "model": doc["model"]} for r in doc["runs"]]
    text = markdown(rows, os.path.relpath(profile, ROOT), time.perf_counter() - started,
                    (load_before, os.getloadavg()[0]))
    (args.out / "llm-live-cpu.md").write_text(text)
    (args.out / "llm-live-cpu.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

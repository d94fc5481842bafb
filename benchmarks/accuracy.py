"""Accuracy of roofline's predictions on this CPU: `roofline validate` over the zoo, inference and training.

Before each of its PASSES passes over the grid the run calibrates this machine (`roofline calibrate`, in a
child process), and it predicts every row with those calibrations combined figure by figure
(`roofline.measure.calibrate.combine`, written next to the results as accuracy-cpu-profile.yaml). On this shared VM
the speed of everything drifts over minutes (a 512^3 fp32 product read 79 to 170 GFLOP/s within one hour,
benchmarks/LOG.md): one calibration describes the minute it ran in, and a grid measured over the next ten
minutes against it measures that drift as much as the cost model; calibrations spread over the passes describe
the span the rows were timed in. `--profile FILE` predicts with an existing calibrated profile instead. Each
case is timed live with PyTorch (warm-up excluded, median of repeats, IQR spread) in every pass, alternately
forward and in reverse order, each time in a process of its own (as a user's script runs one model; see
`run_case`), and the passes' samples are pooled. The report lists every run and, per run, the
op kinds whose predicted time is furthest from the profiler's measured time: where the cost model is wrong,
not only by how much. Sizes are chosen for a 2-core machine (about 13 minutes in all); targets from the issue:
median |error| <= 15 %, worst <= 40 %.

Run: python benchmarks/accuracy.py [--quick] [--profile FILE]  -> benchmarks/results/accuracy-cpu.md (+ .json)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.hardware.load import load_profile
from roofline.hardware.schema import Profile
from roofline.measure.live_runs import LiveRuns, run_live
from roofline.measure.timing import SPREAD_WARN_REL_IQR, quantile
from roofline.validate.document import validation_dict
from roofline.validate.profile_choice import ProfileChoice
from roofline.validate.results import error_pct
from roofline.validate.run import compare
from roofline.workload.request import ModelRequest

MEDIAN_TARGET_PCT = 15.0
WORST_TARGET_PCT = 40.0
"""Targets of the accuracy issue: median |error| and worst |error| over all runs."""
WORST_KINDS = 3
"""Op kinds listed per run, largest |predicted - measured| seconds first."""
ISSUE_GRID = ("mlp", "mobilenetv3-large", "mobilenetv3-small", "resnet18", "alexnet")
"""The models the accuracy issue names; resnet50, bert-base and gpt2 are measured beside them."""
REPEATS = 7
BUDGET_S = 1.0
"""Per batch and pass (at least REPEATS steps whatever it says): with the weight-heavy convolution shapes in
its three calibrations (55 s each), 2 s took the grid to 936 s and 1.5 s to 921, past the 15 minutes it is
sized to."""
PASSES = 3
"""The grid runs this many times, alternately forward and in reverse, so each row's samples span moments
minutes apart (this machine's speed swings between states lasting seconds to tens of seconds; one window
can sit in either) and the row's step is the median of all passes' samples. The profiler's per-kind table
and the fresh-page count are taken in the first pass only."""
KNIFE_EDGE_SPREAD = 0.20
"""A row whose pooled samples' IQR exceeds this share of their median is one whose processes disagree, not a
noisy timer: the C heap's state is drawn per process (the MLP's training step at batch 1 faulted 8.4 MB a step
in 9 of 16 processes, 6-8 ms, and none in the other 7, 1.5-2 ms; LOG.md). Such a row runs again, PASSES more
processes, with glibc told to keep its pages (the allocator advice's setting, `heap_setting.KEEP_HEAP_ENV`),
predicted so; the report shows both and judges the targets on the steady one (issue 16)."""
SPEED_PROBE_N = 512
SPEED_PROBE_S = 0.3

CASES: list[tuple[str, bool, list[int], dict[str, int]]] = [
    # (model, train, batch sizes, input options): the issue's grid (mlp, mobilenetv3 large and small,
    # resnet18, alexnet at batch 1 to 64, inference and training; images at 112 or 128 pixels so that it
    # finishes within 15 minutes on 2 cores), then larger models at 224 pixels / 128 tokens, inference only.
    ("mlp", False, [1, 8, 64], {}),
    ("mobilenetv3", False, [1, 8, 64], {"input_size": 128}),
    ("mobilenetv3-small", False, [1, 8, 64], {"input_size": 128}),
    ("resnet18", False, [1, 8, 64], {"input_size": 112}),
    ("alexnet", False, [1, 8, 64], {"input_size": 128}),
    ("mlp", True, [1, 8, 64], {}),
    ("mobilenetv3", True, [1, 8, 32], {"input_size": 112}),
    ("mobilenetv3-small", True, [1, 8, 64], {"input_size": 112}),
    ("resnet18", True, [1, 8, 32], {"input_size": 112}),
    ("alexnet", True, [1, 8, 64], {"input_size": 128}),
    ("resnet50", False, [1, 4], {"input_size": 224}),
    ("bert-base", False, [1, 4], {"seq_len": 128}),
    ("gpt2", False, [1, 4], {"seq_len": 128}),
]
QUICK_CASES = [("mlp", False, [1, 32], {}), ("resnet18", False, [1], {"input_size": 112}),
               ("mlp", True, [32], {})]
ALL_CASES = CASES + [case for case in QUICK_CASES if case not in CASES]
"""Cases by index, for the child processes that measure them."""


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f}"


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:.1f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def calibration_line(cal: dict[str, Any] | None) -> str:
    if cal is None:
        return "Calibration: none (detected ceilings)."
    curve = ", ".join(f"{n}: {rate / 1e9:.0f}" for n, rate in cal["gemm_curve_fp32"])
    conv = ", ".join(f"{k} {v:.2f}" for k, v in cal["conv_efficiency"].items())
    calls = ", ".join(f"{k} {v * 1e6:.1f}" for k, v in cal["dispatch_s_by_kind"].items())
    fault = cal["page_fault_bytes_per_s"]
    runs = cal.get("calibrations", 1)
    when = f"{runs} calibrations combined, one before each pass, {cal['date']} to {cal['date_last']}" if runs > 1 \
        else f"taken {cal['date']}"
    return (f"Calibration ({when}): fp32 peak "
            f"{cal['peak_flops'].get('fp32', 0) / 1e9:.0f} GFLOP/s, DRAM {cal['memory_bandwidth'] / 1e9:.1f} GB/s, "
            f"first touch {'-' if fault is None else f'{fault / 1e9:.2f}'} GB/s, per-call cost by kind (us) "
            f"{{{calls}}}, fp32 GEMM curve n: GFLOP/s {{{curve}}}, conv efficiency {{{conv}}}.")


def worst_kinds(run: dict[str, Any]) -> str:
    rows = sorted(run["by_kind"], key=lambda k: -abs((k["predicted_s"] or 0.0) - (k["measured_s"] or 0.0)))
    return "; ".join(f"{k['kind']} {_ms(k['predicted_s'])} vs {_ms(k['measured_s'])}" for k in rows[:WORST_KINDS])


def calibration_summary(profile: Profile) -> dict[str, Any] | None:
    """The measured figures predictions used, so a reader can tell a cost-model error from a bad ceiling."""
    measured = profile.measured
    if measured is None:
        return None
    return {"peak_flops": dict(measured.peak_flops), "memory_bandwidth": measured.memory_bandwidth,
            "gemm_curve_fp32": [(p.n, p.flops_per_s) for p in measured.gemm_curves.get("fp32", [])],
            "conv_efficiency": dict(measured.conv_efficiency), "framework_dispatch_s": measured.framework_dispatch_s,
            "dispatch_s_by_kind": dict(measured.dispatch_s_by_kind),
            "page_fault_bytes_per_s": measured.page_fault_bytes_per_s, "date": measured.environment.get("date"),
            "calibrations": measured.environment.get("combined_calibrations", 1),
            "date_last": measured.environment.get("date_last")}


def calibrated_speed(summary: dict[str, Any]) -> str:
    curve = dict((summary.get("calibration") or {}).get("gemm_curve_fp32", []))
    return f"{curve[SPEED_PROBE_N] / 1e9:.0f}" if SPEED_PROBE_N in curve else "no 512 point"


def input_text(inputs: dict[str, int]) -> str:
    """The input a case ran at: images of `input_size` pixels a side, or `seq_len` tokens; '-' for the
    model's own (the MLP's 512 features)."""
    if "input_size" in inputs:
        return f"{inputs['input_size']} px"
    if "seq_len" in inputs:
        return f"{inputs['seq_len']} tokens"
    return "-"


def markdown(results: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    first = results[0]
    env = first["environment"]
    prof = first["profile"]
    lines = [
        "# Prediction accuracy on this CPU (`python benchmarks/accuracy.py`)", "",
        f"Machine: {env.get('cpu_model')}, {env.get('cpus_available')} CPUs available, torch {env.get('torch_version')}"
        f" with {first['threads']} threads, Python {env.get('python_version')}, {env.get('date')}.",
        f"Profile: {prof['name']} ({prof['source']}{', ' + os.path.relpath(prof['path']) if prof['path'] else ''}); "
        "ceilings used: "
        + ", ".join(f"{k} {v}" for k, v in prof["provenance"].items()) + ".",
        calibration_line(summary.get("calibration")),
        f"Timing: warm-up excluded; the grid runs {summary['passes']} times, alternately forward and in reverse "
        f"order, each batch for >= {REPEATS} steps and {BUDGET_S:g} s per pass; measured = median step over all "
        "passes' samples, spread = their IQR/median, passes = each pass's own median; load = 1-minute load "
        "average when the case "
        "started (this machine is shared), each pass; speed = fp32 GFLOP/s of a "
        f"{SPEED_PROBE_N}^3 product timed just before the case, each pass (calibration recorded "
        f"{calibrated_speed(summary)}), the machine's drift. "
        "error = (predicted / measured - 1) x 100: negative means the prediction is too fast.",
        "fresh MB = memory first-touched per step, measured (minor page faults x page size: what the allocator "
        "returned to the kernel and took again) / predicted (roofline.model.cpu_runtime.heap_requests: the "
        "step's heap requests "
        "replayed on glibc's rules; in training, what the heap returns when no small block that outlives the "
        "step pins its top, an upper bound: processes of one script fault 0-100% of it). "
        "Per-kind columns: predicted vs torch.profiler self time (ms per step), the three kinds with the "
        "largest absolute difference; 'other' is profiled time the kind table does not attribute.", "",
        "| model | input | mode | batch | predicted ms | measured ms | passes ms | spread | load | speed | "
        "fresh MB meas / pred | error | worst kinds (pred vs meas ms) |",
        "|---|---|---|---:|---:|---:|---|---:|---|---|---:|---:|---|",
    ]
    for res in results:
        mode = "train" if res["train"] else "infer"
        for run in res["runs"]:
            spread = run["spread"]
            passes = ", ".join(_ms(m) for m in run["pass_measured_s"])
            loads = ", ".join(f"{v:.1f}" for v in run["load_avg_1min"])
            speeds = ", ".join(f"{v / 1e9:.0f}" for v in run["speed_probe_flops_per_s"])
            lines.append(f"| {res['model']} | {input_text(res.get('inputs', {}))} | {mode} | {run['batch_size']} | "
                         f"{_ms(run['predicted_s'])} | "
                         f"{_ms(run['measured_s'])} | {passes} | {'-' if spread is None else f'{spread:.0%}'} | "
                         f"{loads} | {speeds} | "
                         f"{_mb(run['fresh_page_bytes_per_step'])} / "
                         f"{_mb(run['predicted_fresh_page_bytes_per_step'])} | "
                         f"{_pct(run['error_pct'])} | {worst_kinds(run)} |")
    edge = [(res, run) for res in results for run in res["runs"] if "steady_heap" in run]
    if edge:
        lines += ["", f"Rows on a heap knife edge (spread over {KNIFE_EDGE_SPREAD:.0%}: processes disagree), run again "
                  f"in {PASSES} processes keeping the C heap (MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_ huge) and "
                  "predicted so; the targets judge these rows by this steady run:", "",
                  "| model | mode | batch | default heap: predicted / measured ms, error | steady heap: predicted / "
                  "measured ms | passes ms | spread | error |", "|---|---|---:|---|---|---|---:|---:|"]
        for res, run in edge:
            kept = run["steady_heap"]
            lines.append(f"| {res['model']} | {'train' if res['train'] else 'infer'} | {run['batch_size']} | "
                         f"{_ms(run['predicted_s'])} / {_ms(run['measured_s'])}, {_pct(run['error_pct'])} | "
                         f"{_ms(kept['predicted_s'])} / {_ms(kept['measured_s'])} | "
                         f"{', '.join(_ms(m) for m in kept['pass_measured_s'])} | {kept['spread']:.0%} | "
                         f"{_pct(kept['error_pct'])} |")
    met = "met" if summary["median_target_met"] else "NOT met"
    worst_met = "met" if summary["worst_target_met"] else "NOT met"
    default = summary["default_heap"]
    lines += ["", f"Runs: {summary['runs']}, {summary['knife_edge_rows']} of them judged by their steady-heap run. "
              f"Median |error| {summary['median_abs_error_pct']:.1f}% "
              f"(target <= {MEDIAN_TARGET_PCT:g}%: {met}); worst |error| {summary['max_abs_error_pct']:.1f}% "
              f"(target <= {WORST_TARGET_PCT:g}%: {worst_met}). Every row in its default heap instead: median "
              f"{default['median_abs_error_pct']:.1f}%, worst {default['max_abs_error_pct']:.1f}%. Wall time "
              f"{summary['elapsed_s']:.0f} s."]
    if "issue_grid" in summary:
        grid = summary["issue_grid"]
        lines.append(f"The issue's grid alone ({', '.join(ISSUE_GRID)}; {grid['runs']} runs): median |error| "
                     f"{grid['median_abs_error_pct']:.1f}%, worst {grid['max_abs_error_pct']:.1f}%.")
    lines.append("")
    warnings = sorted({w for res in results for w in res["warnings"]})
    if warnings:
        lines += ["Warnings:", *[f"- {w}" for w in warnings], ""]
    return "\n".join(lines)


def machine_speed_flops_per_s() -> float:
    """fp32 GFLOP/s of a 512^3 product now (median sample, as calibration's curve records it): this shared
    machine's speed drifts by tens of percent over minutes, and a row's error is only as good as the
    assumption that the machine ran at its calibrated speed while the row was measured."""
    from roofline.measure.probes.gemm import _torch_call, gemm_flops
    from roofline.measure.timing import Timer, last_level_cache_bytes

    call = _torch_call("fp32", SPEED_PROBE_N, "cpu", last_level_cache_bytes())
    return Timer(call, label="speed probe", work=gemm_flops(SPEED_PROBE_N, SPEED_PROBE_N, SPEED_PROBE_N),
                 work_unit="FLOP", budget_s=SPEED_PROBE_S).measure().rate


@dataclass
class CaseRun:
    """One case of one pass, measured in a process of its own: the live runs, the 1-minute load average and
    the machine's GEMM speed when the case started."""

    request: ModelRequest
    live: LiveRuns
    load: float
    speed_flops_per_s: float
    keep_heap: bool = False
    """The process ran with glibc keeping its pages (KNIFE_EDGE_SPREAD), and is predicted so."""

    def as_dict(self, choice: ProfileChoice) -> dict[str, Any]:
        """validate's JSON document of the live runs, each predicted from `choice`'s profile."""
        res = validation_dict(compare(self.request, self.live, choice, heap_kept=self.keep_heap))
        for run in res["runs"]:
            run["load_avg_1min"], run["speed_probe_flops_per_s"] = [self.load], [self.speed_flops_per_s]
        return res


def request(index: int) -> ModelRequest:
    model, _, _, inputs = ALL_CASES[index]
    return ModelRequest(model=model, input_size=inputs.get("input_size"), seq_len=inputs.get("seq_len"))


def measure_case(index: int, first_pass: bool) -> dict[str, Any]:
    """The child's work: the case timed live (run_live; the profiler's per-kind table and the fresh-page count
    only in the first pass, later passes only add step samples), with the load and the machine's speed."""
    _, train, batches, _ = ALL_CASES[index]
    load, speed = os.getloadavg()[0], machine_speed_flops_per_s()
    live = run_live(request(index), "cpu", batches, "fp32", train, budget_s=BUDGET_S, repeats=REPEATS,
                    kind_steps=2 if first_pass else 0, count_faults=first_pass)
    return {"live": live.as_dict(), "load": load, "speed_flops_per_s": speed}


def run_case(index: int, first_pass: bool, keep_heap: bool = False) -> CaseRun:
    """`measure_case` in a new process, as a user's script runs one model: in one long process, what earlier
    models left on the C heap decides how much of the next one's memory is fresh (BERT at batch 4 first-touched
    100 MB a step in a process of its own, 0 after the CNN cases)."""
    from roofline.model.cpu_runtime.heap_setting import KEEP_HEAP_ENV

    argv = [sys.executable, __file__, "--child", str(index), *(["--first-pass"] if first_pass else [])]
    env = {**os.environ, **KEEP_HEAP_ENV} if keep_heap else None
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"case {ALL_CASES[index][0]} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    doc = json.loads(done.stdout)
    return CaseRun(request(index), LiveRuns.from_dict(doc["live"]), doc["load"], doc["speed_flops_per_s"], keep_heap)


def pooled(passes: list[dict[str, Any]]) -> dict[str, Any]:
    """One case measured in several passes minutes apart: each batch's step samples pooled, the measured step
    their median, the spread their IQR over it; predictions, the per-kind profile and the fresh-page count
    are the first pass's."""
    first = passes[0]
    out = dict(first)
    out["runs"] = []
    for runs in zip(*(p["runs"] for p in passes), strict=True):
        samples = sorted(s for r in runs for s in r["samples_s"])
        median = quantile(samples, 0.5)
        run = dict(runs[0], samples_s=samples, measured_s=median, repeats=len(samples),
                   pass_measured_s=[r["measured_s"] for r in runs],
                   load_avg_1min=[v for r in runs for v in r["load_avg_1min"]],
                   speed_probe_flops_per_s=[v for r in runs for v in r["speed_probe_flops_per_s"]])
        run["spread"] = (quantile(samples, 0.75) - quantile(samples, 0.25)) / median
        run["error_pct"] = error_pct(run["predicted_s"], median)
        out["runs"].append(run)
    noisy = [r for r in out["runs"] if r["spread"] > SPREAD_WARN_REL_IQR]
    out["warnings"] = [w for w in first["warnings"] if "spread" not in w] + [
        f"{out['model']} {'train' if out['train'] else 'infer'} batch {r['batch_size']}: spread {r['spread']:.0%} "
        "over all passes" for r in noisy]
    errors = [abs(r["error_pct"]) for r in out["runs"]]
    out["median_abs_error_pct"], out["max_abs_error_pct"] = statistics.median(errors), max(errors)
    return out


def judged_error(run: dict[str, Any]) -> float:
    """The error a row is judged by: its steady-heap rerun's where it had one (KNIFE_EDGE_SPREAD)."""
    return run["steady_heap"]["error_pct"] if "steady_heap" in run else run["error_pct"]


def steady_heap_again(results: list[dict[str, Any]], indices: list[int], choice: ProfileChoice) -> None:
    """Cases with a row over KNIFE_EDGE_SPREAD measured again in PASSES processes that keep their heap; each such
    row gains `steady_heap` (measured, predicted with the heap kept, error, spread)."""
    for res, index in zip(results, indices, strict=True):
        edge = [r for r in res["runs"] if r["spread"] > KNIFE_EDGE_SPREAD]
        if not edge:
            continue
        model, train, batches, _ = ALL_CASES[index]
        print(f"steady heap: {model} {'train' if train else 'infer'} batch {batches}", file=sys.stderr, flush=True)
        again = pooled([run_case(index, first_pass=False, keep_heap=True).as_dict(choice) for _ in range(PASSES)])
        by_batch = {r["batch_size"]: r for r in again["runs"]}
        for r in edge:
            kept = by_batch[r["batch_size"]]
            r["steady_heap"] = {key: kept[key] for key in ("measured_s", "predicted_s", "error_pct", "spread",
                                                            "pass_measured_s")}


def calibrate(out: Path, quick: bool) -> str:
    """This machine calibrated now, in a child process (see the module doc), written to `out`; fp32 only, the
    grid's precision."""
    from roofline.validate.profile_choice import calibrate_in_child

    print(f"calibrating ({'quick' if quick else 'full'}) -> {out}", file=sys.stderr, flush=True)
    _, path, seconds = calibrate_in_child("cpu", quick=quick, out=str(out), dtypes="fp32")
    print(f"calibrated in {seconds:.0f} s", file=sys.stderr, flush=True)
    return path


def combined_profile(paths: list[str], out: Path) -> ProfileChoice:
    """The passes' calibrations combined figure by figure (`roofline.measure.calibrate.combine`), written to `out`."""
    from roofline.hardware.load import load_profile
    from roofline.measure.calibrate import combine, write_profile

    profiles = [load_profile(Path(p)) for p in paths]
    measured = [p.measured for p in profiles if p.measured is not None]
    profile = profiles[0].model_copy(update={"measured": combine(measured)})
    write_profile(profile, out, force=True)
    return ProfileChoice(profile, "calibrated", str(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three small cases and quick calibrations (smoke "
                        "test, not a result)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--profile", type=Path, help="predict with this calibrated profile instead of "
                        "calibrating before each pass")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--first-pass", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(measure_case(args.child, args.first_pass)))
        return 0
    started = time.perf_counter()
    indices = [ALL_CASES.index(case) for case in (QUICK_CASES if args.quick else CASES)]
    stem = "accuracy-cpu-quick" if args.quick else "accuracy-cpu"
    args.out.mkdir(parents=True, exist_ok=True)
    passes: list[dict[int, CaseRun]] = []
    with tempfile.TemporaryDirectory() as scratch:
        calibrations = []
        for number in range(PASSES):
            if not args.profile:
                calibrations.append(calibrate(Path(scratch) / f"pass-{number + 1}.yaml", args.quick))
            passes.append({})
            for index in indices if number % 2 == 0 else indices[::-1]:
                model, train, batches, _ = ALL_CASES[index]
                print(f"pass {number + 1}: {model} {'train' if train else 'infer'} batch {batches}",
                      file=sys.stderr, flush=True)
                passes[number][index] = run_case(index, first_pass=number == 0)
        choice = ProfileChoice(load_profile(args.profile), "calibrated", str(args.profile)) if args.profile else (
            combined_profile(calibrations, args.out / f"{stem}-profile.yaml"))
    results = [{**pooled([p[i].as_dict(choice) for p in passes]), "inputs": ALL_CASES[i][3]} for i in indices]
    steady_heap_again(results, indices, choice)
    errors = [abs(judged_error(r)) for res in results for r in res["runs"]]
    default_heap = [abs(r["error_pct"]) for res in results for r in res["runs"]]
    summary = {"runs": len(errors), "median_abs_error_pct": statistics.median(errors),
               "max_abs_error_pct": max(errors), "elapsed_s": time.perf_counter() - started,
               "default_heap": {"median_abs_error_pct": statistics.median(default_heap),
                                "max_abs_error_pct": max(default_heap)},
               "knife_edge_rows": sum("steady_heap" in r for res in results for r in res["runs"])}
    grid = [abs(judged_error(r)) for res in results if res["model"] in ISSUE_GRID for r in res["runs"]]
    if grid:
        summary["issue_grid"] = {"runs": len(grid), "median_abs_error_pct": statistics.median(grid),
                                 "max_abs_error_pct": max(grid)}
    summary["median_target_met"] = summary["median_abs_error_pct"] <= MEDIAN_TARGET_PCT
    summary["worst_target_met"] = summary["max_abs_error_pct"] <= WORST_TARGET_PCT
    summary.update(median_target_pct=MEDIAN_TARGET_PCT, worst_target_pct=WORST_TARGET_PCT,
                   calibration=calibration_summary(choice.profile), passes=PASSES,
                   calibrations=1 if args.profile else PASSES)
    (args.out / f"{stem}.json").write_text(json.dumps({"summary": summary, "results": results}, indent=2,
                                                       default=float) + "\n")
    (args.out / f"{stem}.md").write_text(markdown(results, summary))
    print(f"median |error| {summary['median_abs_error_pct']:.1f}%, worst {summary['max_abs_error_pct']:.1f}% "
          f"-> {args.out / (stem + '.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

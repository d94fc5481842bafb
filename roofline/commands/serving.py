"""Language-model serving for `predict` and `advise --serve`: the arguments, the JSON documents, the runs."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import print_json, selected_profile


def add_serving_args(p: argparse.ArgumentParser, advise: bool = False) -> None:
    """Flags that apply when --model names a decoder-only language model (built-in or config.json)."""
    g = p.add_argument_group("language models (--model llama-3-8b, or a config.json)")
    g.add_argument("--prompt-len", type=int, metavar="P", help="prompt tokens per sequence (default 512)")
    g.add_argument("--output-len", type=int, metavar="O", help="generated tokens per sequence (default 128)")
    g.add_argument("--kv-precision", metavar="fp16|bf16|fp8", help="KV cache storage (default 16-bit)")
    g.add_argument("--group-size", type=int, default=128, metavar="G",
                   help="int4 weights sharing one scale and zero (default 128)")
    g.add_argument("--runtime", choices=["eager", "graph"],
                   help="eager: Hugging Face generate (per-op dispatch; default); graph: CUDA graphs (vLLM, "
                        "TensorRT-LLM, gpt-fast compiled)")
    if advise:
        g.add_argument("--serve", action="store_true", help="serving advice: concurrent sequences and precision")
        g.add_argument("--tpot-ms", type=float, metavar="T", help="largest acceptable time per output token")
        g.add_argument("--ttft-ms", type=float, metavar="T", help="largest acceptable time to first token")


def _lengths(args: argparse.Namespace) -> tuple[int, int]:
    from roofline.errors import RooflineError

    prompt = args.prompt_len if args.prompt_len is not None else 512
    output = args.output_len if args.output_len is not None else 128
    if prompt < 1 or output < 1:
        raise RooflineError(f"--prompt-len ({prompt}) and --output-len ({output}) must be positive integers")
    return prompt, output


def phase_layers(cost: Any) -> list[dict[str, Any]]:
    """One row per distinct op of the phase, with how often it runs; times are totals over its repeats."""
    return [{"name": o.name, "op": o.kind, "count": n, "flops": o.flops * n, "bytes": o.bytes * n,
             "time_s": o.time_s * n, "compute_s": o.compute_s * n, "memory_s": o.memory_s * n,
             "host_s": o.host_s * n, "bound": o.bound, "path": o.path,
             "arithmetic_intensity": o.flops / o.bytes if o.bytes else None, "notes": list(o.notes)}
            for o, n in cost.costs]


def prediction_dict(p: Any) -> dict[str, Any]:
    m = p.memory
    return {
        "model": p.model, "device": p.device, "batch_size": p.batch, "prompt_len": p.prompt_len,
        "output_len": p.output_len, "precision": p.precision.name, "kv_precision": p.precision.kv_name,
        "group_size": p.precision.group_size if p.precision.name == "int4" else None, "runtime": p.runtime,
        "ttft_s": p.ttft_s, "tpot_s": p.tpot_s, "tokens_per_s": p.tokens_per_s,
        "decode_tokens_per_s": p.decode_tokens_per_s, "request_s": p.request_s,
        "step_time_s": p.request_s, "samples_per_s": p.batch / p.request_s,
        "memory_bytes": m.total, "capacity_bytes": p.capacity_bytes, "fits": p.fits,
        "memory": {"weights": m.weights, "kv_cache": m.kv_cache, "activations": m.activations,
                   "workspace": m.workspace, "total": m.total},
        "phases": {
            "prefill": {"time_s": p.prefill.time_s, "tokens_per_sequence": p.prompt_len, "context": p.prompt_len,
                        "flops": p.prefill.flops, "bytes": p.prefill.bytes, "layers": phase_layers(p.prefill)},
            "decode": {"time_s": p.decode.time_s, "tokens_per_sequence": 1, "context": p.decode.phase.context,
                       "flops": p.decode.flops, "bytes": p.decode.bytes, "layers": phase_layers(p.decode)},
        },
        "layers": phase_layers(p.decode),
    }


def _precision(args: argparse.Namespace, profile: Any, name: str | None) -> Any:
    from roofline.model.ceilings import compute_dtype_for
    from roofline.model.llm_precision import serving_precision
    from roofline.workload.precision import get_precision

    activation = next((n for n in ("bf16", "fp16") if compute_dtype_for(get_precision(n), profile)), "fp32")
    return serving_precision(name or activation, args.kv_precision, args.group_size, activation)


def run_predict(args: argparse.Namespace) -> int:
    from roofline.model.llm_step import predict_serving, require_fit
    from roofline.workload.llm.builtins import get_config
    from roofline.workload.request import parse_batches

    cfg = get_config(args.model)
    profile = selected_profile(args)
    prompt, output = _lengths(args)
    prec = _precision(args, profile, args.precision)
    preds = [predict_serving(cfg, profile, prec, b, prompt, output, args.runtime or "eager")
             for b in parse_batches(args.batch)]
    if not args.allow_oversize:
        for p in preds:
            require_fit(p)
    out = prediction_dict(preds[0])
    out["batches"] = [{"batch_size": p.batch, "ttft_s": p.ttft_s, "tpot_s": p.tpot_s,
                       "tokens_per_s": p.tokens_per_s, "memory_bytes": p.memory.total} for p in preds]
    if args.json:
        print_json(out)
        return 0
    from roofline.report.serving_view import render_serving_prediction

    render_serving_prediction(out)
    return 0


def advice_dict(a: Any) -> dict[str, Any]:
    r = a.recommended
    rows = [{"batch_size": p.batch, "precision": p.precision.name, "kv_precision": p.precision.kv_name,
             "ttft_s": p.ttft_s, "tpot_s": p.tpot_s, "tokens_per_s": p.tokens_per_s,
             "decode_tokens_per_s": p.decode_tokens_per_s, "step_time_s": p.request_s,
             "samples_per_s": p.batch / p.request_s, "memory_bytes": p.memory.total, "meets_targets": meets}
            for p, meets in a.sweep]
    return {
        "model": a.model, "device": a.device, "prompt_len": a.prompt_len, "output_len": a.output_len,
        "runtime": a.runtime, "serve": True,
        "recommended": {"batch_size": r.batch if r else None, "precision": r.precision.name if r else None,
                        "kv_precision": r.precision.kv_name if r else None,
                        "ttft_s": r.ttft_s if r else None, "tpot_s": r.tpot_s if r else None,
                        "tokens_per_s": r.tokens_per_s if r else None,
                        "memory_bytes": r.memory.total if r else None},
        "max_batch_size": max(a.max_batch_by_precision.values()),
        "max_batch_size_by_precision": a.max_batch_by_precision,
        "sweep": rows, "reasons": a.reasons, "reason_numbers": a.numbers,
    }


def run_advise(args: argparse.Namespace) -> int:
    from roofline.advise.serving import advise_serving
    from roofline.errors import RooflineError
    from roofline.workload.llm.builtins import get_config

    cfg = get_config(args.model)
    profile = selected_profile(args)
    prompt, output = _lengths(args)
    for flag in ("tpot_ms", "ttft_ms"):
        value = getattr(args, flag)
        if value is not None and not value > 0:
            raise RooflineError(f"--{flag.replace('_', '-')} must be a positive number of milliseconds, got {value}")
    target = None
    if args.plot:
        from roofline.report.plots import plot_path

        target = plot_path(args.plot, cfg.name, profile.name)
    advice = advise_serving(cfg, profile, prompt, output, args.runtime or "eager", args.precision,
                            args.kv_precision, args.group_size,
                            args.tpot_ms / 1e3 if args.tpot_ms else None, args.ttft_ms / 1e3 if args.ttft_ms else None)
    out = advice_dict(advice)
    if target is not None:
        from roofline.report.serving_plot import write_serving_plots

        out["plot"] = write_serving_plots(advice, target)
    if args.json:
        print_json(out)
        return 0
    from roofline.report.serving_view import render_serving_advice

    render_serving_advice(out)
    return 0


def run_validate(args: argparse.Namespace) -> int:
    """Live transformers generate on this CPU vs the prediction on this machine's profile, per phase."""
    from roofline.errors import RooflineError
    from roofline.measure.llm_live import time_generate
    from roofline.model.llm_precision import serving_precision
    from roofline.model.llm_step import predict_serving
    from roofline.validate.profile_choice import choose_profile
    from roofline.validate.results import error_pct
    from roofline.workload.llm.builtins import get_config
    from roofline.workload.request import parse_batches

    if args.device != "cpu":
        raise RooflineError("validate --serve times transformers on the CPU only; pass --device cpu")
    cfg = get_config(args.model)
    prompt, output = _lengths(args)
    if output < 2:
        raise RooflineError("--output-len must be at least 2 to time decoding")
    choice = choose_profile("cpu", args.hw, calibrate=not args.no_calibrate)
    prec = serving_precision("fp32", "fp32", activation="fp32")
    runs = []
    for b in parse_batches(args.batch):
        predicted = predict_serving(cfg, choice.profile, prec, b, prompt, output, "eager")
        live = time_generate(cfg, b, prompt, output, args.repeats)
        runs.append({"batch_size": b, "prompt_len": prompt, "output_len": output,
                     "prefill": {"predicted_s": predicted.ttft_s, "measured_s": live.prefill_s,
                                 "error_pct": error_pct(predicted.ttft_s, live.prefill_s)},
                     "decode": {"predicted_s": predicted.tpot_s, "measured_s": live.tpot_s,
                                "error_pct": error_pct(predicted.tpot_s, live.tpot_s)},
                     "predicted_s": predicted.request_s, "measured_s": live.prefill_s + (output - 1) * live.tpot_s,
                     "threads": live.threads, "versions": live.versions})
    for r in runs:
        r["error_pct"] = error_pct(r["predicted_s"], r["measured_s"])
    import statistics

    out = {"model": cfg.name, "device": "cpu", "profile": choice.profile.name, "profile_source": choice.source,
           "warnings": list(choice.warnings), "runs": runs,
           "median_abs_error_pct": statistics.median(abs(r["error_pct"]) for r in runs),
           "median_abs_error_pct_by_phase": {
               phase: statistics.median(abs(r[phase]["error_pct"]) for r in runs) for phase in ("prefill", "decode")}}
    print_json(out) if args.json else _print_validation(out)
    return 0




def _print_validation(out: dict[str, Any]) -> None:
    from rich.console import Console

    from roofline.units import format_si

    console = Console()
    console.print(f"[bold]{out['model']}[/] with transformers generate on this CPU ({out['profile']}, "
                  f"{out['profile_source']})")
    for w in out["warnings"]:
        console.print(f"  [yellow]{w}[/]")
    for r in out["runs"]:
        for phase in ("prefill", "decode"):
            x = r[phase]
            console.print(f"  batch {r['batch_size']} {phase:7}: predicted {format_si(x['predicted_s'], 's')}, "
                          f"measured {format_si(x['measured_s'], 's')} ({x['error_pct']:+.1f}%)")


def run_analyze(args: argparse.Namespace) -> int:
    """Both phases' FLOPs and bytes at the given sizes, and with --symbolic as formulas in B, P and c."""
    from roofline.advise.llm_analyze import llm_analysis
    from roofline.errors import RooflineError
    from roofline.model.llm_precision import serving_precision
    from roofline.workload.llm.builtins import get_config

    if args.batch < 1:
        raise RooflineError(f"--batch {args.batch}: the batch size must be a positive integer")
    cfg = get_config(args.model)
    prompt, output = _lengths(args)
    name = args.precision or "bf16"
    prec = serving_precision(name, activation="bf16" if name in ("int8", "int4") else name)
    out = llm_analysis(cfg, prec, args.batch, prompt, prompt + output, args.symbolic)
    if args.json:
        print_json(out)
        return 0
    from rich.console import Console

    console = Console()
    console.print(f"[bold]{cfg.name}[/]: {cfg.params() / 1e9:.3g} B parameters ({cfg.active_params() / 1e9:.3g} B "
                  f"per token), {prec.name} weights, batch {args.batch}")
    for phase, d in out["phases"].items():
        console.print(f"  {phase}: {d['flops']:.4g} FLOP, {float(d['bytes']):.4g} bytes, "
                      f"{d['flops'] / float(d['bytes']):.1f} FLOP/byte")
    for phase, d in out.get("symbolic", {}).items():
        console.print(f"  {phase}(B, {'P' if phase == 'prefill' else 'c'}): FLOPs = {d['flops']}; bytes = {d['bytes']}")
    return 0

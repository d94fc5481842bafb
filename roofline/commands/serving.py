"""Language-model serving for `predict` and `advise --serve`: the arguments, the JSON documents, the runs."""

from __future__ import annotations

import argparse
from typing import Any

from roofline.commands.common import print_json
from roofline.model.llm_precision import HEAD_WEIGHTS, QUANT_KERNELS
from roofline.model.serving_engine import ENGINE_LOOPS


def add_serving_args(p: argparse.ArgumentParser, advise: bool = False) -> None:
    """Flags that apply when --model names a decoder-only language model (built-in or config.json)."""
    g = p.add_argument_group("language models (--model llama-3-8b, or a config.json)")
    g.add_argument("--prompt-len", type=int, metavar="P", help="prompt tokens per sequence (default 512)")
    g.add_argument("--output-len", type=int, metavar="O", help="generated tokens per sequence (default 128)")
    g.add_argument("--kv-precision", metavar="fp16|bf16|fp8", help="KV cache storage (default 16-bit)")
    g.add_argument("--group-size", type=int, default=128, metavar="G",
                   help="int4 weights sharing one scale and zero (default 128)")
    g.add_argument("--lm-head", default="split", choices=["split", "replicated"],
                   help="with --gpus: the lm_head split by vocabulary (TensorRT-LLM, vLLM; default) or whole on "
                        "every GPU (gpt-fast)")
    if not advise:
        g.add_argument("--static-cache", type=int, metavar="N",
                       help="transformers' StaticCache of N tokens (generate compiles the forward for it; with "
                            "--runtime graph): allocated whole, and attention reads all N positions every step")
        g.add_argument("--decode-attention", default="grouped", choices=["grouped", "per-head"],
                       help="decode attention kernel: grouped loads each KV head once for its query heads "
                            "(FlashAttention, SDPA, TensorRT-LLM's XQA; default); per-head runs a block per query "
                            "head, each loading its KV head (TensorRT-LLM v0.5-0.6's masked MHA, and v0.7-0.9's "
                            "where query heads per KV head are neither 1 nor 8)")
        g.add_argument("--expert-precision", choices=["bf16", "fp16"],
                       help="a mixture of experts' weights and products in this 16-bit type, the rest at "
                            "--precision (TensorRT-LLM up to v0.9's MoE plugin has no fp8 path)")
    g.add_argument("--quant-kernel", default="fused", choices=list(QUANT_KERNELS),
                   help="the kernel of int8/int4 weight-only products (at most 8 rows stream as a matrix-vector "
                        "kernel unless said otherwise): fused (dequantised in registers: "
                        "Marlin, AWQ, TensorRT-LLM; default), tinygemm (PyTorch's int4 kernel, gpt-fast's and "
                        "torchao's, at any number of rows: measured, slower than bf16 from about 16 rows), inductor "
                        "(gpt-fast's and torchao's compiled int8: a fused matrix-vector kernel at one row, a bf16 "
                        "copy then cuBLAS at more; measured), convert (the same int8 product without torch.compile: "
                        "a bf16 copy of the weight every call, then cuBLAS), mmq "
                        "(llama.cpp's 8-bit integer kernels, its prompt path on Turing and later and on Pascal), "
                        "mmq-dp4a (the same without tensor cores, as llama.cpp builds before mid-2024 forced it), "
                        "dequant (a 16-bit copy of the weights first, then cuBLAS: llama.cpp's prompt path on "
                        "Volta, and on every tensor-core GPU before mid-2024), matmulnbits (ONNX Runtime's "
                        "MatMulNBits: a matrix-vector kernel at one row, a 16-bit copy then cuBLAS from two rows)")
    g.add_argument("--head-weights", choices=list(HEAD_WEIGHTS),
                   help="how a model with quantised linear layers (int8, int4, fp8) stores its lm_head: 16-bit "
                        "(vLLM's GPTQ/AWQ checkpoints, llm-compressor, TensorRT-LLM's ModelOpt, AutoAWQ, AutoGPTQ) "
                        "or quantized like the rest (gpt-fast, torchao, llama.cpp's GGUF files); default: as the "
                        "toolchain behind --quant-kernel and --engine leaves it")
    g.add_argument("--accumulate", default="fp32", choices=["fp32", "fp16"],
                   help="what the products' fp16 multiplies accumulate in: fp32 (PyTorch, vLLM, TensorRT-LLM; "
                        "default) or fp16 (llama.cpp's cuBLAS path, ExLlama, TinyChat), up to twice as fast on a "
                        "GeForce board; implies fp16 activations")
    g.add_argument("--transformers", metavar="X.Y",
                   help="with --runtime eager: the transformers release whose generate runs (e.g. 4.35: eager "
                        "attention before 4.36, grouped K/V repeated per head before 4.54, the prompt's logits "
                        "for every position before 4.45); default: the current release")
    g.add_argument("--runtime", choices=["eager", "graph", "fused"],
                   help="eager: Hugging Face generate (per-op dispatch; default); graph: no per-op host time "
                        "(vLLM's CUDA graphs, TensorRT-LLM, LMDeploy's TurboMind, llama.cpp, gpt-fast compiled); "
                        "fused: a Python loop over an engine's fused kernels, about 12 a layer (TinyChat, "
                        "AutoAWQ's fused modules, ExLlama)")
    g.add_argument("--engine", default="none", choices=list(ENGINE_LOOPS),
                   help="the serving engine's host loop around each forward, while the GPU waits: none (a C++ or "
                        "overlapped loop: TensorRT-LLM, gpt-fast, llama.cpp with flash attention; default), "
                        "llama.cpp (the same loop, attention without flash attention: the scores in memory, the "
                        "prompt in micro-batches of 512; use with --runtime graph) or vllm-v0 (vLLM's V0 engine, "
                        "v0.2-v0.6: about 0.1 ms of Python per running sequence every step)")
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


def _gpus(args: argparse.Namespace) -> int:
    """--gpus as the tensor-parallel degree: 1 when not given (0 or less is refused downstream)."""
    return 1 if args.gpus is None else args.gpus


def run_predict(args: argparse.Namespace) -> int:
    from roofline import api

    prompt, output = _lengths(args)
    out = api.predict_serving(args.model, hw=args.hw, gpu=args.gpu, cpu=args.cpu, batch=args.batch,
                              prompt_len=prompt, output_len=output, precision=args.precision,
                              kv_precision=args.kv_precision, group_size=args.group_size,
                              runtime=args.runtime or "eager", allow_oversize=args.allow_oversize,
                              gpus=_gpus(args), node=args.node, nodes=args.nodes, allreduce=args.allreduce,
                              lm_head=args.lm_head, static_cache=args.static_cache,
                              decode_attention=args.decode_attention, expert_precision=args.expert_precision,
                              transformers=args.transformers, quant_kernel=args.quant_kernel,
                              accumulate=args.accumulate, engine=args.engine, head_weights=args.head_weights)
    if args.json:
        print_json(out)
        return 0
    from roofline.report.serving_view import render_serving_prediction

    render_serving_prediction(out)
    return 0


def run_advise(args: argparse.Namespace) -> int:
    from roofline import api

    prompt, output = _lengths(args)
    out = api.advise_serving(args.model, hw=args.hw, gpu=args.gpu, cpu=args.cpu, prompt_len=prompt,
                             output_len=output, precision=args.precision, kv_precision=args.kv_precision,
                             group_size=args.group_size, runtime=args.runtime or "eager", tpot_ms=args.tpot_ms,
                             ttft_ms=args.ttft_ms, plot=args.plot, force=args.force, gpus=_gpus(args),
                             node=args.node, lm_head=args.lm_head, transformers=args.transformers,
                             quant_kernel=args.quant_kernel, accumulate=args.accumulate, engine=args.engine,
                             head_weights=args.head_weights)
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
    from roofline.workload.llm.transformers_release import transformers_release
    from roofline.workload.request import parse_batches

    if args.device != "cpu":
        raise RooflineError("validate --serve times transformers on the CPU only; pass --device cpu")
    cfg = get_config(args.model)
    prompt, output = _lengths(args)
    if output < 2:
        raise RooflineError("--output-len must be at least 2 to time decoding")
    choice = choose_profile("cpu", args.hw, calibrate=not args.no_calibrate)
    prec = serving_precision("fp32", "fp32", activation="fp32")
    release = transformers_release(_installed_transformers(), cfg)
    runs = []
    for b in parse_batches(args.batch):
        predicted = predict_serving(cfg, choice.profile, prec, b, prompt, output, "eager", release=release)
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
           "warnings": list(choice.warnings), "transformers": release.label, "runs": runs,
           "median_abs_error_pct": statistics.median(abs(r["error_pct"]) for r in runs),
           "median_abs_error_pct_by_phase": {
               phase: statistics.median(abs(r[phase]["error_pct"]) for r in runs) for phase in ("prefill", "decode")}}
    print_json(out) if args.json else _print_validation(out)
    return 0




def _installed_transformers() -> str | None:
    """The installed transformers release, which the live run times: the prediction prices its forward
    (`transformers_release`). None when it is not installed (the live run then says how to install it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("transformers")
    except PackageNotFoundError:
        return None


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

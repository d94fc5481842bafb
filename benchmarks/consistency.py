"""Physical invariants of the predictions over every GPU profile: checks that need no measurement at all.

A prediction can match the published record and still contradict itself where nobody measured: a step that
gets faster when the batch grows, a decode that gets faster at a longer context, int4 weights that decode
slower than fp16. Each check here follows from the arithmetic of the work, not from the model's figures:
- steps: time per step does not fall as the batch grows (by more than 2%), except from a batch that is not a
  multiple of 8 to one that is: tensor cores' alignment makes 128 rows faster than 127, a lesson, not a fault;
  samples/s does not fall by more than 15% when the batch doubles; throughput at batch 127, 128 and 129 is
  within 8% (the lesson that batch sizes need not be powers of two);
- serving: time per output token and time to first token do not fall as the batch or the prompt grows;
  tokens/s does not fall as the batch grows while the batch fits; at batch 1 under a graph runtime int4 and
  int8 weights decode no slower than fp16.
Not checked: AMP against fp32, which is slower where autocast's casts add host dispatch to a host-bound step or
on boards without fp16 tensor cores (both real).

Run: python benchmarks/consistency.py  -> benchmarks/results/consistency.md (exit status 1 on any violation)
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from speed import shipped_gpu_profiles

from roofline.api import predict, predict_serving
from roofline.errors import RooflineError

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "consistency.md"
STEP_MODELS = ["resnet18", "resnet50", "vgg16", "alexnet", "mobilenetv3-large", "bert-base", "gpt2"]
STEP_PRECISIONS = ["fp32", "amp", "amp-bf16", "fp16"]
STEP_BATCHES = [1, 2, 4, 8, 16, 32, 64, 127, 128, 129, 256]
SERVE_MODELS = ["llama-3-8b", "llama-2-7b", "llama-2-13b", "mistral-7b", "mixtral-8x7b", "phi-3-mini", "gpt2"]
SERVE_GPUS = ["a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "l4", "l40s", "a10g", "rtx-4090",
              "rtx-3090", "t4", "v100-sxm2-32gb"]
SERVE_BATCHES = [1, 2, 4, 8, 16, 32, 64, 128]
PROMPTS = [128, 256, 512, 1024, 2048, 4096]
TIME_SLACK = 0.98
ALIGNED_ROWS = 8
THROUGHPUT_DROP = 0.85
ODD_BATCH_SPREAD = 1.08
TOKENS_DROP = 0.95


def step_violations() -> tuple[int, list[str]]:
    """(sweeps checked, violations) over every GPU x model x precision x mode."""
    checked, out = 0, []
    for gpu, model, precision, train in itertools.product(shipped_gpu_profiles(), STEP_MODELS, STEP_PRECISIONS,
                                                          (False, True)):
        try:
            rows = predict(model, gpu=gpu, batch=STEP_BATCHES, precision=precision, train=train,
                           optimizer="momentum", allow_oversize=True).batches
        except RooflineError:
            continue  # a precision the board cannot run
        checked += 1
        where = f"{gpu} {model} {precision} {'train' if train else 'inference'}"
        times = {r.batch_size: r.step_time_s for r in rows}
        for a, b in itertools.pairwise(STEP_BATCHES):
            aligned = b % ALIGNED_ROWS == 0 and a % ALIGNED_ROWS != 0
            if times[b] < times[a] * TIME_SLACK and not aligned:
                out.append(f"{where}: step time falls from batch {a} to {b} ({times[a] * 1e3:.3f} -> "
                           f"{times[b] * 1e3:.3f} ms)")
            if b >= 2 * a and b / times[b] < THROUGHPUT_DROP * a / times[a]:
                out.append(f"{where}: samples/s falls from batch {a} to {b} ({a / times[a]:.0f} -> "
                           f"{b / times[b]:.0f})")
        odd = [b / times[b] for b in (127, 128, 129)]
        if max(odd) > ODD_BATCH_SPREAD * min(odd):
            out.append(f"{where}: samples/s at 127/128/129 " + " / ".join(f"{x:.0f}" for x in odd))
    return checked, out


def _serve(model: str, gpu: str, **kw: object) -> dict | None:
    try:
        return predict_serving(model, gpu=gpu, **kw)  # type: ignore[arg-type]
    except RooflineError:
        return None


def serving_violations() -> tuple[int, list[str]]:
    """(sweeps checked, violations) over the serving GPUs x models x weight precisions x runtimes."""
    checked, out = 0, []
    for gpu, model, precision, runtime in itertools.product(SERVE_GPUS, SERVE_MODELS, ["fp16", "fp8", "int8", "int4"],
                                                            ["graph", "fused", "eager"]):
        where = f"{gpu} {model} {precision} {runtime}"
        doc = _serve(model, gpu, batch=SERVE_BATCHES, prompt_len=512, output_len=128, precision=precision,
                     runtime=runtime, allow_oversize=True)
        if doc is None:
            continue
        checked += 1
        capacity = doc["capacity_bytes"]
        rows = doc["batches"]
        for x, y in itertools.pairwise(rows):
            for key in ("tpot_s", "ttft_s"):
                if y[key] < x[key] * TIME_SLACK:
                    out.append(f"{where}: {key} falls from batch {x['batch_size']} to {y['batch_size']}")
            if y["memory_bytes"] <= capacity and y["tokens_per_s"] < TOKENS_DROP * x["tokens_per_s"]:
                out.append(f"{where}: tokens/s falls from batch {x['batch_size']} to {y['batch_size']} "
                           f"({x['tokens_per_s']:.0f} -> {y['tokens_per_s']:.0f})")
        by_prompt = [(p, _serve(model, gpu, batch=1, prompt_len=p, output_len=16, precision=precision,
                                runtime=runtime, allow_oversize=True)) for p in PROMPTS]
        priced = [(p, d) for p, d in by_prompt if d is not None]
        for (p1, a), (p2, b) in itertools.pairwise(priced):
            for key in ("tpot_s", "ttft_s"):
                if b[key] < a[key] * TIME_SLACK:
                    out.append(f"{where}: {key} falls from a {p1}- to a {p2}-token prompt")
    for gpu, model in itertools.product(SERVE_GPUS, SERVE_MODELS):
        tpot = {}
        for precision in ("fp16", "int8", "int4"):
            doc = _serve(model, gpu, batch=1, prompt_len=512, output_len=128, precision=precision, runtime="graph",
                         allow_oversize=True)
            if doc is not None:
                tpot[precision] = doc["tpot_s"]
        for low in ("int8", "int4"):
            if low in tpot and "fp16" in tpot and tpot[low] > tpot["fp16"]:
                out.append(f"{gpu} {model}: {low} decodes slower than fp16 at batch 1 ({tpot[low] * 1e3:.2f} against "
                           f"{tpot['fp16'] * 1e3:.2f} ms a token)")
    return checked, out


def main() -> int:
    steps_checked, steps = step_violations()
    serve_checked, serve = serving_violations()
    lines = ["# Physical invariants of the predictions", "",
             "Written by `python benchmarks/consistency.py` (what each check is and why it must hold: the script's "
             "docstring). Every GPU profile for the steps, ten boards for serving; no measurement is involved.", "",
             "| part | sweeps checked | violations |", "|---|---:|---:|",
             f"| steps (model x precision x mode x board, batches {STEP_BATCHES[0]}-{STEP_BATCHES[-1]}) | "
             f"{steps_checked} | {len(steps)} |",
             f"| serving (model x weights x runtime x board, batches {SERVE_BATCHES[0]}-{SERVE_BATCHES[-1]} and "
             f"prompts {PROMPTS[0]}-{PROMPTS[-1]}) | {serve_checked} | {len(serve)} |", ""]
    if steps or serve:
        lines += ["## Violations", ""] + [f"- {v}" for v in steps + serve] + [""]
    RESULT.write_text("\n".join(lines))
    print(f"{RESULT.relative_to(ROOT)}: steps {len(steps)} of {steps_checked} sweeps, serving {len(serve)} of "
          f"{serve_checked}")
    return 1 if steps or serve else 0


if __name__ == "__main__":
    sys.exit(main())

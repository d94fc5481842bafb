"""Rich rendering of a language model's serving prediction and serving advice."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from roofline.units import format_bytes, format_si


def _phase_table(title: str, phase: dict[str, Any]) -> Table:
    t = Table(title=f"{title}: {format_si(phase['time_s'], 's')}, {phase['flops']:.3g} FLOP, "
                    f"{format_bytes(phase['bytes'])}")
    for col in ("op", "x", "time", "FLOP/byte", "bound", "path"):
        t.add_column(col, justify="left" if col in ("op", "bound", "path") else "right")
    for row in sorted(phase["layers"], key=lambda r: -r["time_s"]):
        ai = row["arithmetic_intensity"]
        t.add_row(row["name"], str(row["count"]), format_si(row["time_s"], "s"),
                  f"{ai:.1f}" if ai is not None else "-", row["bound"], row["path"])
    return t


def render_serving_prediction(out: dict[str, Any]) -> None:
    console = Console()
    m = out["memory"]
    experts = f" ({out['expert_precision']} experts)" if out.get("expert_precision") else ""
    if out.get("quant_kernel") not in (None, "fused"):
        experts += f" ({out['quant_kernel']} products)"
    if out.get("accumulate") == "fp16":
        experts += " (products accumulating in fp16)"
    console.print(f"[bold]{out['model']}[/] on [bold]{out['device']}[/], {out['precision']} weights{experts}, "
                  f"{out['kv_precision']} KV cache, {out['runtime']} runtime, batch {out['batch_size']}, "
                  f"prompt {out['prompt_len']}, output {out['output_len']}")
    console.print(f"  time to first token {format_si(out['ttft_s'], 's')}, time per output token "
                  f"{format_si(out['tpot_s'], 's')}: {out['tokens_per_s']:.1f} output tokens/s over the request "
                  f"({out['decode_tokens_per_s']:.1f} while decoding)")
    console.print(f"  memory {format_bytes(m['total'])} of {format_bytes(out['capacity_bytes'])}: weights "
                  f"{format_bytes(m['weights'])}, KV cache {format_bytes(m['kv_cache'])}, activations "
                  f"{format_bytes(m['activations'])}, workspace {format_bytes(m['workspace'])}")
    release = out.get("transformers") or {}
    if release.get("adds"):
        console.print(f"  transformers {release['release']}: {'; '.join(release['adds'])}")
    if (engine := out.get("engine") or {}).get("host_s_per_step"):
        console.print(f"  {engine['name']} engine loop: {format_si(engine['host_s_per_step'], 's')} of host time "
                      f"around every forward at batch {out['batch_size']} ({format_si(engine['fixed_s'], 's')} + "
                      f"{format_si(engine['per_sequence_s'], 's')} per sequence), included in both times above")
    if tp := out.get("tensor_parallel"):
        comm = tp["communication_s"]
        console.print(f"  tensor parallel over {tp['gpus']} GPUs of {tp['node']} (memory above is one GPU's): "
                      f"all-reduces and the logits' gather take {format_si(comm['prefill'], 's')} of the prefill "
                      f"and {format_si(comm['decode'], 's')} of each decode step at "
                      f"{tp['bus_bandwidth_bytes_per_s'] / 1e9:.0f} GB/s bus bandwidth")
    for record in [*(out.get("track_record") or {}).values(), out.get("device_record")]:
        if record:
            console.print(f"  {record['text']}")
    console.print(_phase_table("prefill", out["phases"]["prefill"]))
    console.print(_phase_table(f"decode (one token at context {out['phases']['decode']['context']})",
                               out["phases"]["decode"]))


def _shown_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["precision"], row["kv_precision"]), []).append(row)
    shown = []
    for group in groups.values():
        ok = [r for r in group if r["meets_targets"]]
        picks = [group[0], max(ok, key=lambda r: r["tokens_per_s"]) if ok else group[0], group[-1]]
        shown += [r for i, r in enumerate(picks) if r not in picks[:i]]
    return shown


def render_serving_advice(out: dict[str, Any]) -> None:
    console = Console()
    r = out["recommended"]
    console.print(f"[bold]{out['model']}[/] on [bold]{out['device']}[/], serving prompt {out['prompt_len']}, "
                  f"output {out['output_len']} ({out['runtime']} runtime)")
    if r["batch_size"] is None:
        console.print("  no configuration meets the latency targets; the sweep shows the closest")
    else:
        console.print(f"  Recommended: {r['batch_size']} concurrent sequences, {r['precision']} weights, "
                      f"{r['kv_precision']} KV cache: {r['tokens_per_s']:.0f} tokens/s, TTFT "
                      f"{format_si(r['ttft_s'], 's')}, TPOT {format_si(r['tpot_s'], 's')}")
    t = Table(title="sweep: per precision, batch 1, the best within the targets, and the largest that fits "
                    "(--json has every row)")
    for col in ("precision", "kv", "batch", "TTFT", "TPOT", "tokens/s", "memory", "meets targets"):
        t.add_column(col, justify="right")
    for row in _shown_rows(out["sweep"]):
        t.add_row(row["precision"], row["kv_precision"], str(row["batch_size"]), format_si(row["ttft_s"], "s"),
                  format_si(row["tpot_s"], "s"), f"{row['tokens_per_s']:.0f}", format_bytes(row["memory_bytes"]),
                  "yes" if row["meets_targets"] else "no")
    console.print(t)
    console.print("Why")
    for reason in out["reasons"]:
        console.print(f" - {reason}")

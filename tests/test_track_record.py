"""The track record quoted beside GPU predictions: the shipped rows must be the committed comparisons' held-out
rows, and a prediction must quote the statistics of exactly the rows its cell holds (recomputed here from the
comparisons, not from the module's own output)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchmarks.published_kinds import gpu_steps
from roofline import api
from roofline.advise import track_record as tr
from roofline.hardware import find_profile

ROOT = Path(__file__).resolve().parents[1]
COMPARISON = json.loads((ROOT / "benchmarks/results/published-gpu.json").read_text())
HELD_OUT = [r for r in COMPARISON["rows"] if r["holdout"]]
SERVING = json.loads((ROOT / "benchmarks/results/published-llm-serving.json").read_text())
SERVING_HELD_OUT = [r for r in SERVING["rows"] if r["holdout"]]


def _cell_rows(**cell: str) -> list[dict]:
    """The comparison's held-out rows in a cell, read from the comparison's own fields."""
    out = []
    for r in HELD_OUT:
        fields = {"family": r["groups"]["family"], "mode": r["groups"]["mode"],
                  "precision_class": r["extra"]["precision_class"], "bound": r["extra"]["bound"]}
        if all(fields[k] == v for k, v in cell.items()):
            out.append(r)
    return out


def test_shipped_rows_are_the_comparisons_held_out_rows():
    shipped = {r["row_id"]: r for r in tr.record_rows()}
    assert len(shipped) == len(HELD_OUT) > 200
    for r in HELD_OUT:
        s = shipped[r["row_id"]]
        assert s["error"] == r["error"]
        assert (s["family"], s["mode"], s["precision_class"], s["bound"]) == (
            r["groups"]["family"], r["groups"]["mode"], r["extra"]["precision_class"], r["extra"]["bound"])
        assert s["device"] == find_profile(r["groups"]["gpu"]).name
    assert not {r["row_id"] for r in COMPARISON["rows"] if not r["holdout"]} & set(shipped)


def test_precision_class_follows_each_rows_recorded_settings():
    dataset = yaml.safe_load((ROOT / "benchmarks/published/gpu-steps.yaml").read_text())
    by_id = {r["row_id"]: r for r in COMPARISON["rows"]}
    for _, row in gpu_steps.rows(dataset):
        expected = ("32-bit" if row.precision in ("fp32", "tf32")
                    else "16-bit model" if row.precision == "fp16" or row.amp_engine == "apex-o2" else "autocast")
        assert by_id[row.id]["extra"]["precision_class"] == expected, row.id


def test_bound_is_the_predictions_host_against_device():
    dataset = yaml.safe_load((ROOT / "benchmarks/published/gpu-steps.yaml").read_text())
    by_id = {r["row_id"]: r for r in COMPARISON["rows"]}
    rows = {row.id: row for _, row in gpu_steps.rows(dataset)}
    for row_id in ("dle-v100-infer-fp32-b1", "dle-a100-80gb-tf32-b256"):
        _, pred, _, _ = gpu_steps._predict(rows[row_id])
        assert by_id[row_id]["extra"]["bound"] == ("host" if pred.host_s > pred.device_s else "device")


def test_predict_quotes_its_cells_rows_and_the_time_they_imply():
    result = api.predict("resnet50", gpu="a100", batch=256, precision="amp", train=True)
    record = result.track_record
    cell = {"family": "vision", "mode": "train", "precision_class": "autocast", "bound": "device"}
    rows = _cell_rows(**cell)
    assert record["cell"] == cell
    assert sorted(record["row_ids"]) == sorted(r["row_id"] for r in rows)
    errors = [r["error"] for r in rows]
    assert record["median_error"] == pytest.approx(statistics.median(errors))
    q1, _, q3 = statistics.quantiles(errors, n=4, method="inclusive")
    assert record["middle_half_error"] == pytest.approx([q1, q3])
    implied = record["implied_time_s"]
    assert implied["median"] == pytest.approx(result.step_time_s / (1 + statistics.median(errors)))
    assert implied["low"] == pytest.approx(result.step_time_s / (1 + q3))
    assert implied["high"] == pytest.approx(result.step_time_s / (1 + q1))
    assert implied["low"] <= implied["median"] <= implied["high"]


def test_a_cell_with_too_few_rows_is_widened_and_says_so():
    cell = {"family": "text", "mode": "train", "precision_class": "autocast", "bound": "device"}
    assert len(_cell_rows(**cell)) < tr.MIN_ROWS
    record = api.predict("bert-base", gpu="h100", batch=320, seq_len=384, precision="amp", train=True).track_record
    wider = {k: v for k, v in cell.items() if k != "family"}
    assert record["cell"] == wider
    assert record["rows"] == len(_cell_rows(**wider))
    assert "any model family" in record["text"]


def test_half_precision_text_training_quotes_the_records_apex_o2_rows():
    record = api.predict("bert-base", gpu="h100", batch=320, seq_len=384, precision="fp16", train=True).track_record
    rows = _cell_rows(family="text", mode="train", precision_class="16-bit model", bound="device")
    assert record["rows"] == len(rows) >= tr.MIN_ROWS
    assert record["median_error"] == pytest.approx(statistics.median(r["error"] for r in rows))


def test_cpu_steps_and_ops_have_no_record():
    assert api.predict("resnet50", cpu="textbook-cpu", batch=1).track_record is None
    op = api.predict(op="gemm(m=1024,n=1024,k=1024)", gpu="a100")
    assert op.track_record is None and op.device_record is None


def test_the_cli_prints_it_and_advise_gives_it_as_a_reason():
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "roofline", *args], capture_output=True, text=True, cwd=ROOT)

    text = run("predict", "--model", "resnet50", "--gpu", "a100", "--batch", "256", "--precision", "amp")
    assert text.returncode == 0 and "Track record:" in text.stdout and "Input path:" in text.stdout
    advice = json.loads(run("advise", "--model", "resnet50", "--gpu", "a100", "--train", "--json").stdout)
    reasons = [r for r in advice["reasons"] if r["kind"] == "track_record"]
    assert len(reasons) == 1 and reasons[0]["rows"] >= tr.MIN_ROWS
    device = [r for r in advice["reasons"] if r["kind"] == "device_record"]
    assert len(device) == 1 and device[0]["device"] == advice["device"]
    inputs = [r for r in advice["reasons"] if r["kind"] == "input_record"]
    assert len(inputs) == 1 and inputs[0]["data"] == "pageable" and inputs[0]["rows"] >= tr.MIN_ROWS


def _serving_rows(**cell: str) -> list[dict]:
    return [r for r in SERVING_HELD_OUT if all(r["extra"][k] == v for k, v in cell.items())]


def test_shipped_serving_rows_are_the_comparisons_held_out_rows():
    shipped = {r["row_id"]: r for r in tr.record_rows(tr.SERVING)}
    assert len(shipped) == len(SERVING_HELD_OUT) > 100
    for r in SERVING_HELD_OUT:
        s = shipped[r["row_id"]]
        assert s["error"] == r["error"]
        assert (s["phase"], s["runtime"], s["batch"], s["gpus"]) == (
            r["extra"]["phase"], r["extra"]["runtime"], r["extra"]["batch"], r["extra"]["gpus"])
        assert s["weights"] == ("weight_only" if r["groups"]["precision"] in ("int8", "int4") else "float")


def test_serving_keys_follow_each_rows_settings():
    for r in SERVING["rows"]:
        first = r["groups"]["metric"] in ("ttft_s", "prefill_tokens_per_s")
        assert r["extra"]["phase"] == ("first_token" if first else "output_tokens"), r["row_id"]
        assert r["extra"]["batch"] == ("1" if " B=1 " in r["settings"] else "batched"), r["row_id"]
        assert r["extra"]["gpus"] == ("tensor_parallel" if " TP=" in r["settings"] else "1"), r["row_id"]
        quantised = r["groups"]["precision"] in ("int8", "int4")
        assert r["extra"]["weights"] == ("weight_only" if quantised else "float"), r["row_id"]
        words = r["settings"].split()
        after_output = words[next(i for i, w in enumerate(words) if w.startswith("O=")) + 1]
        assert r["extra"]["runtime"] == after_output, r["row_id"]
        prompt, output = (int(next(w[2:] for w in words if w.startswith(k))) for k in ("P=", "O="))
        assert r["extra"]["context"] == prompt + output // 2, r["row_id"]


def test_a_served_model_quotes_each_phases_cell():
    out = api.predict_serving("llama-2-7b", gpu="h100", batch=1, prompt_len=128, output_len=128, runtime="graph")
    first = _serving_rows(phase="first_token", runtime="graph", batch="1", weights="float", gpus="1")
    record = out["track_record"]["first_token"]
    assert record["rows"] == len(first) >= tr.MIN_ROWS
    median = statistics.median(r["error"] for r in first)
    assert record["median_error"] == pytest.approx(median)
    assert record["implied_time_s"]["median"] == pytest.approx(out["ttft_s"] / (1 + median))
    own = out["track_record"]["output_tokens"]
    assert own["rows"] == len(_serving_rows(phase="output_tokens", runtime="graph", batch="1", weights="float",
                                            gpus="1")) >= tr.MIN_ROWS
    # the eager tensor-parallel cell has too few held-out rows of its own, so it is widened over the GPU count
    out = api.predict_serving("llama-2-7b", gpu="h100", batch=1, prompt_len=128, output_len=128, runtime="eager",
                              gpus=4)
    assert len(_serving_rows(phase="output_tokens", runtime="eager", batch="1", gpus="tensor_parallel")) < tr.MIN_ROWS
    widened = out["track_record"]["output_tokens"]
    assert widened["cell"] == {"phase": "output_tokens", "runtime": "eager", "batch": "1", "weights": "float"}
    assert widened["rows"] == len(_serving_rows(phase="output_tokens", runtime="eager", batch="1", weights="float"))
    assert "one GPU or tensor-parallel" in widened["text"]


def _thinned(monkeypatch, keep) -> None:
    """The shipped serving rows with those `keep` rejects cut to MIN_ROWS - 1: a cell too thin to quote, whatever
    the record holds today (the steps record untouched)."""
    shipped = tr.record_rows

    def rows(kind=tr.STEPS):
        if kind != tr.SERVING:
            return shipped(kind)
        every = shipped(kind)
        return tuple(r for r in every if keep(r)) + tuple(r for r in every if not keep(r))[:tr.MIN_ROWS - 1]

    monkeypatch.setattr(tr, "record_rows", rows)


def test_the_runtime_is_never_widened_over(monkeypatch):
    """An eager prediction quotes only eager rows, a compiled one only compiled rows; where the fused runtime's
    batched first tokens are fewer than a quote needs, a fused prediction quotes no first token rather than another
    runtime's first tokens."""
    for runtime in ("eager", "graph"):
        out = api.predict_serving("llama-2-7b", gpu="h100", batch=16, prompt_len=128, output_len=128,
                                  runtime=runtime)
        assert set(out["track_record"]) == {"first_token", "output_tokens"}
        for phase, record in out["track_record"].items():
            assert record["cell"]["runtime"] == runtime and record["cell"]["phase"] == phase
            assert record["rows"] == len(_serving_rows(**record["cell"])) >= tr.MIN_ROWS
    _thinned(monkeypatch, lambda r: (r["phase"], r["runtime"], r["batch"]) != ("first_token", "fused", "batched"))
    out = api.predict_serving("llama-2-7b", gpu="h100", batch=16, prompt_len=128, output_len=128, runtime="fused")
    assert set(out["track_record"]) == {"output_tokens"}


def test_weight_only_weights_at_batch_one_quote_weight_only_runs():
    """int4 at batch 1 on the graph runtime quotes the held-out weight-only runs at batch 1 of each phase, not the
    16-bit and fp8 runs beside them; bf16 quotes the float runs alone. Each record's median is the comparison's."""
    for precision, weights in (("int4", "weight_only"), ("bf16", "float")):
        out = api.predict_serving("llama-3-8b", gpu="h200", batch=1, prompt_len=512, output_len=128,
                                  runtime="graph", precision=precision)
        for phase in ("first_token", "output_tokens"):
            rows = _serving_rows(phase=phase, runtime="graph", batch="1", weights=weights, gpus="1")
            record = out["track_record"][phase]
            assert record["cell"]["weights"] == weights and record["rows"] == len(rows) >= tr.MIN_ROWS
            assert record["median_error"] == pytest.approx(statistics.median(r["error"] for r in rows))
            assert ("weight-only" in record["text"]) == (weights == "weight_only")


def test_weight_only_weights_at_batch_above_one_quote_their_own_runs():
    """int4 at batch 8 on the graph runtime quotes every held-out weight-only run at batch above 1 on that runtime,
    both phases, with the published-over-predicted ratios of the comparison; bf16 and batch 1 quote none."""
    rows = [r for r in SERVING_HELD_OUT if r["groups"]["precision"] in ("int8", "int4")
            and r["extra"]["batch"] == "batched" and r["extra"]["runtime"] == "graph"]
    assert len(rows) >= tr.MIN_ROWS
    ratios = sorted(1 / (1 + r["error"]) for r in rows)
    out = api.predict_serving("llama-3-8b", gpu="h200", batch=8, prompt_len=2048, output_len=128, runtime="graph",
                              precision="int4")
    quote = out["track_record"]["weight_only"]
    assert sorted(quote["row_ids"]) == sorted(r["row_id"] for r in rows)
    assert quote["published_over_predicted"]["median"] == pytest.approx(statistics.median(ratios))
    assert quote["published_over_predicted"]["low"] == pytest.approx(ratios[0])
    assert f"{statistics.median(ratios):.2f}x" in quote["text"]
    for precision, batch in (("bf16", 8), ("int4", 1)):
        out = api.predict_serving("llama-3-8b", gpu="h200", batch=batch, prompt_len=2048, output_len=128,
                                  runtime="graph", precision=precision)
        assert "weight_only" not in (out["track_record"] or {})


def test_a_long_request_quotes_the_runs_that_decoded_at_long_context(monkeypatch):
    """An eager request whose decode attends over 16384 tokens or more on average quotes every held-out eager
    output-token run of that mean context (prompt + output / 2, read from each row's settings), with the
    comparison's published-over-predicted ratios; a short request none, nor a runtime whose such runs are fewer than
    a quote needs (the graph runtime's, thinned)."""
    def long_context(runtime: str) -> list[dict]:
        out = []
        for r in SERVING_HELD_OUT:
            words = r["settings"].split()
            prompt, output = (int(next(w[2:] for w in words if w.startswith(k))) for k in ("P=", "O="))
            if (r["extra"]["phase"] == "output_tokens" and r["extra"]["runtime"] == runtime
                    and prompt + output / 2 >= 16384):
                out.append(r)
        return out

    rows = long_context("eager")
    assert len(rows) >= tr.MIN_ROWS
    ratios = sorted(1 / (1 + r["error"]) for r in rows)
    out = api.predict_serving("llama-3.1-8b", gpu="a100", batch=1, prompt_len=30000, output_len=512,
                              runtime="eager")
    quote = out["track_record"]["long_context"]
    assert sorted(quote["row_ids"]) == sorted(r["row_id"] for r in rows)
    assert quote["published_over_predicted"]["median"] == pytest.approx(statistics.median(ratios))
    assert quote["published_over_predicted"]["high"] == pytest.approx(ratios[-1])
    assert "30,256 tokens" in quote["text"]
    short = api.predict_serving("llama-3.1-8b", gpu="a100", batch=1, prompt_len=2048, output_len=512,
                                runtime="eager")
    assert "long_context" not in (short["track_record"] or {})
    _thinned(monkeypatch, lambda r: not (r["phase"] == "output_tokens" and r["runtime"] == "graph"
                                         and r["context"] >= tr.LONG_CONTEXT_TOKENS))
    graph = api.predict_serving("llama-3.1-8b", gpu="a100", batch=1, prompt_len=30000, output_len=512,
                                runtime="graph")
    assert "long_context" not in (graph["track_record"] or {})


def test_serving_advice_carries_the_record_and_says_it():
    advice = api.advise_serving("llama-2-7b", gpu="h100", prompt_len=512, output_len=128, runtime="graph")
    assert advice["track_record"]["output_tokens"]["rows"] >= tr.MIN_ROWS
    assert advice["track_record"]["output_tokens"]["text"] in advice["reasons"]


@pytest.mark.parametrize("row_id", ["dle-t4-infer-fp32-b1", "lambda-v2-h100-sxm5-amp-bert",
                                    "neusight-h100sxm-bert-large-train-b8",
                                    "dle-bert2022-a100-80gb-fp16-squad-infer-b32",
                                    "timm-nhwc-4090-infer-mobilenetv3-small"])
def test_the_shipped_step_errors_are_the_current_models(row_id):
    """The record quotes the committed comparison; a model change must be followed by published.py and
    track_record.py, or these rows' errors no longer match what the model predicts now."""
    dataset = yaml.safe_load((ROOT / "benchmarks/published/gpu-steps.yaml").read_text())
    row = next(r for _, r in gpu_steps.rows(dataset) if r.id == row_id)
    predicted, *_ = gpu_steps._predict(row)
    shipped = next(r for r in tr.record_rows() if r["row_id"] == row_id)
    assert predicted / row.published_step_s - 1 == pytest.approx(shipped["error"], rel=1e-9)


@pytest.fixture(scope="module")
def serving_errors() -> dict[str, float]:
    from benchmarks.published_kinds import llm_serving

    dataset = yaml.safe_load((ROOT / "benchmarks/published/llm-serving.yaml").read_text())
    return {str(c.row_id): c.error for c in llm_serving.compare(dataset)}


@pytest.mark.parametrize("row_id", ["trtllm-v090-a100-17", "trtllm-v090-a100-13", "gpt-fast-llama3-5"])
def test_the_shipped_serving_errors_are_the_current_models(row_id, serving_errors):
    shipped = next(r for r in tr.record_rows(tr.SERVING) if r["row_id"] == row_id)
    assert serving_errors[row_id] == pytest.approx(shipped["error"], rel=1e-9)


def _device_rows(comparison: dict, gpu: str, held_out: bool) -> list[dict]:
    return [r for r in comparison["rows"] if r["holdout"] == held_out and r["groups"]["gpu"] == gpu]


def test_a_gpu_the_record_has_runs_on_quotes_their_median():
    result = api.predict("resnet50", gpu="h100-sxm5-80gb", batch=256, precision="amp", train=True)
    rows = _device_rows(COMPARISON, "h100-sxm5-80gb", held_out=True)
    record = result.device_record
    assert record["device"] == result.device
    assert record["rows"] == len(rows) >= tr.MIN_ROWS
    assert record["fitted_rows"] == len(_device_rows(COMPARISON, "h100-sxm5-80gb", held_out=False))
    assert record["median_error"] == pytest.approx(statistics.median(r["error"] for r in rows))


def test_a_gpu_without_held_out_runs_says_the_prediction_rests_on_its_profile(monkeypatch):
    """A board the record holds no held-out step of (the L40S's rows taken out of the shipped record, whatever
    it holds today) gets the sentence saying so, not a spread."""
    shipped = tr.record_rows
    monkeypatch.setattr(tr, "record_rows", lambda kind=tr.STEPS: tuple(
        r for r in shipped(kind) if kind != tr.STEPS or not r["device"].startswith("NVIDIA L40S")))
    record = api.predict("resnet50", gpu="l40s", batch=64).device_record
    assert record["rows"] == 0 and "no held-out published run" in record["text"]
    assert api.predict("resnet50", cpu="textbook-cpu", batch=1).device_record is None


def test_a_served_model_quotes_its_gpus_serving_rows():
    out = api.predict_serving("llama-2-7b", gpu="h200", batch=1, prompt_len=128, output_len=128, runtime="graph")
    rows = _device_rows(SERVING, "h200-sxm-141gb", held_out=True)
    assert out["device_record"]["rows"] == len(rows) > 0
    assert out["device_record"]["median_error"] == pytest.approx(statistics.median(r["error"] for r in rows))


def _path_errors(data: str, mode: str | None, family: str | None) -> list[float]:
    """The comparison's held-out errors fed by `data`, read from the comparison's own fields."""
    return [r["error"] for r in HELD_OUT if r["extra"]["data"] == data
            and (mode is None or r["groups"]["mode"] == mode) and (family is None or r["groups"]["family"] == family)]


def test_each_rows_input_path_is_its_recorded_data_as_predict_names_it():
    dataset = yaml.safe_load((ROOT / "benchmarks/published/gpu-steps.yaml").read_text())
    names = {"synthetic-device": "device", "loader": "pinned", "loader-pageable": "pageable",
             "prefetched": "prefetched"}
    by_id = {r["row_id"]: r for r in COMPARISON["rows"]}
    shipped = {r["row_id"]: r for r in tr.record_rows()}
    for _, row in gpu_steps.rows(dataset):
        assert by_id[row.id]["extra"]["data"] == names[row.data], row.id
        if row.id in shipped:
            assert shipped[row.id]["data"] == names[row.data], row.id


def test_predict_quotes_the_runs_fed_as_its_input_is_and_the_other_paths():
    quote = api.predict("resnet50", gpu="v100", batch=64, train=True).input_record
    errors = _path_errors("pageable", "train", "vision")
    assert (quote["data"], quote["mode"], quote["family"], quote["rows"]) == ("pageable", "train", "vision",
                                                                              len(errors))
    assert quote["median_error"] == pytest.approx(statistics.median(errors))
    assert quote["published_over_predicted"]["median"] == pytest.approx(1 / (1 + statistics.median(errors)))
    for path, other in quote["other_paths"].items():
        assert other["published_over_predicted"] == pytest.approx(
            1 / (1 + statistics.median(_path_errors(path, "train", "vision"))))
    assert "pin_memory" in quote["text"] and f"{quote['published_over_predicted']['median']:.2f}x" in quote["text"]


def test_an_input_path_with_too_few_runs_of_the_family_widens_to_the_mode():
    quote = api.predict("bert-base", gpu="a100", batch=32, seq_len=128, train=True, data="prefetched").input_record
    assert not _path_errors("prefetched", "train", "text")
    assert (quote["family"], quote["mode"]) == (None, "train")
    assert quote["rows"] == len(_path_errors("prefetched", "train", None))
    assert "pin_memory" not in quote["text"]


def test_a_cpu_step_or_an_op_quotes_no_input_path():
    assert api.predict("resnet50", cpu="textbook-cpu", batch=1).input_record is None
    assert api.predict(op="gemm(m=1024,n=1024,k=1024)", gpu="a100").input_record is None

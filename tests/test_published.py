"""The published-record benchmark (benchmarks/published.py): a couple of real rows run end to end (finite,
positive, JSON complete), the dataset's provenance rules, and the summary statistics on hand-made errors.
Accuracy thresholds live in the benchmark, not here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from benchmarks import published
from benchmarks.published_kinds import gpu_steps
from benchmarks.published_kinds.record import HELD_OUT_SETS, Comparison, DatasetError, source_blocks

DATASET = Path(published.DATASET_DIR) / "gpu-steps.yaml"


def _subset(row_ids: set[str]) -> dict:
    """The shipped dataset cut down to the blocks and rows named, everything else as written."""
    data = yaml.safe_load(DATASET.read_text())
    blocks = []
    for block in data["sources"]:
        kept = [r for r in block["rows"] if r["id"] in row_ids]
        if kept:
            blocks.append({**block, "rows": kept})
    return {**data, "sources": blocks}


def test_two_real_rows_give_a_complete_json_document(tmp_path):
    # one fitted CNN training row (DeepLearningExamples, V100, AMP) and one held-out BERT row (Lambda, A10)
    data = _subset({"dle-v100-16gb-amp-b256", "lambda-fp16-a10-bert"})
    path = tmp_path / "gpu-steps.yaml"
    path.write_text(yaml.safe_dump(data))
    doc = published.run(path, out_dir=tmp_path)
    written = json.loads((tmp_path / f"{gpu_steps.RESULT_STEM}.json").read_text())
    assert written == json.loads(json.dumps(doc))
    assert (tmp_path / f"{gpu_steps.RESULT_STEM}.md").read_text().startswith("# ")
    assert {"kind", "title", "metric", "rows", "summary", "groups", "targets", "dataset"} <= set(doc)
    assert len(doc["rows"]) == 2
    for row in doc["rows"]:
        for key in ("published", "predicted", "error"):
            assert math.isfinite(row[key])
        assert row["published"] > 0 and row["predicted"] > 0
        assert row["error"] == pytest.approx(row["predicted"] / row["published"] - 1)
        assert set(gpu_steps.GROUP_KEYS) == set(row["groups"])
        assert row["extra"]["memory_bytes"] > 0
    # 1200 img/s at batch 256 (README table) is 256 / 1200 s per step
    dle = next(r for r in doc["rows"] if r["row_id"] == "dle-v100-16gb-amp-b256")
    assert dle["published"] == pytest.approx(256 / 1200)
    assert {p: s["rows"] for p, s in doc["summary"].items() if s} == {"fitted": 1, "held_out": 1,
                                                                      "held_out_together": 1, "all": 2}
    assert set(doc["groups"]) == set(published.PARTS)


def test_step_time_rows_and_forward_backward_only_rows():
    # cnn-benchmarks prints milliseconds per batch of 16; its "Total" rows time no parameter update
    data = _subset({"cnnb-titanx-vgg16-fwdbwd"})
    (c,) = gpu_steps.compare(data)
    assert c.published == pytest.approx(0.19278)
    with_update = gpu_steps.GpuStepRow.model_validate({**data["sources"][0]["defaults"],
                                                       **data["sources"][0]["rows"][0], "optimizer": "sgd"})
    step_with_update, *_ = gpu_steps._predict(with_update)
    assert 0 < c.predicted < step_with_update


def test_rows_run_fp32_where_their_software_put_it():
    # Lambda's runs are NGC containers (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1): TF32 for products too; timm's
    # PyTorch 2.4 rows the >= 1.12 default (convolutions only); a row naming no PyTorch, today's default
    rows = {row.id: row for _, row in gpu_steps.rows(yaml.safe_load(DATASET.read_text()))}
    assert rows["lambda-fp32-a100-sxm4-80gb-bert"].fp32_math == "tf32"
    assert rows["timm-4090-infer-resnet50"].fp32_math == "pytorch"
    assert rows["cnnb-titanx-vgg16-fwd"].fp32_math == "pytorch"
    # DeepLearningExamples' BERT: eager attention, BertAdam's loop, GradientClipper's and BertAdam's norm reads
    bert = rows["lambda-fp32-rtx3090-bert"]
    assert (bert.attention, bert.optimizer, bert.norm_reads) == ("eager", "adam-unfused", 2)
    eager, *_ = gpu_steps._predict(bert)
    fused, *_ = gpu_steps._predict(bert.model_copy(update={"attention": "fused"}))
    assert eager > fused


def test_rows_run_the_optimizer_their_pytorch_ran():
    # torch.optim.SGD runs its per-parameter loop before PyTorch 2.1 (the foreach default: pytorch#92306, #95862)
    rows = {row.id: row for _, row in gpu_steps.rows(yaml.safe_load(DATASET.read_text()))}
    assert rows["dle-a100-80gb-amp-b256"].optimizer_run == "momentum-unfused"  # NGC 21.03, PyTorch 1.9
    assert rows["timm-3090-train-resnet50"].optimizer_run == "momentum-unfused"  # PyTorch 1.12
    later = rows["timm-3090-train-resnet50"].model_copy(update={"pytorch": "2.4"})
    assert later.optimizer_run == "momentum"
    assert rows["lambda-fp32-rtx3090-bert"].optimizer_run == "adam-unfused"


def test_shipped_dataset_holds_out_whole_blocks_and_cites_every_source():
    data = yaml.safe_load(DATASET.read_text())
    assert data["kind"] == "gpu-steps" and data["holdout_rule"]
    blocks = source_blocks(data)
    rows = gpu_steps.rows(data)
    first = [block for block, _ in rows if block.held_out_set is None]
    assert len(first) >= 60
    held = sum(block.holdout for block in first)
    assert 0.25 <= held / len(first) <= 0.40  # about a third, by whole blocks (holdout is a block field only)
    sets = [block.held_out_set for block, _ in rows]
    assert sets.count("fresh") >= 20 and sets.count("third") >= 20  # later held-out sets, every block held out
    assert all(b.citation for b in blocks if b.kind == "published")
    assert all(not {"holdout", "held_out_set"} & set(row) for b in data["sources"] for row in b["rows"])


def test_a_later_block_is_held_out_and_reported_as_its_own_part():
    block = {"id": "new", "kind": "published", "holdout": False, "held_out_set": "fresh", "citation": "c",
             "framework": "f", "rows": [{"id": "r1"}]}
    with pytest.raises(DatasetError, match="holdout: true"):
        source_blocks({"sources": [block]})
    with pytest.raises(DatasetError, match="held_out_set"):
        source_blocks({"sources": [{**block, "holdout": True, "held_out_set": "sixty-second"}]})
    blocks = source_blocks({"sources": [{**block, "id": f"b{i}", "holdout": True, "held_out_set": name,
                                         "rows": [{"id": f"r{i}"}]} for i, name in enumerate(HELD_OUT_SETS)]})
    assert [b.part for b in blocks] == ["fresh_held_out", "third_held_out", "fourth_held_out", "fifth_held_out",
                                        "sixth_held_out", "seventh_held_out", "eighth_held_out", "ninth_held_out",
                                        "tenth_held_out", "eleventh_held_out", "twelfth_held_out",
                                        "thirteenth_held_out", "fourteenth_held_out", "fifteenth_held_out",
                                        "sixteenth_held_out", "seventeenth_held_out", "eighteenth_held_out",
                                        "nineteenth_held_out", "twentieth_held_out",
                                        "twenty-first_held_out", "twenty-second_held_out",
                                        "twenty-third_held_out", "twenty-fourth_held_out",
                                        "twenty-fifth_held_out", "twenty-sixth_held_out",
                                        "twenty-seventh_held_out", "twenty-eighth_held_out",
                                        "twenty-ninth_held_out", "thirtieth_held_out", "thirty-first_held_out",
                                        "thirty-second_held_out", "thirty-third_held_out",
                                        "thirty-fourth_held_out", "thirty-fifth_held_out",
                                        "thirty-sixth_held_out", "thirty-seventh_held_out", "thirty-eighth_held_out",
                                        "thirty-ninth_held_out", "fortieth_held_out",
                                        "forty-first_held_out", "forty-second_held_out", "forty-third_held_out",
                                        "forty-fourth_held_out", "forty-fifth_held_out", "forty-sixth_held_out",
                                        "forty-seventh_held_out", "forty-eighth_held_out",
                                        "forty-ninth_held_out", "fiftieth_held_out", "fifty-first_held_out",
                                        "fifty-second_held_out", "fifty-third_held_out",
                                        "fifty-fourth_held_out", "fifty-fifth_held_out", "fifty-sixth_held_out",
                                        "fifty-seventh_held_out", "fifty-eighth_held_out", "fifty-ninth_held_out",
                                        "sixtieth_held_out", "sixty-first_held_out"]
    rows = [_c("a", 0.10), _c("b", 0.20, holdout=True), _c("c", 0.40, holdout=True, later_set="fresh"),
            _c("d", 0.05, holdout=True, later_set="third"), _c("e", 0.15, holdout=True, later_set="fourth"),
            _c("f", 0.30, holdout=True, later_set="fifth"), _c("g", 0.11, holdout=True, later_set="sixth"),
            _c("h", 0.09, holdout=True, later_set="seventh"), _c("i", 0.12, holdout=True, later_set="eighth"),
            _c("j", 0.08, holdout=True, later_set="ninth"), _c("k", 0.13, holdout=True, later_set="tenth"),
            _c("l", 0.07, holdout=True, later_set="eleventh"), _c("m", 0.14, holdout=True, later_set="twelfth"),
            _c("n", 0.16, holdout=True, later_set="thirteenth"), _c("o", 0.04, holdout=True, later_set="fourteenth"),
            _c("p", 0.06, holdout=True, later_set="fifteenth"), _c("q", 0.03, holdout=True, later_set="sixteenth"),
            _c("r", 0.02, holdout=True, later_set="seventeenth"), _c("s", 0.01, holdout=True, later_set="eighteenth"),
            _c("t", 0.005, holdout=True, later_set="nineteenth"), _c("u", 0.0025, holdout=True, later_set="twentieth"),
            _c("v", 0.00125, holdout=True, later_set="twenty-first"),
            _c("w", 0.000625, holdout=True, later_set="twenty-second"),
            _c("x", 0.0003125, holdout=True, later_set="twenty-third"),
            _c("y", 0.00015625, holdout=True, later_set="twenty-fourth"),
            _c("z", 0.000078125, holdout=True, later_set="twenty-fifth"),
            _c("aa", 0.0000390625, holdout=True, later_set="twenty-sixth"),
            _c("ab", 0.00001953125, holdout=True, later_set="twenty-seventh"),
            _c("ac", 0.000009765625, holdout=True, later_set="twenty-eighth"),
            _c("ad", 0.0000048828125, holdout=True, later_set="twenty-ninth"),
            _c("ae", 0.00000244140625, holdout=True, later_set="thirtieth"),
            _c("af", 0.000001220703125, holdout=True, later_set="thirty-first"),
            _c("ag", 0.0000006103515625, holdout=True, later_set="thirty-second"),
            _c("ah", 0.00000030517578125, holdout=True, later_set="thirty-third"),
            _c("ai", 0.000000152587890625, holdout=True, later_set="thirty-fourth"),
            _c("aj", 0.0000000762939453125, holdout=True, later_set="thirty-fifth"),
            _c("ak", 0.00000003814697265625, holdout=True, later_set="thirty-sixth"),
            _c("al", 0.000000019073486328125, holdout=True, later_set="thirty-seventh"),
            _c("am", 0.0000000095367431640625, holdout=True, later_set="thirty-eighth"),
            _c("an", 0.00000000476837158203125, holdout=True, later_set="thirty-ninth"),
            _c("ao", 0.000000002384185791015625, holdout=True, later_set="fortieth"),
            _c("ap", 0.0000000011920928955078125, holdout=True, later_set="forty-first"),
            _c("aq", 0.00000000059604644775390625, holdout=True, later_set="forty-second"),
            _c("ar", 0.000000000298023223876953125, holdout=True, later_set="forty-third"),
            _c("as", 0.0000000001490116119384765625, holdout=True, later_set="forty-fourth"),
            _c("at", 0.00000000007450580596923828125, holdout=True, later_set="forty-fifth"),
            _c("au", 3.7252902984619140625e-11, holdout=True, later_set="forty-sixth"),
            _c("av", 1.86264514923095703125e-11, holdout=True, later_set="forty-seventh"),
            _c("aw", 9.31322574615478515625e-12, holdout=True, later_set="forty-eighth"),
            _c("ax", 4.656612873077392578125e-12, holdout=True, later_set="forty-ninth"),
            _c("ay", 2.3283064365386962890625e-12, holdout=True, later_set="fiftieth"),
            _c("az", 1.16415321826934814453125e-12, holdout=True, later_set="fifty-first"),
            _c("ba", 5.82076609134674072265625e-13, holdout=True, later_set="fifty-second"),
            _c("bb", 2.910383045673370361328125e-13, holdout=True, later_set="fifty-third"),
            _c("bc", 1.4551915228366851806640625e-13, holdout=True, later_set="fifty-fourth"),
            _c("bd", 7.2759576141834259033203125e-14, holdout=True, later_set="fifty-fifth"),
            _c("be", 3.63797880709171295166015625e-14, holdout=True, later_set="fifty-sixth"),
            _c("bf", 1.818989403545856475830078125e-14, holdout=True, later_set="fifty-seventh"),
            _c("bg", 9.094947017729282379150390625e-15, holdout=True, later_set="fifty-eighth"),
            _c("bh", 4.5474735088646411895751953125e-15, holdout=True, later_set="fifty-ninth"),
            _c("bi", 2.27373675443232059478759765625e-15, holdout=True, later_set="sixtieth"),
            _c("bj", 1.136868377216160297393798828125e-15, holdout=True, later_set="sixty-first")]
    parts = published.split(rows)
    assert [[c.row_id for c in parts[p]] for p in published.PARTS] == [
        ["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"], ["h"], ["i"], ["j"], ["k"], ["l"], ["m"], ["n"], ["o"], ["p"],
        ["q"], ["r"], ["s"], ["t"], ["u"], ["v"], ["w"], ["x"], ["y"], ["z"], ["aa"], ["ab"], ["ac"], ["ad"], ["ae"],
        ["af"], ["ag"], ["ah"], ["ai"], ["aj"], ["ak"], ["al"], ["am"], ["an"], ["ao"], ["ap"],
        ["aq"], ["ar"], ["as"], ["at"], ["au"], ["av"], ["aw"], ["ax"], ["ay"], ["az"], ["ba"], ["bb"], ["bc"], ["bd"],
        ["be"], ["bf"], ["bg"], ["bh"], ["bi"], ["bj"],
        ["b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w",
         "x", "y", "z", "aa", "ab", "ac", "ad", "ae", "af", "ag", "ah", "ai", "aj", "ak", "al", "am", "an", "ao", "ap",
         "aq", "ar", "as", "at", "au", "av", "aw", "ax", "ay", "az", "ba", "bb", "bc", "bd", "be", "bf", "bg", "bh",
         "bi", "bj"],
        ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v",
         "w", "x", "y", "z", "aa", "ab", "ac", "ad", "ae", "af", "ag", "ah", "ai", "aj", "ak", "al", "am", "an", "ao",
         "ap", "aq", "ar", "as", "at", "au", "av", "aw", "ax", "ay", "az", "ba", "bb", "bc", "bd", "be", "bf", "bg",
         "bh", "bi", "bj"]]
    ratios = {t["target"]: t["value"] for t in published.check_targets(parts, []) if t["unit"] == "ratio"}
    assert ratios == {"held-out median <= 1.3x fitted median": pytest.approx(2.0),
                      "fresh-held-out median <= 1.3x fitted median": pytest.approx(4.0),
                      "third-held-out median <= 1.3x fitted median": pytest.approx(0.5),
                      "fourth-held-out median <= 1.3x fitted median": pytest.approx(1.5),
                      "fifth-held-out median <= 1.3x fitted median": pytest.approx(3.0),
                      "sixth-held-out median <= 1.3x fitted median": pytest.approx(1.1),
                      "seventh-held-out median <= 1.3x fitted median": pytest.approx(0.9),
                      "eighth-held-out median <= 1.3x fitted median": pytest.approx(1.2),
                      "ninth-held-out median <= 1.3x fitted median": pytest.approx(0.8),
                      "tenth-held-out median <= 1.3x fitted median": pytest.approx(1.3),
                      "eleventh-held-out median <= 1.3x fitted median": pytest.approx(0.7),
                      "twelfth-held-out median <= 1.3x fitted median": pytest.approx(1.4),
                      "thirteenth-held-out median <= 1.3x fitted median": pytest.approx(1.6),
                      "fourteenth-held-out median <= 1.3x fitted median": pytest.approx(0.4),
                      "fifteenth-held-out median <= 1.3x fitted median": pytest.approx(0.6),
                      "sixteenth-held-out median <= 1.3x fitted median": pytest.approx(0.3),
                      "seventeenth-held-out median <= 1.3x fitted median": pytest.approx(0.2),
                      "eighteenth-held-out median <= 1.3x fitted median": pytest.approx(0.1),
                      "nineteenth-held-out median <= 1.3x fitted median": pytest.approx(0.05),
                      "twentieth-held-out median <= 1.3x fitted median": pytest.approx(0.025),
                      "twenty-first-held-out median <= 1.3x fitted median": pytest.approx(0.0125),
                      "twenty-second-held-out median <= 1.3x fitted median": pytest.approx(0.00625),
                      "twenty-third-held-out median <= 1.3x fitted median": pytest.approx(0.003125),
                      "twenty-fourth-held-out median <= 1.3x fitted median": pytest.approx(0.0015625),
                      "twenty-fifth-held-out median <= 1.3x fitted median": pytest.approx(0.00078125),
                      "twenty-sixth-held-out median <= 1.3x fitted median": pytest.approx(0.000390625),
                      "twenty-seventh-held-out median <= 1.3x fitted median": pytest.approx(0.0001953125),
                      "twenty-eighth-held-out median <= 1.3x fitted median": pytest.approx(0.00009765625),
                      "twenty-ninth-held-out median <= 1.3x fitted median": pytest.approx(0.000048828125),
                      "thirtieth-held-out median <= 1.3x fitted median": pytest.approx(0.0000244140625),
                      "thirty-first-held-out median <= 1.3x fitted median": pytest.approx(0.00001220703125),
                      "thirty-second-held-out median <= 1.3x fitted median": pytest.approx(0.000006103515625),
                      "thirty-third-held-out median <= 1.3x fitted median": pytest.approx(0.0000030517578125),
                      "thirty-fourth-held-out median <= 1.3x fitted median": pytest.approx(0.00000152587890625),
                      "thirty-fifth-held-out median <= 1.3x fitted median": pytest.approx(0.000000762939453125),
                      "thirty-sixth-held-out median <= 1.3x fitted median": pytest.approx(0.0000003814697265625),
                      "thirty-seventh-held-out median <= 1.3x fitted median": pytest.approx(0.00000019073486328125),
                      "thirty-eighth-held-out median <= 1.3x fitted median": pytest.approx(0.000000095367431640625),
                      "thirty-ninth-held-out median <= 1.3x fitted median": pytest.approx(0.0000000476837158203125),
                      "fortieth-held-out median <= 1.3x fitted median": pytest.approx(0.00000002384185791015625),
                      "forty-first-held-out median <= 1.3x fitted median": pytest.approx(0.000000011920928955078125),
                      "forty-second-held-out median <= 1.3x fitted median": pytest.approx(0.0000000059604644775390625),
                      "forty-third-held-out median <= 1.3x fitted median": pytest.approx(0.00000000298023223876953125),
                      "forty-fourth-held-out median <= 1.3x fitted median": pytest.approx(1.490116119384765625e-9),
                      "forty-fifth-held-out median <= 1.3x fitted median": pytest.approx(7.450580596923828125e-10),
                      "forty-sixth-held-out median <= 1.3x fitted median": pytest.approx(3.7252902984619140625e-10),
                      "forty-seventh-held-out median <= 1.3x fitted median": pytest.approx(1.86264514923095703125e-10),
                      "forty-eighth-held-out median <= 1.3x fitted median": pytest.approx(9.31322574615478515625e-11),
                      "forty-ninth-held-out median <= 1.3x fitted median": pytest.approx(4.656612873077392578125e-11),
                      "fiftieth-held-out median <= 1.3x fitted median": pytest.approx(2.3283064365386962890625e-11),
                      "fifty-first-held-out median <= 1.3x fitted median": pytest.approx(1.16415321826934814453125e-11),
                      "fifty-second-held-out median <= 1.3x fitted median": pytest.approx(5.820766091346741e-12),
                      "fifty-third-held-out median <= 1.3x fitted median": pytest.approx(2.9103830456733704e-12),
                      "fifty-fourth-held-out median <= 1.3x fitted median": pytest.approx(1.4551915228366852e-12),
                      "fifty-fifth-held-out median <= 1.3x fitted median": pytest.approx(7.275957614183426e-13),
                      "fifty-sixth-held-out median <= 1.3x fitted median": pytest.approx(3.637978807091713e-13),
                      "fifty-seventh-held-out median <= 1.3x fitted median": pytest.approx(1.8189894035458565e-13),
                      "fifty-eighth-held-out median <= 1.3x fitted median": pytest.approx(9.094947017729282e-14),
                      "fifty-ninth-held-out median <= 1.3x fitted median": pytest.approx(4.547473508864641e-14),
                      "sixtieth-held-out median <= 1.3x fitted median": pytest.approx(2.2737367544323206e-14),
                      "sixty-first-held-out median <= 1.3x fitted median": pytest.approx(1.1368683772161603e-14),
                      # every held-out row together, |errors| 1.136868377216160297393798828125e-15 ... 0.40 (61
                      # rows): the thirty-first smallest, the thirty-first set's 0.000001220703125
                      "held-out-together median <= 1.3x fitted median": pytest.approx(0.00001220703125)}


def test_measured_here_blocks_need_their_script_and_date():
    block = {"id": "h100-today", "kind": "measured-here", "holdout": False, "framework": "PyTorch",
             "rows": [{"id": "r1"}]}
    with pytest.raises(DatasetError, match="script"):
        source_blocks({"sources": [block]})
    ok = source_blocks({"sources": [{**block, "script": "python benchmarks/x.py", "date": "2026-11-24"}]})
    assert ok[0].kind == "measured-here"


@pytest.mark.parametrize(("row", "message"), [
    ({"samples_per_s": 100, "step_time_s": 0.1}, "exactly one of samples_per_s"),
    ({"mode": "train"}, "optimizer"),
    ({"input_size": None, "seq_len": None}, "input_size"),
    ({"precision": "fp12"}, "precision"),
])
def test_bad_rows_name_the_row_and_the_problem(row, message):
    base = {"id": "x", "model": "resnet50", "gpu": "v100", "mode": "inference", "precision": "fp32", "batch": 8,
            "input_size": 224, "data": "loader", "samples_per_s": 100}
    data = {"kind": "gpu-steps", "sources": [{"id": "s", "kind": "published", "holdout": False, "citation": "c",
                                               "framework": "f", "rows": [{**base, **row}]}]}
    with pytest.raises(DatasetError, match=message) as info:
        gpu_steps.rows(data)
    assert "s row x" in str(info.value)


def test_unknown_kind_is_a_dataset_error(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("kind: no-such-record\nsources: []\n")
    with pytest.raises(DatasetError, match="no comparer"):
        published.run(path, out_dir=tmp_path)


def _c(row_id: str, error: float, holdout: bool = False, model: str = "m", later_set: str | None = None,
       ) -> Comparison:
    return Comparison(row_id=row_id, source_id="s", holdout=holdout, published=1.0, predicted=1.0 + error,
                      groups={"model": model}, settings="", later_set=later_set)


def test_summary_statistics_on_hand_made_errors():
    rows = [_c("a", -0.30), _c("b", 0.10), _c("c", -0.05), _c("d", 0.50, holdout=True)]
    s = published.summarize(rows)
    # |errors| 0.30 0.10 0.05 0.50 -> median (0.10 + 0.30) / 2 = 0.20; signed -0.30 -0.05 0.10 0.50 -> 0.025
    assert (s.rows, s.median_abs, s.worst_row, s.too_fast) == (4, pytest.approx(0.20), "d", 2)
    assert s.worst_abs == pytest.approx(0.50) and s.signed_median == pytest.approx(0.025)
    parts = published.split(rows)
    assert [len(parts[p]) for p in published.PARTS] == [3, 1, *[0] * len(HELD_OUT_SETS), 1, 4]
    # held-out median 0.50 against fitted median 0.10: 5x, over the 1.3x target
    ratio = next(t for t in published.check_targets(parts, []) if t["unit"] == "ratio")
    assert ratio["value"] == pytest.approx(5.0) and not ratio["met"]


def test_other_predictors_are_compared_on_the_same_rows():
    def row(row_id: str, gpu: str, ours: float, others: dict[str, float]) -> Comparison:
        # published 1.0 s: a predictor's |error| is |prediction - 1|
        return Comparison(row_id=row_id, source_id="s", holdout=True, published=1.0, predicted=1.0 + ours,
                          groups={"gpu": gpu}, settings="", extra={"other_predictions": others})

    rows = [row("a", "g1", 0.10, {"x": 1.50, "y": 0.80}), row("b", "g1", -0.20, {"x": 1.10}),
            row("c", "g2", 0.05, {"x": 0.70, "y": 1.40}),
            Comparison(row_id="d", source_id="t", holdout=False, published=1.0, predicted=3.0, groups={"gpu": "g1"},
                       settings="", extra={"other_predictions": {}})]
    table = gpu_steps.against_other_predictors(rows)
    # ours over a, b, c: |0.10|, |-0.20|, |0.05| -> median 10%, worst 20% (row d has no other prediction: left out);
    # x: 0.50, 0.10, 0.30 -> 30% / 50%; y on a and c only: 0.20, 0.40 -> 30% / 40%
    assert "| all | 3 | 10.0% / 20% | 30.0% / 50% | 30.0% / 40% |" in table
    # per GPU: g1 holds a and b (y only on a), g2 holds c
    assert "| g1 | 2 | 15.0% / 20% | 30.0% / 50% | 20.0% / 20% |" in table
    assert "| g2 | 1 | 5.0% / 5% | 30.0% / 30% | 40.0% / 40% |" in table
    assert gpu_steps.against_other_predictors(rows[3:]) == []


def test_the_serving_comparer_checks_every_later_held_out_set():
    from benchmarks.published_kinds import llm_serving

    def row(row_id: str, error: float, **kw) -> Comparison:
        return Comparison(**{**_c(row_id, error, **kw).__dict__, "groups": {"metric": "ttft_s"}})

    rows = [row("a", 0.10), row("b", 0.20, holdout=True), row("c", 0.30, holdout=True, later_set="fresh"),
            row("d", 0.12, holdout=True, later_set="third")]
    ratios = {t["target"]: t["value"] for t in llm_serving.check_targets(published.split(rows)) if t["unit"] == "ratio"}
    assert ratios == {"held-out median <= 1.3x fitted median": pytest.approx(2.0),
                      "fresh-held-out median <= 1.3x fitted median": pytest.approx(3.0),
                      "third-held-out median <= 1.3x fitted median": pytest.approx(1.2),
                      # b, c, d together: |errors| 0.20, 0.30, 0.12 -> median 0.20
                      "held-out-together median <= 1.3x fitted median": pytest.approx(2.0)}


def test_serving_figures_become_the_seconds_they_imply():
    from benchmarks.published_kinds import llm_serving

    base = {"batch": 8, "prompt": 512, "output": 128, "gpus": 2}
    # a request of 8 x 128 generated tokens at 1024 tokens/s takes 1 s; per GPU of 2 at 512 each, the same
    assert llm_serving.published_time_s({**base, "metric": "tokens_per_s", "value": 1024}) == pytest.approx(1.0)
    assert llm_serving.published_time_s({**base, "metric": "tokens_per_s_per_gpu", "value": 512}) == pytest.approx(1.0)
    # benchmark_latency's "Avg latency" is already the request's seconds
    assert llm_serving.published_time_s({**base, "metric": "request_s", "value": 2.5}) == 2.5
    # 8 sequences at 400 tokens/s while decoding: 20 ms a step; 8 x 512 prompt tokens at 16384/s: 0.25 s
    assert llm_serving.published_time_s({**base, "metric": "decode_tokens_per_s", "value": 400}) == pytest.approx(0.02)
    prefill = {**base, "metric": "prefill_tokens_per_s", "value": 16384}
    assert llm_serving.published_time_s(prefill) == pytest.approx(0.25)
    # a source's seconds between tokens are the step's time, whatever the batch
    assert llm_serving.published_time_s({**base, "metric": "tpot_s", "value": 0.02}) == 0.02


def test_the_record_against_itself_pairs_identical_settings_across_sources_only():
    """Two sources of one setting at 1.0 s and 1.1 s disagree by 10%; source a's repeat at 1.5 s pairs with b's
    1.1 s (36%) but not with a's own 1.0 s; rows of different settings never pair; a setting one source ran alone
    has no pair."""
    from benchmarks.published_kinds.agreement import agreement_section, cross_source_pairs

    def row(source: str, settings: str, seconds: float) -> Comparison:
        return Comparison(row_id=f"{source}-{settings}-{seconds}", source_id=source, holdout=True,
                          published=seconds, predicted=1.0, groups={}, settings=settings)

    rows = [row("a", "x", 1.0), row("b", "x", 1.1), row("a", "x", 1.5), row("c", "y", 2.0), row("d", "y", 2.4),
            row("c", "z", 3.0), row("e", "z", 3.0), row("f", "w", 1.0)]
    pairs = sorted(cross_source_pairs(rows, lambda c: c.settings))
    assert pairs == pytest.approx([0.0, 0.1, 0.2, 1.5 / 1.1 - 1])
    assert "median" in agreement_section(rows, lambda c: c.settings)[-1]

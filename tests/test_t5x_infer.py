"""The T5X score-mode converter (`t5x-scores`) on fixtures in t5x/infer.py's output format."""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from seahorse_t5x import errors
from seahorse_t5x.cli import main as cli_main
from seahorse_t5x.data import scorefiles
from seahorse_t5x.scoring import t5x_scores

TESTDATA = pathlib.Path(__file__).parent / "testdata"

# Prepared split rows (the `prepare` contract); q4 is null on the third row.
ROWS = [
    ("xsum-test-1", "en", "xsum", "t5_base", "An article one.", "Summary one.", 1),
    ("mlsum_de-test-2", "de", "mlsum", "mt5_xxl", "Ein Artikel.", "Eine Zusammenfassung.", 0),
    ("xlsum_english-test-3", "en", "xlsum", "reference", "Article three.", "Summary three.", None),
    ("mlsum_de-test-4", "de", "mlsum", "t5_xxl", "Noch ein Artikel.", "Kurz  gesagt.", 1),
    ("xsum-test-5", "en", "xsum", "palm_1shot", "Article five.", "Summary five.", 0),
]
SCORES = {
    "xsum-test-1": -0.1,
    "mlsum_de-test-2": -2.3,
    "mlsum_de-test-4": -0.05,
    "xsum-test-5": -3.0,
}


def _write_split(folder, split="test"):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as f:
        for gem_id, lang, dataset, system, article, summary, q4 in ROWS:
            row = {
                "gem_id": gem_id,
                "language": lang,
                "dataset": dataset,
                "system": system,
                "summary": summary,
                "article": article,
                **{f"q{q}": 1 for q in (1, 2, 3, 5, 6)},
                "q4": q4,
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _infer_record(article, summary, score, two_way=True):
    # Exactly what t5x/infer.py's write_inferences_to_file writes in score mode: with
    # LabelScoringModel (runs/infer_score.gin) the aux value log P(no) follows the score.
    record = {
        "inputs": {
            "inputs_pretokenized": f"premise: {article} hypothesis: {summary}",
            "targets_pretokenized": "1",
        },
        "score": score,
    }
    if two_way:
        record["aux"] = {"log_p_no": math.log1p(-math.exp(score))}
    return record


def _labelled(language=None):
    return [r for r in ROWS if r[6] is not None and language in (None, r[1])]


def _write_infer(path, rows, two_way=True):
    with open(path, "w", encoding="utf-8") as f:
        for gem_id, _, _, _, article, summary, _ in rows:
            record = _infer_record(article, summary, SCORES[gem_id], two_way)
            f.write(json.dumps(record) + "\n")


@pytest.fixture
def data_dir(tmp_path):
    _write_split(tmp_path / "prepared")
    return str(tmp_path / "prepared")


def test_single_file_joins_labels_and_slices_by_position(tmp_path, data_dir):
    infer = tmp_path / "seahorse_q4_score-score.jsonl-00000-of-00001"
    _write_infer(infer, _labelled())
    rows, counts = t5x_scores.convert([str(infer)], "seahorse_q4_score", data_dir, "test", "m")
    assert counts == {"examples": 4, "non_finite_scores": 0, "unchecked": 0, "log_p_target": 0}
    assert [r["gem_id"] for r in rows] == [
        "xsum-test-1",
        "mlsum_de-test-2",
        "mlsum_de-test-4",
        "xsum-test-5",
    ]
    assert [r["label"] for r in rows] == [1, 0, 1, 0]
    # The score is P(yes) = exp(log P(yes)); log P(yes) is kept beside it.
    log_p = [-0.1, -2.3, -0.05, -3.0]
    assert [r["log_p_yes"] for r in rows] == log_p
    assert [r["score"] for r in rows] == pytest.approx(np.exp(log_p), rel=1e-15)
    assert [r["score"] for r in rows] == pytest.approx(
        [0.904837, 0.100259, 0.951229, 0.049787], abs=1e-6
    )
    assert {r["score_kind"] for r in rows} == {"p_yes"}
    assert rows[1]["language"] == "de" and rows[1]["dataset"] == "mlsum"
    assert rows[1]["system"] == "mt5_xxl" and rows[0]["question"] == 4
    assert all(r["benchmark"] == "seahorse" for r in rows)
    labels = [r["label"] for r in rows]
    assert roc_auc_score(labels, [r["score"] for r in rows]) == 1.0


def test_output_of_t5x_own_model_keeps_its_log_p_target_with_a_warning(tmp_path, data_dir):
    # Before LabelScoringModel (or with a model gin of one's own): no aux.log_p_no, the score
    # is log P('1' EOS) over the whole vocabulary, written as it is.
    infer = tmp_path / "old.jsonl"
    _write_infer(infer, _labelled(), two_way=False)
    rows, counts = t5x_scores.convert([str(infer)], "seahorse_q4_score", data_dir, "test", "m")
    assert counts == {"examples": 4, "non_finite_scores": 0, "unchecked": 0, "log_p_target": 4}
    assert [r["score"] for r in rows] == [-0.1, -2.3, -0.05, -3.0]
    assert all(r["log_p_yes"] == r["score"] for r in rows)
    assert {r["score_kind"] for r in rows} == {"log_p_target"}
    (warning,) = t5x_scores.join_warnings(counts)
    assert warning.startswith("the 4 scores carry no aux.log_p_no: they are T5X's log P(target)")


def test_mixed_or_inconsistent_two_way_records_are_refused(tmp_path, data_dir):
    labelled = _labelled()
    mixed = tmp_path / "mixed.jsonl"
    _write_infer(mixed, labelled)
    lines = mixed.read_text().splitlines()
    old = json.loads(lines[2])
    del old["aux"]
    lines[2] = json.dumps(old)
    mixed.write_text("\n".join(lines) + "\n")
    with pytest.raises(errors.DataError) as e:
        t5x_scores.convert([str(mixed)], "seahorse_q4_score", data_dir, "test", "m")
    assert (e.value.line, e.value.field) == (3, "aux.log_p_no")
    assert e.value.reason.startswith("missing, unlike the first record")
    # log P(no) that is not the rest of the two-way softmax: not LabelScoringModel's scores.
    bad = tmp_path / "bad.jsonl"
    _write_infer(bad, labelled)
    lines = bad.read_text().splitlines()
    record = json.loads(lines[1])
    record["aux"]["log_p_no"] = -0.5
    lines[1] = json.dumps(record)
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(errors.DataError, match=r"bad.jsonl:2 field 'aux.log_p_no'.* = 0\.70679"):
        t5x_scores.convert([str(bad)], "seahorse_q4_score", data_dir, "test", "m")
    record["aux"] = {"log_p_no": "-0.5"}
    lines[1] = json.dumps(record)
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(errors.DataError, match="expected a number, got '-0.5'"):
        t5x_scores.convert([str(bad)], "seahorse_q4_score", data_dir, "test", "m")


def test_shards_are_interleaved_back_into_dataset_order(tmp_path, data_dir):
    labelled = _labelled()
    # infer.num_shards = 3: shard k holds examples k, k + 3, ...
    paths = []
    for k in range(3):
        path = tmp_path / f"seahorse_q4_score-score.jsonl-{k:05d}-of-00003"
        _write_infer(path, labelled[k::3])
        paths.append(str(path))
    rows, _ = t5x_scores.convert(paths[::-1], "seahorse_q4_score", data_dir, "test", "m")
    assert [r["gem_id"] for r in rows] == [r[0] for r in labelled]
    with pytest.raises(errors.UserError, match=r"shards \[1\] of 3 are missing"):
        t5x_scores.convert([paths[0], paths[2]], "seahorse_q4_score", data_dir, "test", "m")


def test_language_task_selects_that_language(tmp_path, data_dir):
    infer = tmp_path / "de.jsonl"
    _write_infer(infer, _labelled("de"))
    rows, _ = t5x_scores.convert([str(infer)], "seahorse_q4_score.de", data_dir, "test", "m")
    assert [r["gem_id"] for r in rows] == ["mlsum_de-test-2", "mlsum_de-test-4"]
    assert [r["label"] for r in rows] == [0, 1]


def test_count_mismatch_names_task_split_and_counts(tmp_path, data_dir):
    infer = tmp_path / "out.jsonl"
    _write_infer(infer, _labelled()[:3])
    with pytest.raises(errors.UserError, match="has 3 examples but .* has 4 rows labelled for Q4"):
        t5x_scores.convert([str(infer)], "seahorse_q4_score", data_dir, "test", "m")


def test_reordered_output_is_refused_with_file_and_line(tmp_path, data_dir):
    labelled = _labelled()
    infer = tmp_path / "out.jsonl"
    _write_infer(infer, [labelled[1], labelled[0], *labelled[2:]])
    with pytest.raises(errors.DataError, match=r"out.jsonl:1 field 'inputs.inputs_pretokenized'"):
        t5x_scores.convert([str(infer)], "seahorse_q4_score", data_dir, "test", "m")


def test_predict_mode_output_and_bad_task_are_refused(tmp_path, data_dir):
    infer = tmp_path / "out.jsonl"
    infer.write_text(json.dumps({"inputs": {}, "prediction": "1"}) + "\n")
    with pytest.raises(errors.DataError, match="predict-mode output"):
        t5x_scores.convert([str(infer)], "seahorse_q4_score", data_dir, "test", "m")
    with pytest.raises(errors.UserError, match="not a SEAHORSE score task") as info:
        t5x_scores.score_task("seahorse_q4")
    assert str(info.value).endswith("(the score task of seahorse_q4 is seahorse_q4_score)")
    task = t5x_scores.score_task("seahorse_all_q6_score")
    assert (task.benchmark, task.question, task.language) == ("seahorse", 6, None)
    task = t5x_scores.score_task("seahorse_q2_score.vi")
    assert (task.question, task.language, task.splits) == (2, "vi", ("train", "validation", "test"))
    assert t5x_scores.score_task("ice_q4_k2_uniform.de").splits == ("validation", "test")


def test_cli_writes_a_score_file_the_report_reads(tmp_path, data_dir, capsys):
    infer = tmp_path / "out.jsonl"
    _write_infer(infer, _labelled())
    output = tmp_path / "scores" / "q4.jsonl"
    args = ["t5x-scores", "--infer_output", str(infer), "--task", "seahorse_q4_score"]
    args += ["--data_dir", data_dir, "--output", str(output), "--metric", "q4_t5x"]
    assert cli_main(args) == 0
    assert "wrote 4 scores" in capsys.readouterr().out
    frame = scorefiles.read_score_file(output)
    assert len(frame) == 4
    assert list(frame["label"]) == [1, 0, 1, 0]
    assert set(frame["metric"]) == {"q4_t5x"}
    bad = args[:4] + ["seahorse_q9_score"] + args[5:]
    assert cli_main(bad) == 2
    assert "not a SEAHORSE score task" in capsys.readouterr().err


def test_real_t5x_infer_output(tmp_path):
    """Output of `python -m t5x.infer` with gin/runs/infer_score.gin (a tiny mT5 trained with
    gin/experiments/seahorse_q4_small.gin on the demo data), its first 11 lines, and the 12
    prepared validation rows they came from (row 8 has no Q4 label)."""
    folder = TESTDATA / "t5x_infer"
    infer = folder / "seahorse_q4_score-score.jsonl-00000-of-00001"
    rows, counts = t5x_scores.convert(
        [str(infer)], "seahorse_q4_score", str(folder / "prepared"), "validation", "tiny"
    )
    prepared = [json.loads(line) for line in (folder / "prepared" / "validation.jsonl").open()]
    labelled = [r for r in prepared if r["q4"] is not None]
    assert counts == {"examples": 11, "non_finite_scores": 0, "unchecked": 0, "log_p_target": 11}
    assert [r["gem_id"] for r in rows] == [r["gem_id"] for r in labelled]
    assert [r["system"] for r in rows] == [r["system"] for r in labelled]
    assert [r["label"] for r in rows] == [0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 0]
    raw = [json.loads(line)["score"] for line in infer.open()]
    assert [r["score"] for r in rows] == raw
    assert rows[0]["score"] == pytest.approx(-12.895427703857422)
    assert {r["score_kind"] for r in rows} == {"log_p_target"}


def test_real_t5x_infer_output_of_label_scoring_model_is_the_p_yes_of_score(tmp_path):
    """`python -m t5x.infer` with gin/runs/infer_score.gin (LabelScoringModel, float32) on
    `checkpoint_40` of the smoke model (docs/tpu.md: smoke/train.gin on the demo data), test
    split: its first 22 lines, the 23 prepared test rows they came from (row 22 has no Q4
    label), and `seahorse-t5x score --vocab demo --input_length 512` on the same checkpoint
    and the 22 labelled rows."""
    folder = TESTDATA / "t5x_infer_label_scoring"
    infer = folder / "seahorse_q4_score-score.jsonl-00000-of-00001"
    rows, counts = t5x_scores.convert(
        [str(infer)], "seahorse_q4_score", str(folder / "prepared"), "test", "smoke_t5x"
    )
    assert counts == {"examples": 22, "non_finite_scores": 0, "unchecked": 0, "log_p_target": 0}
    prepared = [json.loads(line) for line in (folder / "prepared" / "test.jsonl").open()]
    labelled = [r for r in prepared if r["q4"] is not None]
    assert len(prepared) == 23 and len(labelled) == 22
    assert [(r["gem_id"], r["system"]) for r in rows] == [
        (r["gem_id"], r["system"]) for r in labelled
    ]
    assert [r["label"] for r in rows] == [r["q4"] for r in labelled]
    records = [json.loads(line) for line in infer.open()]
    log_p_yes = np.array([r["score"] for r in records])
    log_p_no = np.array([r["aux"]["log_p_no"] for r in records])
    np.testing.assert_allclose(np.exp(log_p_yes) + np.exp(log_p_no), 1.0, atol=1e-6)
    assert [r["score"] for r in rows] == pytest.approx(np.exp(log_p_yes), rel=1e-15)
    # The same P(yes) as `score` (float32 on both sides).
    scored = [json.loads(line) for line in (folder / "score_output.jsonl").open()]
    assert [(r["gem_id"], r["system"]) for r in scored] == [
        (r["gem_id"], r["system"]) for r in rows
    ]
    delta = np.abs(np.array([r["score"] for r in rows]) - [r["score"] for r in scored])
    assert delta.max() < 1e-5


def test_output_without_inputs_is_not_joined_blindly(tmp_path, data_dir):
    infer = tmp_path / "scores.jsonl"
    infer.write_text("".join(json.dumps({"score": -0.5 - i}) + "\n" for i in range(4)))
    with pytest.raises(errors.DataError) as e:
        t5x_scores.convert([str(infer)], "seahorse_q4_score", data_dir, "test", "m")
    assert (e.value.line, e.value.field) == (1, "inputs.inputs_pretokenized")
    assert "--join_by_position" in e.value.reason
    rows, counts = t5x_scores.convert(
        [str(infer)], "seahorse_q4_score", data_dir, "test", "m", join_by_position=True
    )
    assert counts["unchecked"] == 4
    assert [r["score"] for r in rows] == [-0.5, -1.5, -2.5, -3.5]
    assert [r["label"] for r in rows] == [1, 0, 1, 0]


# --------------------------------------------------------------------------- the deprecated path


def test_import_scores_t5x_infer_notes_it_is_deprecated_and_writes_the_same_bytes(tmp_path, capsys):
    folder = TESTDATA / "t5x_infer_label_scoring"
    infer = str(folder / "seahorse_q4_score-score.jsonl-00000-of-00001")
    common = ["--task", "seahorse_q4_score", "--data_dir", str(folder / "prepared")]
    common += ["--split", "test", "--metric", "tiny"]
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    assert cli_main(["t5x-scores", "--infer_output", infer, *common, "--output", str(new)]) == 0
    assert capsys.readouterr().err == ""
    assert cli_main(["import-scores", "--t5x_infer", infer, *common, "--output", str(old)]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "seahorse-t5x import-scores: note: --t5x_infer is deprecated; use seahorse-t5x t5x-scores\n"
    )
    assert captured.out == f"wrote 22 scores for seahorse_q4_score (test) to {old}\n"
    assert old.read_bytes() == new.read_bytes()
    assert len(new.read_text().splitlines()) == 22


# --------------------------------------------------------------------------- a rating set


# The rating set `tone`'s test split, line by line: four rows labelled for `polite`, one
# unlabelled, two dropped (not JSON; "yes" is not a label), as its tasks read them.
TONE_LINES = [
    {
        "article": "The shop opened late.",
        "summary": "Thanks for waiting!",
        "polite": 1,
        "language": "en",
        "system": "bot_a",
        "gem_id": "t-1",
    },
    {
        "article": "Der Laden ist zu.",
        "summary": "Geh weg.",
        "polite": 0,
        "language": "de",
        "system": "bot_b",
    },
    {"article": "It may rain.", "summary": "Maybe.", "polite": None, "language": "en"},
    "this line is not JSON",
    {"article": "She asked twice.", "summary": '"Please," she said.', "polite": 1, "id": 7},
    {"article": "Fine weather.", "summary": "Fine.", "polite": "yes", "language": "en"},
    {
        "article": "The bus left.",
        "summary": "Sure,  thanks.",
        "polite": 0,
        "language": "en",
        "dataset": "chat",
    },
]


def _write_tone(folder: pathlib.Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [x if isinstance(x, str) else json.dumps(x) for x in TONE_LINES]
    (folder / "test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def tone(tmp_path_factory):
    """The rating set `tone` registered with the demo vocabulary (tasks need TensorFlow)."""
    from seahorse_t5x.tasks import register_rating_tasks, remove_rating_tasks

    folder = tmp_path_factory.mktemp("tone")
    _write_tone(folder)
    register_rating_tasks(
        "tone",
        folder,
        ["polite"],
        languages=["en", "de"],
        vocabulary="demo",
        splits=("validation", "test"),
    )
    try:
        yield folder
    finally:
        remove_rating_tasks("tone")


def _t5x_records(task: str, scores: list[float]) -> list[dict]:
    """What t5x/infer.py writes in score mode for `task`'s test examples: their pretokenized
    features, from the SeqIO task itself, and a score each."""
    import seqio

    dataset = seqio.get_mixture_or_task(task).get_dataset(
        {"inputs": 128, "targets": 4}, split="test", shuffle=False
    )
    examples = list(dataset.as_numpy_iterator())
    assert len(examples) == len(scores)
    return [
        {
            "inputs": {
                "inputs_pretokenized": ex["inputs_pretokenized"].decode(),
                "targets_pretokenized": ex["targets_pretokenized"].decode(),
            },
            "score": score,
            "aux": {"log_p_no": math.log1p(-math.exp(score))},
        }
        for ex, score in zip(examples, scores, strict=True)
    ]


def _write_records(path: pathlib.Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_a_rating_tasks_output_is_joined_to_the_sets_rows(tone, tmp_path):
    records = _t5x_records("tone_polite_score", [-0.1, -2.0, -0.3, -1.5])
    assert records[0]["inputs"] == {
        "inputs_pretokenized": "premise: The shop opened late. hypothesis: Thanks for waiting!",
        "targets_pretokenized": "1",
    }
    infer = _write_records(tmp_path / "tone_polite_score-score.jsonl-00000-of-00001", records)
    rows, counts = t5x_scores.convert([infer], "tone_polite_score", None, "test", "tone_t5x")
    assert counts == {
        "examples": 4,
        "non_finite_scores": 0,
        "unchecked": 0,
        "log_p_target": 0,
        "dropped_rows": 2,
    }
    common = {"metric": "tone_t5x", "benchmark": "tone", "question": "polite"}
    tail = {"task": "tone_polite_score", "split": "test"}
    assert rows == [
        {
            **common,
            "label": 1,
            "score": math.exp(-0.1),
            "log_p_yes": -0.1,
            "score_kind": "p_yes",
            "label_kind": "binary",
            "gem_id": "t-1",
            "language": "en",
            "system": "bot_a",
            **tail,
        },
        {
            **common,
            "label": 0,
            "score": math.exp(-2.0),
            "log_p_yes": -2.0,
            "score_kind": "p_yes",
            "label_kind": "binary",
            "gem_id": "test:2",
            "language": "de",
            "system": "bot_b",
            **tail,
        },
        {
            **common,
            "label": 1,
            "score": math.exp(-0.3),
            "log_p_yes": -0.3,
            "score_kind": "p_yes",
            "label_kind": "binary",
            "gem_id": "7",
            **tail,
        },
        {
            **common,
            "label": 0,
            "score": math.exp(-1.5),
            "log_p_yes": -1.5,
            "score_kind": "p_yes",
            "label_kind": "binary",
            "gem_id": "test:7",
            "language": "en",
            "dataset": "chat",
            **tail,
        },
    ]
    # --data_dir, when given, is the folder read (a copy of the set's rows, here).
    copy = tmp_path / "copy"
    _write_tone(copy)
    again, _ = t5x_scores.convert([infer], "tone_polite_score", str(copy), "test", "tone_t5x")
    assert again == rows
    path = tmp_path / "tone.jsonl"
    scorefiles.write_score_file(path, rows)
    assert scorefiles.read_score_file(path)["label"].tolist() == [1, 0, 1, 0]


def test_a_rating_tasks_language_and_multi_question_variants(tone, tmp_path):
    infer = _write_records(tmp_path / "en.jsonl", _t5x_records("tone_polite_score.en", [-1, -2]))
    rows, _ = t5x_scores.convert([infer], "tone_polite_score.en", None, "test", "m")
    assert [(r["gem_id"], r["label"]) for r in rows] == [("t-1", 1), ("test:7", 0)]
    records = _t5x_records("tone_all_polite_score", [-1, -2, -3, -4])
    assert records[1]["inputs"]["inputs_pretokenized"] == (
        "question: polite premise: Der Laden ist zu. hypothesis: Geh weg."
    )
    infer = _write_records(tmp_path / "all.jsonl", records)
    rows, _ = t5x_scores.convert([infer], "tone_all_polite_score", None, "test", "m")
    assert [r["label"] for r in rows] == [1, 0, 1, 0]
    assert {r["question"] for r in rows} == {"polite"}


def test_a_rating_tasks_output_out_of_order_or_split_is_refused(tone, tmp_path):
    records = _t5x_records("tone_polite_score", [-0.1, -2.0, -0.3, -1.5])
    infer = _write_records(tmp_path / "out.jsonl", [records[1], records[0], *records[2:]])
    with pytest.raises(errors.DataError) as info:
        t5x_scores.convert([infer], "tone_polite_score", None, "test", "m")
    assert str(info.value) == (
        f"{infer}:1 field 'inputs.inputs_pretokenized': does not end with the summary of row 1 "
        "labelled for 'polite' in test.jsonl for tone_polite_score (gem_id 't-1'): the output "
        "and the split file are not in the same order"
    )
    infer = _write_records(tmp_path / "short.jsonl", records[:3])
    with pytest.raises(errors.UserError) as info:
        t5x_scores.convert([infer], "tone_polite_score.en", None, "test", "m")
    assert str(info.value) == (
        f"the infer output has 3 examples but {tone / 'test.jsonl'} has 2 rows labelled for "
        "'polite' in en: was it inferred with task tone_polite_score.en, split test and this "
        "data folder?"
    )
    with pytest.raises(errors.UserError) as info:
        t5x_scores.convert([infer], "tone_polite_score", None, "train", "m")
    assert str(info.value) == "--split 'train': tone_polite_score has the splits validation, test"
    for name, hint in (
        ("tone_polite", "the score task of tone_polite is tone_polite_score"),
        ("tone_all_score", "tone_all_score is a mixture"),
    ):
        with pytest.raises(errors.UserError, match="not a SEAHORSE score task") as info:
            t5x_scores.score_task(name)
        assert hint in str(info.value)


def test_t5x_scores_module_registers_the_rating_set_first(tmp_path, capsys, monkeypatch):
    import sys

    from seahorse_t5x.tasks import remove_rating_tasks

    folder = tmp_path / "voice"
    _write_tone(folder)
    module = tmp_path / "voice_tasks.py"
    module.write_text(
        "from seahorse_t5x.tasks import register_rating_tasks\n"
        f"register_rating_tasks('voice', {str(folder)!r}, ['polite'], languages=[], "
        "vocabulary='demo')\n"
    )
    infer = tmp_path / "voice_polite_score-score.jsonl-00000-of-00001"
    infer.write_text(
        "".join(
            json.dumps(
                {
                    "inputs": {"inputs_pretokenized": f"premise: a hypothesis: {s}"},
                    "score": -1.0,
                    "aux": {"log_p_no": math.log1p(-math.exp(-1.0))},
                }
            )
            + "\n"
            for s in ("Thanks for waiting!", "Geh weg.", '"Please," she said.', "Sure, thanks.")
        )
    )
    out = tmp_path / "voice.jsonl"
    argv = ["t5x-scores", "--infer_output", str(infer), "--task", "voice_polite_score"]
    argv += ["--output", str(out), "--metric", "voice_t5x"]
    assert cli_main(argv) == 2
    assert "--module FILE.py imports the module that registers it" in capsys.readouterr().err
    monkeypatch.delitem(sys.modules, "voice_tasks", raising=False)
    try:
        assert cli_main([*argv, "--module", str(module)]) == 0
    finally:
        remove_rating_tasks("voice")
        sys.modules.pop("voice_tasks", None)
    captured = capsys.readouterr()
    assert captured.out == f"wrote 4 scores for voice_polite_score (test) to {out}\n"
    assert captured.err == (
        "warning: 2 rows of the rating split file were dropped, as the task drops them "
        "(seahorse_t5x.tasks.ratings.drop_report lists them)\n"
    )
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["benchmark"], r["question"], r["label"]) for r in written] == [
        ("voice", "polite", 1),
        ("voice", "polite", 0),
        ("voice", "polite", 1),
        ("voice", "polite", 0),
    ]

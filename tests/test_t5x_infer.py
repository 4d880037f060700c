"""The T5X score-mode converter on fixtures in t5x/infer.py's output format."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from seahorse_t5x import errors, t5x_scores
from seahorse_t5x.cli import main as cli_main
from seahorse_t5x.evaluation import scorefiles

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


def _infer_record(article, summary, score):
    # Exactly what t5x/infer.py's write_inferences_to_file writes in score mode.
    return {
        "inputs": {
            "inputs_pretokenized": f"premise: {article} hypothesis: {summary}",
            "targets_pretokenized": "1",
        },
        "score": score,
    }


def _labelled(language=None):
    return [r for r in ROWS if r[6] is not None and language in (None, r[1])]


def _write_infer(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for gem_id, _, _, _, article, summary, _ in rows:
            f.write(json.dumps(_infer_record(article, summary, SCORES[gem_id])) + "\n")


@pytest.fixture
def data_dir(tmp_path):
    _write_split(tmp_path / "prepared")
    return str(tmp_path / "prepared")


def test_single_file_joins_labels_and_slices_by_position(tmp_path, data_dir):
    infer = tmp_path / "seahorse_q4_score-score.jsonl-00000-of-00001"
    _write_infer(infer, _labelled())
    rows, counts = t5x_scores.convert([str(infer)], "seahorse_q4_score", data_dir, "test", "m")
    assert counts == {"examples": 4, "non_finite_scores": 0, "unchecked": 0}
    assert [r["gem_id"] for r in rows] == [
        "xsum-test-1",
        "mlsum_de-test-2",
        "mlsum_de-test-4",
        "xsum-test-5",
    ]
    assert [r["label"] for r in rows] == [1, 0, 1, 0]
    assert [r["score"] for r in rows] == [-0.1, -2.3, -0.05, -3.0]
    assert rows[1]["language"] == "de" and rows[1]["dataset"] == "mlsum"
    assert rows[1]["system"] == "mt5_xxl" and rows[0]["question"] == 4
    assert all(r["benchmark"] == "seahorse" and r["log_p_yes"] == r["score"] for r in rows)
    # exp() is monotone: ROC-AUC on log P equals ROC-AUC on P.
    labels = [r["label"] for r in rows]
    scores = np.array([r["score"] for r in rows])
    assert roc_auc_score(labels, scores) == roc_auc_score(labels, np.exp(scores)) == 1.0


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
    with pytest.raises(errors.UserError, match="not a SEAHORSE score task"):
        t5x_scores.parse_task("seahorse_q4")
    assert t5x_scores.parse_task("seahorse_all_q6_score") == (6, None)
    assert t5x_scores.parse_task("seahorse_q2_score.vi") == (2, "vi")


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
    folder = TESTDATA / "t5x_scores"
    infer = folder / "seahorse_q4_score-score.jsonl-00000-of-00001"
    rows, counts = t5x_scores.convert(
        [str(infer)], "seahorse_q4_score", str(folder / "prepared"), "validation", "tiny"
    )
    prepared = [json.loads(line) for line in (folder / "prepared" / "validation.jsonl").open()]
    labelled = [r for r in prepared if r["q4"] is not None]
    assert counts == {"examples": 11, "non_finite_scores": 0, "unchecked": 0}
    assert [r["gem_id"] for r in rows] == [r["gem_id"] for r in labelled]
    assert [r["system"] for r in rows] == [r["system"] for r in labelled]
    assert [r["label"] for r in rows] == [0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 0]
    raw = [json.loads(line)["score"] for line in infer.open()]
    assert [r["score"] for r in rows] == raw
    assert rows[0]["score"] == pytest.approx(-12.895427703857422)


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

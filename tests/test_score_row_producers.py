"""Every producer of score files builds its rows with `scorefiles.score_row`.

Each producer runs on its fixtures with `score_row` watched: every row it returns must be an
object `score_row` built (none assembled by hand), and its fields in the builder's order:
the required fields, then (where present) the slice fields together in their own order.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from seahorse_t5x import constants
from seahorse_t5x.data import benchmarks, scorefiles, splits
from seahorse_t5x.evaluation import task_rows
from seahorse_t5x.scoring import baselines, import_scores, t5x_scores, task_examples

TESTDATA = pathlib.Path(__file__).parent / "testdata"
PREPARED = TESTDATA / "import_scores" / "prepared"
T5X_INFER = TESTDATA / "t5x_infer"


@pytest.fixture
def built(monkeypatch) -> list[dict]:
    """The rows `score_row` returns while a test runs, in call order."""
    rows: list[dict] = []
    real = scorefiles.score_row

    def watched(**fields):
        row = real(**fields)
        rows.append(row)
        return row

    monkeypatch.setattr(scorefiles, "score_row", watched)
    return rows


def _assert_built(produced: list[dict], built: list[dict], expected_rows: int) -> None:
    assert len(produced) == expected_rows
    assert len(built) == expected_rows
    assert all(p is b for p, b in zip(produced, built, strict=True))
    for row in produced:
        keys = list(row)
        assert keys[:5] == list(scorefiles.REQUIRED_FIELDS), keys
        slices = [k for k in keys if k in constants.SLICE_FIELDS]
        assert slices == [k for k in constants.SLICE_FIELDS if k in row], keys
        if slices:
            start = keys.index(slices[0])
            assert keys[start : start + len(slices)] == slices, keys


def test_evaluate_rows(built):
    examples = task_examples.TaskExamples(
        "seahorse_q4_score", 4, [np.zeros(3, np.int32)] * 2, np.array([1.0, 0.0]),
        [{"gem_id": "a", "language": "en", "dataset": "xsum", "system": "s", "split": "test"},
         {"gem_id": "b", "language": "de", "dataset": "mlsum", "system": "s"}],
    )  # fmt: skip
    rows = task_rows.score_rows(examples, np.array([0.25, 0.75]), "m")
    _assert_built(rows, built, 2)
    assert list(rows[0]) == [*scorefiles.REQUIRED_FIELDS, *constants.SLICE_FIELDS, "split"]


def test_t5x_scores_rows(built):
    infer = T5X_INFER / "seahorse_q4_score-score.jsonl-00000-of-00001"
    rows, _ = t5x_scores.convert(
        [str(infer)], "seahorse_q4_score", str(T5X_INFER / "prepared"), "validation", "tiny"
    )
    _assert_built(rows, built, 11)
    details = ["log_p_yes", "score_kind"]
    tail = [*constants.SLICE_FIELDS, "task", "split"]
    assert list(rows[0]) == [*scorefiles.REQUIRED_FIELDS, *details, *tail]


def test_baselines_rows(built):
    rows = splits.read_rows(splits.split_path(PREPARED, "test"))
    labelled = sum(r[f"q{q}"] is not None for r in rows for q in constants.QUESTIONS)
    rouge = baselines.seahorse_score_rows(rows, baselines.ROUGE_L, [0.5] * len(rows))
    _assert_built(rouge, built, labelled)
    built.clear()
    majority = baselines.majority_score_rows(rows, dict.fromkeys(constants.QUESTIONS, 0.5))
    _assert_built(majority, built, labelled)
    built.clear()
    examples = benchmarks.read_mface(TESTDATA / "benchmarks" / "mface.csv", "quality").examples
    mface = baselines.benchmark_score_rows(examples, "m", "mface", [0.5] * len(examples))
    _assert_built(mface, built, len(examples))
    assert list(mface[0]) == [*scorefiles.REQUIRED_FIELDS, *constants.SLICE_FIELDS, "label_binary"]


def test_import_scores_rows(built):
    key = ("article", "summary")
    external = import_scores.read_external_scores(
        TESTDATA / "import_scores" / "tigerscore.json", key
    )
    items = import_scores.seahorse_items(PREPARED, "test")
    built.clear()
    rows, join = import_scores.join_scores(external, items, key, "tigerscore", "seahorse")
    _assert_built(rows, built, join.matched_items)
    assert join.matched_items == 97


def test_metal_llm_score_rows(built):
    result = import_scores.metal_llm_scores(str(TESTDATA / "import_scores" / "metal_llm.json"))
    _assert_built(result.examples, built, len(result.examples))
    assert list(result.examples[0]) == [
        *scorefiles.REQUIRED_FIELDS, "llm_score", *constants.SLICE_FIELDS, "xlsum_id",
    ]  # fmt: skip


def test_written_rows_keep_the_builders_order(tmp_path):
    infer = T5X_INFER / "seahorse_q4_score-score.jsonl-00000-of-00001"
    rows, _ = t5x_scores.convert(
        [str(infer)], "seahorse_q4_score", str(T5X_INFER / "prepared"), "validation", "tiny"
    )
    path = tmp_path / "t5x.jsonl"
    assert scorefiles.write_score_file(path, rows) == len(rows)
    written = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [list(r) for r in written] == [list(r) for r in rows]


def test_score_metric_rows(built, tmp_path):
    # `score --metric` (and `score_file(metric=...)`): the question columns joined with the
    # labelled input rows; an unlabelled row and a bad row give none.
    from seahorse_t5x.inference import columns

    source = tmp_path / "pairs.jsonl"
    inputs = [
        {"gem_id": "a", "language": "en", "dataset": "xsum", "system": "s", "q4": 1},
        {"gem_id": "b", "language": "de", "dataset": "mlsum", "system": "s", "q4": None},
        {"gem_id": "c", "language": "en", "dataset": "xsum", "system": "t", "q4": 0},
    ]
    lines = [json.dumps({"article": "A.", "summary": "S.", **r}) for r in inputs]
    source.write_text("\n".join([*lines, '{"article": "no summary"}']) + "\n")
    output = tmp_path / "scores.jsonl"
    scores = [0.9, 0.5, 0.2, None]
    columns.column_path(output, 4).write_text(
        "".join(json.dumps({"score": s}) + "\n" for s in scores)
    )
    joined = columns.join_columns(source, output, [4], "m", "seahorse")
    assert joined.rows == 2
    written = [json.loads(line) for line in output.read_text().splitlines()]
    # Read back from the file: equal to the rows built, field for field and in order.
    assert len(built) == 2 and written == built
    assert [list(r) for r in written] == [list(b) for b in built]
    assert list(written[0]) == [*scorefiles.REQUIRED_FIELDS, "summary", *constants.SLICE_FIELDS]
    assert [(r["gem_id"], r["label"], r["score"]) for r in written] == [
        ("a", 1, 0.9),
        ("c", 0, 0.2),
    ]

"""`t5x-explanations`: T5X predict-mode output of the explanation tasks -> `explain`'s rows.

The fixture tests/testdata/t5x_infer/metricinstruct-predict.jsonl-00000-of-00001 (and its two
shards under sharded/) was written by T5X's own writer, `t5x.infer.write_inferences_to_file`
(T5X commit cc342d4, predict mode), over the dataset of the task `metricinstruct` on
tests/testdata/metric_instruct/mix_instruct_sample.json at T5X's lengths (1024/512), with
predictions encoded in the demo explainer's vocabulary and decoded by T5X (line breaks lost,
as SentencePiece loses them). Rows 1, 4, 6, 7 and 9 predict the row's own analysis; row 2
says "0 errors"; row 3 is prose; row 5 keeps the first of two errors under a first line
stating two; row 8 is cut at 60 tokens (no EOS).
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from seahorse_t5x import cli, errors
from seahorse_t5x.data import metric_instruct, scorefiles
from seahorse_t5x.scoring import t5x_explanations

TESTDATA = pathlib.Path(__file__).parent / "testdata"
SAMPLE = TESTDATA / "metric_instruct" / "mix_instruct_sample.json"
MALFORMED = TESTDATA / "metric_instruct" / "malformed.jsonl"
INFER = TESTDATA / "t5x_infer" / "metricinstruct-predict.jsonl-00000-of-00001"
SHARDS = sorted((TESTDATA / "t5x_infer" / "sharded").glob("metricinstruct-predict.jsonl-*"))
SCORE_MODE = TESTDATA / "t5x_infer" / "seahorse_q4_score-score.jsonl-00000-of-00001"
# The rows' lines in the sample (a JSON array: each row's opening `{`).
SAMPLE_LINES = (2, 9, 16, 23, 30, 37, 44, 51, 58)
PREDICTS_TRUTH = (0, 3, 5, 6, 8)  # positions whose prediction is the row's own analysis
UNPARSED = {2: "no first line", 7: "Severity 1"}
# A prediction whose first line states 2 errors where 1 follows: scored by its error, noted.
DISAGREEING = {4: "the first line states 2 errors; 1 follows"}


def _records(path: pathlib.Path = INFER) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: pathlib.Path, records: list[dict]) -> pathlib.Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _true_score(row: dict) -> float:
    """Minus the sum of the `Score reduction N: X` values of a sample row's analysis, read
    with a regular expression (independent of the parser)."""
    return -sum(float(x) for x in re.findall(r"Score reduction \d+: *([\d.]+)", row["errors"]))


def _without_explanation(error: dict) -> dict:
    return {k: v for k, v in error.items() if k != "explanation"}


def test_fixture_is_t5x_predict_output_of_the_sample():
    records = _records()
    assert len(records) == 9
    for record in records:
        # T5X's default fields in predict mode: the pretokenized features and the text.
        assert list(record) == ["inputs", "prediction"]
        assert list(record["inputs"]) == ["inputs_pretokenized", "targets_pretokenized"]
    assert [len(_records(p)) for p in SHARDS] == [5, 4]


def test_rows_are_explains_rows_joined_in_file_order():
    rows, result = t5x_explanations.convert([str(INFER)], SAMPLE)
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert result.task == "metricinstruct"
    assert (result.rows, result.checked, result.parsed, result.unparsed) == (9, 9, 7, 2)
    assert result.dropped == 0 and result.labelled == 0 and result.disagreeing == 1
    assert [r["id"] for r in rows] == [f"mix_instruct_sample:{n}" for n in SAMPLE_LINES]
    for position in PREDICTS_TRUTH:
        row = rows[position]
        assert row["score"] == pytest.approx(_true_score(sample[position]))
        # The demo explainer's vocabulary has no ';': T5X decoded it as its unknown piece.
        assert [_without_explanation(e) for e in row["errors"]] == [
            _without_explanation(e) for e in row["true_errors"]
        ]
        assert row["parse_error"] is None
    assert "plant \u2047  it does not say" in rows[0]["errors"][0]["explanation"]
    assert rows[1]["score"] == 0.0 and rows[1]["errors"] == []
    assert len(rows[1]["true_errors"]) == sample[1]["errors"].count("Error location")
    for position, reason in UNPARSED.items():
        assert rows[position]["score"] is None and rows[position]["errors"] is None
        assert reason in rows[position]["parse_error"]
    # The text as T5X decoded it, kept whole; the unparsed named by file and line.
    for position, note in DISAGREEING.items():
        assert rows[position]["score"] == -sum(
            e["score_reduction"] for e in rows[position]["errors"]
        )
        assert len(rows[position]["errors"]) == 1 and rows[position]["parse_note"] == note
        assert rows[position]["parse_error"] is None
    assert all(rows[p]["parse_note"] is None for p in PREDICTS_TRUTH)
    assert rows[2]["explanation"] == "The summary reads well and covers the article."
    assert [p.split(": ", 1)[0] for p in result.problems] == [
        f"{INFER}:{p + 1} ({SAMPLE}:{SAMPLE_LINES[p]})" for p in UNPARSED
    ]
    # explain's row fields, in its order.
    assert list(rows[0]) == [
        "id",
        "score",
        "explanation",
        "errors",
        "parse_error",
        "parse_note",
        "true_errors",
    ]


def test_shards_are_put_back_in_dataset_order():
    whole, _ = t5x_explanations.convert([str(INFER)], SAMPLE)
    sharded, result = t5x_explanations.convert([str(p) for p in reversed(SHARDS)], SAMPLE)
    assert sharded == whole and result.checked == 9


def test_metric_writes_score_file_rows_with_the_true_score_as_label(tmp_path):
    rows, result = t5x_explanations.convert(
        [str(INFER)], SAMPLE, metric="smoke_t5x", benchmark="mi_sample"
    )
    assert result.labelled == 9
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert [r["label"] for r in rows] == pytest.approx([_true_score(r) for r in sample])
    output = tmp_path / "scores.jsonl"
    t5x_explanations.write_rows(output, rows)
    frame = scorefiles.read_score_file(output)
    assert len(frame) == 9
    assert set(frame["metric"]) == {"smoke_t5x"} and set(frame["benchmark"]) == {"mi_sample"}
    assert frame["score"].isna().sum() == 2


def test_prompt_is_the_tasks_own(tmp_path):
    from seahorse_t5x.tasks import explanations

    items, dropped = t5x_explanations.task_inputs(SAMPLE, None)
    examples = list(explanations.examples(str(SAMPLE)))
    assert dropped == 0 and len(items) == len(examples) == 9
    for item, example in zip(items, examples, strict=True):
        assert t5x_explanations.task_prompt(item) == example["inputs_pretokenized"]
        assert item.ids["id"] == example["id"]
    # A file with bad rows: the task's rows, and the bad ones counted as the reader counts.
    items, dropped = t5x_explanations.task_inputs(MALFORMED, None)
    assert [i.ids["id"] for i in items] == [e["id"] for e in explanations.examples(str(MALFORMED))]
    assert dropped == metric_instruct.read_file(MALFORMED).rows_dropped > 0


def test_a_task_type_joins_that_types_rows(tmp_path):
    records = _records()[3:6]  # the translation rows
    infer = _write(tmp_path / "metricinstruct.translation-predict.jsonl-00000-of-00001", records)
    rows, result = t5x_explanations.convert([str(infer)], SAMPLE)
    assert result.task == "metricinstruct.translation"
    assert [r["id"] for r in rows] == [f"mix_instruct_sample:{n}" for n in SAMPLE_LINES[3:6]]
    # The same records under the name of every row: one record per row is checked first.
    every = _write(tmp_path / "metricinstruct-predict.jsonl-00000-of-00001", records)
    with pytest.raises(errors.UserError, match=r"3 predictions for the 9 rows of "):
        t5x_explanations.convert([str(every)], SAMPLE)


def test_records_out_of_order_are_refused_by_their_prompt(tmp_path):
    records = _records()
    records[3], records[4] = records[4], records[3]
    infer = _write(tmp_path / "metricinstruct-predict.jsonl-00000-of-00001", records)
    with pytest.raises(errors.DataError) as raised:
        t5x_explanations.convert([str(infer)], SAMPLE)
    assert str(raised.value).startswith(f"{infer}:4 field 'inputs.inputs_pretokenized': ")
    assert f"is not the prompt of {SAMPLE}:23 (id 'mix_instruct_sample:23')" in str(raised.value)


def test_a_target_or_id_of_another_row_is_refused(tmp_path):
    records = _records()
    records[0]["inputs"]["targets_pretokenized"] = records[1]["inputs"]["targets_pretokenized"]
    infer = _write(tmp_path / "metricinstruct-predict.jsonl-00000-of-00001", records)
    with pytest.raises(errors.DataError, match=r":1 field 'inputs.targets_pretokenized'"):
        t5x_explanations.convert([str(infer)], SAMPLE)
    # `id` written by input_fields_to_include: checked when present.
    records = _records()
    for record, line in zip(records, SAMPLE_LINES, strict=True):
        record["inputs"]["id"] = f"mix_instruct_sample:{line}"
    _write(infer, records)
    assert t5x_explanations.convert([str(infer)], SAMPLE)[1].checked == 9
    records[8]["inputs"]["id"] = "mix_instruct_sample:2"
    _write(infer, records)
    with pytest.raises(errors.DataError, match=r":9 field 'inputs.id': is not the id of"):
        t5x_explanations.convert([str(infer)], SAMPLE)


def test_output_without_prompts_needs_join_by_position(tmp_path):
    records = _records()
    for record in records:
        del record["inputs"]
    infer = _write(tmp_path / "metricinstruct-predict.jsonl-00000-of-00001", records)
    with pytest.raises(errors.DataError, match=r":1 field 'inputs.inputs_pretokenized': missing"):
        t5x_explanations.convert([str(infer)], SAMPLE)
    rows, result = t5x_explanations.convert([str(infer)], SAMPLE, join_by_position=True)
    assert (result.rows, result.checked, result.parsed) == (9, 0, 7)
    assert rows == t5x_explanations.convert([str(INFER)], SAMPLE)[0]


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("metricinstruct.poetry", "'metricinstruct.poetry' is not an explanation task"),
        ("metricinstruct.summarization", "--task metricinstruct.summarization but "),
    ],
)
def test_bad_task_is_refused(task, message):
    with pytest.raises(errors.UserError, match=re.escape(message)):
        t5x_explanations.convert([str(INFER)], SAMPLE, task=task)


def test_task_is_needed_when_the_file_name_does_not_say_it(tmp_path):
    infer = _write(tmp_path / "predictions.jsonl", _records())
    with pytest.raises(errors.UserError, match="--task is needed"):
        t5x_explanations.convert([str(infer)], SAMPLE)
    assert t5x_explanations.convert([str(infer)], SAMPLE, task="metricinstruct")[1].rows == 9


def test_score_mode_output_is_refused_with_a_hint(tmp_path):
    with pytest.raises(errors.DataError) as raised:
        t5x_explanations.convert([str(SCORE_MODE)], SAMPLE, task="seahorse_q4_score")
    assert str(raised.value).startswith(f"{SCORE_MODE}:1 field 'prediction': ")
    assert "score-mode output? run t5x.infer with runs/infer_explain.gin" in str(raised.value)


def test_command_writes_the_rows(tmp_path, capsys):
    output = tmp_path / "explained.jsonl"
    argv = ["t5x-explanations", "--infer_output", *map(str, SHARDS), "--input", str(SAMPLE)]
    argv_rows = [*argv, "--output", str(output), "--score_file", "--metric", "smoke_t5x"]
    assert cli.main(argv_rows) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "wrote 9 explanations of metricinstruct (7 parsed, 2 did not parse and have a null "
        "score, 1 parsed with a first line that disagrees with their errors (scored by the "
        f"errors, see parse_note)) to {output}"
    )
    assert len(lines) == 3 and all(line.startswith("  did not parse: ") for line in lines[1:])
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert rows == t5x_explanations.convert([str(INFER)], SAMPLE, metric="smoke_t5x")[0]
    # --rows_benchmark names what --score_file writes.
    assert cli.main([*argv, "--output", str(output), "--rows_benchmark", "b"]) == 2
    assert "give --score_file --metric NAME too" in capsys.readouterr().err
    # --metric alone, the older way to ask for score-file rows: the same rows after a note.
    output.unlink()
    assert cli.main([*argv, "--output", str(output), "--metric", "smoke_t5x"]) == 0
    assert capsys.readouterr().err == (
        "seahorse-t5x t5x-explanations: note: --metric without --score_file is deprecated; "
        "use --score_file --metric NAME\n"
    )
    assert [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()] == rows

"""MetricInstruct's files read and checked (`data/metric_instruct.py`).

Fixtures in tests/testdata/metric_instruct/: `mix_instruct_sample.json`, nine rows in the
release's format (a JSON array written as TIGERScore's scripts write one, indent 4);
`malformed.jsonl`, JSON Lines with each kind of defect once (and two good rows);
`malformed_array.json`, an array with an element that is not an object and a bad row.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from seahorse_t5x import errors
from seahorse_t5x.data import metric_instruct
from seahorse_t5x.formats import error_analysis

TESTDATA = pathlib.Path(__file__).parent / "testdata" / "metric_instruct"
SAMPLE = TESTDATA / "mix_instruct_sample.json"
MALFORMED = TESTDATA / "malformed.jsonl"
MALFORMED_ARRAY = TESTDATA / "malformed_array.json"

# Every dropped row of malformed.jsonl: (line, field, reason).
MALFORMED_DROPS = [
    (2, None, "not valid JSON (Expecting value)"),
    (3, None, "expected a JSON object, got list"),
    (4, "instruction", "missing; expected a string"),
    (5, "hypo_output", "empty; expected a non-empty string"),
    (6, "input_context", "expected a string, got 17"),
    (7, "task", "expected a string or null, got 3"),
    (8, "errors", 'expected a string, got {"error_0": {"severity": "Major"}}'),
    (
        9,
        "errors",
        "no first line 'The model-generated output contains N errors, with a total score "
        "reduction of X.'",
    ),
    (10, "errors", "the first line states 2 errors; 1 follows"),
    (11, "errors[2].explanation", "error 2: no 'Explanation 2:' line"),
    (12, "errors[1].score_reduction", "error 1: score reduction: expected a number, got 'four'"),
    (13, "errors[1].score_reduction", "error 1: score reduction 7.0 outside [0.5, 5]"),
    (14, "errors[1].severity", "error 1: severity 'Critical'; expected Major or Minor"),
    (
        15,
        "errors",
        "the first line states a total score reduction of 3.0, the errors sum to 4.0",
    ),
    (16, "errors[1].severity", "two 'Severity 1:' lines"),
    (17, "errors", "errors numbered [1, 3]; expected 1..2"),
    (18, "errors[1].aspect", "error 1: 'Error aspect' is empty"),
    (19, "id", "expected a string, an integer or null, got true"),
    (22, None, "not valid UTF-8"),
]


def test_release_sample_is_read_whole():
    records, report = metric_instruct.load(SAMPLE)
    assert report.format == "json"
    assert (report.rows_read, report.rows_kept, report.rows_dropped) == (9, 9, 0)
    assert dict(report.task_types) == {"summarization": 3, "translation": 3, "data2text": 3}
    assert report.errors_kept == 11
    assert dict(report.severities) == {"Major": 7, "Minor": 4}
    assert report.free_form_aspects == 0
    # Each row's line is the line of its "{" in the array (7 lines per row, from line 2).
    assert [r.line for r in records] == list(range(2, 60, 7))
    assert [r.id for r in records][:2] == ["mix_instruct_sample:2", "mix_instruct_sample:9"]
    assert [r.task for r in records] == ["summarization"] * 3 + ["translation"] * 3 + [
        "data2text"
    ] * 3
    assert [r.score for r in records] == [-8.5, 0.0, -2.0, -0.5, -6.0, 0.0, -8.0, -0.5, -3.5]
    assert {r.source for r in records} == {None}


def test_a_record_holds_its_row_and_parsed_analysis():
    rows = json.loads(SAMPLE.read_text(encoding="utf-8"))
    records, _ = metric_instruct.load(SAMPLE)
    translation = records[4]
    assert translation.instruction == rows[4]["instruction"]
    assert translation.input_context == "会议将于下周一在北京举行。"
    assert translation.hypothesis_output == "The meeting will hold in Beijing next Tuesday."
    assert translation.errors == (
        error_analysis.ExplainedError(
            "next Tuesday",
            "Accuracy",
            "The source says Monday (周一). Write 'next Monday'.",
            "Major",
            5.0,
        ),
        error_analysis.ExplainedError(
            "will hold",
            "Fluency",
            "A meeting is held, it does not hold. Write 'will be held'.",
            "Minor",
            1.0,
        ),
    )
    # Rendered again, every analysis but the one with integer reductions is the file's text.
    for record, row in zip(records, rows, strict=True):
        rendered = error_analysis.render_analysis(record.errors)
        if record.line == 16:
            assert row["errors"].endswith("Score reduction 1: 2")
            assert rendered.endswith("Score reduction 1: 2.0")
            assert rendered.replace("2.0", "2") == row["errors"]
        else:
            assert rendered == row["errors"]


def test_every_malformed_row_is_named_by_file_line_and_field():
    records, report = metric_instruct.load(MALFORMED)
    assert report.format == "jsonl"
    # 22 lines; the blank line 20 is no row.
    assert (report.rows_read, report.rows_kept, report.rows_dropped) == (21, 2, 19)
    assert [(d.line, d.field, d.reason) for d in report.dropped] == MALFORMED_DROPS
    assert {d.path for d in report.dropped} == {str(MALFORMED)}
    assert str(report.dropped[12]) == (
        f"{MALFORMED}:14 field 'errors[1].severity': error 1: severity 'Critical'; "
        "expected Major or Minor"
    )
    assert [(r.line, r.id, r.source, r.task) for r in records] == [
        (1, "good-1", "xsum", "summarization"),
        (21, "42", None, "translation"),
    ]
    assert report.drop_counts() == {
        "errors": 5,
        "errors[1].aspect": 1,
        "errors[1].score_reduction": 2,
        "errors[1].severity": 2,
        "errors[2].explanation": 1,
        "hypo_output": 1,
        "id": 1,
        "input_context": 1,
        "instruction": 1,
        "row": 3,
        "task": 1,
    }
    assert sum(report.drop_counts().values()) == report.rows_dropped


def test_drop_report_as_data_and_one_line():
    report = metric_instruct.read_file(MALFORMED)
    summary = report.summary()
    assert summary.startswith(f"{MALFORMED}: read 21 rows, kept 2, dropped 19 (errors 5, ")
    assert summary.endswith(f"first: {MALFORMED}:2: not valid JSON (Expecting value))")
    data = report.as_dict()
    assert data["rows_dropped"] == 19
    assert len(data["drop_examples"]) == metric_instruct.MAX_DROP_EXAMPLES
    assert (
        data["drop_examples"][2] == f"{MALFORMED}:4 field 'instruction': missing; expected a string"
    )
    assert data["task_types"] == {"summarization": 1, "translation": 1}
    assert json.loads(json.dumps(data)) == data


def test_array_rows_are_located_by_their_opening_line():
    records, report = metric_instruct.load(MALFORMED_ARRAY)
    assert report.format == "json"
    assert [r.line for r in records] == [2]
    assert [(d.line, d.field, d.reason) for d in report.dropped] == [
        (9, None, "expected a JSON object, got str"),
        (10, "errors[1].severity", "error 1: severity 'major'; expected Major or Minor"),
    ]


def test_row_without_task_and_with_free_form_aspects(tmp_path):
    rows = json.loads(SAMPLE.read_text(encoding="utf-8"))[3:5]
    del rows[0]["task"]
    rows[1]["task"] = "long-form QA"  # Accuracy is one of its aspects, Fluency is not
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    records, report = metric_instruct.load(path)
    assert [r.task for r in records] == [None, "long-form QA"]
    assert report.as_dict()["task_types"] == {"(none)": 1, "long-form QA": 1}
    assert report.free_form_aspects == 2  # the untyped row's Accuracy, and Fluency
    assert report.rows_of(None) == 2 and report.rows_of("long-form QA") == 1


@pytest.mark.parametrize(
    "text, line, reason",
    [
        ("", None, "empty file; expected a JSON array of MetricInstruct rows, or JSON Lines"),
        ('[\n  {"task": "x"},\n  {"task": \n]\n', 4, "not JSON (Expecting value); a JSON"),
        ('[\n  {"task": "x"}\n  {"task": "y"}\n]\n', 3, "not JSON: expected ',' or ']'"),
        ('[\n  {"task": "x"}\n]\n[]\n', 4, "not JSON: text after the array"),
        ('[\n  {"task": "x"},\n', 3, "not JSON (Expecting value)"),
    ],
)
def test_a_broken_json_array_is_refused_whole(tmp_path, text, line, reason):
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(errors.DataError) as caught:
        metric_instruct.read_file(path)
    assert caught.value.line == line
    assert caught.value.reason.startswith(reason)


def test_empty_array_and_byte_order_mark(tmp_path):
    path = tmp_path / "empty.json"
    path.write_bytes(b"\xef\xbb\xbf[ ]\n")
    records, report = metric_instruct.load(path)
    assert records == [] and report.rows_read == 0 and report.format == "json"

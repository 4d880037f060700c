"""The prepared split files read back: the row check and the labelled-row selection."""

from __future__ import annotations

import json

import pytest

from seahorse_t5x import constants, errors
from seahorse_t5x.data import splits


def _row(gem_id: str, language: str, q1, q4) -> dict:
    return {
        "gem_id": gem_id,
        "language": language,
        "dataset": "xlsum",
        "system": "t5_base",
        "summary": f"Summary {gem_id}.",
        "article": f"Article {gem_id}.",
        "q1": q1,
        "q2": None if q1 == 0 else 1,
        "q3": None if q1 == 0 else 0,
        "q4": q4,
        "q5": None,
        "q6": None if q1 == 0 else 1,
    }


ROWS = [
    _row("a", "en", 1, 1),
    _row("b", "de", 0, None),
    _row("c", "de", 1, 0),
    _row("d", "en", 1, None),
]


def _write(path, rows, extra: bytes = b""):
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows) + extra)
    return path


def test_fields_are_the_contract():
    assert splits.FIELDS == (
        "gem_id",
        "language",
        "dataset",
        "system",
        "summary",
        "article",
        "q1",
        "q2",
        "q3",
        "q4",
        "q5",
        "q6",
    )
    assert splits.split_path("out", "test") == "out/test.jsonl"
    with pytest.raises(errors.UserError, match="unknown split 'dev'"):
        splits.split_path("out", "dev")


def test_labelled_rows_and_counts(tmp_path):
    path = _write(tmp_path / "test.jsonl", ROWS, b"\n")
    assert splits.read_rows(path) == ROWS
    assert [r["gem_id"] for r in splits.labelled_rows(path, 4)] == ["a", "c"]
    assert [r["gem_id"] for r in splits.labelled_rows(path, 4, "de")] == ["c"]
    assert [r["gem_id"] for r in splits.labelled_rows(path, 1)] == ["a", "b", "c", "d"]
    assert list(splits.labelled_rows(path, 5)) == []
    counts = splits.label_counts(path)
    # Independently: every (question, language) with a non-null label.
    expected: dict[tuple[int, str], int] = {}
    for row in ROWS:
        for q in constants.QUESTIONS:
            if row[f"q{q}"] is not None:
                expected[(q, row["language"])] = expected.get((q, row["language"]), 0) + 1
    assert counts == expected
    assert counts[(4, "en")] == 1 and (5, "en") not in counts


@pytest.mark.parametrize(
    "change, field, reason",
    [
        ({"q4": True}, "q4", "expected 1 (Yes), 0 (No) or null, got True"),
        ({"q4": 1.0}, "q4", "expected 1 (Yes), 0 (No) or null, got 1.0"),
        ({"q2": "Yes"}, "q2", "expected 1 (Yes), 0 (No) or null, got 'Yes'"),
        ({"language": "fr"}, "language", "expected one of de, en, es, ru, tr, vi, got 'fr'"),
        ({"summary": 3}, "summary", "expected a string, got 3"),
        ({"article": None}, "article", "expected a string, got None"),
    ],
)
def test_bad_rows_are_data_errors(tmp_path, change, field, reason):
    path = _write(tmp_path / "train.jsonl", [ROWS[0], {**ROWS[1], **change}])
    with pytest.raises(errors.DataError) as info:
        splits.read_rows(path)
    assert (info.value.line, info.value.field, info.value.reason) == (2, field, reason)


def test_a_missing_field_and_a_missing_file(tmp_path):
    row = dict(ROWS[0])
    del row["system"]
    path = _write(tmp_path / "validation.jsonl", [row])
    with pytest.raises(errors.DataError, match=r"validation.jsonl:1 field 'system': missing"):
        list(splits.labelled_rows(path, 4))
    with pytest.raises(errors.UserError, match="split file not found: .*seahorse-t5x prepare"):
        splits.read_rows(tmp_path / "test.jsonl")

"""Score files: round trip, extra fields kept, missing scores counted, bad lines located."""

import json
import math

import pytest

from seahorse_t5x import errors
from seahorse_t5x.data import score_paths, scorefiles


def _row(**overrides):
    row = {
        "metric": "rougeL",
        "benchmark": "seahorse",
        "question": 4,
        "label": 1,
        "score": 0.25,
        "gem_id": "xsum-test-1",
        "language": "en",
        "dataset": "xsum",
        "system": "t5_base",
    }
    row.update(overrides)
    return row


def test_round_trip_keeps_fields_and_extras(tmp_path):
    path = tmp_path / "sub" / "scores.jsonl"
    rows = [
        _row(),
        _row(question="Q2", label=0, score=None, extra_field="kept", summary="Ünïcode"),
        _row(benchmark="mface", question="attribution", label=0.5, score=float("nan")),
    ]
    assert scorefiles.write_score_file(path, rows) == 3
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[1])["score"] is None  # NaN/None written as null
    assert json.loads(lines[1])["question"] == 2
    assert "Ünïcode" in lines[1]  # UTF-8, not \u escapes
    frame = scorefiles.read_score_files([path])
    assert len(frame) == 3
    assert frame["question"].tolist() == ["4", "2", "attribution"]
    assert frame["label"].tolist() == [1.0, 0.0, 0.5]
    assert frame["score"].tolist()[0] == 0.25
    assert math.isnan(frame["score"][1]) and math.isnan(frame["score"][2])
    assert frame["extra_field"].tolist()[1] == "kept"
    assert frame[scorefiles.SOURCE_FIELD].tolist() == [str(path)] * 3


def test_missing_scores_are_counted_when_dropped(tmp_path):
    path = tmp_path / "scores.jsonl"
    rows = [
        _row(score=None),
        _row(score=0.1, system="mt5_small"),
        _row(question=5, score=None),
        _row(score=None, system="reference"),
    ]
    scorefiles.write_score_file(path, rows)
    kept, dropped = scorefiles.drop_missing_scores(scorefiles.read_score_files([path]))
    assert len(kept) == 1
    assert dropped == {"rougeL/seahorse/4": 2, "rougeL/seahorse/5": 1}


def test_several_files_concatenate_and_absent_slice_fields_are_none(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    scorefiles.write_score_file(a, [_row(metric="m1")])
    b.write_text(
        '{"metric": "m2", "benchmark": "true", "question": "frank", "label": 0, "score": -1e30}\n\n',
        encoding="utf-8",
    )
    frame = scorefiles.read_score_files([a, b])
    assert frame["metric"].tolist() == ["m1", "m2"]
    assert frame["language"].tolist() == ["en", None]


@pytest.mark.parametrize(
    "line, field, reason",
    [
        ("not json", None, "not valid JSON"),
        ("[1, 2]", None, "expected a JSON object"),
        ('{"benchmark": "seahorse", "question": 1, "label": 1, "score": 0}', "metric", "missing"),
        (
            '{"metric": "m", "benchmark": "", "question": 1, "label": 1, "score": 0}',
            "benchmark",
            "non-empty",
        ),
        (
            '{"metric": "m", "benchmark": "b", "question": true, "label": 1, "score": 0}',
            "question",
            "question",
        ),
        (
            '{"metric": "m", "benchmark": "b", "question": 1, "label": null, "score": 0}',
            "label",
            "finite number",
        ),
        (
            '{"metric": "m", "benchmark": "b", "question": 1, "label": 1, "score": "0.3"}',
            "score",
            "a number or null",
        ),
        (
            '{"metric": "m", "benchmark": "b", "question": 1, "label": 1, "score": 0, "language": 3}',
            "language",
            "string or null",
        ),
    ],
)
def test_bad_line_is_located(tmp_path, line, field, reason):
    path = tmp_path / "bad.jsonl"
    good = json.dumps(_row())
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(errors.DataError) as info:
        scorefiles.read_score_files([path])
    assert info.value.path == str(path)
    assert info.value.line == 2
    assert info.value.field == field
    assert reason in info.value.reason


def test_writer_rejects_a_bad_row_and_writes_nothing(tmp_path):
    path = tmp_path / "scores.jsonl"
    with pytest.raises(errors.DataError) as info:
        scorefiles.write_score_file(path, [_row(), {"metric": "m"}])
    assert (info.value.line, info.value.field) == (2, "benchmark")
    assert not path.exists()


def test_empty_or_missing_file_is_a_user_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(errors.DataError, match="empty file; expected one score row per line"):
        scorefiles.read_score_files([empty])
    with pytest.raises(errors.UserError, match="score file not found"):
        scorefiles.read_score_files([tmp_path / "nope.jsonl"])
    with pytest.raises(errors.UserError, match="no score files"):
        scorefiles.read_score_files([])
    good = tmp_path / "good.jsonl"
    scorefiles.write_score_file(good, [_row()])
    with pytest.raises(errors.UserError, match="score file given twice"):
        scorefiles.read_score_files([good, tmp_path / "." / "good.jsonl"])


def test_rows_from_a_dataframe_write_nan_as_null(tmp_path):
    path = tmp_path / "scores.jsonl"
    rows = [
        _row(language=float("nan"), label_binary=float("nan")),
        _row(label_binary=1, gem_id="xsum-test-2"),
    ]
    scorefiles.write_score_file(path, rows)
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert first["language"] is None and first["label_binary"] is None
    assert scorefiles.read_score_files([path])["language"].tolist() == [None, "en"]


def test_a_folder_stands_for_its_score_files(tmp_path):
    scorefiles.write_score_file(tmp_path / "b.jsonl", [_row(metric="b")])
    scorefiles.write_score_file(tmp_path / "a.jsonl", [_row(metric="a")])
    (tmp_path / "notes.txt").write_text("not a score file")
    frame = scorefiles.read_score_files([tmp_path])
    assert frame["metric"].tolist() == ["a", "b"]
    with pytest.raises(errors.UserError, match="score file given twice"):
        scorefiles.read_score_files([tmp_path, tmp_path / "a.jsonl"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(errors.UserError, match="no .jsonl score files in folder"):
        scorefiles.read_score_files([empty])


def test_a_linked_folder_is_followed_once_and_two_links_to_it_name_the_file(tmp_path):
    scorefiles.write_score_file(tmp_path / "kept" / "a.jsonl", [_row(metric="a")])
    folder = tmp_path / "scores"
    folder.mkdir()
    (folder / "one").symlink_to(tmp_path / "kept", target_is_directory=True)
    assert score_paths.score_files_in(folder) == [folder / "one" / "a.jsonl"]
    assert scorefiles.read_score_files([folder])["metric"].tolist() == ["a"]
    (folder / "two").symlink_to(tmp_path / "kept", target_is_directory=True)
    with pytest.raises(errors.UserError, match="score file given twice: .*two/a.jsonl"):
        scorefiles.read_score_files([folder])
    (folder / "two").unlink()
    (tmp_path / "kept" / "up").symlink_to(folder, target_is_directory=True)
    with pytest.raises(errors.UserError, match=r"^score folder .*: the symbolic link .*up leads"):
        score_paths.score_files_in(folder)


def test_one_score_file_given_bare_is_refused_not_read_as_its_characters(tmp_path):
    path = tmp_path / "a.jsonl"
    scorefiles.write_score_file(path, [_row()])
    with pytest.raises(errors.UserError, match=r"^`paths` is one path, not a sequence of paths"):
        scorefiles.read_score_files(str(path))
    assert len(scorefiles.read_score_files([str(path)])) == 1


def test_an_item_is_gem_id_with_system_and_summary(tmp_path):
    path = tmp_path / "scores.jsonl"
    rows = [
        _row(),
        _row(system="mt5_small"),  # same article, another system: another item
        _row(summary="One summary."),
        _row(summary="Another summary."),  # same article and system, another summary
        _row(question=5),
    ]
    scorefiles.write_score_file(path, rows)
    assert len(scorefiles.read_score_files([path])) == 5


def test_duplicated_items_are_an_error_or_counted_when_dropped(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    scorefiles.write_score_file(a, [_row(), _row(gem_id="xsum-test-2")])
    scorefiles.write_score_file(b, [_row(score=0.9), _row(question=5), _row(question=5)])
    with pytest.raises(errors.DataError) as e:
        scorefiles.read_score_files([a, b])
    assert (e.value.path, e.value.line) == (str(b), 1)
    assert f"already scored at {a}:1 (2 duplicated row(s) in all)" in str(e.value)
    frame = scorefiles.read_score_files([a, b], drop_duplicates=True)
    assert frame["score"].tolist() == [0.25, 0.25, 0.25]  # the first of each is kept
    assert frame.attrs["duplicates_dropped"] == {"rougeL/seahorse/4": 1, "rougeL/seahorse/5": 1}


def test_rows_without_gem_id_are_not_duplicates(tmp_path):
    path = tmp_path / "scores.jsonl"
    scorefiles.write_score_file(path, [_row(gem_id=None, system=None)] * 2)
    assert len(scorefiles.read_score_files([path])) == 2


@pytest.mark.parametrize(
    "overrides, field, reason",
    [
        ({"label": 0.5}, "label", "seahorse labels are 0 (No) or 1 (Yes), got 0.5"),
        ({"label": 2}, "label", "seahorse labels are 0 (No) or 1 (Yes), got 2"),
        ({"benchmark": "true", "label": -1}, "label", "true labels are 0 (No) or 1 (Yes)"),
        ({"question": 7}, "question", "SEAHORSE questions are 1..6, got 7"),
        ({"question": 0}, "question", "SEAHORSE questions are 1..6, got 0"),
        ({"question": "4.5"}, "question", "SEAHORSE questions are 1..6, got '4.5'"),
    ],
)
def test_labels_and_questions_are_checked_per_benchmark(tmp_path, overrides, field, reason):
    path = tmp_path / "scores.jsonl"
    path.write_text(json.dumps(_row(**overrides)) + "\n", encoding="utf-8")
    with pytest.raises(errors.DataError) as e:
        scorefiles.read_score_files([path])
    assert (e.value.line, e.value.field) == (1, field)
    assert reason in e.value.reason
    graded = _row(benchmark="metal", question="task_quality", label=0.75)
    scorefiles.write_score_file(path, [graded])
    assert scorefiles.read_score_files([path])["label"].tolist() == [0.75]


@pytest.mark.parametrize(
    "overrides, reason",
    [
        (
            {"label": True},
            "expected 1 (Yes), 0 (No) or a graded number, got True; true/false are not labels",
        ),
        (
            {"benchmark": "mface", "question": "quality", "label": False},
            "expected 1 (Yes), 0 (No) or a graded number, got False; true/false are not labels",
        ),
        (
            {"label": 1.0},
            "seahorse labels are 0 (No) or 1 (Yes), got 1.0; write 1 or 0, not a decimal",
        ),
        (
            {"benchmark": "true", "label": 0.0},
            "true labels are 0 (No) or 1 (Yes), got 0.0; write 1 or 0, not a decimal",
        ),
    ],
)
def test_labels_are_numbers_never_booleans_as_in_split_files(tmp_path, overrides, reason):
    # The split files' reader refuses true/false and 1.0 as labels; score files agree.
    path = tmp_path / "scores.jsonl"
    path.write_text(json.dumps(_row()) + "\n" + json.dumps(_row(**overrides)) + "\n")
    with pytest.raises(errors.DataError) as e:
        scorefiles.read_score_files([path])
    assert (e.value.path, e.value.line, e.value.field) == (str(path), 2, "label")
    assert e.value.reason == reason


def test_writer_writes_a_decimal_binary_label_as_an_integer(tmp_path):
    path = tmp_path / "scores.jsonl"
    scorefiles.write_score_file(path, [_row(label=1.0)])
    assert json.loads(path.read_text())["label"] == 1
    assert scorefiles.read_score_files([path])["label"].tolist() == [1.0]
    with pytest.raises(errors.DataError, match="true/false are not labels"):
        scorefiles.write_score_file(tmp_path / "b.jsonl", [_row(label=True)])
    assert not (tmp_path / "b.jsonl").exists()


def test_bom_and_invalid_utf8_in_score_files(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_row()).encode() + b"\n")
    assert scorefiles.read_score_files([path])["gem_id"].tolist() == ["xsum-test-1"]
    path.write_bytes(json.dumps(_row()).encode() + b"\n" + b'{"metric": "r\xe9"}\n')
    with pytest.raises(errors.DataError, match=r"scores.jsonl:2: invalid UTF-8"):
        scorefiles.read_score_files([path])


def test_label_kind_binary_holds_any_benchmark_to_0_and_1(tmp_path):
    path = tmp_path / "scores.jsonl"
    user = {"benchmark": "chat", "question": "polite"}
    # Without the field, another benchmark's labels may be graded (METAL, a new benchmark).
    scorefiles.write_score_file(path, [_row(**user, label=0.5)])
    assert scorefiles.read_score_files([path])["label"].tolist() == [0.5]
    scorefiles.write_score_file(path, [_row(**user, label=1, label_kind="binary")])
    frame = scorefiles.read_score_files([path])
    assert frame["label"].tolist() == [1.0] and frame["label_kind"].tolist() == ["binary"]
    for label, reason in (
        (0.5, "chat labels are 0 (No) or 1 (Yes), got 0.5; the row's label_kind is binary"),
        (1.0, "chat labels are 0 (No) or 1 (Yes), got 1.0; write 1 or 0, not a decimal"),
    ):
        path.write_text(json.dumps(_row(**user, label=label, label_kind="binary")) + "\n")
        with pytest.raises(errors.DataError) as e:
            scorefiles.read_score_files([path])
        assert (e.value.line, e.value.field, e.value.reason) == (1, "label", reason)
    path.write_text(json.dumps(_row(**user, label_kind="yes/no")) + "\n")
    with pytest.raises(errors.DataError) as e:
        scorefiles.read_score_files([path])
    assert (e.value.field, e.value.reason) == (
        "label_kind",
        "expected 'binary' or 'graded' or null, got 'yes/no'",
    )


# ----------------------------------------------------------------------------- builder, writer


def test_score_row_orders_required_details_label_kind_slices_extras():
    row = scorefiles.score_row(
        metric="m",
        benchmark="tone",
        question="polite",
        label=1,
        score=0.75,
        details={"log_p_yes": -0.29},
        label_kind="binary",
        # A whole input row: only the slice fields are taken, in their own order.
        slices={"system": "s1", "summary": "not a slice", "gem_id": "t-1", "q4": 1},
        extra={"task": "tone_polite_score", "split": "test"},
    )
    assert list(row.items()) == [
        ("metric", "m"),
        ("benchmark", "tone"),
        ("question", "polite"),
        ("label", 1),
        ("score", 0.75),
        ("log_p_yes", -0.29),
        ("label_kind", "binary"),
        ("gem_id", "t-1"),
        ("system", "s1"),
        ("task", "tone_polite_score"),
        ("split", "test"),
    ]
    plain = scorefiles.score_row(metric="m", benchmark="b", question=4, label=0, score=None)
    assert list(plain) == list(scorefiles.REQUIRED_FIELDS)
    assert plain["score"] is None


def test_score_row_refuses_a_field_given_twice():
    with pytest.raises(ValueError, match="field 'score' given twice"):
        scorefiles.score_row(
            metric="m", benchmark="b", question=4, label=0, score=0.1, extra={"score": 0.2}
        )
    with pytest.raises(ValueError, match="field 'gem_id' given twice"):
        scorefiles.score_row(
            metric="m",
            benchmark="b",
            question=4,
            label=0,
            score=0.1,
            slices={"gem_id": "a"},
            extra={"gem_id": "b"},
        )


def test_writer_streams_rows_and_writes_what_write_score_file_writes(tmp_path):
    rows = [
        _row(),
        _row(question="Q2", label=1.0, score=float("nan"), summary="Ünïcode"),
        _row(benchmark="mface", question="attribution", label=0.5, language=float("nan")),
    ]
    path = tmp_path / "streamed.jsonl"
    with scorefiles.ScoreFileWriter(path) as writer:
        for row in rows:
            writer.write(row)
        assert writer.count == 3
        assert not path.exists()  # only once the block ends
    tail = '"gem_id": "xsum-test-1", "language": "en", "dataset": "xsum", "system": "t5_base"'
    assert path.read_text(encoding="utf-8") == (
        '{"metric": "rougeL", "benchmark": "seahorse", "question": 4, "label": 1, '
        f'"score": 0.25, {tail}}}\n'
        '{"metric": "rougeL", "benchmark": "seahorse", "question": 2, "label": 1, '
        f'"score": null, {tail}, "summary": "Ünïcode"}}\n'
        '{"metric": "rougeL", "benchmark": "mface", "question": "attribution", "label": 0.5, '
        '"score": 0.25, "gem_id": "xsum-test-1", "language": null, "dataset": "xsum", '
        '"system": "t5_base"}\n'
    )
    again = tmp_path / "at_once.jsonl"
    assert scorefiles.write_score_file(again, rows) == 3
    assert again.read_bytes() == path.read_bytes()


def test_writer_without_validation_writes_rows_as_given(tmp_path):
    path = tmp_path / "raw.jsonl"
    with scorefiles.ScoreFileWriter(path, validate=False) as writer:
        writer.write({"metric": "m", "label": 2.0, "summary": "é"})
    assert path.read_text(encoding="utf-8") == '{"metric": "m", "label": 2.0, "summary": "é"}\n'
    assert writer.count == 1
    with pytest.raises(RuntimeError, match="inside `with ScoreFileWriter"):
        writer.write(_row())


def test_writer_failure_mid_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(errors.DataError) as info:
        with scorefiles.ScoreFileWriter(path) as writer:
            writer.write(_row())
            writer.write(_row(label=True))
    assert str(info.value).startswith(f"{path}:2 field 'label': ")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.jsonl"]
    # Any exception in the block (not only a bad row) writes nothing.
    fresh = tmp_path / "fresh.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with scorefiles.ScoreFileWriter(fresh) as writer:
            writer.write(_row())
            raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.jsonl"]

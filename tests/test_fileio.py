"""Tests for the shared file helpers: BOM-tolerant UTF-8 input, atomic output, path checks."""

import errno
import os

import pytest

from seahorse_t5x import errors, fileio


def test_text_input_drops_bom_and_keeps_line_endings(tmp_path):
    path = tmp_path / "a.tsv"
    path.write_bytes(b"\xef\xbb\xbfgem_id\tx\r\nid-1\t\xc3\xa9\n")
    with fileio.open_text_input(path) as f:
        lines = list(f)
        assert f.line_number == 2
    assert lines == ["gem_id\tx\r\n", "id-1\t\u00e9\n"]


def test_text_input_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(errors.DataError) as e, fileio.open_text_input(path) as f:
        f.read()
    assert (e.value.path, e.value.line) == (str(path), 2)
    assert "invalid UTF-8 (byte 0xff at byte 8 of the line)" in str(e.value)


def test_text_input_replace_records_invalid_lines(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"ok\nb\xe9d\nok\n\x80\n")
    with fileio.open_text_input(path, invalid="replace") as f:
        lines = f.read().splitlines()
        assert f.invalid_lines == [2, 4]
    assert lines == ["ok", "b\ufffdd", "ok", "\ufffd"]


def test_text_input_utf16_and_missing_and_folder(tmp_path):
    path = tmp_path / "u16.csv"
    path.write_bytes("a,b\n".encode("utf-16"))
    with pytest.raises(errors.DataError, match="UTF-16"), fileio.open_text_input(path) as f:
        f.read()
    with pytest.raises(errors.UserError, match="No such file"):
        fileio.open_text_input(tmp_path / "missing.tsv")
    with pytest.raises(errors.UserError, match="is a folder"):
        fileio.open_text_input(tmp_path)


def test_atomic_writer_publishes_only_complete_files(tmp_path):
    path = tmp_path / "sub" / "out.json"
    fileio.atomic_write_text(path, "first\n")
    assert path.read_text() == "first\n"
    with pytest.raises(RuntimeError), fileio.atomic_writer(path) as f:
        f.write("half")
        raise RuntimeError("stopped")
    assert path.read_text() == "first\n"
    assert sorted(os.listdir(path.parent)) == ["out.json"]  # temporary file removed


def test_atomic_writer_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    path = tmp_path / "report.json"
    with pytest.raises(errors.UserError) as e:
        fileio.atomic_write_text(path, "{}")
    assert str(e.value) == f"cannot write {path}: No space left on device"
    assert os.listdir(tmp_path) == []


def test_atomic_writer_folder_at_path(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(errors.UserError, match="is a folder"):
        fileio.atomic_write_bytes(tmp_path / "out", b"x")


def test_check_output_path(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    fileio.check_output_path(tmp_path / "new" / "deeper", "directory")
    fileio.check_output_path(a_file, "file")
    assert not (tmp_path / "new").exists()
    with pytest.raises(errors.UserError, match=r"^--output_dir .*/f is a file; expected a folder"):
        fileio.check_output_path(a_file, "directory", flag="--output_dir")
    with pytest.raises(errors.UserError, match="is a folder; expected a file name"):
        fileio.check_output_path(tmp_path, "file")
    with pytest.raises(errors.UserError, match="is a file, not a folder"):
        fileio.check_output_path(a_file / "out.jsonl", "file")
    assert sorted(os.listdir(tmp_path)) == ["f"]


def test_iter_json_objects(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n  \n{"a": 2}\n')
    assert list(fileio.iter_json_objects(path)) == [(1, {"a": 1}), (4, {"a": 2})]
    path.write_bytes(b'{"a": 1}\n[1, 2]\n')
    with pytest.raises(errors.DataError, match=r"a.jsonl:2: expected a JSON object, got list"):
        list(fileio.iter_json_objects(path))
    path.write_bytes(b'{"a": 1}\n{"a": \n')
    with pytest.raises(errors.DataError, match=r"a.jsonl:2: not valid JSON \(Expecting value\)"):
        list(fileio.iter_json_objects(path))


def test_iter_json_lines_returns_bad_lines_in_order(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n{"a": \n[1]\n\n{"b": "caf\xe9"}\n{"a": 2}\n')
    got = [
        (n, str(x) if isinstance(x, errors.DataError) else x)
        for n, x in fileio.iter_json_lines(path)
    ]
    assert got == [
        (1, {"a": 1}),
        (2, f"{path}:2: not valid JSON (Expecting value)"),
        (3, f"{path}:3: expected a JSON object, got list"),
        (5, f"{path}:5: not valid UTF-8"),
        (6, {"a": 2}),
    ]
    # The raising form names the byte of the first line that is not UTF-8.
    path.write_bytes(b'{"b": "caf\xe9"}\n')
    with pytest.raises(errors.DataError, match=r"a.jsonl:1: invalid UTF-8 \(byte 0xe9"):
        list(fileio.iter_json_objects(path))


def test_read_json(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": [1,\n 2]}\n')
    assert fileio.read_json(path) == {"a": [1, 2]}
    path.write_bytes(b'{"a": [1,\n 2,\n}\n')
    with pytest.raises(errors.DataError, match=r"a.json:3: not JSON: Expecting value"):
        fileio.read_json(path)


# --------------------------------------------------------------------------- tables


def test_tsv_records_split_on_tabs_only_and_keep_quotes(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_bytes(b'\xef\xbb\xbfid\tsummary\r\n1\t"Yes," he said.\r\n\n2\tends "here\n3\tx\ty')
    records = list(fileio.iter_table_records(path))
    assert [(r.line, r.fields, r.blank) for r in records] == [
        (1, ["id", "summary"], False),
        (2, ["1", '"Yes," he said.'], False),
        (3, [""], True),
        (4, ["2", 'ends "here'], False),
        (5, ["3", "x", "y"], False),
    ]
    with fileio.open_table(path) as table:
        assert table.header == ["id", "summary"]
        rows = list(table)
    assert [(r.line, r.values, r.extra) for r in rows] == [
        (2, {"id": "1", "summary": '"Yes," he said.'}, []),
        (4, {"id": "2", "summary": 'ends "here'}, []),
        (5, {"id": "3", "summary": "x"}, ["y"]),
    ]


def test_csv_records_use_standard_quoting_and_start_lines(tmp_path):
    path = tmp_path / "t.CSV"
    path.write_bytes(b'id,summary\n1,"a, ""b"" c"\n\n2,"two\nlines"\n3\n')
    with fileio.open_table(path) as table:
        assert table.header == ["id", "summary"]
        rows = list(table)
    assert [(r.line, r.values, r.extra) for r in rows] == [
        (2, {"id": "1", "summary": 'a, "b" c'}, []),
        (4, {"id": "2", "summary": "two\nlines"}, []),
        (6, {"id": "3", "summary": None}, []),
    ]
    long_field = "x" * 200_000  # longer than the csv module's default field limit
    path.write_text(f"id,article\n1,{long_field}\n")
    assert [r.fields for r in fileio.iter_table_records(path)][1] == ["1", long_field]


def test_table_invalid_utf8_is_file_and_line_or_flagged(tmp_path):
    for suffix in (".tsv", ".csv"):
        path = tmp_path / f"t{suffix}"
        sep = b"\t" if suffix == ".tsv" else b","
        path.write_bytes(b"id" + sep + b"s\n1" + sep + b"ok\n2" + sep + b"b\xffd\n")
        with pytest.raises(errors.DataError) as e:
            list(fileio.iter_table_records(path))
        assert (e.value.path, e.value.line) == (str(path), 3)
        assert "invalid UTF-8 (byte 0xff" in str(e.value)
        records = list(fileio.iter_table_records(path, invalid="replace"))
        assert [r.invalid_utf8 for r in records] == [False, False, True]
        assert records[2].fields == ["2", "b\ufffdd"]


def test_table_kind_comes_from_the_suffix_unless_given(tmp_path):
    path = tmp_path / "ratings.txt"
    path.write_text('a\t"b\n')
    with pytest.raises(errors.UserError, match="expected a .csv or .tsv file"):
        fileio.open_table(path)
    assert [r.fields for r in fileio.iter_table_records(path, ".tsv")] == [["a", '"b']]
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with fileio.open_table(empty) as table:
        assert table.header is None and list(table) == []

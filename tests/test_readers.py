"""The SEAHORSE TSV reader on fixtures in the real format (tests/testdata/seahorse/)."""

import pathlib

import pytest

from seahorse_t5x import constants, errors
from seahorse_t5x.data import readers

DATA = pathlib.Path(__file__).parent / "testdata" / "seahorse" / "seahorse_data"
TRAIN = str(DATA / "train.tsv")


def test_decode_unicode_escapes():
    assert readers.decode_unicode_escapes("\\u041f\\u0440\\u0438\\u0432\\u0435\\u0442") == "Привет"
    # A surrogate pair (as JSON-style escaping writes characters above U+FFFF) is one char.
    assert readers.decode_unicode_escapes("ok \\ud83d\\ude00") == "ok \U0001f600"
    assert readers.decode_unicode_escapes("Привет, C:\\users") == "Привет, C:\\users"


@pytest.mark.parametrize(
    "gem_id, expected",
    [
        ("xlsum_russian-validation-3133", ("xlsum", "ru")),
        ("xlsum_english-test-12", ("xlsum", "en")),
        ("mlsum_de-validation-3", ("mlsum", "de")),
        ("xsum-test-5", ("xsum", "en")),
        ("wiki_lingua_english_en-val-12", ("wikilingua", "en")),
        ("wiki_lingua_vietnamese_vi-test-7", ("wikilingua", "vi")),
        ("GEM-xlsum_turkish-test-1", ("xlsum", "tr")),
        ("xlsum_klingon-validation-3", None),
        ("cnn_dailymail-test-1", None),
    ],
)
def test_parse_gem_id(gem_id, expected):
    assert readers.parse_gem_id(gem_id) == expected


def test_train_fixture_rows_kept_and_dropped_with_reasons():
    result = readers.read_ratings(TRAIN)
    assert result.rows_read == 14
    # Line 10 is usable here; its missing article is found by the join in prepare.
    assert [r.line for r in result.ratings] == [2, 3, 4, 5, 10, 11, 12, 15]
    assert [(d.line, d.reason, d.field) for d in result.drops] == [
        (6, readers.MISSING_GEM_ID, "gem_id"),
        (7, readers.MALFORMED_ROW, None),
        (8, readers.UNKNOWN_LABEL, "question2"),
        (9, readers.DUPLICATE, "summary"),
        (13, readers.UNPARSEABLE_GEM_ID, "gem_id"),
        (14, readers.EMPTY_SUMMARY, "summary"),
    ]
    assert "expected 10 tab-separated fields, found 9" in result.drops[1].detail
    assert "'Maybe'" in result.drops[2].detail
    assert "line 2" in result.drops[3].detail


def test_text_is_unicode_and_quotes_survive():
    by_line = {r.line: r for r in readers.read_ratings(TRAIN).ratings}
    russian = by_line[3]
    assert russian.summary == "Школы в Казани возобновят обмен учениками."
    assert (russian.language, russian.dataset) == ("ru", "xlsum")
    # QUOTE_NONE: quote characters are part of the summary, not field delimiters.
    assert by_line[4].summary == 'Er sagte: "Wir bleiben in Köln." Die Stadt plant 3 neue Linien.'
    assert by_line[15].gem_id == "mlsum_de-validation-12"  # GEM- prefix stripped


def test_a_summary_may_start_with_a_quote(tmp_path):
    path = tmp_path / "test.tsv"
    row = ["xsum-test-7", "en-US", '"Yes," he said.', "t5_base", *["Yes"] * 6]
    path.write_text("\t".join(constants.TSV_COLUMNS) + "\n" + "\t".join(row) + "\n")
    result = readers.read_ratings(str(path))
    assert [r.summary for r in result.ratings] == ['"Yes," he said.'] and not result.drops


def test_labels_unsure_and_q1_no_blanking():
    result = readers.read_ratings(TRAIN)
    by_line = {r.line: r for r in result.ratings}
    assert by_line[3].labels == (1, 1, 0, 1, None, 0)
    assert by_line[5].labels == (0, None, None, None, None, None)
    assert by_line[11].labels == (None, 1, 0, 1, 0, 1)  # Q1 Unsure keeps the others
    # Q1 No with Q2..Q6 filled in: blanked, and counted.
    assert by_line[12].labels == (0, None, None, None, None, None)
    assert result.q1_no_blanked == 1


def test_windows_line_ends_and_plain_unicode():
    test = readers.read_ratings(str(DATA / "test.tsv"))
    assert test.rows_read == 3 and not test.drops
    assert test.ratings[1].summary == "El alcalde inauguró un puente."
    assert test.ratings[0].labels == (1, 1, 1, 1, 1, 0)
    validation = readers.read_ratings(str(DATA / "validation.tsv"))
    assert validation.ratings[0].summary == "Нарежьте овощи и обжарьте их."


def test_strict_mode_names_file_line_and_field():
    with pytest.raises(errors.DataError) as info:
        readers.read_ratings(TRAIN, strict=True)
    error = info.value
    assert (error.path, error.line, error.field) == (TRAIN, 6, "gem_id")
    assert str(error).startswith(f"{TRAIN}:6 field 'gem_id':")


def test_byte_order_mark_is_not_part_of_the_header(tmp_path):
    with_bom = tmp_path / "test.tsv"
    with_bom.write_bytes(b"\xef\xbb\xbf" + (DATA / "test.tsv").read_bytes())
    assert len(readers.read_ratings(str(with_bom)).ratings) == 3


def test_bad_header_and_unreadable_file(tmp_path):
    bad = tmp_path / "train.tsv"
    bad.write_text("gem_id\tsummary\nxsum-test-1\tA summary.\n", encoding="utf-8")
    with pytest.raises(errors.DataError, match="header lacks column"):
        readers.read_ratings(str(bad))
    header = "\t".join(constants.TSV_COLUMNS)
    latin1 = tmp_path / "latin1.tsv"
    rows = [
        f"{header}\n".encode(),
        "xsum-test-1\ten-US\tK\xf6ln\tt5_base".encode("latin-1") + b"\tYes" * 6 + b"\n",
        b"xsum-test-2\ten-US\tBonn\tt5_base" + b"\tNo" * 6 + b"\n",
    ]
    latin1.write_bytes(b"".join(rows))
    read = readers.read_ratings(str(latin1))
    assert [r.gem_id for r in read.ratings] == ["xsum-test-2"]
    assert [(d.line, d.reason) for d in read.drops] == [(2, readers.INVALID_UTF8)]
    with pytest.raises(errors.DataError, match=r"latin1.tsv:2: invalid UTF-8 \(byte 0xf6"):
        readers.read_ratings(str(latin1), strict=True)
    with pytest.raises(errors.UserError, match="cannot read"):
        readers.read_ratings(str(tmp_path / "missing.tsv"))

"""`prepare` on fixtures in the real formats: SEAHORSE TSVs, GEM Parquet, JSON Lines."""

import json
import pathlib
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seahorse_t5x import cli, errors
from seahorse_t5x.data import articles, prepare, splits

SEAHORSE = pathlib.Path(__file__).parent / "testdata" / "seahorse"
JSONL = str(SEAHORSE / "articles" / "gem_mlsum_xsum.jsonl")

# GEM-style Parquet exports: id field gem_id (xlsum cards show a GEM- prefix), text field
# per source dataset, plus the other columns GEM ships.
GEM_PARQUET = {
    "xlsum_english.parquet": (
        "text",
        {
            "GEM-xlsum_english-validation-6416": "Schools in England, Wales and Scotland are "
            "being urged to bring back overseas exchange trips.",
            "GEM-xlsum_english-test-1": "The council approved 200 new homes on Monday.",
            "GEM-xlsum_english-validation-1": "An article no SEAHORSE row asks for.",
        },
    ),
    "xlsum_russian.parquet": (
        "text",
        {"xlsum_russian-validation-3133": "Школы в Казани возобновят обмен учениками с Европой."},
    ),
    "xlsum_vietnamese.parquet": (
        "text",
        {"xlsum_vietnamese-validation-8": "Hà Nội khai trương bệnh viện mới vào thứ Hai."},
    ),
    "xsum.parquet": (
        "document",
        {"xsum-validation-9": "A different text for an id the JSON Lines source already gave."},
    ),
    "wiki_lingua.parquet": (
        "source",
        {
            "wiki_lingua_spanish_es-val-5": "Lave las verduras. Córtelas en trozos pequeños.",
            "wiki_lingua_russian_ru-val-3": "Нарежьте овощи. Обжарьте их на сковороде.",
            "wiki_lingua_german_de-test-4": "Waschen Sie das Gemüse. Schneiden Sie es klein.",
        },
    ),
}


def _write_gem_parquet(folder: pathlib.Path) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (text_field, rows) in GEM_PARQUET.items():
        table = pa.table(
            {
                "gem_id": list(rows),
                text_field: list(rows.values()),
                "target": ["reference summary"] * len(rows),
            }
        )
        pq.write_table(table, folder / name)
    return folder


@pytest.fixture
def prepared(tmp_path):
    gem = _write_gem_parquet(tmp_path / "gem")
    out = tmp_path / "out"
    report = prepare.prepare(str(SEAHORSE), [JSONL, str(gem)], str(out), log=None)
    return out, report


def _records(path):
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def test_report_counts_every_row(prepared):
    out, report = prepared
    train = report["splits"]["train"]
    assert (train["rows_read"], train["rows_kept"], train["rows_dropped"]) == (14, 7, 7)
    assert train["dropped_by_reason"] == {
        "invalid_utf8": 0,
        "malformed_row": 1,
        "missing_gem_id": 1,
        "unparseable_gem_id": 1,
        "unknown_label": 1,
        "empty_summary": 1,
        "duplicate": 1,
        "missing_article": 1,
    }
    assert train["drop_examples"]["missing_article"] == [
        {
            "path": str(SEAHORSE / "seahorse_data" / "train.tsv"),
            "line": 10,
            "reason": "missing_article",
            "field": "gem_id",
            "detail": "no article for 'xlsum_turkish-validation-77' in the article sources",
        }
    ]
    assert train["q1_no_blanked"] == 1
    assert train["labels"] == {
        "q1": {"yes": 4, "no": 2, "null": 1, "trainable": 6},
        "q2": {"yes": 4, "no": 1, "null": 2, "trainable": 5},
        "q3": {"yes": 3, "no": 2, "null": 2, "trainable": 5},
        "q4": {"yes": 4, "no": 1, "null": 2, "trainable": 5},
        "q5": {"yes": 2, "no": 2, "null": 3, "trainable": 4},
        "q6": {"yes": 3, "no": 2, "null": 2, "trainable": 5},
    }
    # The duplicates/ folder (which overlaps the splits) is never read.
    assert report["splits"]["test"]["rows_read"] == 3
    assert report["splits"]["validation"]["rows_kept"] == 2
    assert report["totals"] == {"rows_read": 19, "rows_kept": 12, "rows_dropped": 7}
    assert json.loads((out / prepare.REPORT_NAME).read_text(encoding="utf-8")) == report


def test_article_sources_are_reported(prepared):
    _, report = prepared
    jsonl, gem = report["article_sources"]
    assert (jsonl["records_read"], jsonl["articles_added"], jsonl["bad_records"]) == (3, 3, 1)
    assert jsonl["bad_examples"] == [
        f"{JSONL}:3: not valid JSON (Expecting property name enclosed in double quotes)"
    ]
    assert gem["records_read"] == 9 and gem["articles_added"] == 7
    assert gem["conflicts"] == 1  # xsum-validation-9: the first source's text wins
    assert len(gem["files"]) == 5


def test_split_files_follow_the_contract(prepared):
    out, _ = prepared
    train = _records(out / "train.jsonl")
    assert [r["gem_id"] for r in train] == [
        "xlsum_english-validation-6416",
        "xlsum_russian-validation-3133",
        "mlsum_de-validation-12",
        "xsum-validation-9",
        "wiki_lingua_spanish_es-val-5",
        "xsum-validation-9",
        "mlsum_de-validation-12",
    ]
    first = train[0]
    assert list(first) == list(splits.FIELDS)  # the contract, in its order
    assert first["article"].startswith("Schools in England")  # joined through GEM- prefix
    russian = train[1]
    assert (russian["language"], russian["dataset"], russian["system"]) == (
        "ru",
        "xlsum",
        "mt5_xxl",
    )
    assert russian["summary"] == "Школы в Казани возобновят обмен учениками."
    assert russian["q5"] is None and russian["q6"] == 0
    assert (
        train[3]["article"] == "The club said it would appeal against the decision of the league."
    )
    assert train[4]["dataset"] == "wikilingua" and train[4]["language"] == "es"
    test = _records(out / "test.jsonl")
    assert [(r["gem_id"], r["q1"], r["q2"]) for r in test] == [
        ("xlsum_english-test-1", 1, 1),
        ("mlsum_es-test-2", 1, 0),
        ("wiki_lingua_german_de-test-4", 0, None),
    ]
    # Unicode is written as itself, not as escapes.
    assert "Школы" in (out / "train.jsonl").read_text(encoding="utf-8")


def test_accepts_the_seahorse_data_folder_itself(tmp_path, prepared):
    out, _ = prepared
    gem = _write_gem_parquet(tmp_path / "gem2")
    inner = tmp_path / "inner"
    prepare.prepare(str(SEAHORSE / "seahorse_data"), [JSONL, str(gem)], str(inner), log=None)
    for split in ("train", "validation", "test"):
        assert (inner / f"{split}.jsonl").read_bytes() == (out / f"{split}.jsonl").read_bytes()


def test_strict_raises_at_the_first_drop(tmp_path):
    with pytest.raises(errors.DataError) as info:
        prepare.prepare(str(SEAHORSE), [JSONL], str(tmp_path / "out"), strict=True, log=None)
    assert str(info.value).startswith(
        f"{SEAHORSE / 'seahorse_data' / 'train.tsv'}:6 field 'gem_id':"
    )


def test_strict_reports_a_missing_article(tmp_path):
    data = tmp_path / "seahorse"
    data.mkdir()
    for split in ("train", "validation", "test"):
        header = (SEAHORSE / "seahorse_data" / f"{split}.tsv").read_text(encoding="utf-8")
        # Train and validation: one row whose article is found (a header alone is empty).
        row = f"xsum-test-4\ten-US\tA {split} summary.\tt5_base" + "\tYes" * 6 + "\n"
        row = "" if split == "test" else row
        (data / f"{split}.tsv").write_text(header.splitlines()[0] + "\n" + row, "utf-8")
    with (data / "test.tsv").open("a", encoding="utf-8") as f:
        f.write("xsum-test-3\ten-US\tA summary.\tt5_base\tYes\tYes\tYes\tYes\tYes\tYes\n")
    other = tmp_path / "articles.jsonl"
    other.write_text('{"gem_id": "xsum-test-4", "article": "Another article."}\n')
    with pytest.raises(errors.DataError, match=r"test.tsv:2 field 'gem_id': no article"):
        prepare.prepare(str(data), [str(other)], str(tmp_path / "out"), strict=True, log=None)


def test_missing_inputs_are_user_errors(tmp_path):
    with pytest.raises(errors.UserError, match="seahorse_data.zip"):
        prepare.prepare(str(tmp_path / "nowhere"), [JSONL], str(tmp_path / "out"), log=None)
    partial = tmp_path / "partial"
    shutil.copytree(SEAHORSE / "seahorse_data", partial)
    (partial / "test.tsv").unlink()
    with pytest.raises(errors.UserError, match="missing SEAHORSE file"):
        prepare.prepare(str(partial), [JSONL], str(tmp_path / "out"), log=None)
    with pytest.raises(errors.UserError, match="article source not found"):
        prepare.prepare(str(SEAHORSE), [str(tmp_path / "no.jsonl")], str(tmp_path / "o"), log=None)


def test_parquet_without_a_text_column_is_a_data_error(tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"gem_id": ["xsum-test-1"], "summary": ["x"]}), path)
    with pytest.raises(errors.DataError, match="lack 'gem_id' or a text column"):
        articles.load_articles([str(path)])


def test_cli_prints_one_line_per_split_and_a_summary(tmp_path, capsys):
    gem = _write_gem_parquet(tmp_path / "gem")
    out = tmp_path / "out"
    argv = ["prepare", "--seahorse_dir", str(SEAHORSE), "--articles", JSONL]
    assert cli.main(argv + ["--articles", str(gem), "--output_dir", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "train: read 14 rows, kept 7, dropped 7 (malformed_row 1, missing_gem_id 1, "
        "unparseable_gem_id 1, unknown_label 1, empty_summary 1, duplicate 1, "
        f"missing_article 1) -> {out / 'train.jsonl'}"
    )
    assert lines[1].startswith("validation: read 2 rows, kept 2, dropped 0 ->")
    assert lines[3].startswith(f"prepared 12 of 19 rows (7 dropped) into {out}")
    assert len(lines) == 4


def test_cli_strict_and_bad_folder_exit_2_with_one_line(tmp_path):
    base = [sys.executable, "-m", "seahorse_t5x.cli", "prepare", "--articles", JSONL]
    for extra in (
        ["--seahorse_dir", str(SEAHORSE), "--strict"],
        ["--seahorse_dir", str(tmp_path / "nowhere")],
    ):
        result = subprocess.run(
            base + extra + ["--output_dir", str(tmp_path / "out")],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 2
        assert result.stderr.startswith("seahorse-t5x prepare: error:")
        assert len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.stderr


def test_hub_source_without_the_datasets_package_is_a_user_error(monkeypatch):
    # The hub path is optional: without `datasets` it says what to install, offline.
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(errors.UserError, match="needs the `datasets` package"):
        articles.load_articles(["hf:GEM/xlsum:english:validation"])


def test_list_valued_texts_are_joined_and_unwanted_ids_skipped(tmp_path):
    path = tmp_path / "wiki_lingua.parquet"
    table = pa.table(
        {
            "gem_id": ["GEM-wiki_lingua_english_en-val-1", "wiki_lingua_english_en-val-2"],
            "source": [["Wash the pan.", "Dry it."], ["Unwanted."]],
        }
    )
    pq.write_table(table, path)
    texts, (report,) = articles.load_articles([str(path)], wanted={"wiki_lingua_english_en-val-1"})
    assert texts == {"wiki_lingua_english_en-val-1": "Wash the pan. Dry it."}
    assert (report.records_read, report.articles_added) == (2, 1)


def test_byte_order_mark_and_non_text_articles(tmp_path):
    path = tmp_path / "articles.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + b'{"gem_id": "xsum-test-1", "article": "First."}\n'
        + b'{"gem_id": "xsum-test-2", "article": 12345}\n'
        + b'{"gem_id": "xsum-test-3", "article": {"text": "nested"}}\n'
        + b'{"gem_id": "xsum-test-4", "article": "Caf\xe9"}\n'
    )
    texts, (report,) = articles.load_articles([str(path)])
    # The mark is not part of the first record; numbers, objects and bad bytes are no text.
    assert texts == {"xsum-test-1": "First."}
    assert report.bad_records == 3
    assert report.bad_examples == [
        f"{path}:2: field 'article' is int, expected text",
        f"{path}:3: field 'article' is dict, expected text",
        f"{path}:4: not valid UTF-8",
    ]


def test_nothing_kept_is_an_error_and_writes_nothing(tmp_path, capsys):
    # The only wanted record's article is a number: every rating row is left without one.
    bad = tmp_path / "articles.jsonl"
    bad.write_text('{"gem_id": "xlsum_english-test-1", "article": 12345}\n', encoding="utf-8")
    out = tmp_path / "out"
    argv = ["prepare", "--seahorse_dir", str(SEAHORSE), "--articles", str(bad)]
    assert cli.main(argv + ["--output_dir", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    train = SEAHORSE / "seahorse_data" / "train.tsv"
    assert captured.err == (
        f"seahorse-t5x prepare: error: {SEAHORSE}: no rows kept of 19 read (missing_article 13, "
        "missing_gem_id 1, malformed_row 1; first: "
        f"{train}:2 field 'gem_id': no article for 'xlsum_english-validation-6416' in the "
        "article sources); article sources: 1 records read, 0 articles for the ratings' "
        "gem_ids, 1 bad records (expected rating rows whose gem_id has an article in "
        "the article sources; nothing was written)\n"
    )
    # Neither empty split files nor a report are published.
    assert not out.exists()

"""An empty input file is one line naming the file, saying it is empty and what was expected.

Every reader, given a 0-byte file, a whitespace-only file and (for tables) a header with no
row after it: never a later, unrelated message, never silently nothing.
"""

from __future__ import annotations

import pathlib

import pytest

from seahorse_t5x import cli, errors
from seahorse_t5x.data import articles, readers, scorefiles
from seahorse_t5x.data.benchmarks import (
    aggrefact,
    frank,
    llm_aggrefact,
    metal,
    mface,
    nli,
    summeval,
    true,
)
from seahorse_t5x.inference import input_rows
from seahorse_t5x.scoring import import_scores, t5x_scores

IMPORT_PREPARED = pathlib.Path(__file__).parent / "testdata" / "import_scores" / "prepared"

SEAHORSE_HEADER = (
    "gem_id\tworker_lang\tsummary\tquestion1\tquestion2\tquestion3\tquestion4\tquestion5\t"
    "question6\tmodel\n"
)
EXTERNAL = "one record per line or item with the fields gem_id, score"
SCORE_INPUT = (
    "one row per line with an article and a summary (JSON Lines, or a CSV/TSV header and rows)"
)
TABLE_ROWS = "one record per line after the header"


def _write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _frank(path: pathlib.Path) -> None:
    frank.read_frank(path.parent)


def _frank_files(folder: pathlib.Path, text: str) -> pathlib.Path:
    _write(folder / "frank" / "human_annotations.json", "[]")
    return _write(folder / "frank" / "benchmark_data.json", text)


def _t5x_scores_split(path: pathlib.Path) -> None:
    """`t5x-scores` joining one infer record to the split file at `path`."""
    infer = _write(path.parent.parent / "infer.jsonl", '{"score": -0.5}\n')
    t5x_scores.convert([str(infer)], "seahorse_q4_score", str(path.parent), "test", "m")


def _empty_parquet(path: pathlib.Path, columns: tuple[str, ...]) -> pathlib.Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({c: pa.array([], pa.string()) for c in columns}), path)
    return path


# (case id, file name under tmp_path, reader called with the path, expected)
READERS = [
    (
        "seahorse_tsv",
        "train.tsv",
        lambda p: readers.read_ratings(str(p)),
        "the SEAHORSE header row (tab separated) and one rated summary per line",
    ),
    (
        "articles_jsonl",
        "articles.jsonl",
        lambda p: articles.load_articles([str(p)]),
        "GEM records (JSON Lines or Parquet) with gem_id and the article text",
    ),
    (
        "articles_parquet",
        "articles.parquet",
        lambda p: articles.load_articles([str(p)]),
        "GEM records (JSON Lines or Parquet) with gem_id and the article text",
    ),
    (
        "split_joined_by_t5x_scores",
        "prepared/test.jsonl",
        _t5x_scores_split,
        "one rated summary per line, as `seahorse-t5x prepare` writes the splits",
    ),
    (
        "mface",
        "mface.csv",
        lambda p: mface.read_mface(str(p), "attribution"),
        "a header row with the columns id, lang, split, input, summary, system, q2_avg",
    ),
    (
        "true",
        "true/summeval_download.csv",
        lambda p: true.read_all(str(p.parent)),
        "a header row with the columns grounding, generated_text, label",
    ),
    (
        "metal",
        "METAL_dataset.json",
        lambda p: metal.read_metal_labels(str(p), next(iter(metal.METAL_METRICS))),
        "a JSON object of METAL records keyed by record id",
    ),
    (
        "xlsum_articles",
        "xlsum.jsonl",
        lambda p: metal.read_xlsum_articles(str(p)),
        "one JSON object per line with an id and its article",
    ),
    (
        "summeval",
        "model_annotations.aligned.paired.jsonl",
        summeval.read_summeval,
        "one JSON object per line with id, model_id, decoded and expert_annotations",
    ),
    (
        "summeval_articles",
        "cnndm.jsonl",
        summeval.read_articles,
        "one JSON object per line with an id and its text",
    ),
    (
        "frank",
        "frank/benchmark_data.json",
        _frank,
        "a JSON list of FRANK records",
    ),
    (
        "aggrefact",
        "aggre_fact_final.csv",
        aggrefact.read_aggrefact,
        "a header row with the columns dataset, origin, id, doc, summary, model_name, label, cut",
    ),
    (
        "llm_aggrefact",
        "dev-00000.parquet",
        llm_aggrefact.read_llm_aggrefact,
        "a Parquet table with the columns dataset, doc, claim, label and at least one row",
    ),
    (
        "nli",
        "fever.jsonl",
        lambda p: nli.read_nli_jsonl(p, "fever"),
        "one JSON object per line with a premise, a hypothesis and a label",
    ),
    (
        "score_file",
        "scores.jsonl",
        lambda p: scorefiles.read_score_files([p]),
        "one score row per line (a JSON object with metric, benchmark, score, ...)",
    ),
    ("score_input_jsonl", "input.jsonl", lambda p: input_rows.check_input(p, False), SCORE_INPUT),
    ("score_input_tsv", "input.tsv", lambda p: input_rows.check_input(p, False), SCORE_INPUT),
    ("score_input_csv", "input.csv", lambda p: input_rows.check_input(p, False), SCORE_INPUT),
    (
        "t5x_infer",
        "infer.jsonl",
        lambda p: t5x_scores.read_infer_output([str(p)]),
        "one T5X score-mode record per line (infer.py with mode='score')",
    ),
    (
        "external_jsonl",
        "ext.jsonl",
        lambda p: import_scores.read_external_scores(p, ("gem_id",)),
        EXTERNAL,
    ),
    (
        "external_json",
        "ext.json",
        lambda p: import_scores.read_external_scores(p, ("gem_id",)),
        EXTERNAL,
    ),
    (
        "external_csv",
        "ext.csv",
        lambda p: import_scores.read_external_scores(p, ("gem_id",)),
        EXTERNAL,
    ),
]

# Whitespace-only is empty too, for the text readers (a Parquet file is binary).
CONTENTS = {"zero_bytes": "", "whitespace_only": " \n\n\t\n"}


CASES = [
    pytest.param(name, read, expected, content, id=f"{case}-{content}")
    for case, name, read, expected in READERS
    for content in CONTENTS
    if content == "zero_bytes" or not name.endswith(".parquet")
]


@pytest.mark.parametrize(("name", "read", "expected", "content"), CASES)
def test_an_empty_file_is_one_line_naming_it(tmp_path, name, read, expected, content):
    path = _write(tmp_path / name, CONTENTS[content])
    if name.startswith("frank/"):
        _write(tmp_path / "frank" / "human_annotations.json", "[]")
    with pytest.raises(errors.DataError) as info:
        read(path)
    assert str(info.value) == f"{path}: empty file; expected {expected}"
    assert "\n" not in str(info.value)


# (case id, file name, header line, reader, expected)
HEADER_ONLY = [
    ("seahorse_tsv", "train.tsv", SEAHORSE_HEADER, READERS[0][2], READERS[0][3]),
    (
        "mface",
        "mface.csv",
        "id,lang,split,input,summary,system,q2_avg,attribution\n",
        READERS[4][2],
        TABLE_ROWS,
    ),
    (
        "true",
        "true/summeval_download.csv",
        "grounding,generated_text,label\n",
        READERS[5][2],
        TABLE_ROWS,
    ),
    (
        "aggrefact",
        "aggre_fact_final.csv",
        "dataset,origin,id,doc,summary,model_name,label,cut\n\n",
        aggrefact.read_aggrefact,
        TABLE_ROWS,
    ),
    ("score_input_tsv", "input.tsv", "article\tsummary\n", READERS[16][2], SCORE_INPUT),
    ("score_input_csv", "input.csv", "article,summary\n", READERS[17][2], SCORE_INPUT),
    ("external_csv", "ext.csv", "gem_id,score\n", READERS[-1][2], EXTERNAL),
    ("external_tsv", "ext.tsv", "gem_id\tscore\n", READERS[-1][2], EXTERNAL),
]


@pytest.mark.parametrize(
    ("name", "header", "read", "expected"),
    [r[1:] for r in HEADER_ONLY],
    ids=[r[0] for r in HEADER_ONLY],
)
def test_a_header_without_rows_is_an_empty_file(tmp_path, name, header, read, expected):
    path = _write(tmp_path / name, header)
    with pytest.raises(errors.DataError) as info:
        read(path)
    assert str(info.value) == f"{path}: empty file (a header and no rows); expected {expected}"


@pytest.mark.parametrize(
    ("name", "read", "columns"),
    [
        (
            "dev-00000.parquet",
            llm_aggrefact.read_llm_aggrefact,
            ("dataset", "doc", "claim", "label"),
        ),
        ("articles.parquet", lambda p: articles.load_articles([str(p)]), ("gem_id", "document")),
    ],
    ids=["llm_aggrefact", "articles"],
)
def test_a_parquet_table_without_rows_is_an_empty_file(tmp_path, name, read, columns):
    path = _empty_parquet(tmp_path / name, columns)
    with pytest.raises(errors.DataError) as info:
        read(path)
    assert str(info.value).startswith(f"{path}: empty file; expected ")


@pytest.mark.parametrize(
    ("name", "text", "read", "expected"),
    [
        ("METAL_dataset.json", "{}", READERS[6][2], READERS[6][3]),
        ("frank/benchmark_data.json", "[ ]", _frank, "a JSON list of FRANK records"),
        ("ext.json", "[]", READERS[-2][2], EXTERNAL),
    ],
    ids=["metal", "frank", "external_json"],
)
def test_a_json_document_without_records_is_an_empty_file(tmp_path, name, text, read, expected):
    path = _write(tmp_path / name, text)
    if name.startswith("frank/"):
        _write(tmp_path / "frank" / "human_annotations.json", "[]")
    with pytest.raises(errors.DataError) as info:
        read(path)
    assert str(info.value) == f"{path}: empty file; expected {expected}"


def test_an_empty_true_csv_is_skipped_beside_others_with_a_note(tmp_path, capsys):
    folder = tmp_path / "true"
    empty = _write(folder / "summeval_download.csv", "")
    _write(
        folder / "frank_valid_download.csv",
        "grounding,generated_text,label\nThe cat sat.,A cat sat.,1\n",
    )
    results = true.read_all(str(folder))
    assert [(pathlib.Path(r.path).name, len(r.examples)) for r in results] == [
        ("frank_valid_download.csv", 1)
    ]
    # Noted for the command to report once it has run; the reader prints nothing.
    assert capsys.readouterr() == ("", "")
    others = [
        f
        for f, _ in true.TRUE_DATASETS.values()
        if f not in (empty.name, "frank_valid_download.csv")
    ]
    assert results[0].notes == [
        f"TRUE: 9 of 11 CSVs not in {folder}, skipped: {', '.join(others)}",
        f"TRUE summeval: {empty}: empty file; expected a header row with the columns "
        "grounding, generated_text, label; skipped",
    ]


def test_an_empty_later_shard_is_accepted_but_all_empty_is_not(tmp_path):
    shard0 = _write(tmp_path / "infer.jsonl-00000-of-00002", '{"score": -0.5}\n')
    shard1 = _write(tmp_path / "infer.jsonl-00001-of-00002", "")
    records = t5x_scores.read_infer_output([str(shard0), str(shard1)])
    assert [(r[0], r[1], r[2]["score"]) for r in records] == [(str(shard0), 1, -0.5)]
    shard0.write_text("")
    with pytest.raises(errors.DataError, match=r"infer\.jsonl-00000-of-00002: empty file; "):
        t5x_scores.read_infer_output([str(shard0), str(shard1)])


def test_report_on_an_empty_score_file_exits_2_with_one_line(tmp_path, capsys):
    empty = _write(tmp_path / "scores.jsonl", "")
    argv = ["report", "--scores", str(empty), "--output_dir", str(tmp_path / "out")]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"seahorse-t5x report: error: {empty}: empty file; expected one score row per line "
        "(a JSON object with metric, benchmark, score, ...)\n"
    )
    assert not (tmp_path / "out" / "report.json").exists()


def test_import_scores_on_an_empty_external_file_exits_2_with_one_line(tmp_path, capsys):
    empty = _write(tmp_path / "ext.csv", "article,summary,score\n")
    out = tmp_path / "x.jsonl"
    argv = ["import-scores", "--external", str(empty), "--metric", "m", "--output", str(out)]
    argv += ["--data_dir", str(IMPORT_PREPARED), "--key", "article,summary", "--questions", "4"]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == (
        f"seahorse-t5x import-scores: error: {empty}: empty file (a header and no rows); "
        "expected one record per line or item with the fields article, summary, score\n"
    )
    assert not out.exists()


def test_an_empty_split_a_seqio_task_reads_is_named_in_a_warning(tmp_path, monkeypatch, caplog):
    from seahorse_t5x import constants
    from seahorse_t5x.tasks import seahorse

    empty = _write(tmp_path / "validation.jsonl", "\n")
    monkeypatch.setenv(constants.ENV_DATA_DIR, str(tmp_path))
    with caplog.at_level("WARNING"):
        assert seahorse.labelled_row_count("validation", 1) == 0
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"{empty}: empty file; expected one rated summary per line, as `seahorse-t5x "
        "prepare` writes the splits"
    ]


def test_report_on_a_dataset_leaves_an_empty_split_out_with_a_warning(tmp_path, caplog):
    # `prepare` writes an empty split when it keeps no row of it: the dataset report says
    # so and reports the others.
    import json

    from seahorse_t5x.evaluation import report

    row = {"gem_id": "x-1", "language": "en", "dataset": "xsum", "system": "s"}
    row |= {"summary": "S.", "article": "A.", **{f"q{q}": 1 for q in range(1, 7)}}
    _write(tmp_path / "train.jsonl", json.dumps(row) + "\n")
    empty = _write(tmp_path / "test.jsonl", "")
    with caplog.at_level("WARNING"):
        items = report.read_prepared_dir(tmp_path)
    assert items["split"].tolist() == ["train"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"{empty}: empty file; expected one rated summary per line, as `seahorse-t5x "
        "prepare` writes the splits; the report leaves that split out"
    ]

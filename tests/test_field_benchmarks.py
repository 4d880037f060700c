"""SummEval, FRANK, LLM-AggreFact and AggreFact read from fixtures in their released
formats, with the traps the real files hold: exact kept/dropped counts per benchmark."""

import json
import pathlib

import pytest

from seahorse_t5x import cli, errors
from seahorse_t5x.data.benchmarks import registry

DATA = pathlib.Path(__file__).parent / "testdata" / "benchmarks"


def _read(name, path, **options):
    return registry.get(name).read_all(DATA / path, **options)


def test_summeval_paired_file_keeps_16_summaries_per_dimension_and_counts_two_drops():
    results = _read("summeval", "summeval")
    assert [len(r.examples) for r in results] == [16, 16, 16, 16]
    assert [r.drop_counts() for r in results] == [{"decoded": 1, "row": 1}] * 4
    coherence, consistency, fluency, _ = results
    # The human score is the mean of three experts; a `3.0` rating is 3.
    first = json.loads(
        (DATA / "summeval/model_annotations.aligned.paired.jsonl").read_text().splitlines()[1]
    )
    assert first["expert_annotations"][0]["fluency"] == 3.0
    expected = sum(a["fluency"] for a in first["expert_annotations"]) / 3
    assert fluency.examples[1]["label"] == expected
    assert fluency.examples[1]["system"] == "M11"
    # Four systems per document; one document whose consistency is constant (all 5).
    documents = {e["gem_id"] for e in coherence.examples}
    assert len(documents) == 4
    constant = [
        d
        for d in documents
        if {e["label"] for e in consistency.examples if e["gem_id"] == d} == {5.0}
    ]
    assert constant == ["dm-test-1a2b3c4d5e6f708192a3b4c5d6e7f80910111213"]
    assert coherence.examples[4]["premise"].startswith("Zürich (CNN)")


def test_summeval_unpaired_file_takes_articles_apart():
    results = _read(
        "summeval",
        "summeval/model_annotations.aligned.jsonl",
        articles=str(DATA / "summeval/articles.jsonl"),
    )
    assert [len(r.examples) for r in results] == [4] * 4
    assert results[0].drop_counts() == {"decoded": 1, "text": 3}


def test_frank_joins_one_to_one_and_keeps_numeric_looking_hashes_as_strings():
    (result,) = _read("frank", "frank")
    assert len(result.examples) == 18
    assert result.drop_counts() == {"Factuality": 1, "hash": 1}
    hashes = {e["gem_id"] for e in result.examples}
    assert "00981234" in hashes and "34687720" in hashes  # not 981234
    assert {e["split"] for e in result.examples} == {"validation", "test"}
    assert {e["dataset"] for e in result.examples} == {"cnndm", "bbc"}
    bart = [e for e in result.examples if e["system"] == "bart"]
    assert len(bart) == 3 and all(isinstance(e["label"], float) for e in bart)
    assert {e["label"] for e in result.examples if e["gem_id"] == "00981234"} == {1.0}


def test_llm_aggrefact_reads_dev_and_test_parquet_and_counts_bad_rows():
    dev, test = _read("llm_aggrefact", "llm_aggrefact")
    assert (len(dev.examples), len(test.examples)) == (12, 15)
    assert (dev.drop_counts(), test.drop_counts()) == ({}, {"claim": 1, "label": 1})
    assert {e["split"] for e in dev.examples} == {"validation"}
    assert {e["dataset"] for e in test.examples} == {"AggreFact-CNN", "Wice", "RAGTruth"}
    # `1.0` in a float column is the label 1; ids are stable hashes of the texts.
    assert {e["label"] for e in test.examples} == {0, 1}
    assert len({e["gem_id"] for e in dev.examples + test.examples}) == 27
    assert "\nPassage 2" in test.examples[10]["premise"]


def test_llm_aggrefact_file_name_must_say_its_split(tmp_path):
    (tmp_path / "train.parquet").write_bytes(b"")
    with pytest.raises(errors.UserError, match="expected dev-\\*.parquet or test-\\*.parquet"):
        registry.get("llm_aggrefact").read_all(tmp_path)


def test_aggrefact_csv_with_quotes_newlines_float_labels_and_a_short_record():
    (result,) = _read("aggrefact", "aggrefact")
    assert len(result.examples) == 28
    assert result.drop_counts() == {"label": 1, "row": 1}
    first = result.examples[0]
    assert first["premise"].startswith('He said "we will not stop", the report said.\nIt was')
    assert first["hypothesis"] == 'BART says, "FRANK" item 0.'
    assert (first["label"], first["split"], first["origin"]) == (1, "validation", "cnndm")
    xsum_ids = {e["gem_id"] for e in result.examples if e["dataset"] == "XSumFaith"}
    assert xsum_ids == {"34687720", "00712345"}
    assert sum(e["split"] == "test" for e in result.examples) == 16


def test_aggrefact_missing_column_is_a_data_error(tmp_path):
    (tmp_path / "aggre_fact_final.csv").write_text("dataset,origin,id,doc,summary\n")
    with pytest.raises(
        errors.DataError, match="missing columns \\['model_name', 'label', 'cut'\\]"
    ):
        registry.get("aggrefact").read_all(tmp_path)


@pytest.mark.parametrize(
    ("name", "write", "message"),
    [
        (
            "aggrefact",
            lambda d: (d / "aggre_fact_final.csv").write_bytes(b"dataset,origin\n\xff\xfe\n"),
            "not UTF-8 text",
        ),
        (
            "llm_aggrefact",
            lambda d: (d / "test-00000-of-00001.parquet").write_bytes(b"not parquet"),
            "not a readable Parquet file",
        ),
        (
            "frank",
            lambda d: (d / "human_annotations.json").write_text("{}"),
            "FRANK benchmark data not found",
        ),
        (
            "summeval",
            lambda d: (d / "notes.txt").write_text(""),
            "holds neither model_annotations.aligned.paired.jsonl",
        ),
    ],
)
def test_bad_release_files_are_one_line_errors(tmp_path, capsys, name, write, message):
    folder = tmp_path / name
    folder.mkdir()
    write(folder)
    code = cli.main(
        [
            "baselines",
            "--output_dir",
            str(tmp_path / "out"),
            "--vocab",
            "demo",
            "--benchmark",
            name,
            "--benchmark_path",
            str(folder),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()

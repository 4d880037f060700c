"""Majority and ROUGE-L baselines: yes rates, stated metrics, and the `baselines` command."""

import json
import pathlib

import pytest
from sklearn.metrics import roc_auc_score

from seahorse_t5x import cli, errors
from seahorse_t5x.data import scorefiles, splits
from seahorse_t5x.scoring import baselines, rouge

BENCHMARKS = pathlib.Path(__file__).parent / "testdata" / "benchmarks"


def _row(gem_id, labels, summary, article, language="en"):
    row = {
        "gem_id": gem_id,
        "language": language,
        "dataset": "xlsum",
        "system": "mt5_xxl",
        "summary": summary,
        "article": article,
    }
    row.update({f"q{q}": label for q, label in zip(range(1, 7), labels, strict=True)})
    return row


TRAIN = [
    _row("xlsum_english-validation-1", [1, 1, 1, 1, 0, 0], "a", "b"),
    _row("xlsum_english-validation-2", [1, 0, 1, 0, 0, None], "a", "b"),
    _row("xlsum_english-validation-3", [1, 1, 0, 1, 1, 1], "a", "b"),
    _row("xlsum_english-validation-4", [0, None, None, None, None, None], "a", "b"),
]
ARTICLE = "the council approved a new park in the city on monday"
TEST = [
    _row("xlsum_english-test-1", [1, 1, 1, 1, 1, 1], "the council approved a new park", ARTICLE),
    _row("xlsum_english-test-2", [1, 1, 0, 0, 0, 0], "rain fell on the city", ARTICLE),
    _row("xlsum_english-test-3", [0, None, None, None, None, None], "park park park", ARTICLE),
]


def _write_split(directory: pathlib.Path, name: str, rows) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / f"{name}.jsonl").open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


@pytest.fixture(scope="module")
def sp_model(tmp_path_factory) -> str:
    import sentencepiece

    folder = tmp_path_factory.mktemp("sp")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join([ARTICLE, "rain fell on the city", "park park park"] * 20))
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "sp"),
        vocab_size=40,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return str(folder / "sp.model")


def test_yes_rates_count_only_rated_items():
    rates = baselines.yes_rates(TRAIN)
    assert rates == {1: 3 / 4, 2: 2 / 3, 3: 2 / 3, 4: 2 / 3, 5: 1 / 3, 6: 1 / 2}


def test_yes_rates_without_ratings_is_a_user_error():
    with pytest.raises(errors.UserError, match=r"\[1, 2, 3, 4, 5, 6\]"):
        baselines.yes_rates([])


def test_majority_metrics_are_stated_not_computed():
    assert baselines.majority_metrics([1, 0, 1])["roc_auc"] == 0.5
    # sklearn agrees: a constant score ties every pair.
    assert roc_auc_score([1, 0, 1], [0.7, 0.7, 0.7]) == 0.5
    result = baselines.majority_metrics([1, 0, 1])
    assert result["pearson"] is None and "constant" in result["reasons"]["pearson"]
    assert baselines.majority_metrics([1, 1])["roc_auc"] is None


def test_majority_accuracy_is_the_share_of_the_larger_class():
    labels = [1, 0, 0, 1, 0, float("nan")]
    result = baselines.majority_metrics(labels)
    assert result["n"] == 5
    # Always answering the larger class (No) is right on 3 of the 5 labelled items.
    assert result["accuracy"] == 3 / 5
    assert baselines.majority_metrics([1, 1])["accuracy"] == 1.0
    graded = baselines.majority_metrics([0.25, 1.0])
    assert graded["accuracy"] is None and "graded" in graded["reasons"]["accuracy"]


def test_majority_rows_skip_unrated_questions():
    rows = baselines.majority_score_rows(TEST, baselines.yes_rates(TRAIN))
    # Q1 rated on 3 items, Q2..Q6 on 2 each.
    assert len(rows) == 3 + 5 * 2
    q4 = [r for r in rows if r["question"] == 4]
    assert [(r["gem_id"], r["label"], r["score"]) for r in q4] == [
        ("xlsum_english-test-1", 1, 2 / 3),
        ("xlsum_english-test-2", 0, 2 / 3),
    ]


def test_split_rows_reject_bad_labels(tmp_path):
    bad = dict(TEST[0], q3="Yes")
    _write_split(tmp_path, "test", [TEST[0], bad])
    with pytest.raises(errors.DataError, match="q3") as info:
        splits.read_rows(tmp_path / "test.jsonl")
    assert info.value.line == 2


def test_cli_writes_valid_score_files(tmp_path, sp_model, capsys):
    data = tmp_path / "prepared"
    _write_split(data, "train", TRAIN)
    _write_split(data, "test", TEST)
    out = tmp_path / "scores"
    code = cli.main(
        [
            "baselines",
            "--data_dir",
            str(data),
            "--output_dir",
            str(out),
            "--vocab",
            sp_model,
            "--benchmark",
            "mface",
            "--benchmark_path",
            str(BENCHMARKS / "mface.csv"),
            "--mface_languages",
            "5lang",
            "--benchmark",
            "true",
            "--benchmark_path",
            str(BENCHMARKS / "true"),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert f"{out / 'majority.seahorse.test.jsonl'}: 13 rows" in printed
    # rho, then ROC-AUC, as every table prints them.
    assert f"{out / 'rouge_l.true.jsonl'}: 5 rows, rho/ROC FRANK:" in printed
    assert "FRANK:" in printed and "PAWS:" in printed
    # TRUE's note on the fixture's 9 absent CSVs, once the files are written.
    lines = printed.splitlines()
    assert lines[-1] == f"baselines: 4 score files in {out}"
    assert lines[-2].startswith(f"note: TRUE: 9 of 11 CSVs not in {BENCHMARKS / 'true'}, ")
    assert sum("TRUE" in line for line in lines) == 1

    majority = scorefiles.read_score_file(out / "majority.seahorse.test.jsonl")
    assert len(majority) == 13 and set(majority["metric"]) == {"majority"}

    rouge_rows = scorefiles.read_score_file(out / "rouge_l.seahorse.test.jsonl")
    tokenize = rouge.sentencepiece_tokenizer(sp_model)
    expected = rouge.rouge_l_fmeasure(ARTICLE, "the council approved a new park", tokenize)
    first = rouge_rows[rouge_rows["gem_id"] == "xlsum_english-test-1"]
    assert len(first) == 6
    assert first["score"].tolist() == pytest.approx([expected] * 6)
    assert 0 < expected < 1

    true_rows = scorefiles.read_score_file(out / "rouge_l.true.jsonl")
    assert sorted(set(true_rows["dataset"])) == ["FRANK", "PAWS"]
    assert len(true_rows) == 5
    mface_rows = scorefiles.read_score_file(out / "rouge_l.mface.jsonl")
    # 5-language subset: quality 7, attribution 5, informativeness 7 items.
    assert mface_rows.groupby("question").size().to_dict() == {
        "attribution": 5,
        "informativeness": 7,
        "quality": 7,
    }
    assert set(mface_rows["label_binary"]) == {0, 1}
    assert (out / "rouge_l.metal.jsonl").exists() is False


def test_cli_remote_vocab_is_a_clear_error(tmp_path):
    data = tmp_path / "prepared"
    _write_split(data, "train", TRAIN)
    _write_split(data, "test", TEST)
    code = cli.main(
        [
            "baselines",
            "--data_dir",
            str(data),
            "--output_dir",
            str(tmp_path / "o"),
            "--vocab",
            "gs://t5-data/vocabs/mc4.250000.100extra/sentencepiece.model",
        ]
    )
    assert code == 2


def test_cli_missing_split_file_names_prepare(tmp_path, capsys):
    code = cli.main(["baselines", "--data_dir", str(tmp_path), "--output_dir", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "test.jsonl" in err and "seahorse-t5x prepare" in err


def test_cli_empty_split_is_an_error_and_writes_nothing(tmp_path, capsys):
    data = tmp_path / "prepared"
    _write_split(data, "train", TRAIN)
    _write_split(data, "test", [])
    out = tmp_path / "o"
    code = cli.main(["baselines", "--data_dir", str(data), "--output_dir", str(out)])
    assert code == 2
    assert capsys.readouterr().err == (
        f"seahorse-t5x baselines: error: {data / 'test.jsonl'}: holds no rows (expected the "
        "rows of a `seahorse-t5x prepare` run that kept some)\n"
    )
    assert not out.exists()


def test_cli_benchmark_with_every_row_dropped_writes_nothing(tmp_path, sp_model, capsys):
    data = tmp_path / "prepared"
    _write_split(data, "train", TRAIN)
    _write_split(data, "test", TEST)
    true_dir = tmp_path / "true"
    true_dir.mkdir()
    (true_dir / "frank_valid_download.csv").write_text(
        "grounding,generated_text,label\nAn article.,A summary.,maybe\n", encoding="utf-8"
    )
    out = tmp_path / "o"
    args = ["baselines", "--data_dir", str(data), "--output_dir", str(out), "--vocab", sp_model]
    assert cli.main(args + ["--benchmark", "true", "--benchmark_path", str(true_dir)]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"seahorse-t5x baselines: error: --benchmark true --benchmark_path {true_dir}: no true "
        "example kept, all "
        "dropped (see the lines above; expected rows with texts and labels)\n"
    )
    assert "frank_valid_download.csv: 0 examples kept, 1 dropped" in captured.out
    assert "not in" not in captured.out  # (the absent CSVs' note: only with a result)
    assert not out.exists()


def test_cli_benchmarks_without_rouge_l_is_a_clear_error(tmp_path, capsys):
    data = tmp_path / "prepared"
    _write_split(data, "train", TRAIN)
    _write_split(data, "test", TEST)
    code = cli.main(
        [
            "baselines",
            "--data_dir",
            str(data),
            "--output_dir",
            str(tmp_path / "o"),
            "--baselines",
            "majority",
            "--benchmark",
            "true",
            "--benchmark_path",
            str(BENCHMARKS / "true"),
        ]
    )
    assert code == 2
    assert "ROUGE-L only" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cli_true_dir_without_csvs_is_a_clear_error(tmp_path, sp_model, capsys):
    data = tmp_path / "prepared"
    _write_split(data, "train", TRAIN)
    _write_split(data, "test", TEST)
    args = ["baselines", "--data_dir", str(data), "--output_dir", str(tmp_path / "o")]
    code = cli.main(
        args + ["--vocab", sp_model, "--benchmark", "true", "--benchmark_path", str(tmp_path)]
    )
    assert code == 2
    assert "frank_valid_download.csv" in capsys.readouterr().err

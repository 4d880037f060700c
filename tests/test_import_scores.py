"""External metrics and METAL's LLM scores -> score files -> `report`, with checked joins."""

from __future__ import annotations

import collections
import csv
import json
import pathlib

import numpy as np
import pytest
from scipy import stats as sp_stats
from sklearn.metrics import roc_auc_score

from seahorse_t5x import cli, errors
from seahorse_t5x.data import benchmarks, scorefiles
from seahorse_t5x.evaluation import report
from seahorse_t5x.scoring import import_scores, t5x_scores

TESTDATA = pathlib.Path(__file__).parent / "testdata" / "import_scores"
PREPARED = TESTDATA / "prepared"
TIGERSCORE = TESTDATA / "tigerscore.json"
METAL = TESTDATA / "metal_llm.json"


def _split_rows() -> list[dict]:
    return [json.loads(x) for x in (PREPARED / "test.jsonl").read_text().splitlines()]


def _tiger_results() -> list[dict]:
    return json.loads(TIGERSCORE.read_text())


def _report(tmp_path, paths) -> dict:
    settings = report.ReportSettings(by=("language",), n_resamples=50, plots=False)
    return report.write_report(tmp_path / "report", score_paths=paths, settings=settings)


def _entry(result: dict, metric: str, question: str) -> dict:
    (entry,) = [
        r
        for r in result["scores"]["results"]
        if r["metric"] == metric and r["question"] == question
    ]
    return entry


# --------------------------------------------------------------------------- TIGERScore


def test_tigerscore_json_joins_on_article_and_summary(tmp_path, capsys):
    out = tmp_path / "scores" / "tigerscore.seahorse.jsonl"
    code = cli.main(
        [
            "import-scores",
            "--external",
            str(TIGERSCORE),
            "--metric",
            "tigerscore",
            "--benchmark",
            "seahorse",
            "--data_dir",
            str(PREPARED),
            "--split",
            "test",
            "--questions",
            "1,2,3,4,5,6",
            "--key",
            "article,summary",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    join = json.loads((tmp_path / "scores" / "tigerscore.seahorse.join.json").read_text())
    # The fixture: 19 summaries + a repeated result + one of another article = 21 results;
    # result 4 has no score (TIGERScore could not parse its output).
    assert join["external_rows"] == 21
    assert join["invalid_rows"] == 1
    assert join["duplicated_keys"] == 1 and join["duplicated_rows"] == 2
    assert join["unmatched_rows"] == 1
    rows = _split_rows()
    labelled = sum(r[f"q{q}"] is not None for r in rows for q in range(1, 7))
    assert join["benchmark_items"] == labelled == 109
    # Split rows 3 (no score) and 6 (scored twice) stay unscored: 6 questions each.
    assert join["unscored_items"] == 12 and join["ambiguous_items"] == 0
    assert join["matched_items"] == labelled - 12
    assert "1 unmatched" in printed and "2 in 1 duplicated keys" in printed
    assert join["examples"]["unmatched"] == [
        "An article that is not in the split. | " + _tiger_results()[0]["hypo_output"]
    ]

    # Into the report: the same ROC-AUC and Pearson as sklearn/scipy on the joined pairs.
    result = _report(tmp_path, [out])
    results = _tiger_results()
    labels, scores = [], []
    for index, row in enumerate(rows):
        if index in (3, 6) or row["q4"] is None:
            continue
        (match,) = [
            r
            for r in results[:19]
            if r["input_context"] == row["article"] and r["hypo_output"] == row["summary"]
        ]
        labels.append(row["q4"])
        scores.append(match["score"])
    entry = _entry(result, "tigerscore", "4")
    assert entry["n"] == len(labels) == 16
    assert entry["roc_auc"] == pytest.approx(roc_auc_score(labels, scores))
    assert entry["pearson"] == pytest.approx(sp_stats.pearsonr(labels, scores).statistic)
    assert entry["ci"]["roc_auc"]["n_resamples"] == 50
    table5 = next(t for t in result["tables"] if t["name"] == "table5")
    assert [r[0] for r in table5["rows"]] == ["tigerscore"]


def test_gem_id_alone_is_ambiguous_for_seahorse_and_nothing_is_guessed(tmp_path):
    path = tmp_path / "metric.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["gem_id", "system", "errors"])
        for row in _split_rows():
            writer.writerow([row["gem_id"], row["system"], len(row["summary"])])
    external = import_scores.read_external_scores(path, ("gem_id",), "errors")
    items = import_scores.seahorse_items(PREPARED, "test")
    # Every gem_id of the fixture has 2 or 3 systems: every external key is duplicated.
    with pytest.raises(errors.UserError, match="no seahorse item matched"):
        import_scores.join_scores(external, items, ("gem_id",), "m", "seahorse")

    key = ("gem_id", "system")
    external = import_scores.read_external_scores(path, key, "errors")
    rows, join = import_scores.join_scores(external, items, key, "m", "seahorse", negate=True)
    assert join.matched_items == len(items) == 109 and join.invalid_rows == 0
    lengths = {(r["gem_id"], r["system"]): len(r["summary"]) for r in _split_rows()}
    assert all(r["score"] == -lengths[(r["gem_id"], r["system"])] for r in rows)
    assert collections.Counter(r["question"] for r in rows)[1] == 19

    # Benchmark items sharing a key within one question are ambiguous, not picked from.
    doubled = items + [dict(items[0])]
    rows, join = import_scores.join_scores(external, doubled, key, "m", "seahorse")
    assert join.ambiguous_items == 2 and join.matched_items == 108


def test_jsonl_keyed_by_id_with_gem_prefix_and_bad_rows(tmp_path):
    rows = _split_rows()
    path = tmp_path / "m.jsonl"
    lines = [
        {"id": f"GEM-{rows[0]['gem_id']}", "model": rows[0]["system"], "value": "0.25"},
        {"id": rows[1]["gem_id"], "model": rows[1]["system"], "value": "n/a"},
        {"model": rows[2]["system"], "value": 1},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    external = import_scores.read_external_scores(path, ("gem_id", "system"), "value")
    assert list(external.by_key) == [(rows[0]["gem_id"], rows[0]["system"])]
    assert [(e.line, e.field) for e in external.invalid] == [(2, "value"), (3, "gem_id")]


def test_user_mistakes_are_one_line_errors(tmp_path, capsys):
    base = ["import-scores", "--external", str(TIGERSCORE), "--output", str(tmp_path / "x.jsonl")]
    assert cli.main([*base, "--metric", "t", "--key", "gem_id,title"]) == 2
    assert "--key must be comma-separated fields" in capsys.readouterr().err
    assert cli.main([*base, "--key", "gem_id"]) == 2
    assert "--metric must name" in capsys.readouterr().err
    assert cli.main([*base, "--metric", "t", "--benchmark", "seahorse", "--questions", "4"]) == 2
    assert "--data_dir" in capsys.readouterr().err
    with pytest.raises(errors.UserError, match="scores file not found"):
        import_scores.read_external_scores(tmp_path / "absent.json", ("gem_id",))
    (tmp_path / "s.txt").write_text("x")
    with pytest.raises(errors.UserError, match="expected a .json"):
        import_scores.read_external_scores(tmp_path / "s.txt", ("gem_id",))


def test_a_single_question_score_file_without_questions_is_refused(tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    argv = ["import-scores", "--external", str(TIGERSCORE), "--metric", "t", "--output", str(out)]
    assert cli.main([*argv, "--data_dir", str(PREPARED), "--key", "article,summary"]) == 2
    assert capsys.readouterr().err == (
        f"seahorse-t5x import-scores: error: {TIGERSCORE} holds one score per item: name the "
        "SEAHORSE question it answers with --questions N (e.g. --questions 4); --questions "
        "1,2,3,4,5,6 joins the same score to all six\n"
    )
    assert not out.exists()
    argv += ["--data_dir", str(PREPARED), "--key", "article,summary", "--questions", "4"]
    assert cli.main(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and {r["question"] for r in rows} == {4}


# --------------------------------------------------------------------------- METAL LLM scores


def _metal_expected(metric: str, evaluator: str, prompt: str) -> tuple[list, list]:
    """Human and LLM values straight from the JSON, scaled and flipped as documented."""
    top, worse = benchmarks.METAL_METRICS[metric]
    field = {"simple": "LLM_Scores_Simple", "detailed": "LLM_Scores_Detailed"}[prompt]
    words = {"Good": 2, "Medium": 1, "Bad": 0}
    labels, scores = [], []
    for record in json.loads(METAL.read_text()).values():
        raw = record[field][metric]["scores"][evaluator]
        raw = words.get(raw, raw)
        if not isinstance(raw, int) or not 0 <= raw <= top:
            continue
        human = np.mean(list(record["Human_Scores"][metric].values())) / top
        labels.append(1 - human if worse else human)
        scores.append(1 - raw / top if worse else raw / top)
    return labels, scores


def test_metal_llm_scores_become_score_files_and_reach_the_report(tmp_path, capsys):
    out = tmp_path / "metal_scores"
    assert cli.main(["import-scores", "--metal_llm", str(METAL), "--output_dir", str(out)]) == 0
    printed = capsys.readouterr()
    files = sorted(p.name for p in out.glob("*.jsonl"))
    assert files == [
        f"metal_{e}_{p}.metal.jsonl"
        for e in ("gpt_35_turbo", "gpt_4", "palm2")
        for p in ("detailed", "simple")
    ]
    # 12 records x 5 metrics x 2 prompts x 3 evaluators, less a missing and an
    # out-of-range LLM score (a word score, "Medium", is read as 1).
    frame = scorefiles.read_score_files([out])
    assert len(frame) == 12 * 5 * 2 * 3 - 2
    assert "358 METAL LLM scores in 6 files" in printed.out
    assert "2 dropped" in printed.err
    assert set(frame["benchmark"]) == {"metal"}
    assert set(frame["language"]) == {"en", "hi"}

    result = _report(tmp_path, [out])
    for metric, evaluator, prompt in (
        ("task_quality", "gpt-4", "simple"),
        ("task_quality", "PaLM2", "simple"),
        ("hallucinations", "PaLM2", "detailed"),
        ("output_content_quality", "gpt-35-turbo", "simple"),
    ):
        labels, scores = _metal_expected(metric, evaluator, prompt)
        name = benchmarks.metal_llm_metric_name(evaluator, prompt)
        entry = _entry(result, name, metric)
        assert entry["n"] == len(labels)
        assert entry["pearson"] == pytest.approx(sp_stats.pearsonr(labels, scores).statistic)
        assert entry["spearman"] == pytest.approx(sp_stats.spearmanr(labels, scores).statistic)
    assert _entry(result, "metal_palm2_detailed", "hallucinations")["n"] == 11
    # The paired comparison uses the items both evaluators scored.
    pairs = [
        c
        for c in result["scores"]["significance"]
        if c["question"] == "task_quality"
        and {c["metric_a"], c["metric_b"]} == {"metal_gpt_4_simple", "metal_palm2_simple"}
    ]
    assert len(pairs) == 1 and pairs[0]["n_items"] == 12
    assert pairs[0]["paired_by"] == ["gem_id", "system", "dataset"]
    assert any(t["name"] == "metal_table" for t in result["tables"])


def test_metal_llm_file_without_llm_scores_is_an_error_and_writes_nothing(tmp_path, capsys):
    # Human labels only: every record is dropped for want of LLM scores.
    labels_only = pathlib.Path(__file__).parent / "testdata" / "benchmarks" / "metal.json"
    out = tmp_path / "metal_scores"
    argv = ["import-scores", "--metal_llm", str(labels_only), "--output_dir", str(out)]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    first_key = next(iter(json.loads(labels_only.read_text())))
    # 5 records x 5 metrics x 2 prompts, less the record without linguistic_acceptability
    # annotator scores, which is dropped once (Human_Scores) instead of twice.
    assert captured.err == (
        f"seahorse-t5x import-scores: error: {labels_only}: no METAL LLM score kept: 5 records "
        "read, all dropped (49 drops by field: LLM_Scores_Simple 24, LLM_Scores_Detailed 24, "
        f"Human_Scores 1; first: {labels_only}[{first_key}] field "
        "'LLM_Scores_Simple.linguistic_acceptability.scores': missing) (expected records with "
        "Language, Human_Scores, Generated_Summary and LLM_Scores_Simple/LLM_Scores_Detailed; "
        "nothing was written)\n"
    )
    assert captured.out == ""
    assert not out.exists()
    one = tmp_path / "one.json"
    one.write_text('{"k": {"XLSum_ID": 5}}')
    assert cli.main(["import-scores", "--metal_llm", str(one), "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        "no METAL LLM score kept: 1 records read, all dropped (5 drops by field: Language 5;" in err
    )
    assert not out.exists()


def test_metal_llm_writes_into_output_dir_and_output_is_its_older_spelling(tmp_path, capsys):
    # --output is a file in every command; --metal_llm writes a folder: --output_dir.
    base = ["import-scores", "--metal_llm", str(METAL)]
    assert cli.main([*base, "--output", str(tmp_path / "old")]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == (
        "seahorse-t5x import-scores: note: --output with --metal_llm is deprecated; use "
        "--output_dir"
    )
    assert cli.main([*base, "--output_dir", str(tmp_path / "new")]) == 0
    assert "note:" not in capsys.readouterr().err
    names = sorted(p.name for p in (tmp_path / "new").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "old").iterdir()) and len(names) == 6
    for name in names:
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes()
    # Each source with its own output: one line naming the flag to give.
    assert cli.main(base) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x import-scores: error: --metal_llm writes a folder of score files: give "
        "--output_dir DIR\n"
    )
    external = ["import-scores", "--external", str(TIGERSCORE), "--metric", "t"]
    assert cli.main([*external, "--output_dir", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x import-scores: error: --output_dir is the folder of --metal_llm: give "
        "--output FILE for the score file\n"
    )


def test_csv_without_a_required_column_is_an_error_at_its_header(tmp_path, capsys):
    rows = _split_rows()
    path = tmp_path / "m.csv"
    path.write_text(f"gem_id,system,value\n{rows[0]['gem_id']},{rows[0]['system']},0.5\n")
    argv = ["import-scores", "--external", str(path), "--metric", "m", "--data_dir", str(PREPARED)]
    argv += ["--questions", "4"]
    out = tmp_path / "m.seahorse.jsonl"
    assert cli.main([*argv, "--output", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"seahorse-t5x import-scores: error: {path}:1: missing column 'score' (columns found: "
        "gem_id, system, value; --key and --score_field name the columns used)\n"
    )
    assert not out.exists()
    # Any of a key field's names will do; a key field under none of them is named with them.
    tsv = tmp_path / "m.tsv"
    tsv.write_text(f"id\tscore\n{rows[0]['gem_id']}\t0.5\n")
    with pytest.raises(errors.DataError) as info:
        import_scores.read_external_scores(tsv, ("gem_id", "system"))
    assert str(info.value) == (
        f"{tsv}:1: missing column 'system' (or model) (columns found: id, score; --key and "
        "--score_field name the columns used)"
    )
    assert import_scores.read_external_scores(tsv, ("gem_id",)).rows == 1


def test_tsv_fields_are_split_on_tabs_only_and_csv_fields_are_quoted(tmp_path):
    # A summary that starts with a quote reads as written in a TSV (no quoting, as every
    # TSV of the package is read), and as the CSV writer quoted it in a CSV.
    tsv = tmp_path / "m.tsv"
    tsv.write_text('gem_id\tsummary\tscore\nx-1\t"Yes," he said.\t0.5\n', encoding="utf-8")
    csv_path = tmp_path / "m.csv"
    csv_path.write_text('gem_id,summary,score\nx-1,"""Yes,"" he said.",0.5\n', encoding="utf-8")
    for path in (tsv, csv_path):
        read = import_scores.read_external_scores(path, ("gem_id", "summary"))
        assert read.by_key == {("x-1", '"Yes," he said.'): [(f"{path}:2", 0.5)]}
        assert (read.rows, read.invalid) == (1, [])


def test_metal_labels_join_external_scores_by_record_id(tmp_path):
    data = json.loads(METAL.read_text())
    path = tmp_path / "ext.json"
    path.write_text(json.dumps({key: {"score": i / 10} for i, key in enumerate(data)}))
    items, dropped, notes = import_scores.benchmark_items("metal", path=str(METAL))
    assert dropped == [] and notes == [] and len(items) == 12 * 5
    external = import_scores.read_external_scores(path, ("gem_id",))
    rows, join = import_scores.join_scores(external, items, ("gem_id",), "ext", "metal")
    assert join.matched_items == 60 and join.unmatched_rows == 0
    first = next(r for r in rows if r["question"] == "hallucinations")
    record = data[first["gem_id"]]
    mean = np.mean(list(record["Human_Scores"]["hallucinations"].values()))
    assert first["label"] == pytest.approx(1 - mean)
    assert first["system"] == f"gpt4_{record['Type'].lower()}"
    with pytest.raises(errors.UserError, match="give --xlsum_articles"):
        import_scores.join_scores(external, items, ("article",), "ext", "metal")


def test_read_metal_is_unchanged_by_the_llm_reader():
    articles = benchmarks.read_xlsum_articles(
        pathlib.Path(__file__).parent / "testdata" / "benchmarks" / "xlsum_articles.jsonl"
    )
    fixture = pathlib.Path(__file__).parent / "testdata" / "benchmarks" / "metal.json"
    result = benchmarks.read_metal(fixture, "hallucinations", articles)
    labels = benchmarks.read_metal_labels(fixture, "hallucinations")
    assert [e["gem_id"] for e in result.examples] == [
        e["gem_id"] for e in labels.examples if e["xlsum_id"] in articles
    ]
    assert all("premise" in e for e in result.examples)


def test_true_items_join_on_grounding_and_generated_text(tmp_path):
    true_dir = pathlib.Path(__file__).parent / "testdata" / "benchmarks" / "true"
    items, dropped, _ = import_scores.benchmark_items("true", path=str(true_dir))
    expected = [
        e
        for d in benchmarks.TRUE_DATASETS
        if benchmarks.true_file(d, true_dir).is_file()
        for e in benchmarks.read_true(d, true_dir).examples
    ]
    assert len(items) == len(expected) > 0
    # TRUE's own column names: grounding (article) and generated_text (summary).
    path = tmp_path / "true_scores.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["premise", "generated_text", "score"])
        for i, e in enumerate(expected):
            writer.writerow([e["premise"], e["hypothesis"], i])
    key = ("article", "summary")
    rows, join = import_scores.join_scores(
        import_scores.read_external_scores(path, key), items, key, "m", "true"
    )
    counts = collections.Counter((e["premise"], e["hypothesis"]) for e in expected)
    unique = [i for i, e in enumerate(expected) if counts[(e["premise"], e["hypothesis"])] == 1]
    assert join.matched_items == len(unique) and join.unmatched_rows == 0
    assert join.ambiguous_items == len(expected) - len(unique)
    assert [r["score"] for r in rows] == [float(i) for i in unique]
    assert [r["label"] for r in rows] == [expected[i]["label"] for i in unique]
    assert [r["dataset"] for r in rows] == [expected[i]["dataset"] for i in unique]
    assert all(r["question"] == benchmarks.TRUE_QUESTION for r in rows)


def test_true_joins_on_its_natural_key_without_key(tmp_path, capsys):
    # TRUE's CSVs name no system: its items are keyed by gem_id alone,
    # true_<dataset>-<row index>.
    true_dir = pathlib.Path(__file__).parent / "testdata" / "benchmarks" / "true"
    items, _, notes = import_scores.benchmark_items("true", path=str(true_dir))
    assert import_scores.default_key("true") == ("gem_id",)
    assert notes == [
        f"TRUE: 9 of 11 CSVs not in {true_dir}, skipped: "
        + ", ".join(
            f
            for f, _ in benchmarks.TRUE_DATASETS.values()
            if f not in ("frank_valid_download.csv", "paws_download.csv")
        )
    ]
    assert "true_frank-0" in [i["gem_id"] for i in items]
    external = tmp_path / "true_scores.jsonl"
    scores = {item["gem_id"]: i / 10 for i, item in enumerate(items)}
    external.write_text(
        "".join(json.dumps({"id": k, "score": v}) + "\n" for k, v in scores.items()),
        encoding="utf-8",
    )
    output = tmp_path / "m.true.jsonl"
    argv = ["import-scores", "--external", str(external), "--metric", "m"]
    argv += ["--benchmark", "true", "--benchmark_path", str(true_dir)]
    assert cli.main([*argv, "--output", str(output)]) == 0
    out = capsys.readouterr().out
    assert f"import-scores: wrote {len(items)} rows" in out
    # The reader's note on the absent CSVs comes with the join report, once it has run.
    assert out.splitlines()[1] == f"  note: {notes[0]}"
    saved = json.loads(output.with_name("m.true.join.json").read_text(encoding="utf-8"))
    assert saved["benchmark_notes"] == notes
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [r["score"] for r in rows] == [scores[i["gem_id"]] for i in items]
    # A key field TRUE's items lack: one line naming the key to pass.
    assert cli.main([*argv, "--key", "gem_id,system", "--output", str(tmp_path / "o.jsonl")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # (no note of the absent CSVs in a run that failed)
    assert captured.err == (
        "seahorse-t5x import-scores: error: true items have no 'system' to join on (its "
        "natural key is gem_id: pass --key gem_id, or leave --key out)\n"
    )


# --------------------------------------------------------------------------- T5X ICE output (deprecated path)


def test_t5x_ice_output_without_inputs_is_refused_unless_joined_by_position(tmp_path, capsys):
    # T5X infer records that carry only the score: nothing to check the join against.
    rows = [r for r in _split_rows() if r["q4"] is not None]
    infer = tmp_path / "ice_q4_k2_uniform-score.jsonl-00000-of-00001"
    infer.write_text(
        "".join(json.dumps({"score": -0.5 * (k + 1)}) + "\n" for k in range(len(rows)))
    )
    args = ["import-scores", "--t5x_infer", str(infer), "--task", "ice_q4_k2_uniform"]
    args += ["--data_dir", str(PREPARED), "--metric", "ice", "--output", str(tmp_path / "a.jsonl")]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err == (
        "seahorse-t5x import-scores: note: --t5x_infer is deprecated; use seahorse-t5x "
        "t5x-scores\n"
        f"seahorse-t5x import-scores: error: {infer}:1 field 'inputs.inputs_pretokenized': "
        "missing, so the row it is joined to cannot be checked; write the inputs with the "
        "inference output, or pass --join_by_position to join by position unchecked\n"
    )
    assert not (tmp_path / "a.jsonl").exists()

    assert cli.main([*args, "--join_by_position"]) == 0
    assert f"warning: {len(rows)} rows were joined by position" in capsys.readouterr().err
    frame = scorefiles.read_score_file(tmp_path / "a.jsonl")
    assert frame["gem_id"].tolist() == [r["gem_id"] for r in rows]
    assert frame["label"].tolist() == [float(r["q4"]) for r in rows]
    assert frame["score"].tolist() == [-0.5 * (k + 1) for k in range(len(rows))]
    _, counts = t5x_scores.convert(
        [str(infer)], "ice_q4_k2_uniform", str(PREPARED), "test", "ice", join_by_position=True
    )
    # No aux.log_p_no: T5X's own model's log P(target), kept as the score.
    assert counts == {
        "examples": len(rows),
        "non_finite_scores": 0,
        "unchecked": len(rows),
        "log_p_target": len(rows),
    }


def test_flags_that_would_change_nothing_are_errors(tmp_path, capsys):
    out = tmp_path / "m.seahorse.jsonl"
    argv = ["import-scores", "--external", str(TIGERSCORE), "--metric", "m", "--output", str(out)]
    assert cli.main([*argv, "--data_dir", str(PREPARED), "--join_by_position"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x import-scores: error: --join_by_position applies to --t5x_infer only; "
        "--external joins by --key\n"
    )
    assert not out.exists()
    report_dir = tmp_path / "report"
    argv = ["report", "--scores", str(out), "--duplicates", str(tmp_path / "d.tsv")]
    assert cli.main([*argv, "--output_dir", str(report_dir)]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x report: error: --duplicates needs --data_dir (rater agreement is a table "
        "of the dataset's)\n"
    )
    assert not report_dir.exists()


def test_scores_is_the_deprecated_name_of_external(tmp_path, capsys):
    # `report --scores` takes this project's score files; import-scores' foreign file is
    # `--external`, and its older `--scores` still works after one note.
    outputs = []
    for flag in ("--scores", "--external"):
        out = tmp_path / f"{flag.strip('-')}.jsonl"
        argv = ["import-scores", flag, str(TIGERSCORE), "--metric", "t", "--output", str(out)]
        argv += ["--data_dir", str(PREPARED), "--questions", "4", "--key", "article,summary"]
        assert cli.main(argv) == 0
        notes = [x for x in capsys.readouterr().err.splitlines() if "deprecated" in x]
        expected = ["seahorse-t5x import-scores: note: --scores is deprecated; use --external"]
        assert notes == (expected if flag == "--scores" else [])
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and outputs[0]

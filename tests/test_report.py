"""`seahorse-t5x report`: exact table headers, numbers equal to `stats`, plots written, errors."""

import json
import pathlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from sklearn.metrics import roc_auc_score

from seahorse_t5x import cli, errors
from seahorse_t5x.data import duplicate_ratings, scorefiles
from seahorse_t5x.evaluation import report, stats, tables

SCORES = pathlib.Path(__file__).parent / "testdata" / "scores"
SCORE_FILES = [SCORES / "mt5_seahorse.jsonl", SCORES / "rougeL.jsonl", SCORES / "benchmarks.jsonl"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _markdown_header(markdown: str, title_start: str) -> str:
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"### {title_start}"))
    return lines[start + 2]


def _is_png(path: str | pathlib.Path) -> bool:
    data = pathlib.Path(path).read_bytes()
    return len(data) > 1000 and data.startswith(PNG_SIGNATURE)


@pytest.fixture(scope="module")
def score_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    code = cli.main(
        [
            "report",
            "--scores",
            *map(str, SCORE_FILES),
            "--output_dir",
            str(out),
            "--bootstrap",
            "60",
        ]
    )
    assert code == 0
    return out, json.loads((out / "report.json").read_text(encoding="utf-8"))


def test_format_value_writes_numbers_like_the_paper():
    assert tables.format_value(0.5234) == ".52"
    assert tables.format_value(-0.031) == "-.03"
    assert tables.format_value(-0.001) == ".00"
    assert tables.format_value(1.0) == "1.00"
    assert tables.format_value(None) == "-"
    assert tables.format_value(float("nan")) == "-"
    assert tables.format_pair(0.52, 0.9) == ".52/.90"
    assert tables.format_p(0.0004) == "p<.001" and tables.format_p(0.0312) == "p=.031"
    assert tables.format_p(1.0) == "p=1.000"


def test_score_report_writes_every_output(score_report):
    out, result = score_report
    assert result["summary"] == (
        f"report: 2 metric(s) on seahorse, mface, true: 1638 scored rows from 3 score "
        f"file(s), 2 without a score (null, NaN or infinite) dropped, the first at "
        f"{SCORE_FILES[1]}:4 -> {out}"
    )
    nulls = [json.loads(line) for line in SCORE_FILES[1].read_text().splitlines()]
    nulls = [r["question"] for r in nulls if r["score"] is None]
    assert nulls == [4, 5]
    assert result["scores"]["missing_scores"] == {"rougeL/seahorse/4": 1, "rougeL/seahorse/5": 1}
    plots = {pathlib.Path(p).name for p in result["outputs"]["plots"]}
    assert {
        "roc_seahorse.png",
        "reliability_seahorse.png",
        "seahorse_by_language.png",
        "label_correlations_scores.png",
        "roc_true.png",
        "roc_mface.png",
        "mface_by_language.png",
    } <= plots
    for path in result["outputs"]["plots"]:
        assert _is_png(path), path
    # Figure 3 from the score files: items (gem_id, system) with all six labels.
    rows = pd.read_json(SCORE_FILES[0], lines=True)
    wide = rows.pivot_table(index=["gem_id", "system"], columns="question", values="label")
    wide = wide.dropna()
    correlations = result["scores"]["label_correlations"]
    assert correlations["n_items"] == len(wide) > 50
    assert correlations["matrix"]["Q4"]["Q5"] == pytest.approx(
        np.corrcoef(wide[4], wide[5])[0, 1], abs=1e-6
    )
    assert correlations["matrix"]["Q1"]["Q2"] is None  # Q1 is always Yes on such items
    latex = (out / "tables.tex").read_text(encoding="utf-8")
    assert "\\toprule" in latex and "Metric & Q1 & Q2 & Q3 & Q4 & Q5 & Q6 \\\\" in latex
    assert "$\\rho$" in latex


def test_table_headers_are_the_papers(score_report):
    out, _ = score_report
    markdown = (out / "tables.md").read_text(encoding="utf-8")
    assert _markdown_header(markdown, "Table 5:") == "| Metric | Q1 | Q2 | Q3 | Q4 | Q5 | Q6 |"
    assert _markdown_header(markdown, "Table 5 intervals") == (
        "| Metric | Q1 | Q2 | Q3 | Q4 | Q5 | Q6 |"
    )
    assert _markdown_header(markdown, "Table 6") == (
        "| Metric | Quality | Attribution | Informativeness |"
    )
    assert _markdown_header(markdown, "Table 7") == (
        "| Metric | FRANK | SummEval | MNBN | QAGS-C | QAGS-X | BEGIN | Q2 | DialFact | FEVER "
        "| VitaminC | PAWS |"
    )
    assert _markdown_header(markdown, "seahorse by language") == (
        "| Metric | Language | Q1 | Q2 | Q3 | Q4 | Q5 | Q6 |"
    )
    assert _markdown_header(markdown, "seahorse: paired bootstrap, Δroc") == (
        "| Metrics (A - B) | Q1 | Q2 | Q3 | Q4 | Q5 | Q6 |"
    )
    assert "Each cell: ρ/roc." in markdown


def _rows(metric: str, benchmark: str) -> pd.DataFrame:
    frame = scorefiles.read_score_files(SCORE_FILES)
    frame = frame[(frame["metric"] == metric) & (frame["benchmark"] == benchmark)]
    return frame[frame["score"].notna()]


def test_table5_numbers_equal_stats_on_the_same_rows(score_report):
    out, result = score_report
    rows = _rows("rougeL", "seahorse")
    q4 = rows[rows["question"] == "4"]
    expected = stats.binary_metrics(q4["label"], q4["score"])
    (entry,) = [
        r for r in result["scores"]["results"] if r["metric"] == "rougeL" and r["question"] == "4"
    ]
    assert entry["n"] == expected["n"] == len(q4)
    assert entry["pearson"] == pytest.approx(expected["pearson"])
    assert entry["roc_auc"] == pytest.approx(roc_auc_score(q4["label"], q4["score"]))
    ci = entry["ci"]["roc_auc"]
    assert ci["low"] < entry["roc_auc"] < ci["high"] and ci["n_resamples"] == 60
    table5 = next(t for t in result["tables"] if t["name"] == "table5")
    row = next(r for r in table5["rows"] if r[0] == "rougeL")
    assert row[4] == tables.format_pair(expected["pearson"], expected["roc_auc"])


def test_the_majority_baseline_has_roc_auc_one_half_in_table5(tmp_path):
    # The same 0.5 as `baselines`, `evaluate` and the demo print: a constant score ties
    # every (Yes, No) pair, counted one half.
    from seahorse_t5x.scoring import baselines

    split = [
        {"gem_id": f"xsum-test-{i}", "language": "en", "dataset": "xsum", "system": "t5_base"}
        | {"article": "An article.", "summary": "A summary."}
        | {f"q{q}": (i + q) % 2 for q in range(1, 7)}
        for i in range(8)
    ]
    path = tmp_path / "majority.jsonl"
    rows = baselines.majority_score_rows(split, dict.fromkeys(range(1, 7), 0.6))
    scorefiles.write_score_file(path, rows)
    settings = report.ReportSettings(by=(), n_resamples=20, plots=False)
    result = report.write_report(tmp_path / "out", score_paths=[path], settings=settings)
    assert baselines.majority_metrics([r["label"] for r in rows[:8]])["roc_auc"] == 0.5
    for entry in result["scores"]["results"]:
        assert (entry["pearson"], entry["roc_auc"]) == (None, 0.5)
    table5 = next(t for t in result["tables"] if t["name"] == "table5")
    (row,) = table5["rows"]
    assert row == ["majority", *["-/.50"] * 6]


def test_table6_uses_graded_labels_for_rho_and_majority_for_roc(score_report):
    _, result = score_report
    rows = _rows("mt5_seahorse", "mface")
    attribution = rows[rows["question"] == "attribution"]
    (entry,) = [r for r in result["scores"]["results"] if r["question"] == "attribution"]
    assert entry["pearson"] == pytest.approx(
        np.corrcoef(attribution["label"], attribution["score"])[0, 1]
    )
    assert entry["roc_auc"] == pytest.approx(
        roc_auc_score(attribution["label_binary"].astype(int), attribution["score"])
    )
    assert entry["spearman"] == pytest.approx(
        scipy_stats.spearmanr(attribution["label"], attribution["score"]).statistic
    )
    assert entry["kendall"] == pytest.approx(
        scipy_stats.kendalltau(attribution["label"], attribution["score"]).statistic
    )


def test_table7_has_one_roc_per_true_dataset(score_report):
    _, result = score_report
    rows = _rows("mt5_seahorse", "true")
    frank = rows[rows["dataset"] == "FRANK"]
    table7 = next(t for t in result["tables"] if t["name"] == "table7")
    (row,) = table7["rows"]
    assert row[1] == tables.format_value(roc_auc_score(frank["label"], frank["score"]))
    assert row[3] == "-"  # MNBN is not in the fixture


def test_significance_pairs_the_same_items(score_report):
    _, result = score_report
    comparisons = [c for c in result["scores"]["significance"] if c["benchmark"] == "seahorse"]
    assert [c["question"] for c in comparisons] == ["1", "2", "3", "4", "5", "6"]
    q4 = next(c for c in comparisons if c["question"] == "4")
    assert (q4["metric_a"], q4["metric_b"]) == ("mt5_seahorse", "rougeL")
    assert q4["paired_by"] == ["gem_id", "system", "dataset"]
    assert q4["n_items"] == len(_rows("rougeL", "seahorse").query("question == '4'"))
    assert q4["unpaired_a"] == 1 and q4["unpaired_b"] == 0  # rougeL's null score
    # The fixture's model metric tracks the labels far better than its ROUGE-like one.
    assert q4["roc_auc"]["difference"] > 0 and q4["roc_auc"]["p_value"] < 0.05
    table = next(t for t in result["tables"] if t["name"] == "seahorse_significance_roc_auc")
    assert table["rows"][0][0] == "mt5_seahorse - rougeL"
    assert table["rows"][0][4] == (
        f"+{tables.format_value(q4['roc_auc']['difference'])} "
        f"({tables.format_p(q4['roc_auc']['p_value'])})"
    )


def test_baseline_limits_comparisons(tmp_path):
    settings = report.ReportSettings(by=(), n_resamples=30, baseline="rougeL", plots=False)
    result = report.write_report(tmp_path, score_paths=SCORE_FILES[:2], settings=settings)
    pairs = {(c["metric_a"], c["metric_b"]) for c in result["scores"]["significance"]}
    assert pairs == {("mt5_seahorse", "rougeL")}
    assert result["outputs"]["plots"] == []
    assert result["scores"]["breakdowns"] == {}


def test_user_mistakes_are_one_line_errors(tmp_path, capsys):
    args = ["report", "--scores", str(SCORE_FILES[0]), "--output_dir", str(tmp_path)]
    assert cli.main([*args, "--baseline", "bleu", "--no_plots"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seahorse-t5x report: error: --baseline 'bleu' is not a metric")
    assert cli.main([*args, "--by", "country", "--no_plots"]) == 2
    assert "--by field 'country' is not in the score files" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"metric": "m", "benchmark": "seahorse", "question": 1, "label": 1}\n')
    assert cli.main(["report", "--scores", str(bad), "--output_dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"seahorse-t5x report: error: {bad}:1 field 'score': required field is missing\n"
    assert cli.main(["report", "--output_dir", str(tmp_path)]) == 2
    assert "nothing to report" in capsys.readouterr().err


# ------------------------------------------------------------------ dataset report


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    from seahorse_t5x.data import demo_data

    root = tmp_path_factory.mktemp("demo")
    return pathlib.Path(demo_data.prepare_demo(str(root), log=None)), root


def _duplicates_tsv(root: pathlib.Path, path: pathlib.Path) -> None:
    # 20 test rows rated twice; the second rating of every 4th row flips Q1 (Yes <-> No).
    lines = (root / "seahorse_data" / "test.tsv").read_text(encoding="utf-8").splitlines()
    header, rows = lines[0], lines[1:21]
    copies = []
    for i, row in enumerate(rows):
        fields = row.split("\t")
        if i % 4 == 0:
            fields[4] = {"Yes": "No", "No": "Yes"}.get(fields[4], fields[4])
            if fields[4] == "No":
                fields[5:10] = [""] * 5
        copies.append("\t".join(fields))
    path.write_text("\n".join([header, *rows, *copies]) + "\n", encoding="utf-8")


def test_dataset_report_tables_and_heatmap(prepared, tmp_path):
    prepared_dir, root = prepared
    duplicates = tmp_path / "dups.tsv"
    _duplicates_tsv(root, duplicates)
    out = tmp_path / "out"
    code = cli.main(
        [
            "report",
            "--data_dir",
            str(prepared_dir),
            "--duplicates",
            str(duplicates),
            "--output_dir",
            str(out),
        ]
    )
    assert code == 0
    result = json.loads((out / "report.json").read_text(encoding="utf-8"))
    items = pd.concat(
        [
            pd.read_json(prepared_dir / f"{s}.jsonl", lines=True)
            for s in ("train", "validation", "test")
        ]
    )
    by_name = {t["name"]: t for t in result["tables"]}
    assert by_name["table1"]["header"] == ["Language", "Dataset", "Annotations"]
    assert by_name["table1"]["rows"][-1] == ["all", "all", str(len(items))]
    de_mlsum = len(items[(items["language"] == "de") & (items["dataset"] == "mlsum")])
    assert ["de", "mlsum", str(de_mlsum)] in by_name["table1"]["rows"]
    assert by_name["table3"]["header"] == ["System", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    assert by_name["table3"]["rows"][0][0] == "reference"
    reference_q4 = items.loc[items["system"] == "reference", "q4"].dropna().mean()
    assert by_name["table3"]["rows"][0][4] == tables.format_value(reference_q4)
    assert by_name["table8"]["header"] == ["Language", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    assert [r[0] for r in by_name["table8"]["rows"]] == ["de", "en", "es", "ru", "tr", "vi"]
    # Agreement: Q1 pairs disagree on rows 0, 4, 8, 12, 16 (unless a Q1 was Unsure).
    dup = duplicate_ratings.read_duplicate_ratings(duplicates)
    q1_pairs = dup.groupby(["gem_id", "summary"])["q1"].apply(lambda s: s.dropna().tolist())
    q1_pairs = [p for p in q1_pairs if len(p) == 2]
    expected_q1 = sum(p[0] == p[1] for p in q1_pairs) / len(q1_pairs)
    assert by_name["table4"]["rows"][0][1] == tables.format_value(expected_q1)
    assert expected_q1 < 1.0
    full = items[[f"q{q}" for q in range(1, 7)]].dropna()
    assert result["dataset"]["label_correlations"]["n_items"] == len(full)
    q4q5 = result["dataset"]["label_correlations"]["matrix"]["Q4"]["Q5"]
    assert q4q5 == pytest.approx(np.corrcoef(full["q4"], full["q5"])[0, 1], abs=1e-6)
    for name in ("label_correlations.png", "yes_rate_by_system.png", "yes_rate_by_language.png"):
        assert _is_png(out / "plots" / name)
    assert result["summary"] == f"report: dataset of {len(items)} items -> {out}"


def test_duplicates_tsv_keeps_quotes_and_names_a_long_row(tmp_path):
    header = "gem_id\tworker_lang\tsummary\tmodel" + "".join(f"\tquestion{q}" for q in range(1, 7))
    row = 'xsum-test-1\ten-US\t"Yes," he said.\tt5_base\tYes\tNo\tYes\tYes\tYes\tYes'
    path = tmp_path / "d.tsv"
    path.write_text(f"{header}\n{row}\n", encoding="utf-8")
    frame = duplicate_ratings.read_duplicate_ratings(path)
    assert frame["summary"].tolist() == ['"Yes," he said.']
    assert frame[["q1", "q2"]].values.tolist() == [[1, 0]]
    path.write_text(f"{header}\n{row}\n{row}\textra\n", encoding="utf-8")
    with pytest.raises(errors.DataError) as info:
        duplicate_ratings.read_duplicate_ratings(path)
    assert str(info.value) == f"{path}:3: expected 10 tab-separated fields, found 11"


def test_dataset_folder_without_split_files_is_a_user_error(tmp_path, capsys):
    assert (
        cli.main(["report", "--data_dir", str(tmp_path), "--output_dir", str(tmp_path / "o")]) == 2
    )
    assert "holds no split files" in capsys.readouterr().err


def test_dataset_of_empty_split_files_is_a_user_error(tmp_path, capsys):
    data = tmp_path / "prepared"
    data.mkdir()
    (data / "test.jsonl").write_text("")
    out = tmp_path / "o"
    assert cli.main(["report", "--data_dir", str(data), "--output_dir", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"seahorse-t5x report: error: {data / 'test.jsonl'}: holds no rows (expected the rows "
        "of a `seahorse-t5x prepare` run that kept some)\n"
    )
    (data / "train.jsonl").write_text("\n")
    assert cli.main(["report", "--data_dir", str(data), "--output_dir", str(out)]) == 2
    assert capsys.readouterr().err.startswith(
        f"seahorse-t5x report: error: {data} ({data / 'train.jsonl'}, {data / 'test.jsonl'}): "
        "hold no rows"
    )
    assert not out.exists()


def test_one_model_per_question_reads_as_one_metric(tmp_path):
    # Per-question models `seahorse_qN`, as T5X fine-tunes them, score their own question
    # (and the benchmark dimension mapped to it); the tables show them as one metric.
    frame = scorefiles.read_score_files([SCORE_FILES[0], SCORE_FILES[2]])
    seahorse = frame["benchmark"] == "seahorse"
    frame.loc[seahorse, "metric"] = "seahorse_q" + frame.loc[seahorse, "question"]
    frame.loc[frame["benchmark"] == "true", "metric"] = "seahorse_q4"
    mface = frame["benchmark"] == "mface"
    dimension_model = {"quality": "seahorse_q1", "attribution": "seahorse_q4"}
    frame.loc[mface, "metric"] = (
        frame.loc[mface, "question"].map(dimension_model).fillna("seahorse_q6")
    )
    # A Q4 model also run on Q1 is not one question's model: it stays as it is.
    q1 = frame[seahorse & (frame["question"] == "1")].assign(metric="other_q4")
    q4 = frame[seahorse & (frame["question"] == "4")].assign(metric="other_q4")
    path = tmp_path / "per_question.jsonl"
    rows = pd.concat([frame, q1, q4]).drop(columns=[scorefiles.SOURCE_FIELD])
    scorefiles.write_score_file(path, rows.to_dict("records"))
    settings = report.ReportSettings(by=(), n_resamples=20, plots=False)
    result = report.write_report(tmp_path / "out", score_paths=[path], settings=settings)
    assert result["scores"]["merged_question_models"] == {
        "seahorse": [f"seahorse_q{q}" for q in range(1, 7)]
    }
    by_name = {t["name"]: t for t in result["tables"]}
    assert [r[0] for r in by_name["table5"]["rows"]] == ["seahorse", "other_q4"]
    assert "-" not in by_name["table5"]["rows"][0]
    assert by_name["table5"]["rows"][1][2:4] == ["-", "-"]  # other_q4 has no Q2, Q3 rows
    assert [r[0] for r in by_name["table6"]["rows"]] == ["seahorse"]
    assert [r[0] for r in by_name["table7"]["rows"]] == ["seahorse"]


def test_mface_with_other_languages_adds_the_five_language_table(tmp_path):
    rows = [json.loads(line) for line in SCORE_FILES[2].read_text().splitlines()]
    rows = [r for r in rows if r["benchmark"] == "mface"]
    for i, row in enumerate(rows):
        if i % 3 == 2:
            row["language"] = "fr"  # outside the SEAHORSE languages
    path = tmp_path / "mface.jsonl"
    scorefiles.write_score_file(path, rows)
    settings = report.ReportSettings(by=("language",), n_resamples=0, plots=False)
    result = report.write_report(tmp_path / "out", score_paths=[path], settings=settings)
    assert result["scores"]["benchmarks"] == ["mface_5lang", "mface"]
    assert result["scores"]["n_rows"] == result["scores"]["n_scored"] == len(rows) == 90
    assert result["scores"]["significance"] == []  # --bootstrap 0: no paired tests
    assert all("ci" not in r for r in result["scores"]["results"])
    by_name = {t["name"]: t for t in result["tables"]}
    assert by_name["table6_mface_5lang"]["title"].startswith(
        "Table 6: mFACE (5 SEAHORSE languages)"
    )
    assert by_name["table6"]["title"].startswith("Table 6: mFACE (all languages)")
    subset = [r for r in rows if r["language"] != "fr" and r["question"] == "quality"]
    (entry,) = [
        r
        for r in result["scores"]["results"]
        if r["benchmark"] == "mface_5lang" and r["question"] == "quality"
    ]
    assert entry["n"] == len(subset) == 20
    assert entry["roc_auc"] == pytest.approx(
        roc_auc_score([r["label_binary"] for r in subset], [r["score"] for r in subset])
    )
    assert {r["benchmark"] for r in result["scores"]["breakdowns"]["language"]} == {"mface"}


def test_table_rendering_escapes_special_characters():
    table = tables.Table("t", "Δ test", ["Metric", "Q1"], [["a_b|c & 50%", "+.10 (p<.001)"]])
    assert "| a_b\\|c & 50% | +.10 (p<.001) |" in table.to_markdown()
    latex = table.to_latex()
    assert "a\\_b|c \\& 50\\% & +.10 (p$<$.001) \\\\" in latex
    assert "\\caption{$\\Delta$ test}" in latex
    assert "\\begin{tabular}{lc}" in latex


def test_graded_benchmark_table_shows_rank_correlations(tmp_path):
    # METAL-like: one graded (0, .5, 1) and one 0/1 dimension, two metrics.
    rng = np.random.default_rng(0)
    rows = []
    for metric, noise in (("a", 0.5), ("b", 2.0)):
        for question in ("task_quality", "hallucinations"):
            for i in range(40):
                grades = 3 if question == "task_quality" else 2
                label = float(rng.integers(0, grades)) / (grades - 1)
                score = label + noise * rng.normal()
                rows.append(
                    {"metric": metric, "benchmark": "metal", "question": question, "label": label}
                    | {"score": score, "gem_id": f"k{i}", "language": ["hi", "sw"][i % 2]}
                )
    path = tmp_path / "metal.jsonl"
    scorefiles.write_score_file(path, rows)
    settings = report.ReportSettings(by=("language",), n_resamples=50, plots=False)
    result = report.write_report(tmp_path / "out", score_paths=[path], settings=settings)
    by_name = {t["name"]: t for t in result["tables"]}
    table = by_name["metal_table"]
    assert table["header"] == ["Metric", "hallucinations", "task_quality"]  # by name
    assert table["title"] == "metal: ρ/Spearman/Kendall τ"
    a_quality = [r for r in rows if r["metric"] == "a" and r["question"] == "task_quality"]
    labels = [r["label"] for r in a_quality]
    scores = [r["score"] for r in a_quality]
    expected = stats.graded_metrics(labels, scores)
    assert table["rows"][0][2] == "/".join(
        tables.format_value(expected[k]) for k in ("pearson", "spearman", "kendall")
    )
    assert by_name["metal_by_language"]["title"] == "metal by language: ρ/Spearman/Kendall τ"
    comparison = next(
        c for c in result["scores"]["significance"] if c["question"] == "task_quality"
    )
    assert set(comparison) >= {"pearson", "spearman", "kendall"} and "roc_auc" not in comparison
    # The two metrics' rows carry their own labels: items whose labels differ are left out.
    b_quality = [r for r in rows if r["metric"] == "b" and r["question"] == "task_quality"]
    same = [i for i, r in enumerate(b_quality) if r["label"] == labels[i]]
    assert comparison["n_items"] == len(same) == 18
    paired = (
        [labels[i] for i in same],
        [scores[i] for i in same],
        [b_quality[i]["score"] for i in same],
    )
    expected_test = stats.paired_bootstrap(*paired, "kendall", 50, seed=0)
    assert comparison["kendall"] == expected_test
    assert comparison["kendall"]["difference"] == pytest.approx(
        scipy_stats.kendalltau(paired[0], paired[1]).statistic
        - scipy_stats.kendalltau(paired[0], paired[2]).statistic
    )
    significance = by_name["metal_significance_kendall"]
    assert significance["title"] == "metal: paired bootstrap, ΔKendall τ (two-sided p)"
    assert significance["rows"] == [
        [
            "a - b",
            f"+{tables.format_value(expected_test['difference'])} "
            f"({tables.format_p(expected_test['p_value'])})",
        ]
    ]
    (entry,) = [
        r
        for r in result["scores"]["results"]
        if r["metric"] == "a" and r["question"] == "task_quality"
    ]
    assert set(entry["ci"]) == {"pearson", "spearman", "kendall"}
    ci = stats.bootstrap_ci(labels, scores, ("pearson", "spearman", "kendall"), 50, seed=0)
    assert entry["ci"] == ci
    assert ci["kendall"]["low"] < ci["kendall"]["estimate"] < ci["kendall"]["high"]
    intervals = by_name["metal_table_ci"]
    assert intervals["title"] == "metal intervals: 95% bootstrap CI of ρ / Spearman / Kendall τ"
    assert intervals["rows"][0][2] == "/".join(
        tables.format_interval(ci[k]) for k in ("pearson", "spearman", "kendall")
    )
    # A 0/1 dimension of a graded benchmark: rank-correlation intervals left out, one note.
    assert intervals["rows"][0][1].endswith("/-[1]/-[1]")
    assert intervals["caption"] == (
        "Percentile bootstrap over items. Undefined (-[n]): [1] no interval computed for this "
        "statistic on these labels."
    )


def test_probability_scale_for_calibration():
    from seahorse_t5x.evaluation import plots

    np.testing.assert_allclose(plots.probability_scale([0.2, 0.9]), [0.2, 0.9])
    np.testing.assert_allclose(plots.probability_scale([-0.1, -2.0]), np.exp([-0.1, -2.0]))
    assert plots.probability_scale([-1.0, 3.0]) is None  # neither probabilities nor log-probs


def test_negative_bootstrap_is_a_user_error(tmp_path, capsys):
    args = ["report", "--scores", str(SCORE_FILES[0]), "--output_dir", str(tmp_path)]
    assert cli.main([*args, "--bootstrap", "-5"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x report: error: --bootstrap must be >= 0, got -5\n"
    )


# A user's rating set (`tasks.register_rating_tasks`): benchmark `chat`, questions named.
CHAT_POLITE_LABELS = [1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
CHAT_POLITE_SCORES = {
    "mt5_chat": [0.9, 0.2, 0.7, 0.6, 0.4, 0.8, 0.3, 0.5, 0.95, 0.1, 0.65, 0.35],
    "rouge_l": [0.3, 0.5, 0.2, 0.8, 0.1, 0.6, 0.4, 0.45, 0.7, 0.25, 0.15, 0.9],
}


def _chat_rows() -> list[dict]:
    rows = []
    for metric, scores in CHAT_POLITE_SCORES.items():
        for i, (label, score) in enumerate(zip(CHAT_POLITE_LABELS, scores, strict=True)):
            rows.append(
                {"metric": metric, "benchmark": "chat", "question": "polite", "label": label}
                | {"score": score, "label_kind": "binary", "gem_id": f"c{i}", "system": "s"}
            )
    # `formal`: every item rated Yes, and scored by one metric only.
    rows += [
        {"metric": "mt5_chat", "benchmark": "chat", "question": "formal", "label": 1}
        | {"score": 0.1 * i, "label_kind": "binary", "gem_id": f"c{i}", "system": "s"}
        for i in range(5)
    ]
    return rows


def test_rating_set_table_has_its_questions_and_says_why_a_value_is_undefined(tmp_path):
    path = tmp_path / "chat.jsonl"
    scorefiles.write_score_file(path, _chat_rows())
    settings = report.ReportSettings(by=("system",), n_resamples=200, plots=True)
    result = report.write_report(tmp_path / "out", score_paths=[path], settings=settings)
    by_name = {t["name"]: t for t in result["tables"]}
    table = by_name["chat_table"]
    assert table["title"] == "chat: ρ/roc"
    assert table["header"] == ["Metric", "formal", "polite"]
    expected = {}
    for metric, scores in CHAT_POLITE_SCORES.items():
        rho = scipy_stats.pearsonr(scores, CHAT_POLITE_LABELS)[0]
        roc = roc_auc_score(CHAT_POLITE_LABELS, scores)
        expected[metric] = f"{tables.format_value(rho)}/{tables.format_value(roc)}"
    assert expected == {"mt5_chat": ".77/.97", "rouge_l": ".38/.72"}
    assert table["rows"] == [["mt5_chat", "-[1]/-[2]", ".77/.97"], ["rouge_l", "-[3]", ".38/.72"]]
    assert table["caption"] == (
        "Each cell: ρ/roc. Undefined (-[n]): [1] labels are constant: correlation undefined; "
        "[2] labels hold one class only (all 1); [3] the metric has no score rows for this "
        "question."
    )
    markdown = (tmp_path / "out" / "tables.md").read_text(encoding="utf-8")
    assert "| mt5_chat | -[1]/-[2] | .77/.97 |" in markdown
    assert "| rouge_l | -[3] | .38/.72 |" in markdown
    # report.json says why, per value.
    (formal,) = [r for r in result["scores"]["results"] if r["question"] == "formal"]
    assert (formal["pearson"], formal["roc_auc"]) == (None, None)
    assert formal["reasons"]["pearson"] == "labels are constant: correlation undefined"
    assert formal["reasons"]["roc_auc"] == "labels hold one class only (all 1)"
    # The intervals, as Table 5's: the same resamples as stats.bootstrap_ci.
    intervals = by_name["chat_table_ci"]
    assert intervals["header"] == ["Metric", "formal", "polite"]
    ci = stats.bootstrap_ci(
        CHAT_POLITE_LABELS,
        CHAT_POLITE_SCORES["mt5_chat"],
        statistics=("pearson", "roc_auc"),
        n_resamples=200,
        seed=0,
    )
    polite = f"{tables.format_interval(ci['pearson'])}/{tables.format_interval(ci['roc_auc'])}"
    assert intervals["rows"][0] == ["mt5_chat", "-[1]/-[2]", polite]
    assert intervals["rows"][1][1] == "-[3]"
    assert "[3] the metric has no score rows for this question." in intervals["caption"]
    breakdown = by_name["chat_by_system"]
    assert breakdown["rows"] == [
        ["mt5_chat", "s", "-[1]/-[2]", ".77/.97"],
        ["rouge_l", "s", "-[3]", ".38/.72"],
    ]
    assert breakdown["caption"].endswith(
        "[3] the metric has no score rows for this system and question."
    )
    assert {pathlib.Path(p).name for p in result["outputs"]["plots"]} >= {
        "roc_chat.png",
        "reliability_chat.png",
    }
    assert result["summary"].startswith("report: 2 metric(s) on chat: 29 scored rows")


@pytest.mark.parametrize(
    "label, reason",
    [
        (1.0, "chat labels are 0 (No) or 1 (Yes), got 1.0; write 1 or 0, not a decimal"),
        (0.5, "chat labels are 0 (No) or 1 (Yes), got 0.5; the row's label_kind is binary"),
        (True, "got True; true/false are not labels"),
    ],
)
def test_rating_set_labels_are_the_integers_0_and_1(tmp_path, label, reason):
    rows = _chat_rows()[:2]
    path = tmp_path / "chat.jsonl"
    lines = [json.dumps(rows[0]), json.dumps(rows[1] | {"label": label})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(errors.DataError) as raised:
        scorefiles.read_score_files([path])
    assert (raised.value.line, raised.value.field) == (2, "label")
    assert reason in raised.value.reason


@pytest.mark.parametrize("columns", [{"score": 0.7}, {"score_q1": 0.7, "score_q4": 0.2}])
def test_report_says_what_plain_score_output_lacks(tmp_path, capsys, columns):
    path = tmp_path / "scored.jsonl"
    row = {"gem_id": "g1", "article": "An article.", "summary": "A summary.", **columns}
    path.write_text(json.dumps(row) + "\n")
    code = cli.main(["report", "--scores", str(path), "--output_dir", str(tmp_path / "r")])
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    shown = ", ".join(columns)
    assert (
        f"{path} is `seahorse-t5x score` output ({shown} per row) without metric, benchmark, "
        "question, label: score rows that carry labels (`label`, or q1..q6) with "
        "`seahorse-t5x score ... --score_file --metric NAME`"
    ) in err
    assert f"`seahorse-t5x import-scores --external {path} --metric NAME --questions N" in err

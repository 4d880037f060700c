"""`report` over an explainable metric's rows: the correlation table with n and the unparsed
count, the explanation-quality table with exact values and intervals, the disagreements."""

import json

import numpy as np
import pytest
from scipy import stats as scipy_stats

from seahorse_t5x import cli, errors
from seahorse_t5x.data import scorefiles
from seahorse_t5x.evaluation import explanation_quality, explanation_report, report, tables
from seahorse_t5x.inference import explain

N_RESAMPLES = 200


def _error(location: str, aspect: str, reduction: float) -> dict:
    return {
        "location": location,
        "aspect": aspect,
        "explanation": f"{aspect} error at {location}",
        "severity": "Major" if reduction >= 3 else "Minor",
        "score_reduction": reduction,
    }


# id -> (true errors or None, generated errors or None: did not parse).
ITEMS: dict[str, tuple[list | None, list | None]] = {
    # The same location and aspect (case aside): exact, F1 1, same aspect.
    "i1": ([_error("the cat sat", "Accuracy", 2)], [_error("The cat  sat", "accuracy", 2)]),
    # {blue, sky} against {blue, sky, today}: token F1 .8, not exact, another aspect.
    "i2": ([_error("blue sky today", "Fluency", 1)], [_error("blue sky", "Accuracy", 3)]),
    "u1": ([_error("a word", "Fluency", 1)], None),
    # Neither side has an error: a correct item, exact 1 and F1 1.
    "i3": ([], []),
    # One of two true errors found, exactly and with its aspect.
    "i4": (
        [_error("red apple", "Accuracy", 4), _error("green pear", "Relevance", 1)],
        [_error("green pear", "Relevance", 1)],
    ),
    "u2": ([], None),
    # An error predicted where there is none, and one missed.
    "i5": ([], [_error("big dog", "Style", 2)]),
    "i6": ([_error("old man", "Accuracy", 3)], []),
    # Parsed, but the row carries no true errors (a label only): not an item of the quality.
    "n1": (None, [_error("x", "Accuracy", 4)]),
}
LABEL_ONLY = {"n1": -4.0}
QUALITY_ITEMS = ["i1", "i2", "i3", "i4", "i5", "i6"]


def _score(error_list: list | None) -> float | None:
    return None if error_list is None else -float(sum(e["score_reduction"] for e in error_list))


def _rows() -> list[dict]:
    """Rows as `explain --metric tiger` writes them, and a plain metric on the same items."""
    rows = []
    for item_id, (true_errors, generated) in ITEMS.items():
        details = {
            "explanation": f"analysis of {item_id} with `code` and ```fences```",
            "errors": generated,
            "parse_error": "no error block found" if generated is None else None,
        }
        if true_errors is not None:
            details["true_errors"] = true_errors
        label = LABEL_ONLY.get(item_id, _score(true_errors))
        rows.append(
            scorefiles.score_row(
                metric="tiger",
                benchmark="explanations",
                question="overall",
                label=label,
                score=_score(generated),
                details=details,
                label_kind=scorefiles.LABEL_KIND_GRADED,
                slices={"gem_id": f"doc-{item_id}"},
                extra={"id": item_id, "summary": f"summary {item_id}"},
            )
        )
    for i, row in enumerate(list(rows)):
        rows.append(
            scorefiles.score_row(
                metric="length",
                benchmark="explanations",
                question="overall",
                label=row["label"],
                score=float(i % 4),
                label_kind=scorefiles.LABEL_KIND_GRADED,
                slices={"gem_id": row["gem_id"]},
                extra={"id": row["id"], "summary": row["summary"]},
            )
        )
    return rows


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    root = tmp_path_factory.mktemp("explained")
    path = root / "tiger.jsonl"
    scorefiles.write_score_file(path, _rows())
    settings = report.ReportSettings(by=(), n_resamples=N_RESAMPLES, plots=False)
    result = report.write_report(root / "out", score_paths=[path], settings=settings)
    return root / "out", path, result


def _lines() -> dict[str, int]:
    return {item_id: number for number, item_id in enumerate(ITEMS, start=1)}


def test_the_fields_read_are_those_explain_writes():
    from seahorse_t5x.formats import error_analysis

    truth = error_analysis.ErrorAnalysis.of(
        [error_analysis.ExplainedError("x", "Fluency", "Fix x.", "Minor", 1.0)]
    )
    item = explain.ExplainInput("Summarize.", "A.", "B.", None, 1, {"id": "a"}, truth=truth)
    row = explain.output_row(
        item, explain.Explanation.of(error_analysis.render_analysis(truth)), "m", "explanations"
    )
    read = (
        explanation_report.TEXT_FIELD,
        explanation_report.ERRORS_FIELD,
        explanation_report.PROBLEM_FIELD,
        explanation_report.TRUE_ERRORS_FIELD,
    )
    assert all(field in row for field in read)
    assert row[explanation_report.ERRORS_FIELD] == row[explanation_report.TRUE_ERRORS_FIELD]


def test_correlations_leave_unparsed_rows_out_and_count_them(explained):
    out, _, result = explained
    scored = [
        (LABEL_ONLY.get(i, _score(t)), _score(g)) for i, (t, g) in ITEMS.items() if g is not None
    ]
    labels, scores = np.array(scored).T
    (entry,) = [r for r in result["scores"]["results"] if r["metric"] == "tiger"]
    assert entry["n"] == 7
    assert entry["kendall"] == pytest.approx(scipy_stats.kendalltau(labels, scores).statistic)
    assert entry["spearman"] == pytest.approx(scipy_stats.spearmanr(labels, scores).statistic)
    assert entry["pearson"] == pytest.approx(scipy_stats.pearsonr(labels, scores).statistic)
    assert result["scores"]["missing_scores"] == {"tiger/explanations/overall": 2}
    table = next(
        t for t in result["tables"] if t["name"] == "explanations_explanation_correlations"
    )
    assert table["header"] == [
        "Metric",
        "Question",
        "n",
        "unparsed",
        "Pearson ρ",
        "Spearman",
        "Kendall τ-b",
    ]
    cells = [
        f"{tables.format_value(entry[k])} {tables.format_interval(entry['ci'][k])}"
        for k in ("pearson", "spearman", "kendall")
    ]
    assert table["rows"][0] == ["tiger", "overall", "7", "2", *cells]
    assert table["rows"][1][:4] == ["length", "overall", "9", "0"]
    assert "never scored as 0" in table["caption"]
    # The generic table is replaced by this one; the paired tests stay.
    names = [t["name"] for t in result["tables"]]
    assert "explanations_table" not in names and "explanations_table_ci" not in names
    assert "explanations_significance_kendall" in names
    (paired,) = result["scores"]["significance"]
    assert (paired["n_items"], paired["unpaired_a"], paired["label_mismatches"]) == (7, 0, 0)
    markdown = (out / "tables.md").read_text(encoding="utf-8")
    assert "| tiger | overall | 7 | 2 | " + " | ".join(cells) + " |" in markdown


def test_quality_table_equals_explanation_quality_and_a_hand_count(explained):
    _, _, result = explained
    (entry,) = result["scores"]["explanations"]["quality"]
    predicted = [ITEMS[i][1] for i in QUALITY_ITEMS]
    true = [ITEMS[i][0] for i in QUALITY_ITEMS]
    expected = explanation_quality.explanation_quality(predicted, true)
    assert {k: entry[k] for k in expected} == expected
    # By hand: 4 predicted, 5 true, 3 matched (i1, i2, i4), 2 with the true aspect (i1, i4);
    # per item exact 1, 0, 1, 2/3, 0, 0 and F1 1, .8, 1, 2/3, 0, 0.
    assert (entry["n_items"], entry["n_predicted"], entry["n_true"]) == (6, 4, 5)
    assert entry["n_matched"] == 3
    assert entry["precision"] == pytest.approx(3 / 4)
    assert entry["recall"] == pytest.approx(3 / 5)
    assert entry["aspect_accuracy"] == pytest.approx(2 / 3)
    assert entry["location_exact"] == pytest.approx((1 + 0 + 1 + 2 / 3) / 6)
    assert entry["location_f1"] == pytest.approx((1 + 0.8 + 1 + 2 / 3) / 6)
    assert (entry["n_rows"], entry["n_unparsed"], entry["n_without_truth"]) == (9, 2, 1)
    assert entry["first_unparsed"].endswith(f"tiger.jsonl:{_lines()['u1']} (no error block found)")
    table = next(t for t in result["tables"] if t["name"] == "explanations_explanation_quality")
    assert table["header"][2:] == [
        "items",
        "unparsed",
        "location exact",
        "location token F1",
        "aspect accuracy",
        "detection precision",
        "detection recall",
    ]
    names = ("location_exact", "location_f1", "aspect_accuracy", "precision", "recall")
    assert table["rows"] == [
        ["tiger", "overall", "6", "2"]
        + [
            f"{tables.format_value(entry[n])} {tables.format_interval(entry['ci'][n])}"
            for n in names
        ]
    ]
    assert table["rows"][0][4:9:2] == [
        f".44 {tables.format_interval(entry['ci']['location_exact'])}",
        f".67 {tables.format_interval(entry['ci']['aspect_accuracy'])}",
        f".60 {tables.format_interval(entry['ci']['recall'])}",
    ]
    assert "Rows without true errors, left out: tiger/overall 1." in table["caption"]


def test_quality_intervals_equal_explanation_quality_on_each_resample(explained):
    _, _, result = explained
    (entry,) = result["scores"]["explanations"]["quality"]
    predicted = [ITEMS[i][1] for i in QUALITY_ITEMS]
    true = [ITEMS[i][0] for i in QUALITY_ITEMS]
    draws: dict[str, list[float]] = {n: [] for n in explanation_report.QUALITY_STATISTICS}
    for chunk in explanation_report.resample_items(len(QUALITY_ITEMS), N_RESAMPLES, seed=0):
        for indices in chunk:
            again = explanation_quality.explanation_quality(
                [predicted[i] for i in indices], [true[i] for i in indices]
            )
            for name in draws:
                draws[name].append(np.nan if again[name] is None else again[name])
    for name, values in draws.items():
        values = np.array(values)
        valid = values[np.isfinite(values)]
        low, high = np.percentile(valid, [2.5, 97.5])
        assert entry["ci"][name]["n_valid"] == valid.size
        assert entry["ci"][name]["low"] == pytest.approx(low)
        assert entry["ci"][name]["high"] == pytest.approx(high)
    # Resamples with no matched error leave aspect accuracy undefined, and are counted.
    assert entry["ci"]["aspect_accuracy"]["n_valid"] < N_RESAMPLES


def test_disagreements_are_the_largest_rank_differences(explained):
    out, path, result = explained
    (group,) = result["scores"]["explanations"]["disagreements"]
    assert (group["metric"], group["n_ranked"], group["n_unscored"]) == ("tiger", 7, 2)
    # Labels -2 -1 0 -5 0 -3 -4 rank 4 5 6.5 1 6.5 3 2; scores -2 -3 0 -1 -2 0 -4 rank
    # 3.5 2 6.5 5 3.5 6.5 1: differences -.5 -3 0 +4 -3 +3.5 -1. i2 and i5 tie at 3: i2,
    # read first, leads.
    items = group["items"]
    assert [i["ids"]["id"] for i in items] == ["i4", "i6", "i2", "i5", "n1"]
    assert [i["rank_difference"] for i in items] == [4.0, 3.5, -3.0, -3.0, -1.0]
    first = items[0]
    assert (first["label"], first["score"], first["label_rank"], first["score_rank"]) == (
        -5.0,
        -1.0,
        1.0,
        5.0,
    )
    assert first["row"] == f"{path}:{_lines()['i4']}"
    assert first["summary"] == "summary i4"
    assert first["errors"] == ITEMS["i4"][1] and first["true_errors"] == ITEMS["i4"][0]
    document = (out / "disagreements.md").read_text(encoding="utf-8")
    assert result["outputs"]["disagreements"] == {"markdown": str(out / "disagreements.md")}
    assert "## tiger: explanations / overall\n\n7 rows ranked, 2 without a score left out." in (
        document
    )
    assert "## length" not in document  # a metric without explanations
    assert document.index("### 1. id `i4`, gem_id `doc-i4`") < document.index("### 2. id `i6`")
    # No error at all: a score of 0 (minus an empty sum), written without a sign.
    assert "- rank difference +3.5: score 0 (rank 6.5), label -3 (rank 3)\n" in document
    assert (
        "- rank difference +4: score -1 (rank 5), label -5 (rank 1)\n"
        f"- row: {path}:{_lines()['i4']}\n"
        "- summary: summary i4\n"
        "- generated errors (1):\n"
        "  1. **Relevance** (Minor, -1) at “green pear”: Relevance error at green pear\n"
        "- true errors (2):\n"
        "  1. **Accuracy** (Major, -4) at “red apple”: Accuracy error at red apple\n"
        "  2. **Relevance** (Minor, -1) at “green pear”: Relevance error at green pear\n"
    ) in document
    # The generated text, in a fence longer than its own runs of backticks.
    assert "````\nanalysis of i4 with `code` and ```fences```\n````" in document
    assert (
        "explanations: tiger on explanations/overall: 2 of 9 analyses did not parse"
        in (result["summary"])
    )


def test_disagreements_flag_sets_how_many_and_refuses_a_negative(tmp_path, capsys):
    path = tmp_path / "tiger.jsonl"
    scorefiles.write_score_file(path, [r for r in _rows() if r["metric"] == "tiger"])
    out = tmp_path / "out"
    argv = ["report", "--scores", str(path), "--output_dir", str(out), "--bootstrap", "0"]
    assert cli.main([*argv, "--no_plots", "--disagreements", "2"]) == 0
    numbers = json.loads((out / "report.json").read_text(encoding="utf-8"))
    (group,) = numbers["scores"]["explanations"]["disagreements"]
    assert [i["ids"]["id"] for i in group["items"]] == ["i4", "i6"]
    assert numbers["settings"]["disagreements"] == 2
    (quality,) = numbers["scores"]["explanations"]["quality"]
    assert "ci" not in quality  # --bootstrap 0: no intervals, and no caption says so
    table = next(t for t in numbers["tables"] if t["name"].endswith("_explanation_quality"))
    assert table["rows"][0][4] == ".44" and "bootstrap" not in table["caption"]
    assert cli.main([*argv, "--disagreements", "-1"]) != 0
    assert "--disagreements must be >= 0, got -1" in capsys.readouterr().err


def test_rows_without_explanations_add_nothing(tmp_path):
    path = tmp_path / "length.jsonl"
    scorefiles.write_score_file(path, [r for r in _rows() if r["metric"] == "length"])
    settings = report.ReportSettings(by=(), n_resamples=0, plots=False)
    result = report.write_report(tmp_path / "out", score_paths=[path], settings=settings)
    assert "explanations" not in result["scores"]
    assert "disagreements" not in result["outputs"]
    assert not (tmp_path / "out" / "disagreements.md").exists()
    assert [t["name"] for t in result["tables"]] == ["explanations_table"]


def test_malformed_errors_name_the_file_and_line(tmp_path):
    rows = [r for r in _rows() if r["metric"] == "tiger"]
    rows[3]["errors"] = "not a list"
    path = tmp_path / "bad.jsonl"
    scorefiles.write_score_file(path, rows)
    settings = report.ReportSettings(by=(), n_resamples=0, plots=False)
    with pytest.raises(errors.DataError, match=r"bad\.jsonl:4 field 'errors': expected a list"):
        report.write_report(tmp_path / "out", score_paths=[path], settings=settings)
    rows[3]["errors"] = [{"aspect": "Accuracy"}]
    scorefiles.write_score_file(path, rows)
    with pytest.raises(errors.DataError, match=r"bad\.jsonl:4: .*no field 'location'"):
        report.write_report(tmp_path / "out2", score_paths=[path], settings=settings)

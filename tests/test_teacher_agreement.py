"""`report --teacher`: students against their teacher, row by row, checked with scipy/sklearn."""

import json
import pathlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from sklearn.metrics import roc_auc_score

from seahorse_t5x import cli, errors
from seahorse_t5x.data import scorefiles
from seahorse_t5x.evaluation import (
    normalizing,
    protocol_stats,
    report,
    stats,
    tables,
    teacher_agreement,
)

N_ITEMS = 90
# Student B also scores items the teacher never saw; student A a question it never scored.
EXTRA_ITEMS_B = 7
QUESTIONS = (1, 4)
LONELY_QUESTION = 5


def _items(rng: np.random.Generator, question: int, n: int, prefix: str = "x") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "gem_id": [f"{prefix}sum_english-test-{i}" for i in range(n)],
            "system": rng.choice(["t5_base", "mt5_xxl", "reference"], size=n),
            "language": "en",
            "dataset": "xlsum",
            "question": question,
            "label": rng.integers(0, 2, size=n),
        }
    )


def _write(path: pathlib.Path, metric: str, frame: pd.DataFrame, scores: np.ndarray) -> None:
    rows = [
        scorefiles.score_row(
            metric=metric,
            benchmark="seahorse",
            question=int(item["question"]),
            label=int(item["label"]),
            score=float(score),
            slices=item,
        )
        for item, score in zip(frame.to_dict("records"), scores, strict=True)
    ]
    scorefiles.write_score_file(path, rows)


@pytest.fixture(scope="module")
def score_files(tmp_path_factory):
    """A teacher and two students on the same seeded rows, and what each file holds."""
    rng = np.random.default_rng(20260101)
    root = tmp_path_factory.mktemp("teacher_scores")
    items = pd.concat([_items(rng, q, N_ITEMS) for q in QUESTIONS], ignore_index=True)
    teacher = 1 / (1 + np.exp(-(2.0 * items["label"] - 1 + rng.normal(0, 1.0, len(items)))))
    student_a = np.clip(teacher + rng.normal(0, 0.05, len(items)), 0, 1)
    student_b = np.clip(teacher + rng.normal(0, 0.3, len(items)), 0, 1)
    # Items in the middle of B's file that the teacher has no row for.
    extra = _items(rng, 4, EXTRA_ITEMS_B, prefix="extra")
    lonely = _items(rng, LONELY_QUESTION, 20)
    items_b = pd.concat([items.iloc[:100], extra, items.iloc[100:]], ignore_index=True)
    scores_b = np.concatenate([student_b[:100], rng.uniform(size=EXTRA_ITEMS_B), student_b[100:]])
    items_a = pd.concat([items, lonely], ignore_index=True)
    scores_a = np.concatenate([student_a, rng.uniform(size=len(lonely))])
    paths = [root / "teacher.jsonl", root / "student_a.jsonl", root / "student_b.jsonl"]
    _write(paths[0], "teacher", items, teacher)
    _write(paths[1], "student_a", items_a, scores_a)
    _write(paths[2], "student_b", items_b, scores_b)
    return paths


def _settings(**overrides) -> report.ReportSettings:
    values = {"by": (), "n_resamples": 200, "seed": 3, "plots": False, "teacher": "teacher"}
    return report.ReportSettings(**{**values, **overrides})


def _rows(paths) -> pd.DataFrame:
    frame = scorefiles.read_score_files(paths)
    return normalizing.normalized_scores(frame)[0]


def _joined(paths, student: str, question: int) -> pd.DataFrame:
    # The join done independently: pandas on the item fields the files carry.
    frame = pd.concat([pd.read_json(p, lines=True) for p in paths], ignore_index=True)
    frame = frame[frame["question"] == question]
    key = ["gem_id", "system"]
    return frame[frame["metric"] == student].merge(
        frame[frame["metric"] == "teacher"], on=key, suffixes=("_s", "_t")
    )


@pytest.fixture(scope="module")
def agreement(score_files):
    return teacher_agreement.teacher_agreement(_rows(score_files), "teacher", _settings())


def _entry(agreement: dict, student: str, question: int) -> dict:
    (entry,) = [
        r
        for r in agreement["results"]
        if r["student"] == student and r["question"] == str(question)
    ]
    return entry


@pytest.mark.parametrize("student", ["student_a", "student_b"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_agreement_with_the_teacher_equals_scipy(score_files, agreement, student, question):
    entry = _entry(agreement, student, question)
    joined = _joined(score_files, student, question)
    assert entry["n_joined"] == len(joined) == N_ITEMS
    pearson = entry["agreement"]["pearson"]
    spearman = entry["agreement"]["spearman"]
    expected = scipy_stats.pearsonr(joined["score_s"], joined["score_t"]).statistic
    assert pearson["estimate"] == pytest.approx(expected, abs=1e-12)
    expected = scipy_stats.spearmanr(joined["score_s"], joined["score_t"]).statistic
    assert spearman["estimate"] == pytest.approx(expected, abs=1e-12)
    for interval in (pearson, spearman):
        assert interval["low"] < interval["estimate"] < interval["high"]
        assert interval["n_valid"] == 200


def test_a_closer_student_agrees_more(agreement):
    for question in QUESTIONS:
        close = _entry(agreement, "student_a", question)["agreement"]["pearson"]
        far = _entry(agreement, "student_b", question)["agreement"]["pearson"]
        assert close["low"] > far["high"]


def test_both_metrics_against_the_labels_and_their_tests(score_files, agreement):
    entry = _entry(agreement, "student_b", 4)
    joined = _joined(score_files, "student_b", 4)
    labels = joined["label_s"].to_numpy(np.float64)
    student = joined["score_s"].to_numpy(np.float64)
    teacher = joined["score_t"].to_numpy(np.float64)
    assert (joined["label_s"] == joined["label_t"]).all()
    for side, scores in (("student_vs_labels", student), ("teacher_vs_labels", teacher)):
        assert entry[side]["n"] == N_ITEMS
        assert entry[side]["pearson"] == pytest.approx(
            scipy_stats.pearsonr(labels, scores).statistic, abs=1e-12
        )
        assert entry[side]["roc_auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    # The report's own paired test and Williams' test, called on the same rows.
    for statistic in ("pearson", "roc_auc"):
        direct = stats.paired_bootstrap(
            labels, student, teacher, statistic=statistic, n_resamples=200, seed=3
        )
        assert entry["paired"][statistic]["p_value"] == direct["p_value"]
        assert entry["paired"][statistic]["difference"] == pytest.approx(direct["difference"])
    direct = protocol_stats.williams_compare(labels, student, teacher)
    assert entry["williams"]["p_value"] == pytest.approx(direct["p_value"], abs=1e-15)
    assert entry["williams"]["r_ab"] == pytest.approx(entry["agreement"]["pearson"]["estimate"])


def test_rows_without_a_teacher_row_are_counted(agreement):
    students = agreement["students"]
    assert students["student_b"]["rows"] == 2 * N_ITEMS + EXTRA_ITEMS_B
    assert students["student_b"]["no_teacher_score"] == EXTRA_ITEMS_B
    assert _entry(agreement, "student_b", 4)["no_teacher_score"] == EXTRA_ITEMS_B
    assert _entry(agreement, "student_b", 1)["no_teacher_score"] == 0
    # A question the teacher never scored: every row of it lacks a teacher score.
    assert students["student_a"]["rows"] == 2 * N_ITEMS + 20
    assert students["student_a"]["no_teacher_score"] == 20
    assert students["student_a"]["questions_without_teacher"] == [f"seahorse/{LONELY_QUESTION}"]
    assert not any(r["question"] == str(LONELY_QUESTION) for r in agreement["results"])
    assert agreement["summary"] == (
        "teacher teacher: 2 student(s) on 2 question(s); "
        f"student student_a: 20 of {2 * N_ITEMS + 20} rows have no teacher score; "
        f"student student_b: {EXTRA_ITEMS_B} of {2 * N_ITEMS + EXTRA_ITEMS_B} rows have no "
        "teacher score"
    )


def test_intervals_follow_the_seed(score_files, agreement):
    again = teacher_agreement.teacher_agreement(_rows(score_files), "teacher", _settings())
    assert again["results"] == agreement["results"]
    other = teacher_agreement.teacher_agreement(_rows(score_files), "teacher", _settings(seed=4))
    first, second = (_entry(a, "student_b", 1)["agreement"]["pearson"] for a in (agreement, other))
    assert first["estimate"] == second["estimate"]
    assert (first["low"], first["high"]) != (second["low"], second["high"])


def test_without_bootstrap_there_are_no_intervals_but_williams_stays(score_files):
    result = teacher_agreement.teacher_agreement(
        _rows(score_files), "teacher", _settings(n_resamples=0)
    )
    entry = _entry(result, "student_a", 1)
    assert entry["agreement"]["pearson"]["low"] is None
    assert entry["agreement"]["pearson"]["estimate"] is not None
    assert entry["paired"] == {}
    assert entry["williams"]["p_value"] is not None


def test_the_command_writes_the_table_json_and_summary(score_files, tmp_path, capsys):
    out = tmp_path / "report"
    args = ["report", "--scores", *map(str, score_files), "--output_dir", str(out)]
    options = ["--teacher", "teacher", "--bootstrap", "200", "--seed", "3", "--no_plots"]
    code = cli.main([*args, *options, "--by", ""])
    assert code == 0
    printed = capsys.readouterr().out.splitlines()
    assert (
        printed[-1]
        == teacher_agreement.teacher_agreement(_rows(score_files), "teacher", _settings())[
            "summary"
        ]
    )
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["settings"]["teacher"] == "teacher"
    numbers = data["scores"]["teacher_agreement"]
    entry = _entry(numbers, "student_a", 4)
    # The command's numbers are the library's.
    library = teacher_agreement.teacher_agreement(_rows(score_files), "teacher", _settings())
    assert entry == _entry(library, "student_a", 4)
    markdown = (out / "teacher_agreement.md").read_text(encoding="utf-8")
    lines = markdown.splitlines()
    header = lines[lines.index("### seahorse: students against the teacher teacher") + 2]
    assert header == (
        "| Student | Question | n | No teacher | Pearson ρ (teacher) | Spearman (teacher) | "
        "Student ρ/roc | Teacher ρ/roc | Δρ (p) | Δroc (p) | Williams p |"
    )
    row = next(line for line in lines if line.startswith("| student_b | Q4 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:4] == [str(N_ITEMS), str(EXTRA_ITEMS_B)]
    pearson = _entry(library, "student_b", 4)["agreement"]["pearson"]
    assert cells[4].startswith(f"{pearson['estimate']:.2f}".lstrip("0"))
    latex = (out / "teacher_agreement.tex").read_text(encoding="utf-8")
    assert "\\label{tab:seahorse_teacher_agreement}" in latex
    assert data["outputs"]["teacher_agreement"]["markdown"] == str(out / "teacher_agreement.md")
    assert "seahorse_teacher_agreement" in {t["name"] for t in data["tables"]}
    # The agreement has its own files; tables.md holds the paper's tables only.
    assert "against the teacher" not in (out / "tables.md").read_text(encoding="utf-8")


def test_without_teacher_the_report_has_no_agreement(score_files, tmp_path):
    result = report.write_report(
        tmp_path, score_paths=score_files, settings=_settings(teacher=None, n_resamples=0)
    )
    assert result["scores"]["teacher_agreement"] is None
    assert "teacher_agreement" not in result["outputs"]
    assert not (tmp_path / "teacher_agreement.md").exists()
    assert "\n" not in result["summary"]


def test_an_unknown_teacher_is_one_line_naming_the_metrics_read(score_files, tmp_path, capsys):
    args = ["report", "--scores", *map(str, score_files), "--output_dir", str(tmp_path / "o")]
    assert cli.main([*args, "--teacher", "nobody", "--no_plots"]) == 2
    assert capsys.readouterr().err == (
        "seahorse-t5x report: error: --teacher 'nobody' is not a metric in the score files "
        "(metrics read: teacher, student_a, student_b)\n"
    )
    with pytest.raises(errors.UserError, match="metrics read: teacher, student_a, student_b"):
        teacher_agreement.teacher_agreement(_rows(score_files), "nobody", _settings())


def test_one_question_model_of_a_family_can_be_the_teacher(score_files, tmp_path):
    # Teacher rows renamed `big_q1`, `big_q4`: shown as one metric `big`, found by either name.
    frame = scorefiles.read_score_files(score_files)
    teacher = frame["metric"] == "teacher"
    frame.loc[teacher, "metric"] = "big_q" + frame.loc[teacher, "question"]
    rows = normalizing.normalized_scores(frame)[0]
    by_member = teacher_agreement.teacher_agreement(rows, "big_q4", _settings(n_resamples=0))
    assert {(r["student"], r["question"]) for r in by_member["results"]} == {
        ("student_a", "4"),
        ("student_b", "4"),
    }
    by_family = teacher_agreement.teacher_agreement(rows, "big", _settings(n_resamples=0))
    assert len(by_family["results"]) == 4
    assert (
        _entry(by_family, "student_a", 4)["agreement"]
        == _entry(by_member, "student_a", 4)["agreement"]
    )


def test_a_student_on_other_items_is_counted_and_its_numbers_say_why(score_files):
    frame = scorefiles.read_score_files(score_files)
    student_b = frame["metric"] == "student_b"
    frame.loc[student_b, "gem_id"] = "other-" + frame.loc[student_b, "gem_id"]
    # And one label of student A's that the teacher's row contradicts.
    first_a = frame.index[frame["metric"] == "student_a"][0]
    frame.loc[first_a, "label"] = 1 - frame.loc[first_a, "label"]
    result = teacher_agreement.teacher_agreement(
        normalizing.normalized_scores(frame)[0], "teacher", _settings(n_resamples=50)
    )
    entry = _entry(result, "student_b", 1)
    assert (entry["n_joined"], entry["no_teacher_score"]) == (0, N_ITEMS)
    assert entry["agreement"]["pearson"] == {
        "estimate": None,
        "low": None,
        "high": None,
        "reason": "fewer than 2 joined rows",
    }
    assert entry["paired"]["pearson"]["reason"] == "metric A: no items"
    assert entry["williams"]["p_value"] is None
    assert _entry(result, "student_a", 1)["label_mismatches"] == 1
    assert _entry(result, "student_a", 1)["n_joined"] == N_ITEMS - 1
    assert result["summary"].endswith(
        f"student student_a: 20 of {2 * N_ITEMS + 20} rows have no teacher score, 1 whose "
        f"teacher row has another label; student student_b: {2 * N_ITEMS + EXTRA_ITEMS_B} of "
        f"{2 * N_ITEMS + EXTRA_ITEMS_B} rows have no teacher score"
    )
    table = tables.teacher_agreement_table(result["results"], "seahorse", "teacher")
    row = next(r for r in table.rows if r[:2] == ["student_b", "Q1"])
    assert row[2:] == ["0", str(N_ITEMS), *["-"] * 7]


def test_a_teacher_alone_has_no_students(score_files):
    rows = _rows(score_files)
    result = teacher_agreement.teacher_agreement(
        rows[rows["metric"] == "teacher"], "teacher", _settings()
    )
    assert result["results"] == []
    assert result["summary"] == "teacher teacher: no other metric to compare with it"

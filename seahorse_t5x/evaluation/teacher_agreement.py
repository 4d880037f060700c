"""Students against their teacher (`report --teacher`): every other metric's rows paired with
the teacher metric's (`pairing.pair_rows`, the teacher as metric B), per benchmark and
question both score: agreement with the teacher's scores, both metrics' agreement with the
labels on the same rows, the paired bootstrap of student - teacher and Williams' test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from seahorse_t5x import errors
from seahorse_t5x.evaluation import normalizing, pairing, protocol_stats, score_statistics, stats
from seahorse_t5x.evaluation.report_settings import ReportSettings


def _metric_names(frame: pd.DataFrame) -> list[str]:
    """The metrics as reported, then the names in the files that a merge replaced."""
    names = list(dict.fromkeys(frame["metric"]))
    if "model" in frame.columns:
        names += [m for m in dict.fromkeys(frame["model"]) if m not in names]
    return names


def check_teacher(frame: pd.DataFrame, teacher: str) -> None:
    """Raises errors.UserError when `teacher` names no metric of the rows: neither a
    reported metric nor, for one model per question, a member's own name."""
    names = _metric_names(frame)
    if teacher not in names:
        raise errors.UserError(
            f"--teacher {teacher!r} is not a metric in the score files (metrics read: "
            f"{', '.join(names)})"
        )


def _teacher_mask(frame: pd.DataFrame, teacher: str) -> pd.Series:
    # A member of a merged family (`NAME_q4`) is found by its own name, kept in `model`.
    if teacher in set(frame["metric"]) or "model" not in frame.columns:
        return frame["metric"] == teacher
    return frame["model"] == teacher


_AGREEMENT_STATISTICS: tuple[str, ...] = ("pearson", "spearman")


def _agreement_with_teacher(
    student: np.ndarray, teacher: np.ndarray, settings: ReportSettings
) -> dict:
    """Pearson and Spearman between the student's and the teacher's scores on the joined
    rows, each with its bootstrap interval (items resampled as for every other interval)."""
    reason = None
    if student.size < 2:
        reason = "fewer than 2 joined rows"
    elif np.all(teacher == teacher[0]):
        reason = "the teacher's scores are constant: correlation undefined"
    elif np.all(student == student[0]):
        reason = "the student's scores are constant: correlation undefined"
    intervals = {}
    if reason is None and settings.n_resamples > 0:
        intervals = stats.bootstrap_ci(
            teacher,
            student,
            statistics=_AGREEMENT_STATISTICS,
            n_resamples=settings.n_resamples,
            seed=settings.seed,
        )
    out = {}
    for name in _AGREEMENT_STATISTICS:
        entry = {"estimate": None, "low": None, "high": None, "reason": reason}
        if reason is None:
            entry["estimate"] = protocol_stats.correlation(name, student, teacher)
        if name in intervals:
            ci = intervals[name]
            entry.update(low=ci["low"], high=ci["high"], reason=ci["reason"])
            entry.update(n_resamples=ci["n_resamples"], n_valid=ci["n_valid"])
        out[name] = entry
    return out


def _teacher_entry(joined: pd.DataFrame, settings: ReportSettings) -> dict:
    """One student's numbers on one (benchmark, question): agreement with the teacher, and
    both metrics' agreement with the labels compared on the same rows."""
    labels = joined["label"].to_numpy(dtype=np.float64)
    student = joined["score_a"].to_numpy(dtype=np.float64)
    teacher = joined["score_b"].to_numpy(dtype=np.float64)
    rows = pd.DataFrame({"label": labels})
    entry: dict = {
        "agreement": _agreement_with_teacher(student, teacher, settings),
        "student_vs_labels": score_statistics.group_metrics(rows.assign(score=student)),
        "teacher_vs_labels": score_statistics.group_metrics(rows.assign(score=teacher)),
        "paired": {},
    }
    if settings.n_resamples > 0:
        for statistic in score_statistics.resampled_statistics(rows):
            entry["paired"][statistic] = stats.paired_bootstrap(
                labels,
                student,
                teacher,
                statistic=statistic,
                n_resamples=settings.n_resamples,
                seed=settings.seed,
            )
    entry["williams"] = protocol_stats.williams_compare(labels, student, teacher)
    return entry


def teacher_agreement(frame: pd.DataFrame, teacher: str, settings: ReportSettings) -> dict:
    """Every other metric (a student) against `teacher`, per (benchmark, question) both score.

    Rows are joined as `score_statistics.compare_metrics` joins two metrics (`pairing.pair_rows`, the teacher
    as metric B); a student row without a teacher row on its item is counted, never dropped
    unsaid. On the joined rows: the student's Pearson and Spearman with the
    teacher's scores (bootstrap intervals with `settings.n_resamples` and `settings.seed`),
    both metrics' agreement with the labels (`score_statistics.group_metrics`), the paired bootstrap of
    student - teacher on each resampled statistic and Williams' test on Pearson.

    Args:
      frame: score rows as the report groups them (`normalizing.normalized_scores`); rows without a
        score may be included (paired, then left out; not counted in `rows`).
      teacher: a metric of `frame` (or a merged member's own name, see `check_teacher`).

    Returns:
      `{"teacher", "results": [entry per benchmark, question and student], "students":
      {student: {"rows", "no_teacher_score", "label_mismatches", "questions_without_teacher"}
      and `left_out` where rows lacked an item id or repeated a key}, "summary"}`; the
      counts are of scored rows and leave out a language subset's copies of its
      benchmark's rows.

    Raises:
      errors.UserError: `teacher` is not a metric of `frame`.
    """
    check_teacher(frame, teacher)
    is_teacher = _teacher_mask(frame, teacher)
    teachers, others = frame[is_teacher], frame[~is_teacher]
    subsets = normalizing.subset_names()
    results: list[dict] = []
    students: dict[str, dict] = {}
    # Pairs are made on all rows, scored or not (`pairing.pair_rows`); rows are counted,
    # and groups listed, by their scores.
    student_rows = dict(iter(others.groupby(["benchmark", "metric", "question"], sort=False)))
    for (benchmark, student, question), rows in normalizing.groups(others[others["score"].notna()]):
        counts = students.setdefault(student, _new_counts())
        counted = benchmark not in subsets
        theirs = teachers[(teachers["benchmark"] == benchmark) & (teachers["question"] == question)]
        n_theirs = int(theirs["score"].notna().sum())
        if n_theirs == 0:
            if counted:
                counts["rows"] += len(rows)
                counts["no_teacher_score"] += len(rows)
                counts["questions_without_teacher"].append(f"{benchmark}/{question}")
            continue
        paired = pairing.pair_rows(student_rows[(benchmark, student, question)], theirs)
        left_out = paired.left_out()
        if counted:
            _count_student(counts, len(rows), paired)
        entry = {
            "benchmark": benchmark,
            "question": question,
            "student": student,
            "teacher": teacher,
            "n_student_rows": int(len(rows)),
            "n_teacher_rows": n_theirs,
            "n_joined": paired.n_items,
            "no_teacher_score": paired.unpaired_a,
            "label_mismatches": paired.label_mismatches,
            "paired_by": list(paired.paired_by),
            **left_out,
        }
        entry.update(_teacher_entry(paired.rows, settings))
        results.append(entry)
    return {
        "teacher": teacher,
        "results": results,
        "students": students,
        "summary": _teacher_summary(teacher, results, students),
    }


def _new_counts() -> dict:
    return {
        "rows": 0,
        "no_teacher_score": 0,
        "label_mismatches": 0,
        "questions_without_teacher": [],
    }


def _count_student(counts: dict, n_rows: int, paired: pairing.Pairing) -> None:
    """Adds one question's scored rows of a student, and those paired with no teacher row."""
    counts["rows"] += n_rows
    counts["no_teacher_score"] += paired.unpaired_a
    counts["label_mismatches"] += paired.label_mismatches
    unpaired = paired.missing_ids_a + paired.duplicates_a
    if unpaired:  # rows of the student's without an id, or with a repeated key
        counts["left_out"] = counts.get("left_out", 0) + unpaired


def _teacher_summary(teacher: str, results: Sequence[Mapping], students: Mapping) -> str:
    if not students:
        return f"teacher {teacher}: no other metric to compare with it"
    tasks = len({(r["benchmark"], r["question"]) for r in results})
    parts = [f"teacher {teacher}: {len(students)} student(s) on {tasks} question(s)"]
    for student, counts in students.items():
        part = (
            f"student {student}: {counts['no_teacher_score']} of {counts['rows']} rows have "
            "no teacher score"
        )
        if counts["label_mismatches"]:
            part += f", {counts['label_mismatches']} whose teacher row has another label"
        if counts.get("left_out"):
            part += (
                f", {counts['left_out']} left out for want of an item id or for a repeated item key"
            )
        parts.append(part)
    return "; ".join(parts)

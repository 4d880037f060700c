"""The `report` command's logic: score files or a prepared dataset -> tables, plots, JSON.

From score files (`data/scorefiles.py`), per benchmark, metric and question:
Pearson ρ and ROC-AUC (Spearman and Kendall tau-b for graded labels) with 95% bootstrap
intervals, breakdowns by slice fields, and a paired bootstrap between metrics on the same
items. From a prepared dataset folder (`prepare` output): the paper's Tables 1, 3 and 8,
pairwise agreement (Table 4) when duplicate ratings are given, and the Figure-3 label correlations.

Everything lands in one folder: `report.json` (all numbers, with the reason for each
undefined value), `tables.md`, `tables.tex` and `plots/*.png`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import pathlib
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.data import scorefiles, splits
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import (
    explanation_report,
    explanation_tables,
    pairing,
    plots,
    protocol_tables,
    protocols,
    stats,
    tables,
)

log = logging.getLogger(__name__)

DEFAULT_BY: tuple[str, ...] = ("language", "dataset", "system")
# The item a label belongs to when the questions are pivoted (Figure 3): one article
# (gem_id) has summaries from several systems; the summary, where files carry it. (Two
# metrics' rows are paired on `pairing.ITEM_KEY`.)
ITEM_KEY: tuple[str, ...] = scorefiles.ITEM_FIELDS
# A duplicated SEAHORSE item: the same summary of the same article, rated again.
DUPLICATE_KEY: tuple[str, ...] = ("gem_id", "summary")
# The name of the teacher-agreement tables' files (`teacher_agreement.md`, `.tex`).
TEACHER_AGREEMENT = "teacher_agreement"


@dataclasses.dataclass
class ReportSettings:
    """How the report is computed (all written into report.json)."""

    by: tuple[str, ...] = DEFAULT_BY
    n_resamples: int = 1000
    seed: int = 0
    baseline: str | None = None
    plots: bool = True
    drop_duplicates: bool = False
    # Only these benchmarks' rows (empty: all); with a path, the benchmark's reader runs
    # too and its section says how many of its items each metric scored.
    benchmarks: tuple[str, ...] = ()
    benchmark_paths: dict[str, str | None] = dataclasses.field(default_factory=dict)
    # A metric whose scores the others (its students) are compared with, row by row.
    teacher: str | None = None
    # Items listed per metric and question where an explainable metric's score and the
    # label disagree most (explanation_report.disagreements; 0: none).
    disagreements: int = explanation_report.DEFAULT_DISAGREEMENTS


# ------------------------------------------------------------------------ statistics


def group_metrics(rows: pd.DataFrame) -> dict:
    """Agreement of one (benchmark, metric, question[, slice]) group of score rows.

    0/1 labels: `stats.binary_metrics` plus Spearman and Kendall. Graded labels:
    `stats.graded_metrics`, plus ROC-AUC and the Yes rate against `label_binary` when the
    rows carry it (the raters' majority of a graded benchmark).
    """
    labels = rows["label"].to_numpy(dtype=np.float64)
    scores = rows["score"].to_numpy(dtype=np.float64)
    if stats.labels_are_binary(labels):
        result = stats.binary_metrics(labels, scores)
        # Rank correlations too, so a benchmark mixing 0/1 and graded dimensions (METAL)
        # fills one table.
        ranks = stats.graded_metrics(labels, scores)
        for name in ("spearman", "kendall"):
            result[name] = ranks[name]
            if name in ranks["reasons"]:
                result["reasons"][name] = ranks["reasons"][name]
        result["reasons"] = result.pop("reasons")
        return result
    result = stats.graded_metrics(labels, scores)
    binary = rows["label_binary"] if "label_binary" in rows.columns else None
    if binary is not None and binary.notna().all():
        on_binary = stats.binary_metrics(binary.to_numpy(dtype=np.float64), scores)
        for name in ("roc_auc", "positive_rate"):
            result[name] = on_binary[name]
            if name in on_binary["reasons"]:
                result["reasons"][name] = on_binary["reasons"][name]
    else:
        result["roc_auc"] = None
        result["reasons"]["roc_auc"] = "labels are graded and the rows carry no label_binary"
    result["reasons"] = result.pop("reasons")
    return result


# The statistics given an interval and a paired test, by whether the labels are 0/1.
RESAMPLED_STATISTICS: dict[bool, tuple[str, ...]] = {
    True: ("pearson", "roc_auc"),
    False: ("pearson", "spearman", "kendall"),
}


def _resampled_statistics(rows: pd.DataFrame) -> tuple[str, ...]:
    return RESAMPLED_STATISTICS[stats.labels_are_binary(rows["label"].to_numpy(dtype=np.float64))]


def _datasets_reported_as_questions() -> list[registry.Benchmark]:
    """The benchmarks whose paper protocol reports by dataset (TRUE's Table 7 columns)."""
    return [
        b
        for b in registry.benchmarks()
        if b.protocol.kind == registry.PAPER and b.protocol.by == ("dataset",)
    ]


def datasets_as_questions(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of a benchmark reported by dataset grouped by their dataset, not by the
    question they all share (TRUE's Q4 -> Table 7's columns).

    For such a benchmark's rows whose `dataset` is one of its display names (or their
    keys), `question` becomes the display name; the original is kept in `scored_question`.
    """
    columns = pd.Series([None] * len(frame), index=frame.index, dtype=object)
    mask = pd.Series(False, index=frame.index)
    for benchmark in _datasets_reported_as_questions():
        rows = frame["benchmark"] == benchmark.name
        if not rows.any():
            continue
        names = frame.loc[rows, "dataset"].map(benchmark.display_name)
        columns[names.index] = names
        mask |= rows & columns.notna()
    if not mask.any():
        return frame
    frame = frame.copy()
    frame["scored_question"] = frame["question"].where(mask, None)
    frame.loc[mask, "question"] = columns[mask]
    return frame


_QUESTION_MODEL = re.compile(r"^(?P<family>.+?)[_.-]q(?P<question>[1-6])$")


def merge_question_models(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """One row per metric family: `NAME_q1` .. `NAME_q6` (one model per question) -> `NAME`.

    A metric `NAME_qN` (also `NAME.qN`, `NAME-qN`) joins the family `NAME` when every one of
    its rows with a question number has question N (rows of benchmark dimensions, such as
    mFACE's `attribution`, may be scored by it too), `NAME` is not itself a metric, and no
    two members score the same benchmark and question. The original name is kept in
    `model`.

    Returns:
      The frame with merged metric names, and `{family: [members]}` for each merge.
    """
    metrics = list(dict.fromkeys(frame["metric"]))
    members: dict[str, list[str]] = {}
    for metric in metrics:
        match = _QUESTION_MODEL.match(metric)
        if not match or match["family"] in metrics:
            continue
        questions = frame.loc[frame["metric"] == metric, "question"]
        numbered = set(questions[questions.str.isdigit()])
        if numbered <= {match["question"]}:
            members.setdefault(match["family"], []).append(metric)
    merged: dict[str, list[str]] = {}
    for family, names in members.items():
        rows = frame[frame["metric"].isin(names)]
        if (
            len(names) > 1
            and not rows.groupby(["benchmark", "question"])["metric"].nunique().gt(1).any()
        ):
            merged[family] = names
    if not merged:
        return frame, {}
    rename = {name: family for family, names in merged.items() for name in names}
    frame = frame.copy()
    frame["model"] = frame["metric"]
    frame["metric"] = frame["metric"].map(lambda m: rename.get(m, m))
    return frame, merged


def normalized_scores(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Score rows as the report groups them: question models merged into families
    (`merge_question_models`), rows of a benchmark reported by dataset keyed by dataset
    (`datasets_as_questions`), language subsets added (`language_subsets`)."""
    frame, merged = merge_question_models(frame)
    return language_subsets(datasets_as_questions(frame)), merged


def language_subsets(frame: pd.DataFrame) -> pd.DataFrame:
    """Adds each benchmark's language subset (`registry.LanguageSubset`, e.g. mFACE's five
    SEAHORSE languages, as `mface_5lang`) when its rows hold other languages too (the
    paper's Table 6 shows both); otherwise returns `frame`."""
    subsets = []
    for benchmark in registry.benchmarks():
        if benchmark.subset is None:
            continue
        rows = frame[frame["benchmark"] == benchmark.name]
        inside = rows["language"].isin(benchmark.subset.languages)
        if inside.any() and not inside.all():
            subsets.append(rows[inside].assign(benchmark=benchmark.subset_name))
    return pd.concat([frame, *subsets], ignore_index=True) if subsets else frame


def _subset_names() -> set[str]:
    return {b.subset_name for b in registry.benchmarks() if b.subset_name}


def ordered_benchmarks(frame: pd.DataFrame) -> list[str]:
    """Benchmarks in the paper's order: SEAHORSE, then those with a paper table by its
    number, each after its language subset (mFACE's Table 6, TRUE's Table 7), then the
    others as first seen."""
    seen = list(dict.fromkeys(frame["benchmark"]))
    tabled = sorted((b for b in registry.benchmarks() if b.table), key=lambda b: b.table.number)
    order = [constants.SEAHORSE_BENCHMARK]
    for benchmark in tabled:
        order += [name for name in (benchmark.subset_name, benchmark.name) if name]
    known = [b for b in order if b in seen]
    return known + [b for b in seen if b not in known]


def _groups(frame: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    """(benchmark, metric, question) groups: benchmarks and metrics in first-seen order."""
    benchmarks = ordered_benchmarks(frame)
    metrics = list(dict.fromkeys(frame["metric"]))
    out = []
    for key, rows in frame.groupby(["benchmark", "metric", "question"], sort=False):
        out.append((key, rows))
    out.sort(
        key=lambda kv: (
            benchmarks.index(kv[0][0]),
            metrics.index(kv[0][1]),
            tables.question_sort_key(kv[0][2]),
        )
    )
    return out


def _scored_groups(
    frame: pd.DataFrame, by: list[str]
) -> list[tuple[tuple, pd.DataFrame, pd.DataFrame]]:
    """(key, rows with a score, all rows) per group of `by` that has a scored row, in the
    order the scored rows first show them: the pairs are made on all rows
    (`pairing.pair_rows` leaves out the unscored after pairing)."""
    everything = dict(iter(frame.groupby(by, sort=False)))
    scored = frame[frame["score"].notna()]
    return [(key, rows, everything[key]) for key, rows in scored.groupby(by, sort=False)]


def compare_metrics(frame: pd.DataFrame, settings: ReportSettings) -> list[dict]:
    """Paired bootstrap between metrics on each (benchmark, question): every pair, or every
    metric against `settings.baseline`.

    Args:
      frame: score rows as the report groups them (`normalized_scores`), rows without a
        score included or not: the metrics of a question are those with a score there.
    """
    comparisons = []
    for (benchmark, question), rows, all_rows in _scored_groups(frame, ["benchmark", "question"]):
        metrics = list(dict.fromkeys(rows["metric"]))
        if settings.baseline is not None:
            if settings.baseline not in metrics:
                continue
            pairs = [(m, settings.baseline) for m in metrics if m != settings.baseline]
        else:
            pairs = list(itertools.combinations(metrics, 2))
        for metric_a, metric_b in pairs:
            paired = pairing.pair_rows(
                all_rows[all_rows["metric"] == metric_a], all_rows[all_rows["metric"] == metric_b]
            )
            joined = paired.rows
            entry = {
                "benchmark": benchmark,
                "question": question,
                "metric_a": metric_a,
                "metric_b": metric_b,
                **paired.info(),
            }
            labels = joined["label"].to_numpy(dtype=np.float64)
            for statistic in _resampled_statistics(joined):
                entry[statistic] = stats.paired_bootstrap(
                    labels,
                    joined["score_a"].to_numpy(dtype=np.float64),
                    joined["score_b"].to_numpy(dtype=np.float64),
                    statistic=statistic,
                    n_resamples=settings.n_resamples,
                    seed=settings.seed,
                )
            comparisons.append(entry)
    return comparisons


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
            entry["estimate"] = stats.correlation(name, student, teacher)
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
        "student_vs_labels": group_metrics(rows.assign(score=student)),
        "teacher_vs_labels": group_metrics(rows.assign(score=teacher)),
        "paired": {},
    }
    if settings.n_resamples > 0:
        for statistic in _resampled_statistics(rows):
            entry["paired"][statistic] = stats.paired_bootstrap(
                labels,
                student,
                teacher,
                statistic=statistic,
                n_resamples=settings.n_resamples,
                seed=settings.seed,
            )
    entry["williams"] = stats.williams_compare(labels, student, teacher)
    return entry


def teacher_agreement(frame: pd.DataFrame, teacher: str, settings: ReportSettings) -> dict:
    """Every other metric (a student) against `teacher`, per (benchmark, question) both score.

    Rows are joined as `compare_metrics` joins two metrics (`pairing.pair_rows`, the teacher
    as metric B); a student row without a teacher row on its item is counted, never dropped
    unsaid. On the joined rows: the student's Pearson and Spearman with the
    teacher's scores (bootstrap intervals with `settings.n_resamples` and `settings.seed`),
    both metrics' agreement with the labels (`group_metrics`), the paired bootstrap of
    student - teacher on each resampled statistic and Williams' test on Pearson.

    Args:
      frame: score rows as the report groups them (`normalized_scores`); rows without a
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
    subsets = _subset_names()
    results: list[dict] = []
    students: dict[str, dict] = {}
    # Pairs are made on all rows, scored or not (`pairing.pair_rows`); rows are counted,
    # and groups listed, by their scores.
    student_rows = dict(iter(others.groupby(["benchmark", "metric", "question"], sort=False)))
    for (benchmark, student, question), rows in _groups(others[others["score"].notna()]):
        counts = students.setdefault(
            student,
            {
                "rows": 0,
                "no_teacher_score": 0,
                "label_mismatches": 0,
                "questions_without_teacher": [],
            },
        )
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
            counts["rows"] += len(rows)
            counts["no_teacher_score"] += paired.unpaired_a
            counts["label_mismatches"] += paired.label_mismatches
            unpaired = paired.missing_ids_a + paired.duplicates_a
            if unpaired:  # rows of the student's without an id, or with a repeated key
                counts["left_out"] = counts.get("left_out", 0) + unpaired
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


def evaluate_scores(frame: pd.DataFrame, settings: ReportSettings) -> dict:
    """All numbers of the score-file report (what report.json holds under `scores`).

    Args:
      frame: rows from `scorefiles.read_score_files` (missing scores are dropped here and
        counted; the paired tests pair the rows first: `pairing.pair_rows`).

    Raises:
      errors.UserError: a `--by` field no score row has, or a baseline that is not a metric.
    """
    if settings.benchmarks:
        absent = [b for b in settings.benchmarks if b not in set(frame["benchmark"])]
        if absent:
            raise errors.UserError(
                f"--benchmark {absent[0]}: no score row of it in the score files (benchmarks "
                f"there: {', '.join(sorted(set(frame['benchmark'])))})"
            )
        frame = frame[frame["benchmark"].isin(settings.benchmarks)]
    n_rows, n_scored = int(len(frame)), int(frame["score"].notna().sum())
    # Each row's place as read, before any is dropped: rows without ids are paired by it.
    frame, merged = normalized_scores(pairing.number_rows(frame))
    metrics = list(dict.fromkeys(frame["metric"]))
    if settings.baseline is not None and settings.baseline not in metrics:
        raise errors.UserError(
            f"--baseline {settings.baseline!r} is not a metric in the score files: {metrics}"
        )
    if settings.teacher is not None:
        check_teacher(frame, settings.teacher)
    all_kept, _ = scorefiles.drop_missing_scores(frame)
    # Counted once: a language subset's rows are copies of its benchmark's rows.
    subsets = _subset_names()
    own_rows = frame[~frame["benchmark"].isin(subsets)]
    _, dropped = scorefiles.drop_missing_scores(own_rows)
    # Benchmarks with their own protocol (SummEval, FRANK, ...) get their own sections.
    own = [b for b in ordered_benchmarks(all_kept) if protocols.protocol_of(b) is not None]
    sections = {
        name: protocols.evaluate_protocol(frame, protocols.protocol_of(name), settings)
        for name in own
    }
    for name, path in settings.benchmark_paths.items():
        if name in sections:
            sections[name]["coverage"] = protocols.coverage(all_kept, name, path)
    kept = all_kept[~all_kept["benchmark"].isin(own)]
    results = []
    for (benchmark, metric, question), rows in _groups(kept):
        entry = {"benchmark": benchmark, "metric": metric, "question": question}
        entry.update(group_metrics(rows))
        if settings.n_resamples > 0:
            entry["ci"] = stats.bootstrap_ci(
                rows["label"].to_numpy(dtype=np.float64),
                rows["score"].to_numpy(dtype=np.float64),
                statistics=_resampled_statistics(rows),
                n_resamples=settings.n_resamples,
                seed=settings.seed,
            )
        results.append(entry)
    breakdowns: dict[str, list[dict]] = {}
    skipped_fields: dict[str, str] = {}
    by_dataset = {b.name for b in _datasets_reported_as_questions()}
    for field in settings.by:
        if field not in all_kept.columns:
            raise errors.UserError(
                f"--by field {field!r} is not in the score files (columns: {sorted(kept.columns)})"
            )
        if kept[field].isna().all():
            skipped_fields[field] = "no score row has this field"
            continue
        records = []
        for (benchmark, metric, question), rows in _groups(kept):
            if (
                rows[field].isna().all()
                or (field == "dataset" and benchmark in by_dataset)
                or benchmark in subsets  # its slices are already in its benchmark's
            ):
                # No such slices (TRUE has no language), or already the table's columns.
                continue
            slices = rows[field].map(stats.slice_key)
            for group in sorted(set(slices)):
                records.append(
                    {
                        "benchmark": benchmark,
                        "metric": metric,
                        "question": question,
                        "group": group,
                        **group_metrics(rows[slices == group]),
                    }
                )
        breakdowns[field] = records
    # Paired on every row, scored or not, so that a missing score moves no other pair.
    to_pair = frame[~frame["benchmark"].isin(own)]
    comparisons = compare_metrics(to_pair, settings) if settings.n_resamples > 0 else []
    agreement = None
    if settings.teacher is not None:
        agreement = teacher_agreement(to_pair, settings.teacher, settings)
        agreement["left_out"] = {
            name: "its protocol's own section; rows paired by its protocol" for name in own
        }
    numbers = {
        "n_rows": n_rows,
        "n_scored": n_scored,
        "missing_scores": dropped,
        "first_missing_score": scorefiles.first_missing_score(own_rows),
        "benchmarks": ordered_benchmarks(all_kept),
        "metrics": metrics,
        "merged_question_models": merged,
        "results": results,
        "breakdowns": breakdowns,
        "breakdowns_skipped": skipped_fields,
        "significance": comparisons,
        "protocols": sections,
        "teacher_agreement": agreement,
    }
    explanations = explanation_report.evaluate_explanations(
        own_rows, settings.n_resamples, settings.seed, settings.disagreements
    )
    if explanations:  # only with rows of an explainable metric
        numbers["explanations"] = explanations
    return numbers


def items_with_all_labels(frame: pd.DataFrame) -> pd.DataFrame | None:
    """SEAHORSE score rows pivoted to one row per item with `q1`..`q6` labels (Figure 3).

    An item's label is the same in every metric's rows, so all metrics contribute (one
    model per question gives each question's labels in a different metric). None when the
    rows carry no item ids.
    """
    rows = frame[frame["benchmark"] == constants.SEAHORSE_BENCHMARK]
    if rows.empty or rows["gem_id"].isna().any():
        return None
    key = [k for k in ITEM_KEY if rows[k].notna().all()]
    pivot = rows.pivot_table(index=key, columns="question", values="label", aggfunc="first")
    pivot = pivot.rename(columns={str(q): f"q{q}" for q in constants.QUESTIONS})
    for column in constants.LABEL_FIELDS:
        if column not in pivot.columns:
            pivot[column] = np.nan
    return pivot.reset_index()


# ------------------------------------------------------------------------ dataset


def read_prepared_dir(directory: str | pathlib.Path) -> pd.DataFrame:
    """The split files of a `prepare` output folder, with a `split` column.

    Raises:
      errors.UserError: the folder or all of its split files are missing, or its split files
        hold no rows.
      errors.DataError: a row lacks a field, or holds a label other than 1, 0 or null, or
        an unknown language.
    """
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise errors.UserError(f"dataset folder not found: {directory}")
    frames = []
    present: list[pathlib.Path] = []
    for split in constants.SPLITS:
        path = pathlib.Path(splits.split_path(directory, split))
        if path.is_file():
            present.append(path)
            rows = splits.read_rows(path)
            if not rows:  # `prepare` writes a split that kept no row: said, then left out
                log.warning("%s; the report leaves that split out", splits.empty_split_error(path))
            frame = pd.DataFrame.from_records(rows, columns=None if rows else list(splits.FIELDS))
            frames.append(frame.assign(split=split))
    if not frames:
        raise errors.UserError(
            f"{directory} holds no split files ({', '.join(s + '.jsonl' for s in constants.SPLITS)}):"
            " is it a `seahorse-t5x prepare` output folder?"
        )
    items = pd.concat(frames, ignore_index=True)
    if items.empty:
        # Tables of no items say nothing, as for a score file without rows.
        found = [str(p) for p in present]
        where = found[0] if len(found) == 1 else f"{directory} ({', '.join(found)})"
        raise errors.UserError(
            f"{where}: {'holds' if len(found) == 1 else 'hold'} no rows (expected the rows of "
            "a `seahorse-t5x prepare` run that kept some)"
        )
    return items


def _read_duplicates_tsv(path: pathlib.Path) -> pd.DataFrame:
    """The SEAHORSE columns of one duplicates TSV as text (NaN where a row is short), read
    by `fileio.open_table` as every SEAHORSE TSV is: tabs only, quotes are text.

    Raises:
      errors.DataError: an empty file, a missing column, a row with more fields than the
        header, bytes that are not UTF-8.
    """
    with fileio.open_table(path, kind=".tsv") as table:
        # The whole file first: bytes that are not UTF-8 are reported before the header.
        rows = list(table)
    header = table.header
    if header is None:
        raise errors.DataError(str(path), 1, None, "empty file; expected a SEAHORSE header row")
    for column in constants.TSV_COLUMNS:
        if column not in header:
            raise errors.DataError(str(path), 1, column, "SEAHORSE column missing from the header")
    columns: dict[str, list[str | None]] = {c: [] for c in constants.TSV_COLUMNS}
    for row in rows:
        if row.extra:
            raise errors.DataError(
                str(path),
                row.line,
                None,
                f"expected {len(header)} tab-separated fields, found "
                f"{len(header) + len(row.extra)}",
            )
        for column, values in columns.items():
            values.append(row.values[column])
    # Text columns as pandas' CSV reader gives them (a missing field is NaN).
    return pd.DataFrame(columns, dtype=str)


def read_duplicate_ratings(path: str | pathlib.Path) -> pd.DataFrame:
    """Ratings of items annotated more than once (SEAHORSE's `duplicates/`): one row per rating.

    Args:
      path: a TSV in the SEAHORSE layout (header, tab separated, no quoting), or a folder of
        them.

    Returns:
      `gem_id`, `summary`, `language` (the TSV's `worker_lang`), `system` and `q1`..`q6`
      (1 Yes, 0 No, None otherwise; a Q1 No leaves Q2..Q6 None, as in the split files).

    Raises:
      errors.UserError: the path is missing or holds no TSV.
      errors.DataError: a file is empty, lacks a SEAHORSE column, has a row with more
        fields than its header, or bytes that are not UTF-8 (file:line).
    """
    path = pathlib.Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.tsv"))
    elif path.is_file():
        files = [path]
    else:
        raise errors.UserError(f"duplicates not found: {path}")
    if not files:
        raise errors.UserError(f"no .tsv files in {path}")
    frames = []
    for file in files:
        raw = _read_duplicates_tsv(file)
        labels = {
            f"q{q}": raw[f"question{q}"].str.strip().str.lower().map({"yes": 1, "no": 0})
            for q in constants.QUESTIONS
        }
        frame = pd.DataFrame(
            {
                "gem_id": raw["gem_id"],
                "summary": raw["summary"],
                "language": raw["worker_lang"].map(constants.WORKER_LANG_TO_LANGUAGE),
                "system": raw["model"],
                **labels,
            }
        )
        q1_no = frame["q1"] == 0
        for q in constants.QUESTIONS[1:]:
            frame.loc[q1_no, f"q{q}"] = np.nan
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    label_columns = list(constants.LABEL_FIELDS)
    frame[label_columns] = (
        frame[label_columns].astype(object).where(frame[label_columns].notna(), None)
    )
    return frame


def dataset_tables(
    items: pd.DataFrame, duplicates: pd.DataFrame | None = None
) -> list[tables.Table]:
    """Tables 1, 3 and 8 (and Table 4 when duplicate ratings are given)."""
    out = [tables.table1(items), tables.table3(items), tables.table8(items)]
    if duplicates is not None and len(duplicates):
        out.append(tables.pairwise_agreement(duplicates, key=DUPLICATE_KEY))
    return out


# ------------------------------------------------------------------------ output


def _benchmark_tables(scores: Mapping, benchmark: str) -> list[tables.Table]:
    """One benchmark's tables: its protocol's section, SEAHORSE's Table 5, its own paper
    table (a language subset's too), or the generic per-question table."""
    results = scores["results"]
    # An explainable metric's tables (none without its rows) follow the benchmark's own.
    explained = explanation_tables.section_tables(scores, benchmark)
    if benchmark in scores.get("protocols", {}):
        own = protocol_tables.section_tables(benchmark, scores["protocols"][benchmark])
        return own + explained
    if benchmark == constants.SEAHORSE_BENCHMARK:
        out = [tables.table5(results, benchmark)]
        if any("ci" in r for r in results):  # none with --bootstrap 0
            out.append(tables.table5_intervals(results, benchmark))
        return out + explained
    declared, parent = registry.find(benchmark), registry.subset_parent(benchmark)
    if parent is not None and parent.table is not None:
        return [tables.paper_table(results, parent, benchmark, parent.subset.title), *explained]
    if declared is not None and declared.table is not None:
        with_subset = declared.subset_name in scores["benchmarks"]
        subset = declared.subset.whole_title if with_subset else ""
        return [tables.paper_table(results, declared, benchmark, subset), *explained]
    if explained:  # the generic table's numbers, with n and the rows without a score
        return explained
    out = [tables.benchmark_table(results, benchmark)]
    if any("ci" in r for r in results if r["benchmark"] == benchmark):
        out.append(tables.benchmark_intervals(results, benchmark))
    return out


def score_tables(scores: Mapping) -> list[tables.Table]:
    """The paper-layout tables for each benchmark present, then breakdowns and significance."""
    out: list[tables.Table] = []
    for benchmark in scores["benchmarks"]:
        out += _benchmark_tables(scores, benchmark)
    for field, records in scores["breakdowns"].items():
        for benchmark in scores["benchmarks"]:
            if any(r["benchmark"] == benchmark for r in records):
                out.append(tables.breakdown_table(records, benchmark, field))
    for benchmark in scores["benchmarks"]:
        for statistic in ("pearson", "roc_auc", "spearman", "kendall"):
            if any(c["benchmark"] == benchmark and statistic in c for c in scores["significance"]):
                out.append(tables.significance_table(scores["significance"], benchmark, statistic))
    return out


def teacher_tables(agreement: Mapping) -> list[tables.Table]:
    """One teacher-agreement table per benchmark, in the order of `agreement["results"]`."""
    results = agreement["results"]
    benchmarks = list(dict.fromkeys(r["benchmark"] for r in results))
    return [
        tables.teacher_agreement_table(results, benchmark, agreement["teacher"])
        for benchmark in benchmarks
    ]


def _matrix_json(matrix: pd.DataFrame) -> dict:
    # NaN (a question whose labels are constant) becomes null: report.json is strict JSON.
    return {
        column: {row: (None if pd.isna(v) else round(float(v), 6)) for row, v in values.items()}
        for column, values in matrix.to_dict().items()
    }


def _to_json(value: object) -> object:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@dataclasses.dataclass
class _Section:
    """One input's part of the report: its numbers, tables, plots and summary phrase;
    tables of their own file (`{name: tables}`, written as NAME.md and NAME.tex) and
    further summary lines."""

    numbers: dict
    paper_tables: list[tables.Table]
    plots: list[str]
    summary: str
    own_files: dict[str, list[tables.Table]] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    # Markdown documents of their own (`{name: text}`, written as NAME.md).
    documents: dict[str, str] = dataclasses.field(default_factory=dict)


def write_report(
    output_dir: str | pathlib.Path,
    score_paths: Sequence[str | pathlib.Path] = (),
    dataset_dir: str | pathlib.Path | None = None,
    settings: ReportSettings | None = None,
    duplicates_path: str | pathlib.Path | None = None,
) -> dict:
    """Computes and writes the report.

    Returns:
      report.json's content, with `summary` (one line) and `outputs` (paths written).

    Raises:
      errors.UserError: neither score files nor a dataset folder, or bad input (see the
        readers).
    """
    settings = settings or ReportSettings()
    if not score_paths and dataset_dir is None:
        raise errors.UserError(
            "nothing to report: give --scores FILE [FILE ...] and/or --data_dir DIR"
        )
    fileio.check_output_path(output_dir, "directory", flag="--output_dir")
    output_dir = pathlib.Path(output_dir)
    plot_dir = output_dir / "plots"
    report: dict = {"settings": dataclasses.asdict(settings), "inputs": {}}
    sections: list[_Section] = []
    if score_paths:
        section = _score_section(score_paths, settings, plot_dir)
        report["inputs"]["scores"] = [str(p) for p in score_paths]
        report["scores"] = section.numbers
        sections.append(section)
    if dataset_dir is not None:
        section = _dataset_section(dataset_dir, duplicates_path, settings, plot_dir)
        report["inputs"]["dataset"] = str(dataset_dir)
        report["dataset"] = section.numbers
        sections.append(section)
    _write_outputs(report, sections, output_dir)
    return report


def _score_section(
    score_paths: Sequence[str | pathlib.Path], settings: ReportSettings, plot_dir: pathlib.Path
) -> _Section:
    """Statistics, tables and plots of the score files."""
    frame = scorefiles.read_score_files(score_paths, settings.drop_duplicates)
    duplicates_dropped = frame.attrs.get("duplicates_dropped", {})
    scores = evaluate_scores(frame, settings)
    scores["duplicates_dropped"] = duplicates_dropped
    scores["score_files"] = frame.attrs.get("score_files", [])
    score_table_list = score_tables(scores)
    kept, _ = scorefiles.drop_missing_scores(normalized_scores(frame)[0])
    items = items_with_all_labels(kept)
    matrix, n_items = tables.label_correlations(items) if items is not None else (None, 0)
    scores["label_correlations"] = {
        "n_items": n_items,
        "matrix": _matrix_json(matrix) if n_items > 1 else None,
    }
    written_plots: list[str] = []
    if settings.plots:
        written_plots += _score_plots(kept, scores, plot_dir)
        if n_items > 1:
            written_plots.append(
                plots.label_correlation_heatmap(
                    matrix, n_items, plot_dir / "label_correlations_scores.png"
                )
            )
    section = _Section(scores, score_table_list, written_plots, _score_summary(scores))
    agreement = scores.get("teacher_agreement")
    if agreement is not None:
        section.own_files[TEACHER_AGREEMENT] = teacher_tables(agreement)
        section.notes.append(agreement["summary"])
    explanations = scores.get("explanations")
    if explanations:
        name = explanation_report.DISAGREEMENTS
        section.documents[name] = explanation_tables.disagreements_markdown(explanations)
        section.notes.append(explanation_report.summary(explanations))
    return section


def _score_summary(scores: Mapping) -> str:
    duplicates_dropped = scores["duplicates_dropped"]
    missing = sum(scores["missing_scores"].values())
    files = len(scores.get("score_files", []))
    return (
        f"{len(scores['metrics'])} metric(s) on {', '.join(scores['benchmarks'])}: "
        f"{scores['n_scored']} scored rows from {files} score file(s)"
        + (
            f", {missing} without a score (null, NaN or infinite) dropped, the first at "
            f"{scores['first_missing_score']}"
            if missing
            else ""
        )
        + (
            f", {sum(duplicates_dropped.values())} duplicated rows dropped"
            if duplicates_dropped
            else ""
        )
    )


def _dataset_section(
    dataset_dir: str | pathlib.Path,
    duplicates_path: str | pathlib.Path | None,
    settings: ReportSettings,
    plot_dir: pathlib.Path,
) -> _Section:
    """Tables 1, 3, 8 (and 4), label correlations and yes rates of a prepared dataset."""
    items = read_prepared_dir(dataset_dir)
    duplicates = read_duplicate_ratings(duplicates_path) if duplicates_path else None
    matrix, n_items = tables.label_correlations(items)
    numbers = {
        "n_items": int(len(items)),
        "n_per_split": {k: int(v) for k, v in items["split"].value_counts().items()},
        "label_correlations": {"n_items": n_items, "matrix": _matrix_json(matrix)},
    }
    written_plots = _dataset_plots(items, matrix, n_items, plot_dir) if settings.plots else []
    return _Section(
        numbers, dataset_tables(items, duplicates), written_plots, f"dataset of {len(items)} items"
    )


def _dataset_plots(
    items: pd.DataFrame, matrix: pd.DataFrame, n_items: int, plot_dir: pathlib.Path
) -> list[str]:
    written = []
    if n_items > 1:
        written.append(
            plots.label_correlation_heatmap(matrix, n_items, plot_dir / "label_correlations.png")
        )
    written.append(
        plots.yes_rate_bars(
            tables.yes_rates(items, "system"),
            plot_dir / "yes_rate_by_system.png",
            "Share of Yes per system",
        )
    )
    written.append(
        plots.yes_rate_bars(
            tables.yes_rates(items, "language"),
            plot_dir / "yes_rate_by_language.png",
            "Share of Yes per language",
        )
    )
    return written


def _write_tables(
    output_dir: pathlib.Path, name: str, title: str, table_list: Sequence[tables.Table]
) -> dict:
    """NAME.md and NAME.tex holding `table_list`; returns their paths."""
    markdown = f"# {title}\n\n" + "\n".join(t.to_markdown() for t in table_list)
    fileio.atomic_write_text(output_dir / f"{name}.md", markdown)
    latex = f"% {title} (needs \\usepackage{{booktabs}})\n\n" + "\n".join(
        t.to_latex() for t in table_list
    )
    fileio.atomic_write_text(output_dir / f"{name}.tex", latex)
    return {"markdown": str(output_dir / f"{name}.md"), "latex": str(output_dir / f"{name}.tex")}


def _write_outputs(report: dict, sections: Sequence[_Section], output_dir: pathlib.Path) -> None:
    """Writes tables.md, tables.tex (and each section's own table files) and report.json,
    completing `report` with what it holds."""
    all_tables = [table for section in sections for table in section.paper_tables]
    own_files = {name: t for section in sections for name, t in section.own_files.items()}
    report["tables"] = [t.to_json() for t in all_tables]
    report["tables"] += [t.to_json() for table_list in own_files.values() for t in table_list]
    written = _write_tables(output_dir, "tables", "seahorse-t5x report", all_tables)
    report["outputs"] = {
        "json": str(output_dir / "report.json"),
        **written,
        "plots": [path for section in sections for path in section.plots],
    }
    for name, table_list in own_files.items():
        report["outputs"][name] = _write_tables(
            output_dir, name, f"seahorse-t5x report: {name.replace('_', ' ')}", table_list
        )
    for section in sections:
        for name, text in section.documents.items():
            fileio.atomic_write_text(output_dir / f"{name}.md", text)
            report["outputs"][name] = {"markdown": str(output_dir / f"{name}.md")}
    summary = "; ".join(section.summary for section in sections)
    notes = [note for section in sections for note in section.notes]
    report["summary"] = "\n".join([f"report: {summary} -> {output_dir}", *notes])
    fileio.atomic_write_text(
        output_dir / "report.json",
        json.dumps(report, indent=1, ensure_ascii=False, default=_to_json, allow_nan=False),
    )


def _score_plots(kept: pd.DataFrame, scores: Mapping, plot_dir: pathlib.Path) -> list[str]:
    written = []
    for benchmark in scores["benchmarks"]:
        rows = kept[kept["benchmark"] == benchmark]
        if benchmark in scores.get("protocols", {}):
            written += protocol_tables.section_plots(
                kept, benchmark, scores["protocols"][benchmark], plot_dir
            )
            continue
        if "label_binary" in rows.columns and rows["label_binary"].notna().all():
            # Graded labels with a majority vote: the ROC and calibration plots use the vote.
            rows = rows.assign(label=rows["label_binary"].astype(np.float64))
        if stats.labels_are_binary(rows["label"].to_numpy(dtype=np.float64)):
            written.append(
                plots.roc_curves(rows, plot_dir / f"roc_{benchmark}.png", title=benchmark)
            )
            written.append(
                plots.reliability_diagram(
                    rows, plot_dir / f"reliability_{benchmark}.png", title=benchmark
                )
            )
        records = [
            r for r in scores["breakdowns"].get("language", []) if r["benchmark"] == benchmark
        ]
        if records:
            has_roc = any(r.get("roc_auc") is not None for r in records)
            statistic = "roc_auc" if has_roc else "pearson"
            written.append(
                plots.slice_bars(
                    records, plot_dir / f"{benchmark}_by_language.png", statistic, "language"
                )
            )
    return written

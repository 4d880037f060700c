"""Agreement of score rows with their labels: per (benchmark, metric, question) group
(`group_metrics`, with bootstrap intervals: `question_results`), per slice of a `--by` field
(`breakdowns`), and the paired bootstrap between metrics on the same items
(`compare_metrics`). The rows are those `normalizing.normalized_scores` gives.

One score task's labels and scores as arrays (`evaluate`'s tasks, the trainer's validation):
`task_metrics`, beside what the majority class agrees with (`majority_metrics`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from seahorse_t5x import errors
from seahorse_t5x.evaluation import normalizing, pairing, stats
from seahorse_t5x.evaluation.report_settings import ReportSettings


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


def majority_metrics(labels: Sequence[float]) -> dict:
    """The majority baseline's agreement, stated rather than computed on constant scores.

    Every item gets the same score: ROC-AUC is 0.5 by construction (every positive/negative
    pair is a tie, counted one half, as `stats.binary_metrics` counts it) and Pearson rho is
    undefined (zero variance).

    Returns:
      `{"n", "pearson": None, "roc_auc": 0.5 (None with one class only), "accuracy": the
      share of the labels' larger class (None for graded labels), "reasons"}`.
    """
    finite = [y for y in labels if y is not None and not math.isnan(y)]
    reasons = {"pearson": "scores are constant: correlation undefined"}
    binary = all(y in (0, 1) for y in finite)
    both_classes = binary and 0 < sum(finite) < len(finite)
    roc = 0.5 if both_classes else None
    if roc is None:
        reasons["roc_auc"] = (
            "labels are graded, not 0/1" if not binary else "labels hold one class only"
        )
    accuracy = None
    if binary and finite:
        yes_rate = sum(y == 1 for y in finite) / len(finite)
        accuracy = max(yes_rate, 1 - yes_rate)
    else:
        reasons["accuracy"] = "labels are graded, not 0/1" if finite else "no labels"
    return {
        "n": len(finite),
        "pearson": None,
        "roc_auc": roc,
        "accuracy": accuracy,
        "reasons": reasons,
    }


def task_metrics(labels: np.ndarray, scores: np.ndarray) -> dict:
    """One score task's agreement: `stats.binary_metrics` of the scores, plus
    `majority_baseline`: what always answering the majority class agrees with the same
    labels (`majority_metrics`, without its `n`, which is the task's)."""
    result = stats.binary_metrics(labels, scores)
    baseline = majority_metrics(labels)
    result["majority_baseline"] = {k: v for k, v in baseline.items() if k != "n"}
    return result


# The statistics given an interval and a paired test, by whether the labels are 0/1.
RESAMPLED_STATISTICS: dict[bool, tuple[str, ...]] = {
    True: ("pearson", "roc_auc"),
    False: ("pearson", "spearman", "kendall"),
}


def resampled_statistics(rows: pd.DataFrame) -> tuple[str, ...]:
    return RESAMPLED_STATISTICS[stats.labels_are_binary(rows["label"].to_numpy(dtype=np.float64))]


def compare_metrics(frame: pd.DataFrame, settings: ReportSettings) -> list[dict]:
    """Paired bootstrap between metrics on each (benchmark, question): every pair, or every
    metric against `settings.baseline`.

    Args:
      frame: score rows as the report groups them (`normalized_scores`), rows without a
        score included or not: the metrics of a question are those with a score there.
    """
    comparisons = []
    for (benchmark, question), rows, all_rows in normalizing.scored_groups(
        frame, ["benchmark", "question"]
    ):
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
            for statistic in resampled_statistics(joined):
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


def question_results(kept: pd.DataFrame, settings: ReportSettings) -> list[dict]:
    """Per (benchmark, metric, question) group of scored rows: `group_metrics`, and with
    `settings.n_resamples` the bootstrap intervals of its resampled statistics (`ci`)."""
    results = []
    for (benchmark, metric, question), rows in normalizing.groups(kept):
        entry = {"benchmark": benchmark, "metric": metric, "question": question}
        entry.update(group_metrics(rows))
        if settings.n_resamples > 0:
            entry["ci"] = stats.bootstrap_ci(
                rows["label"].to_numpy(dtype=np.float64),
                rows["score"].to_numpy(dtype=np.float64),
                statistics=resampled_statistics(rows),
                n_resamples=settings.n_resamples,
                seed=settings.seed,
            )
        results.append(entry)
    return results


def breakdowns(
    kept: pd.DataFrame, fields: tuple[str, ...], columns: pd.Index
) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """`group_metrics` per slice of each `--by` field, per (benchmark, metric, question).

    Args:
      kept: scored rows, as `question_results` takes them.
      fields: the `--by` fields.
      columns: the score rows' columns (of every benchmark's): a field must be one.

    Returns:
      `{field: records}`, and `{field: reason}` for the fields no scored row has.

    Raises:
      errors.UserError: a field that is not a column of the score rows.
    """
    records: dict[str, list[dict]] = {}
    skipped_fields: dict[str, str] = {}
    for field in fields:
        if field not in columns:
            raise errors.UserError(
                f"--by field {field!r} is not in the score files (columns: {sorted(kept.columns)})"
            )
        if kept[field].isna().all():
            skipped_fields[field] = "no score row has this field"
            continue
        records[field] = _field_records(kept, field)
    return records, skipped_fields


def _field_records(kept: pd.DataFrame, field: str) -> list[dict]:
    """One field's slices: a record per group and value, but where the slices are none (TRUE
    has no language) or already the table's columns (TRUE's datasets, a language subset)."""
    by_dataset = {b.name for b in normalizing.datasets_reported_as_questions()}
    subsets = normalizing.subset_names()
    records = []
    for (benchmark, metric, question), rows in normalizing.groups(kept):
        if (
            rows[field].isna().all()
            or (field == "dataset" and benchmark in by_dataset)
            or benchmark in subsets  # its slices are already in its benchmark's
        ):
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
    return records

"""The report's part on explainable metrics: rows that carry a generated error analysis.

`seahorse-t5x explain --score_file --metric NAME` writes score-file rows whose `score` is
the generated analysis' score (null when the text did not parse), whose `label` is the
truth's score, and which carry the generated text (`explanation`), its parsed errors
(`errors`, null when it did not parse, with the reason in `parse_error`) and the truth's
errors (`true_errors`).
For each benchmark holding such rows this module gives:

- per (benchmark, metric, question), the rows and the rows without a score (for the
  correlation table: the correlations themselves are the report's `results`, as for any
  graded benchmark); those rows are left out of every statistic and counted, never scored
  as 0;
- the explanation quality, per metric and question, over the rows whose errors parsed and
  that carry true errors (`explanation_quality.explanation_quality`): location exact match
  and token F1, aspect accuracy, detection precision and recall, each with a percentile
  bootstrap interval over items (`resample_items`), the unparsed rows counted;
- the disagreements: per metric, benchmark and question, the `k` items whose ranks under the
  score and under the label differ most (`disagreements`), with their ids, label, score,
  summary, generated and true errors.

`explanation_tables.py` renders them (tables, `disagreements.md`).

A row is an explanation row when it carries a generated text or parsed errors
(`has_explanations`); other metrics' rows on the same benchmark appear in its correlation
table only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from seahorse_t5x import errors
from seahorse_t5x.data import explanation_rows, scorefiles
from seahorse_t5x.evaluation import explanation_quality, stats, tables

# The fields `explain` adds to a score-file row (their home: data/explanation_rows.py).
TEXT_FIELD = explanation_rows.TEXT_FIELD
ERRORS_FIELD = explanation_rows.ERRORS_FIELD
PROBLEM_FIELD = explanation_rows.PROBLEM_FIELD
TRUE_ERRORS_FIELD = explanation_rows.TRUE_ERRORS_FIELD
# The fields that name an item in the disagreements, in the order shown.
ID_FIELDS: tuple[str, ...] = ("id", "item_id", "gem_id", "system", "source", "language", "dataset")
DEFAULT_DISAGREEMENTS = 5
# The name of the disagreements document (`disagreements.md`).
DISAGREEMENTS = "disagreements"

# The quality statistics given an interval, from per-item sums (`_ITEM_COLUMNS`).
QUALITY_STATISTICS: tuple[str, ...] = (
    "location_exact",
    "location_f1",
    "aspect_accuracy",
    "precision",
    "recall",
    "f1",
)
_ITEM_COLUMNS: tuple[str, ...] = (
    "n_predicted",
    "n_true",
    "n_matched",
    "n_same_aspect",
    "location_exact",
    "location_f1",
)
# At most this many (resample, item, column) values in memory at once.
_CHUNK_ELEMENTS = 2_000_000
RANK_RULE = (
    "ranks are mid-ranks (tied values share their mean rank) from 1, the lowest, to n among "
    "the rows with a score; the difference is the score's rank minus the label's (positive: "
    "the metric ranks the item higher than the truth does); largest absolute difference "
    "first, ties in the order the rows were read; items whose ranks agree are not listed"
)


def is_missing(value: object) -> bool:
    """True for None and NaN (a field a row lacks reads as NaN after files are joined)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def has_explanations(rows: pd.DataFrame) -> bool:
    """True when some row carries a generated text or parsed errors."""
    return any(
        field in rows.columns and not rows[field].map(is_missing).all()
        for field in (TEXT_FIELD, ERRORS_FIELD)
    )


def _row_place(row: Mapping) -> str:
    return f"{row[scorefiles.SOURCE_FIELD]}:{int(row[scorefiles.LINE_FIELD])}"


def _error_list(row: Mapping, field: str) -> list | None:
    """The row's errors in `field`: a list, or None when it has none (null or absent).

    Raises:
      errors.DataError: the field holds something other than a list.
    """
    value = row.get(field)
    if is_missing(value):
        return None
    if not isinstance(value, list):
        raise errors.DataError(
            str(row[scorefiles.SOURCE_FIELD]),
            int(row[scorefiles.LINE_FIELD]),
            field,
            f"expected a list of errors (or null), got {type(value).__name__}",
        )
    return value


# ------------------------------------------------------------------------ quality


def resample_items(n_items: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The bootstrap's resamples of `n_items` items, in chunks: (rows, n_items) arrays of
    item indices drawn with replacement from `np.random.default_rng(seed)`, one row per
    resample, `n_resamples` rows in all. The same arguments give the same resamples."""
    rng = np.random.default_rng(seed)
    size = max(1, _CHUNK_ELEMENTS // max(n_items * len(_ITEM_COLUMNS), 1))
    for start in range(0, n_resamples, size):
        yield rng.integers(0, n_items, size=(min(size, n_resamples - start), n_items))


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN (undefined) where the denominator is 0."""
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, np.nan)


def _statistics_of_sums(sums: np.ndarray, n_items: int) -> dict[str, np.ndarray]:
    """The quality statistics from per-resample sums of `_ITEM_COLUMNS` (NaN: undefined),
    as `explanation_quality.explanation_quality` defines them."""
    column = {name: sums[:, i] for i, name in enumerate(_ITEM_COLUMNS)}
    precision = _ratio(column["n_matched"], column["n_predicted"])
    recall = _ratio(column["n_matched"], column["n_true"])
    with np.errstate(invalid="ignore"):
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    f1 = np.where(np.isnan(precision) | np.isnan(recall), np.nan, f1)
    return {
        "location_exact": column["location_exact"] / n_items,
        "location_f1": column["location_f1"] / n_items,
        "aspect_accuracy": _ratio(column["n_same_aspect"], column["n_matched"]),
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def quality_intervals(
    items: Sequence[Mapping[str, float]], n_resamples: int, seed: int, confidence: float = 0.95
) -> dict[str, dict]:
    """Percentile bootstrap intervals of the quality statistics, resampling items.

    Each statistic is a ratio of sums over items (`explanation_quality`'s definitions), so a
    resample is its items' sums: the resamples of `resample_items`, all statistics on the
    same ones. Resamples on which a statistic is undefined (no predicted errors, no matched
    errors) are left out and counted, as `stats.bootstrap_ci` does.

    Args:
      items: per item, `explanation_quality.item_scores`' numbers.
      n_resamples, seed: the resampling (`resample_items`).

    Returns:
      `{name: {"low", "high", "n_valid", "reason", "n_resamples"}}` for `QUALITY_STATISTICS`.
    """
    if not items:
        return {
            name: {"low": None, "high": None, "n_valid": 0, "reason": "no items"}
            for name in QUALITY_STATISTICS
        }
    values = np.array([[item[c] for c in _ITEM_COLUMNS] for item in items], dtype=np.float64)
    draws: dict[str, list[np.ndarray]] = {name: [] for name in QUALITY_STATISTICS}
    for indices in resample_items(len(items), n_resamples, seed):
        resampled = _statistics_of_sums(values[indices].sum(axis=1), len(items))
        for name in QUALITY_STATISTICS:
            draws[name].append(resampled[name])
    return {
        name: {
            **stats.interval(np.concatenate(draws[name]), n_resamples, confidence),
            "n_resamples": int(n_resamples),
        }
        for name in QUALITY_STATISTICS
    }


def _item_numbers(row: Mapping, predicted: list, true: list) -> dict[str, Any]:
    try:
        return explanation_quality.item_scores(predicted, true)
    except ValueError as error:
        raise errors.DataError(
            str(row[scorefiles.SOURCE_FIELD]), int(row[scorefiles.LINE_FIELD]), None, str(error)
        ) from error


def group_quality(rows: pd.DataFrame, n_resamples: int, seed: int) -> dict:
    """The explanation quality of one (benchmark, metric, question) group of rows.

    Items are the rows whose errors parsed (`errors` is a list) and that carry true errors;
    a row whose errors are null did not parse and is counted in `n_unparsed` (the first
    named with its `parse_error`), never scored as an analysis without errors.

    Returns:
      `{"n_rows", "n_unparsed", "first_unparsed", "n_without_truth"}`, then
      `explanation_quality.explanation_quality`'s numbers over the items, then `"ci"`
      (`quality_intervals`; absent when `n_resamples` is 0).

    Raises:
      errors.DataError: a row's `errors` or `true_errors` is not a list, or an error in it
        lacks a string `location` or `aspect` (file:line).
    """
    predicted, true, items = [], [], []
    unparsed, without_truth = [], 0
    for row in rows.to_dict("records"):
        generated = _error_list(row, ERRORS_FIELD)
        if generated is None:
            unparsed.append(row)
            continue
        truth = _error_list(row, TRUE_ERRORS_FIELD)
        if truth is None:
            without_truth += 1
            continue
        items.append(_item_numbers(row, generated, truth))
        predicted.append(generated)
        true.append(truth)
    first = None
    if unparsed:
        first = _row_place(unparsed[0])
        problem = unparsed[0].get(PROBLEM_FIELD)
        if isinstance(problem, str) and problem:
            first += f" ({problem})"
    out: dict[str, Any] = {
        "n_rows": int(len(rows)),
        "n_unparsed": len(unparsed),
        "first_unparsed": first,
        "n_without_truth": without_truth,
    }
    out.update(explanation_quality.explanation_quality(predicted, true))
    if n_resamples > 0:
        out["ci"] = quality_intervals(items, n_resamples, seed)
    return out


# ------------------------------------------------------------------------ disagreements


def _ids(row: Mapping) -> dict[str, Any]:
    return {field: row[field] for field in ID_FIELDS if not is_missing(row.get(field))}


def disagreements(rows: pd.DataFrame, k: int = DEFAULT_DISAGREEMENTS) -> dict:
    """The `k` items of one (benchmark, metric, question) group where score and label
    disagree most, by rank difference (`RANK_RULE`).

    Returns:
      `{"n_ranked", "n_unscored", "items"}`; each item: `row` (file:line), `ids`, `label`,
      `score`, `label_rank`, `score_rank`, `rank_difference`, `summary` (when the row has
      one), `errors`, `true_errors`, `explanation` and `parse_error` (as the row has them).
    """
    scored = rows[rows["score"].notna()]
    n = len(scored)
    out: dict[str, Any] = {"n_ranked": n, "n_unscored": int(len(rows) - n), "items": []}
    if n == 0 or k <= 0:
        return out
    label_ranks = scipy_stats.rankdata(scored["label"].to_numpy(dtype=np.float64))
    score_ranks = scipy_stats.rankdata(scored["score"].to_numpy(dtype=np.float64))
    difference = score_ranks - label_ranks
    # Largest |difference| first; equal ones in reading order (lexsort's last key leads).
    order = np.lexsort((np.arange(n), -np.abs(difference)))
    records = scored.to_dict("records")
    for position in order[:k]:
        if difference[position] == 0:
            break
        row = records[position]
        item = {
            "row": _row_place(row),
            "ids": _ids(row),
            "label": float(row["label"]),
            "score": float(row["score"]),
            "label_rank": float(label_ranks[position]),
            "score_rank": float(score_ranks[position]),
            "rank_difference": float(difference[position]),
        }
        for field in ("summary", ERRORS_FIELD, TRUE_ERRORS_FIELD, TEXT_FIELD, PROBLEM_FIELD):
            if not is_missing(row.get(field)):
                item[field] = row[field]
        out["items"].append(item)
    return out


# ------------------------------------------------------------------------ the section


def _sorted_groups(frame: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    """(benchmark, metric, question) groups: benchmarks and metrics as first seen, questions
    in the tables' order."""
    benchmarks = list(dict.fromkeys(frame["benchmark"]))
    metrics = list(dict.fromkeys(frame["metric"]))
    groups = list(frame.groupby(["benchmark", "metric", "question"], sort=False))
    groups.sort(
        key=lambda kv: (
            benchmarks.index(kv[0][0]),
            metrics.index(kv[0][1]),
            tables.question_sort_key(kv[0][2]),
        )
    )
    return groups


def evaluate_explanations(
    frame: pd.DataFrame, n_resamples: int, seed: int, k: int = DEFAULT_DISAGREEMENTS
) -> dict:
    """The numbers of the explanation part of the report (report.json's
    `scores.explanations`), or `{}` when no row carries an explanation.

    Args:
      frame: score rows as the report groups them, rows without a score included.
      n_resamples, seed: the quality intervals' bootstrap (0: none).
      k: disagreements listed per group.

    Returns:
      `{"benchmarks", "counts", "quality", "disagreements", "k", "rank_rule"}`: the
      benchmarks holding explanation rows; per (benchmark, metric, question) of those
      benchmarks the rows and the rows without a score (`counts`); per explanation group its
      `group_quality` when its rows carry true errors, and its `disagreements`.

    Raises:
      errors.DataError: see `group_quality`.
    """
    groups = _sorted_groups(frame)
    explained = {key for key, rows in groups if has_explanations(rows)}
    if not explained:
        return {}
    benchmarks = list(dict.fromkeys(key[0] for key, _ in groups if key in explained))
    counts, quality, disagreeing = [], [], []
    for key, rows in groups:
        if key[0] not in benchmarks:
            continue
        names = dict(zip(("benchmark", "metric", "question"), key, strict=True))
        n_unscored = int(rows["score"].isna().sum())
        counts.append({**names, "n_rows": int(len(rows)), "n_unscored": n_unscored})
        if key not in explained:
            continue
        if TRUE_ERRORS_FIELD in rows.columns and not rows[TRUE_ERRORS_FIELD].map(is_missing).all():
            quality.append({**names, **group_quality(rows, n_resamples, seed)})
        disagreeing.append({**names, **disagreements(rows, k)})
    return {
        "benchmarks": benchmarks,
        "counts": counts,
        "quality": quality,
        "disagreements": disagreeing,
        "k": k,
        "rank_rule": RANK_RULE,
    }


def summary(section: Mapping) -> str:
    """One line for the report's summary: per explanation group, the rows whose analysis
    did not parse and the items the quality is computed on."""
    parts = []
    for entry in section["quality"]:
        parts.append(
            f"{entry['metric']} on {entry['benchmark']}/{entry['question']}: "
            f"{entry['n_unparsed']} of {entry['n_rows']} analyses did not parse (left out), "
            f"quality over {entry['n_items']} items"
        )
    listed = sum(len(d["items"]) for d in section["disagreements"])
    parts.append(f"{listed} disagreements in {DISAGREEMENTS}.md")
    return "explanations: " + "; ".join(parts)

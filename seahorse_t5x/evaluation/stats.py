"""Agreement between metric scores and human labels: correlations, ROC-AUC, CIs, tests.

Plain numpy/scipy: no TensorFlow, JAX or SeqIO here, so every number can be checked with
arrays. The paper's measures are Pearson rho between the score and the 0/1 label and
ROC-AUC; graded benchmarks (mFACE averages, METAL 0-2 scores) add Spearman and Kendall
(tau-b as `kendall`, Stuart's tau-c as `kendall_c`: `rank_correlation`).

A value that cannot be computed (an empty slice, one class only, NaN scores, constant scores
for a correlation) is `None`, and the result's `reasons` dict says why: never a crash. The
ROC-AUC of constant scores is defined: every (Yes, No) pair is a tie, counted one half, so
0.5 (as `sklearn.metrics.roc_auc_score` gives; the majority baseline's).
Results are plain dicts of Python scalars, so they serialize to JSON as they are.

Bootstrap resamples are drawn as per-item counts (a `(resamples, items)` matrix), so every
statistic is a weighted statistic of the original arrays and runs vectorised: Pearson is one
matrix product, ROC-AUC a cumulative sum over the score-sorted items, Kendall a weighted
count of concordant pairs (`rank_correlation.weighted_kendall`).

The benchmarks' own protocols build on this module: their statistics (summary- and
system-level correlations, partial correlation, Williams' test, balanced accuracy) are
`protocol_stats`, their intervals over documents, systems or items `unit_bootstrap`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from seahorse_t5x.evaluation import rank_correlation

BINARY_STATISTICS: tuple[str, ...] = ("pearson", "roc_auc")
GRADED_STATISTICS: tuple[str, ...] = ("pearson", "spearman", "kendall")
# Statistics with a vectorised weighted form, usable in bootstrap and permutation tests.
RESAMPLABLE_STATISTICS: tuple[str, ...] = ("pearson", "roc_auc", "spearman", "kendall", "kendall_c")

# Keeps one bootstrap chunk (resamples x items counts) near 16 MB of float64.
_CHUNK_ELEMENTS = 2_000_000


def as_arrays(labels: Sequence[float], scores: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if y.shape != s.shape:
        raise ValueError(f"labels and scores differ in length: {y.size} != {s.size}")
    return y, s


def input_problem(labels: np.ndarray, scores: np.ndarray) -> str | None:
    """Why no statistic can be computed on these arrays at all, or None when they are usable."""
    if labels.size == 0:
        return "no items"
    bad_scores = int(np.count_nonzero(~np.isfinite(scores)))
    if bad_scores:
        return f"{bad_scores} of {scores.size} scores are NaN or infinite"
    bad_labels = int(np.count_nonzero(~np.isfinite(labels)))
    if bad_labels:
        return f"{bad_labels} of {labels.size} labels are NaN or infinite"
    return None


def labels_are_binary(labels: Sequence[float]) -> bool:
    """True when every (finite) label is 0 or 1."""
    y = np.asarray(labels, dtype=np.float64)
    y = y[np.isfinite(y)]
    return bool(np.all((y == 0) | (y == 1)))


def _statistic_problem(name: str, labels: np.ndarray, scores: np.ndarray) -> str | None:
    """Why `name` is undefined on these (already finite, non-empty) arrays."""
    constant_scores = bool(np.all(scores == scores[0]))
    if name == "roc_auc":
        if not labels_are_binary(labels):
            return "labels are graded, not 0/1: ROC-AUC needs binary labels"
        positives = int(labels.sum())
        if positives == 0 or positives == labels.size:
            return f"labels hold one class only (all {int(labels[0])})"
        return None  # constant scores: every pair a tie, counted one half: 0.5
    if labels.size < 2:
        return "fewer than 2 items"
    if bool(np.all(labels == labels[0])):
        return "labels are constant: correlation undefined"
    if constant_scores:
        return "scores are constant: correlation undefined"
    return None


# ---------------------------------------------------------------- weighted statistics
# Each takes per-item weights `w` of shape (resamples, items) (bootstrap counts; all ones
# for the plain estimate) and returns one value per row; NaN where a row is degenerate.


def weighted_pearson(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    # x, y may be (items,) or (rows, items). Centre and scale first: correlation does not
    # change, and raw moments of large-offset scores would lose precision.
    x = (x - x.mean(axis=-1, keepdims=True)) / (x.std(axis=-1, keepdims=True) + 1e-300)
    y = (y - y.mean(axis=-1, keepdims=True)) / (y.std(axis=-1, keepdims=True) + 1e-300)
    total = w.sum(axis=1)
    if x.ndim == 1 and y.ndim == 1:
        moments = w @ np.stack([x, y, x * x, y * y, x * y], axis=1)
        sx, sy, sxx, syy, sxy = moments.T
    else:
        x = np.broadcast_to(x, w.shape)
        y = np.broadcast_to(y, w.shape)
        sx, sy = (w * x).sum(1), (w * y).sum(1)
        sxx, syy, sxy = (w * x * x).sum(1), (w * y * y).sum(1), (w * x * y).sum(1)
    mx, my = sx / total, sy / total
    cov = sxy / total - mx * my
    vx = sxx / total - mx * mx
    vy = syy / total - my * my
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / np.sqrt(vx * vy)
    # A row whose resample holds (nearly) one distinct value has no defined correlation.
    r[(vx <= 1e-12) | (vy <= 1e-12)] = np.nan
    return np.clip(r, -1.0, 1.0)


def _tie_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort order, start of each run of equal values in that order, and each item's run."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    group_of_sorted = np.cumsum(np.r_[True, sorted_values[1:] != sorted_values[:-1]]) - 1
    group_of_item = np.empty_like(group_of_sorted)
    group_of_item[order] = group_of_sorted
    return order, starts, group_of_item


def _weighted_roc_auc(w: np.ndarray, labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    # Mann-Whitney form: P(score_pos > score_neg) + 0.5 P(tie), each item counted w times.
    order, starts, _ = _tie_groups(scores)
    positive = labels[order] == 1
    w_sorted = w[:, order]
    pos = np.add.reduceat(w_sorted * positive, starts, axis=1)
    neg = np.add.reduceat(w_sorted, starts, axis=1) - pos
    neg_below = np.cumsum(neg, axis=1) - neg
    pairs = pos.sum(1) * neg.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (pos * (neg_below + 0.5 * neg)).sum(1) / pairs
    auc[pairs == 0] = np.nan
    return auc


def _weighted_midranks(w: np.ndarray, values: np.ndarray) -> np.ndarray:
    # The rank an item would get in its resample (ties share the mean rank), per row.
    order, starts, group_of_item = _tie_groups(values)
    group_weight = np.add.reduceat(w[:, order], starts, axis=1)
    midrank = np.cumsum(group_weight, axis=1) - group_weight + (group_weight + 1) / 2
    return midrank[:, group_of_item]


def _weighted_spearman(w: np.ndarray, labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    return weighted_pearson(w, _weighted_midranks(w, labels), _weighted_midranks(w, scores))


_WEIGHTED: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "pearson": weighted_pearson,
    "roc_auc": _weighted_roc_auc,
    "spearman": _weighted_spearman,
    **{
        name: functools.partial(rank_correlation.weighted_kendall, variant=variant)
        for name, variant in rank_correlation.KENDALL_VARIANTS.items()
    },
}


def _point_estimate(name: str, labels: np.ndarray, scores: np.ndarray) -> float:
    if name in rank_correlation.KENDALL_VARIANTS:
        variant = rank_correlation.KENDALL_VARIANTS[name]
        return rank_correlation.kendall_tau(labels, scores, variant)
    if name == "roc_auc":
        return float(_weighted_roc_auc(np.ones((1, labels.size)), labels, scores)[0])
    return float(_WEIGHTED[name](np.ones((1, labels.size)), labels, scores)[0])


def _statistics(labels: Sequence[float], scores: Sequence[float], names: Sequence[str]) -> dict:
    y, s = as_arrays(labels, scores)
    result: dict = {"n": int(y.size)}
    reasons: dict[str, str] = {}
    problem = input_problem(y, s)
    for name in names:
        reason = problem or _statistic_problem(name, y, s)
        if reason is None:
            value = _point_estimate(name, y, s)
            if math.isnan(value):
                reason = "undefined on these values"
        if reason is not None:
            result[name] = None
            reasons[name] = reason
        else:
            result[name] = value
    result["reasons"] = reasons
    return result


def binary_metrics(labels: Sequence[float], scores: Sequence[float]) -> dict:
    """The paper's measures for 0/1 labels: Pearson rho and ROC-AUC, plus n and the Yes rate.

    Args:
      labels: gold labels, 0 or 1 (1 = Yes).
      scores: metric scores, higher = more likely Yes; same order as `labels`.

    Returns:
      `{"n", "n_positive", "positive_rate", "pearson", "roc_auc", "reasons"}`; a statistic
      that is undefined is None and `reasons[name]` says why.

    Raises:
      ValueError: labels and scores differ in length (a programming error, not bad data).
    """
    result = _statistics(labels, scores, BINARY_STATISTICS)
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    finite = y[np.isfinite(y)]
    result["n_positive"] = int(np.count_nonzero(finite == 1))
    if finite.size and labels_are_binary(finite):
        result["positive_rate"] = float(np.mean(finite == 1))
    else:
        result["positive_rate"] = None
        result["reasons"]["positive_rate"] = (
            "no items" if finite.size == 0 else "labels are graded, not 0/1"
        )
    return _ordered(result)


def graded_metrics(labels: Sequence[float], scores: Sequence[float]) -> dict:
    """Correlations for graded labels (mFACE averages, METAL scores): Pearson, Spearman, Kendall.

    Returns:
      `{"n", "pearson", "spearman", "kendall", "reasons"}`; Kendall is tau-b (ties corrected).
    """
    return _ordered(_statistics(labels, scores, GRADED_STATISTICS))


def metrics_for_labels(labels: Sequence[float], scores: Sequence[float]) -> dict:
    """`binary_metrics` for 0/1 labels, `graded_metrics` (plus ROC-AUC as None) otherwise."""
    if labels_are_binary(labels):
        return binary_metrics(labels, scores)
    result = graded_metrics(labels, scores)
    result["roc_auc"] = None
    result["reasons"]["roc_auc"] = "labels are graded, not 0/1: ROC-AUC needs binary labels"
    return _ordered(result)


def _ordered(result: dict) -> dict:
    # `reasons` last, so printed results read value-first.
    reasons = result.pop("reasons")
    result["reasons"] = reasons
    return result


# ---------------------------------------------------------------- bootstrap


def resample_counts(rng: np.random.Generator, rows: int, items: int) -> np.ndarray:
    """How often each item is drawn in each of `rows` resamples of `items` draws."""
    draws = rng.integers(0, items, size=(rows, items))
    offsets = (np.arange(rows) * items)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=rows * items)
    return counts.reshape(rows, items).astype(np.float64)


def resample_chunks(total: int, items: int) -> list[int]:
    size = max(1, _CHUNK_ELEMENTS // max(items, 1))
    return [min(size, total - start) for start in range(0, total, size)]


def check_resampling(n_resamples: int, confidence: float = 0.95) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _check_statistic(name: str) -> None:
    if name not in RESAMPLABLE_STATISTICS:
        raise ValueError(
            f"statistic {name!r} cannot be resampled; use one of {RESAMPLABLE_STATISTICS}"
        )


def bootstrap_ci(
    labels: Sequence[float],
    scores: Sequence[float],
    statistics: Sequence[str] = BINARY_STATISTICS,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict]:
    """Percentile bootstrap confidence intervals, resampling items with replacement.

    All statistics share the same resamples. Resamples on which a statistic is undefined
    (e.g. one class only) are left out of its interval and counted in `n_valid`.

    Args:
      labels, scores: as for `binary_metrics`.
      statistics: names from `RESAMPLABLE_STATISTICS`.
      n_resamples: number of bootstrap resamples.
      seed: seed of the resampling; the same seed gives the same intervals.
      confidence: coverage of the interval (0.95 -> 2.5th and 97.5th percentiles).

    Returns:
      `{name: {"estimate", "low", "high", "confidence", "n_resamples", "n_valid", "reason"}}`;
      `low`/`high` are None (with `reason`) when the statistic is undefined on the data or on
      more than half of the resamples.
    """
    for name in statistics:
        _check_statistic(name)
    check_resampling(n_resamples, confidence)
    y, s = as_arrays(labels, scores)
    point = _statistics(y, s, statistics)
    rng = np.random.default_rng(seed)
    values = {name: [] for name in statistics}
    usable = [name for name in statistics if point[name] is not None]
    if usable:
        for rows in resample_chunks(n_resamples, y.size):
            counts = resample_counts(rng, rows, y.size)
            for name in usable:
                values[name].append(_WEIGHTED[name](counts, y, s))
    tail = (1.0 - confidence) / 2.0 * 100.0
    result = {}
    for name in statistics:
        entry = {
            "estimate": point[name],
            "low": None,
            "high": None,
            "confidence": confidence,
            "n_resamples": int(n_resamples),
            "n_valid": 0,
            "reason": point["reasons"].get(name),
        }
        if point[name] is not None:
            draws = np.concatenate(values[name])
            valid = draws[np.isfinite(draws)]
            entry["n_valid"] = int(valid.size)
            if valid.size * 2 < n_resamples or valid.size == 0:
                entry["reason"] = (
                    f"undefined on {n_resamples - valid.size} of {n_resamples} resamples"
                )
            else:
                low, high = np.percentile(valid, [tail, 100.0 - tail])
                entry["low"], entry["high"] = float(low), float(high)
        result[name] = entry
    return result


def _two_sided_p(count_extreme: int, total: int) -> float:
    # (1 + k) / (1 + B): never exactly 0 from a finite number of resamples.
    return float(min(1.0, (1 + count_extreme) / (1 + total)))


def with_paired_interval(
    result: dict, delta: np.ndarray, n_resamples: int, confidence: float
) -> dict:
    """`result` (`paired_result`'s) completed from the resampled differences A - B: the
    percentile interval and the two-sided p-value of a difference of zero."""
    entry = _interval(delta, n_resamples, confidence)
    result.update(low=entry["low"], high=entry["high"], n_valid=entry["n_valid"])
    result["reason"] = entry["reason"]
    if entry["low"] is not None:
        finite = delta[np.isfinite(delta)]
        other_side = min(int(np.count_nonzero(finite <= 0)), int(np.count_nonzero(finite >= 0)))
        result["p_value"] = _two_sided_p(2 * other_side, finite.size)
    return result


def paired_result(
    statistic: str,
    point_a: Mapping[str, Any],
    point_b: Mapping[str, Any],
    key: str,
    n_resamples: int,
    interval: bool = True,
) -> dict:
    """The result of comparing metrics A and B on one statistic, before any resampling:
    both points, and `reason` naming the metric whose statistic (`key` of its points) is
    undefined, else `difference` = A - B. With `interval`, the CI fields too (None)."""
    result: dict[str, Any] = {
        "statistic": statistic,
        "a": point_a[key],
        "b": point_b[key],
        "difference": None,
    }
    if interval:
        result.update(low=None, high=None)
    result.update(p_value=None, n_resamples=int(n_resamples))
    if interval:
        result["n_valid"] = 0
    result["reason"] = None
    for tag, point in (("A", point_a), ("B", point_b)):
        if point[key] is None:
            result["reason"] = f"metric {tag}: {point['reasons'][key]}"
            return result
    result["difference"] = result["a"] - result["b"]
    return result


def paired_bootstrap(
    labels: Sequence[float],
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    statistic: str = "pearson",
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Paired bootstrap of `statistic(A) - statistic(B)` on the same items.

    Each resample draws items once and scores both metrics on them, so the item-to-item
    variation both metrics share cancels out of the difference.

    Returns:
      `{"statistic", "a", "b", "difference", "low", "high", "p_value", "n_resamples",
      "n_valid", "reason"}`. `p_value` is two-sided: twice the share of resamples whose
      difference falls on the other side of 0 (the smallest confidence level whose
      interval contains 0), floored at 1/(B+1). None with `reason` when undefined.
    """
    _check_statistic(statistic)
    check_resampling(n_resamples, confidence)
    y, a = as_arrays(labels, scores_a)
    _, b = as_arrays(labels, scores_b)
    point_a = _statistics(y, a, [statistic])
    point_b = _statistics(y, b, [statistic])
    result = paired_result(statistic, point_a, point_b, statistic, n_resamples)
    if result["reason"]:
        return result
    rng = np.random.default_rng(seed)
    deltas = []
    for rows in resample_chunks(n_resamples, y.size):
        counts = resample_counts(rng, rows, y.size)
        fn = _WEIGHTED[statistic]
        deltas.append(fn(counts, y, a) - fn(counts, y, b))
    delta = np.concatenate(deltas)
    delta = delta[np.isfinite(delta)]
    result["n_valid"] = int(delta.size)
    if delta.size * 2 < n_resamples or delta.size == 0:
        result["reason"] = f"undefined on {n_resamples - delta.size} of {n_resamples} resamples"
        return result
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(delta, [tail, 100.0 - tail])
    result["low"], result["high"] = float(low), float(high)
    other_side = min(int(np.count_nonzero(delta <= 0)), int(np.count_nonzero(delta >= 0)))
    result["p_value"] = _two_sided_p(2 * other_side, delta.size)
    return result


def _exchangeable(statistic: str, scores: np.ndarray) -> np.ndarray:
    # Put both metrics on one scale that leaves the statistic unchanged, so swapping one
    # item's two scores is a valid permutation under "A and B agree equally well".
    if statistic == "pearson":
        return (scores - scores.mean()) / scores.std()
    return scipy_stats.rankdata(scores) / scores.size


def _rowwise(statistic: str, labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """`statistic` for each row of a (rows, items) score matrix (unit weights)."""
    ones = np.ones_like(scores)
    if statistic == "pearson":
        return weighted_pearson(ones, labels, scores)
    if statistic in rank_correlation.KENDALL_VARIANTS:
        variant = rank_correlation.KENDALL_VARIANTS[statistic]
        return np.array([rank_correlation.kendall_tau(labels, row, variant) for row in scores])
    ranks = scipy_stats.rankdata(scores, axis=1)
    if statistic == "spearman":
        return weighted_pearson(ones, scipy_stats.rankdata(labels), ranks)
    positive = labels == 1
    n_pos = int(positive.sum())
    n_neg = labels.size - n_pos
    rank_sum = ranks[:, positive].sum(axis=1)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def permutation_test(
    labels: Sequence[float],
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    statistic: str = "pearson",
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Paired permutation test of "A and B agree equally well with the labels".

    Each metric's scores are first mapped to a common scale that leaves the statistic
    unchanged (z-scores for Pearson, rank fractions for the others); then each
    permutation swaps the two scores of a random half of the items.

    Returns:
      `{"statistic", "a", "b", "difference", "p_value", "n_resamples", "reason"}`;
      `p_value` = (1 + #|permuted difference| >= |observed|) / (1 + B).
    """
    _check_statistic(statistic)
    check_resampling(n_resamples)
    y, a = as_arrays(labels, scores_a)
    _, b = as_arrays(labels, scores_b)
    point_a = _statistics(y, a, [statistic])
    point_b = _statistics(y, b, [statistic])
    result = paired_result(statistic, point_a, point_b, statistic, n_resamples, interval=False)
    if result["reason"]:
        return result
    observed = result["difference"]
    za, zb = _exchangeable(statistic, a), _exchangeable(statistic, b)
    rng = np.random.default_rng(seed)
    extreme = 0
    for rows in resample_chunks(n_resamples, y.size):
        swap = rng.random((rows, y.size)) < 0.5
        perm_a = np.where(swap, zb, za)
        perm_b = np.where(swap, za, zb)
        delta = _rowwise(statistic, y, perm_a) - _rowwise(statistic, y, perm_b)
        # A small tolerance: permutations equal to the observed split count as extreme.
        extreme += int(np.count_nonzero(np.abs(delta) >= abs(observed) - 1e-12))
    result["p_value"] = _two_sided_p(extreme, n_resamples)
    return result


# ---------------------------------------------------------------- breakdowns


def breakdown(
    labels: Sequence[float],
    scores: Sequence[float],
    groups: Sequence[object],
    metric_fn: Callable[[Sequence[float], Sequence[float]], dict] = binary_metrics,
) -> dict[str, dict]:
    """`metric_fn` on each slice of the items (by language, source dataset, system...).

    Args:
      groups: one group value per item; None/NaN/empty values form the slice "unknown".

    Returns:
      `{group: metric_fn(labels[slice], scores[slice])}`, groups in sorted order.
    """
    y, s = as_arrays(labels, scores)
    keys = np.array([slice_key(g) for g in groups], dtype=object)
    if keys.size != y.size:
        raise ValueError(f"groups and labels differ in length: {keys.size} != {y.size}")
    return {key: metric_fn(y[keys == key], s[keys == key]) for key in sorted(set(keys.tolist()))}


def slice_key(value: object) -> str:
    """The slice name of a group value: its string, or "unknown" for None/NaN/empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return "unknown"
    return str(value)


# ---------------------------------------------------------------- intervals


def _interval(draws: np.ndarray, n_resamples: int, confidence: float) -> dict:
    valid = draws[np.isfinite(draws)]
    entry = {"low": None, "high": None, "n_valid": int(valid.size), "reason": None}
    if valid.size == 0 or valid.size * 2 < n_resamples:
        entry["reason"] = f"undefined on {n_resamples - valid.size} of {n_resamples} resamples"
        return entry
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(valid, [tail, 100.0 - tail])
    entry["low"], entry["high"] = float(low), float(high)
    return entry


def interval(draws: np.ndarray, n_resamples: int, confidence: float = 0.95) -> dict:
    """Percentile interval of bootstrap `draws` (NaN draws left out and counted):
    `{"low", "high", "n_valid", "reason"}`."""
    return _interval(np.asarray(draws, dtype=np.float64), n_resamples, confidence)


def paired_p_value(delta: np.ndarray) -> float | None:
    """Two-sided p of a paired bootstrap's differences, as `paired_bootstrap` gives it."""
    finite = np.asarray(delta)[np.isfinite(delta)]
    if finite.size == 0:
        return None
    other_side = min(int(np.count_nonzero(finite <= 0)), int(np.count_nonzero(finite >= 0)))
    return _two_sided_p(2 * other_side, finite.size)

"""Agreement between metric scores and human labels: correlations, ROC-AUC, CIs, tests.

Plain numpy/scipy: no TensorFlow, JAX or SeqIO here, so every number can be checked with
arrays. The paper's measures are Pearson rho between the score and the 0/1 label and
ROC-AUC; graded benchmarks (mFACE averages, METAL 0-2 scores) add Spearman and Kendall
(tau-b as `kendall`, Stuart's tau-c as `kendall_c`: `rank_correlation`).

A value that cannot be computed (an empty slice, one class only, constant or NaN scores) is
`None`, and the result's `reasons` dict says why: never a crash, never a made-up 0.5.
Results are plain dicts of Python scalars, so they serialize to JSON as they are.

Bootstrap resamples are drawn as per-item counts (a `(resamples, items)` matrix), so every
statistic is a weighted statistic of the original arrays and runs vectorised: Pearson is one
matrix product, ROC-AUC a cumulative sum over the score-sorted items, Kendall a weighted
count of concordant pairs (`rank_correlation.weighted_kendall`).
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
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


def _as_arrays(labels: Sequence[float], scores: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
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
        if constant_scores:
            return "scores are constant: ROC-AUC would only count ties"
        return None
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


def _weighted_pearson(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
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
    return _weighted_pearson(w, _weighted_midranks(w, labels), _weighted_midranks(w, scores))


_WEIGHTED: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "pearson": _weighted_pearson,
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
    y, s = _as_arrays(labels, scores)
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


def _resample_counts(rng: np.random.Generator, rows: int, items: int) -> np.ndarray:
    """How often each item is drawn in each of `rows` resamples of `items` draws."""
    draws = rng.integers(0, items, size=(rows, items))
    offsets = (np.arange(rows) * items)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=rows * items)
    return counts.reshape(rows, items).astype(np.float64)


def _chunks(total: int, items: int) -> list[int]:
    size = max(1, _CHUNK_ELEMENTS // max(items, 1))
    return [min(size, total - start) for start in range(0, total, size)]


def _check_resampling(n_resamples: int, confidence: float = 0.95) -> None:
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
    _check_resampling(n_resamples, confidence)
    y, s = _as_arrays(labels, scores)
    point = _statistics(y, s, statistics)
    rng = np.random.default_rng(seed)
    values = {name: [] for name in statistics}
    usable = [name for name in statistics if point[name] is not None]
    if usable:
        for rows in _chunks(n_resamples, y.size):
            counts = _resample_counts(rng, rows, y.size)
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


def _with_paired_interval(
    result: dict, delta: np.ndarray, n_resamples: int, confidence: float
) -> dict:
    """`result` (`_paired_result`'s) completed from the resampled differences A - B: the
    percentile interval and the two-sided p-value of a difference of zero."""
    entry = _interval(delta, n_resamples, confidence)
    result.update(low=entry["low"], high=entry["high"], n_valid=entry["n_valid"])
    result["reason"] = entry["reason"]
    if entry["low"] is not None:
        finite = delta[np.isfinite(delta)]
        other_side = min(int(np.count_nonzero(finite <= 0)), int(np.count_nonzero(finite >= 0)))
        result["p_value"] = _two_sided_p(2 * other_side, finite.size)
    return result


def _paired_result(
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
    _check_resampling(n_resamples, confidence)
    y, a = _as_arrays(labels, scores_a)
    _, b = _as_arrays(labels, scores_b)
    point_a = _statistics(y, a, [statistic])
    point_b = _statistics(y, b, [statistic])
    result = _paired_result(statistic, point_a, point_b, statistic, n_resamples)
    if result["reason"]:
        return result
    rng = np.random.default_rng(seed)
    deltas = []
    for rows in _chunks(n_resamples, y.size):
        counts = _resample_counts(rng, rows, y.size)
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
        return _weighted_pearson(ones, labels, scores)
    if statistic in rank_correlation.KENDALL_VARIANTS:
        variant = rank_correlation.KENDALL_VARIANTS[statistic]
        return np.array([rank_correlation.kendall_tau(labels, row, variant) for row in scores])
    ranks = scipy_stats.rankdata(scores, axis=1)
    if statistic == "spearman":
        return _weighted_pearson(ones, scipy_stats.rankdata(labels), ranks)
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
    _check_resampling(n_resamples)
    y, a = _as_arrays(labels, scores_a)
    _, b = _as_arrays(labels, scores_b)
    point_a = _statistics(y, a, [statistic])
    point_b = _statistics(y, b, [statistic])
    result = _paired_result(statistic, point_a, point_b, statistic, n_resamples, interval=False)
    if result["reason"]:
        return result
    observed = result["difference"]
    za, zb = _exchangeable(statistic, a), _exchangeable(statistic, b)
    rng = np.random.default_rng(seed)
    extreme = 0
    for rows in _chunks(n_resamples, y.size):
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
    y, s = _as_arrays(labels, scores)
    keys = np.array([slice_key(g) for g in groups], dtype=object)
    if keys.size != y.size:
        raise ValueError(f"groups and labels differ in length: {keys.size} != {y.size}")
    return {key: metric_fn(y[keys == key], s[keys == key]) for key in sorted(set(keys.tolist()))}


def slice_key(value: object) -> str:
    """The slice name of a group value: its string, or "unknown" for None/NaN/empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return "unknown"
    return str(value)


# ---------------------------------------------------------------- the field's protocols
# Summary- and system-level correlations (SummEval), partial correlation and Williams' test
# (FRANK), balanced accuracy at a threshold (AggreFact, LLM-AggreFact). docs/benchmarks.md
# states each protocol; the bootstraps below resample the unit each one correlates over.

CORRELATIONS: tuple[str, ...] = ("kendall", "spearman", "pearson")
# Residuals closer than this (relative to their largest magnitude) rank as ties: FRANK's
# residuals of equal human scores differ by float noise (~1e-16) that would break ties.
RESIDUAL_TIE_TOLERANCE = 1e-9
# AggreFact's candidate thresholds: these percentiles of the validation scores.
THRESHOLD_PERCENTILES = np.arange(0, 100, 0.2)
FIXED_THRESHOLD = 0.5


def correlation(kind: str, x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall tau-b (`kendall`) or tau-c (`kendall_c`), Spearman or Pearson between `x` and
    `y`; NaN when undefined (fewer than 2 items, or a constant vector)."""
    a, b = _as_arrays(x, y)
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")
    if kind == "pearson":
        return float(np.clip(_weighted_pearson(np.ones((1, a.size)), a, b)[0], -1.0, 1.0))
    if kind == "spearman":
        return float(scipy_stats.spearmanr(a, b).statistic)
    if kind in rank_correlation.KENDALL_VARIANTS:
        return rank_correlation.kendall_tau(a, b, rank_correlation.KENDALL_VARIANTS[kind])
    raise ValueError(
        f"unknown correlation {kind!r}; expected one of {(*CORRELATIONS, 'kendall_c')}"
    )


def _group_index(groups: Sequence[object]) -> tuple[list[str], np.ndarray]:
    keys = [slice_key(g) for g in groups]
    names = list(dict.fromkeys(keys))
    position = {name: i for i, name in enumerate(names)}
    return names, np.array([position[k] for k in keys], dtype=np.int64)


def per_document_correlations(
    documents: Sequence[object],
    labels: Sequence[float],
    scores: Sequence[float],
    kinds: Sequence[str] = CORRELATIONS,
) -> tuple[list[str], np.ndarray, dict[str, int]]:
    """Each document's correlations over its summaries (one per system).

    Returns:
      (document ids in first-seen order, a (documents, kinds) array with NaN for a skipped
      document, skip counts: `single_summary`, `constant_human`, `constant_metric`).
      A document is skipped when it has one summary, or its human or metric vector is
      constant (the correlation is undefined there).
    """
    y, s = _as_arrays(labels, scores)
    names, index = _group_index(documents)
    values = np.full((len(names), len(kinds)), np.nan)
    skipped = {"single_summary": 0, "constant_human": 0, "constant_metric": 0}
    order = np.argsort(index, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(index[order]) != 0, True])
    for start, stop in itertools.pairwise(bounds):
        members = order[start:stop]
        doc_y, doc_s = y[members], s[members]
        if members.size < 2:
            skipped["single_summary"] += 1
        elif np.all(doc_y == doc_y[0]):
            skipped["constant_human"] += 1
        elif np.all(doc_s == doc_s[0]):
            skipped["constant_metric"] += 1
        else:
            doc = index[members[0]]
            values[doc] = [correlation(kind, doc_s, doc_y) for kind in kinds]
    return names, values, skipped


def summary_level(
    documents: Sequence[object],
    labels: Sequence[float],
    scores: Sequence[float],
    kinds: Sequence[str] = CORRELATIONS,
) -> dict:
    """Summary-level correlation: per document, the correlation of metric and human scores
    over its system summaries, then the mean over documents (SummEval's protocol, as
    UniEval's and G-Eval's scripts compute it). Documents whose human or metric vector is
    constant, or with one summary, are skipped and counted.

    Returns:
      `{"n", "n_documents", "n_used", "skipped": {...}, kind: mean or None, ..., "reasons"}`.
    """
    y, s = _as_arrays(labels, scores)
    result: dict = {"n": int(y.size)}
    problem = input_problem(y, s)
    names, values, skipped = (
        per_document_correlations(documents, y, s, kinds) if problem is None else ([], None, {})
    )
    used = 0 if values is None else int(np.count_nonzero(np.isfinite(values[:, 0])))
    result.update(n_documents=len(names), n_used=used, skipped=skipped)
    reasons: dict[str, str] = {}
    for i, kind in enumerate(kinds):
        if problem is None and used:
            column = values[:, i]
            result[kind] = float(np.mean(column[np.isfinite(column)]))
        else:
            result[kind] = None
            reasons[kind] = problem or "every document skipped (constant or single summary)"
    result["reasons"] = reasons
    return result


def system_means(
    systems: Sequence[object], labels: Sequence[float], scores: Sequence[float]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(systems in first-seen order, each one's mean human score, mean metric score)."""
    y, s = _as_arrays(labels, scores)
    names, index = _group_index(systems)
    counts = np.bincount(index, minlength=len(names)).astype(np.float64)
    return (
        names,
        np.bincount(index, y, len(names)) / counts,
        np.bincount(index, s, len(names)) / counts,
    )


def system_level(
    systems: Sequence[object],
    labels: Sequence[float],
    scores: Sequence[float],
    kinds: Sequence[str] = CORRELATIONS,
) -> dict:
    """System-level correlation: of the per-system mean metric and mean human scores.

    Returns:
      `{"n", "n_systems", kind: value or None, ..., "reasons"}`.
    """
    y, s = _as_arrays(labels, scores)
    result: dict = {"n": int(y.size)}
    reasons: dict[str, str] = {}
    problem = input_problem(y, s)
    names, human, metric = system_means(systems, y, s) if problem is None else ([], None, None)
    result["n_systems"] = len(names)
    for kind in kinds:
        value = float("nan") if problem else correlation(kind, metric, human)
        result[kind] = None if math.isnan(value) else value
        if result[kind] is None:
            reasons[kind] = problem or (
                "fewer than 2 systems" if len(names) < 2 else "constant system means"
            )
    result["reasons"] = reasons
    return result


def residuals(values: Sequence[float], groups: Sequence[object]) -> np.ndarray:
    """`values` less the least-squares fit on the one-hot `groups` (with intercept): each
    value minus its group's mean, as FRANK's `LinearRegression` on `OneHotEncoder` gives."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    _, index = _group_index(groups)
    counts = np.bincount(index).astype(np.float64)
    return v - (np.bincount(index, v) / counts)[index]


def tie_aware_ranks(
    values: Sequence[float], tolerance: float = RESIDUAL_TIE_TOLERANCE
) -> np.ndarray:
    """Average ranks (1-based) where values closer than `tolerance` x their largest magnitude
    (at least 1) to their sorted neighbour count as ties (chains of such steps form one tie)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    order = np.argsort(v, kind="stable")
    sorted_values = v[order]
    scale = tolerance * max(1.0, float(np.max(np.abs(v))) if v.size else 1.0)
    new_run = np.r_[True, np.diff(sorted_values) > scale]
    run = np.cumsum(new_run) - 1
    starts = np.flatnonzero(new_run)
    ends = np.r_[starts[1:], v.size]
    mean_rank = (starts + ends + 1) / 2.0  # mean of ranks start+1 .. end
    ranks = np.empty(v.size)
    ranks[order] = mean_rank[run]
    return ranks


def partial_correlation(
    labels: Sequence[float], scores: Sequence[float], groups: Sequence[object]
) -> dict:
    """FRANK's partial correlation: Pearson and Spearman between the residuals of metric
    and human score after regressing each on the one-hot system (`residuals`).

    Spearman ranks residuals that are equal up to float noise as ties (`tie_aware_ranks`).

    Returns:
      `{"n", "n_groups", "pearson", "spearman", "reasons"}`.
    """
    y, s = _as_arrays(labels, scores)
    result: dict = {"n": int(y.size), "n_groups": len(set(map(slice_key, groups)))}
    reasons: dict[str, str] = {}
    problem = input_problem(y, s)
    if problem is None:
        ry, rs = residuals(y, groups), residuals(s, groups)
        for name, raw, fitted in (("human", y, ry), ("metric", s, rs)):
            # Residuals of float noise only (every system's scores flat) are no variation.
            if np.max(np.abs(fitted)) <= 1e-12 * max(1.0, float(np.max(np.abs(raw)))):
                problem = f"{name} residuals are constant: every system's scores are flat"
    if problem is None:
        values = {
            "pearson": correlation("pearson", rs, ry),
            "spearman": correlation("pearson", tie_aware_ranks(rs), tie_aware_ranks(ry)),
        }
    for kind in ("pearson", "spearman"):
        value = float("nan") if problem else values[kind]
        result[kind] = None if math.isnan(value) else value
        if result[kind] is None:
            reasons[kind] = problem or "residuals are constant: every system's scores are flat"
    result["reasons"] = reasons
    return result


def williams_test(r12: float, r13: float, r23: float, n: int) -> dict:
    """Williams' test (1959) of r12 == r13, two correlations with a shared variable 1 (the
    human score), given r23 between the two metrics, as FRANK's `evaluate.py`: the larger
    correlation first, t with n - 3 degrees of freedom, one-sided p = 1 - CDF(t).

    Returns:
      `{"t", "p_value", "df", "swapped"}` (`swapped`: r13 was the larger); None values with
      `reason` when n <= 3.
    """
    swapped = r12 < r13
    if swapped:
        r12, r13 = r13, r12
    if n <= 3:
        return {"t": None, "p_value": None, "df": n - 3, "swapped": swapped, "reason": "n <= 3"}
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    variance = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3
    if variance <= 1e-15:
        # The two metrics agree perfectly (r23 = 1): nothing to test.
        reason = "the two metrics are perfectly correlated (r23 = 1): no test"
        return {"t": None, "p_value": None, "df": n - 3, "swapped": swapped, "reason": reason}
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(variance)
    p = float(1 - scipy_stats.t.cdf(t, df=n - 3))
    return {"t": float(t), "p_value": p, "df": n - 3, "swapped": swapped, "reason": None}


def williams_compare(
    labels: Sequence[float],
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    groups: Sequence[object] | None = None,
) -> dict:
    """Williams' test between two metrics' Pearson correlations with the human score; with
    `groups`, on the residuals after the one-hot system (FRANK's partial form).

    Returns:
      `{"a", "b", "r_ab", "n", "t", "p_value", "df", "swapped", "reason"}`.
    """
    y, a = _as_arrays(labels, scores_a)
    _, b = _as_arrays(labels, scores_b)
    if groups is not None:
        y, a, b = residuals(y, groups), residuals(a, groups), residuals(b, groups)
    r_a, r_b, r_ab = (correlation("pearson", *pair) for pair in ((a, y), (b, y), (a, b)))
    out = {"a": r_a, "b": r_b, "r_ab": r_ab, "n": int(y.size)}
    if any(math.isnan(r) for r in (r_a, r_b, r_ab)):
        out.update(t=None, p_value=None, df=int(y.size) - 3, swapped=False)
        out["reason"] = "a correlation is undefined (constant scores or residuals)"
        for name in ("a", "b", "r_ab"):
            out[name] = None if math.isnan(out[name]) else out[name]
        return out
    out.update(williams_test(r_a, r_b, r_ab, int(y.size)))
    return out


def balanced_accuracy(labels: Sequence[float], predictions: Sequence[float]) -> float | None:
    """Mean recall over the classes present in `labels` (as sklearn's
    `balanced_accuracy_score`); None without labels."""
    y, p = _as_arrays(labels, predictions)
    recalls = [float(np.mean(p[y == c] == c)) for c in (0.0, 1.0) if np.any(y == c)]
    return float(np.mean(recalls)) if recalls else None


def _balanced_accuracies(labels: np.ndarray, scores: np.ndarray, thresholds: np.ndarray):
    # One row per threshold: predictions score > t; recall per class present, averaged.
    predicted = scores[None, :] > thresholds[:, None]
    recalls = []
    for positive in (True, False):
        members = labels == (1 if positive else 0)
        if members.any():
            recalls.append((predicted[:, members] == positive).sum(1) / members.sum())
    return np.mean(recalls, axis=0)


def threshold_metrics(
    labels: Sequence[float], scores: Sequence[float], threshold: float = FIXED_THRESHOLD
) -> dict:
    """Balanced accuracy of `score > threshold` (so a score equal to it is a 0).

    Returns:
      `{"n", "threshold", "balanced_accuracy", "reasons"}`.
    """
    y, s = _as_arrays(labels, scores)
    problem = input_problem(y, s)
    if problem is None and not labels_are_binary(y):
        problem = "labels are graded, not 0/1: balanced accuracy needs binary labels"
    value = None if problem else balanced_accuracy(y, (s > threshold).astype(np.float64))
    return {
        "n": int(y.size),
        "threshold": float(threshold),
        "balanced_accuracy": value,
        "reasons": {"balanced_accuracy": problem} if problem else {},
    }


def best_threshold(labels: Sequence[float], scores: Sequence[float]) -> tuple[float, float]:
    """AggreFact's threshold rule (`utils.choose_best_threshold`, from SummaC): candidates
    are the 0, 0.2, ..., 99.8th percentiles of `scores`; predictions are `score > t`; the
    last candidate whose balanced accuracy is >= the best so far wins.

    Returns:
      (threshold, its balanced accuracy on these items).

    Raises:
      ValueError: no items, or labels other than 0/1.
    """
    y, s = _as_arrays(labels, scores)
    if y.size == 0 or input_problem(y, s) or not labels_are_binary(y):
        raise ValueError("best_threshold needs finite 0/1 labels and scores")
    candidates = np.percentile(s, THRESHOLD_PERCENTILES)
    accuracies = _balanced_accuracies(y, s, candidates)
    # The running `>=` keeps the last candidate equal to the overall maximum.
    chosen = int(np.flatnonzero(accuracies >= accuracies.max())[-1])
    return float(candidates[chosen]), float(accuracies[chosen])


def tuned_threshold_metrics(
    dev_labels: Sequence[float],
    dev_scores: Sequence[float],
    test_labels: Sequence[float],
    test_scores: Sequence[float],
) -> dict:
    """Balanced accuracy on test at the threshold `best_threshold` picks on dev.

    Returns:
      `{"n", "n_dev", "threshold", "dev_balanced_accuracy", "balanced_accuracy", "reasons"}`.
    """
    yd, sd = _as_arrays(dev_labels, dev_scores)
    problem = input_problem(yd, sd)
    if problem is None and not labels_are_binary(yd):
        problem = "dev labels are graded, not 0/1"
    if problem is not None:
        return {
            "n": len(test_labels),
            "n_dev": int(yd.size),
            "threshold": None,
            "dev_balanced_accuracy": None,
            "balanced_accuracy": None,
            "reasons": {"balanced_accuracy": f"dev: {problem}"},
        }
    threshold, dev_accuracy = best_threshold(yd, sd)
    result = threshold_metrics(test_labels, test_scores, threshold)
    return {
        "n": result["n"],
        "n_dev": int(yd.size),
        "threshold": threshold,
        "dev_balanced_accuracy": dev_accuracy,
        "balanced_accuracy": result["balanced_accuracy"],
        "reasons": result["reasons"],
    }


# ---------------------------------------------------------------- bootstrap over units


def unit_resamples(n_units: int, n_resamples: int, seed: int) -> np.ndarray:
    """A (resamples, units) matrix of unit indices drawn with replacement."""
    _check_resampling(n_resamples)
    return np.random.default_rng(seed).integers(0, n_units, size=(n_resamples, n_units))


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


def _level_draws(
    level: str,
    units: Sequence[object],
    labels: np.ndarray,
    scores: np.ndarray,
    kinds: Sequence[str],
    indices: np.ndarray,
) -> np.ndarray:
    """(resamples, kinds) values of the `level` statistic on each resample of the units."""
    if level == "summary":
        _, per_document, _ = per_document_correlations(units, labels, scores, kinds)
        picked = per_document[indices]  # (resamples, units, kinds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a resample of skipped documents only
            return np.nanmean(picked, axis=1)
    if level == "system":
        _, human, metric = system_means(units, labels, scores)
        return np.array(
            [[correlation(kind, metric[row], human[row]) for kind in kinds] for row in indices]
        )
    raise ValueError(f"unknown level {level!r}; expected summary or system")


def _n_units(units: Sequence[object]) -> int:
    return len(set(map(slice_key, units)))


def level_bootstrap_ci(
    level: str,
    units: Sequence[object],
    labels: Sequence[float],
    scores: Sequence[float],
    kinds: Sequence[str] = CORRELATIONS,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict]:
    """Percentile bootstrap CIs of the summary-level (`level="summary"`, units = documents)
    or system-level (`"system"`, units = systems) correlations, resampling the units with
    replacement (a skipped document stays skipped in every resample it is drawn in).

    Returns:
      `{kind: {"estimate", "low", "high", "confidence", "n_resamples", "n_valid", "reason"}}`.
    """
    _check_resampling(n_resamples, confidence)
    y, s = _as_arrays(labels, scores)
    point = (summary_level if level == "summary" else system_level)(units, y, s, kinds)
    indices = unit_resamples(_n_units(units), n_resamples, seed)
    usable = input_problem(y, s) is None
    draws = _level_draws(level, units, y, s, kinds, indices) if usable else None
    result = {}
    for i, kind in enumerate(kinds):
        entry = {"estimate": point[kind], "confidence": confidence, "n_resamples": n_resamples}
        if point[kind] is None:
            entry.update(low=None, high=None, n_valid=0, reason=point["reasons"][kind])
        else:
            entry.update(_interval(draws[:, i], n_resamples, confidence))
        result[kind] = entry
    return result


def level_paired_bootstrap(
    level: str,
    units: Sequence[object],
    labels: Sequence[float],
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    kind: str = "kendall",
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Paired bootstrap of a summary- or system-level correlation, A - B: both metrics on
    the same resampled documents (or systems).

    Returns:
      As `paired_bootstrap`: `{"statistic", "a", "b", "difference", "low", "high",
      "p_value", "n_resamples", "n_valid", "reason"}`.
    """
    _check_resampling(n_resamples, confidence)
    y, a = _as_arrays(labels, scores_a)
    _, b = _as_arrays(labels, scores_b)
    level_fn = summary_level if level == "summary" else system_level
    point_a, point_b = level_fn(units, y, a, [kind]), level_fn(units, y, b, [kind])
    result = _paired_result(f"{level}_{kind}", point_a, point_b, kind, n_resamples)
    if result["reason"]:
        return result
    indices = unit_resamples(_n_units(units), n_resamples, seed)
    delta = (
        _level_draws(level, units, y, a, [kind], indices)[:, 0]
        - _level_draws(level, units, y, b, [kind], indices)[:, 0]
    )
    return _with_paired_interval(result, delta, n_resamples, confidence)


def balanced_accuracy_bootstrap_ci(
    labels: Sequence[float],
    scores: Sequence[float],
    threshold: float,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Percentile bootstrap CI of the balanced accuracy at a fixed `threshold`, resampling
    items.

    Returns:
      `{"estimate", "low", "high", "confidence", "n_resamples", "n_valid", "reason"}`.
    """
    _check_resampling(n_resamples, confidence)
    y, s = _as_arrays(labels, scores)
    point = threshold_metrics(y, s, threshold)
    entry = {
        "estimate": point["balanced_accuracy"],
        "confidence": confidence,
        "n_resamples": n_resamples,
    }
    if point["balanced_accuracy"] is None:
        entry.update(low=None, high=None, n_valid=0, reason=point["reasons"]["balanced_accuracy"])
        return entry
    entry.update(
        _interval(_resampled_accuracy(y, s, threshold, n_resamples, seed), n_resamples, confidence)
    )
    return entry


def _resampled_accuracy(
    y: np.ndarray, s: np.ndarray, threshold: float, n_resamples: int, seed: int
) -> np.ndarray:
    """Balanced accuracy on each item resample (NaN when a resample holds one class)."""
    correct = (s > threshold) == (y == 1)
    out = []
    rng = np.random.default_rng(seed)
    for rows in _chunks(n_resamples, y.size):
        counts = _resample_counts(rng, rows, y.size)
        pos, neg = counts @ (y == 1), counts @ (y == 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            recall_pos = (counts @ (correct & (y == 1))) / pos
            recall_neg = (counts @ (correct & (y == 0))) / neg
        out.append((recall_pos + recall_neg) / 2)
    return np.concatenate(out)


def paired_balanced_accuracy_bootstrap(
    labels: Sequence[float],
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    threshold_a: float,
    threshold_b: float,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Paired bootstrap of balanced accuracy A - B (each at its own threshold), same items
    in every resample; the result reads as `paired_bootstrap`'s."""
    _check_resampling(n_resamples, confidence)
    y, a = _as_arrays(labels, scores_a)
    _, b = _as_arrays(labels, scores_b)
    point_a = threshold_metrics(y, a, threshold_a)["balanced_accuracy"]
    point_b = threshold_metrics(y, b, threshold_b)["balanced_accuracy"]
    result = {
        "statistic": "balanced_accuracy",
        "a": point_a,
        "b": point_b,
        "difference": None,
        "low": None,
        "high": None,
        "p_value": None,
        "n_resamples": int(n_resamples),
        "n_valid": 0,
        "reason": None,
    }
    if point_a is None or point_b is None:
        result["reason"] = "balanced accuracy undefined (graded or missing labels)"
        return result
    result["difference"] = point_a - point_b
    delta = _resampled_accuracy(y, a, threshold_a, n_resamples, seed) - _resampled_accuracy(
        y, b, threshold_b, n_resamples, seed
    )
    return _with_paired_interval(result, delta, n_resamples, confidence)


def partial_bootstrap_ci(
    labels: Sequence[float],
    scores: Sequence[float],
    groups: Sequence[object],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict]:
    """Percentile bootstrap CIs of `partial_correlation`, resampling items (the residuals
    are refitted on each resample).

    Returns:
      `{"pearson": {...}, "spearman": {...}}` as `bootstrap_ci`'s entries.
    """
    _check_resampling(n_resamples, confidence)
    y, s = _as_arrays(labels, scores)
    g = np.array([slice_key(x) for x in groups], dtype=object)
    point = partial_correlation(y, s, g)
    result = {}
    draws: dict[str, list[float]] = {"pearson": [], "spearman": []}
    if point["pearson"] is not None:
        for row in unit_resamples(y.size, n_resamples, seed):
            value = partial_correlation(y[row], s[row], g[row])
            for kind in draws:
                draws[kind].append(np.nan if value[kind] is None else value[kind])
    for kind in ("pearson", "spearman"):
        entry = {"estimate": point[kind], "confidence": confidence, "n_resamples": n_resamples}
        if point[kind] is None:
            entry.update(low=None, high=None, n_valid=0, reason=point["reasons"][kind])
        else:
            entry.update(_interval(np.asarray(draws[kind]), n_resamples, confidence))
        result[kind] = entry
    return result


def balanced_accuracy_draws(
    labels: Sequence[float],
    scores: Sequence[float],
    threshold: float,
    n_resamples: int = 1000,
    seed: int = 0,
) -> np.ndarray:
    """Balanced accuracy at `threshold` on each of `n_resamples` item resamples (NaN where
    a resample holds one class); the same seed draws the same items, so two metrics' draws
    on the same items are paired."""
    _check_resampling(n_resamples)
    y, s = _as_arrays(labels, scores)
    return _resampled_accuracy(y, s, threshold, n_resamples, seed)


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

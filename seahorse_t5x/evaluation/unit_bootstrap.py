"""Bootstrap intervals and paired tests of the protocols' statistics (`protocol_stats`),
each resampling the unit its statistic is over: documents (summary level), systems (system
level) or items (partial correlation, balanced accuracy). The same seed draws the same
units, so two metrics' draws on the same units are paired.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from seahorse_t5x.evaluation import protocol_stats, stats


def unit_resamples(n_units: int, n_resamples: int, seed: int) -> np.ndarray:
    """A (resamples, units) matrix of unit indices drawn with replacement."""
    stats.check_resampling(n_resamples)
    return np.random.default_rng(seed).integers(0, n_units, size=(n_resamples, n_units))


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
        _, per_document, _ = protocol_stats.per_document_correlations(units, labels, scores, kinds)
        picked = per_document[indices]  # (resamples, units, kinds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a resample of skipped documents only
            return np.nanmean(picked, axis=1)
    if level == "system":
        _, human, metric = protocol_stats.system_means(units, labels, scores)
        return np.array(
            [
                [protocol_stats.correlation(kind, metric[row], human[row]) for kind in kinds]
                for row in indices
            ]
        )
    raise ValueError(f"unknown level {level!r}; expected summary or system")


def _n_units(units: Sequence[object]) -> int:
    return len(set(map(stats.slice_key, units)))


def level_bootstrap_ci(
    level: str,
    units: Sequence[object],
    labels: Sequence[float],
    scores: Sequence[float],
    kinds: Sequence[str] = protocol_stats.CORRELATIONS,
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
    stats.check_resampling(n_resamples, confidence)
    y, s = stats.as_arrays(labels, scores)
    point = (protocol_stats.summary_level if level == "summary" else protocol_stats.system_level)(
        units, y, s, kinds
    )
    indices = unit_resamples(_n_units(units), n_resamples, seed)
    usable = stats.input_problem(y, s) is None
    draws = _level_draws(level, units, y, s, kinds, indices) if usable else None
    result = {}
    for i, kind in enumerate(kinds):
        entry = {"estimate": point[kind], "confidence": confidence, "n_resamples": n_resamples}
        if point[kind] is None:
            entry.update(low=None, high=None, n_valid=0, reason=point["reasons"][kind])
        else:
            entry.update(stats.interval(draws[:, i], n_resamples, confidence))
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
    stats.check_resampling(n_resamples, confidence)
    y, a = stats.as_arrays(labels, scores_a)
    _, b = stats.as_arrays(labels, scores_b)
    level_fn = protocol_stats.summary_level if level == "summary" else protocol_stats.system_level
    point_a, point_b = level_fn(units, y, a, [kind]), level_fn(units, y, b, [kind])
    result = stats.paired_result(f"{level}_{kind}", point_a, point_b, kind, n_resamples)
    if result["reason"]:
        return result
    indices = unit_resamples(_n_units(units), n_resamples, seed)
    delta = (
        _level_draws(level, units, y, a, [kind], indices)[:, 0]
        - _level_draws(level, units, y, b, [kind], indices)[:, 0]
    )
    return stats.with_paired_interval(result, delta, n_resamples, confidence)


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
    stats.check_resampling(n_resamples, confidence)
    y, s = stats.as_arrays(labels, scores)
    point = protocol_stats.threshold_metrics(y, s, threshold)
    entry = {
        "estimate": point["balanced_accuracy"],
        "confidence": confidence,
        "n_resamples": n_resamples,
    }
    if point["balanced_accuracy"] is None:
        entry.update(low=None, high=None, n_valid=0, reason=point["reasons"]["balanced_accuracy"])
        return entry
    entry.update(
        stats.interval(
            _resampled_accuracy(y, s, threshold, n_resamples, seed), n_resamples, confidence
        )
    )
    return entry


def _resampled_accuracy(
    y: np.ndarray, s: np.ndarray, threshold: float, n_resamples: int, seed: int
) -> np.ndarray:
    """Balanced accuracy on each item resample (NaN when a resample holds one class)."""
    correct = (s > threshold) == (y == 1)
    out = []
    rng = np.random.default_rng(seed)
    for rows in stats.resample_chunks(n_resamples, y.size):
        counts = stats.resample_counts(rng, rows, y.size)
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
    stats.check_resampling(n_resamples, confidence)
    y, a = stats.as_arrays(labels, scores_a)
    _, b = stats.as_arrays(labels, scores_b)
    point_a = protocol_stats.threshold_metrics(y, a, threshold_a)["balanced_accuracy"]
    point_b = protocol_stats.threshold_metrics(y, b, threshold_b)["balanced_accuracy"]
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
    return stats.with_paired_interval(result, delta, n_resamples, confidence)


def partial_bootstrap_ci(
    labels: Sequence[float],
    scores: Sequence[float],
    groups: Sequence[object],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict]:
    """Percentile bootstrap CIs of `protocol_stats.partial_correlation`, resampling items (the
    residuals
    are refitted on each resample).

    Returns:
      `{"pearson": {...}, "spearman": {...}}` as `bootstrap_ci`'s entries.
    """
    stats.check_resampling(n_resamples, confidence)
    y, s = stats.as_arrays(labels, scores)
    g = np.array([stats.slice_key(x) for x in groups], dtype=object)
    point = protocol_stats.partial_correlation(y, s, g)
    result = {}
    draws: dict[str, list[float]] = {"pearson": [], "spearman": []}
    if point["pearson"] is not None:
        for row in unit_resamples(y.size, n_resamples, seed):
            value = protocol_stats.partial_correlation(y[row], s[row], g[row])
            for kind in draws:
                draws[kind].append(np.nan if value[kind] is None else value[kind])
    for kind in ("pearson", "spearman"):
        entry = {"estimate": point[kind], "confidence": confidence, "n_resamples": n_resamples}
        if point[kind] is None:
            entry.update(low=None, high=None, n_valid=0, reason=point["reasons"][kind])
        else:
            entry.update(stats.interval(np.asarray(draws[kind]), n_resamples, confidence))
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
    stats.check_resampling(n_resamples)
    y, s = stats.as_arrays(labels, scores)
    return _resampled_accuracy(y, s, threshold, n_resamples, seed)

"""The field's protocols' statistics: summary- and system-level correlations (SummEval),
partial correlation and Williams' test (FRANK), balanced accuracy at a fixed or a tuned
threshold (AggreFact, LLM-AggreFact). docs/benchmarks.md states each protocol; their
intervals, resampling the unit each one correlates over, are `unit_bootstrap`'s.

Plain numpy/scipy, as `stats`: an undefined value is None, with its reason.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats

from seahorse_t5x.evaluation import rank_correlation, stats

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
    a, b = stats.as_arrays(x, y)
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")
    if kind == "pearson":
        return float(np.clip(stats.weighted_pearson(np.ones((1, a.size)), a, b)[0], -1.0, 1.0))
    if kind == "spearman":
        return float(scipy_stats.spearmanr(a, b).statistic)
    if kind in rank_correlation.KENDALL_VARIANTS:
        return rank_correlation.kendall_tau(a, b, rank_correlation.KENDALL_VARIANTS[kind])
    raise ValueError(
        f"unknown correlation {kind!r}; expected one of {(*CORRELATIONS, 'kendall_c')}"
    )


def _group_index(groups: Sequence[object]) -> tuple[list[str], np.ndarray]:
    keys = [stats.slice_key(g) for g in groups]
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
    y, s = stats.as_arrays(labels, scores)
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
    y, s = stats.as_arrays(labels, scores)
    result: dict = {"n": int(y.size)}
    problem = stats.input_problem(y, s)
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
    y, s = stats.as_arrays(labels, scores)
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
    y, s = stats.as_arrays(labels, scores)
    result: dict = {"n": int(y.size)}
    reasons: dict[str, str] = {}
    problem = stats.input_problem(y, s)
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
    y, s = stats.as_arrays(labels, scores)
    result: dict = {"n": int(y.size), "n_groups": len(set(map(stats.slice_key, groups)))}
    reasons: dict[str, str] = {}
    problem = stats.input_problem(y, s)
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
    y, a = stats.as_arrays(labels, scores_a)
    _, b = stats.as_arrays(labels, scores_b)
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
    y, p = stats.as_arrays(labels, predictions)
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
    y, s = stats.as_arrays(labels, scores)
    problem = stats.input_problem(y, s)
    if problem is None and not stats.labels_are_binary(y):
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
    y, s = stats.as_arrays(labels, scores)
    if y.size == 0 or stats.input_problem(y, s) or not stats.labels_are_binary(y):
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
    yd, sd = stats.as_arrays(dev_labels, dev_scores)
    problem = stats.input_problem(yd, sd)
    if problem is None and not stats.labels_are_binary(yd):
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

"""Kendall's tau between metric scores and human labels: the point value and its weighted form.

Two variants, as meta-evaluation papers report them (TIGERScore, G-Eval, UniEval: Kendall
tau against human ratings):

- tau-b (`"kendall"`): (C - D) / sqrt((P - X)(P - Y)), with P the pairs, X and Y the pairs
  tied on the labels and on the scores; it is scipy's default and 1 for a perfect ranking
  even when the labels are tied.
- tau-c (Stuart's, `"kendall_c"`): 2 (C - D) / (n^2 (m - 1) / m), with m the smaller number
  of distinct values of either vector; it suits a few label grades against many scores and
  stays below 1 when the labels hold fewer grades than there are items.

The point value is scipy's (`scipy.stats.kendalltau(variant=...)`). `weighted_kendall` gives
the same number on every bootstrap resample at once: a resample is a row of per-item counts
`w`, and its tau is the tau of the items repeated `w` times (copies of one item tie on both
vectors). C - D is counted as a weighted dominance count, by halving blocks of the items
sorted by label, so one row costs O(n log n) and every row shares the sort.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats

# Statistic name -> scipy's `variant`.
KENDALL_VARIANTS: dict[str, str] = {"kendall": "b", "kendall_c": "c"}


def kendall_tau(x: Sequence[float], y: Sequence[float], variant: str = "b") -> float:
    """Kendall's tau-b (`variant="b"`) or tau-c (`"c"`) between `x` and `y`, as scipy gives it.

    Returns:
      tau in [-1, 1]; NaN when it is undefined (fewer than 2 items, or a constant vector).

    Raises:
      ValueError: an unknown variant, or `x` and `y` differ in length.
    """
    _check_variant(variant)
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    b = np.asarray(y, dtype=np.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"x and y differ in length: {a.size} != {b.size}")
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")
    return float(scipy_stats.kendalltau(a, b, variant=variant).statistic)


def _check_variant(variant: str) -> None:
    if variant not in ("b", "c"):
        raise ValueError(f"unknown Kendall variant {variant!r}; expected 'b' or 'c'")


def _dense_ranks(values: np.ndarray) -> tuple[np.ndarray, int]:
    """0-based dense ranks (equal values share one) and the number of distinct values."""
    distinct, ranks = np.unique(values, return_inverse=True)
    return ranks.reshape(-1), int(distinct.size)


class _DominancePlan:
    """What `T = sum over items i placed before j of w_i w_j sign(y_j - y_i)` needs of the
    item order, precomputed once for every row of weights.

    The items are placed in order; at each level the positions fall into blocks of 2^(L+1)
    whose left half precedes its right half, and every pair of positions is split at exactly
    one level. Per level, the left halves' items are sorted by (block, y rank); a right-half
    item's weight of earlier items below (above) its y is a difference of the cumulative
    weights of that sorted array, at indices found once by `searchsorted`.
    """

    def __init__(self, y_ranks: np.ndarray, n_y: int) -> None:
        n = y_ranks.size
        position = np.arange(n)
        self.levels: list[tuple[np.ndarray, ...]] = []
        level = 0
        while (1 << level) < n:
            block = position >> (level + 1)
            right = ((position >> level) & 1).astype(bool)
            left_keys = block[~right] * n_y + y_ranks[~right]
            sort = np.argsort(left_keys, kind="stable")
            left_sorted, left_keys = position[~right][sort], left_keys[sort]
            right_block = block[right]
            right_keys = right_block * n_y + y_ranks[right]
            self.levels.append(
                (
                    left_sorted,
                    position[right],
                    np.searchsorted(left_keys, right_block * n_y, "left"),  # block start
                    np.searchsorted(left_keys, right_keys, "left"),  # below y_j
                    np.searchsorted(left_keys, right_keys, "right"),  # up to y_j
                    np.searchsorted(left_keys, (right_block + 1) * n_y, "left"),  # block end
                )
            )
            level += 1

    def signed_pairs(self, w: np.ndarray) -> np.ndarray:
        """T for each row of `w` (rows, items), the items in the plan's order."""
        total = np.zeros(w.shape[0])
        for left_sorted, right, start, below, upto, end in self.levels:
            cumulative = np.zeros((w.shape[0], left_sorted.size + 1))
            np.cumsum(w[:, left_sorted], axis=1, out=cumulative[:, 1:])
            lower = cumulative[:, below] - cumulative[:, start]
            higher = cumulative[:, end] - cumulative[:, upto]
            total += (w[:, right] * (lower - higher)).sum(axis=1)
        return total


def _group_sums(w: np.ndarray, ranks: np.ndarray, n_groups: int) -> np.ndarray:
    """(rows, groups) total weight of each rank's items."""
    rows = w.shape[0]
    keys = (np.arange(rows)[:, None] * n_groups + ranks[None, :]).ravel()
    sums = np.bincount(keys, weights=w.ravel(), minlength=rows * n_groups)
    return sums.reshape(rows, n_groups)


def _tied_pairs(group_weight: np.ndarray) -> np.ndarray:
    return (group_weight * (group_weight - 1.0)).sum(axis=1) / 2.0


def weighted_kendall(w: np.ndarray, x: np.ndarray, y: np.ndarray, variant: str = "b") -> np.ndarray:
    """Kendall's tau of `x` against `y` for each row of per-item weights `w`.

    A row of counts (a bootstrap resample) gives the tau of the items repeated that many
    times, which is `kendall_tau` on the repeated arrays; a row of ones gives the point value.

    Args:
      w: (rows, items) non-negative integer weights.
      x, y: (items,) values (labels and scores); their roles are symmetric.
      variant: "b" or "c".

    Returns:
      (rows,) tau, NaN where a row's items hold one distinct value of either vector.
    """
    _check_variant(variant)
    w = np.asarray(w, dtype=np.float64)
    x_ranks, n_x = _dense_ranks(np.asarray(x, dtype=np.float64))
    y_ranks, n_y = _dense_ranks(np.asarray(y, dtype=np.float64))
    # Items in (x, y) order: a pair is then counted with the sign of its y step, which is
    # right for pairs apart in x; pairs tied in x (never descending in y) are taken out below.
    order = np.lexsort((y_ranks, x_ranks))
    x_ranks, y_ranks, w = x_ranks[order], y_ranks[order], w[:, order]
    signed = _DominancePlan(y_ranks, n_y).signed_pairs(w)
    joint_ranks, n_joint = _dense_ranks(x_ranks * n_y + y_ranks)
    by_x = _group_sums(w, x_ranks, n_x)
    by_y = _group_sums(w, y_ranks, n_y)
    by_joint = _group_sums(w, joint_ranks, n_joint)
    # Pairs in one x group with different y: each was counted as +1 above.
    ascending_in_x_ties = ((by_x**2).sum(axis=1) - (by_joint**2).sum(axis=1)) / 2.0
    concordant_minus_discordant = signed - ascending_in_x_ties
    size = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if variant == "b":
            pairs = size * (size - 1.0) / 2.0
            untied_x = pairs - _tied_pairs(by_x)
            untied_y = pairs - _tied_pairs(by_y)
            tau = concordant_minus_discordant / np.sqrt(untied_x * untied_y)
            tau[(untied_x <= 0) | (untied_y <= 0)] = np.nan
        else:
            classes = np.minimum((by_x > 0).sum(axis=1), (by_y > 0).sum(axis=1)).astype(float)
            tau = 2.0 * concordant_minus_discordant / (size**2 * (classes - 1.0) / classes)
            tau[classes < 2] = np.nan
    return np.clip(tau, -1.0, 1.0)

"""Kendall's tau-b and tau-c: point values against scipy, the weighted form against the
resamples written out item by item, and intervals, paired tests and summary-level
correlations through `stats`."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from seahorse_t5x.evaluation import protocol_stats, rank_correlation, stats, unit_bootstrap

VARIANTS = {"kendall": "b", "kendall_c": "c"}


def _graded(seed: int, n: int = 120, grades: int = 5, noise: float = 1.0):
    """Labels on a few grades (many ties), scores rounded so they tie too."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(1, grades + 1, size=n).astype(float)
    scores = np.round(labels + noise * rng.normal(size=n), 1)
    return labels, scores


def test_tied_example_tau_b_and_tau_c_differ_by_their_known_values():
    # Labels on 2 grades, scores all distinct: C = 4, D = 0 of 6 pairs, 2 pairs tied on x.
    # tau-b = 4 / sqrt((6 - 2) * 6) = sqrt(2/3); tau-c = 2 * 4 / (4^2 * (2 - 1) / 2) = 1.
    x, y = [1, 1, 2, 2], [1, 2, 3, 4]
    assert rank_correlation.kendall_tau(x, y, "b") == pytest.approx(math.sqrt(2 / 3), abs=1e-15)
    assert rank_correlation.kendall_tau(x, y, "c") == pytest.approx(1.0, abs=1e-15)
    assert protocol_stats.correlation("kendall", y, x) == pytest.approx(math.sqrt(2 / 3), abs=1e-15)
    assert protocol_stats.correlation("kendall_c", y, x) == pytest.approx(1.0, abs=1e-15)
    # Of 10 pairs: C = 7, D = 1 (items 1 and 3), one pair tied on x only (1, 2), one on y
    # only (2, 3): tau-b = 6 / sqrt(9 * 9) = 2/3; 4 distinct values each, so
    # tau-c = 2 * 6 / (5^2 * (4 - 1) / 4) = 16/25.
    x, y = [1, 2, 2, 3, 4], [1, 3, 2, 2, 5]
    assert rank_correlation.kendall_tau(x, y, "b") == pytest.approx(2 / 3, abs=1e-15)
    assert rank_correlation.kendall_tau(x, y, "c") == pytest.approx(16 / 25, abs=1e-15)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("variant", ["b", "c"])
def test_point_value_is_scipys(seed, variant):
    labels, scores = _graded(seed)
    expected = scipy_stats.kendalltau(labels, scores, variant=variant).statistic
    assert rank_correlation.kendall_tau(labels, scores, variant) == expected
    name = "kendall" if variant == "b" else "kendall_c"
    point = stats.bootstrap_ci(labels, scores, [name], n_resamples=20)[name]["estimate"]
    assert point == expected


def test_undefined_and_bad_arguments():
    assert math.isnan(rank_correlation.kendall_tau([1, 1, 1], [1, 2, 3]))
    assert math.isnan(rank_correlation.kendall_tau([1], [2], "c"))
    with pytest.raises(ValueError, match="unknown Kendall variant 'a'"):
        rank_correlation.kendall_tau([1, 2], [1, 2], "a")
    with pytest.raises(ValueError, match="differ in length"):
        rank_correlation.kendall_tau([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="unknown correlation 'tau'"):
        protocol_stats.correlation("tau", [1, 2], [1, 2])
    result = stats.bootstrap_ci([2, 2, 2], [0.1, 0.5, 0.3], ["kendall_c"], n_resamples=10)
    assert result["kendall_c"]["estimate"] is None
    assert result["kendall_c"]["reason"] == "labels are constant: correlation undefined"


@pytest.mark.parametrize("variant", ["b", "c"])
def test_weighted_form_equals_scipy_on_the_written_out_resamples(variant):
    rng = np.random.default_rng(3)
    for n in (2, 3, 17, 64, 129):
        labels, scores = _graded(n, n=n, grades=3)
        counts = rng.integers(0, 3, size=(8, n)).astype(float)
        counts[0] = 1.0
        counts[1] = 0.0
        counts[1, 0] = 5.0  # one item drawn five times: constant, undefined
        got = rank_correlation.weighted_kendall(counts, labels, scores, variant)
        for row in range(counts.shape[0]):
            idx = np.repeat(np.arange(n), counts[row].astype(int))
            y, s = labels[idx], scores[idx]
            defined = idx.size > 1 and np.ptp(y) > 0 and np.ptp(s) > 0
            if not defined:
                assert math.isnan(got[row]), (n, row)
            else:
                expected = scipy_stats.kendalltau(y, s, variant=variant).statistic
                assert got[row] == pytest.approx(expected, abs=1e-12), (n, row)


@pytest.mark.parametrize("name", ["kendall", "kendall_c"])
def test_bootstrap_interval_is_the_percentiles_of_scipy_on_the_same_resamples(name):
    labels, scores = _graded(4, n=90)
    n_resamples, seed = 150, 11
    ci = stats.bootstrap_ci(labels, scores, [name], n_resamples=n_resamples, seed=seed)[name]
    # The same resamples drawn item by item, each scored by scipy.
    draws = np.random.default_rng(seed).integers(0, labels.size, size=(n_resamples, labels.size))
    values = [
        scipy_stats.kendalltau(labels[d], scores[d], variant=VARIANTS[name]).statistic
        for d in draws
    ]
    low, high = np.percentile(values, [2.5, 97.5])
    assert ci["low"] == pytest.approx(low, abs=1e-12)
    assert ci["high"] == pytest.approx(high, abs=1e-12)
    assert ci["low"] < ci["estimate"] < ci["high"]
    assert ci["n_valid"] == n_resamples


def test_paired_bootstrap_sign_follows_the_better_metric():
    rng = np.random.default_rng(5)
    labels = rng.integers(1, 6, size=300).astype(float)
    good = labels + 0.5 * rng.normal(size=300)
    poor = labels + 3.0 * rng.normal(size=300)
    forward = stats.paired_bootstrap(labels, good, poor, "kendall", n_resamples=300, seed=1)
    backward = stats.paired_bootstrap(labels, poor, good, "kendall", n_resamples=300, seed=1)
    tau_good = scipy_stats.kendalltau(labels, good).statistic
    tau_poor = scipy_stats.kendalltau(labels, poor).statistic
    assert forward["a"] == tau_good and forward["b"] == tau_poor
    assert forward["difference"] == pytest.approx(tau_good - tau_poor) and tau_good > tau_poor
    assert 0 < forward["low"] < forward["difference"] < forward["high"]
    assert backward["difference"] == pytest.approx(-forward["difference"])
    assert backward["low"] == pytest.approx(-forward["high"])
    assert backward["high"] == pytest.approx(-forward["low"])
    assert forward["p_value"] == backward["p_value"] == pytest.approx(1 / 301)


def test_summary_and_system_level_take_tau_c_too():
    # Five documents, four systems each; per document correlate over its systems, then mean.
    rng = np.random.default_rng(8)
    documents = [f"d{d}" for d in range(5) for _ in range(4)]
    systems = [f"s{s}" for _ in range(5) for s in range(4)]
    labels = rng.integers(1, 4, size=20).astype(float)
    scores = labels + rng.normal(size=20)
    kinds = ("kendall", "kendall_c")
    result = protocol_stats.summary_level(documents, labels, scores, kinds)
    for kind in kinds:
        per_document = []
        for d in range(5):
            y, s = labels[4 * d : 4 * d + 4], scores[4 * d : 4 * d + 4]
            if np.ptp(y) > 0:
                per_document.append(scipy_stats.kendalltau(s, y, variant=VARIANTS[kind]).statistic)
        assert result[kind] == pytest.approx(np.mean(per_document), abs=1e-12)
    ci = unit_bootstrap.level_bootstrap_ci("summary", documents, labels, scores, kinds, 100, seed=0)
    for kind in kinds:
        assert ci[kind]["low"] <= ci[kind]["estimate"] <= ci[kind]["high"]
    system = protocol_stats.system_level(systems, labels, scores, ("kendall_c",))
    means = [(labels[i::4].mean(), scores[i::4].mean()) for i in range(4)]
    human, metric = zip(*means, strict=True)
    expected = scipy_stats.kendalltau(metric, human, variant="c").statistic
    assert system["kendall_c"] == pytest.approx(expected, abs=1e-12)

"""Agreement statistics against scipy/sklearn; bootstrap coverage; paired tests; degenerate inputs."""

import json
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from sklearn.metrics import roc_auc_score

from seahorse_t5x.evaluation import stats


def _binary_data(seed: int, n: int = 500, signal: float = 1.0, ties: bool = False):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.35).astype(float)
    scores = signal * labels + rng.normal(size=n)
    if ties:
        scores = np.round(scores, 1)
    return labels, scores


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", [False, True])
def test_binary_metrics_match_scipy_and_sklearn(seed, ties):
    labels, scores = _binary_data(seed, ties=ties)
    result = stats.binary_metrics(labels, scores)
    assert result["n"] == 500
    assert result["n_positive"] == int(labels.sum())
    assert result["positive_rate"] == pytest.approx(labels.mean())
    assert result["pearson"] == pytest.approx(scipy_stats.pearsonr(labels, scores)[0], abs=1e-10)
    assert result["roc_auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert result["reasons"] == {}
    json.dumps(result)  # plain Python values only


@pytest.mark.parametrize("seed", [0, 3])
def test_graded_metrics_match_scipy(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=300).astype(float)  # METAL-like 0..2 grades, many ties
    scores = labels + rng.normal(size=300)
    result = stats.graded_metrics(labels, scores)
    assert result["pearson"] == pytest.approx(scipy_stats.pearsonr(labels, scores)[0], abs=1e-10)
    assert result["spearman"] == pytest.approx(scipy_stats.spearmanr(labels, scores)[0], abs=1e-10)
    assert result["kendall"] == pytest.approx(scipy_stats.kendalltau(labels, scores)[0], abs=1e-10)


def test_metrics_for_labels_picks_by_label_kind():
    assert "roc_auc" in stats.metrics_for_labels([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3])
    assert stats.metrics_for_labels([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3])["roc_auc"] == 1.0
    graded = stats.metrics_for_labels([0.5, 1.0, 0.0, 0.2], [0.1, 0.9, 0.8, 0.3])
    assert graded["roc_auc"] is None
    assert "graded" in graded["reasons"]["roc_auc"]
    assert graded["spearman"] == pytest.approx(0.2)  # d^2 = 8: 1 - 6 * 8 / (4 * 15)


@pytest.mark.parametrize(
    "labels, scores, reason_pearson, reason_roc",
    [
        ([], [], "no items", "no items"),
        ([1, 1, 1], [0.1, 0.5, 0.9], "labels are constant", "one class only (all 1)"),
        ([0, 0, 0], [0.1, 0.5, 0.9], "labels are constant", "one class only (all 0)"),
        ([0, 1, 1], [0.1, float("nan"), 0.3], "1 of 3 scores are NaN", "1 of 3 scores are NaN"),
        ([0, 1], [0.1, float("inf")], "1 of 2 scores are NaN or infinite", "NaN or infinite"),
    ],
)
def test_degenerate_inputs_give_none_with_reason(labels, scores, reason_pearson, reason_roc):
    result = stats.binary_metrics(labels, scores)
    assert result["pearson"] is None and result["roc_auc"] is None
    assert reason_pearson in result["reasons"]["pearson"]
    assert reason_roc in result["reasons"]["roc_auc"]
    json.dumps(result)


def test_constant_scores_have_no_correlation_and_a_roc_auc_of_one_half():
    # Every (Yes, No) pair is a tie, counted one half: sklearn's value, the majority
    # baseline's in every table.
    labels, scores = [0, 1, 1, 0, 1], [0.4] * 5
    result = stats.binary_metrics(labels, scores)
    assert result["roc_auc"] == roc_auc_score(labels, scores) == 0.5
    assert result["pearson"] is None
    assert result["reasons"] == {"pearson": "scores are constant: correlation undefined"}
    ci = stats.bootstrap_ci(labels, scores, n_resamples=50)
    assert (ci["roc_auc"]["low"], ci["roc_auc"]["high"]) == (0.5, 0.5)


def test_degenerate_bootstrap_and_paired_tests_say_why():
    ci = stats.bootstrap_ci([1, 1, 1], [0.1, 0.2, 0.3], n_resamples=50)
    assert ci["roc_auc"]["low"] is None and "one class" in ci["roc_auc"]["reason"]
    paired = stats.paired_bootstrap([1, 1, 1], [0.1, 0.2, 0.3], [0.3, 0.2, 0.1], "roc_auc", 50)
    assert paired["p_value"] is None and paired["reason"].startswith("metric A: labels hold")
    perm = stats.permutation_test([0, 1, 1], [0.1, 0.2, 0.3], [1.0, 1.0, 1.0], "pearson", 50)
    assert perm["p_value"] is None and perm["reason"] == (
        "metric B: scores are constant: correlation undefined"
    )


def test_weighted_kernels_equal_statistics_of_materialized_resamples():
    # The vectorised bootstrap scores a resample through per-item counts; it must equal the
    # statistic of the resample written out item by item.
    labels, scores = _binary_data(7, n=60, ties=True)
    rng = np.random.default_rng(0)
    counts = stats.resample_counts(rng, 5, labels.size)
    assert counts.sum(axis=1).tolist() == [60.0] * 5
    pearson = stats.weighted_pearson(counts, labels, scores)
    auc = stats._weighted_roc_auc(counts, labels, scores)
    spearman = stats._weighted_spearman(counts, labels, scores)
    for row in range(5):
        idx = np.repeat(np.arange(labels.size), counts[row].astype(int))
        y, s = labels[idx], scores[idx]
        assert pearson[row] == pytest.approx(scipy_stats.pearsonr(y, s)[0], abs=1e-9)
        assert auc[row] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        assert spearman[row] == pytest.approx(scipy_stats.spearmanr(y, s)[0], abs=1e-9)


def test_bootstrap_ci_is_seeded_and_brackets_the_estimate():
    labels, scores = _binary_data(0)
    first = stats.bootstrap_ci(labels, scores, n_resamples=200, seed=5)
    again = stats.bootstrap_ci(labels, scores, n_resamples=200, seed=5)
    other = stats.bootstrap_ci(labels, scores, n_resamples=200, seed=6)
    assert first == again
    assert first["pearson"]["low"] != other["pearson"]["low"]
    for name in ("pearson", "roc_auc"):
        entry = first[name]
        assert entry["low"] < entry["estimate"] < entry["high"]
        assert entry["n_valid"] == 200


def test_bootstrap_ci_covers_the_true_value_in_simulation():
    # Population: label ~ Bernoulli(0.4), score = label + N(0, 1). True ROC-AUC is
    # Phi(1 / sqrt(2)); true Pearson is the point-biserial of that mixture.
    p, delta = 0.4, 1.0
    true_auc = scipy_stats.norm.cdf(delta / math.sqrt(2))
    true_pearson = delta * math.sqrt(p * (1 - p)) / math.sqrt(1 + delta**2 * p * (1 - p))
    covered = {"pearson": 0, "roc_auc": 0}
    rng = np.random.default_rng(123)
    trials = 50
    for trial in range(trials):
        labels = (rng.random(300) < p).astype(float)
        scores = delta * labels + rng.normal(size=300)
        ci = stats.bootstrap_ci(labels, scores, n_resamples=300, seed=trial)
        covered["pearson"] += ci["pearson"]["low"] <= true_pearson <= ci["pearson"]["high"]
        covered["roc_auc"] += ci["roc_auc"]["low"] <= true_auc <= ci["roc_auc"]["high"]
    assert covered["pearson"] >= 0.9 * trials, covered
    assert covered["roc_auc"] >= 0.9 * trials, covered


def _paired_data(seed: int, extra_noise_b: float):
    rng = np.random.default_rng(seed)
    labels = (rng.random(800) < 0.5).astype(float)
    shared = labels + rng.normal(size=800)
    scores_a = shared + 0.3 * rng.normal(size=800)
    scores_b = shared + extra_noise_b * rng.normal(size=800)
    return labels, scores_a, scores_b


@pytest.mark.parametrize("statistic", ["pearson", "roc_auc", "spearman", "kendall", "kendall_c"])
def test_paired_tests_detect_a_real_difference(statistic):
    labels, a, b = _paired_data(0, extra_noise_b=1.5)
    boot = stats.paired_bootstrap(labels, a, b, statistic, n_resamples=500, seed=0)
    perm = stats.permutation_test(labels, a, b, statistic, n_resamples=300, seed=0)
    assert boot["difference"] > 0 and boot["low"] > 0
    assert boot["p_value"] < 0.01
    assert perm["p_value"] < 0.01
    assert perm["difference"] == pytest.approx(boot["difference"])


@pytest.mark.parametrize("statistic", ["pearson", "roc_auc", "kendall"])
def test_paired_tests_do_not_flag_a_null_difference(statistic):
    # Same noise level for both metrics: no real difference.
    labels, a, b = _paired_data(1, extra_noise_b=0.3)
    boot = stats.paired_bootstrap(labels, a, b, statistic, n_resamples=500, seed=0)
    perm = stats.permutation_test(labels, a, b, statistic, n_resamples=300, seed=0)
    assert boot["low"] < 0 < boot["high"]
    assert boot["p_value"] > 0.05
    assert perm["p_value"] > 0.05


def test_paired_tests_are_seeded():
    labels, a, b = _paired_data(2, extra_noise_b=0.6)
    assert stats.paired_bootstrap(labels, a, b, seed=3) == stats.paired_bootstrap(
        labels, a, b, seed=3
    )
    assert stats.permutation_test(labels, a, b, seed=3) == stats.permutation_test(
        labels, a, b, seed=3
    )


def test_breakdown_slices_by_group():
    labels = [1, 0, 1, 0, 1, 1]
    scores = [0.9, 0.1, 0.8, 0.7, 0.2, 0.6]
    groups = ["de", "de", "en", "en", None, "en"]
    result = stats.breakdown(labels, scores, groups)
    assert list(result) == ["de", "en", "unknown"]
    assert result["de"]["roc_auc"] == 1.0
    assert result["en"]["n"] == 3
    assert result["en"]["roc_auc"] == pytest.approx(roc_auc_score([1, 0, 1], [0.8, 0.7, 0.6]))
    assert result["unknown"]["roc_auc"] is None


def test_resampling_an_unknown_statistic_is_an_error():
    with pytest.raises(ValueError, match="'kendall_a' cannot be resampled"):
        stats.bootstrap_ci([0, 1], [0.1, 0.2], statistics=["kendall_a"])


def test_bad_resampling_arguments_are_errors():
    with pytest.raises(ValueError, match="n_resamples must be >= 1"):
        stats.bootstrap_ci([0, 1], [0.1, 0.2], n_resamples=0)
    with pytest.raises(ValueError, match="confidence must be in"):
        stats.paired_bootstrap([0, 1], [0.1, 0.2], [0.2, 0.1], confidence=95)
    with pytest.raises(ValueError, match="differ in length"):
        stats.binary_metrics([0, 1, 1], [0.1, 0.2])

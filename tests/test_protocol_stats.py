"""The field's protocols in `evaluation/stats.py`, each against an independent computation:
scipy's correlations per document / per system, sklearn's LinearRegression on one-hot
systems (FRANK), Williams' formula written out, sklearn's balanced accuracy and AggreFact's
threshold loop."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from sklearn.linear_model import LinearRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.preprocessing import OneHotEncoder

from seahorse_t5x.evaluation import protocol_stats, stats, unit_bootstrap

TOL = 1e-9


def _summeval_like(seed=0, documents=12, systems=6):
    rng = np.random.default_rng(seed)
    doc, sys_, human, metric = [], [], [], []
    for d in range(documents):
        for s in range(systems):
            doc.append(f"d{d}")
            sys_.append(f"M{s}")
            # Means of three 1-5 expert scores, as SummEval's.
            human.append(rng.integers(1, 6, size=3).mean())
            metric.append(rng.normal() + 0.3 * human[-1])
    human, metric = np.array(human), np.array(metric)
    human[doc.index("d3") : doc.index("d3") + systems] = 5.0  # a constant document
    metric[doc.index("d5") : doc.index("d5") + systems] = 0.25  # a constant metric
    return doc, sys_, human, metric


def _scipy(kind, x, y):
    if kind == "kendall":
        return scipy_stats.kendalltau(x, y).statistic
    if kind == "spearman":
        return scipy_stats.spearmanr(x, y).statistic
    return scipy_stats.pearsonr(x, y).statistic


def test_summary_level_is_the_mean_of_per_document_scipy_correlations_skipping_constants():
    doc, sys_, human, metric = _summeval_like()
    result = protocol_stats.summary_level(doc, human, metric)
    doc = np.array(doc)
    for kind in protocol_stats.CORRELATIONS:
        values = []
        for d in dict.fromkeys(doc):
            h, m = human[doc == d], metric[doc == d]
            if len(set(h)) == 1 or len(set(m)) == 1:
                continue
            values.append(_scipy(kind, m, h))
        assert abs(result[kind] - np.mean(values)) < TOL
    assert result["n_documents"] == 12
    assert result["n_used"] == 10
    assert result["skipped"] == {"single_summary": 0, "constant_human": 1, "constant_metric": 1}


def test_system_level_correlates_per_system_means():
    doc, sys_, human, metric = _summeval_like(seed=1)
    result = protocol_stats.system_level(sys_, human, metric)
    sys_ = np.array(sys_)
    names = list(dict.fromkeys(sys_))
    h = [human[sys_ == s].mean() for s in names]
    m = [metric[sys_ == s].mean() for s in names]
    for kind in protocol_stats.CORRELATIONS:
        assert abs(result[kind] - _scipy(kind, m, h)) < TOL
    assert result["n_systems"] == 6


def test_summary_level_with_every_document_constant_is_none_with_a_reason():
    result = protocol_stats.summary_level(["a", "a", "b"], [1, 1, 2], [0.1, 0.2, 0.3])
    assert result["kendall"] is None
    assert result["skipped"] == {"single_summary": 1, "constant_human": 1, "constant_metric": 0}
    assert "skipped" in result["reasons"]["kendall"]


def _frank_like(seed=2, n=90):
    rng = np.random.default_rng(seed)
    systems = np.array([f"sys{i % 5}" for i in range(n)])
    # Factuality in [0, 1] with a few distinct values: residual ties across systems.
    human = rng.integers(0, 4, size=n) / 3.0
    metric = human + rng.normal(0, 0.3, size=n) + (systems == "sys2") * 0.5
    return systems, human, metric


def _frank_residuals(values, systems):
    q = OneHotEncoder(handle_unknown="ignore").fit_transform(np.asarray(systems).reshape(-1, 1))
    return values - LinearRegression().fit(q, values).predict(q)


def test_partial_correlation_matches_frank_regression_on_one_hot_systems():
    systems, human, metric = _frank_like()
    result = protocol_stats.partial_correlation(human, metric, systems)
    rx, ry = _frank_residuals(metric, systems), _frank_residuals(human, systems)
    assert np.allclose(protocol_stats.residuals(metric, systems), rx, atol=1e-12)
    assert abs(result["pearson"] - scipy_stats.pearsonr(rx, ry).statistic) < TOL
    # Residuals equal up to float noise are ties: rounding them away gives scipy's ranks.
    expected = scipy_stats.spearmanr(np.round(rx, 9), np.round(ry, 9)).statistic
    assert abs(result["spearman"] - expected) < TOL
    assert result["n_groups"] == 5


def test_tie_aware_ranks_treat_float_noise_as_ties():
    values = np.array([1 / 3, 0.1 + 0.2 - 0.3 + 1 / 3, 2.0, 0.0])
    assert values[0] != values[1]  # float noise
    assert list(protocol_stats.tie_aware_ranks(values)) == [2.5, 2.5, 4.0, 1.0]
    assert list(scipy_stats.rankdata(values)) != [2.5, 2.5, 4.0, 1.0]


def test_williams_test_matches_the_formula_written_out():
    r12, r13, r23, n = 0.62, 0.48, 0.55, 120
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23))
    t /= math.sqrt(2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3)
    p = scipy_stats.t.sf(t, n - 3)  # one-sided: 1 - CDF(t)
    result = protocol_stats.williams_test(r12, r13, r23, n)
    assert abs(result["t"] - t) < TOL and abs(result["p_value"] - p) < TOL
    assert result["df"] == n - 3 and not result["swapped"]
    swapped = protocol_stats.williams_test(r13, r12, r23, n)
    assert swapped["swapped"] and abs(swapped["t"] - t) < TOL


def test_williams_compare_on_partial_residuals():
    systems, human, metric = _frank_like()
    other = metric + np.random.default_rng(5).normal(0, 0.5, size=metric.size)
    result = protocol_stats.williams_compare(human, metric, other, groups=systems)
    rx, ry, rz = (_frank_residuals(v, systems) for v in (metric, other, human))
    r12, r13 = scipy_stats.pearsonr(rx, rz).statistic, scipy_stats.pearsonr(ry, rz).statistic
    r23 = scipy_stats.pearsonr(rx, ry).statistic
    assert abs(result["a"] - r12) < TOL and abs(result["r_ab"] - r23) < TOL
    expected = protocol_stats.williams_test(max(r12, r13), min(r12, r13), r23, metric.size)
    assert abs(result["p_value"] - expected["p_value"]) < TOL


def test_balanced_accuracy_at_half_counts_exactly_half_as_unsupported():
    labels = np.array([1, 1, 0, 0, 1, 0, 1])
    scores = np.array([0.9, 0.5, 0.5, 0.1, 0.7, 0.6, 0.51])
    result = protocol_stats.threshold_metrics(labels, scores)
    expected = balanced_accuracy_score(labels, (scores > 0.5).astype(int))
    assert abs(result["balanced_accuracy"] - expected) < TOL
    # 0.5 predicted unsupported: positives 3/4, negatives 2/3.
    assert abs(result["balanced_accuracy"] - (3 / 4 + 2 / 3) / 2) < TOL


def _aggrefact_choose_best_threshold(labels, scores):
    best_ba, best_t = 0.0, 0.0
    for p in np.arange(0, 100, 0.2):
        t = np.percentile(scores, p)
        ba = balanced_accuracy_score(labels, [1 if s > t else 0 for s in scores])
        if ba >= best_ba:
            best_ba, best_t = ba, t
    return best_t, best_ba


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_threshold_is_aggrefacts_rule(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=80)
    # Rounded scores: many candidates tie, so "the last one >= the best" matters.
    scores = np.round(labels * 0.3 + rng.random(80), 1)
    threshold, accuracy = protocol_stats.best_threshold(labels, scores)
    expected_t, expected_ba = _aggrefact_choose_best_threshold(labels, scores)
    assert abs(threshold - expected_t) < TOL and abs(accuracy - expected_ba) < TOL
    test_labels = rng.integers(0, 2, size=50)
    test_scores = rng.random(50)
    tuned = protocol_stats.tuned_threshold_metrics(labels, scores, test_labels, test_scores)
    assert tuned["threshold"] == threshold
    expected = balanced_accuracy_score(test_labels, (test_scores > threshold).astype(int))
    assert abs(tuned["balanced_accuracy"] - expected) < TOL


def test_level_bootstrap_resamples_documents_and_is_seeded():
    doc, sys_, human, metric = _summeval_like(seed=3)
    ci = unit_bootstrap.level_bootstrap_ci("summary", doc, human, metric, n_resamples=200, seed=7)
    again = unit_bootstrap.level_bootstrap_ci(
        "summary", doc, human, metric, n_resamples=200, seed=7
    )
    assert ci == again
    # Independently: resample the per-document values with the same indices.
    _, per_doc, _ = protocol_stats.per_document_correlations(doc, human, metric)
    indices = np.random.default_rng(7).integers(0, 12, size=(200, 12))
    draws = np.nanmean(per_doc[indices, 0], axis=1)
    low, high = np.percentile(draws, [2.5, 97.5])
    assert abs(ci["kendall"]["low"] - low) < TOL and abs(ci["kendall"]["high"] - high) < TOL
    system_ci = unit_bootstrap.level_bootstrap_ci(
        "system", sys_, human, metric, n_resamples=50, seed=1
    )
    assert system_ci["pearson"]["n_resamples"] == 50
    assert (
        system_ci["pearson"]["estimate"]
        == protocol_stats.system_level(sys_, human, metric)["pearson"]
    )


def test_level_paired_bootstrap_uses_the_same_documents_for_both_metrics():
    doc, sys_, human, metric = _summeval_like(seed=4)
    result = unit_bootstrap.level_paired_bootstrap(
        "summary", doc, human, metric, metric, "spearman", n_resamples=100
    )
    assert result["difference"] == 0.0 and result["low"] == 0.0 and result["high"] == 0.0
    assert result["p_value"] == 1.0


def test_balanced_accuracy_bootstrap_matches_resampled_sklearn():
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 2, size=40)
    scores = rng.random(40)
    ci = unit_bootstrap.balanced_accuracy_bootstrap_ci(labels, scores, 0.5, n_resamples=30, seed=3)
    counts = stats.resample_counts(np.random.default_rng(3), 30, 40)
    draws = []
    for row in counts.astype(int):
        index = np.repeat(np.arange(40), row)
        draws.append(balanced_accuracy_score(labels[index], (scores[index] > 0.5).astype(int)))
    low, high = np.percentile(draws, [2.5, 97.5])
    assert abs(ci["low"] - low) < TOL and abs(ci["high"] - high) < TOL


def test_williams_on_identical_metrics_says_there_is_nothing_to_test():
    result = protocol_stats.williams_test(0.5, 0.5, 1.0, 50)
    assert result["t"] is None and "perfectly correlated" in result["reason"]


def test_partial_correlation_of_flat_systems_is_undefined_not_float_noise():
    # Every system's human scores are flat: the residuals are zeros plus float noise.
    systems = ["a", "a", "a", "b", "b", "b"]
    human = [0.1 + 0.2, 0.3, 0.3, 1 / 3, 1 / 3, 1 / 3]
    result = protocol_stats.partial_correlation(human, [0.1, 0.5, 0.9, 0.2, 0.4, 0.8], systems)
    assert result["pearson"] is None and "flat" in result["reasons"]["pearson"]

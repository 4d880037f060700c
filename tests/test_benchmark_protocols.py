"""An external metric's per-item files for SummEval, FRANK, LLM-AggreFact and AggreFact
go through `import-scores` (joined by each benchmark's natural key, under its released
field names) and `report`; report.json's protocol statistics equal an independent
computation (scipy, sklearn's LinearRegression on one-hot systems, sklearn's balanced
accuracy, AggreFact's threshold loop)."""

import csv
import json
import pathlib
import random

import numpy as np
import pytest
from scipy import stats as scipy_stats
from sklearn.linear_model import LinearRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.preprocessing import OneHotEncoder

from seahorse_t5x import cli
from seahorse_t5x.data.benchmarks import aggrefact, registry

DATA = pathlib.Path(__file__).parent / "testdata" / "benchmarks"
TOL = 1e-9
METRICS = ("metric_a", "metric_b")


def _items(name, path):
    return [e for r in registry.get(name).read_all(DATA / path) for e in r.examples]


def _write_external(directory: pathlib.Path) -> dict:
    """Each benchmark's external files, one per metric, as a metric run on the released
    files writes them; returns {benchmark: {metric: scores by item key}}."""
    rng = random.Random(0)
    scores: dict = {}
    for metric in METRICS:
        # SummEval: JSON Lines keyed by its `id` and `model_id`, one score per summary.
        summaries = {(e["gem_id"], e["system"]) for e in _items("summeval", "summeval")}
        values = {key: round(rng.random(), 4) for key in sorted(summaries)}
        with open(directory / f"summeval_{metric}.jsonl", "w") as f:
            for (doc, system), score in values.items():
                f.write(json.dumps({"id": doc, "model_id": system, "score": score}) + "\n")
            f.write(json.dumps({"id": "dm-test-unknown", "model_id": "M0", "score": 0.1}) + "\n")
        scores.setdefault("summeval", {})[metric] = values
        # FRANK: its submission format, a JSON list of hash, model_name, score.
        frank = {
            (e["gem_id"], e["system"]): e["label"] + rng.random() for e in _items("frank", "frank")
        }
        records = [{"hash": h, "model_name": m, "score": s} for (h, m), s in frank.items()]
        records.append(dict(records[0]))  # a duplicated key: neither row is used
        json.dump(records, open(directory / f"frank_{metric}.json", "w"))
        scores.setdefault("frank", {})[metric] = frank
        # LLM-AggreFact: CSV of dataset, doc, claim (texts with quotes and newlines), score.
        llm = {}
        with open(directory / f"llm_aggrefact_{metric}.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["dataset", "doc", "claim", "score"])
            for i, e in enumerate(_items("llm_aggrefact", "llm_aggrefact")):
                score = 0.5 if i % 4 == 0 else round(rng.random(), 3)  # exactly 0.5: unsupported
                llm[(e["split"], e["dataset"], e["hypothesis"])] = score
                writer.writerow([e["dataset"], e["premise"], e["hypothesis"], score])
        scores.setdefault("llm_aggrefact", {})[metric] = llm
        # AggreFact: CSV of dataset, id (numeric-looking for XSum), model_name, score.
        agg = {}
        with open(directory / f"aggrefact_{metric}.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["dataset", "origin", "id", "model_name", "score"])
            for e in _items("aggrefact", "aggrefact"):
                score = round(rng.random() * 0.6 + 0.3 * e["label"], 3)
                agg[(e["dataset"], e["gem_id"], e["system"])] = score
                writer.writerow([e["dataset"], e["origin"], e["gem_id"], e["system"], score])
        scores.setdefault("aggrefact", {})[metric] = agg
    return scores


PATHS = {
    "summeval": ("summeval", "summeval_{m}.jsonl"),
    "frank": ("frank", "frank_{m}.json"),
    "llm_aggrefact": ("llm_aggrefact", "llm_aggrefact_{m}.csv"),
    "aggrefact": ("aggrefact", "aggrefact_{m}.csv"),
}


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("protocols")
    scores = _write_external(tmp)
    joins = {}
    for name, (path, pattern) in PATHS.items():
        for metric in METRICS:
            output = tmp / "scores" / f"{metric}.{name}.jsonl"
            code = cli.main(
                [
                    "import-scores",
                    "--external",
                    str(tmp / pattern.format(m=metric)),
                    "--metric",
                    metric,
                    "--benchmark",
                    name,
                    "--benchmark_path",
                    str(DATA / path),
                    "--output",
                    str(output),
                ]
            )
            assert code == 0, name
            joins[(name, metric)] = json.loads(
                output.with_name(f"{metric}.{name}.join.json").read_text()
            )
    for join in (tmp / "scores").glob("*.join.json"):
        join.unlink()
    code = cli.main(
        [
            "report",
            "--scores",
            str(tmp / "scores"),
            "--output_dir",
            str(tmp / "report"),
            "--bootstrap",
            "200",
        ]
    )
    assert code == 0
    report = json.loads((tmp / "report" / "report.json").read_text())
    return scores, joins, report, tmp / "report"


def _section(report, name):
    return report["scores"]["protocols"][name]


def _result(section, metric, question):
    (entry,) = [
        r for r in section["results"] if r["metric"] == metric and r["question"] == question
    ]
    return entry


def test_joins_count_unmatched_and_duplicated_rows(reported):
    _, joins, _, _ = reported
    summeval = joins[("summeval", "metric_a")]
    # One score per summary joins all four dimensions; one external row matches nothing.
    assert (summeval["matched_items"], summeval["unmatched_rows"]) == (64, 1)
    assert summeval["key"] == ["gem_id", "system"] and summeval["benchmark_dropped"] == 8
    frank = joins[("frank", "metric_a")]
    assert (frank["matched_items"], frank["duplicated_keys"], frank["unscored_items"]) == (17, 1, 1)
    llm = joins[("llm_aggrefact", "metric_a")]
    assert llm["key"] == ["dataset", "article", "summary"] and llm["matched_items"] == 27
    agg = joins[("aggrefact", "metric_a")]
    assert agg["key"] == ["dataset", "gem_id", "system"] and agg["matched_items"] == 28


def test_summeval_summary_and_system_level_equal_scipy(reported):
    scores, _, report, out = reported
    section = _section(report, "summeval")
    items = _items("summeval", "summeval")
    for dimension in ("coherence", "consistency"):
        chosen = [e for e in items if e["question"] == dimension]
        score = scores["summeval"]["metric_a"]
        entry = _result(section, "metric_a", dimension)
        per_doc = {"kendall": [], "spearman": [], "pearson": []}
        for doc in dict.fromkeys(e["gem_id"] for e in chosen):
            human = [e["label"] for e in chosen if e["gem_id"] == doc]
            metric = [score[(doc, e["system"])] for e in chosen if e["gem_id"] == doc]
            if len(set(human)) == 1 or len(set(metric)) == 1:
                continue
            per_doc["kendall"].append(scipy_stats.kendalltau(metric, human).statistic)
            per_doc["spearman"].append(scipy_stats.spearmanr(metric, human).statistic)
            per_doc["pearson"].append(scipy_stats.pearsonr(metric, human).statistic)
        systems = sorted({e["system"] for e in chosen})
        human_means = [np.mean([e["label"] for e in chosen if e["system"] == s]) for s in systems]
        metric_means = [
            np.mean([score[(e["gem_id"], s)] for e in chosen if e["system"] == s]) for s in systems
        ]
        for kind, values in per_doc.items():
            assert abs(entry["summary_level"][kind] - np.mean(values)) < TOL
        assert (
            abs(
                entry["system_level"]["pearson"]
                - scipy_stats.pearsonr(metric_means, human_means).statistic
            )
            < TOL
        )
        assert (
            abs(
                entry["system_level"]["kendall"]
                - scipy_stats.kendalltau(metric_means, human_means).statistic
            )
            < TOL
        )
        ci = entry["summary_level"]["ci"]["kendall"]
        assert ci["low"] <= ci["high"] and ci["n_resamples"] == 200
    consistency = _result(section, "metric_a", "consistency")["summary_level"]
    assert consistency["skipped"]["constant_human"] == 1 and consistency["n_used"] == 3
    assert (out / "plots" / "summeval_system_level.png").is_file()
    assert "SummEval: summary- and system-level correlations" in (out / "tables.md").read_text()


def _frank_residuals(values, systems):
    q = OneHotEncoder(handle_unknown="ignore").fit_transform(np.asarray(systems).reshape(-1, 1))
    return np.asarray(values) - LinearRegression().fit(q, values).predict(q)


def test_frank_plain_and_partial_correlations_equal_franks_computation(reported):
    scores, _, report, _ = reported
    section = _section(report, "frank")
    items = _items("frank", "frank")
    score = scores["frank"]["metric_a"]
    # The duplicated key is left out: the item of records[0] has no score.
    first = next(iter(score))
    kept = [e for e in items if (e["gem_id"], e["system"]) != first]
    entry = _result(section, "metric_a", "factuality")
    for split, dataset in (("all", "all"), ("test", "all"), ("all", "bbc")):
        chosen = [
            e for e in kept if split in ("all", e["split"]) and dataset in ("all", e["dataset"])
        ]
        human = np.array([e["label"] for e in chosen])
        metric = np.array([score[(e["gem_id"], e["system"])] for e in chosen])
        systems = [e["system"] for e in chosen]
        (cell,) = [c for c in entry["cells"] if c["split"] == split and c["dataset"] == dataset]
        assert cell["n"] == len(chosen)
        assert abs(cell["pearson"] - scipy_stats.pearsonr(metric, human).statistic) < TOL
        assert abs(cell["spearman"] - scipy_stats.spearmanr(metric, human).statistic) < TOL
        rx, ry = _frank_residuals(metric, systems), _frank_residuals(human, systems)
        assert abs(cell["partial_pearson"] - scipy_stats.pearsonr(rx, ry).statistic) < TOL
        expected = scipy_stats.spearmanr(np.round(rx, 9), np.round(ry, 9)).statistic
        assert abs(cell["partial_spearman"] - expected) < TOL
    (williams,) = [
        s for s in section["significance"] if s["split"] == "all" and s["dataset"] == "all"
    ]
    assert williams["partial"]["df"] == williams["n_items"] - 3


def test_llm_aggrefact_balanced_accuracy_at_half_equals_sklearn(reported):
    scores, _, report, _ = reported
    entry = _result(_section(report, "llm_aggrefact"), "metric_a", "supported")
    score = scores["llm_aggrefact"]["metric_a"]
    test = [e for e in _items("llm_aggrefact", "llm_aggrefact") if e["split"] == "test"]
    values = []
    for dataset in ("AggreFact-CNN", "Wice", "RAGTruth"):
        chosen = [e for e in test if e["dataset"] == dataset]
        labels = [e["label"] for e in chosen]
        predicted = [int(score[("test", dataset, e["hypothesis"])] > 0.5) for e in chosen]
        expected = balanced_accuracy_score(labels, predicted)
        (got,) = [d for d in entry["datasets"] if d["dataset"] == dataset]
        assert abs(got["balanced_accuracy"] - expected) < TOL
        values.append(expected)
    assert [d["dataset"] for d in entry["datasets"]] == ["AggreFact-CNN", "Wice", "RAGTruth"]
    assert abs(entry["mean"]["balanced_accuracy"] - np.mean(values)) < TOL
    assert entry["mean"]["ci"]["low"] <= entry["mean"]["ci"]["high"]
    assert len(entry["dev_tuned"]["datasets"]) == 3


def _choose_best_threshold(labels, scores):
    best_ba, best_t = 0.0, 0.0
    for p in np.arange(0, 100, 0.2):
        t = np.percentile(scores, p)
        ba = balanced_accuracy_score(labels, [1 if s > t else 0 for s in scores])
        if ba >= best_ba:
            best_ba, best_t = ba, t
    return best_t


def test_aggrefact_val_tuned_thresholds_equal_aggrefacts_rule(reported):
    scores, _, report, _ = reported
    entry = _result(_section(report, "aggrefact"), "metric_b", "consistency")
    score = scores["aggrefact"]["metric_b"]
    items = _items("aggrefact", "aggrefact")

    def arrays(chosen):
        return [e["label"] for e in chosen], [
            score[(e["dataset"], e["gem_id"], e["system"])] for e in chosen
        ]

    for cell in entry["datasets"]:
        same = [
            e for e in items if (e["origin"], e["dataset"]) == (cell["origin"], cell["dataset"])
        ]
        val_labels, val_scores = arrays([e for e in same if e["split"] == "validation"])
        threshold = _choose_best_threshold(val_labels, val_scores)
        test_labels, test_scores = arrays([e for e in same if e["split"] == "test"])
        expected = balanced_accuracy_score(test_labels, [int(s > threshold) for s in test_scores])
        assert abs(cell["threshold"] - threshold) < TOL
        assert abs(cell["balanced_accuracy"] - expected) < TOL
    assert len(entry["datasets"]) == 4
    for sota in entry["sota"]:
        same = [
            e
            for e in items
            if e["origin"] == sota["origin"] and e["system"] in aggrefact.AGGREFACT_SOTA
        ]
        threshold = _choose_best_threshold(*arrays([e for e in same if e["split"] == "validation"]))
        test_labels, test_scores = arrays([e for e in same if e["split"] == "test"])
        expected = balanced_accuracy_score(test_labels, [int(s > threshold) for s in test_scores])
        assert abs(sota["balanced_accuracy"] - expected) < TOL
    assert [s["benchmark"] for s in entry["sota"]] == ["AggreFact-CNN-SOTA", "AggreFact-XSum-SOTA"]


def test_report_benchmark_flag_keeps_one_benchmark_and_counts_its_coverage(reported, tmp_path):
    _, _, _, report_dir = reported
    code = cli.main(
        [
            "report",
            "--scores",
            str(report_dir.parent / "scores"),
            "--output_dir",
            str(tmp_path / "frank"),
            "--bootstrap",
            "0",
            "--only_benchmark",
            "frank",
            "--benchmark_path",
            str(DATA / "frank"),
        ]
    )
    assert code == 0
    report = json.loads((tmp_path / "frank" / "report.json").read_text())
    assert list(report["scores"]["protocols"]) == ["frank"]
    coverage = report["scores"]["protocols"]["frank"]["coverage"]
    assert coverage["items"] == {"factuality": 18} and coverage["dropped"] == 2
    assert coverage["scored"] == {"metric_a": {"factuality": 17}, "metric_b": {"factuality": 17}}
    assert "metric_a scored 17 of 18 items" in (tmp_path / "frank" / "tables.md").read_text()


def test_aggrefact_rows_without_split_and_origin_are_reported_as_such(reported, tmp_path):
    _, _, _, report_dir = reported
    scores = tmp_path / "scores"
    scores.mkdir()
    for metric in METRICS:
        lines = (
            (report_dir.parent / "scores" / f"{metric}.aggrefact.jsonl").read_text().splitlines()
        )
        rows = [json.loads(line) for line in lines]
        for row in rows:
            del row["split"], row["origin"]
        (scores / f"{metric}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = cli.main(
        ["report", "--scores", str(scores), "--output_dir", str(tmp_path / "r"), "--bootstrap", "0"]
    )
    assert code == 0
    section = json.loads((tmp_path / "r" / "report.json").read_text())["scores"]["protocols"][
        "aggrefact"
    ]
    assert section["missing_fields"] == ["split", "origin"]
    assert all(r["datasets"] == [] and r["sota"] == [] for r in section["results"])
    assert "no score row carries split, origin" in (tmp_path / "r" / "tables.md").read_text()

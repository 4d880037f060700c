"""A benchmark declared in this module alone (registered through `registry.register`) shows
up in `report` with its protocol's numbers: nothing else in the project names it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as scipy_stats
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from seahorse_t5x import cli
from seahorse_t5x.data.benchmarks import common, registry

LABELS = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
SCORES = [0.9, 0.2, 0.6, 0.4, 0.55, 0.1, 0.8, 0.3, 0.7, 0.45]


def _read(path: str) -> list[common.ReadResult]:
    examples = [
        {"premise": "An article.", "hypothesis": f"Summary {i}.", "label": y, "gem_id": str(i)}
        for i, y in enumerate(LABELS)
    ]
    return [common.ReadResult(path, examples, [])]


def _declare(name: str, protocol: registry.Protocol, **extra) -> registry.Benchmark:
    return registry.Benchmark(
        name=name,
        title=name.capitalize(),
        read=_read,
        dimensions=("faithful",),
        label_kind=registry.LABEL_BINARY,
        key=("gem_id",),
        protocol=protocol,
        env=f"SEAHORSE_{name.upper()}_PATH",
        source="this test",
        questions={"faithful": 4},
        **extra,
    )


PAPER = _declare(
    "toyfact",
    registry.Protocol(registry.PAPER, ("pearson", "roc_auc"), description="rho and ROC-AUC"),
    display_names={"faithful": "Faithful"},
    table=registry.PaperTable(9, "Table 9: Toyfact"),
)
THRESHOLD = _declare(
    "toyclaims",
    registry.Protocol(
        registry.FIXED_THRESHOLD,
        ("balanced_accuracy",),
        by=("dataset",),
        threshold="score > 0.5",
        description="balanced accuracy at score > 0.5",
    ),
)


@pytest.fixture
def declared():
    for benchmark in (PAPER, THRESHOLD):
        registry.register(benchmark)
    yield
    for benchmark in (PAPER, THRESHOLD):
        registry.unregister(benchmark.name)


def _report(tmp_path, benchmark: str) -> dict:
    scores = tmp_path / f"{benchmark}.jsonl"
    rows = [
        {
            "metric": "m",
            "benchmark": benchmark,
            "question": "faithful",
            "label": y,
            "score": s,
            "gem_id": str(i),
            "dataset": "toy",
        }
        for i, (y, s) in enumerate(zip(LABELS, SCORES, strict=True))
    ]
    scores.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "report"
    argv = ["report", "--scores", str(scores), "--output_dir", str(out), "--bootstrap", "0"]
    assert cli.main([*argv, "--no_plots", "--only_benchmark", benchmark]) == 0
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def test_a_benchmark_declared_here_gets_its_paper_table(tmp_path, declared):
    assert "toyfact" in registry.choices()
    assert registry.benchmark_of_task("toyfact_faithful_score") == ("toyfact", "faithful")
    report = _report(tmp_path, "toyfact")
    (entry,) = report["scores"]["results"]
    rho = scipy_stats.pearsonr(LABELS, SCORES)[0]
    assert entry["pearson"] == pytest.approx(rho)
    assert entry["roc_auc"] == pytest.approx(roc_auc_score(LABELS, SCORES))
    (table,) = [t for t in report["tables"] if t["name"] == "table9"]
    assert table["title"] == "Table 9: Toyfact, Pearson ρ / ROC-AUC"
    assert table["header"] == ["Metric", "Faithful"]
    roc = roc_auc_score(LABELS, SCORES)
    assert table["rows"] == [["m", f"{rho:.2f}"[1:] + "/" + f"{roc:.2f}"[1:]]]


def test_a_benchmark_declared_here_gets_its_protocol_section(tmp_path, declared):
    report = _report(tmp_path, "toyclaims")
    section = report["scores"]["protocols"]["toyclaims"]
    assert section["protocol"]["kind"] == registry.FIXED_THRESHOLD
    (entry,) = section["results"]
    (dataset,) = entry["datasets"]
    predicted = (np.asarray(SCORES) > 0.5).astype(int)
    expected = balanced_accuracy_score(LABELS, predicted)
    assert dataset["dataset"] == "toy"
    assert dataset["balanced_accuracy"] == pytest.approx(expected)
    assert entry["mean"]["balanced_accuracy"] == pytest.approx(expected)
    (table,) = [t for t in report["tables"] if t["name"] == "toyclaims_protocol"]
    assert table["title"] == "Toyclaims: balanced accuracy at score > 0.5"
    assert table["rows"] == [["m", f"{expected:.3f}"[1:], f"{expected:.3f}"[1:]]]


def test_registering_a_taken_name_is_refused(declared):
    with pytest.raises(ValueError, match="'toyfact' is declared twice"):
        registry.register(PAPER)
    with pytest.raises(ValueError, match="'frank' is declared twice"):
        registry.register(_declare("frank", PAPER.protocol))

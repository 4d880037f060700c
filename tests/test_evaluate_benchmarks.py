"""`evaluate --benchmark NAME --benchmark_path PATH` end to end on the fixtures of
SummEval, FRANK, LLM-AggreFact and AggreFact: a tiny model scores the benchmark's SeqIO
score tasks, its score rows carry what the protocol needs, and `report` reads them."""

import json
import pathlib

import pytest
import runner_fixtures
import seqio

from seahorse_t5x import cli, constants
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import task_rows

DATA = pathlib.Path(__file__).parent / "testdata" / "benchmarks"
PATHS = {
    "summeval": "summeval",
    "frank": "frank",
    "llm_aggrefact": "llm_aggrefact",
    "aggrefact": "aggrefact",
}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    runner_fixtures.enable_compilation_cache()
    root = tmp_path_factory.mktemp("evaluate_benchmarks")
    runner_fixtures.save_tiny_run(root / "run", seed=3)
    return root / "run"


def test_registered_benchmarks_have_score_tasks_per_dimension_and_dataset():
    import seahorse_t5x.tasks  # noqa: F401

    registered = set(seqio.TaskRegistry.names())
    assert {"summeval_coherence_score", "summeval_relevance_score"} <= registered
    assert {"frank_factuality_score", "frank_factuality_score.bbc"} <= registered
    assert "llm_aggrefact_supported_score.factcheck_gpt" in registered
    assert {"aggrefact_consistency_score.cnndm", "aggrefact_consistency_score.xsum"} <= registered
    assert len(seqio.get_mixture_or_task("summeval_all_score").tasks) == 4
    assert task_rows.benchmark_of_task("frank_factuality_score.bbc", []) == ("frank", "factuality")


def _evaluate(checkpoint, name, split, out):
    return cli.main(
        [
            "evaluate",
            "--checkpoint",
            str(checkpoint),
            "--benchmark",
            name,
            "--benchmark_path",
            str(DATA / PATHS[name]),
            "--split",
            split,
            "--output_dir",
            str(out),
            "--input_length",
            "64",
            "--batch_size",
            "8",
            "--metric",
            "tiny",
            "--compilation_cache",
            runner_fixtures.compilation_cache_dir(),
        ]
    )


def _rows(out):
    rows = []
    for path in sorted((out / "scores").glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows


@pytest.mark.slow
def test_evaluate_benchmark_end_to_end_and_report(checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    outputs = []
    expected = {
        ("summeval", "test"): 64,
        ("frank", "test"): 12,
        ("llm_aggrefact", "test"): 15,
        ("aggrefact", "validation"): 12,
        ("aggrefact", "test"): 16,
    }
    for (name, split), count in expected.items():
        out = tmp_path / f"{name}_{split}"
        assert _evaluate(checkpoint, name, split, out) == 0, name
        rows = _rows(out)
        assert len(rows) == count, name
        assert {r["benchmark"] for r in rows} == {name}
        assert {r["split"] for r in rows} == {split}
        assert set(r["question"] for r in rows) == set(registry.get(name).dimensions)
        outputs.append(out / "scores")
    aggrefact_rows = _rows(tmp_path / "aggrefact_test")
    assert {r["origin"] for r in aggrefact_rows} == {"cnndm", "xsum"}
    assert "34687720" in {r["gem_id"] for r in aggrefact_rows}
    report_dir = tmp_path / "report"
    code = cli.main(
        [
            "report",
            "--scores",
            *map(str, outputs),
            "--output_dir",
            str(report_dir),
            "--bootstrap",
            "50",
        ]
    )
    assert code == 0
    protocols = json.loads((report_dir / "report.json").read_text())["scores"]["protocols"]
    assert set(protocols) == {"summeval", "frank", "llm_aggrefact", "aggrefact"}
    (aggrefact,) = protocols["aggrefact"]["results"]
    assert all(cell["threshold"] is not None for cell in aggrefact["datasets"])
    summeval = [r for r in protocols["summeval"]["results"] if r["question"] == "consistency"]
    assert summeval[0]["summary_level"]["skipped"]["constant_human"] == 1

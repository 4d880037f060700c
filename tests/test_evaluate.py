"""`seahorse-t5x evaluate`: P(yes) per example, the score-file contract, metrics and table."""

import json

import jax.numpy as jnp
import numpy as np
import pytest
import runner_fixtures
from scipy import stats as scipy_stats
from sklearn.metrics import roc_auc_score

from seahorse_t5x import cli
from seahorse_t5x.data import ratings, scorefiles
from seahorse_t5x.evaluation import tables, task_rows
from seahorse_t5x.formats import vocab
from seahorse_t5x.formats.task_names import question_of_task
from seahorse_t5x.model import mt5
from seahorse_t5x.scoring import baselines, evaluate, task_examples

pytestmark = pytest.mark.usefixtures("runner_tasks")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("eval") / "run"
    config, params = runner_fixtures.save_tiny_run(model_dir, seed=3, step=7)
    return model_dir, config, params


def test_benchmark_tasks_score_rows_go_to_their_benchmark():
    cases = {
        "mface_attribution_5lang": ("mface", "attribution"),
        "mface_quality": ("mface", "quality"),
        "true_frank": ("true", 4),
        "metal_task_quality.de": ("metal", "task_quality"),
        "seahorse_q4_score": ("seahorse", None),
        "ice_q4_k2_stratified": ("seahorse", None),
    }
    for task, expected in cases.items():
        assert task_rows.benchmark_of_task(task, ratings.rating_questions()) == expected, task
    examples = task_examples.TaskExamples(
        "metal_hallucinations.de", 4, [np.zeros(3, np.int32)] * 2, np.array([1.0, 0.5]),
        [{"gem_id": "a"}, {"gem_id": "b"}],
    )  # fmt: skip
    rows = task_rows.score_rows(examples, np.array([0.25, 0.75]), "m")
    assert [(r["benchmark"], r["question"], r["label"], r["score"]) for r in rows] == [
        ("metal", "hallucinations", 1, 0.25),
        ("metal", "hallucinations", 0.5, 0.75),
    ]


def test_question_of_task_names():
    assert question_of_task("seahorse_all_q4_score") == 4
    assert question_of_task("seahorse_q2_score.de") == 2


def test_metrics_table_puts_each_task_beside_the_majority_baseline():
    results = {
        "seahorse_q4_score": {
            "question": 4,
            "n": 10,
            "positive_rate": 0.6,
            "pearson": 0.25,
            "roc_auc": 0.6871,
            "majority_baseline": baselines.majority_metrics([1] * 6 + [0] * 4),
        },
        "mface_attribution": {
            "question": "attribution",
            "n": 3,
            "positive_rate": None,
            "pearson": -0.5,
            "roc_auc": None,
            "majority_baseline": baselines.majority_metrics([0.5, 1.0, 0.0]),
        },
    }
    assert tables.task_metrics_table(results, "m (test)").to_markdown() == (
        "### m (test)\n\n"
        "| question | task | n | Yes rate | Pearson rho | ROC-AUC | majority rho | majority ROC |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| Q4 attribution | seahorse_q4_score | 10 | .60 | .25 | .69 | - | .50 |\n"
        "| Attribution | mface_attribution | 3 | - | -.50 | - | - | - |\n"
    )


def test_evaluate_writes_score_files_metrics_and_table(checkpoint, tmp_path, capsys):
    model_dir, config, params = checkpoint
    out = tmp_path / "eval"
    code = cli.main(
        [
            "evaluate",
            "--checkpoint",
            str(model_dir),
            "--tasks",
            runner_fixtures.SCORE_TASK,
            "--split",
            "test",
            "--output_dir",
            str(out),
            "--batch_size",
            "16",
            "--input_length",
            "64",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    score_path = out / "scores" / f"{runner_fixtures.SCORE_TASK}.jsonl"
    rows = [json.loads(line) for line in score_path.read_text().splitlines()]
    assert len(rows) == 40
    for field in ("metric", "benchmark", "question", "label", "score", "gem_id", "language"):
        assert field in rows[0], field
    assert rows[0]["metric"] == "run" and rows[0]["benchmark"] == "seahorse"
    assert [r["gem_id"] for r in rows] == [f"synthetic-test-{i}" for i in range(40)]
    frame = scorefiles.read_score_file(score_path)
    assert len(frame) == 40

    labels = np.array([r["label"] for r in rows], float)
    scores = np.array([r["score"] for r in rows], float)
    assert np.all((scores > 0) & (scores < 1))
    metrics = json.loads((out / "metrics.json").read_text())["tasks"][runner_fixtures.SCORE_TASK]
    assert metrics["n"] == 40
    assert metrics["roc_auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-9)
    assert metrics["pearson"] == pytest.approx(scipy_stats.pearsonr(labels, scores)[0], abs=1e-9)
    table = (out / "metrics.md").read_text()
    assert "| question | task | n |" in table and runner_fixtures.SCORE_TASK in table

    # The bucketed, padded batch gives each example the score of a lone, unpadded pass.
    examples = task_examples.load_task_examples(runner_fixtures.SCORE_TASK, "test", 64)
    yes_id, no_id = vocab.label_token_ids(vocab.get_vocabulary())
    model = mt5.MT5(config)
    for index in (0, 17):
        tokens = jnp.asarray(examples.tokens[index])[None, :]
        logits = model.apply({"params": params}, tokens, jnp.zeros((1, 1), jnp.int32))
        pair = np.asarray(logits[0, 0, [yes_id, no_id]], np.float64)
        expected = np.exp(pair[0]) / np.exp(pair).sum()
        assert scores[index] == pytest.approx(expected, abs=2e-5)


def test_unknown_task_is_a_one_line_error(checkpoint, tmp_path, capsys):
    model_dir, _, _ = checkpoint
    code = cli.main(
        [
            "evaluate",
            "--checkpoint",
            str(model_dir),
            "--tasks",
            "no_such_task",
            "--output_dir",
            str(tmp_path),
        ]
    )
    assert code == 2
    assert "no SeqIO task or mixture named 'no_such_task'" in capsys.readouterr().err


@pytest.mark.parametrize("max_examples", [0, -2, 1.5, True])
def test_max_examples_below_one_is_refused_before_anything_is_read(tmp_path, max_examples):
    from seahorse_t5x import errors

    with pytest.raises(errors.UserError, match="^max_examples must be at least 1"):
        evaluate.evaluate_checkpoint(
            tmp_path / "no_model",
            ["seahorse_q4_score"],
            "test",
            tmp_path / "out",
            max_examples=max_examples,
        )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "tasks, extra, message",
    [
        ("seahorse_q4_score", {}, "`tasks` is one string, not a sequence of task names"),
        ([], {"benchmark_path": "frank.json"}, "`benchmark_path` needs `benchmark`"),
        ([], {}, "give `tasks`"),
        ([], {"benchmark": "nosuch"}, "nosuch"),
    ],
)
def test_tasks_and_benchmark_are_checked_before_anything_is_read(tmp_path, tasks, extra, message):
    from seahorse_t5x import errors

    with pytest.raises(errors.UserError, match=message):
        evaluate.evaluate_checkpoint(
            tmp_path / "no_model", tasks, "test", tmp_path / "out", **extra
        )
    assert not (tmp_path / "out").exists()

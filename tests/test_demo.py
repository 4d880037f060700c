"""The demo pipeline end to end with a tiny configuration (a few steps)."""

import json
import os

import numpy as np
import pytest
import runner_fixtures
from sklearn.metrics import roc_auc_score

from seahorse_t5x import cli, constants, errors
from seahorse_t5x.data import scorefiles, splits
from seahorse_t5x.formats import vocab
from seahorse_t5x.inference import scorer as scorer_lib
from seahorse_t5x.model import checkpoints
from seahorse_t5x.runner import demo

SETTINGS_ENV = (constants.ENV_DATA_DIR, constants.ENV_VOCAB)
# bfloat16 products against float32 on a trained model (docs/scoring.md): P(yes) moves by at
# most this much, and ROC-AUC by at most this.
BF16_MAX_ABS_P_YES = 0.02
BF16_ROC_AUC_CHANGE = 0.002

TINY_DEMO = demo.DemoSettings(
    train_steps=3,
    batch_size=4,
    input_length=128,
    target_length=8,
    eval_period=3,
    validation_max_examples=8,
    split_sizes={"train": 40, "validation": 16, "test": 24},
    model={**demo.DEMO_MODEL, "emb_dim": 32, "num_heads": 2, "head_dim": 16, "mlp_dim": 64},
)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    runner_fixtures.enable_compilation_cache()
    lines: list[str] = []
    out = tmp_path_factory.mktemp("demo") / "out"
    with pytest.MonkeyPatch.context() as mp:
        # The demo must find its data and vocabulary without the environment's help.
        for name in SETTINGS_ENV:
            mp.delenv(name, raising=False)
        result = demo.run_demo(out, TINY_DEMO, log=lines.append)
        assert {name: os.environ.get(name) for name in SETTINGS_ENV} == dict.fromkeys(SETTINGS_ENV)
    return out, result, lines


def test_demo_table_prints_numbers_as_every_table_does():
    results = {
        4: {
            "question": 4,
            "n": 544,
            "positive_rate": 0.5735,
            "pearson": 0.8149,
            "roc_auc": 0.9404,
            "majority_baseline": {"pearson": None, "roc_auc": 0.5},
        },
        2: {
            "question": 2,
            "n": 3,
            "positive_rate": 1.0,
            "pearson": -0.0312,
            "roc_auc": None,
            "majority_baseline": {"pearson": None, "roc_auc": 0.5},
        },
    }
    assert demo._table(results).splitlines()[2:] == [
        "| Q4 attribution | 544 | .57 | .81 | .94 | - | .50 |",
        "| Q2 repetition | 3 | 1.00 | -.03 | - | - | .50 |",
    ]


@pytest.mark.slow
def test_demo_trains_evaluates_and_prints_the_table(demo_run):
    out, result, lines = demo_run
    text = "\n".join(lines)
    assert result["output_dir"] == out
    assert lines[-1].endswith(f"output folder: {out}")
    for q in constants.QUESTIONS:
        assert f"| Q{q} {constants.QUESTION_NAMES[q]} |" in text
    assert "| question | n | Yes rate | rho | ROC-AUC | majority rho | majority ROC |" in text
    assert (out / "model" / "checkpoints" / "3").is_dir()
    assert (out / "model" / "checkpoints" / "best.json").is_file()


@pytest.mark.slow
def test_demo_scores_every_labelled_test_row_per_question(demo_run):
    out, result, _ = demo_run
    rows = [
        json.loads(line)
        for line in (out / "data" / "prepared" / "test.jsonl").read_text().splitlines()
    ]
    metrics = json.loads((out / "evaluation" / "metrics.json").read_text())["tasks"]
    assert sorted(metrics) == sorted(f"seahorse_all_q{q}_score" for q in constants.QUESTIONS)
    for q in constants.QUESTIONS:
        labelled = [r for r in rows if r[f"q{q}"] is not None]
        task = f"seahorse_all_q{q}_score"
        assert metrics[task]["n"] == len(labelled)
        assert metrics[task]["question"] == q
        frame = scorefiles.read_score_file(out / "evaluation" / "scores" / f"{task}.jsonl")
        assert len(frame) == len(labelled)
        assert sorted(frame["gem_id"]) == sorted(r["gem_id"] for r in labelled)
        assert set(frame["question"].astype(str)) == {str(q)}
        assert frame["label"].tolist() == [float(r[f"q{q}"]) for r in labelled]


@pytest.mark.slow
def test_demo_refuses_a_folder_of_other_settings(demo_run):
    out, _, _ = demo_run
    other = demo.DemoSettings(**{**TINY_DEMO.__dict__, "train_steps": 4})
    with pytest.raises(errors.UserError, match="other settings"):
        demo.run_demo(out, other, log=lambda line: None)


@pytest.mark.slow
def test_demo_settings_reach_the_tasks_only_while_it_runs(demo_run, monkeypatch):
    out, _, _ = demo_run
    # The trainer resolved the demo vocabulary (recorded in the checkpoint's meta) ...
    meta = checkpoints.load_meta(out / "model" / "checkpoints" / "3")
    assert meta["vocabulary"] == vocab.demo_vocab_path()
    # ... and trained with the demo's per-parameter learning rates.
    assert meta["optimizer"]["learning_rate_multipliers"] == {
        "rel_embedding": 10.0,
        "token_embedder": 3.0,
    }
    # ... and after the demo the tasks see the user's settings again, not the demo's.
    from seahorse_t5x.tasks import seahorse

    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(errors.UserError, match="no SEAHORSE data folder"):
        seahorse.data_dir()
    assert vocab.vocabulary_path() == vocab.MT5_VOCAB_PATH
    monkeypatch.setenv(constants.ENV_DATA_DIR, "/data/prepared")
    assert seahorse.data_dir() == "/data/prepared"


def test_demo_command_rejects_bad_steps(tmp_path, capsys):
    assert cli.main(["demo", "--output_dir", str(tmp_path), "--train_steps", "0"]) == 2
    assert "--train_steps must be >= 1" in capsys.readouterr().err


def test_demo_hides_only_seqio_caching_advice(caplog):
    from absl import logging as absl_logging

    with caplog.at_level("WARNING"):
        with demo._quiet_seqio_advice():
            absl_logging.warning("Using an uncached FunctionDataset for training is not ...")
            absl_logging.warning("Task 'x' not cached so using number of input examples ...")
            absl_logging.warning("a warning the demo keeps")
        absl_logging.warning("Using an uncached FunctionDataset for training after the demo")
    messages = [r.getMessage() for r in caplog.records if r.name == "absl"]
    assert messages == [
        "a warning the demo keeps",
        "Using an uncached FunctionDataset for training after the demo",
    ]


@pytest.mark.slow
def test_bfloat16_scores_of_the_trained_demo_model_stay_within_the_stated_bound(demo_run):
    """bfloat16 products (float32 or bfloat16 weights) against float32 on the trained demo
    model's test split: P(yes) within the bound docs/scoring.md states, ROC-AUC within it
    or one pair's worth."""
    out, result, _ = demo_run
    rows = splits.read_rows(splits.split_path(out / "data" / "prepared", "test"))
    runs = {
        name: scorer_lib.Scorer(
            result["model_dir"], input_length=TINY_DEMO.input_length, batch_size=4,
            dtype=dtype, param_dtype=param_dtype,
        )
        for name, (dtype, param_dtype) in {
            "float32": ("float32", "float32"),
            "bfloat16": ("bfloat16", "float32"),
            "bfloat16_weights": ("bfloat16", "bfloat16"),
        }.items()
    }  # fmt: skip
    for q in constants.QUESTIONS:
        labelled = [r for r in rows if splits.is_labelled(r, q)]
        labels = [r[splits.label_field(q)] for r in labelled]
        pairs = ([r["article"] for r in labelled], [r["summary"] for r in labelled])
        scores = {name: scorer.score(*pairs, question=q) for name, scorer in runs.items()}
        full = scores["float32"]
        for name in ("bfloat16", "bfloat16_weights"):
            assert not np.array_equal(scores[name], full)  # computed in bfloat16
            assert np.max(np.abs(scores[name] - full)) <= BF16_MAX_ABS_P_YES, (q, name)
            change = roc_auc_score(labels, scores[name]) - roc_auc_score(labels, full)
            # On this split's few rows one (yes, no) pair is worth more than the bound: at
            # most one pair may change order.
            pairs_worth = 1 / (sum(labels) * (len(labels) - sum(labels)))
            assert abs(change) <= max(BF16_ROC_AUC_CHANGE, pairs_worth) + 1e-12, (q, name)

"""The demo pipeline end to end with a tiny configuration (a few steps)."""

import json
import os

import pytest
import runner_fixtures

from seahorse_t5x import cli, constants, errors, vocab
from seahorse_t5x.evaluation import scorefiles
from seahorse_t5x.model import checkpoints
from seahorse_t5x.runner import demo

SETTINGS_ENV = (constants.ENV_DATA_DIR, constants.ENV_VOCAB)

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

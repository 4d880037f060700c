"""The train loop: learning, logs, packing share, NaN stop, gin and the `train` command."""

import json
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import runner_fixtures  # noqa: E402

from seahorse_t5x import cli, errors  # noqa: E402
from seahorse_t5x.runner import (  # noqa: E402
    checkpointing,
    gin_config,
    input_pipeline,
    train_step,
    trainer,
)

GIN_ROOT = pathlib.Path(__file__).resolve().parents[1] / "seahorse_t5x" / "gin"


pytestmark = pytest.mark.usefixtures("runner_tasks")


def test_cross_entropy_matches_a_direct_computation():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 5)).astype(np.float32)
    targets = np.array([[1, 4, 0], [2, 2, 3]])
    weights = np.array([[1, 1, 0], [1, 0, 0]], np.float32)
    objective, sums = train_step.cross_entropy_loss(logits, targets, weights, z_loss=0.0)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_p, targets[..., None], -1)[..., 0]
    expected = -(picked * weights).sum() / weights.sum()
    assert float(objective) == pytest.approx(expected, rel=1e-5)
    assert float(sums["tokens"]) == 3.0


def test_packing_fills_rows_and_padding_does_not():
    def share(pack):
        config = input_pipeline.DataConfig(
            runner_fixtures.TASK, {"inputs": 128, "targets": 16}, batch_size=8, pack=pack
        )
        batches = input_pipeline.train_batches(config)
        real = total = 0
        for _ in range(4):
            batch = next(batches)
            r, t = input_pipeline.real_token_counts(batch)
            real, total = real + r, total + t
        return real / total, batch

    packed_share, packed = share(True)
    padded_share, padded = share(False)
    assert packed["encoder_segment_ids"].max() >= 2  # several examples in one row
    assert "encoder_segment_ids" not in padded
    # SeqIO packs greedily in order (a row is closed when the next example does not fit).
    # Inputs of 3-40 words padded to 128 tokens leave most of each row empty.
    assert packed_share > 0.6
    assert padded_share < 0.5
    assert packed_share > 1.5 * padded_share


@pytest.mark.slow
def test_training_learns_logs_and_validates(tmp_path):
    result = trainer.train(
        model_dir=str(tmp_path / "run"),
        mixture_or_task_name=runner_fixtures.TASK,
        task_feature_lengths={"inputs": 64, "targets": 8},
        train_steps=30,
        batch_size=8,
        learning_rate=3e-3,
        dropout_rate=0.0,
        model_size="tiny",
        model_overrides={"vocab_size": 3072},
        optimizer="adamw",
        checkpoint_period=100,
        eval_period=15,
        validation_tasks=[runner_fixtures.SCORE_TASK],
        log_period=10,
    )
    assert result.step == 30
    # The targets are 2 tokens of a 3072-id vocabulary: ln(3072) = 8.0 at the start.
    assert result.final_loss < 2.0
    assert result.validation[runner_fixtures.SCORE_TASK]["roc_auc"] > 0.9
    lines = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    train_lines = [x for x in lines if x["split"] == "train"]
    validation_lines = [x for x in lines if x["split"] == "validation"]
    assert [x["step"] for x in train_lines] == [10, 20, 30]
    assert [x["step"] for x in validation_lines] == [15, 30]
    assert all(0 < x["real_token_share"] <= 1 for x in train_lines)
    assert list((tmp_path / "run" / "train").glob("events.out.tfevents.*"))
    # Validation chose a best step among the validated ones and kept it.
    assert result.best["step"] in (15, 30) and result.best["metric"] == "roc_auc"
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=3)
    assert result.best["step"] in store.steps()
    assert result.validation[runner_fixtures.SCORE_TASK]["n"] == 48
    store.close()


@pytest.mark.slow
def test_divergence_stops_and_keeps_the_last_good_checkpoint(tmp_path):
    def run(steps, learning_rate):
        return trainer.train(
            model_dir=str(tmp_path / "run"),
            mixture_or_task_name=runner_fixtures.TASK,
            task_feature_lengths={"inputs": 64, "targets": 8},
            train_steps=steps,
            batch_size=8,
            learning_rate=learning_rate,
            model_size="tiny",
            model_overrides={"vocab_size": 3072},
            optimizer="adamw",
            checkpoint_period=1,
            validation_tasks=(),
        )

    good = run(1, 1e-3)
    # An infinite learning rate turns the next update (and every later loss) non-finite.
    with pytest.raises(trainer.TrainingDiverged, match="diverged at step 2") as caught:
        run(3, float("inf"))
    assert "checkpoints/1" in str(caught.value)
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=3)
    assert store.steps() == [1]
    params, _ = store.restore_params(1)
    assert all(np.all(np.isfinite(x)) for x in _leaves(params))
    assert runner_fixtures.tree_max_abs_diff(params, good.params) == 0.0
    store.close()


def _leaves(tree):
    import jax

    return jax.tree.leaves(tree)


def test_macro_flags_become_gin_literals():
    assert gin_config.macro_binding("MODEL_DIR", "/tmp/x") == "MODEL_DIR = '/tmp/x'"
    assert gin_config.macro_binding("MODEL_DIR", "'/tmp/x'") == "MODEL_DIR = '/tmp/x'"
    assert gin_config.macro_binding("TRAIN_STEPS", "200") == "TRAIN_STEPS = 200"
    assert (
        gin_config.macro_binding("TASK_FEATURE_LENGTHS", "{'inputs': 8}")
        == "TASK_FEATURE_LENGTHS = {'inputs': 8}"
    )
    assert gin_config.macro_binding("INITIAL_CHECKPOINT_PATH", "None").endswith("None")


def test_train_command_runs_the_tiny_gin_and_names_missing_macros(tmp_path, capsys):
    import gin

    gin.clear_config()
    code = cli.main(["train", "--gin_file", str(GIN_ROOT / "test" / "tiny.gin")])
    assert code == 2
    assert "gin macro MODEL_DIR is required: pass --gin.MODEL_DIR" in capsys.readouterr().err

    gin.clear_config()
    code = cli.main(
        [
            "train",
            "--gin_file",
            str(GIN_ROOT / "test" / "tiny.gin"),
            f"--gin.MODEL_DIR={tmp_path / 'run'}",
            f"--gin.MIXTURE_OR_TASK_NAME={runner_fixtures.MIXTURE}",
            "--gin.TRAIN_STEPS=2",
            "--gin.TASK_FEATURE_LENGTHS={'inputs': 64, 'targets': 8}",
            "--gin.WARMUP_STEPS=4",
            "--gin.LEARNING_RATE_MULTIPLIERS={'rel_embedding$': 10.0}",
            "--gin.CLIP_GRADIENT_NORM=1.0",
        ]
    )
    gin.clear_config()
    out = capsys.readouterr().out
    assert code == 0, out
    assert "trained to step 2" in out
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=2)
    assert store.steps() == [2]
    store.close()
    # The logged rate is the warmup's at the step taken: 3e-3 * 1/4 for the second step.
    lines = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    last = [x for x in lines if x["split"] == "train"][-1]
    assert last["step"] == 2
    assert last["learning_rate"] == pytest.approx(3e-3 / 4)


def test_unknown_task_is_a_user_error(tmp_path):
    with pytest.raises(errors.UserError, match="no SeqIO task or mixture named 'nope'"):
        trainer.train(
            model_dir=str(tmp_path / "run"),
            mixture_or_task_name="nope",
            task_feature_lengths={"inputs": 64, "targets": 8},
            train_steps=1,
            batch_size=8,
            model_size="tiny",
            model_overrides={"vocab_size": 3072},
            validation_tasks=(),
        )

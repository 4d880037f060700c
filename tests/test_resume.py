"""Kill-and-resume equals an uninterrupted run; damaged or half-written checkpoints are skipped."""

import logging

import jax
import numpy as np
import pytest
import runner_fixtures

from seahorse_t5x import errors
from seahorse_t5x.runner import checkpointing, trainer

STEPS = 4


class _Killed(Exception):
    """Stands in for the process dying right after a step."""


pytestmark = [pytest.mark.usefixtures("runner_tasks"), pytest.mark.slow]


# The schedule's step count lives in the optimizer state: it must resume too.
OPTIMIZER_SETTINGS = {
    "optimizer": "adafactor",
    "learning_rate_schedule": "cosine",
    "warmup_steps": 2,
    "learning_rate_multipliers": {"rel_embedding": 10.0},
    "clip_gradient_norm": 1.0,
}


def _train(model_dir, on_step=None):
    return trainer.train(
        model_dir=str(model_dir),
        mixture_or_task_name=runner_fixtures.TASK,
        task_feature_lengths={"inputs": 64, "targets": 8},
        train_steps=STEPS,
        batch_size=8,
        learning_rate=3e-3,
        **OPTIMIZER_SETTINGS,
        dropout_rate=0.1,  # dropout keys must also be reproduced on resume
        model_size="tiny",
        model_overrides={"vocab_size": 3072},
        checkpoint_period=2,
        keep_checkpoints=2,
        validation_tasks=(),
        log_period=2,
        on_step=on_step,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("resume")
    whole = _train(base / "whole")

    def kill_after_step_3(step, loss):
        if step == 3:  # step 2 is saved; step 3 is lost with the process
            raise _Killed

    with pytest.raises(_Killed):
        _train(base / "killed", on_step=kill_after_step_3)
    resumed = _train(base / "killed")
    return base, whole, resumed


def test_resumed_run_ends_with_the_same_parameters(runs):
    _, whole, resumed = runs
    assert whole.resumed_from is None
    assert resumed.resumed_from == 2
    assert whole.step == resumed.step == STEPS
    assert runner_fixtures.tree_max_abs_diff(whole.params, resumed.params) == 0.0
    assert resumed.final_loss == pytest.approx(whole.final_loss, abs=0)


def test_checkpoints_keep_the_last_two_with_data_position(runs):
    base, _, _ = runs
    store = checkpointing.CheckpointStore(base / "whole", keep=2)
    assert store.steps() == [2, 4]
    step_dir = store.step_dir(4)
    items = {p.name for p in step_dir.iterdir() if p.is_dir()}
    assert items == {"data_state", "meta", "opt_state", "params"}
    params, meta = store.restore_params(4)
    assert meta["model_config"]["vocab_size"] == 3072
    assert meta["step"] == 4
    store.close()


def _abstract(store_dir):
    """Abstract trees for restoring (the shapes of what the run saved)."""
    store = checkpointing.CheckpointStore(store_dir, keep=2)
    params, _ = store.restore_params(store.steps()[-1])
    return store, params


def test_damaged_latest_checkpoint_is_skipped_with_a_warning(runs, tmp_path, caplog):
    import shutil

    base, _, _ = runs
    copy = tmp_path / "run"
    shutil.copytree(base / "whole", copy)
    # Damage every data file of the newest step's parameters.
    for path in (copy / "checkpoints" / "4" / "params").rglob("*"):
        if path.is_file() and path.stat().st_size > 0 and not path.name.startswith("_"):
            path.write_bytes(b"\0garbage")
    caplog.set_level(logging.WARNING)
    result = _train_steps(copy, STEPS)
    assert result.resumed_from == 2
    assert any("cannot be restored" in r.getMessage() for r in caplog.records)


def _train_steps(model_dir, steps, dtype="auto", **optimizer_settings):
    return trainer.train(
        model_dir=str(model_dir),
        mixture_or_task_name=runner_fixtures.TASK,
        task_feature_lengths={"inputs": 64, "targets": 8},
        train_steps=steps,
        batch_size=8,
        learning_rate=3e-3,
        **(optimizer_settings or OPTIMIZER_SETTINGS),
        dropout_rate=0.1,
        model_size="tiny",
        model_overrides={"vocab_size": 3072},
        dtype=dtype,
        checkpoint_period=2,
        keep_checkpoints=2,
        validation_tasks=(),
        log_period=2,
    )


def test_interrupted_save_is_never_listed(runs, tmp_path):
    import shutil

    base, whole, _ = runs
    copy = tmp_path / "run"
    shutil.copytree(base / "whole", copy)
    # What a process killed in the middle of saving step 6 leaves: orbax's temporary folder.
    partial = copy / "checkpoints" / "6.orbax-checkpoint-tmp-1234567"
    (partial / "params").mkdir(parents=True)
    (partial / "params" / "half_written").write_bytes(b"\0")
    store = checkpointing.CheckpointStore(copy, keep=2)
    assert store.steps() == [2, 4]
    params, meta = store.restore_params(4)
    assert meta["step"] == 4
    assert runner_fixtures.tree_max_abs_diff(params, whole.params) == 0.0
    store.close()


def test_no_readable_checkpoint_is_a_clear_error(tmp_path):
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=2)
    params = {"w": np.ones((2, 2), np.float32)}
    store.save(1, params, {"count": np.zeros((), np.int32)}, {"step": 1}, {"step": 1})
    for path in (store.step_dir(1) / "params").rglob("*"):
        if path.is_file() and not path.name.startswith("_"):
            path.write_bytes(b"junk")
    abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), params)
    opt = {"count": jax.ShapeDtypeStruct((), np.int32)}
    with pytest.raises(errors.UserError, match="no checkpoint .* can be restored"):
        store.restore_latest(abstract, opt)
    store.close()


def test_resuming_with_other_optimizer_settings_is_a_clear_error(runs, tmp_path):
    import shutil

    base, _, _ = runs
    copy = tmp_path / "run"
    shutil.copytree(base / "whole", copy)
    other = {**OPTIMIZER_SETTINGS, "warmup_steps": 3, "clip_gradient_norm": None}
    with pytest.raises(errors.UserError, match="other optimizer settings") as raised:
        _train_steps(copy, STEPS + 2, **other)
    message = str(raised.value)
    assert "clip_gradient_norm: saved 1.0, now None" in message
    assert "warmup_steps: saved 2, now 3" in message
    assert "learning_rate_schedule" not in message


def _saved_dtype(model_dir, step):
    store = checkpointing.CheckpointStore(model_dir, keep=2)
    _, meta = store.restore_params(step)
    store.close()
    return meta["model_config"]["dtype"]


def test_bfloat16_products_train_close_to_float32_and_are_recorded(runs, tmp_path):
    base, whole, _ = runs
    # DTYPE 'auto' on a CPU: float32 (XLA's bfloat16 products are not faster there).
    assert whole.model_config.dtype == "float32" == _saved_dtype(base / "whole", STEPS)
    bf16 = _train_steps(tmp_path / "bf16", STEPS, dtype="bfloat16")
    assert bf16.model_config.dtype == "bfloat16" == _saved_dtype(tmp_path / "bf16", STEPS)
    # The same run computed with bfloat16 operands: not the same numbers, nearly the same run.
    difference = runner_fixtures.tree_max_abs_diff(whole.params, bf16.params)
    assert 0.0 < difference < 0.05
    assert bf16.final_loss == pytest.approx(whole.final_loss, rel=0.02)
    assert bf16.final_loss != whole.final_loss


def test_resuming_in_the_other_dtype_warns_and_records_it(runs, tmp_path, caplog):
    import shutil

    base, _, _ = runs
    copy = tmp_path / "run"
    shutil.copytree(base / "whole", copy)
    caplog.set_level(logging.WARNING)
    result = _train_steps(copy, STEPS + 2, dtype="bfloat16")
    assert result.resumed_from == STEPS and result.step == STEPS + 2
    warnings = [r.getMessage() for r in caplog.records if "products" in r.getMessage()]
    assert len(warnings) == 1
    assert "trained so far with float32 products, with bfloat16 products" in warnings[0]
    assert _saved_dtype(copy, STEPS + 2) == "bfloat16"


def test_an_unknown_dtype_is_a_clear_error(tmp_path):
    with pytest.raises(errors.UserError, match="DTYPE must be one of auto, float32, bfloat16"):
        _train_steps(tmp_path / "run", 1, dtype="float16")

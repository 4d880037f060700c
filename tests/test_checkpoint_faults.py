"""Checkpoint faults end in exactly the lines docs/errors.md promises: a full device while
`train` saves a step (one error line, exit 2, the partial step removed, the earlier steps
restorable), and damaged or mismatched checkpoints met by `score` and `train` (one warning
or one error line, none of orbax's asyncio tracebacks).

The device is filled where it fills in a real run: orbax's array writers (numpy arrays and
jax arrays) write their data for the chosen step and then fail as tensorstore does on a
full disk."""

import collections
import json
import logging
import os
import pathlib
import re
import shutil
import subprocess
import sys

import gin
import jax
import numpy as np
import pytest
import runner_fixtures
from mt5_fixtures import write_runner_steps
from orbax.checkpoint._src.serialization import serialization, type_handlers

from seahorse_t5x import cli, errors
from seahorse_t5x.model import checkpoint_layout, checkpoints, configs, mt5, orbax_checkpoints
from seahorse_t5x.runner import checkpointing

TESTS = pathlib.Path(__file__).resolve().parent
TINY_GIN = TESTS.parent / "seahorse_t5x" / "gin" / "test" / "tiny.gin"
# What tensorstore raises when the device is full (its file driver's ENOSPC).
FULL = "RESOURCE_EXHAUSTED: Error writing local file: No space left on device"
FREE = 12897485  # bytes: "12.3 MiB"
W = np.arange(64, dtype=np.float32).reshape(8, 8) + 0.5


@pytest.fixture
def full_device_at(monkeypatch):
    """`full_device_at(step)`: orbax's writes of that step fail as on a full device (after
    writing their data), and the device reports FREE bytes free."""

    def fill(step: int) -> None:
        def writes_step(spec) -> bool:
            return f"/{step}.orbax-checkpoint-tmp" in json.dumps(spec, default=str)

        write_from_host = serialization.async_serialize_from_host
        write_numpy = type_handlers.NumpyHandler._open_and_write

        async def from_host(slices, spec, **kwargs):
            await write_from_host(slices, spec, **kwargs)
            if writes_step(spec):
                raise ValueError(FULL)

        async def numpy_write(self, value, spec, context):
            await write_numpy(self, value, spec, context)
            if writes_step(spec):
                raise ValueError(FULL)

        monkeypatch.setattr(serialization, "async_serialize_from_host", from_host)
        monkeypatch.setattr(type_handlers.NumpyHandler, "_open_and_write", numpy_write)
        usage = collections.namedtuple("usage", "total used free")
        monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10 * FREE, 9 * FREE, FREE))

    return fill


def _save(store, step):
    store.save(
        step,
        {"w": W * step},
        {"count": np.full((), step, np.int32)},
        {"step": step, "batches_consumed": 3 * step},
        {"step": step, "model_config": {}},
    )


def test_is_disk_full_finds_enospc_in_every_form():
    assert checkpointing.is_disk_full(OSError(28, "No space left on device"))
    assert checkpointing.is_disk_full(ValueError(FULL))
    try:
        try:
            raise ValueError(FULL)
        except ValueError as inner:
            raise RuntimeError("save failed") from inner
    except RuntimeError as outer:
        assert checkpointing.is_disk_full(outer)
    assert checkpointing.is_disk_full(ExceptionGroup("writers", [KeyError(1), ValueError(FULL)]))
    assert not checkpointing.is_disk_full(ValueError("RESOURCE_EXHAUSTED: Out of memory"))
    assert not checkpointing.is_disk_full(OSError(13, "Permission denied"))
    assert checkpointing.size_text(512) == "512 B"
    assert checkpointing.size_text(FREE) == "12.3 MiB"
    assert checkpointing.size_text(3 * 1024**3 // 2) == "1.5 GiB"


def test_a_full_device_while_saving_keeps_the_earlier_steps(tmp_path, full_device_at, caplog):
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=3)
    _save(store, 1)
    full_device_at(2)
    caplog.set_level(logging.WARNING)
    with pytest.raises(errors.UserError) as raised:
        _save(store, 2)
    assert str(raised.value) == (
        f"no space left on the device of MODEL_DIR {tmp_path / 'run'} (12.3 MiB free) while "
        "saving step 2; earlier steps are intact"
    )
    assert caplog.records == []  # orbax's reports of its failed writers are not shown
    directory = checkpoint_layout.checkpoints_dir(tmp_path / "run")
    assert checkpoint_layout.partial_step_dirs(directory, 2) == []
    assert sorted(p.name for p in directory.iterdir()) == ["1"]
    abstract = {"w": jax.ShapeDtypeStruct((8, 8), np.float32)}
    count = {"count": jax.ShapeDtypeStruct((), np.int32)}
    step, params, opt_state, data_state, _ = store.restore_latest(abstract, count)
    assert (step, int(opt_state["count"]), data_state["batches_consumed"]) == (1, 1, 3)
    np.testing.assert_array_equal(np.asarray(params["w"]), W)
    store.close()


def test_a_full_device_before_any_step_says_so(tmp_path, full_device_at):
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=3)
    full_device_at(1)
    with pytest.raises(errors.UserError, match=r"while saving step 1; no earlier step was saved$"):
        _save(store, 1)
    assert store.steps() == []
    store.close()


def test_a_model_dir_with_no_loadable_step_is_one_error_without_warnings(tmp_path, caplog):
    config = configs.get_config("tiny", vocab_size=64)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
    for step in (1, 2):
        orbax_checkpoints.save_params(tmp_path / "checkpoints" / str(step), config, params)
        (tmp_path / "checkpoints" / str(step) / "meta" / "metadata").write_text("{}")
    caplog.set_level(logging.WARNING)
    with pytest.raises(errors.UserError, match=r"^none of the 2 checkpoint steps in .* the first"):
        checkpoints.load_checkpoint(tmp_path)
    assert [r.getMessage() for r in caplog.records] == []


@pytest.mark.slow
@pytest.mark.usefixtures("runner_tasks")
def test_train_on_a_full_device_is_one_line_and_exit_2(tmp_path, full_device_at, capsys):
    model_dir = tmp_path / "run"
    full_device_at(4)
    capsys.readouterr()
    try:
        code = cli.main(
            [
                "train",
                "--gin_file",
                str(TINY_GIN),
                f"--gin.MODEL_DIR={model_dir}",
                f"--gin.MIXTURE_OR_TASK_NAME={runner_fixtures.TASK}",
                "--gin.TRAIN_STEPS=4",
                "--gin.CHECKPOINT_PERIOD=2",
                "--gin.TASK_FEATURE_LENGTHS={'inputs': 64, 'targets': 8}",
            ]
        )
    finally:
        gin.clear_config()
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [
        f"seahorse-t5x train: error: no space left on the device of MODEL_DIR {model_dir} "
        "(12.3 MiB free) while saving step 4; earlier steps are intact"
    ]
    directory = checkpoint_layout.checkpoints_dir(model_dir)
    assert checkpoint_layout.partial_step_dirs(directory, 4) == []
    assert checkpoint_layout.steps(directory) == [2]
    config, params = checkpoints.load_checkpoint(model_dir)  # content hashes checked
    store = checkpointing.CheckpointStore(model_dir, keep=2)
    saved, meta = store.restore_params(2)
    store.close()
    assert meta["step"] == 2 and config.to_dict() == meta["model_config"]
    assert runner_fixtures.tree_max_abs_diff(params, saved) == 0.0


# --- the real command line: what a user sees on stderr ------------------------------------

# Lines the native libraries print at start-up (absl's C++ log), and `score`'s progress bar:
# not the command's own.
_NOT_OURS = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to "
    r"STDERR|[IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\] .*|scoring: .*|\s*)$"
)


def _run_cli(*argv: str, cwd: pathlib.Path) -> tuple[int, list[str], str]:
    """(exit code, the command's own stderr lines, the whole stderr) of a fresh process."""
    env = dict(os.environ)
    env.update(
        JAX_PLATFORMS="cpu",
        SEAHORSE_VOCAB="demo",
        SEAHORSE_COMPILATION_CACHE=runner_fixtures.compilation_cache_dir(),
        TF_CPP_MIN_LOG_LEVEL="3",
        PYTHONPATH=os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]),
    )
    done = subprocess.run(
        [sys.executable, "-m", "seahorse_t5x.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )
    lines = [line for line in done.stderr.splitlines() if not _NOT_OURS.match(line)]
    assert "Traceback" not in done.stderr and "Event loop is closed" not in done.stderr
    return done.returncode, lines, done.stderr


@pytest.mark.slow
def test_score_past_a_truncated_best_step_prints_one_warning(tmp_path):
    config = configs.get_config("tiny", vocab_size=3072, dropout_rate=0.0)
    model_dir = tmp_path / "run"
    write_runner_steps(model_dir, config, (1, 2), best=2)
    best = checkpoint_layout.step_dir(checkpoint_layout.checkpoints_dir(model_dir), 2)
    previous = checkpoint_layout.step_dir(checkpoint_layout.checkpoints_dir(model_dir), 1)
    truncated = [p for p in (best / "params").rglob("*") if p.is_file() and "/d/" in str(p)]
    assert truncated
    for path in truncated:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    pairs = tmp_path / "pairs.jsonl"
    rows = [{"article": f"The cat sat on mat {i}.", "summary": "A cat sat."} for i in range(4)]
    pairs.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "scores.jsonl"
    code, lines, stderr = _run_cli(
        *("score", "--checkpoint", str(model_dir), "--input", str(pairs), "--output", str(out)),
        *("--input_length", "32", "--batch_size", "2"),
        cwd=tmp_path,
    )
    assert code == 0, stderr
    # One warning, then the line saying what `--dtype auto` chose.
    assert len(lines) == 2, stderr
    assert re.fullmatch(r"dtype float32 \(auto: cpu.*\)", lines[1]), lines[1]
    assert re.fullmatch(
        rf"WARNING:seahorse_t5x\.model\.orbax_checkpoints:using checkpoint {previous} instead "
        rf"of the damaged {best} \(cannot restore checkpoint {best}: OUT_OF_RANGE: .*\)",
        lines[0],
    ), lines[0]
    assert len(out.read_text().splitlines()) == 4


@pytest.mark.slow
def test_train_on_a_model_dir_of_another_model_is_one_error_line(tmp_path):
    other = configs.get_config("tiny", vocab_size=3072, dropout_rate=0.0, mlp_dim=96)
    model_dir = tmp_path / "run"
    write_runner_steps(model_dir, other, (2, 4), best=4)
    module = tmp_path / "fault_task.py"
    module.write_text("import runner_fixtures\n\nrunner_fixtures.register()\n")
    code, lines, stderr = _run_cli(
        *("train", "--gin_file", str(TINY_GIN), f"--gin.MODEL_DIR={model_dir}"),
        *("--module", str(module), f"--gin.MIXTURE_OR_TASK_NAME={runner_fixtures.TASK}"),
        cwd=tmp_path,
    )
    assert code == 2, stderr
    newest = checkpoint_layout.step_dir(checkpoint_layout.checkpoints_dir(model_dir), 4)
    assert lines == [
        f"seahorse-t5x train: error: {newest} holds a model that differs from this "
        "configuration in ['mlp_dim']; use a new MODEL_DIR (or INITIAL_CHECKPOINT_PATH to "
        "start from it)"
    ]
    assert checkpoint_layout.steps(checkpoint_layout.checkpoints_dir(model_dir)) == [2, 4]


_DROPPED_TASK = "_drop_a_failed_task.<locals>.read()"


def _drop_a_failed_task() -> None:
    """An asyncio task whose error nothing retrieves, collected: what a failed orbax
    restore leaves behind (its report names the coroutine `_DROPPED_TASK`)."""
    import asyncio
    import gc

    async def read():
        raise ValueError("OUT_OF_RANGE: a truncated array file")

    loop = asyncio.new_event_loop()
    task = loop.create_task(read())
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()
    del task
    gc.collect()


def _reports_of_dropped_tasks(caplog) -> list[str]:
    """The first lines of asyncio's reports of `_drop_a_failed_task`'s tasks (not of tasks
    another test left for the collector)."""
    return [
        r.getMessage().splitlines()[0]
        for r in caplog.records
        if r.name == "asyncio" and _DROPPED_TASK in r.getMessage()
    ]


def test_never_retrieved_task_errors_are_dropped_only_after_a_failed_restore(monkeypatch, caplog):
    import gc
    import threading

    from seahorse_t5x.model import orbax_checkpoints

    # Tasks other tests left (this module's full-device saves) are collected and reported
    # now, before the check starts.
    gc.collect()
    monkeypatch.setattr(orbax_checkpoints, "_IO_FAILED", threading.Event())
    orbax_checkpoints.contain_orphaned_callbacks()
    caplog.set_level(logging.ERROR, logger="asyncio")
    caplog.clear()
    _drop_a_failed_task()  # no restore has failed: asyncio's report stays
    assert _reports_of_dropped_tasks(caplog) == ["Task exception was never retrieved"]
    caplog.clear()
    orbax_checkpoints.note_failed_io()
    _drop_a_failed_task()
    assert _reports_of_dropped_tasks(caplog) == []


def test_the_never_retrieved_check_holds_with_tasks_other_tests_left(monkeypatch, caplog):
    # A failed task that only the collector frees (held in a reference cycle), as this
    # module's full-device saves leave them: its report must not count as the check's own.
    import asyncio

    async def other():
        raise ValueError("RESOURCE_EXHAUSTED: left by another test")

    loop = asyncio.new_event_loop()
    holder = {"task": loop.create_task(other())}
    holder["cycle"] = holder
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()
    del holder
    test_never_retrieved_task_errors_are_dropped_only_after_a_failed_restore(monkeypatch, caplog)

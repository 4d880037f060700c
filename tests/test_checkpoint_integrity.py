"""Checkpoint integrity: content hashes catch flipped bytes, damaged steps are skipped, the
data state is validated, and the best marker survives a kill before its update."""

import json
import logging

import jax
import numpy as np
import pytest

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoint_layout, checkpoints, orbax_checkpoints
from seahorse_t5x.runner import checkpointing

W = np.arange(64, dtype=np.float32).reshape(8, 8) + 0.5
ABSTRACT = {"w": jax.ShapeDtypeStruct((8, 8), np.float32)}
OPT = {"count": jax.ShapeDtypeStruct((), np.int32)}


def _save(store, step, validation=None):
    meta = {"step": step, "model_config": {"emb_dim": 8}}
    if validation is not None:
        meta["validation"] = {"roc_auc": validation}
    store.save(
        step,
        {"w": W * step},
        {"count": np.full((), step, np.int32)},
        {"step": step, "batches_consumed": 12 * step},
        meta,
    )


@pytest.fixture
def store(tmp_path):
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=3)
    _save(store, 1)
    _save(store, 2)
    yield store
    store.close()


def _restored_step(store):
    step, params, opt_state, data_state, meta = store.restore_latest(ABSTRACT, OPT)
    if step == 2:  # whatever is restored as step 2 must be exactly what was saved
        np.testing.assert_array_equal(np.asarray(params["w"]), W * 2)
        assert int(opt_state["count"]) == 2
        assert data_state == {"step": 2, "batches_consumed": 24}
        assert meta["model_config"] == {"emb_dim": 8}
    return step


def test_saved_meta_carries_content_hashes(store):
    _, meta = store.restore_params(2)
    hashes = meta[checkpoint_layout.META_CONTENT_HASHES]
    assert set(hashes) == {"params", "opt_state", "data_state", "meta"}
    assert hashes["params"] == orbax_checkpoints.tree_digest({"w": W * 2})
    assert hashes["data_state"] == orbax_checkpoints.json_digest(
        {"batches_consumed": 24, "step": 2}
    )


def test_every_flipped_byte_of_the_data_state_is_detected(store, caplog):
    # Orbax reads the JSON items back without a check of their own: a flipped digit in
    # `batches_consumed` would resume the data stream at the wrong batch.
    path = store.step_dir(2) / "data_state" / "metadata"
    original = path.read_bytes()
    outcomes = []
    caplog.set_level(logging.WARNING)
    for position in range(len(original)):
        flipped = bytearray(original)
        flipped[position] ^= 0x01
        path.write_bytes(bytes(flipped))
        outcomes.append(_restored_step(store))
    path.write_bytes(original)
    assert outcomes == [1] * len(original)  # every one falls back to step 1
    assert _restored_step(store) == 2


def test_flipped_byte_in_the_parameters_falls_back(store, caplog):
    data = [p for p in (store.step_dir(2) / "params" / "d").iterdir() if p.is_file()]
    assert data
    for path in data:
        content = bytearray(path.read_bytes())
        content[len(content) // 2] ^= 0x10
        path.write_bytes(bytes(content))
    caplog.set_level(logging.WARNING)
    assert _restored_step(store) == 1
    assert any("cannot be restored" in r.getMessage() for r in caplog.records)


def test_hash_mismatch_is_named(store):
    meta = {"model_config": {}, checkpoint_layout.META_CONTENT_HASHES: {"params": "0" * 64}}
    meta[checkpoint_layout.META_CONTENT_HASHES]["meta"] = orbax_checkpoints.meta_digest(meta)
    with pytest.raises(errors.UserError, match=r"is damaged: params differ"):
        orbax_checkpoints.verify_content("step_dir", meta, {"params": {"w": W}})


@pytest.mark.parametrize(
    "data_state, reason",
    [
        ({"step": 2}, "data_state lacks batches_consumed"),
        ({"batches_consumed": 24}, "data_state lacks step"),
        ({"step": 2, "batches_consumed": -1}, "batches_consumed is -1"),
        ({"step": 2, "batches_consumed": "24"}, "batches_consumed is '24'"),
        ({"step": 3, "batches_consumed": 24}, "data_state step 3 is not the step 2"),
    ],
)
def test_data_state_without_its_fields_is_damaged(tmp_path, data_state, reason, caplog):
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=3)
    _save(store, 1)
    with pytest.raises(ValueError, match=reason):
        checkpointing.check_data_state(2, data_state)
    # Written without hashes (as by an older version): only the field check can catch it.
    store.manager.save(
        2,
        args=checkpointing.ocp.args.Composite(
            params=checkpointing.ocp.args.StandardSave({"w": W}),
            opt_state=checkpointing.ocp.args.StandardSave({"count": np.zeros((), np.int32)}),
            data_state=checkpointing.ocp.args.JsonSave(data_state),
            meta=checkpointing.ocp.args.JsonSave({"step": 2}),
        ),
        force=True,
    )
    store.manager.wait_until_finished()
    caplog.set_level(logging.WARNING)
    assert store.restore_latest(ABSTRACT, OPT)[0] == 1
    assert any(reason in r.getMessage() for r in caplog.records)
    store.close()


def test_best_marker_is_recomputed_after_a_kill_before_its_update(tmp_path, caplog):
    store = checkpointing.CheckpointStore(tmp_path / "run", keep=3, best_metric="roc_auc")
    _save(store, 1, validation=0.6)
    store.mark_best(1, "roc_auc", 0.6)
    _save(store, 2, validation=0.8)  # killed here: the marker still names step 1
    _save(store, 3, validation=0.8)  # a tie is no improvement
    store.close()
    caplog.set_level(logging.WARNING)
    reopened = checkpointing.CheckpointStore(tmp_path / "run", keep=3, best_metric="roc_auc")
    assert reopened.best() == {"step": 2, "metric": "roc_auc", "value": 0.8}
    assert any("recomputed" in r.getMessage() for r in caplog.records)
    (tmp_path / "run" / "checkpoints" / checkpoint_layout.BEST_MARKER).unlink()  # lost entirely
    assert reopened.recompute_best("roc_auc")["step"] == 2
    reopened.close()


def test_exported_model_with_a_flipped_weight_is_refused(tmp_path):
    from seahorse_t5x.model import configs, mt5

    config = configs.get_config("tiny").replace(vocab_size=64)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
    step_dir = checkpoints.save_params(tmp_path / "export", config, params)
    meta_file = step_dir / "meta" / "metadata"
    meta = json.loads(meta_file.read_text())
    # A flipped bit in a saved value: the meta still parses, but no longer matches its hash.
    meta["model_config"]["dropout_rate"] = 0.25
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(errors.UserError, match=r"is damaged: meta differ"):
        checkpoints.load_checkpoint(step_dir)


def test_loading_a_model_dir_falls_back_past_a_damaged_best_step(tmp_path, caplog):
    from mt5_fixtures import write_runner_steps

    from seahorse_t5x.model import configs

    config = configs.get_config("tiny").replace(vocab_size=64)
    params = write_runner_steps(tmp_path / "run", config, (1, 2), best=2)
    best = tmp_path / "run" / "checkpoints" / "2"
    (best / "meta" / "metadata").write_text('{"model_config": 1}')
    caplog.set_level(logging.WARNING)
    loaded_config, loaded = checkpoints.load_checkpoint(tmp_path / "run")
    assert loaded_config == config
    embedding = loaded["token_embedder"]["embedding"]
    np.testing.assert_array_equal(embedding, np.asarray(params["token_embedder"]["embedding"]))
    # One warning: the step used, the damaged one and what was wrong with it.
    assert [r.getMessage() for r in caplog.records] == [
        f"using checkpoint {tmp_path / 'run' / 'checkpoints' / '1'} instead of the damaged "
        f"{best} (checkpoint {best}: meta has no 'model_config' object)"
    ]

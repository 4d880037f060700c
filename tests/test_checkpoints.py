"""Checkpoint import (HF safetensors/sharded/.bin, T5X msgpack+tensorstore, orbax) and export."""

from __future__ import annotations

import json
import sys

import flax
import numpy as np
import pytest
from mt5_fixtures import (
    TINY,
    flax_logits,
    hf_logits,
    padded_batch,
    save_hf_tiny,
    write_t5x_checkpoint,
)

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoints, hf_checkpoints


def _flat(params):
    return flax.traverse_util.flatten_dict(params, sep="/")


def _assert_same_params(a, b):
    flat_a, flat_b = _flat(a), _flat(b)
    assert sorted(flat_a) == sorted(flat_b)
    for name in flat_a:
        np.testing.assert_array_equal(np.asarray(flat_a[name]), np.asarray(flat_b[name]), name)


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf")
    model = save_hf_tiny(directory, "safetensors", seed=5)
    return directory, model


@pytest.fixture(scope="module")
def hf_params(hf_dir):
    return hf_checkpoints.from_hf_state_dict(TINY, hf_dir[1].state_dict())


def test_hf_safetensors_reproduces_pytorch_logits(hf_dir, hf_params):
    directory, model = hf_dir
    config, params = checkpoints.load_checkpoint(directory)
    assert config == TINY.replace(dropout_rate=0.0)
    _assert_same_params(params, hf_params)
    enc = padded_batch([13, 30], TINY.vocab_size, seed=9)
    dec = np.array([[0, 5, 6], [0, 7, 8]], np.int32)
    np.testing.assert_allclose(
        flax_logits(params, enc, dec), hf_logits(model, enc, dec), atol=1e-4, rtol=1e-4
    )


def test_hf_bin_and_sharded_safetensors_give_the_same_params(tmp_path, hf_params):
    bin_dir = tmp_path / "bin"
    save_hf_tiny(bin_dir, "bin", seed=5)
    assert not list(bin_dir.glob("*.safetensors"))
    _, from_bin = checkpoints.load_checkpoint(bin_dir)
    _assert_same_params(from_bin, hf_params)

    sharded = tmp_path / "sharded"
    model = save_hf_tiny(sharded, "safetensors", seed=5)
    (sharded / "model.safetensors").unlink()
    model.save_pretrained(sharded, max_shard_size="40KB")
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    _, from_shards = checkpoints.load_checkpoint(sharded)
    _assert_same_params(from_shards, hf_params)


def test_bfloat16_safetensors_are_read_as_float32(tmp_path, hf_params):
    import ml_dtypes

    state = hf_checkpoints.to_hf_state_dict(hf_params, TINY)
    path = tmp_path / "bf16.safetensors"
    # safetensors' numpy writer knows no bfloat16: write it from torch.
    import torch
    from safetensors.torch import save_file

    save_file({"x": torch.tensor(state["shared.weight"][:4]).bfloat16()}, str(path))
    read = hf_checkpoints.read_safetensors(path)["x"]
    assert read.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(
        read.astype(np.float32), state["shared.weight"][:4], rtol=1e-2, atol=1e-2
    )


def test_bin_without_torch_is_a_clear_error(tmp_path, monkeypatch):
    save_hf_tiny(tmp_path, "bin", seed=5)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(errors.UserError, match="needs PyTorch"):
        checkpoints.load_checkpoint(tmp_path)


def test_t5x_checkpoint_loads_with_inferred_config(tmp_path, hf_params):
    ckpt = write_t5x_checkpoint(tmp_path / "t5x_model", hf_params, step=1200)
    assert (ckpt / "target.encoder.layers_0.attention.query.kernel" / ".zarray").exists()
    config, params = checkpoints.load_checkpoint(ckpt, dtype="bfloat16")
    assert config == TINY.replace(
        dtype="bfloat16",
        relative_attention_max_distance=128,  # T5X checkpoints carry no config: its default
        dropout_rate=0.1,
    )
    _assert_same_params(params, hf_params)
    # A T5X MODEL_DIR resolves to its latest checkpoint_N.
    write_t5x_checkpoint(tmp_path / "t5x_model", hf_params, step=900)
    assert checkpoints.detect_format(tmp_path / "t5x_model")[0] == "t5x"
    _, latest = checkpoints.load_checkpoint(tmp_path / "t5x_model")
    _assert_same_params(latest, hf_params)


def test_orbax_round_trip_and_model_dir_best_then_latest(tmp_path, hf_params):
    config = TINY.replace(dtype="bfloat16")
    export = checkpoints.save_params(tmp_path / "export", config, hf_params)
    loaded_config, loaded = checkpoints.load_checkpoint(export)
    assert loaded_config == config
    _assert_same_params(loaded, hf_params)
    with pytest.raises(errors.UserError, match="exists"):
        checkpoints.save_params(export, config, hf_params)

    model_dir = tmp_path / "run"
    shifted = {k: v + 1.0 for k, v in _flat(hf_params).items()}
    shifted = flax.traverse_util.unflatten_dict(shifted, sep="/")
    checkpoints.save_params(model_dir / "checkpoints" / "100", config, hf_params)
    checkpoints.save_params(model_dir / "checkpoints" / "200", config, shifted)
    _, latest = checkpoints.load_checkpoint(model_dir)
    _assert_same_params(latest, shifted)
    (model_dir / "checkpoints" / "best.json").write_text(json.dumps({"step": 100}))
    assert checkpoints.detect_format(model_dir) == ("orbax", model_dir / "checkpoints" / "100")
    _, best = checkpoints.load_checkpoint(model_dir)
    _assert_same_params(best, hf_params)


def test_mis_shaped_checkpoint_names_parameter_and_shapes(tmp_path, hf_dir):
    directory, _ = hf_dir
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.safetensors").write_bytes((directory / "model.safetensors").read_bytes())
    hf_config = json.loads((directory / "config.json").read_text())
    hf_config["d_ff"] = 48
    (bad / "config.json").write_text(json.dumps(hf_config))
    with pytest.raises(errors.UserError) as info:
        checkpoints.load_checkpoint(bad)
    message = str(info.value)
    assert (
        "encoder/layers_0/mlp/wi_0/kernel: expected shape (32, 48) from the config, found (32, 64)"
        in message
    )
    assert "12 problems" in message  # wi_0, wi_1, wo in each of 4 layers


def test_missing_and_extra_tensors_are_named(hf_params):
    state = hf_checkpoints.to_hf_state_dict(hf_params, TINY)
    del state["decoder.block.1.layer.2.DenseReluDense.wo.weight"]
    with pytest.raises(errors.UserError, match=r"DenseReluDense\.wo"):
        hf_checkpoints.from_hf_state_dict(TINY, state)
    state = hf_checkpoints.to_hf_state_dict(hf_params, TINY)
    state["encoder.block.0.layer.0.SelfAttention.q.bias"] = np.zeros(32, np.float32)
    with pytest.raises(
        errors.UserError, match=r"unexpected \(HF\) encoder.block.0.layer.0.SelfAttention.q.bias"
    ):
        hf_checkpoints.from_hf_state_dict(TINY, state)


def test_unknown_paths_are_clear_errors(tmp_path):
    with pytest.raises(errors.UserError, match="checkpoint not found"):
        checkpoints.load_checkpoint(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(errors.UserError, match="holds no known checkpoint"):
        checkpoints.load_checkpoint(tmp_path / "empty")
    with pytest.raises(errors.UserError, match="dtype"):
        checkpoints.load_checkpoint(tmp_path / "empty", dtype="float16")


def test_runner_checkpoint_store_steps_load(tmp_path, hf_params):
    from seahorse_t5x.runner.checkpointing import CheckpointStore

    store = CheckpointStore(tmp_path, keep=2)
    meta = {"model_config": TINY.to_dict(), "vocabulary": "demo"}
    shifted = flax.traverse_util.unflatten_dict(
        {k: v * 2.0 for k, v in _flat(hf_params).items()}, sep="/"
    )
    store.save(10, hf_params, {"mu": np.zeros(3)}, {"step": 10}, meta)
    store.save(20, shifted, {"mu": np.zeros(3)}, {"step": 20}, meta)
    config, latest = checkpoints.load_checkpoint(tmp_path)
    assert config == TINY
    _assert_same_params(latest, shifted)
    store.mark_best(10, "roc_auc", 0.7)
    _, best = checkpoints.load_checkpoint(tmp_path)
    _assert_same_params(best, hf_params)

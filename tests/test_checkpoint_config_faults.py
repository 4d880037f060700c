"""A checkpoint whose configuration is incomplete or of another model: every reader (HF
`config.json`, T5X msgpack, the runner's orbax `meta`) names the file in its one line."""

from __future__ import annotations

import dataclasses
import json

import jax
import pytest
from mt5_fixtures import TINY, save_hf_tiny, write_t5x_checkpoint

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoints, mt5


def _tiny_params():
    return mt5.unbox(mt5.init_params(TINY, jax.random.PRNGKey(0)))


@dataclasses.dataclass(frozen=True)
class _RecordedAs(type(TINY)):
    """TINY's dimensions, recorded in the meta with `recorded` merged into its config."""

    recorded: tuple = ()

    def to_dict(self):
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(type(TINY))}
        return {**values, **dict(self.recorded)}


class TestConfigErrorsNameTheFile:
    """One class for every checkpoint reader: each message is one line naming the file."""

    @pytest.fixture(scope="class")
    def hf_dir(self, tmp_path_factory):
        directory = tmp_path_factory.mktemp("hf") / "snapshot"
        save_hf_tiny(directory, "safetensors", seed=1)
        return directory

    def _hf_with(self, hf_dir, tmp_path, edit):
        directory = tmp_path / "snapshot"
        directory.mkdir()
        for path in hf_dir.iterdir():
            (directory / path.name).write_bytes(path.read_bytes())
        config = json.loads((directory / "config.json").read_text())
        edit(config)
        (directory / "config.json").write_text(json.dumps(config))
        return directory

    @pytest.mark.parametrize(
        "key", ["vocab_size", "d_model", "num_heads", "d_kv", "d_ff", "num_layers"]
    )
    def test_hf_config_lacking_a_key(self, hf_dir, tmp_path, key):
        directory = self._hf_with(hf_dir, tmp_path, lambda config: config.pop(key))
        with pytest.raises(errors.DataError) as error:
            checkpoints.load_checkpoint(directory)
        assert str(error.value) == (
            f"{directory / 'config.json'} field {key!r}: missing; an mT5 config.json sets "
            "vocab_size, d_model, num_heads, d_kv, d_ff, num_layers (the snapshot may be "
            "incomplete: download it again)"
        )

    def test_hf_config_of_another_model(self, hf_dir, tmp_path):
        directory = self._hf_with(
            hf_dir, tmp_path, lambda config: config.update(feed_forward_proj="relu")
        )
        with pytest.raises(errors.UserError) as error:
            checkpoints.load_checkpoint(directory)
        assert str(error.value) == (
            f"{directory / 'config.json'}: HF config has feed_forward_proj='relu'; only "
            "gated-gelu (T5.1.1/mT5) is supported"
        )

    def test_hf_config_with_a_wrong_type(self, hf_dir, tmp_path):
        directory = self._hf_with(hf_dir, tmp_path, lambda config: config.update(d_ff="64"))
        with pytest.raises(errors.DataError) as error:
            checkpoints.load_checkpoint(directory)
        assert str(error.value) == (
            f"{directory / 'config.json'} field 'd_ff': expected a positive integer, got '64'"
        )

    def test_t5x_checkpoint_lacking_a_parameter_the_config_is_read_from(self, tmp_path):
        params = _tiny_params()
        params = {k: v for k, v in params.items() if k != "token_embedder"}
        step = write_t5x_checkpoint(tmp_path / "t5x_model", params, step=300)
        with pytest.raises(errors.UserError) as error:
            checkpoints.load_checkpoint(step)
        assert str(error.value) == (
            f"T5X checkpoint {step / 'checkpoint'} lacks the parameter "
            "token_embedder/embedding; is it an mT5 (T5.1.1) checkpoint?"
        )

    @pytest.mark.parametrize(
        ("recorded", "reason"),
        [
            (
                (("hidden_act", "relu"),),
                "unknown mT5 config keys ['hidden_act']; expected a subset of ",
            ),
            ((("dtype", "float16"),), "model dtype 'float16' is not supported"),
        ],
    )
    def test_orbax_meta_with_a_config_of_another_model(self, tmp_path, recorded, reason):
        config = _RecordedAs(**dataclasses.asdict(TINY), recorded=recorded)
        step = checkpoints.save_params(tmp_path / "export", config, _tiny_params())
        with pytest.raises(errors.UserError) as error:
            checkpoints.load_checkpoint(step)
        message = str(error.value)
        assert message.startswith(f"checkpoint {step}: meta model_config is invalid: {reason}")
        assert "\n" not in message

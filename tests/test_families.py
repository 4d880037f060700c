"""The model-family registry (`model/families.py`)."""

from __future__ import annotations

import json

import pytest

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoints, configs, families, hf_checkpoints, mt5


def test_the_registered_families_and_their_vocabularies():
    assert families.names() == ("mt5", "mt0", "t5.1.1", "flan-t5")
    assert families.get("mt5").config("small").vocab_size == 250112
    assert families.get("flan-t5").config("base").vocab_size == 32128
    flan = families.get("flan-t5").config("base", dropout_rate=0.0)
    assert (flan.family, flan.emb_dim, flan.num_encoder_layers, flan.dropout_rate) == (
        "flan-t5",
        768,
        12,
        0.0,
    )
    # `tiny` keeps its own small vocabulary in every family (tests and the demo).
    assert families.get("t5.1.1").config("tiny").vocab_size == 3072


def test_unknown_names_are_refused_naming_the_known_ones():
    with pytest.raises(errors.UserError, match=r"unknown model family 'llama'.*'flan-t5'"):
        families.get("llama")
    with pytest.raises(ValueError, match="already registered"):
        families.register(families.get("mt5"))


@pytest.mark.parametrize(
    "name, family",
    [
        ("google/flan-t5-large", "flan-t5"),
        ("bigscience/mt0-xxl@main", "mt0"),
        ("google/seahorse-large-q4", "mt5"),
        ("google/mt5-small", "mt5"),
        ("google/t5-v1_1-base", "t5.1.1"),
        ("someone/other-model", None),
    ],
)
def test_hub_names_name_their_family(name, family):
    found = families.of_hub_name(name)
    assert (found.name if found else None) == family


def test_hf_config_family_by_recorded_name_then_model_type():
    assert families.of_hf_config({"model_type": "t5"}).name == "t5.1.1"
    assert families.of_hf_config({"model_type": "mt5"}).name == "mt5"
    named = {"model_type": "t5", "_name_or_path": "google/flan-t5-small"}
    assert families.of_hf_config(named).name == "flan-t5"
    # A recorded name of another type does not override the type.
    assert families.of_hf_config({"model_type": "t5", "_name_or_path": "mt0-base"}).name == (
        "t5.1.1"
    )
    with pytest.raises(errors.UserError, match="model_type='bart'"):
        families.of_hf_config({"model_type": "bart"})


def test_a_flan_t5_checkpoint_round_trips_as_t5_with_its_family(tmp_path):
    import jax

    config = families.get("flan-t5").config("tiny", dropout_rate=0.0)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
    hf_checkpoints.save_hf(tmp_path, config, params)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["model_type"] == "t5"
    assert written["architectures"] == ["T5ForConditionalGeneration"]
    loaded, _ = checkpoints.load_checkpoint(tmp_path)
    # Without a recorded Hub name the `t5` type reads as the base family.
    assert loaded.family == "t5.1.1"
    assert loaded.replace(family="flan-t5") == config


def test_build_gives_the_family_module_and_configs_keep_their_family():
    config = families.get("mt0").config("tiny")
    assert isinstance(families.build(config), mt5.MT5)
    assert configs.MT5Config.from_dict(config.to_dict()).family == "mt0"
    # Checkpoint metas written before families existed read as mT5.
    old = {k: v for k, v in config.to_dict().items() if k != "family"}
    assert configs.MT5Config.from_dict(old).family == "mt5"

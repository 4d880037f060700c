"""Flan-T5 (HF `t5`, T5.1.1 architecture) and mT0 (HF `mt5`) checkpoints in the Flax model.

Tiny random checkpoints of each config are built with transformers, saved as safetensors,
loaded through `checkpoints.load_checkpoint` and compared with HF PyTorch logits.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from mt5_fixtures import flax_logits, hf_logits, padded_batch, perturb

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoints, configs

# Shapes unlike the mT5 fixture's (other depths, heads and buckets), so a mapping that only
# works for one shape cannot pass.
TINY_SHAPES = dict(
    d_model=48,
    d_kv=12,
    d_ff=80,
    num_layers=3,
    num_decoder_layers=2,
    num_heads=3,
    relative_attention_num_buckets=16,
    relative_attention_max_distance=40,
)
# Published configs (config.json on the hub), shapes only: google/flan-t5-xxl, bigscience/mt0-xxl.
FLAN_T5_XXL_CONFIG = {
    "architectures": ["T5ForConditionalGeneration"],
    "d_ff": 10240,
    "d_kv": 64,
    "d_model": 4096,
    "decoder_start_token_id": 0,
    "dense_act_fn": "gelu_new",
    "dropout_rate": 0.1,
    "eos_token_id": 1,
    "feed_forward_proj": "gated-gelu",
    "is_encoder_decoder": True,
    "is_gated_act": True,
    "layer_norm_epsilon": 1e-06,
    "model_type": "t5",
    "num_decoder_layers": 24,
    "num_heads": 64,
    "num_layers": 24,
    "pad_token_id": 0,
    "relative_attention_max_distance": 128,
    "relative_attention_num_buckets": 32,
    "tie_word_embeddings": False,
    "vocab_size": 32128,
}
MT0_XXL_CONFIG = {
    "architectures": ["MT5ForConditionalGeneration"],
    "d_ff": 10240,
    "d_kv": 64,
    "d_model": 4096,
    "decoder_start_token_id": 0,
    "dense_act_fn": "gelu_new",
    "dropout_rate": 0.1,
    "eos_token_id": 1,
    "feed_forward_proj": "gated-gelu",
    "is_encoder_decoder": True,
    "is_gated_act": True,
    "layer_norm_epsilon": 1e-06,
    "model_type": "mt5",
    "num_decoder_layers": 24,
    "num_heads": 64,
    "num_layers": 24,
    "pad_token_id": 0,
    "relative_attention_max_distance": 128,
    "relative_attention_num_buckets": 32,
    "tie_word_embeddings": False,
    "tokenizer_class": "T5Tokenizer",
    "vocab_size": 250112,
}


def _hf_model(family: str, vocab_size: int, seed: int):
    import torch
    import transformers

    torch.manual_seed(seed)
    common = dict(
        vocab_size=vocab_size,
        dropout_rate=0.0,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
        **TINY_SHAPES,
    )
    if family == "flan_t5":
        model = transformers.T5ForConditionalGeneration(transformers.T5Config(**common))
    else:
        model = transformers.MT5ForConditionalGeneration(transformers.MT5Config(**common))
    return perturb(model.eval())


def _publish_untied(directory, seed: int) -> None:
    """Rewrites a transformers-5 save into the published Flan-T5/mT0 layout: config
    `tie_word_embeddings: false` and an `lm_head.weight` of its own beside `shared.weight`."""
    from safetensors.numpy import load_file, save_file

    weights = load_file(directory / "model.safetensors")
    rng = np.random.default_rng(seed)
    weights["lm_head.weight"] = rng.normal(size=weights["shared.weight"].shape).astype(np.float32)
    save_file(weights, str(directory / "model.safetensors"), metadata={"format": "pt"})
    hf_config = json.loads((directory / "config.json").read_text())
    hf_config["tie_word_embeddings"] = False
    hf_config.pop("scale_decoder_outputs", None)
    (directory / "config.json").write_text(json.dumps(hf_config, indent=2))


@pytest.fixture(
    scope="module",
    params=[("flan_t5", "published"), ("flan_t5", "tied"), ("mt0", "published"), ("mt0", "tied")],
    ids=lambda p: "-".join(p),
)
def saved(request, tmp_path_factory):
    """(family, layout, HF PyTorch model as loaded from disk, directory)."""
    import transformers

    family, layout = request.param
    vocab_size = 640 if family == "flan_t5" else 1024
    directory = tmp_path_factory.mktemp(f"{family}_{layout}")
    _hf_model(family, vocab_size, seed=3).save_pretrained(directory)
    if layout == "published":
        _publish_untied(directory, seed=4)
    cls = (
        transformers.T5ForConditionalGeneration
        if family == "flan_t5"
        else transformers.MT5ForConditionalGeneration
    )
    return family, layout, cls.from_pretrained(directory).eval(), directory


def test_saved_checkpoint_is_the_hf_format(saved):
    family, layout, model, directory = saved
    hf_config = json.loads((directory / "config.json").read_text())
    assert hf_config["model_type"] == ("t5" if family == "flan_t5" else "mt5")
    assert hf_config["tie_word_embeddings"] is (layout == "tied")
    assert (directory / "model.safetensors").is_file()
    assert checkpoints.detect_format(directory)[0] == "hf"
    lm_head = model.lm_head.weight.detach().numpy()
    shared = model.shared.weight.detach().numpy()
    # The published layout's own output projection is what HF uses.
    assert np.array_equal(lm_head, shared) is (layout == "tied")


@pytest.mark.parametrize("lengths", [[9, 33, 2], [33, 33, 17]])
def test_logits_match_hf_pytorch(saved, lengths):
    _, _, model, directory = saved
    config, params = checkpoints.load_checkpoint(directory)
    assert config.emb_dim == 48 and config.num_heads == 3 and config.head_dim == 12
    assert (config.num_encoder_layers, config.num_decoder_layers) == (3, 2)
    enc = np.zeros((3, 40), np.int32)
    batch = padded_batch(lengths, config.vocab_size, seed=sum(lengths))
    enc[:, : batch.shape[1]] = batch
    dec = np.concatenate(
        [np.zeros((3, 1), np.int32), padded_batch([3, 3, 3], config.vocab_size, seed=7)], axis=1
    )
    ours = flax_logits(params, enc, dec, config)
    theirs = hf_logits(model, enc, dec)
    assert ours.shape == (3, 4, config.vocab_size)
    np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=1e-4)
    # The first decoder step's two answer logits, as the scorer reads them.
    np.testing.assert_allclose(ours[:, 0, [5, 9]], theirs[:, 0, [5, 9]], atol=1e-4)


def test_published_configs_give_the_published_sizes():
    flan = configs.from_hf_config(FLAN_T5_XXL_CONFIG)
    assert flan == configs.get_config("xxl", vocab_size=32128)
    mt0 = configs.from_hf_config(MT0_XXL_CONFIG)
    assert mt0 == configs.get_config("xxl")


def test_original_t5_is_refused():
    original = dict(FLAN_T5_XXL_CONFIG, feed_forward_proj="relu", tie_word_embeddings=True)
    with pytest.raises(errors.UserError, match="gated-gelu"):
        configs.from_hf_config(original)
    # Tied and rescaled: older transformers (no scale_decoder_outputs) or an explicit true.
    for extra in ({}, {"scale_decoder_outputs": True}):
        tied = dict(FLAN_T5_XXL_CONFIG, tie_word_embeddings=True, **extra)
        with pytest.raises(errors.UserError, match="tie_word_embeddings"):
            configs.from_hf_config(tied)
    # transformers 5's own T5.1.1 layout: tied, not rescaled.
    v5 = dict(FLAN_T5_XXL_CONFIG, tie_word_embeddings=True, scale_decoder_outputs=False)
    assert configs.from_hf_config(v5) == configs.from_hf_config(FLAN_T5_XXL_CONFIG)

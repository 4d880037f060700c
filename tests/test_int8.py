"""Weight-only int8 scoring (`param_dtype="int8"`): the program equals float32 on the
dequantized weights, `mlp/wo` stays bfloat16, the fidelity bound against float32, the bytes
`plan --scoring` counts, and non-finite weights refused."""

from __future__ import annotations

import flax
import ml_dtypes
import numpy as np
import pytest
from mt5_fixtures import save_hf_tiny

from seahorse_t5x import errors
from seahorse_t5x.inference import engine, placement, quantize
from seahorse_t5x.inference import scorer as scorer_lib
from seahorse_t5x.model import checkpoints, configs

MAX_LEN = 64
ARTICLES = [
    "The council approved the new budget on Tuesday after a long debate.",
    "Heavy rain flooded several streets in the old town. " * 4,
    "A local team won the regional cup.",
    "Scientists reported a new species of frog found in the mountains.",
    "Prices rose.",
    "The museum opened a new wing with paintings from the old masters.",
]
SUMMARIES = [
    "The budget was approved.",
    "Rain flooded the streets of the old town.",
    "A team won a cup.",
    "A new frog species was found.",
    "Prices went up sharply this month.",
    "A museum wing opened.",
]


@pytest.fixture(autouse=True)
def _compilation_cache_in_tmp(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SEAHORSE_COMPILATION_CACHE", str(tmp_path_factory.getbasetemp() / "xla"))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("int8_model")
    save_hf_tiny(directory, "safetensors", seed=7)
    return directory


def _scorer(checkpoint, param_dtype, **kw):
    return scorer_lib.Scorer(
        checkpoint,
        vocab="demo",
        input_length=MAX_LEN,
        batch_size=2,
        param_dtype=param_dtype,
        **kw,
    )


def _logits(scorer):
    tokens = scorer.encode(ARTICLES, SUMMARIES).tokens
    return scorer.engine.label_logits(scorer.params, tokens)


def _dequantized_in_numpy(model_dir):
    """The weights int8 scoring stands for, computed here: each projection but `mlp/wo`
    rounded to int8 with max|w|/127 per output column, the rest rounded to bfloat16."""
    config, params = checkpoints.load_checkpoint(model_dir)
    flat = flax.traverse_util.flatten_dict(params, sep="/")
    out = {}
    for name, w in flat.items():
        w = np.asarray(w, np.float32)
        if name.endswith("/kernel") and "/mlp/wo/" not in name:
            scale = np.abs(w).max(axis=0) / 127
            out[name] = np.clip(np.rint(w / scale), -127, 127) * scale
        else:
            out[name] = w.astype(ml_dtypes.bfloat16).astype(np.float32)
    return config, flax.traverse_util.unflatten_dict(out, sep="/")


def test_int8_equals_float32_on_the_dequantized_weights(model_dir):
    int8 = _scorer(model_dir, "int8")
    reference = _scorer(_dequantized_in_numpy(model_dir), "float32")
    np.testing.assert_allclose(_logits(int8), _logits(reference), rtol=1e-5, atol=1e-5)
    packed = _scorer(model_dir, "int8", packing=True)
    np.testing.assert_allclose(
        packed.score(ARTICLES, SUMMARIES), int8.score(ARTICLES, SUMMARIES), atol=1e-6
    )


def test_the_weights_kept_in_int8_and_in_bfloat16(model_dir):
    flat = flax.traverse_util.flatten_dict(_scorer(model_dir, "int8").params, sep="/")
    kinds = {name: str(value.dtype) for name, value in flat.items()}
    for stack in ("encoder/layers/layer", "decoder/layers/layer"):
        assert kinds[f"{stack}/mlp/wo/kernel"] == "bfloat16"
        assert kinds[f"{stack}/mlp/wi_0/kernel"] == "int8"
        assert kinds[f"{stack}/mlp/wi_0/kernel_scale"] == "float32"
    assert kinds["encoder/layers/layer/attention/query/kernel"] == "int8"
    assert kinds["decoder/logits_dense/kernel"] == "int8"
    assert kinds["token_embedder/embedding"] == "bfloat16"
    assert flat["encoder/layers/layer/attention/query/kernel_scale"].shape == (2, 32)
    # encoder: q, k, v, o, wi_0, wi_1; decoder: two attentions, wi_0, wi_1; the head.
    assert sum(k.endswith("_scale") for k in kinds) == 6 + 10 + 1


def test_int8_fidelity_against_float32(model_dir):
    """The bound on a random tiny model (docs/scoring.md gives it on real-sized models)."""
    float32 = _scorer(model_dir, "float32")
    int8 = _scorer(model_dir, "int8")
    logits32, logits8 = _logits(float32), _logits(int8)
    margin32 = logits32[:, 0] - logits32[:, 1]
    margin8 = logits8[:, 0] - logits8[:, 1]
    assert np.abs(margin8 - margin32).max() < 0.05 * np.abs(margin32).max()
    p32, p8 = engine.p_yes_from_label_logits(logits32), engine.p_yes_from_label_logits(logits8)
    assert np.abs(p8 - p32).max() < 0.02  # 0.0153 measured on this 32-wide model
    assert np.array_equal(np.argsort(p8), np.argsort(p32))


def test_bytes_per_device_of_int8_weights():
    c = configs.get_config("tiny")
    e, h, m, v = c.emb_dim, c.num_heads * c.head_dim, c.mlp_dim, c.vocab_size
    # Counted here from the shapes: int8 kernels (1 byte) with float32 scales per output
    # column (4 bytes); `wo`, norms, embedding and position tables in bfloat16 (2 bytes).
    attention = 4 * e * h + 4 * (3 * h + e)
    gated_in = 2 * e * m + 4 * (2 * m)
    encoder_layer = attention + gated_in + 2 * (m * e) + 2 * (2 * e)
    decoder_layer = 2 * attention + gated_in + 2 * (m * e) + 2 * (3 * e)
    rest = 2 * v * e + (e * v + 4 * v) + 2 * 2 * (c.relative_attention_num_buckets * c.num_heads)
    rest += 2 * 2 * e  # the final norms
    expected = c.num_encoder_layers * encoder_layer + c.num_decoder_layers * decoder_layer + rest
    assert placement.bytes_per_device(c, {"data": 1, "model": 1}, "int8") == expected
    xxl = configs.get_config("xxl")
    int8 = placement.bytes_per_device(xxl, {"data": 1, "model": 1}, "int8")
    assert (
        int8
        < 15 * 2**30
        < 24 * 2**30
        < placement.bytes_per_device(xxl, {"data": 1, "model": 1}, "bfloat16")
    )


def test_non_finite_weights_are_refused_in_int8(model_dir, tmp_path):
    import shutil

    from safetensors.numpy import load_file, save_file

    shutil.copy(model_dir / "config.json", tmp_path / "config.json")
    state = load_file(str(model_dir / "model.safetensors"))
    key = "encoder.block.0.layer.0.SelfAttention.q.weight"
    state[key][0, 0] = np.nan
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(errors.UserError, match="attention/query/kernel holds NaN or infinite"):
        _scorer(tmp_path, "int8")


def test_is_quantized():
    assert quantize.is_quantized("decoder/layers_1/encoder_decoder_attention/out/kernel")
    assert not quantize.is_quantized("decoder/layers_1/mlp/wo/kernel")
    assert not quantize.is_quantized("token_embedder/embedding")


def test_a_kernel_int8_would_mostly_zero_is_refused(model_dir, tmp_path):
    import shutil

    from safetensors.numpy import load_file, save_file

    shutil.copy(model_dir / "config.json", tmp_path / "config.json")
    state = load_file(str(model_dir / "model.safetensors"))
    key = "decoder.block.1.layer.2.DenseReluDense.wi_1.weight"  # HF [out, in]
    state[key][:, 0] = 1000.0 * np.abs(state[key]).max()  # one outlier per output column
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(errors.UserError) as raised:
        _scorer(tmp_path, "int8")
    message = str(raised.value)
    assert message.startswith("decoder/layers_1/mlp/wi_1/kernel: int8 would round ")
    assert message.endswith("score this model with `param_dtype` bfloat16")
    # The model as saved passes: few of its weights round to zero.
    meter = quantize.ZeroedMeter()
    kernel = load_file(str(model_dir / "model.safetensors"))[key].T
    meter.quantize(kernel, quantize.channel_scales(kernel))
    assert 0 < meter.zeroed_share < quantize.MAX_ZEROED_SHARE
    # Counted independently: |w| < scale / 2 rounds to zero.
    scale = np.abs(kernel).max(axis=0) / 127
    assert meter.zeroed == int((np.abs(kernel) < scale / 2).sum())

"""The Flax mT5 against HF transformers' PyTorch mT5, plus packing, masks and configs."""

from __future__ import annotations

import functools

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mt5_fixtures import (
    TINY,
    flax_logits,
    hf_logits,
    hf_tiny_model,
    jitted_apply,
    padded_batch,
)

from seahorse_t5x import errors
from seahorse_t5x.inference import placement
from seahorse_t5x.model import configs, hf_checkpoints, mt5, partitioning


@pytest.fixture(scope="module")
def hf_and_params():
    model = hf_tiny_model(seed=0)
    params = hf_checkpoints.from_hf_state_dict(TINY, model.state_dict())
    return model, params


def _flax_logits(params, enc, dec, config=TINY, **kw):
    return flax_logits(params, enc, dec, config, **kw)


# Every input below is padded to one of these shapes, so each compiles once.
ENC_LEN, DEC_LEN, ROWS = 64, 5, 3


def _decoder_inputs(rows: int, seed: int = 0) -> np.ndarray:
    """Start id 0 followed by random shifted targets: [rows, DEC_LEN]."""
    targets = padded_batch([DEC_LEN - 1] * rows, TINY.vocab_size, seed=seed)
    return np.concatenate([np.zeros((rows, 1), np.int32), targets], axis=1)


@pytest.mark.parametrize("lengths", [[3, 64, 30], [5, 17, 40], [64, 2, 1]])
def test_logits_match_hf_with_padding(hf_and_params, lengths):
    model, params = hf_and_params
    enc = np.zeros((ROWS, ENC_LEN), np.int32)
    batch = padded_batch(lengths, TINY.vocab_size, seed=sum(lengths))
    enc[:, : batch.shape[1]] = batch
    dec = _decoder_inputs(ROWS, seed=len(lengths))
    ours = _flax_logits(params, enc, dec)
    theirs = hf_logits(model, enc, dec)
    assert ours.shape == (ROWS, DEC_LEN, TINY.vocab_size)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=1e-4)


def test_scanned_layers_give_hf_logits_from_stacked_parameters(hf_and_params):
    model, params = hf_and_params
    placer = placement.Placer(TINY, partitioning.create_mesh())
    stacked = placer.stack_layers(placer.place_tree(params))
    # The layout `init_params(scan_layers=True)` makes: same names, shapes and axes.
    abstract = mt5.abstract_params(TINY, scan_layers=True)
    shapes = flax.traverse_util.flatten_dict(mt5.unbox(abstract), sep="/")
    flat = flax.traverse_util.flatten_dict(stacked, sep="/")
    assert {k: v.shape for k, v in flat.items()} == {k: v.shape for k, v in shapes.items()}
    axes = flax.traverse_util.flatten_dict(mt5.logical_axes(abstract), sep="/")
    assert tuple(axes["encoder/layers/layer/mlp/wi_0/kernel"]) == ("layers", "embed", "mlp")
    wo = flat["decoder/layers/layer/mlp/wo/kernel"]
    assert wo.shape == (TINY.num_decoder_layers, TINY.mlp_dim, TINY.emb_dim)
    np.testing.assert_array_equal(wo[1], params["decoder"]["layers_1"]["mlp"]["wo"]["kernel"])
    assert mt5.is_scanned(stacked) and not mt5.is_scanned(params)

    enc = padded_batch([40, 64, 9], TINY.vocab_size, seed=11)
    dec = _decoder_inputs(ROWS, seed=3)
    scanned = jax.jit(lambda p, e, d: mt5.MT5(TINY, scan_layers=True).apply({"params": p}, e, d))(
        stacked, enc, dec
    )
    np.testing.assert_allclose(np.asarray(scanned), hf_logits(model, enc, dec), atol=1e-4)
    np.testing.assert_allclose(np.asarray(scanned), _flax_logits(params, enc, dec), atol=1e-5)


def test_bfloat16_compute_is_close_to_float32(hf_and_params):
    _, params = hf_and_params
    enc = padded_batch([12, 7, 64], TINY.vocab_size)
    dec = _decoder_inputs(ROWS)
    full = _flax_logits(params, enc, dec)
    half = _flax_logits(params, enc, dec, config=TINY.replace(dtype="bfloat16"))
    assert half.dtype == np.float32
    # bf16 has ~3 significant digits: close, not equal.
    assert np.max(np.abs(full - half)) < 0.1 * np.max(np.abs(full))
    assert not np.array_equal(full, half)


def _equations(jaxpr) -> list:
    """Every equation of a jaxpr and of the jaxprs inside it (jit, custom_jvp, scan)."""
    found = []
    for eqn in jaxpr.eqns:
        found.append(eqn)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    found.extend(_equations(inner))
    return found


def _model_equations(config, scan_layers=False) -> list:
    params = mt5.abstract_params(config, scan_layers=scan_layers)
    enc = jax.ShapeDtypeStruct((2, 16), jnp.int32)
    dec = jax.ShapeDtypeStruct((2, 3), jnp.int32)
    model = mt5.MT5(config, scan_layers=scan_layers)
    jaxpr = jax.make_jaxpr(lambda p, e, d: model.apply({"params": p}, e, d))(
        mt5.unbox(params), enc, dec
    )
    return _equations(jaxpr.jaxpr)


def _products_per_model(config) -> int:
    # Encoder layer: query, key, value, out, QK^T, weights x V, wi_0, wi_1, wo. Decoder layer:
    # the same attention twice (self, cross) and the MLP. Plus the output projection.
    return 9 * config.num_encoder_layers + 15 * config.num_decoder_layers + 1


@pytest.mark.parametrize("scan_layers", [False, True])
def test_bfloat16_products_take_bfloat16_operands_and_accumulate_in_float32(scan_layers):
    equations = _model_equations(TINY.replace(dtype="bfloat16"), scan_layers)
    products = [e for e in equations if e.primitive.name == "dot_general"]
    # A scanned stack traces its layer once.
    layers = (1, 1) if scan_layers else (TINY.num_encoder_layers, TINY.num_decoder_layers)
    expected = _products_per_model(
        TINY.replace(num_encoder_layers=layers[0], num_decoder_layers=layers[1])
    )
    assert len(products) == expected
    for product in products:
        assert [v.aval.dtype for v in product.invars] == [jnp.bfloat16, jnp.bfloat16]
        assert product.outvars[0].aval.dtype == jnp.float32
        assert product.params["preferred_element_type"] == jnp.float32
    # bfloat16 only feeds products: nothing else (norms, softmax, GELU, residual adds,
    # position bias) computes in it.
    makes_bf16 = {
        e.primitive.name
        for e in equations
        if any(getattr(v.aval, "dtype", None) == jnp.bfloat16 for v in e.outvars)
    }
    assert makes_bf16 <= {"convert_element_type", "transpose", "reshape"}, makes_bf16


def test_float32_model_holds_no_bfloat16():
    equations = _model_equations(TINY)
    products = [e for e in equations if e.primitive.name == "dot_general"]
    assert len(products) == _products_per_model(TINY)
    for e in equations:
        for v in list(e.invars) + list(e.outvars):
            assert getattr(v.aval, "dtype", None) != jnp.bfloat16, e


@pytest.mark.parametrize("scan_layers", [False, True])
def test_head_major_attention_gives_the_same_logits_with_and_without_packing(
    hf_and_params, scan_layers
):
    model, params = hf_and_params
    if scan_layers:
        placer = placement.Placer(TINY, partitioning.create_mesh())
        params = placer.stack_layers(placer.place_tree(params))
    enc = padded_batch([40, 64, 9], TINY.vocab_size, seed=12)
    dec = _decoder_inputs(ROWS, seed=4)
    segments = (enc > 0).astype(np.int32)
    segments[1, 20:] = 2  # row 1 holds two packed inputs
    dec_segments = np.ones_like(dec)
    dec_segments[1, 3:] = 2

    def logits(head_major, **segment_ids):
        net = mt5.MT5(TINY, scan_layers=scan_layers, head_major_attention=head_major)
        return np.asarray(
            jax.jit(lambda p: net.apply({"params": p}, enc, dec, **segment_ids))(params)
        )

    for segment_ids in ({}, {"encoder_segment_ids": segments, "decoder_segment_ids": dec_segments}):
        default, head_major = logits(False, **segment_ids), logits(True, **segment_ids)
        np.testing.assert_allclose(head_major, default, atol=2e-5, rtol=1e-5)
    np.testing.assert_allclose(head_major[0], hf_logits(model, enc, dec)[0], atol=1e-4)


def test_packed_examples_equal_each_alone(hf_and_params):
    _, params = hf_and_params
    enc_a, enc_b = padded_batch([7], 500, seed=1)[0], padded_batch([11], 500, seed=2)[0]
    dec_a = np.array([0, 5, 9], np.int32)
    dec_b = np.array([0, 7], np.int32)
    # Row 0: a alone; row 1: b alone; row 2: a and b packed. Trailing padding everywhere.
    enc = np.zeros((ROWS, ENC_LEN), np.int32)
    enc[0, :7], enc[1, :11] = enc_a, enc_b
    enc[2, :7], enc[2, 7:18] = enc_a, enc_b
    enc_seg = (enc > 0).astype(np.int32)
    enc_seg[2, 7:18] = 2
    enc_pos = np.zeros_like(enc)
    enc_pos[0, :7], enc_pos[1, :11] = np.arange(7), np.arange(11)
    enc_pos[2, :7], enc_pos[2, 7:18] = np.arange(7), np.arange(11)
    dec = np.zeros((ROWS, DEC_LEN), np.int32)
    dec[0, :3], dec[1, :2] = dec_a, dec_b
    dec[2, :3], dec[2, 3:5] = dec_a, dec_b
    dec_seg = np.zeros_like(dec)
    dec_seg[0, :3], dec_seg[1, :2] = 1, 1
    dec_seg[2, :3], dec_seg[2, 3:5] = 1, 2
    dec_pos = np.zeros_like(dec)
    dec_pos[0, :3], dec_pos[1, :2] = np.arange(3), np.arange(2)
    dec_pos[2, :3], dec_pos[2, 3:5] = np.arange(3), np.arange(2)
    logits = _flax_logits(
        params,
        enc,
        dec,
        encoder_segment_ids=jnp.asarray(enc_seg),
        decoder_segment_ids=jnp.asarray(dec_seg),
        encoder_positions=jnp.asarray(enc_pos),
        decoder_positions=jnp.asarray(dec_pos),
    )
    np.testing.assert_allclose(logits[2, :3], logits[0, :3], atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(logits[2, 3:5], logits[1, :2], atol=1e-4, rtol=1e-4)
    # Segment ids really separate them: without, b's decoder sees a.
    unpacked = _flax_logits(params, enc, dec)
    assert not np.allclose(unpacked[2, 3:5], logits[1, :2], atol=1e-3)
    # And "alone with segment ids" equals "alone with the token padding mask".
    np.testing.assert_allclose(unpacked[0, :3], logits[0, :3], atol=1e-5, rtol=1e-5)


def test_encode_then_decode_equals_call_and_hidden_gives_logits(hf_and_params):
    _, params = hf_and_params
    model = mt5.MT5(TINY)
    enc = jnp.asarray(padded_batch([9, 4, 64], TINY.vocab_size))
    dec = jnp.asarray(_decoder_inputs(ROWS))
    full = jitted_apply(TINY)(params, enc, dec)

    @jax.jit
    def two_stage(params, enc, dec):
        encoded = model.apply({"params": params}, enc, method=mt5.MT5.encode)
        return model.apply(
            {"params": params}, encoded, enc, dec, return_hidden=True, method=mt5.MT5.decode
        )

    hidden = two_stage(params, enc, dec)
    assert hidden.shape == (ROWS, DEC_LEN, TINY.emb_dim)
    columns = np.array([17, 42])
    two = np.asarray(hidden @ params["decoder"]["logits_dense"]["kernel"][:, columns])
    np.testing.assert_allclose(two, np.asarray(full)[:, :, columns], atol=1e-5, rtol=1e-5)


def test_dropout_changes_outputs_only_when_enabled(hf_and_params):
    _, params = hf_and_params
    config = configs.get_config("tiny", dropout_rate=0.5)
    enc = jnp.asarray(padded_batch([6, 30, 64], config.vocab_size))

    # The encoder alone: the same dropout layers as the decoder, a quarter of the compile.
    @functools.partial(jax.jit, static_argnums=2)
    def encode(params, rng, enable_dropout):
        return mt5.MT5(config).apply(
            {"params": params},
            enc,
            enable_dropout=enable_dropout,
            rngs={"dropout": rng},
            method=mt5.MT5.encode,
        )

    plain = np.asarray(encode(params, jax.random.PRNGKey(1), False))
    again = np.asarray(encode(params, jax.random.PRNGKey(2), False))
    first = np.asarray(encode(params, jax.random.PRNGKey(1), True))
    seeded = np.asarray(encode(params, jax.random.PRNGKey(1), True))
    other = np.asarray(encode(params, jax.random.PRNGKey(2), True))
    np.testing.assert_array_equal(plain, again)  # no dropout: the rng is unused
    np.testing.assert_array_equal(first, seeded)  # seeded
    assert not np.allclose(plain, first)
    assert not np.allclose(first, other)


def test_init_params_names_and_logical_axes():
    boxed = mt5.abstract_params(TINY)
    axes = flax.traverse_util.flatten_dict(mt5.logical_axes(boxed), sep="/")
    assert tuple(axes["token_embedder/embedding"]) == ("vocab", "embed")
    assert tuple(axes["encoder/layers_0/attention/query/kernel"]) == ("embed", "joined_kv")
    assert tuple(axes["decoder/layers_1/encoder_decoder_attention/out/kernel"]) == (
        "joined_kv",
        "embed",
    )
    assert tuple(axes["decoder/layers_0/mlp/wi_1/kernel"]) == ("embed", "mlp")
    assert tuple(axes["encoder/layers_1/mlp/wo/kernel"]) == ("mlp", "embed")
    assert tuple(axes["decoder/logits_dense/kernel"]) == ("embed", "vocab")
    assert tuple(axes["decoder/relpos_bias/rel_embedding"]) == ("heads", "relpos_buckets")
    assert tuple(axes["encoder/encoder_norm/scale"]) == ("embed",)
    # Encoder layer: 2 norms + 4 attention + 3 MLP kernels; decoder layer: 3 + 8 + 3;
    # plus the embedding, 2 relpos tables, 2 final norms and the logits kernel.
    assert len(axes) == 2 * 9 + 2 * 14 + 6
    plain = mt5.unbox(boxed)
    assert all(x.dtype == jnp.float32 for x in jax.tree_util.tree_leaves(plain))


def test_init_params_is_seeded():
    # One layer per stack: the init program's compile time grows with the parameter count.
    small = configs.get_config("tiny", num_encoder_layers=1, num_decoder_layers=1)
    first = mt5.unbox(mt5.init_params(small, jax.random.PRNGKey(7)))
    second = mt5.unbox(mt5.init_params(small, jax.random.PRNGKey(7)))
    embedding = first["token_embedder"]["embedding"]
    np.testing.assert_array_equal(embedding, second["token_embedder"]["embedding"])
    # T5X init: unit-normal embedding, query kernel scaled down by sqrt(head_dim).
    assert 0.9 < float(np.std(embedding)) < 1.1
    query = first["encoder"]["layers_0"]["attention"]["query"]["kernel"]
    key = first["encoder"]["layers_0"]["attention"]["key"]["kernel"]
    assert float(np.std(query)) < 0.6 * float(np.std(key))


def test_abstract_params_of_small_have_published_size():
    abstract = mt5.abstract_params(configs.get_config("small"))
    # mT5-small: 300,176,768 parameters (untied 250,112-row embedding and logits).
    assert mt5.param_count(abstract) == 300_176_768
    leaf = flax.traverse_util.flatten_dict(mt5.unbox(abstract), sep="/")["token_embedder/embedding"]
    assert isinstance(leaf, jax.ShapeDtypeStruct)
    assert leaf.shape == (250112, 512)


def test_config_round_trip_and_errors():
    config = configs.get_config("xxl", dtype="bfloat16")
    assert (config.emb_dim, config.num_heads, config.mlp_dim, config.num_encoder_layers) == (
        4096,
        64,
        10240,
        24,
    )
    assert configs.MT5Config.from_dict(config.to_dict()) == config
    with pytest.raises(errors.UserError, match="float16"):
        configs.get_config("small", dtype="float16")
    with pytest.raises(errors.UserError, match="unknown model size"):
        configs.get_config("huge")
    with pytest.raises(errors.UserError, match="unknown mT5 config keys"):
        configs.MT5Config.from_dict({"emb_dim": 8, "d_model": 8})


def test_from_hf_config_reads_mt5_fields():
    hf = {
        "vocab_size": 250112,
        "d_model": 1024,
        "d_kv": 64,
        "d_ff": 2816,
        "num_layers": 24,
        "num_decoder_layers": 24,
        "num_heads": 16,
        "feed_forward_proj": "gated-gelu",
        "tie_word_embeddings": False,
    }
    assert configs.from_hf_config(hf).replace(dropout_rate=0.1) == configs.get_config("large")
    # transformers >= 5 writes tie_word_embeddings=true for every mt5 model.
    assert configs.from_hf_config({**hf, "model_type": "mt5", "tie_word_embeddings": True})
    with pytest.raises(errors.UserError, match="tie_word_embeddings"):
        configs.from_hf_config({**hf, "model_type": "t5", "tie_word_embeddings": True})
    with pytest.raises(errors.UserError, match="gated-gelu"):
        configs.from_hf_config({**hf, "feed_forward_proj": "relu"})


@pytest.mark.parametrize("size", ["tiny", "small", "xxl"])
def test_to_hf_config_is_the_inverse_of_from_hf_config(size):
    config = configs.get_config(size)
    assert configs.from_hf_config(configs.to_hf_config(config)) == config

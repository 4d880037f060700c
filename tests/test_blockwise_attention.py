"""Blockwise self-attention (`model/attention.py`) in the inference engine: the same P(yes)
as full attention and as HF transformers in float64 at 2048 tokens, with padding and packed
segments, and short buckets' programs unchanged."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mt5_fixtures import (
    TINY,
    eos_tokens,
    hf_float64_label_logits,
    hf_tiny_and_params,
    packed_rows,
    pad_rows,
)

from seahorse_t5x import errors
from seahorse_t5x.inference import engine
from seahorse_t5x.model import attention, attention_bias, layers, mt5

LONG = 2048
LABEL_IDS = (7, 11)  # a program of this module's own (TracedOnce counts its traces)
# The engine's bound against HF (tests/test_scoring.py, tests/test_mt5.py: float32 against
# the reference, 1e-4), and blockwise against full attention (float rounding only).
HF_ATOL = 1e-4
FULL_ATOL = 1e-5


@pytest.fixture(scope="module")
def hf_and_params():
    return hf_tiny_and_params(seed=5)


@functools.cache
def _label_logits(blockwise_from: int | None):
    return jax.jit(
        functools.partial(engine.label_logits, TINY, LABEL_IDS, blockwise_from=blockwise_from)
    )


def _softmax_attention(q, k, v, bias):
    """float64 numpy reference: softmax(q k^T + bias) v."""
    logits = np.einsum("bhqd,bhkd->bhqk", q, k) + bias
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", weights, v)


@pytest.mark.parametrize("length", [256, 300, 700])  # one block; a last block overlapping
def test_query_blocks_equal_softmax_attention_and_keep_masked_rows_finite(length):
    rng = np.random.default_rng(length)
    q, k, v = (rng.standard_normal((2, 3, length, 8)) for _ in range(3))
    bias = rng.standard_normal((2, 3, length, length))
    bias[1, :, :, length - 50 :] = -1e10  # padding keys of row 1
    bias[1, :, length - 50 :, :] = -1e10  # its padding queries: fully masked rows
    expected = _softmax_attention(q, k, v, bias)
    sizes = []

    def block_bias(start, size):
        sizes.append(size)
        return jax.lax.dynamic_slice_in_dim(jnp.asarray(bias, jnp.float32), start, size, axis=2)

    product = functools.partial(layers.einsum, dtype=jnp.float32)
    got = jax.jit(lambda q, k, v: attention.query_blocks(q, k, v, block_bias, product, 256))(
        *(jnp.asarray(x, jnp.float32) for x in (q, k, v))
    )
    got = np.asarray(got)
    assert set(sizes) == {256}  # the bias is asked for one block at a time
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got[0], expected[0], atol=2e-5)
    real = length - 50  # row 1's fully masked queries differ from float64 (ties at -1e10)
    np.testing.assert_allclose(got[1][:, :real], expected[1][:, :real], atol=2e-5)


def test_blockwise_bias_blocks_equal_the_full_bias():
    rng = np.random.default_rng(0)
    length = 600
    segments = np.zeros((2, length), np.int32)
    segments[0, :250], segments[0, 250:590] = 1, 2  # packed, then padding
    segments[1, :] = 1
    table = jnp.asarray(
        rng.standard_normal((TINY.num_heads, TINY.relative_attention_num_buckets)), jnp.float32
    )
    distance = jnp.arange(2 * length - 1) - (length - 1)
    buckets = attention_bias.relative_position_bucket(
        distance, True, TINY.relative_attention_num_buckets, TINY.relative_attention_max_distance
    )
    blockwise = attention_bias.BlockwiseBias(
        jnp.take(table, buckets, axis=1), jnp.asarray(segments)
    )
    # The encoder's full bias, built independently of BlockwiseBias.
    relpos = attention_bias.RelativePositionBiases(TINY, bidirectional=True).apply(
        {"params": {"rel_embedding": table}}, length, length
    )
    full = np.asarray(
        relpos + attention_bias.mask_to_bias(attention_bias.encoder_self_mask(segments, segments))
    )
    for start in (0, 256, length - 256):
        np.testing.assert_array_equal(
            np.asarray(blockwise.block(jnp.int32(start), 256)), full[:, :, start : start + 256]
        )


def test_long_inputs_give_full_attentions_and_hf_float64_logits(hf_and_params):
    model, params = hf_and_params
    # A full row, a padded one, and one of 3 tokens: 2045 fully masked query rows.
    batch = pad_rows(eos_tokens([LONG, 1500, 3], seed=1), LONG)
    assert attention.runs_blockwise(LONG, attention.BLOCKWISE_FROM_LENGTH)
    blockwise = np.asarray(_label_logits(attention.BLOCKWISE_FROM_LENGTH)(params, batch))
    full = np.asarray(_label_logits(None)(params, batch))
    reference = hf_float64_label_logits(model, batch, LABEL_IDS)
    assert np.isfinite(blockwise).all()
    np.testing.assert_allclose(blockwise, full, atol=FULL_ATOL, rtol=0)
    np.testing.assert_allclose(blockwise, reference, atol=HF_ATOL, rtol=0)
    assert np.ptp(reference[:, 0]) > 1e-3  # the rows differ: a wrong mask would show
    assert not np.array_equal(blockwise, full)  # it ran another program


def test_packed_long_rows_stay_finite_and_equal_full_attention(hf_and_params):
    _, params = hf_and_params
    tokens = eos_tokens([900, 700, 400, 1200], seed=2)
    rows = [[0, 1, 2], [3]]  # row 0 packs three inputs, row 1 one input and padding
    batch, segments, decoder_segments = packed_rows(tokens, rows, LONG)

    def packed(blockwise_from):
        fn = functools.partial(
            engine.packed_label_logits, TINY, LABEL_IDS, blockwise_from=blockwise_from
        )
        return np.asarray(jax.jit(fn)(params, batch, segments, decoder_segments))

    blockwise, full = packed(attention.BLOCKWISE_FROM_LENGTH), packed(None)
    assert np.isfinite(blockwise).all()
    np.testing.assert_allclose(blockwise, full, atol=FULL_ATOL, rtol=0)
    # Each packed input scores as it does alone (its own bucket, full attention).
    alone = np.asarray(_label_logits(None)(params, pad_rows([tokens[1]], 768)))
    np.testing.assert_allclose(blockwise[0, 1], alone[0], atol=HF_ATOL)
    # The encoder's padding positions (fully masked rows) are finite too.
    net = mt5.MT5(TINY, head_major_attention=True, blockwise_attention_from=1024)
    encoded = jax.jit(functools.partial(net.apply, method=mt5.MT5.encode))(
        {"params": params}, batch, segments
    )
    assert np.isfinite(np.asarray(encoded)).all()


def test_engine_scores_long_buckets_blockwise_and_short_ones_as_before(hf_and_params, tmp_path):
    model, params = hf_and_params
    tokens = eos_tokens([LONG, 1900, 1100, 1000, 300, 40], seed=3)
    # Its own program folder: programs another test compiled would be read, not traced.
    kw = dict(max_input_length=LONG, batch_size=1, ladder="2", program_cache_dir=tmp_path)
    blockwise = engine.Engine(TINY, LABEL_IDS, **kw)
    full = engine.Engine(TINY, LABEL_IDS, blockwise_attention_from=None, **kw)
    if blockwise.blockwise_attention_from is None:  # `auto` on an accelerator
        blockwise = engine.Engine(TINY, LABEL_IDS, blockwise_attention_from=1024, **kw)
    placer = blockwise.placer()
    stacked = placer.stack_layers(placer.place_tree(params))
    ours = blockwise.label_logits(stacked, tokens)
    theirs = full.label_logits(stacked, tokens)
    plan = blockwise.plan([len(t) for t in tokens])
    short = [int(i) for b in plan if b.length < 1024 for i in b.indices]
    long = [int(i) for b in plan if b.length >= 1024 for i in b.indices]
    assert len(short) >= 1 and len(long) >= 4
    np.testing.assert_array_equal(ours[short], theirs[short])  # the same programs
    np.testing.assert_allclose(ours[long], theirs[long], atol=FULL_ATOL, rtol=0)
    reference = np.concatenate(
        [hf_float64_label_logits(model, pad_rows([t], len(t)), LABEL_IDS) for t in tokens]
    )
    np.testing.assert_allclose(ours, reference, atol=HF_ATOL, rtol=0)
    # One export per side of the bound, not one trace per bucket shape.
    assert len(blockwise.shapes([len(t) for t in tokens])) == 3
    assert blockwise._fn.traces == 2 and full._fn.traces == 1


def test_traced_once_lowers_both_sides_of_the_bound_from_two_exports(hf_and_params):
    _, params = hf_and_params
    jitted = _label_logits(1024)
    once = engine.TracedOnce(jitted, data_size=1, blockwise_from=1024)
    batch = pad_rows(eos_tokens([1000, 1300], seed=4), 1536)
    for length in (1000, 1023, 1024, 1536):
        cut = batch[:, :length].copy()
        got = np.asarray(once.lower(params, cut).compile()(params, cut))
        np.testing.assert_array_equal(got, np.asarray(jitted(params, cut)))
    assert once.traces == 2


@pytest.mark.parametrize(
    "bound, message", [(0, "256 tokens or more"), (255, "256 tokens or more"), ("x", "a length")]
)
def test_engine_refuses_a_bound_below_one_block(bound, message):
    with pytest.raises(errors.UserError, match=message):
        engine.Engine(TINY, LABEL_IDS, max_input_length=LONG, blockwise_attention_from=bound)
    with pytest.raises(ValueError, match=message):
        mt5.MT5(TINY, head_major_attention=True, blockwise_attention_from=bound).init(
            jax.random.PRNGKey(0), jnp.ones((1, 4), jnp.int32), jnp.ones((1, 1), jnp.int32)
        )


def test_auto_runs_blockwise_on_cpus_only():
    assert attention.default_from("cpu") == attention.BLOCKWISE_FROM_LENGTH
    assert attention.default_from("gpu") is None and attention.default_from("tpu") is None
    assert engine.Engine(TINY, LABEL_IDS, max_input_length=LONG).blockwise_attention_from == (
        attention.default_from(jax.devices()[0].platform)
    )


def test_short_buckets_compile_to_the_programs_of_full_attention(hf_and_params):
    _, params = hf_and_params
    batch = pad_rows(eos_tokens([100, 128], seed=6), 128)  # the demo's input length
    without = engine.TracedOnce(_label_logits(None), data_size=1)
    bounded = engine.TracedOnce(_label_logits(1024), data_size=1, blockwise_from=1024)

    def program(once):
        text = once.lower(params, batch).compile().as_text()
        return re.sub(r"metadata=\{[^}]*\}", "", text)  # source lines differ, not the ops

    assert program(bounded) == program(without)


def test_a_symbolic_length_runs_blockwise_only_where_its_bound_decides():
    (bounded_above,) = jax.export.symbolic_shape("length", constraints=("1023 >= length",))
    (bounded_below,) = jax.export.symbolic_shape("length", constraints=("length >= 1024",))
    (free,) = jax.export.symbolic_shape("length")
    assert not attention.runs_blockwise(bounded_above, 1024)
    assert attention.runs_blockwise(bounded_below, 1024)
    assert not attention.runs_blockwise(free, 1024)  # undecided: full attention
    assert not attention.runs_blockwise(4096, None)
    assert [attention.runs_blockwise(n, 1024) for n in (1023, 1024)] == [False, True]

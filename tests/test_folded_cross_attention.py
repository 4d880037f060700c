"""The scoring decoder's folded cross-attention (`attention.MultiHeadAttention.fold_key_value`):
the same logits as projecting the encoder output into keys and values (and as HF in
float64), without those two projections in the program, and packed rows with as many
decoder positions as `head_dim` keep them."""

from __future__ import annotations

import contextlib
import functools

import jax
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

from seahorse_t5x.inference import engine
from seahorse_t5x.model import attention

LABEL_IDS = (5, 9)
# Folded against unfolded: float32 rounding of the same products in another order.
ORDER_ATOL = 1e-5
HF_ATOL = 1e-4  # the engine's bound against HF float64 (tests/test_blockwise_attention.py)
KEY_PROJECTION = "encoder_decoder_attention/key/dot_general"
VALUE_PROJECTION = "encoder_decoder_attention/value/dot_general"


@pytest.fixture(scope="module")
def hf_and_params():
    return hf_tiny_and_params(seed=11)


@contextlib.contextmanager
def _folding(fold: bool):
    """While tracing: folding as the engine has it, or turned off."""
    original = attention.folds_key_value
    if not fold:
        attention.folds_key_value = lambda query_length, config: False
    try:
        yield
    finally:
        attention.folds_key_value = original


@functools.cache
def _jitted(function, fold: bool):
    """`function(TINY, LABEL_IDS, *args)` (the engine's label logits, packed or not) jitted,
    with folding as the engine has it or turned off."""

    def run(*args):
        with _folding(fold):
            return function(TINY, LABEL_IDS, *args, blockwise_from=None)

    return jax.jit(run)


def _label_logits(fold: bool):
    return _jitted(engine.label_logits, fold)


def _packed(fold: bool):
    return _jitted(engine.packed_label_logits, fold)


def test_folded_cross_attention_gives_the_unfolded_and_hf_float64_logits(hf_and_params):
    model, params = hf_and_params
    batch = pad_rows(eos_tokens([40, 17, 64, 3], seed=2), 64)
    folded = np.asarray(_label_logits(True)(params, batch))
    unfolded = np.asarray(_label_logits(False)(params, batch))
    np.testing.assert_allclose(folded, unfolded, atol=ORDER_ATOL, rtol=0)
    reference = hf_float64_label_logits(model, batch, LABEL_IDS)
    np.testing.assert_allclose(folded, reference, atol=HF_ATOL, rtol=0)
    assert np.max(np.abs(folded - unfolded)) > 0  # two programs, not one traced twice


def test_the_folded_program_never_projects_the_encoder_output(hf_and_params):
    _, params = hf_and_params
    rows, length = 4, 64
    batch = pad_rows(eos_tokens([length] * rows, seed=3), length)
    folded, unfolded = (
        _label_logits(fold).lower(params, batch).compile() for fold in (True, False)
    )
    assert KEY_PROJECTION in unfolded.as_text() and VALUE_PROJECTION in unfolded.as_text()
    assert KEY_PROJECTION not in folded.as_text()
    assert VALUE_PROJECTION not in folded.as_text()
    # The products' FLOPs, counted here per decoder layer: unfolded, the key and value
    # projections of every encoder position and one query's two attention products;
    # folded, the query into the embedding width and back, and the two products against
    # the encoder output itself.
    d, inner, heads, head_dim = (
        TINY.emb_dim,
        TINY.num_heads * TINY.head_dim,
        TINY.num_heads,
        TINY.head_dim,
    )
    unfolded_products = 2 * (2 * rows * length * d * inner) + 2 * (
        2 * rows * heads * length * head_dim
    )
    folded_products = 2 * (2 * rows * inner * d) + 2 * (2 * rows * heads * length * d)
    expected = TINY.num_decoder_layers * (unfolded_products - folded_products)
    saved = unfolded.cost_analysis()["flops"] - folded.cost_analysis()["flops"]
    assert saved == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("per_row", [3, TINY.head_dim])
def test_packed_rows_fold_below_head_dim_decoder_positions_only(hf_and_params, per_row):
    _, params = hf_and_params
    tokens = eos_tokens([7] * (2 * per_row), seed=per_row)
    rows = [list(range(per_row)), list(range(per_row, 2 * per_row))]
    arrays = packed_rows(tokens, rows, 64)
    folded = np.asarray(_packed(True)(params, *arrays))
    np.testing.assert_allclose(folded, _packed(False)(params, *arrays), atol=ORDER_ATOL, rtol=0)
    text = _packed(True).lower(params, *arrays).compile().as_text()
    assert (KEY_PROJECTION in text) == (per_row >= TINY.head_dim)
    # Each packed input scores as it does alone.
    alone = _label_logits(True)(params, pad_rows(tokens, 64))
    np.testing.assert_allclose(folded.reshape(-1, 2), alone, atol=ORDER_ATOL, rtol=0)

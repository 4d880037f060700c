"""Greedy decoding with a cache (`model/decoding.py`) against HF `generate` and against the
uncached decoder."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mt5_fixtures as fixtures
import numpy as np
import pytest

from seahorse_t5x.model import decoding, families, hf_checkpoints, mt5

MAX_LENGTH = 20
# The token whose logit row EOS copies (scaled up a little): where greedy search would
# write it, EOS wins instead, so rows end at different steps.
EOS_LIKE = 1212


def _hf_model_writing_text():
    """A tiny HF mT5 whose greedy output is varied text, not one repeated token: its
    untied output projection is the embedding permuted (each token leads to another),
    and EOS takes the place of one frequent token."""
    import torch

    model = fixtures.hf_tiny_model(seed=3)
    order = torch.randperm(fixtures.TINY.vocab_size, generator=torch.Generator().manual_seed(0))
    head = model.shared.weight[order].clone()
    head[decoding.EOS_ID] = head[EOS_LIKE] * 1.01
    model.lm_head.weight = torch.nn.Parameter(head)
    return model


@pytest.fixture(scope="module")
def hf_and_params():
    model = _hf_model_writing_text()
    params = mt5.unbox(hf_checkpoints.from_hf_state_dict(fixtures.TINY, model.state_dict()))
    return model, params


def _hf_generate(model, encoder_tokens: np.ndarray, max_new_tokens: int) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = model.generate(
            input_ids=torch.tensor(encoder_tokens),
            attention_mask=torch.tensor(encoder_tokens != 0).long(),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
        ).numpy()
    # HF's rows start with the decoder start id and stop at the longest row.
    tokens = np.zeros((len(out), max_new_tokens), np.int64)
    tokens[:, : out.shape[1] - 1] = out[:, 1:]
    return tokens


def test_greedy_equals_hf_generate_token_for_token(hf_and_params):
    model, params = hf_and_params
    encoder_tokens = fixtures.padded_batch([7, 12, 3, 9, 20, 5, 16, 1], 3072, seed=1)
    ours = np.asarray(
        decoding.compiled_greedy_search(fixtures.TINY, MAX_LENGTH)(params, encoder_tokens)
    )
    hf = _hf_generate(model, encoder_tokens, MAX_LENGTH)
    np.testing.assert_array_equal(ours, hf)
    rows = decoding.strip(ours)
    lengths = sorted(len(r) for r in rows)
    # Some rows end with EOS before the limit, some run to it: both paths are covered.
    assert lengths[0] < MAX_LENGTH and lengths[-1] == MAX_LENGTH
    assert sum(decoding.EOS_ID in row for row in ours.tolist()) >= 2
    assert len({tuple(r) for r in rows}) == len(rows)  # varied text, not one token


def test_a_row_decodes_alike_alone_and_in_a_padded_batch(hf_and_params):
    _, params = hf_and_params
    batch = fixtures.padded_batch([11, 4, 17], 3072, seed=5)
    together = decoding.compiled_greedy_search(fixtures.TINY, 12)(params, batch)
    for row in range(len(batch)):
        length = int((batch[row] > 0).sum())
        alone = np.zeros((1, 32), np.int32)  # padded further than the batch
        alone[0, :length] = batch[row, :length]
        single = decoding.compiled_greedy_search(fixtures.TINY, 12)(params, alone)
        np.testing.assert_array_equal(np.asarray(single)[0], np.asarray(together)[row])


def test_cached_step_logits_equal_the_uncached_decoder(hf_and_params):
    """Each cached step's logits equal the whole decoder's over the same prefix."""
    _, params = hf_and_params
    config = fixtures.TINY
    encoder_tokens = jnp.asarray(fixtures.padded_batch([9, 5], 3072, seed=2))
    generated = decoding.compiled_greedy_search(config, 8)(params, encoder_tokens)
    decoder_inputs = jnp.concatenate([jnp.zeros((2, 1), jnp.int32), generated[:, :-1]], axis=1)
    model = families.build(config)
    full = model.apply({"params": params}, encoder_tokens, decoder_inputs)
    encoded = model.apply({"params": params}, encoder_tokens, method=model.encode)
    cache = None
    for position in range(8):
        state = {"params": params} if cache is None else {"params": params, "cache": cache}
        step, mutated = model.apply(
            state,
            encoded,
            encoder_tokens,
            decoder_inputs[:, position : position + 1],
            jnp.int32(position),
            8,
            method=model.decode_step,
            mutable=["cache"],
        )
        cache = mutated["cache"]
        np.testing.assert_allclose(
            np.asarray(step), np.asarray(full[:, position]), rtol=1e-5, atol=1e-5
        )


def test_bfloat16_products_decode_close_to_float32(hf_and_params):
    _, params = hf_and_params
    encoder_tokens = fixtures.padded_batch([7, 12, 3, 9], 3072, seed=1)
    f32 = np.asarray(decoding.compiled_greedy_search(fixtures.TINY, 6)(params, encoder_tokens))
    bf16_config = fixtures.TINY.replace(dtype="bfloat16")
    bf16 = np.asarray(decoding.compiled_greedy_search(bf16_config, 6)(params, encoder_tokens))
    assert bf16.shape == f32.shape
    # bfloat16 rounds every product's operands: the first tokens agree, later ones may not.
    np.testing.assert_array_equal(bf16[:, 0], f32[:, 0])


def test_decode_step_refuses_scanned_layers(hf_and_params):
    _, params = hf_and_params
    model = families.build(fixtures.TINY, scan_layers=True)
    tokens = jnp.ones((1, 4), jnp.int32)
    with pytest.raises(ValueError, match="unscanned"):
        jax.eval_shape(
            lambda: model.init(
                jax.random.PRNGKey(0),
                jnp.zeros((1, 4, fixtures.TINY.emb_dim)),
                tokens,
                tokens[:, :1],
                jnp.int32(0),
                4,
                method=model.decode_step,
            )
        )


def _logits_float64(hidden, kernel) -> np.ndarray:
    return np.asarray(hidden, np.float64) @ np.asarray(kernel, np.float64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_screen_bounds_hold_every_logit(seed):
    """|h . w - estimate| <= bound for every token, against float64 products, on rows and
    columns of very different scales (a zero row, a spike, a zero column)."""
    rng = np.random.default_rng(seed)
    kernel = rng.standard_normal((64, 3000)).astype(np.float32)
    kernel[:, 7] = 0.0
    kernel[:, 11] *= 1e3
    hidden = (
        rng.standard_normal((6, 64)).astype(np.float32)
        * np.float32([1, 1e-3, 1e4, 0, 1, 1])[:, None]
    )
    hidden[4, 5] = 300.0
    screen = decoding.vocabulary_screen(jnp.asarray(kernel))
    estimate, bound = jax.jit(decoding.screen_bounds)(jnp.asarray(hidden), screen)
    error = np.abs(_logits_float64(hidden, kernel) - np.asarray(estimate, np.float64))
    assert (error <= np.asarray(bound)).all()
    # The bound is informative, not vacuous: a typical token's is a few percent of the
    # logits' spread (and exactly 0 for the zero row).
    spread = np.std(_logits_float64(hidden, kernel), axis=-1)
    typical = np.median(np.asarray(bound), axis=-1)
    assert (typical[spread > 0] < 0.05 * spread[spread > 0]).all()
    assert (np.asarray(bound)[spread == 0] == 0).all()


def test_screened_argmax_equals_argmax_with_and_without_a_proof():
    rng = np.random.default_rng(4)
    kernel = rng.standard_normal((64, 5000)).astype(np.float32)
    kernel[:, 4321] = kernel[:, 123]  # two equal columns: the lower id wins, as in argmax
    hidden = rng.standard_normal((8, 64)).astype(np.float32)
    hidden[0] = kernel[:, 123] * 3.0  # token 123 and 4321 tie at the top for row 0
    screen = decoding.vocabulary_screen(jnp.asarray(kernel))
    expected = np.argmax(_logits_float64(hidden, kernel), axis=-1)
    assert expected[0] == 123
    screened = jax.jit(decoding.screened_argmax, static_argnames="candidates")
    for candidates in (16, 1):  # 1: some row has two possible tokens, so the full product
        got = screened(jnp.asarray(hidden), jnp.asarray(kernel), screen, candidates=candidates)
        np.testing.assert_array_equal(np.asarray(got), expected)
    estimate, bound = decoding.screen_bounds(jnp.asarray(hidden), screen)
    possible = np.asarray(estimate + bound >= np.max(estimate - bound, axis=-1, keepdims=True))
    counts = possible.sum(axis=-1)
    assert counts.max() <= 16 and counts.max() > 1  # both branches were taken above


def test_screened_greedy_equals_hf_generate_token_for_token(hf_and_params):
    model, params = hf_and_params
    encoder_tokens = fixtures.padded_batch([7, 12, 3, 9, 20, 5, 16, 1], 3072, seed=1)
    screen = decoding.vocabulary_screen(params["decoder"]["logits_dense"]["kernel"])
    program = decoding.compiled_greedy_search(fixtures.TINY, MAX_LENGTH)
    screened = np.asarray(program(params, encoder_tokens, screen=screen))
    np.testing.assert_array_equal(screened, _hf_generate(model, encoder_tokens, MAX_LENGTH))
    np.testing.assert_array_equal(screened, np.asarray(program(params, encoder_tokens)))

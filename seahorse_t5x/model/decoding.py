"""Autoregressive decoding with a key/value cache: greedy search and beam search over a
family's model.

The counterpart of T5X's `t5x/decoding.py` (`temperature_sample` at temperature 0, the
`decode` mode of its attention) and of HF `generate(do_sample=False, num_beams=1)`: the
encoder runs once, the decoder one position a step, each self-attention layer keeping its
keys and values in `[batch, max_length, heads x head_dim]` caches (the `cache` collection of
`MT5.decode_step`) and each cross-attention layer the encoder output's, projected on the
first step only. The loop is one `jax.lax.while_loop` inside the compiled program, and ends
when every row has written EOS or `max_length` tokens are out. `beam_search` is HF
`generate(num_beams=k, do_sample=False)`'s search over the same cached steps.

Conventions (T5X's and HF's for T5): the decoder starts from id 0 (`DECODER_START_ID`, the
padding id); a row's output holds its tokens up to and including EOS (id 1), then 0s.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from seahorse_t5x.model import families
from seahorse_t5x.model.configs import MT5Config

DECODER_START_ID = 0
EOS_ID = 1
PAD_ID = 0
# Candidates the screened argmax scores exactly (`screened_argmax`).
SCREEN_CANDIDATES = 16


class VocabularyScreen(NamedTuple):
    """The vocabulary projection in int8, with what bounds its error (`vocabulary_screen`).

    `kernel` is `logits_dense`'s `[emb, vocab]` kernel rounded column by column to int8
    (`column_scale` each); `residual_norm` is each column's rounding error's Euclidean norm,
    `column_norm` the float32 column's."""

    kernel: jax.Array
    column_scale: jax.Array
    residual_norm: jax.Array
    column_norm: jax.Array


@jax.jit
def vocabulary_screen(kernel: jax.Array) -> VocabularyScreen:
    """The `VocabularyScreen` of a float32 `[emb, vocab]` projection kernel."""
    kernel = kernel.astype(jnp.float32)
    scale = jnp.max(jnp.abs(kernel), axis=0) / 127.0
    scale = jnp.where(scale > 0, scale, 1.0)
    rounded = jnp.clip(jnp.round(kernel / scale), -127, 127)
    residual = kernel - rounded * scale
    return VocabularyScreen(
        rounded.astype(jnp.int8),
        scale,
        jnp.linalg.norm(residual, axis=0),
        jnp.linalg.norm(kernel, axis=0),
    )


def screened_argmax(
    hidden: jax.Array,
    kernel: jax.Array,
    screen: VocabularyScreen,
    candidates: int = SCREEN_CANDIDATES,
) -> jax.Array:
    """`argmax(hidden @ kernel)` per row, reading the int8 kernel instead of the float32 one
    wherever that provably gives the same token.

    A step's vocabulary projection reads the whole kernel (mT5's: 512 MB in float32) for a
    few rows, so its time is the memory's. Here the rows are written as two int8 terms (the
    second rounds what the first left: `h = a q1 + b q2 + r`) and multiplied with the int8
    kernel in one product, a quarter of the bytes. Each logit `h . w` is then within a
    bound of that estimate `s` (Cauchy-Schwarz on the rounding errors, plus float32's own
    rounding of a sum of `emb` products): `|h . w - s| <= ||h - r|| ||w - w_q|| + ||r||
    ||w|| + e`. A token whose upper bound is below the best lower bound cannot be the
    argmax; when at most `candidates` tokens per row can be, their columns are read in
    float32 and the best of them (the lowest id among equals, as `argmax`) is the token.
    Otherwise the step takes the whole float32 product. The token is the float32 product's
    argmax either way, up to float32's rounding of logits equal to about 1e-6.

    Args:
      hidden: `[batch, emb]` float32, the normalised decoder state.
      kernel: `[emb, vocab]` float32, `logits_dense`'s kernel.
      screen: `vocabulary_screen(kernel)`.

    Returns:
      `[batch]` int32 token ids.
    """
    hidden = hidden.astype(jnp.float32)
    vocab_size = kernel.shape[1]
    estimate, bound = screen_bounds(hidden, screen)
    best_lower = jnp.max(estimate - bound, axis=-1, keepdims=True)
    upper = estimate + bound
    counts = jnp.sum(upper >= best_lower, axis=-1)

    def among_possible() -> jax.Array:
        # The tokens that can be the argmax are those with the highest upper bounds.
        _, ids = jax.lax.top_k(upper, candidates)
        columns = jnp.take(kernel, ids, axis=1)  # [emb, batch, candidates]
        logits = jnp.einsum("be,ebc->bc", hidden, columns, precision=jax.lax.Precision.HIGHEST)
        best = jnp.max(logits, axis=-1, keepdims=True)
        return jnp.min(jnp.where(logits == best, ids, vocab_size), axis=-1)

    def everything() -> jax.Array:
        logits = jnp.dot(hidden, kernel, precision=jax.lax.Precision.HIGHEST)
        return jnp.argmax(logits, axis=-1)

    proven = jnp.all(counts <= candidates)
    return jax.lax.cond(proven, among_possible, everything).astype(jnp.int32)


def screen_bounds(hidden: jax.Array, screen: VocabularyScreen) -> tuple[jax.Array, jax.Array]:
    """`(estimate, bound)`, each `[batch, vocab]`: every logit `hidden @ kernel` lies within
    `bound` of `estimate` (`screened_argmax`)."""
    batch = hidden.shape[0]
    emb = screen.kernel.shape[0]
    first, first_scale = _int8_rows(hidden)
    second, second_scale = _int8_rows(hidden - first * first_scale)
    rounded = first * first_scale + second * second_scale
    product = jax.lax.dot(
        jnp.concatenate([first, second]).astype(jnp.int8),
        screen.kernel,
        preferred_element_type=jnp.int32,
    ).astype(jnp.float32)
    estimate = (product[:batch] * first_scale + product[batch:] * second_scale) * (
        screen.column_scale
    )
    rounding = (2 * emb + 16) * 2.0**-24  # float32's relative error on either side
    norm = functools.partial(jnp.linalg.norm, axis=-1, keepdims=True)
    bound = (
        norm(rounded) * screen.residual_norm
        + (norm(hidden - rounded) + rounding * norm(hidden)) * screen.column_norm
    ) * (1 + 2.0**-10)
    return estimate, bound


def _int8_rows(values: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Each row rounded to integers in [-127, 127] (as float32) and its scale."""
    scale = jnp.max(jnp.abs(values), axis=-1, keepdims=True) / 127.0
    scale = jnp.where(scale > 0, scale, 1.0)
    return jnp.clip(jnp.round(values / scale), -127, 127), scale


def greedy_search(
    config: MT5Config,
    params: Any,
    encoder_tokens: jax.Array,
    max_length: int,
    eos_id: int = EOS_ID,
    screen: VocabularyScreen | None = None,
) -> jax.Array:
    """Greedy decoding of a batch: `[batch, max_length]` int32 tokens.

    Args:
      config: the model's config (its family builds the module).
      params: unscanned parameters (T5X's layout: `decoder/layers_N/...`).
      encoder_tokens: `[batch, input_length]` int32, 0-padded on the right; rows of only
        padding decode too (their output is discarded by callers).
      max_length: the most tokens a row gets (EOS included), static.
      eos_id: the token that ends a row.
      screen: `vocabulary_screen` of `logits_dense`'s kernel: each step's argmax through
        `screened_argmax` (float32 products only); None: the full projection.

    Returns:
      Each row's tokens: argmax at every step, EOS included, 0 after it (and after
      `max_length` tokens without EOS, nothing: the row is cut there).
    """
    model = families.build(config)
    encoder_tokens = encoder_tokens.astype(jnp.int32)
    encoded = model.apply({"params": params}, encoder_tokens, method=model.encode)
    batch = encoder_tokens.shape[0]

    def step(cache: Any, token: jax.Array, position: jax.Array) -> tuple[jax.Array, Any]:
        state = {"params": params} if cache is None else {"params": params, "cache": cache}
        logits, mutated = model.apply(
            state,
            encoded,
            encoder_tokens,
            token,
            position,
            max_length,
            screen is not None,
            method=model.decode_step,
            mutable=["cache"],
        )
        if screen is not None:  # `logits` is the hidden state
            kernel = params["decoder"]["logits_dense"]["kernel"]
            return screened_argmax(logits, kernel, screen), mutated["cache"]
        return jnp.argmax(logits, axis=-1).astype(jnp.int32), mutated["cache"]

    start = jnp.full((batch, 1), DECODER_START_ID, jnp.int32)
    first, cache = step(None, start, jnp.int32(0))
    tokens = jnp.zeros((batch, max_length), jnp.int32).at[:, 0].set(first)
    done = first == eos_id

    def unfinished(carry: tuple) -> jax.Array:
        position, _, done, _ = carry
        return (position < max_length) & ~jnp.all(done)

    def next_token(carry: tuple) -> tuple:
        position, tokens, done, cache = carry
        previous = jax.lax.dynamic_slice_in_dim(tokens, position - 1, 1, axis=1)
        token, cache = step(cache, previous, position)
        token = jnp.where(done, PAD_ID, token)
        tokens = jax.lax.dynamic_update_slice_in_dim(tokens, token[:, None], position, axis=1)
        return position + 1, tokens, done | (token == eos_id), cache

    carry = (jnp.int32(1), tokens, done, cache)
    _, tokens, _, _ = jax.lax.while_loop(unfinished, next_token, carry)
    return tokens


# HF's stand-in for minus infinity: added to the scores of candidates that must not be kept.
_EXCLUDED = -1.0e9


class _Beams(NamedTuple):
    """Beam search's state, each row's beams on axis 1 (`beam_search`)."""

    running: jax.Array  # [batch, beams, max_length] tokens of the beams still running
    running_scores: jax.Array  # [batch, beams] their sums of log-probabilities, best first
    finished: jax.Array  # [batch, beams, max_length] the best finished hypotheses
    finished_scores: jax.Array  # [batch, beams] theirs over length ** length_penalty
    is_finished: jax.Array  # [batch, beams] which slots of `finished` hold a hypothesis
    undecided: jax.Array  # [batch] whether a running beam may still beat a finished one
    all_stopped: jax.Array  # [] whether every candidate of the last step stopped

    @staticmethod
    def start(batch: int, num_beams: int, max_length: int) -> _Beams:
        """The state before the first step: only the first beam runs (the others at -1e9,
        so the first step's candidates are distinct tokens); nothing finished."""
        tokens = jnp.zeros((batch, num_beams, max_length), jnp.int32)
        return _Beams(
            running=tokens,
            running_scores=jnp.zeros((batch, num_beams)).at[:, 1:].set(_EXCLUDED),
            finished=tokens,
            finished_scores=jnp.full((batch, num_beams), _EXCLUDED),
            is_finished=jnp.zeros((batch, num_beams), bool),
            undecided=jnp.ones((batch,), bool),
            all_stopped=jnp.bool_(False),
        )


def beam_search(
    config: MT5Config,
    params: Any,
    encoder_tokens: jax.Array,
    max_length: int,
    num_beams: int,
    eos_id: int = EOS_ID,
    length_penalty: float = 1.0,
) -> jax.Array:
    """Beam search over a batch: each row's best hypothesis, `[batch, max_length]` int32.

    The search of HF `generate(num_beams=num_beams, do_sample=False)` with its default
    `early_stopping=False` (`GenerationMixin._beam_search` of transformers 5), step for
    step. Each step every row's `num_beams` beams score their continuations (the beam's
    sum of log-probabilities plus the token's log-softmax) and the best `2 * num_beams`
    are kept. Of those, the ones that stop (end in EOS, or reach `max_length` tokens) among
    the first `num_beams` are offered to the row's finished hypotheses, scored `sum /
    length ** length_penalty` (`length`: the tokens generated, EOS included), which keep
    the best `num_beams`; the best `num_beams` candidates that do not stop run on. A row is
    decided once it holds `num_beams` finished hypotheses and its best running beam's sum
    over the current length ** length_penalty is no better than the worst of them; then
    its hypotheses change no more. The loop ends when every row is decided or `max_length`
    tokens are out (where every kept candidate stops, so every row has finished ones), and
    each row's output is its best finished hypothesis.

    The decoder runs `batch * num_beams` rows, the encoder `batch`; the self-attention
    caches follow the beams kept (`_reorder_caches`).

    Args:
      config, params, encoder_tokens, max_length, eos_id: as `greedy_search`.
      num_beams: beams a row, static.
      length_penalty: the exponent of the length that divides a finished hypothesis's
        score (above 0 favours longer ones), static.

    Returns:
      Each row's best hypothesis: EOS included, 0 after it (none when it ran to
      `max_length` tokens).
    """
    model = families.build(config)
    encoder_tokens = encoder_tokens.astype(jnp.int32)
    encoded = model.apply({"params": params}, encoder_tokens, method=model.encode)
    batch = encoder_tokens.shape[0]
    # Every beam of a row reads its row's encoder output: rows [b0, b0, b1, b1, ...].
    encoded = jnp.repeat(encoded, num_beams, axis=0)
    encoder_tokens = jnp.repeat(encoder_tokens, num_beams, axis=0)
    # `length ** length_penalty` of 1..max_length tokens, in float64 then float32 as HF's.
    penalties = jnp.asarray([n**length_penalty for n in range(1, max_length + 1)], jnp.float32)

    def log_probs(cache: Any, token: jax.Array, position: jax.Array) -> tuple[jax.Array, Any]:
        """Each beam's next-token log-probabilities `[batch, beams, vocab]` and the cache."""
        state = {"params": params} if cache is None else {"params": params, "cache": cache}
        token = token.reshape(batch * num_beams, 1)
        logits, mutated = model.apply(
            state, encoded, encoder_tokens, token, position, max_length,
            method=model.decode_step, mutable=["cache"],
        )  # fmt: skip
        scores = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
        return scores.reshape(batch, num_beams, -1), mutated["cache"]

    beams = _Beams.start(batch, num_beams, max_length)
    start = jnp.full((batch, num_beams), DECODER_START_ID, jnp.int32)
    scores, cache = log_probs(None, start, jnp.int32(0))
    beams, sources = _advance_beams(beams, scores, jnp.int32(0), eos_id, max_length, penalties)
    cache = _reorder_caches(cache, sources)

    def unfinished(carry: tuple) -> jax.Array:
        position, beams, _ = carry
        return (position < max_length) & jnp.any(beams.undecided) & ~beams.all_stopped

    def next_step(carry: tuple) -> tuple:
        position, beams, cache = carry
        previous = jax.lax.dynamic_slice_in_dim(beams.running, position - 1, 1, axis=2)
        scores, cache = log_probs(cache, previous, position)
        beams, sources = _advance_beams(beams, scores, position, eos_id, max_length, penalties)
        return position + 1, beams, _reorder_caches(cache, sources)

    _, beams, _ = jax.lax.while_loop(unfinished, next_step, (jnp.int32(1), beams, cache))
    return beams.finished[:, 0]


def _advance_beams(
    beams: _Beams,
    scores: jax.Array,
    position: jax.Array,
    eos_id: int,
    max_length: int,
    penalties: jax.Array,
) -> tuple[_Beams, jax.Array]:
    """One step of `beam_search` over the log-probabilities `scores` `[batch, beams,
    vocab]` of the token at `position`; returns the new state and the beam each running
    beam came from. `penalties[position]`: `length ** length_penalty` of a hypothesis
    ending there."""
    batch, num_beams, vocab_size = scores.shape
    candidates = 2 * num_beams  # HF's `beams_to_keep` with one EOS id
    sums = (scores + beams.running_scores[:, :, None]).reshape(batch, -1)
    top_sums, top_ids = jax.lax.top_k(sums, candidates)
    origins = top_ids // vocab_size
    sequences = jnp.take_along_axis(beams.running, origins[:, :, None], axis=1)
    new_tokens = top_ids % vocab_size
    sequences = jax.lax.dynamic_update_slice_in_dim(
        sequences, new_tokens[:, :, None], position, axis=2
    )
    stops = (new_tokens == eos_id) | (position + 1 >= max_length)

    # The best candidates that do not stop run on.
    running_sums = top_sums + stops * _EXCLUDED
    running_sums, kept = jax.lax.top_k(running_sums, num_beams)
    running = jnp.take_along_axis(sequences, kept[:, :, None], axis=1)
    sources = jnp.take_along_axis(origins, kept, axis=1)

    # The first `num_beams` candidates that stop join the finished hypotheses, unless
    # their row is decided (HF's arithmetic: the same sums of -1e9, in its order).
    offered = stops & (jnp.arange(candidates) < num_beams)
    finished_scores = top_sums / penalties[position]
    finished_scores += ~beams.undecided[:, None] * _EXCLUDED
    finished_scores += ~offered * _EXCLUDED
    merged_scores = jnp.concatenate([beams.finished_scores, finished_scores], axis=1)
    finished_scores, best = jax.lax.top_k(merged_scores, num_beams)
    merged = jnp.concatenate([beams.finished, sequences], axis=1)
    finished = jnp.take_along_axis(merged, best[:, :, None], axis=1)
    is_finished = jnp.take_along_axis(
        jnp.concatenate([beams.is_finished, offered], axis=1), best, axis=1
    )

    # A row stays undecided while its best running beam, at the current length, could beat
    # its worst finished hypothesis (an empty slot counts as -1e9).
    best_possible = running_sums[:, :1] / penalties[position]
    worst = jnp.where(is_finished, jnp.min(finished_scores, axis=1, keepdims=True), _EXCLUDED)
    undecided = beams.undecided & jnp.any(best_possible > worst, axis=1)
    state = _Beams(
        running,
        running_sums,
        finished,
        finished_scores,
        is_finished,
        undecided,
        jnp.all(stops),
    )
    return state, sources


def _reorder_caches(cache: Any, sources: jax.Array) -> Any:
    """The self-attention caches' rows (`[batch * beams, ...]`) following the beams kept
    (`sources`: `[batch, beams]`, the beam each came from)."""
    batch, num_beams = sources.shape
    rows = (jnp.arange(batch)[:, None] * num_beams + sources).reshape(-1)

    def take(path: tuple, array: jax.Array) -> jax.Array:
        if any(getattr(key, "key", None) == "self_attention" for key in path):
            return jnp.take(array, rows, axis=0)
        return array

    return jax.tree_util.tree_map_with_path(take, cache)


# XLA's CPU compiler hands whole fusions of matrix products to YNNPACK by default. A
# decoding step's products are a few rows (one position a row) against whole weight
# matrices, where XLA's own float32 dot kernels measured 1.5x faster a step on mT5-small's
# shape; an int8 product (`screened_argmax`) is 20x faster in YNNPACK than in XLA's
# kernels. So decoding programs give YNNPACK single products only (the same tokens;
# PERFORMANCE.md, "Generation (greedy, float32) on a CPU"); scoring's programs keep the
# default, under which their numbers were made.
CPU_COMPILER_OPTIONS = {
    "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"
}


# The projection size (`emb x vocab` weights) from which the screen pays for the seconds it
# adds to each program's compile: 64 MB in float32 (mT5-small's projection is 128M weights;
# the demo explainer's 0.5M).
SCREEN_MIN_WEIGHTS = 2**24


def screens_vocabulary(config: MT5Config, platform: str | None = None) -> bool:
    """Whether greedy decoding takes each step's argmax through `screened_argmax`: on CPUs
    (where the projection's time is the memory's) with float32 products and a projection
    of at least `SCREEN_MIN_WEIGHTS` weights."""
    platform = platform or jax.default_backend()
    large = config.emb_dim * config.vocab_size >= SCREEN_MIN_WEIGHTS
    return platform == "cpu" and jnp.dtype(config.dtype) == jnp.float32 and large


@functools.cache
def compiled_greedy_search(
    config: MT5Config, max_length: int, eos_id: int = EOS_ID, platform: str | None = None
):
    """`greedy_search` jitted for one config and output length (each input shape compiles
    once; the parameters, the tokens and `screen=` are arguments), for the devices of
    `platform` (JAX's default backend when None): on CPUs with `CPU_COMPILER_OPTIONS`."""
    platform = platform or jax.default_backend()
    options = CPU_COMPILER_OPTIONS if platform == "cpu" else None
    search = functools.partial(greedy_search, config, max_length=max_length, eos_id=eos_id)
    return jax.jit(search, compiler_options=options)


@functools.cache
def compiled_beam_search(
    config: MT5Config,
    max_length: int,
    num_beams: int,
    eos_id: int = EOS_ID,
    length_penalty: float = 1.0,
    platform: str | None = None,
):
    """`beam_search` jitted for one config, output length, beam count and length penalty
    (each input shape compiles once; the parameters and the tokens are arguments), for
    the devices of `platform` as `compiled_greedy_search`."""
    platform = platform or jax.default_backend()
    options = CPU_COMPILER_OPTIONS if platform == "cpu" else None
    search = functools.partial(
        beam_search,
        config,
        max_length=max_length,
        num_beams=num_beams,
        eos_id=eos_id,
        length_penalty=length_penalty,
    )
    return jax.jit(search, compiler_options=options)


def strip(tokens: Any, eos_id: int = EOS_ID) -> list[list[int]]:
    """Each row's tokens before EOS (EOS and the padding after it dropped)."""
    rows = []
    for row in jax.device_get(tokens).tolist():
        rows.append(row[: row.index(eos_id)] if eos_id in row else row)
    return rows

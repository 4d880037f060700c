"""Autoregressive decoding with a key/value cache: greedy search over a family's model.

The counterpart of T5X's `t5x/decoding.py` (`temperature_sample` at temperature 0, the
`decode` mode of its attention) and of HF `generate(do_sample=False, num_beams=1)`: the
encoder runs once, the decoder one position a step, each self-attention layer keeping its
keys and values in `[batch, max_length, heads x head_dim]` caches (the `cache` collection of
`MT5.decode_step`) and each cross-attention layer the encoder output's, projected on the
first step only. The loop is one `jax.lax.while_loop` inside the compiled program, and ends
when every row has written EOS or `max_length` tokens are out.

Conventions (T5X's and HF's for T5): the decoder starts from id 0 (`DECODER_START_ID`, the
padding id); a row's output holds its tokens up to and including EOS (id 1), then 0s.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from seahorse_t5x.model import families
from seahorse_t5x.model.configs import MT5Config

DECODER_START_ID = 0
EOS_ID = 1
PAD_ID = 0


def greedy_search(
    config: MT5Config,
    params: Any,
    encoder_tokens: jax.Array,
    max_length: int,
    eos_id: int = EOS_ID,
) -> jax.Array:
    """Greedy decoding of a batch: `[batch, max_length]` int32 tokens.

    Args:
      config: the model's config (its family builds the module).
      params: unscanned parameters (T5X's layout: `decoder/layers_N/...`).
      encoder_tokens: `[batch, input_length]` int32, 0-padded on the right; rows of only
        padding decode too (their output is discarded by callers).
      max_length: the most tokens a row gets (EOS included), static.
      eos_id: the token that ends a row.

    Returns:
      Each row's tokens: argmax at every step, EOS included, 0 after it (and after
      `max_length` tokens without EOS, nothing: the row is cut there).
    """
    model = families.build(config)
    variables = {"params": params}
    encoder_tokens = encoder_tokens.astype(jnp.int32)
    encoded = model.apply(variables, encoder_tokens, method=model.encode)
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
            method=model.decode_step,
            mutable=["cache"],
        )
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


# XLA's CPU compiler hands matrix products to YNNPACK by default. A decoding step's
# products are a few rows (one position a row) against whole weight matrices, where XLA's
# own dot kernels measured 1.5x faster a step on mT5-small's shape, with the same tokens
# (PERFORMANCE.md, "Generation (greedy, float32) on a CPU"); scoring's programs keep the
# default, under which their numbers were made.
CPU_COMPILER_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}


@functools.cache
def compiled_greedy_search(
    config: MT5Config, max_length: int, eos_id: int = EOS_ID, platform: str | None = None
):
    """`greedy_search` jitted for one config and output length (each input shape compiles
    once; the parameters and tokens are arguments), for the devices of `platform` (JAX's
    default backend when None): on CPUs with `CPU_COMPILER_OPTIONS`."""
    platform = platform or jax.default_backend()
    options = CPU_COMPILER_OPTIONS if platform == "cpu" else None
    search = functools.partial(greedy_search, config, max_length=max_length, eos_id=eos_id)
    return jax.jit(search, compiler_options=options)


def strip(tokens: Any, eos_id: int = EOS_ID) -> list[list[int]]:
    """Each row's tokens before EOS (EOS and the padding after it dropped)."""
    rows = []
    for row in jax.device_get(tokens).tolist():
        rows.append(row[: row.index(eos_id)] if eos_id in row else row)
    return rows

"""Blockwise self-attention for long inputs: the inference engine's encoder at long buckets.

`softmax(q k^T + bias) v` computed `QUERY_BLOCK` queries at a time, each block against the
whole key row: the float32 logits and weights of one block (`[batch, heads, block, length]`)
are all that exist at once, never the `[batch, heads, length, length]` tensor, and the bias
of each block is made inside the loop from what the caller keeps small (T5's relative
position table and the segment ids, `mt5.py`). Each query row's softmax is the same
computation as in full attention, so a block's statistics are exact (no running max), and
the last block may overlap the one before it: an input length need not be a multiple of the
block, and the loop runs as well over a symbolic length (`jax.export`). A fully masked row
(padding) stays finite: the mask's bias is finite (`mt5._MASK_BIAS`), so its largest logit
is one of its own and its sum at least 1.

Measured on a CPU (PERFORMANCE.md), this beat a flash-attention loop over key blocks with a
running max and sum by 7-16%: one pass over a block's whole key row makes two large
products instead of many small ones, and needs no rescaling.

Chosen by length (`runs_blockwise`): at `BLOCKWISE_FROM_LENGTH` tokens and more, where it
measured faster on a CPU (PERFORMANCE.md); shorter inputs keep the full-attention program,
bit for bit. The engine's default (`AUTO`) runs it on CPUs only: it is unmeasured on GPUs
and TPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Array = jax.Array
# Queries per block: the float32 logits of a block are `rows x heads x block x length`.
QUERY_BLOCK = 256
# The shortest input length that runs blockwise by default on CPUs (measured, PERFORMANCE.md).
BLOCKWISE_FROM_LENGTH = 1024
# The default's name: BLOCKWISE_FROM_LENGTH on CPUs, never on accelerators (`default_from`).
AUTO = "auto"
# Where blockwise attention was measured faster; GPUs and TPUs keep full attention until it is
# measured there.
_BLOCKWISE_PLATFORMS = frozenset({"cpu"})


def check_blockwise_from(blockwise_from: int | None) -> None:
    """Raises ValueError unless `blockwise_from` is None (never) or a length of at least
    QUERY_BLOCK tokens."""
    if blockwise_from is None:
        return
    if isinstance(blockwise_from, bool) or not isinstance(blockwise_from, int):
        raise ValueError(f"blockwise attention starts at a length, got {blockwise_from!r}")
    if blockwise_from < QUERY_BLOCK:
        raise ValueError(
            f"blockwise attention starts at {QUERY_BLOCK} tokens or more, got {blockwise_from}"
        )


def default_from(platform: str) -> int | None:
    """The bound `AUTO` stands for on `platform` (`cpu`, `gpu`, `tpu`, ...)."""
    return BLOCKWISE_FROM_LENGTH if platform.lower() in _BLOCKWISE_PLATFORMS else None


def runs_blockwise(length: Any, blockwise_from: int | None) -> bool:
    """Whether inputs of `length` tokens run blockwise: an int, or a symbolic dimension
    (`jax.export`) that the export's constraints put on one side of `blockwise_from`
    (`inference.engine.TracedOnce`); one they leave undecided runs full attention, which
    every length may."""
    if blockwise_from is None:
        return False
    try:
        return bool(length >= blockwise_from)
    except jax.errors.InconclusiveDimensionOperation:
        return False


def query_blocks(
    query: Array,
    key: Array,
    value: Array,
    block_bias: Callable[[Array, int], Array],
    product: Callable[[str, Array, Array], Array],
    block: int = QUERY_BLOCK,
) -> Array:
    """Attention of head-major `[batch, heads, length, head_dim]` operands, block by block.

    Args:
      block_bias: `(start, size)` -> the float32 additive bias of queries `start ...
        start + size - 1` against every key, `[batch or 1, heads, size, length]`.
      product: the model's products (`mt5.einsum` in its dtype).
      block: queries per block; the length must be at least this.

    Returns:
      `[batch, heads, length, head_dim]` float32, as full attention gives it.
    """
    length = query.shape[2]
    count = (length + block - 1) // block

    def body(index: Array, context: Array) -> Array:
        # The last block ends at the last query: it may overlap its neighbour, which
        # computes the same rows.
        start = jnp.minimum(index * block, length - block)
        rows = jax.lax.dynamic_slice_in_dim(query, start, block, axis=2)
        logits = product("bhqd,bhkd->bhqk", rows, key) + block_bias(start, block)
        # Softmax with its float32 statistics, normalised after the product: `head_dim`
        # divisions a query instead of `length` (5% of the program at 2048 tokens).
        weights = jnp.exp(logits - jnp.max(logits, axis=-1, keepdims=True))
        update = product("bhqk,bhkd->bhqd", weights, value)
        update = update / jnp.sum(weights, axis=-1, keepdims=True)
        return jax.lax.dynamic_update_slice_in_dim(context, update, start, axis=2)

    context = jnp.zeros(query.shape[:3] + value.shape[3:], jnp.float32)
    return jax.lax.fori_loop(0, count, body, context)

"""What attention adds to its logits: T5's relative position biases (one table per stack,
shared by its layers) and the masks (padding, causality, packed segments), as full `[batch,
heads, q, k]` biases or, for blockwise attention, made block by block (`BlockwiseBias`).
"""

from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from seahorse_t5x.model.configs import MT5Config
from seahorse_t5x.model.layers import relpos_init

Array = jax.Array
# Large negative bias for masked attention logits; finite so fully masked rows stay NaN-free.
MASK_BIAS = -1e10


def relative_position_bucket(
    relative_position: Array, bidirectional: bool, num_buckets: int, max_distance: int
) -> Array:
    """T5's bucket of `memory_position - query_position` (exact up to num_buckets/2, then log).

    Matches Mesh TensorFlow and HF transformers (no epsilon inside the log).
    """
    bucket = jnp.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (relative_position > 0).astype(jnp.int32) * num_buckets
        distance = jnp.abs(relative_position)
    else:
        distance = -jnp.minimum(relative_position, 0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    # Guard log(0): those entries take the exact branch anyway.
    safe = jnp.maximum(distance, 1).astype(jnp.float32)
    if_large = max_exact + (
        jnp.log(safe / max_exact) / np.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).astype(jnp.int32)
    if_large = jnp.minimum(if_large, num_buckets - 1)
    return bucket + jnp.where(is_small, distance, if_large)


class RelativePositionBiases(nn.Module):
    """Per-head bias for each relative position bucket: `rel_embedding` [heads, buckets]."""

    config: MT5Config
    bidirectional: bool
    # The bias of each distance `key - query` = -(query_len - 1) ... key_len - 1 instead,
    # [heads, query_len + key_len - 1] (for `BlockwiseBias`).
    by_distance: bool = False

    @nn.compact
    def __call__(self, query_len: int, key_len: int, query_offset: int = 0) -> Array:
        cfg = self.config
        table = self.param(
            "rel_embedding",
            nn.with_logical_partitioning(relpos_init, ("heads", "relpos_buckets")),
            (cfg.num_heads, cfg.relative_attention_num_buckets),
            jnp.float32,
        )
        if self.by_distance:
            distance = jnp.arange(query_len + key_len - 1, dtype=jnp.int32) - (query_len - 1)
            buckets = relative_position_bucket(
                distance - query_offset,
                self.bidirectional,
                cfg.relative_attention_num_buckets,
                cfg.relative_attention_max_distance,
            )
            return jnp.take(table, buckets, axis=1)
        # Packed segments are contiguous, so arange distances equal within-segment distances.
        # Positions come from iota in the program, not numpy constants: XLA would otherwise
        # constant-fold the [q, k] bucket arithmetic at compile time (~10 s at 2048 on CPU).
        query_pos = jnp.arange(query_len, dtype=jnp.int32)[:, None] + query_offset
        key_pos = jnp.arange(key_len, dtype=jnp.int32)[None, :]
        buckets = relative_position_bucket(
            key_pos - query_pos,
            self.bidirectional,
            cfg.relative_attention_num_buckets,
            cfg.relative_attention_max_distance,
        )
        return jnp.take(table, buckets, axis=1)[None]  # [1, heads, q, k]


def mask_to_bias(mask: Array) -> Array:
    """[b, q, k] bool -> [b, 1, q, k] additive float32 bias."""
    return jnp.where(mask, 0.0, MASK_BIAS).astype(jnp.float32)[:, None]


class BlockwiseBias(NamedTuple):
    """What blockwise self-attention makes each block's bias from, in place of the
    `[batch, heads, length, length]` bias: the same numbers, block by block (`block`).

    Attributes:
      by_distance: [heads, 2 * length - 1], the relative-position bias of `key - query`
        from -(length - 1) to length - 1 (`RelativePositionBiases(by_distance=True)`).
      segments: [batch, length] int32: packed segment ids, or 1 for tokens and 0 for padding;
        two positions attend to each other when both are in one segment (`encoder_self_mask`).
    """

    by_distance: Array
    segments: Array

    def block(self, start: Array, size: int) -> Array:
        """[batch, heads, size, length] bias of queries `start ... start + size - 1`."""
        length = self.segments.shape[1]
        # Query `start + i` against every key is the distance row from `length - 1 - start
        # - i` on: one contiguous slice of `length` values a query, copied whole instead of
        # gathered value by value (10% of attention at 2048 tokens on a CPU, PERFORMANCE.md).
        offsets = (length - 1) - start - jnp.arange(size, dtype=jnp.int32)
        relative = jax.vmap(
            lambda offset: jax.lax.dynamic_slice_in_dim(self.by_distance, offset, length, axis=1),
            out_axes=1,
        )(offsets)
        return relative[None] + self.segment_bias(start, size)

    def segment_bias(self, start: Array, size: int) -> Array:
        """[batch, 1, size, length] the mask's part of the bias of queries `start ... start +
        size - 1`: 0 within their segment, `MASK_BIAS` elsewhere and on padding."""
        query_segments = jax.lax.dynamic_slice_in_dim(self.segments, start, size, axis=1)
        mask = (query_segments[:, :, None] == self.segments[:, None, :]) & (
            self.segments[:, None, :] > 0
        )
        return mask_to_bias(mask)


def encoder_self_mask(tokens: Array, segment_ids: Array | None) -> Array:
    """[b, q, k]: both positions real, and in the same packed segment when packing."""
    valid = tokens > 0 if segment_ids is None else segment_ids > 0
    mask = valid[:, :, None] & valid[:, None, :]
    if segment_ids is not None:
        mask = mask & (segment_ids[:, :, None] == segment_ids[:, None, :])
    return mask


def decoder_self_mask(decoder_tokens: Array, segment_ids: Array | None) -> Array:
    """[b, q, k]: causal, within one segment when packing.

    The decoder input starts with id 0 (= padding id), so padding cannot come from the
    tokens; causality already keeps trailing padding from reaching real positions.
    """
    length = decoder_tokens.shape[1]
    causal = np.tril(np.ones((length, length), dtype=bool))[None]
    mask = jnp.broadcast_to(causal, (decoder_tokens.shape[0], length, length))
    if segment_ids is not None:
        mask = mask & (segment_ids[:, :, None] == segment_ids[:, None, :])
    return mask


def cross_mask(
    decoder_tokens: Array,
    encoder_tokens: Array,
    decoder_segment_ids: Array | None,
    encoder_segment_ids: Array | None,
) -> Array:
    """[b, q, k]: real encoder positions of the decoder position's own segment."""
    if encoder_segment_ids is None or decoder_segment_ids is None:
        key_valid = encoder_tokens > 0 if encoder_segment_ids is None else encoder_segment_ids > 0
        return jnp.broadcast_to(
            key_valid[:, None, :],
            (encoder_tokens.shape[0], decoder_tokens.shape[1], encoder_tokens.shape[1]),
        )
    return (decoder_segment_ids[:, :, None] == encoder_segment_ids[:, None, :]) & (
        encoder_segment_ids[:, None, :] > 0
    )

"""mT5 (T5.1.1 architecture) encoder-decoder in Flax linen.

Parameter names follow T5X's `examples/t5/network` layout (so T5X checkpoints map one to
one), and every parameter carries logical axis names for `flax.linen` partitioning. The
numerics follow T5.1.1: RMS layer norm without bias or mean subtraction, gated-GELU MLP
(tanh approximation), relative position buckets (one bias table per stack, shared by its
layers), no biases, no 1/sqrt(d) scaling of attention logits (folded into the query init),
untied output projection.

Precision: `config.dtype` is the dtype of the operands of every matrix product (the
projections, both attention products and the output projection). In `bfloat16` the
products take bfloat16 operands and accumulate and return float32
(`preferred_element_type`), as the bfloat16 units of TPUs and GPUs do (T5 itself was trained
with bfloat16 products); everything between the products (the residual stream, layer norms,
GELU, softmax, the position bias) stays float32, so bfloat16 rounds only what enters a
product. Parameters are float32 unless placed in bfloat16 (`--param_dtype`); logits
are float32. In `float32` every operation is plain float32, the products at `HIGHEST`
precision: JAX's default would let GPUs run them on TF32 units (10-bit mantissas) and TPUs
on bfloat16 passes.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from seahorse_t5x.model import attention
from seahorse_t5x.model.configs import MT5Config

Array = jax.Array
# Large negative bias for masked attention logits; finite so fully masked rows stay NaN-free.
_MASK_BIAS = -1e10

# T5X's initialisers (examples/t5/layers.py): fan-in scaled kernels, unit-normal embeddings.
_kernel_init = nn.initializers.variance_scaling(1.0, "fan_in", "truncated_normal")
_attention_init = nn.initializers.variance_scaling(1.0, "fan_in", "normal")
_relpos_init = nn.initializers.variance_scaling(1.0, "fan_avg", "uniform")
_embedding_init = nn.initializers.normal(stddev=1.0)
# Module names of the scanned layout: `encoder/layers/layer/...`, layers stacked on axis 0.
SCANNED_LAYERS = "layers"
SCANNED_LAYER = "layer"


def _compute_dtype(config: MT5Config) -> jnp.dtype:
    """The dtype of matrix-product operands (`float32` or `bfloat16`)."""
    return jnp.dtype(config.dtype)


def precision(dtype: jnp.dtype) -> jax.lax.Precision | None:
    """The products' precision: `HIGHEST` for float32 operands, so that float32 is float32 on
    every platform (JAX's default lets GPUs round float32 operands to TF32 and TPUs to
    bfloat16); the platform's native bfloat16 product for bfloat16 operands. On CPUs both
    are the plain product."""
    return jax.lax.Precision.HIGHEST if jnp.dtype(dtype) == jnp.float32 else None


def dot(x: Array, kernel: Array, dtype: jnp.dtype) -> Array:
    """`x @ kernel` with operands in `dtype`, accumulated and returned in float32."""
    return jnp.dot(
        x.astype(dtype),
        kernel.astype(dtype),
        precision=precision(dtype),
        preferred_element_type=jnp.float32,
    )


def einsum(spec: str, a: Array, b: Array, dtype: jnp.dtype) -> Array:
    """`jnp.einsum(spec, a, b)` with operands in `dtype`, accumulated and returned in float32."""
    return jnp.einsum(
        spec,
        a.astype(dtype),
        b.astype(dtype),
        precision=precision(dtype),
        preferred_element_type=jnp.float32,
    )


class RmsNorm(nn.Module):
    """T5 layer norm: scale * x / sqrt(mean(x^2) + eps), in float32."""

    config: MT5Config

    @nn.compact
    def __call__(self, x: Array) -> Array:
        scale = self.param(
            "scale",
            nn.with_logical_partitioning(nn.initializers.ones, ("embed",)),
            (x.shape[-1],),
            jnp.float32,
        )
        x32 = x.astype(jnp.float32)
        variance = jnp.mean(jnp.square(x32), axis=-1, keepdims=True)
        y = x32 * jax.lax.rsqrt(variance + self.config.layer_norm_epsilon)
        return y * scale


class Dense(nn.Module):
    """Bias-free projection with a 2-D kernel (T5X stores attention kernels flattened)."""

    features: int
    axes: tuple[str, str]
    config: MT5Config
    kernel_init: Any = _kernel_init

    @nn.compact
    def __call__(self, x: Array) -> Array:
        return dot(x, self._kernel(x), _compute_dtype(self.config))

    def _kernel(self, x: Array) -> Array:
        """The `[in, features]` kernel parameter for inputs like `x`."""
        return self.param(
            "kernel",
            nn.with_logical_partitioning(self.kernel_init, self.axes),
            (x.shape[-1], self.features),
            jnp.float32,
        )


class DenseKernel(Dense):
    """A `Dense`'s kernel itself, `[in, features]` in float32, for a caller that applies it
    in another order (`MultiHeadAttention`'s folded keys and values). The same parameter
    (`<name>/kernel`) as the `Dense` it stands for; int8 weights come back scaled column by
    column, as a `Dense`'s outputs do (`inference.quantize.dequantizing`)."""

    @nn.compact
    def __call__(self, x: Array) -> Array:
        return self._kernel(x).astype(jnp.float32)


def folds_key_value(query_length: int, config: MT5Config) -> bool:
    """Whether attention with this many queries folds its key and value projections
    (`MultiHeadAttention.fold_key_value`): when `heads x queries` is below the projections'
    width `heads x head_dim`, i.e. fewer queries than `head_dim` (one decoder step a row
    when scoring; not the many steps of packed rows)."""
    return query_length < config.head_dim


def _query_init(head_dim: int):
    """Query init divided by sqrt(head_dim): T5 never scales the attention logits."""

    def init(key, shape, dtype=jnp.float32):
        return _attention_init(key, shape, dtype) / jnp.sqrt(head_dim).astype(dtype)

    return init


class MultiHeadAttention(nn.Module):
    """Dot-product attention with an additive bias (relative positions + mask).

    `bias`: `[batch or 1, heads, q, k]`, or a `BlockwiseBias` (head-major only): then the
    bias is made block by block and attention runs `attention.query_blocks`.

    `head_major`: lay queries, keys and values out `[batch, heads, length, head_dim]` before
    the two products, so each is a plain batched matrix product (on a CPU, 1.8x faster at
    2048 tokens than contracting the `[batch, length, heads, head_dim]` layout; the same
    values within float rounding, 3e-6 in the logits). The inference engine runs it; training
    keeps the other layout, whose numbers its runs and the demo were made with.

    `fused` (inference: without dropout; an array bias): both products and the softmax in one
    `jax.nn.dot_product_attention` (`attention.fused`: cuDNN's flash attention on GPUs in
    bfloat16, XLA's attention elsewhere), on the `[batch, length, heads, head_dim]` layout
    as the projections make it, whatever `head_major` says.

    `fold_key_value` (inference: without dropout, with fewer queries than `head_dim`,
    `folds_key_value`): the keys and values of `inputs_kv` are never made. Each head's query
    is taken into the width of `inputs_kv` through the key kernel (`q_h Wk_h^T`) and its
    attention-weighted sum of `inputs_kv` out through the value kernel (`(w_h X) Wv_h`): the
    same products in another order, `heads x queries` rows against the `length` rows of
    the key and value projections. The scoring decoder's cross-attention (one query a row
    against the whole encoder output): its key and value projections are 9-14% of mT5's
    products when scoring, folded `1 / head_dim` of that.
    """

    config: MT5Config
    head_major: bool = False
    fused: bool = False
    fold_key_value: bool = False
    # Cached decoding (`model/decoding.py`): None, "self" or "cross" (`_cached`).
    decode: str | None = None

    @nn.compact
    def __call__(
        self,
        inputs_q: Array,
        inputs_kv: Array,
        bias: Array,
        enable_dropout: bool,
        decode_position: Array | None = None,
    ) -> Array:
        cfg = self.config
        inner = cfg.num_heads * cfg.head_dim
        axes = ("embed", "joined_kv")
        query = Dense(inner, axes, cfg, _query_init(cfg.head_dim), name="query")(inputs_q)
        if self.decode is not None:
            return self._cached(query, inputs_kv, bias, inner, axes, decode_position)
        if (
            self.fold_key_value
            and not enable_dropout
            and not isinstance(bias, BlockwiseBias)
            and folds_key_value(inputs_q.shape[-2], cfg)
        ):
            return self._folded(query, inputs_kv, bias, inner, axes)
        key = Dense(inner, axes, cfg, _attention_init, name="key")(inputs_kv)
        value = Dense(inner, axes, cfg, _attention_init, name="value")(inputs_kv)
        out = Dense(cfg.emb_dim, ("joined_kv", "embed"), cfg, _attention_init, name="out")
        dtype = _compute_dtype(cfg)
        if self.fused and not enable_dropout and not isinstance(bias, BlockwiseBias):
            heads = (cfg.num_heads, cfg.head_dim)
            query, key, value = (x.reshape(x.shape[:-1] + heads) for x in (query, key, value))
            context = attention.fused(query, key, value, bias, dtype)
            return out(context.reshape(context.shape[:-2] + (inner,)))

        def split_heads(x: Array) -> Array:
            x = x.reshape(x.shape[:-1] + (cfg.num_heads, cfg.head_dim))
            return x.transpose(0, 2, 1, 3) if self.head_major else x

        query, key, value = split_heads(query), split_heads(key), split_heads(value)
        if isinstance(bias, BlockwiseBias):  # the engine's long inputs (`MT5.encode`)
            context = attention.query_blocks(
                query, key, value, bias.block, functools.partial(einsum, dtype=dtype)
            ).transpose(0, 2, 1, 3)
            context = context.reshape(context.shape[:-2] + (inner,))
            return out(context)
        if self.head_major:
            logits = einsum("bhqd,bhkd->bhqk", query, key, dtype)
        else:
            logits = einsum("bqhd,bkhd->bhqk", query, key, dtype)
        weights = jax.nn.softmax(logits + bias.astype(jnp.float32), axis=-1)
        if enable_dropout and cfg.dropout_rate > 0:
            weights = nn.Dropout(cfg.dropout_rate)(weights, deterministic=False)
        if self.head_major:
            context = einsum("bhqk,bhkd->bhqd", weights, value, dtype).transpose(0, 2, 1, 3)
        else:
            context = einsum("bhqk,bkhd->bqhd", weights, value, dtype)
        context = context.reshape(context.shape[:-2] + (inner,))
        return out(context)

    def _cached(
        self,
        query: Array,
        inputs_kv: Array,
        bias: Array,
        inner: int,
        axes: tuple[str, str],
        position: Array | None,
    ) -> Array:
        """One decoding step's attention over keys and values kept in the `cache`
        collection, in the products' dtype (as HF's and T5X's caches keep them).

        `decode="self"`: `inputs_kv` is this step's `[batch, 1, emb]`; its key and value are
        written at `position` of `[batch, max_length, inner]` caches (`max_length` is the
        bias's last axis; positions after `position` are masked by the bias).
        `decode="cross"`: the encoder output's keys and values are projected on the first
        step and read from the cache after it (HF's cross-attention cache; T5X projects
        them again at every step).
        """
        cfg = self.config
        dtype = _compute_dtype(cfg)
        cached = self.has_variable("cache", "cached_key")
        if self.decode == "cross" and cached:
            key = self.get_variable("cache", "cached_key")
            value = self.get_variable("cache", "cached_value")
        else:
            key = Dense(inner, axes, cfg, _attention_init, name="key")(inputs_kv).astype(dtype)
            value = Dense(inner, axes, cfg, _attention_init, name="value")(inputs_kv)
            value = value.astype(dtype)
            if self.decode == "self":
                batch, max_length = key.shape[0], bias.shape[-1]
                shape = (batch, max_length, inner)
                cache_key = self.variable("cache", "cached_key", jnp.zeros, shape, dtype)
                cache_value = self.variable("cache", "cached_value", jnp.zeros, shape, dtype)
                start = (0, position, 0)
                key = jax.lax.dynamic_update_slice(cache_key.value, key, start)
                value = jax.lax.dynamic_update_slice(cache_value.value, value, start)
                cache_key.value, cache_value.value = key, value
            else:
                self.put_variable("cache", "cached_key", key)
                self.put_variable("cache", "cached_value", value)
        out = Dense(cfg.emb_dim, ("joined_kv", "embed"), cfg, _attention_init, name="out")
        heads = (cfg.num_heads, cfg.head_dim)
        query, key, value = (x.reshape(x.shape[:-1] + heads) for x in (query, key, value))
        logits = einsum("bqhd,bkhd->bhqk", query, key, dtype)
        weights = jax.nn.softmax(logits + bias.astype(jnp.float32), axis=-1)
        context = einsum("bhqk,bkhd->bqhd", weights, value, dtype)
        return out(context.reshape(context.shape[:-2] + (inner,)))

    def _folded(
        self, query: Array, inputs_kv: Array, bias: Array, inner: int, axes: tuple[str, str]
    ) -> Array:
        """Attention with the key and value projections folded into the query and the
        context (`fold_key_value`); `query` is projected, `inputs_kv` is not."""
        cfg = self.config
        dtype = _compute_dtype(cfg)
        heads = (cfg.num_heads, cfg.head_dim)
        key_kernel = DenseKernel(inner, axes, cfg, _attention_init, name="key")(inputs_kv)
        value_kernel = DenseKernel(inner, axes, cfg, _attention_init, name="value")(inputs_kv)
        out = Dense(cfg.emb_dim, ("joined_kv", "embed"), cfg, _attention_init, name="out")
        query = query.reshape(query.shape[:-1] + heads)
        key_kernel = key_kernel.reshape(key_kernel.shape[:1] + heads)
        value_kernel = value_kernel.reshape(value_kernel.shape[:1] + heads)
        # [b, h, q, embed]: each head's query in the width of the keys' input.
        query = einsum("bqhk,dhk->bhqd", query, key_kernel, dtype)
        logits = einsum("bhqd,bld->bhql", query, inputs_kv, dtype)
        weights = jax.nn.softmax(logits + bias.astype(jnp.float32), axis=-1)
        mixed = einsum("bhql,bld->bhqd", weights, inputs_kv, dtype)
        context = einsum("bhqd,dhk->bqhk", mixed, value_kernel, dtype)
        return out(context.reshape(context.shape[:-2] + (inner,)))


class GatedGeluMlp(nn.Module):
    """wo(gelu(wi_0 x) * wi_1 x), GELU in its tanh approximation (HF `gelu_new`)."""

    config: MT5Config

    @nn.compact
    def __call__(self, x: Array, enable_dropout: bool) -> Array:
        cfg = self.config
        gate = Dense(cfg.mlp_dim, ("embed", "mlp"), cfg, name="wi_0")(x)
        linear = Dense(cfg.mlp_dim, ("embed", "mlp"), cfg, name="wi_1")(x)
        hidden = jax.nn.gelu(gate, approximate=True) * linear
        hidden = nn.Dropout(cfg.dropout_rate)(hidden, deterministic=not enable_dropout)
        return Dense(cfg.emb_dim, ("mlp", "embed"), cfg, name="wo")(hidden)


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
            nn.with_logical_partitioning(_relpos_init, ("heads", "relpos_buckets")),
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
    return jnp.where(mask, 0.0, _MASK_BIAS).astype(jnp.float32)[:, None]


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
        size - 1`: 0 within their segment, `_MASK_BIAS` elsewhere and on padding."""
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


class EncoderLayer(nn.Module):
    config: MT5Config
    head_major: bool = False
    fused_attention: bool = False

    @nn.compact
    def __call__(self, x: Array, bias: Array, enable_dropout: bool) -> Array:
        cfg = self.config
        drop = nn.Dropout(cfg.dropout_rate, broadcast_dims=(-2,))
        y = RmsNorm(cfg, name="pre_attention_layer_norm")(x)
        y = MultiHeadAttention(cfg, self.head_major, self.fused_attention, name="attention")(
            y, y, bias, enable_dropout
        )
        x = x + drop(y, deterministic=not enable_dropout)
        y = RmsNorm(cfg, name="pre_mlp_layer_norm")(x)
        y = GatedGeluMlp(cfg, name="mlp")(y, enable_dropout)
        return x + drop(y, deterministic=not enable_dropout)


class DecoderLayer(nn.Module):
    """`fold_cross_attention`: the cross-attention's key and value projections folded
    (`MultiHeadAttention.fold_key_value`) where they fold."""

    config: MT5Config
    head_major: bool = False
    fold_cross_attention: bool = False
    # Cached decoding, one position a call (`MultiHeadAttention.decode`).
    decode: bool = False

    @nn.compact
    def __call__(
        self,
        x: Array,
        encoded: Array,
        self_bias: Array,
        cross_bias: Array,
        enable_dropout: bool,
        decode_position: Array | None = None,
    ) -> Array:
        cfg = self.config
        drop = nn.Dropout(cfg.dropout_rate, broadcast_dims=(-2,))
        y = RmsNorm(cfg, name="pre_self_attention_layer_norm")(x)
        y = MultiHeadAttention(
            cfg, self.head_major, decode="self" if self.decode else None, name="self_attention"
        )(y, y, self_bias, enable_dropout, decode_position)
        x = x + drop(y, deterministic=not enable_dropout)
        y = RmsNorm(cfg, name="pre_cross_attention_layer_norm")(x)
        y = MultiHeadAttention(
            cfg,
            self.head_major,
            fold_key_value=self.fold_cross_attention,
            decode="cross" if self.decode else None,
            name="encoder_decoder_attention",
        )(y, encoded, cross_bias, enable_dropout)
        x = x + drop(y, deterministic=not enable_dropout)
        y = RmsNorm(cfg, name="pre_mlp_layer_norm")(x)
        y = GatedGeluMlp(cfg, name="mlp")(y, enable_dropout)
        return x + drop(y, deterministic=not enable_dropout)


class _ScannedEncoderLayer(nn.Module):
    """One encoder layer as a `nn.scan` body: (carry, None) -> (carry, None)."""

    config: MT5Config
    enable_dropout: bool
    head_major: bool = False
    fused_attention: bool = False

    @nn.compact
    def __call__(self, x: Array, bias: Array) -> tuple[Array, None]:
        layer = EncoderLayer(self.config, self.head_major, self.fused_attention, name=SCANNED_LAYER)
        return layer(x, bias, self.enable_dropout), None


class _ScannedDecoderLayer(nn.Module):
    """One decoder layer as a `nn.scan` body."""

    config: MT5Config
    enable_dropout: bool
    head_major: bool = False
    fold_cross_attention: bool = False

    @nn.compact
    def __call__(
        self, x: Array, encoded: Array, self_bias: Array, cross_bias: Array
    ) -> tuple[Array, None]:
        layer = DecoderLayer(
            self.config, self.head_major, self.fold_cross_attention, name=SCANNED_LAYER
        )
        return layer(x, encoded, self_bias, cross_bias, self.enable_dropout), None


def _scan(body: type[nn.Module], length: int, broadcast_args: int) -> type[nn.Module]:
    """`body` applied `length` times with stacked parameters (leading `layers` axis)."""
    return nn.scan(
        body,
        variable_axes={"params": 0},
        split_rngs={"params": True, "dropout": True},
        in_axes=(nn.broadcast,) * broadcast_args,
        length=length,
        # The stacked axis's logical name (`partitioning` leaves it unsharded).
        metadata_params={nn.PARTITION_NAME: "layers"},
    )


class Encoder(nn.Module):
    """`fused_attention`: self-attention through `attention.fused` where it runs without
    dropout and not blockwise (`MultiHeadAttention`)."""

    config: MT5Config
    scan_layers: bool = False
    head_major: bool = False
    fused_attention: bool = False

    @nn.compact
    def __call__(
        self, embedded: Array, mask: Array, enable_dropout: bool, blockwise: bool = False
    ) -> Array:
        """`mask`: [b, q, k] bool (`encoder_self_mask`), or with `blockwise` (head-major,
        no dropout) the [b, length] segments of `BlockwiseBias`."""
        cfg = self.config
        length = embedded.shape[1]
        if blockwise:
            by_distance = RelativePositionBiases(
                cfg, bidirectional=True, by_distance=True, name="relpos_bias"
            )(length, length)
            bias = BlockwiseBias(by_distance, mask)
        else:
            bias = RelativePositionBiases(cfg, bidirectional=True, name="relpos_bias")(
                length, length
            )
            bias = bias + mask_to_bias(mask)
            if self.fused_attention and not enable_dropout:  # once, not in every layer
                bias = attention.fused_bias(bias, _compute_dtype(cfg))
        x = nn.Dropout(cfg.dropout_rate)(embedded, deterministic=not enable_dropout)
        fused = self.fused_attention
        if self.scan_layers:
            scanned = _scan(_ScannedEncoderLayer, cfg.num_encoder_layers, 1)
            x, _ = scanned(cfg, enable_dropout, self.head_major, fused, name=SCANNED_LAYERS)(
                x, bias
            )
        else:
            for i in range(cfg.num_encoder_layers):
                layer = EncoderLayer(cfg, self.head_major, fused, name=f"layers_{i}")
                x = layer(x, bias, enable_dropout)
        x = RmsNorm(cfg, name="encoder_norm")(x)
        return nn.Dropout(cfg.dropout_rate)(x, deterministic=not enable_dropout)


class Decoder(nn.Module):
    config: MT5Config
    scan_layers: bool = False
    head_major: bool = False
    fold_cross_attention: bool = False

    @nn.compact
    def __call__(
        self,
        embedded: Array,
        encoded: Array,
        self_mask: Array,
        cross_mask_: Array,
        enable_dropout: bool,
        return_hidden: bool = False,
        decode_position: Array | None = None,
    ) -> Array:
        """With `decode_position` (cached decoding, unscanned layers, no dropout):
        `embedded` is one position `[batch, 1, emb]` and `self_mask` `[batch, 1,
        max_length]`, the cache positions it may attend to."""
        cfg = self.config
        decode = decode_position is not None
        if decode and self.scan_layers:
            raise ValueError("cached decoding runs unscanned layers (T5X's parameter layout)")
        if decode:
            self_bias = RelativePositionBiases(cfg, bidirectional=False, name="relpos_bias")(
                1, self_mask.shape[-1], query_offset=decode_position
            )
        else:
            length = embedded.shape[1]
            self_bias = RelativePositionBiases(cfg, bidirectional=False, name="relpos_bias")(
                length, length
            )
        self_bias = self_bias + mask_to_bias(self_mask)
        cross_bias = mask_to_bias(cross_mask_)
        x = nn.Dropout(cfg.dropout_rate)(embedded, deterministic=not enable_dropout)
        if decode:
            for i in range(cfg.num_decoder_layers):
                layer = DecoderLayer(cfg, decode=True, name=f"layers_{i}")
                x = layer(x, encoded, self_bias, cross_bias, False, decode_position)
        elif self.scan_layers:
            scanned = _scan(_ScannedDecoderLayer, cfg.num_decoder_layers, 3)
            x, _ = scanned(
                cfg,
                enable_dropout,
                self.head_major,
                self.fold_cross_attention,
                name=SCANNED_LAYERS,
            )(x, encoded, self_bias, cross_bias)
        else:
            for i in range(cfg.num_decoder_layers):
                layer = DecoderLayer(
                    cfg, self.head_major, self.fold_cross_attention, name=f"layers_{i}"
                )
                x = layer(x, encoded, self_bias, cross_bias, enable_dropout)
        x = RmsNorm(cfg, name="decoder_norm")(x)
        x = nn.Dropout(cfg.dropout_rate)(x, deterministic=not enable_dropout)
        if return_hidden:
            return x
        logits = Dense(cfg.vocab_size, ("embed", "vocab"), cfg, name="logits_dense")(x)
        return logits.astype(jnp.float32)


class MT5(nn.Module):
    """mT5 encoder-decoder; `__call__` returns float32 logits [batch, target_len, vocab].

    Decoder inputs are the targets shifted right with start id 0, as T5X's
    `EncDecFeatureConverter` makes them. Segment ids (1, 2, ... per packed example, 0 for
    padding) keep attention within an example; without them padding is `token == 0`.
    Positions are accepted for T5X feature compatibility; relative attention only needs
    distances, which packing (contiguous segments) preserves.

    `head_major_attention` lays attention's operands out head-major (`MultiHeadAttention`):
    what the inference engine runs, faster on CPUs; training keeps the default.
    `blockwise_attention_from` (head-major, without dropout): inputs of at least this many
    tokens run the encoder's self-attention block by block (`attention.query_blocks`),
    never holding the `[batch, heads, length, length]` logits; None: never.
    `fused_attention` (without dropout): the encoder's self-attention, where it is not
    blockwise, in one `jax.nn.dot_product_attention` (`attention.fused`: cuDNN's flash
    attention on GPUs in bfloat16). The decoder keeps its own: it runs one query per
    input when scoring, where a fused kernel has nothing to gain.
    `fold_cross_attention` (without dropout): the decoder's cross-attention never projects
    the encoder output into keys and values where it has fewer query positions than
    `head_dim` (`MultiHeadAttention.fold_key_value`): what the inference engine runs.

    `scan_layers` runs each stack's layers as one `nn.scan` over parameters stacked on a
    leading `layers` axis (`encoder/layers/layer/...`): the same numbers, but tracing and
    compiling one layer instead of every layer (the inference engine's layout; checkpoints
    keep T5X's per-layer names, and `inference.placement.Placer.stack_layers` converts).
    """

    config: MT5Config
    scan_layers: bool = False
    head_major_attention: bool = False
    blockwise_attention_from: int | None = None
    fused_attention: bool = False
    fold_cross_attention: bool = False

    def setup(self) -> None:
        attention.check_blockwise_from(self.blockwise_attention_from)
        cfg = self.config
        self.token_embedder = nn.Embed(
            num_embeddings=cfg.vocab_size,
            features=cfg.emb_dim,
            dtype=jnp.float32,  # the residual stream is float32 in either dtype
            param_dtype=jnp.float32,
            embedding_init=nn.with_logical_partitioning(_embedding_init, ("vocab", "embed")),
            name="token_embedder",
        )
        self.encoder = Encoder(
            cfg,
            self.scan_layers,
            self.head_major_attention,
            self.fused_attention,
            name="encoder",
        )
        self.decoder = Decoder(
            cfg,
            self.scan_layers,
            self.head_major_attention,
            self.fold_cross_attention,
            name="decoder",
        )

    def encode(
        self,
        encoder_input_tokens: Array,
        encoder_segment_ids: Array | None = None,
        encoder_positions: Array | None = None,
        enable_dropout: bool = False,
    ) -> Array:
        """Encoder output [batch, input_len, emb_dim] (float32)."""
        del encoder_positions
        length = encoder_input_tokens.shape[1]
        if (
            self.head_major_attention
            and not enable_dropout
            and attention.runs_blockwise(length, self.blockwise_attention_from)
        ):
            valid = (encoder_input_tokens > 0).astype(jnp.int32)
            segments = valid if encoder_segment_ids is None else encoder_segment_ids
            embedded = self.token_embedder(encoder_input_tokens.astype(jnp.int32))
            return self.encoder(embedded, segments.astype(jnp.int32), False, blockwise=True)
        mask = encoder_self_mask(encoder_input_tokens, encoder_segment_ids)
        embedded = self.token_embedder(encoder_input_tokens.astype(jnp.int32))
        return self.encoder(embedded, mask, enable_dropout)

    def decode(
        self,
        encoded: Array,
        encoder_input_tokens: Array,
        decoder_input_tokens: Array,
        encoder_segment_ids: Array | None = None,
        decoder_segment_ids: Array | None = None,
        decoder_positions: Array | None = None,
        enable_dropout: bool = False,
        return_hidden: bool = False,
    ) -> Array:
        """Decoder logits [batch, target_len, vocab] (float32), or with `return_hidden` the
        normalised hidden states before `logits_dense` (for scoring a few vocabulary columns).
        """
        del decoder_positions
        self_mask = decoder_self_mask(decoder_input_tokens, decoder_segment_ids)
        xmask = cross_mask(
            decoder_input_tokens, encoder_input_tokens, decoder_segment_ids, encoder_segment_ids
        )
        embedded = self.token_embedder(decoder_input_tokens.astype(jnp.int32))
        return self.decoder(embedded, encoded, self_mask, xmask, enable_dropout, return_hidden)

    def decode_step(
        self,
        encoded: Array,
        encoder_input_tokens: Array,
        decoder_token: Array,
        position: Array,
        max_length: int,
    ) -> Array:
        """One step of cached decoding: logits `[batch, vocab]` (float32) of the token after
        `decoder_token` `[batch, 1]`, the decoder input at `position`.

        Keys and values live in the mutable `cache` collection (`apply(...,
        mutable=["cache"])`): the first call (position 0) creates it, with room for
        `max_length` positions, and projects the encoder output for the cross-attention
        once; later calls pass it back. Unscanned parameters only (`model/decoding.py`).
        """
        batch = decoder_token.shape[0]
        self_mask = jnp.broadcast_to(
            (jnp.arange(max_length) <= position)[None, None, :], (batch, 1, max_length)
        )
        xmask = cross_mask(decoder_token, encoder_input_tokens, None, None)
        embedded = self.token_embedder(decoder_token.astype(jnp.int32))
        logits = self.decoder(embedded, encoded, self_mask, xmask, False, decode_position=position)
        return logits[:, 0]

    def __call__(
        self,
        encoder_input_tokens: Array,
        decoder_input_tokens: Array,
        encoder_segment_ids: Array | None = None,
        decoder_segment_ids: Array | None = None,
        encoder_positions: Array | None = None,
        decoder_positions: Array | None = None,
        enable_dropout: bool = False,
    ) -> Array:
        encoded = self.encode(
            encoder_input_tokens, encoder_segment_ids, encoder_positions, enable_dropout
        )
        return self.decode(
            encoded,
            encoder_input_tokens,
            decoder_input_tokens,
            encoder_segment_ids,
            decoder_segment_ids,
            decoder_positions,
            enable_dropout,
        )


def init_params(
    config: MT5Config,
    rng: Array,
    batch: int = 1,
    input_len: int = 8,
    target_len: int = 4,
    scan_layers: bool = False,
) -> Any:
    """Randomly initialised parameters, boxed with their logical axis names.

    Use `unbox(params)` for plain arrays and `nn.get_partition_spec(params)` for the axes.
    With `scan_layers`, the layout `stack_layers` makes (for `MT5(config, scan_layers=True)`).
    """
    encoder_tokens = jnp.ones((batch, input_len), jnp.int32)
    decoder_tokens = jnp.ones((batch, target_len), jnp.int32)
    return _jitted_init(config, scan_layers)(rng, encoder_tokens, decoder_tokens)


@functools.cache
def _jitted_init(config: MT5Config, scan_layers: bool = False):
    # Jitted and cached per config: op-by-op initialisation compiles every primitive
    # separately, and a fresh jit per call would recompile.
    def init(rng, encoder_tokens, decoder_tokens):
        model = MT5(config, scan_layers=scan_layers)
        return model.init(rng, encoder_tokens, decoder_tokens)["params"]

    return jax.jit(init)


def abstract_params(
    config: MT5Config,
    batch: int = 1,
    input_len: int = 8,
    target_len: int = 4,
    scan_layers: bool = False,
) -> Any:
    """Shapes and dtypes of `init_params` (boxed `jax.ShapeDtypeStruct`s), without memory."""
    return jax.eval_shape(
        functools.partial(
            init_params,
            config,
            batch=batch,
            input_len=input_len,
            target_len=target_len,
            scan_layers=scan_layers,
        ),
        jax.random.PRNGKey(0),
    )


# Per-layer names (`encoder/layers_3/mlp/wi_0/kernel`, T5X's layout) and their place in the
# scanned layout (`encoder/layers/layer/mlp/wi_0/kernel`, layer 3 of a leading `layers` axis).
_LAYER_NAME = re.compile(r"^(encoder|decoder)/layers_(\d+)/(.+)$")


def stacked_name(name: str) -> tuple[str, int] | None:
    """(scanned-layout name, layer index) of a flat per-layer parameter name, else None."""
    match = _LAYER_NAME.match(name)
    if match is None:
        return None
    return f"{match[1]}/{SCANNED_LAYERS}/{SCANNED_LAYER}/{match[3]}", int(match[2])


def is_scanned(params: Any) -> bool:
    """Whether a parameter tree has the scanned layout (stacked layers)."""
    return SCANNED_LAYERS in params["encoder"]


def unbox(params: Any) -> Any:
    """Strips the logical-axis boxes (`nn.Partitioned`) and returns plain arrays."""
    return nn.meta.unbox(params)


def logical_axes(params: Any) -> Any:
    """Tree of `PartitionSpec`s of logical axis names, for `nn.logical_to_mesh_sharding`."""
    return nn.get_partition_spec(params)


def param_count(params: Any) -> int:
    return int(sum(np.prod(x.shape) for x in jax.tree_util.tree_leaves(unbox(params))))

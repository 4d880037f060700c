"""Attention: T5's multi-head attention (`MultiHeadAttention`: full, head-major, folded,
fused, and cached for decoding) and the variants the inference engine chooses by length and
platform.

Blockwise self-attention for long inputs: the inference engine's encoder at long buckets.

`softmax(q k^T + bias) v` computed `QUERY_BLOCK` queries at a time, each block against the
whole key row: the float32 logits and weights of one block (`[batch, heads, block, length]`)
are all that exist at once, never the `[batch, heads, length, length]` tensor, and the bias
of each block is made inside the loop from what the caller keeps small (T5's relative
position table and the segment ids, `mt5.py`). Each query row's softmax is the same
computation as in full attention, so a block's statistics are exact (no running max), and
the last block may overlap the one before it: an input length need not be a multiple of the
block, and the loop runs as well over a symbolic length (`jax.export`). A fully masked row
(padding) stays finite: the mask's bias is finite (`attention_bias.MASK_BIAS`), so its largest logit
is one of its own and its sum at least 1.

Measured on a CPU (PERFORMANCE.md), this beat a flash-attention loop over key blocks with a
running max and sum by 7-16%: one pass over a block's whole key row makes two large
products instead of many small ones, and needs no rescaling.

Chosen by length (`runs_blockwise`): at `BLOCKWISE_FROM_LENGTH` tokens and more, where it
measured faster on a CPU (PERFORMANCE.md); shorter inputs keep the full-attention program,
bit for bit. The engine's default (`AUTO`) runs it on CPUs only: it is unmeasured on GPUs
and TPUs.

Fused attention (`fused`): `jax.nn.dot_product_attention`, which on NVIDIA GPUs runs cuDNN's
flash attention for bfloat16 and float16 operands, and elsewhere XLA's attention. The
engine's default (`AUTO`, `default_fused`) fuses on GPUs in bfloat16 only: float32 is not a
cuDNN dtype, and on CPUs the programs stay as they were, bit for bit.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from seahorse_t5x.model.attention_bias import BlockwiseBias
from seahorse_t5x.model.configs import MT5Config
from seahorse_t5x.model.layers import Dense, DenseKernel, attention_init, compute_dtype, einsum

logger = logging.getLogger(__name__)

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
# The product dtypes cuDNN's fused attention takes (besides float8); float32 is not one.
FUSED_DTYPES = frozenset({"bfloat16", "float16"})
# Where `AUTO` fuses attention: NVIDIA GPUs (JAX names their platform `gpu`).
_FUSED_PLATFORMS = frozenset({"gpu", "cuda"})
# The most negative bias cuDNN is given, by dtype: the mask's -1e10 (`attention_bias.MASK_BIAS`) is
# finite in bfloat16 but not in float16 (largest 65504). The values are those JAX gives
# cuDNN for its own boolean masks (`jax._src.cudnn.fused_attention_stablehlo`).
_CUDNN_BIAS_FLOOR = {"bfloat16": -float(2 << 40), "float16": -float(2 << 14)}


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
      product: the model's products (`layers.einsum` in its dtype).
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


def _dtype_name(dtype: Any) -> str:
    try:
        return jnp.dtype(dtype).name
    except TypeError:
        return str(dtype)


def default_fused(platform: str, dtype: Any) -> bool:
    """Whether `AUTO` fuses attention (`fused`) on `platform` (`cpu`, `gpu`, `tpu`, ...) for
    products in `dtype`: on GPUs in bfloat16 or float16, where cuDNN runs it; never in
    float32 (not a cuDNN dtype) nor on CPUs and TPUs (their programs unchanged)."""
    return platform.lower() in _FUSED_PLATFORMS and _dtype_name(dtype) in FUSED_DTYPES


def fused_implementation(dtype: Any) -> str:
    """`cudnn` where JAX's default backend is a GPU and `dtype` is a cuDNN dtype, else
    `xla` (`jax.nn.dot_product_attention`'s own default, `None`, is XLA everywhere in JAX
    0.10 and 0.11: cuDNN runs only when asked for by name)."""
    if jax.default_backend() == "gpu" and _dtype_name(dtype) in FUSED_DTYPES:
        return "cudnn"
    return "xla"


def fused_bias(bias: Array, dtype: Any) -> Array:
    """The additive bias as `fused` hands it on: float32 to XLA; to cuDNN in the operands'
    `dtype` (as JAX makes its own mask biases for cuDNN), no lower than `_CUDNN_BIAS_FLOOR`.
    A bias already in that `dtype` is taken as it is.

    Computing it once per encoder, outside the layers, keeps each layer from converting it.
    """
    if fused_implementation(dtype) != "cudnn":
        return bias.astype(jnp.float32)
    if bias.dtype == jnp.dtype(dtype):  # made here before (`mt5.Encoder`)
        return bias
    floor = _CUDNN_BIAS_FLOOR[_dtype_name(dtype)]
    return jnp.maximum(bias.astype(jnp.float32), floor).astype(dtype)


def fused(query: Array, key: Array, value: Array, bias: Array, dtype: Any) -> Array:
    """`softmax(q k^T + bias) v` of `[batch, length, heads, head_dim]` operands in one call of
    `jax.nn.dot_product_attention`, with T5's scale of 1 (its 1/sqrt(head_dim) is folded
    into the query's initialisation).

    Where `fused_implementation` says `cudnn`, cuDNN's flash attention: it takes bfloat16 or
    float16 operands (never float32) with a head_dim that is a multiple of 8, at most 128
    (256 from Hopper on: mT5's 64 fits both), and a `[batch or 1, heads or 1, q, k]` bias
    (`fused_bias`). Its numerics, flash attention's: both products take operands in
    `dtype`; the softmax's running max and sum are float32; the weights enter the second
    product unnormalised, in `dtype` (the model's own attention rounds the normalised ones
    to `dtype`); the output is divided by the sum in float32, then rounded to `dtype`. The
    bias is rounded to `dtype` too (8 significant bits in bfloat16: a relative-position bias
    of 10 moves by up to 0.031, comparable to the rounding of the bfloat16 logits it is
    added to). Where cuDNN refuses the call as it is traced (a shape, a dtype, no cuDNN), a
    warning is logged and XLA's attention runs instead (with the bias as given: one
    `fused_bias` rounded stays rounded); what cuDNN could refuse only when the program is
    compiled is an error then (the engine's `fused_attention=False` goes around it).

    Elsewhere XLA's attention, the model's own two products in one function: logits
    accumulated in float32 with the float32 bias added, softmax in float32, the weights
    rounded to `dtype` for the second product, whose result is in `dtype` (the output
    projection rounds its input to `dtype` in any case). float32 operands run at `HIGHEST`
    precision, as the model's products do (`layers.precision`).

    Returns:
      `[batch, q_length, heads, head_dim]` in `dtype`.
    """
    dtype = jnp.dtype(dtype)
    query, key, value = (x.astype(dtype) for x in (query, key, value))
    if fused_implementation(dtype) == "cudnn":
        try:
            return jax.nn.dot_product_attention(
                query, key, value, bias=fused_bias(bias, dtype), scale=1.0, implementation="cudnn"
            )
        except (NotImplementedError, RuntimeError, ValueError) as e:
            logger.warning("cuDNN refused fused attention (%s); XLA's attention runs instead", e)
    if dtype == jnp.float32:  # not TF32 on GPUs nor bfloat16 passes on TPUs
        with jax.default_matmul_precision("highest"):
            return _xla_attention(query, key, value, bias)
    return _xla_attention(query, key, value, bias)


def _xla_attention(query: Array, key: Array, value: Array, bias: Array) -> Array:
    return jax.nn.dot_product_attention(
        query, key, value, bias=bias.astype(jnp.float32), scale=1.0, implementation="xla"
    )


def folds_key_value(query_length: int, config: MT5Config) -> bool:
    """Whether attention with this many queries folds its key and value projections
    (`MultiHeadAttention.fold_key_value`): when `heads x queries` is below the projections'
    width `heads x head_dim`, i.e. fewer queries than `head_dim` (one decoder step a row
    when scoring; not the many steps of packed rows)."""
    return query_length < config.head_dim


def _query_init(head_dim: int):
    """Query init divided by sqrt(head_dim): T5 never scales the attention logits."""

    def init(key, shape, dtype=jnp.float32):
        return attention_init(key, shape, dtype) / jnp.sqrt(head_dim).astype(dtype)

    return init


class MultiHeadAttention(nn.Module):
    """Dot-product attention with an additive bias (relative positions + mask).

    `bias`: `[batch or 1, heads, q, k]`, or a `BlockwiseBias` (head-major only): then the
    bias is made block by block and attention runs `query_blocks`.

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
        key = Dense(inner, axes, cfg, attention_init, name="key")(inputs_kv)
        value = Dense(inner, axes, cfg, attention_init, name="value")(inputs_kv)
        out = Dense(cfg.emb_dim, ("joined_kv", "embed"), cfg, attention_init, name="out")
        dtype = compute_dtype(cfg)
        if self.fused and not enable_dropout and not isinstance(bias, BlockwiseBias):
            heads = (cfg.num_heads, cfg.head_dim)
            query, key, value = (x.reshape(x.shape[:-1] + heads) for x in (query, key, value))
            context = fused(query, key, value, bias, dtype)
            return out(context.reshape(context.shape[:-2] + (inner,)))

        def split_heads(x: Array) -> Array:
            x = x.reshape(x.shape[:-1] + (cfg.num_heads, cfg.head_dim))
            return x.transpose(0, 2, 1, 3) if self.head_major else x

        query, key, value = split_heads(query), split_heads(key), split_heads(value)
        if isinstance(bias, BlockwiseBias):  # the engine's long inputs (`MT5.encode`)
            context = query_blocks(
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
        collection, in the products' dtype (as HF's and T5X's caches keep them), head-major
        (`[batch, heads, length, head_dim]`): each step's two products are then plain
        batched products over the caches as they lie, never a transposed copy of them.

        `decode="self"`: `inputs_kv` is this step's `[batch, 1, emb]`; its key and value are
        written at `position` of `[batch, heads, max_length, head_dim]` caches (`max_length`
        is the bias's last axis; positions after `position` are masked by the bias).
        `decode="cross"`: the encoder output's keys and values are projected (and laid out
        head-major) on the first step and read from the cache after it (HF's cross-attention
        cache; T5X projects them again at every step).
        """
        cfg = self.config
        dtype = compute_dtype(cfg)

        def split_heads(x: Array) -> Array:  # [b, l, inner] -> [b, heads, l, head_dim]
            x = x.reshape(x.shape[:2] + (cfg.num_heads, cfg.head_dim))
            return x.transpose(0, 2, 1, 3)

        cached = self.has_variable("cache", "cached_key")
        if self.decode == "cross" and cached:
            key = self.get_variable("cache", "cached_key")
            value = self.get_variable("cache", "cached_value")
        else:
            key = Dense(inner, axes, cfg, attention_init, name="key")(inputs_kv)
            value = Dense(inner, axes, cfg, attention_init, name="value")(inputs_kv)
            key, value = split_heads(key.astype(dtype)), split_heads(value.astype(dtype))
            if self.decode == "self":
                batch, max_length = key.shape[0], bias.shape[-1]
                shape = (batch, cfg.num_heads, max_length, cfg.head_dim)
                cache_key = self.variable("cache", "cached_key", jnp.zeros, shape, dtype)
                cache_value = self.variable("cache", "cached_value", jnp.zeros, shape, dtype)
                start = (0, 0, position, 0)
                key = jax.lax.dynamic_update_slice(cache_key.value, key, start)
                value = jax.lax.dynamic_update_slice(cache_value.value, value, start)
                cache_key.value, cache_value.value = key, value
            else:
                self.put_variable("cache", "cached_key", key)
                self.put_variable("cache", "cached_value", value)
        out = Dense(cfg.emb_dim, ("joined_kv", "embed"), cfg, attention_init, name="out")
        logits = einsum("bhqd,bhkd->bhqk", split_heads(query), key, dtype)
        weights = jax.nn.softmax(logits + bias.astype(jnp.float32), axis=-1)
        context = einsum("bhqk,bhkd->bqhd", weights, value, dtype)
        return out(context.reshape(context.shape[:-2] + (inner,)))

    def _folded(
        self, query: Array, inputs_kv: Array, bias: Array, inner: int, axes: tuple[str, str]
    ) -> Array:
        """Attention with the key and value projections folded into the query and the
        context (`fold_key_value`); `query` is projected, `inputs_kv` is not."""
        cfg = self.config
        dtype = compute_dtype(cfg)
        heads = (cfg.num_heads, cfg.head_dim)
        key_kernel = DenseKernel(inner, axes, cfg, attention_init, name="key")(inputs_kv)
        value_kernel = DenseKernel(inner, axes, cfg, attention_init, name="value")(inputs_kv)
        out = Dense(cfg.emb_dim, ("joined_kv", "embed"), cfg, attention_init, name="out")
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

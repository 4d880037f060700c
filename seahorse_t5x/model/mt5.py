"""mT5 (T5.1.1 architecture) encoder-decoder in Flax linen.

Parameter names follow T5X's `examples/t5/network` layout (so T5X checkpoints map one to
one), and every parameter carries logical axis names for `flax.linen` partitioning. The
numerics follow T5.1.1: RMS layer norm without bias or mean subtraction, gated-GELU MLP
(tanh approximation), relative position buckets (one bias table per stack, shared by its
layers), no biases, no 1/sqrt(d) scaling of attention logits (folded into the query init),
untied output projection. The blocks live beside it: `layers.py` (products, norm, projections,
MLP), `attention.py` (multi-head attention), `attention_bias.py` (relative positions, masks).

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
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from seahorse_t5x.model import attention, layers
from seahorse_t5x.model.attention import MultiHeadAttention
from seahorse_t5x.model.attention_bias import (
    BlockwiseBias,
    RelativePositionBiases,
    cross_mask,
    decoder_self_mask,
    encoder_self_mask,
    mask_to_bias,
)
from seahorse_t5x.model.configs import MT5Config
from seahorse_t5x.model.layers import Dense, GatedGeluMlp, RmsNorm, embedding_init

Array = jax.Array
# Module names of the scanned layout: `encoder/layers/layer/...`, layers stacked on axis 0.
SCANNED_LAYERS = "layers"
SCANNED_LAYER = "layer"


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
                bias = attention.fused_bias(bias, layers.compute_dtype(cfg))
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
            embedding_init=nn.with_logical_partitioning(embedding_init, ("vocab", "embed")),
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
        return_hidden: bool = False,
    ) -> Array:
        """One step of cached decoding: logits `[batch, vocab]` (float32) of the token after
        `decoder_token` `[batch, 1]`, the decoder input at `position` (with `return_hidden`,
        the normalised hidden state `[batch, emb]` before `logits_dense`).

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
        logits = self.decoder(
            embedded, encoded, self_mask, xmask, False, return_hidden, decode_position=position
        )
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

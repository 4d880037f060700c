"""The T5.1.1 building blocks every family shares: the products in the config's dtype
(`dot`, `einsum`), RMS layer norm, bias-free projections and the gated-GELU MLP, with T5X's
initialisers. `model/mt5.py` assembles them with attention (`model/attention.py`) and the
attention biases (`model/attention_bias.py`).
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from seahorse_t5x.model.configs import MT5Config

Array = jax.Array

# T5X's initialisers (examples/t5/layers.py): fan-in scaled kernels, unit-normal embeddings.
default_kernel_init = nn.initializers.variance_scaling(1.0, "fan_in", "truncated_normal")
attention_init = nn.initializers.variance_scaling(1.0, "fan_in", "normal")
relpos_init = nn.initializers.variance_scaling(1.0, "fan_avg", "uniform")
embedding_init = nn.initializers.normal(stddev=1.0)


def compute_dtype(config: MT5Config) -> jnp.dtype:
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
    kernel_init: Any = default_kernel_init

    @nn.compact
    def __call__(self, x: Array) -> Array:
        return dot(x, self._kernel(x), compute_dtype(self.config))

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

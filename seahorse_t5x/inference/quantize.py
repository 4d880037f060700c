"""Weight-only int8 for scoring: per-output-channel scales, dequantized inside the program.

With `param_dtype="int8"` the projection kernels are kept on the devices as int8 with one
float32 scale per output channel (`w ~= q * scale`, `q = round(w / scale)`, `scale =
max|w| / 127` over the input axis), beside the kernel as `kernel_scale`:

    encoder/layers/layer/attention/query/kernel        int8 [layers, embed, heads*kv]
    encoder/layers/layer/attention/query/kernel_scale  float32 [layers, heads*kv]

The feed-forward output projections (`mlp/wo`) stay in bfloat16, as T5 needs: their
activations are large, and int8 there breaks T5-XXL's outputs in other toolkits. So do the
embedding, the layer norms and the relative position tables. Inside the scoring program
each projection computes `x @ q` (the int8 kernel converted to the compute dtype one layer
at a time inside the layer scan) and multiplies its output columns by the scales, which is
`x @ (q * scale)` exactly: no float copy of the weights is ever held. The model code is
untouched: a flax method interceptor (`dequantizing`) scales the outputs of the `Dense`
modules that have a `kernel_scale`; the answer head takes its two columns' scales.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from seahorse_t5x.model import layers

INT8 = "int8"
SCALE_SUFFIX = "_scale"
# The dtype the parameters that are not quantized are kept in with int8 weights.
UNQUANTIZED_DTYPE = "bfloat16"
_KEPT = ("mlp/wo/kernel",)
# Rows of a kernel read at a time while its scales are computed (bounded host memory).
_ROW_BLOCK = 1024
# The fidelity check of each kernel: int8 is refused where it rounds more than this share
# of a kernel's nonzero weights to zero (about 1% for Gaussian weights, whose largest value
# per column is some 4 standard deviations; most of a column whose largest value is an
# outlier 30 or more deviations out).
MAX_ZEROED_SHARE = 0.2


def is_quantized(name: str) -> bool:
    """Whether a flat parameter is kept in int8: every projection kernel but `mlp/wo`.

    >>> is_quantized("decoder/layers_3/mlp/wi_0/kernel"), is_quantized("encoder/layers_0/mlp/wo/kernel")
    (True, False)
    """
    return name.endswith("/kernel") and not name.endswith(_KEPT)


def scale_name(name: str) -> str:
    return name + SCALE_SUFFIX


def channel_scales(array: Any) -> np.ndarray:
    """float32 per-output-channel scales of a `[..., in, out]` kernel: max|w| / 127 over the
    input axis (1 for an all-zero channel; NaN where the channel is not finite). Read in
    blocks of rows, so a memory-mapped kernel is never copied whole."""
    array_shape = tuple(array.shape)
    rows = array_shape[-2]
    peak = np.zeros(array_shape[:-2] + array_shape[-1:], np.float32)
    for start in range(0, rows, _ROW_BLOCK):
        block = np.asarray(array[..., start : start + _ROW_BLOCK, :], np.float32)
        peak = np.maximum(peak, np.abs(block).max(axis=-2))  # NaN propagates
    return np.where(peak == 0, np.float32(127), peak) / np.float32(127)


def quantize_block(block: Any, scales: np.ndarray) -> np.ndarray:
    """int8 of a block of a kernel's rows whose columns have these scales."""
    values = np.asarray(block, np.float32) / scales[..., None, :]
    return np.clip(np.rint(values), -127, 127).astype(np.int8)


class ZeroedMeter:
    """Counts, block by block, a kernel's nonzero weights and those int8 rounds to zero."""

    def __init__(self) -> None:
        self.nonzero = 0
        self.zeroed = 0

    def quantize(self, block: Any, scales: np.ndarray) -> np.ndarray:
        values = np.asarray(block, np.float32)
        q = quantize_block(values, scales)
        nonzero = values != 0
        self.nonzero += int(nonzero.sum())
        self.zeroed += int((nonzero & (q == 0)).sum())
        return q

    @property
    def zeroed_share(self) -> float:
        return self.zeroed / self.nonzero if self.nonzero else 0.0


def scale_spec(kernel_spec: tuple[Any, ...], ndim: int) -> jax.sharding.PartitionSpec:
    """The scales' partitioning: the kernel's without its input axis."""
    spec = tuple(kernel_spec) + (None,) * (ndim - len(kernel_spec))
    return jax.sharding.PartitionSpec(*spec[:-2], spec[-1])


def _dequantize(next_fun, args, kwargs, context):
    module = context.module
    if (
        context.method_name == "__call__"
        and isinstance(module, layers.Dense)
        and module.has_variable("params", "kernel" + SCALE_SUFFIX)
    ):
        out = next_fun(*args, **kwargs)
        scales = module.get_variable("params", "kernel" + SCALE_SUFFIX)
        return (out * scales.astype(out.dtype)).astype(out.dtype)
    return next_fun(*args, **kwargs)


@contextlib.contextmanager
def dequantizing() -> Iterator[None]:
    """While tracing a model application: the int8 projections' outputs scaled back."""
    with nn.intercept_methods(_dequantize):
        yield


def answer_kernel(params: Any, columns: jax.Array, dtype: Any) -> jax.Array:
    """The answer columns of the output projection, `[embed, 2]`, dequantized if int8."""
    head = params["decoder"]["logits_dense"]
    kernel = jnp.take(head["kernel"], columns, axis=1).astype(dtype)
    scales = head.get("kernel" + SCALE_SUFFIX)
    if scales is None:
        return kernel
    return kernel * jnp.take(scales, columns).astype(dtype)


def parameter_bytes(name: str, shape: tuple[int, ...]) -> int:
    """Bytes of one parameter (and its scales) with int8 weights."""
    elements = int(np.prod(shape))
    if is_quantized(name):
        return elements + 4 * int(np.prod(shape[:-2] + shape[-1:]))
    return elements * jnp.dtype(UNQUANTIZED_DTYPE).itemsize

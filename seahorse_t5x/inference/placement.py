"""Placement: parameters put on a device mesh, sharded by their logical axes, one tensor at
a time, in the parameter dtype (weight-only int8 with per-channel scales among them); the
scanned layout stacked on the devices; parameter bytes per device.

- `Placer`: each device reads only its shard of a (memory-mapped) checkpoint tensor,
  converted to the parameter dtype, so an XXL model never needs a full float32 copy on the
  host; `int8`: projections quantized shard by shard (`inference/quantize.py`), their
  scales placed beside them, a tensor with non-finite weights or too many weights rounded
  to zero refused.
- Scanned layers: `Placer.stack_layers` stacks each kind of layer parameter on a leading
  axis, so the engine's program runs each stack's layers as one scan
  (`mt5.MT5(scan_layers=True)`).
- `bytes_per_device`: what one device holds on a mesh of a given shape, without devices.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from seahorse_t5x import errors
from seahorse_t5x.inference import quantize
from seahorse_t5x.model import mt5, partitioning
from seahorse_t5x.model.configs import MT5Config

PARAM_DTYPES = ("float32", "bfloat16", quantize.INT8)


@functools.cache
def _stacker(sharding: jax.sharding.Sharding):
    # One small program per (layer-parameter shape, sharding): a few per model.
    return jax.jit(lambda *layers: jnp.stack(layers), out_shardings=sharding)


class Placer:
    """Puts parameters on the mesh, sharded by their logical axes, one tensor at a time.

    `placer(name, array)` is the hook `model.checkpoints.load_checkpoint(place=...)` calls
    for each flat `a/b/c` parameter as it is read: every device receives only its shard,
    converted to `param_dtype`, read from the (possibly memory-mapped) host array.
    `stack_layers` then turns the per-layer tree into the scanned layout the engine runs
    fastest.
    """

    def __init__(self, config: MT5Config, mesh: Mesh, param_dtype: str = "float32") -> None:
        if param_dtype not in PARAM_DTYPES:
            raise errors.UserError(
                f"param_dtype must be one of {PARAM_DTYPES}, got {param_dtype!r} "
                "(float16 overflows in mT5)"
            )
        self.int8 = param_dtype == quantize.INT8
        # With int8 projections, the other parameters are kept in bfloat16.
        self.dtype = jnp.dtype(quantize.UNQUANTIZED_DTYPE if self.int8 else param_dtype)
        # Flat names of both layouts (`encoder/layers_0/...` and `encoder/layers/layer/...`).
        self.shardings = {
            **_flat_shardings(config, mesh, scan_layers=False),
            **_flat_shardings(config, mesh, scan_layers=True),
        }
        if self.int8:
            for name, sharding in list(self.shardings.items()):
                if quantize.is_quantized(name):
                    spec = quantize.scale_spec(sharding.spec, len(sharding.spec))
                    scales = jax.sharding.NamedSharding(sharding.mesh, spec)
                    self.shardings[quantize.scale_name(name)] = scales
        # The scales of the int8 kernels placed so far, by flat name (`.../kernel_scale`):
        # `stack_layers` adds them to the tree.
        self.scales: dict[str, jax.Array] = {}

    def _place_int8(self, name: str, array: Any) -> jax.Array:
        if isinstance(array, jax.Array):
            array = np.asarray(array)
        scales = quantize.channel_scales(array)
        if not np.isfinite(scales).all():
            raise errors.UserError(
                f"{name} holds NaN or infinite values; refusing non-finite weights"
            )
        self.scales[quantize.scale_name(name)] = jax.device_put(
            scales, self.shardings[quantize.scale_name(name)]
        )

        meter = quantize.ZeroedMeter()

        def shard(index: tuple[slice, ...]) -> np.ndarray:
            return meter.quantize(array[index], scales[index[:-2] + index[-1:]])

        placed = jax.make_array_from_callback(tuple(array.shape), self.shardings[name], shard)
        if meter.zeroed_share > quantize.MAX_ZEROED_SHARE:
            raise errors.UserError(
                f"{name}: int8 would round {meter.zeroed_share:.0%} of its nonzero weights to "
                f"zero (more than {quantize.MAX_ZEROED_SHARE:.0%}: outliers set its scales); "
                "score this model with `param_dtype` bfloat16"
            )
        return placed

    def __call__(self, name: str, array: Any) -> jax.Array:
        if self.int8 and quantize.is_quantized(name):
            return self._place_int8(name, array)
        sharding = self.shardings[name]
        if isinstance(array, jax.Array):
            return jax.device_put(array.astype(self.dtype), sharding)
        dtype = self.dtype
        return jax.make_array_from_callback(
            tuple(array.shape), sharding, lambda index: np.asarray(array[index], dtype=dtype)
        )

    def abstract_params(self, config: MT5Config) -> Any:
        """The scanned-layout tree this placer makes, as sharded `jax.ShapeDtypeStruct`s
        (for `plan --scoring`): int8 kernels with their scales where it quantizes."""
        shapes = flax.traverse_util.flatten_dict(
            mt5.unbox(mt5.abstract_params(config, scan_layers=True)), sep="/"
        )
        tree = {}
        for name, leaf in shapes.items():
            if self.int8 and quantize.is_quantized(name):
                scales = quantize.scale_name(name)
                tree[name] = jax.ShapeDtypeStruct(
                    leaf.shape, jnp.int8, sharding=self.shardings[name]
                )
                tree[scales] = jax.ShapeDtypeStruct(
                    leaf.shape[:-2] + leaf.shape[-1:],
                    jnp.float32,
                    sharding=self.shardings[scales],
                )
            else:
                tree[name] = jax.ShapeDtypeStruct(
                    leaf.shape, self.dtype, sharding=self.shardings[name]
                )
        return flax.traverse_util.unflatten_dict(tree, sep="/")

    def place_tree(self, params: Any) -> Any:
        """The whole (unboxed or boxed) tree placed, in either layout: for parameters already
        in memory (arrays already placed this way are kept as they are)."""
        flat = flax.traverse_util.flatten_dict(mt5.unbox(params), sep="/")
        placed = {name: self(name, value) for name, value in flat.items()}
        return flax.traverse_util.unflatten_dict(placed, sep="/")

    def stack_layers(self, params: Any, consume: bool = False) -> Any:
        """The scanned layout of a per-layer tree placed by this placer.

        Each kind of layer parameter (`encoder/layers_N/mlp/wi_0/kernel` for every N) becomes
        one array with a leading layer axis, sharded like its layers. With `consume`, each
        kind's per-layer arrays are deleted once stacked, so device memory peaks at the
        parameters plus one kind, not twice the parameters.
        """
        flat = {**flax.traverse_util.flatten_dict(params, sep="/"), **self.scales}
        self.scales = {}
        stacked: dict[str, Any] = {}
        groups: dict[str, dict[int, jax.Array]] = {}
        for name, value in flat.items():
            layer = mt5.stacked_name(name)
            if layer is None:
                stacked[name] = value
            else:
                groups.setdefault(layer[0], {})[layer[1]] = value
        for name, layers in groups.items():
            arrays = [layers[i] for i in range(len(layers))]
            stacked[name] = _stacker(self.shardings[name])(*arrays)
            if consume:
                for array in arrays:
                    array.delete()
        return flax.traverse_util.unflatten_dict(stacked, sep="/")


def _flat_shardings(config: MT5Config, mesh: Mesh, scan_layers: bool) -> dict[str, Any]:
    abstract = mt5.abstract_params(config, scan_layers=scan_layers)
    shardings = partitioning.params_shardings(abstract, mesh)
    return flax.traverse_util.flatten_dict(shardings, sep="/")


def bytes_per_device(config: MT5Config, mesh_shape: Mapping[str, int], param_dtype: str) -> int:
    """Parameter bytes one device holds on a mesh of that shape (no devices needed).

    A dimension is split over a mesh axis only when the axis divides it, as on a real mesh.
    """
    boxed = mt5.abstract_params(config)
    specs = flax.traverse_util.flatten_dict(mt5.logical_axes(boxed), sep="/")
    shapes = flax.traverse_util.flatten_dict(mt5.unbox(boxed), sep="/")
    rules = dict(partitioning.LOGICAL_AXIS_RULES)
    total = 0
    for name, leaf in shapes.items():
        local = []
        for dim, axis in zip(leaf.shape, tuple(specs[name]), strict=True):
            mesh_axis = rules.get(axis)
            size = mesh_shape.get(mesh_axis, 1) if mesh_axis else 1
            local.append(dim // size if dim % size == 0 else dim)
        if param_dtype == quantize.INT8:
            total += quantize.parameter_bytes(name, tuple(local))
        else:
            total += int(np.prod(local)) * jnp.dtype(param_dtype).itemsize
    return total

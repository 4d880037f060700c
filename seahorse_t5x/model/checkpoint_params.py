"""Parameters from any checkpoint format: the shapes a config implies, and the one place
checkpoint arrays become a parameter tree (shapes checked, placed, finite).

Every format module (`hf_checkpoints`, `t5x_checkpoints`, `orbax_checkpoints`) hands its
flat `a/b/c` name -> array mapping to `to_tree`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np

from seahorse_t5x import errors
from seahorse_t5x.model import mt5
from seahorse_t5x.model.configs import MT5Config

Params = dict[str, Any]


def expected_shapes(config: MT5Config) -> dict[str, tuple[int, ...]]:
    """Flat `a/b/c` parameter name -> shape, as `mt5.init_params` would make them."""
    abstract = mt5.unbox(mt5.abstract_params(config))
    flat = flax.traverse_util.flatten_dict(abstract, sep="/")
    return {name: tuple(leaf.shape) for name, leaf in flat.items()}


def check_params(config: MT5Config, flat: Mapping[str, Any], source: str) -> None:
    """Raises `UserError` naming missing, unexpected or mis-shaped parameters.

    Args:
      config: the model config the parameters must fit.
      flat: flat `a/b/c` name -> array (or anything with `.shape`).
      source: where the parameters came from, for the message.
    """
    expected = expected_shapes(config)
    problems = []
    for name in sorted(set(expected) - set(flat)):
        problems.append(f"missing {name} (expected shape {expected[name]})")
    for name in sorted(set(flat) - set(expected)):
        problems.append(f"unexpected {name} (shape {tuple(flat[name].shape)})")
    for name in sorted(set(expected) & set(flat)):
        found = tuple(flat[name].shape)
        if found != expected[name]:
            problems.append(
                f"{name}: expected shape {expected[name]} from the config, found {found}"
            )
    if problems:
        shown = "; ".join(problems[:8])
        more = f"; and {len(problems) - 8} more" if len(problems) > 8 else ""
        raise errors.UserError(
            f"checkpoint {source} does not fit the model config ({len(problems)} problems): "
            f"{shown}{more}"
        )


# `place(name, array)` puts one flat `a/b/c` parameter where it will live (e.g. sharded on a
# device mesh: `inference.placement.Placer`), called as each tensor is read. A `Placement` makes
# the `place` function for the checkpoint's config once that is known.
Place = Callable[[str, Any], Any]
Placement = Callable[[MT5Config], Place]


def _float32_host(name: str, array: Any) -> np.ndarray:
    del name
    return np.asarray(array, dtype=np.float32)


@jax.jit
def _device_non_finite_count(array: jax.Array) -> jax.Array:
    return jnp.sum(~jnp.isfinite(array))


def _non_finite_count(array: Any) -> int:
    if isinstance(array, jax.Array):
        # Counted where the array lives (its shards), without a host copy; compiled once
        # per parameter shape.
        return int(np.asarray(_device_non_finite_count(array).addressable_data(0)))
    return int(array.size - np.isfinite(array).sum())


def to_tree(
    config: MT5Config, flat: Mapping[str, Any], source: str, placement: Placement | None = None
) -> Params:
    """The one place checkpoint arrays become parameters: shapes checked, placed, finite.

    By default parameters become float32 host arrays whatever the checkpoint stored (bf16 in
    some exports); the compute dtype is the config's. With `placement`, each tensor goes
    straight from the (memory-mapped) file to where it lives, one at a time.

    Raises:
      UserError: parameters that do not fit `config`, or that hold NaN or infinity.
    """
    check_params(config, flat, source)
    try:
        place = placement(config) if placement is not None else _float32_host
    except errors.SettingsError:
        raise
    except errors.UserError as e:  # the run's settings against this model, not the file
        raise errors.SettingsError(str(e)) from None
    arrays = {}
    for name, value in flat.items():
        array = place(name, value)
        bad = _non_finite_count(array)
        if bad:
            raise errors.UserError(
                f"checkpoint {source}: {name} holds {bad} NaN or infinite value(s) of "
                f"{int(np.prod(array.shape))}; refusing non-finite weights"
            )
        arrays[name] = array
    return flax.traverse_util.unflatten_dict(arrays, sep="/")

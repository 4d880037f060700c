"""T5X checkpoints (t5x/checkpoints.py) of the Flax mT5.

`checkpoint` is msgpack of {"version": N, "optimizer": {"target": params, "state": {...}}};
each leaf is an array (written inline) or the JSON of a tensorstore spec whose kvstore path
(relative to the checkpoint directory) names a zarr array such as
`target.encoder.layers_0.attention...`. A T5X MODEL_DIR holds `checkpoint_N` directories;
T5X checkpoints carry no config: it is inferred from the parameter shapes.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import flax
import numpy as np

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoint_params, families
from seahorse_t5x.model.checkpoint_params import Params, Placement
from seahorse_t5x.model.configs import MT5Config

T5X_MSGPACK = "checkpoint"


def find_msgpack(path: pathlib.Path) -> pathlib.Path | None:
    """The msgpack file of a T5X checkpoint at `path`, or None if `path` is not one."""
    if path.is_file() and path.name == T5X_MSGPACK:
        return path
    for candidate in (path / T5X_MSGPACK, path / "state" / T5X_MSGPACK):
        if candidate.is_file():
            return candidate
    steps = _t5x_steps(path)
    return find_msgpack(steps[-1][1]) if steps else None


def _t5x_steps(directory: pathlib.Path) -> list[tuple[int, pathlib.Path]]:
    """`checkpoint_N` subdirectories of a T5X MODEL_DIR, by step."""
    if not directory.is_dir():
        return []
    found = []
    for child in directory.iterdir():
        match = re.fullmatch(r"checkpoint_(\d+)", child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    return sorted(found)


def _read_tensorstore(spec: dict[str, Any], checkpoint_dir: pathlib.Path, name: str) -> np.ndarray:
    import tensorstore as ts

    spec = json.loads(json.dumps(spec))  # deep copy; msgpack may hold bytes keys
    kvstore = spec.get("kvstore")
    if isinstance(kvstore, dict) and "path" in kvstore:
        relative = kvstore["path"]
    elif "path" in spec:  # tensorstore < 0.1.14 wrote the path at the top level
        relative = spec.pop("path")
    else:
        raise errors.UserError(f"T5X checkpoint {checkpoint_dir}: {name} has no array path")
    # Written on GCS or elsewhere: the arrays sit beside the msgpack file.
    local = pathlib.Path(relative)
    if not local.is_absolute() or not local.exists():
        local = checkpoint_dir / pathlib.Path(relative).name
    spec["kvstore"] = {"driver": "file", "path": str(local)}
    try:
        return ts.open(spec, open=True, read=True).result().read().result()
    except Exception as e:  # noqa: BLE001 - tensorstore raises ValueError/RuntimeError variants
        raise errors.UserError(f"T5X checkpoint: cannot read {name} from {local}: {e}") from None


def _flatten_t5x_tree(tree: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(`a/b/c`, leaf) pairs; a tensorstore spec dict is a leaf, not a subtree."""
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and "driver" not in value:
            yield from _flatten_t5x_tree(value, f"{name}/")
        else:
            yield name, value


def read_t5x_params(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Flat `a/b/c` -> array of the model parameters (`target`) of a T5X checkpoint."""
    msgpack_path = find_msgpack(pathlib.Path(path))
    if msgpack_path is None:
        raise errors.UserError(f"{path} is not a T5X checkpoint (no msgpack `checkpoint` file)")
    try:
        contents = flax.serialization.msgpack_restore(msgpack_path.read_bytes())
    except Exception as e:  # noqa: BLE001 - msgpack raises several unrelated types
        raise errors.UserError(f"cannot read T5X msgpack {msgpack_path}: {e}") from None
    state = contents.get("optimizer", contents)
    if "target" not in state:
        raise errors.UserError(
            f"T5X checkpoint {msgpack_path} has no `target` (parameters); found {sorted(state)}"
        )
    params = {}
    for name, leaf in _flatten_t5x_tree(state["target"]):
        if isinstance(leaf, dict) and "driver" in leaf:
            params[name] = _read_tensorstore(leaf, msgpack_path.parent, name)
        else:
            params[name] = np.asarray(leaf)
    return params


def infer_config(
    flat: Mapping[str, Any], dtype: str | None = None, source: str = "checkpoint"
) -> MT5Config:
    """The config implied by parameter shapes (T5X checkpoints carry no config).

    `relative_attention_max_distance` cannot be seen in shapes: T5X's default (128) is used;
    the family is `t5.1.1` for T5's 32,128-id vocabulary, else `mt5`.

    Args:
      flat: the parameters, by `a/b/c` name.
      dtype: the model's dtype (default float32).
      source: the checkpoint's file, named in errors.

    Raises:
      UserError: a parameter the config is read from is missing (naming `source`).
    """

    def shape(name: str) -> tuple[int, ...]:
        if name not in flat:
            raise errors.UserError(
                f"{source} lacks the parameter {name}; is it an mT5 (T5.1.1) checkpoint?"
            )
        return tuple(flat[name].shape)

    vocab_size, emb_dim = shape("token_embedder/embedding")
    num_heads, num_buckets = shape("encoder/relpos_bias/rel_embedding")
    joined = shape("encoder/layers_0/attention/query/kernel")[1]

    def depth(stack: str) -> int:
        return len({n.split("/")[1] for n in flat if n.startswith(f"{stack}/layers_")})

    return MT5Config(
        vocab_size=vocab_size,
        emb_dim=emb_dim,
        num_heads=num_heads,
        head_dim=joined // num_heads,
        mlp_dim=shape("encoder/layers_0/mlp/wi_0/kernel")[1],
        num_encoder_layers=depth("encoder"),
        num_decoder_layers=depth("decoder"),
        relative_attention_num_buckets=num_buckets,
        dtype=dtype or "float32",
        # T5's English vocabulary marks the T5.1.1 families; the rest read as mT5.
        family="t5.1.1" if vocab_size == families.T5_VOCAB_SIZE else "mt5",
    )


def load_t5x(
    path: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads a T5X `checkpoint_N` directory (or a T5X MODEL_DIR: its latest step)."""
    flat = read_t5x_params(path)
    msgpack_path = find_msgpack(pathlib.Path(path))
    config = infer_config(flat, dtype, f"T5X checkpoint {msgpack_path or path}")
    return config, checkpoint_params.to_tree(config, flat, str(path), placement)

"""Checkpoint import and export for the Flax mT5: HF, T5X and this project's orbax layout.

`load_checkpoint(path)` detects the format:
- an HF directory: `config.json` + `model.safetensors` (or a sharded
  `model.safetensors.index.json`, or `pytorch_model.bin` read with
  `torch.load(weights_only=True)`), as `google/mt5-*` and `google/seahorse-*` ship;
- a T5X `checkpoint_N` directory: a msgpack `checkpoint` file holding the state tree, with
  arrays inline or as tensorstore references to zarr arrays under `target.<name>/`;
- this project's orbax layout: a step directory with items `params` and `meta` (its
  `model_config` is the `MT5Config` dict), or a MODEL_DIR whose `checkpoints/` holds steps.
Every import is checked against the shapes the config implies; a mismatch names the
parameter, the expected shape and the found one. Weights that are NaN or infinite are
refused. A damaged file (a truncated or malformed safetensors file, a `config.json` that is
not JSON or holds wrong-typed values, a `pytorch_model.bin` that is not a PyTorch
checkpoint) is one `UserError` naming the file and what is wrong.

This project's checkpoints carry content hashes (`meta.content_sha256`: SHA-256 of the
parameter values, and of the other items), checked on load: a flipped byte is a damaged
checkpoint, not silently different weights. Loading a MODEL_DIR falls back, with a
warning, from a damaged best or latest step to the newest intact one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import pathlib
import re
import struct
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import flax
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from seahorse_t5x import errors, fileio
from seahorse_t5x.model import configs, mt5
from seahorse_t5x.model.configs import MT5Config

Params = dict[str, Any]

# Orbax item names of this project's checkpoints (shared with the local runner).
PARAMS_ITEM = "params"
META_ITEM = "meta"
META_MODEL_CONFIG = "model_config"
# A MODEL_DIR marks its best step with this file (JSON `{"step": N, ...}`) in checkpoints/.
BEST_MARKER = "best.json"
# meta key of the content hashes: {item name: SHA-256 hex}, "meta" for meta without this key.
META_CONTENT_HASHES = "content_sha256"

log = logging.getLogger(__name__)


def tree_digest(tree: Any) -> str:
    """SHA-256 of a tree's array values (dtype, shape and bytes of each leaf, in order).

    The same for the tree as saved and as restored by orbax (host or device arrays).
    """
    digest = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(tree):
        array = np.ascontiguousarray(np.asarray(leaf))
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def json_digest(value: Any) -> str:
    """SHA-256 of a JSON value, independent of key order."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def meta_digest(meta: Mapping[str, Any]) -> str:
    """SHA-256 of a checkpoint's meta without its own hashes."""
    return json_digest({k: v for k, v in meta.items() if k != META_CONTENT_HASHES})


def verify_content(
    step_dir: str | os.PathLike, meta: Mapping[str, Any], items: Mapping[str, Any]
) -> None:
    """Checks restored items against the hashes saved in `meta` (when it has them).

    Args:
      step_dir: the step directory, for the message.
      meta: the restored meta item.
      items: item name -> restored value (`params`, `opt_state`: trees; others: JSON).

    Raises:
      UserError: an item's content differs from its saved hash (the checkpoint is damaged).
    """
    saved = meta.get(META_CONTENT_HASHES)
    if saved is None:
        return  # written before hashes were saved
    if not isinstance(saved, Mapping):
        raise errors.UserError(
            f"checkpoint {step_dir} is damaged: its content hashes are unreadable"
        )
    found = {"meta": meta_digest(meta)}
    for name, value in items.items():
        if name in saved:
            is_json = isinstance(value, Mapping) and not _holds_arrays(value)
            found[name] = json_digest(dict(value)) if is_json else tree_digest(value)
    damaged = sorted(name for name, digest in found.items() if saved.get(name, digest) != digest)
    if damaged:
        raise errors.UserError(
            f"checkpoint {step_dir} is damaged: {', '.join(damaged)} differ(s) from the content "
            "hash saved with it"
        )


def _holds_arrays(tree: Any) -> bool:
    return any(
        hasattr(leaf, "shape") and hasattr(leaf, "dtype")
        for leaf in jax.tree_util.tree_leaves(tree)
    )


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
# device mesh: `inference.engine.Placer`), called as each tensor is read. A `Placement` makes
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


def _to_tree(
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


# ---------------------------------------------------------------------------------------
# HF transformers (MT5ForConditionalGeneration) names.


def hf_name_map(config: MT5Config) -> dict[str, tuple[str, bool]]:
    """Flat parameter name -> (HF state-dict key, whether the HF matrix is transposed)."""
    names: dict[str, tuple[str, bool]] = {
        "token_embedder/embedding": ("shared.weight", False),
        "decoder/logits_dense/kernel": ("lm_head.weight", True),
        "encoder/encoder_norm/scale": ("encoder.final_layer_norm.weight", False),
        "decoder/decoder_norm/scale": ("decoder.final_layer_norm.weight", False),
        "encoder/relpos_bias/rel_embedding": (
            "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
            True,
        ),
        "decoder/relpos_bias/rel_embedding": (
            "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
            True,
        ),
    }
    projections = {"query": "q", "key": "k", "value": "v", "out": "o"}

    def attention(ours: str, theirs: str) -> None:
        for mine, hf in projections.items():
            names[f"{ours}/{mine}/kernel"] = (f"{theirs}.{hf}.weight", True)

    def mlp(ours: str, theirs: str) -> None:
        for part in ("wi_0", "wi_1", "wo"):
            names[f"{ours}/mlp/{part}/kernel"] = (f"{theirs}.DenseReluDense.{part}.weight", True)

    for i in range(config.num_encoder_layers):
        ours, theirs = f"encoder/layers_{i}", f"encoder.block.{i}.layer"
        names[f"{ours}/pre_attention_layer_norm/scale"] = (f"{theirs}.0.layer_norm.weight", False)
        attention(f"{ours}/attention", f"{theirs}.0.SelfAttention")
        names[f"{ours}/pre_mlp_layer_norm/scale"] = (f"{theirs}.1.layer_norm.weight", False)
        mlp(ours, f"{theirs}.1")
    for i in range(config.num_decoder_layers):
        ours, theirs = f"decoder/layers_{i}", f"decoder.block.{i}.layer"
        names[f"{ours}/pre_self_attention_layer_norm/scale"] = (
            f"{theirs}.0.layer_norm.weight",
            False,
        )
        attention(f"{ours}/self_attention", f"{theirs}.0.SelfAttention")
        names[f"{ours}/pre_cross_attention_layer_norm/scale"] = (
            f"{theirs}.1.layer_norm.weight",
            False,
        )
        attention(f"{ours}/encoder_decoder_attention", f"{theirs}.1.EncDecAttention")
        names[f"{ours}/pre_mlp_layer_norm/scale"] = (f"{theirs}.2.layer_norm.weight", False)
        mlp(ours, f"{theirs}.2")
    return names


# HF keys that hold no parameter of their own (tied copies of `shared.weight`).
_HF_TIED_KEYS = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")


def from_hf_state_dict(
    config: MT5Config,
    state: Mapping[str, Any],
    source: str = "HF state dict",
    tied_logits: bool = False,
    placement: Placement | None = None,
) -> Params:
    """Converts an HF mT5 state dict (numpy or torch tensors) into the Flax parameter tree.

    Args:
      config: the model config.
      state: HF tensor name -> tensor.
      source: where the tensors came from, for error messages.
      tied_logits: the HF config ties `lm_head` to `shared` (transformers >= 5 does so for
        every mT5), so a missing `lm_head.weight` is the embedding.
      placement: makes the function that puts each parameter where it lives (default:
        float32 host arrays).

    Raises:
      UserError: on missing, unexpected or mis-shaped tensors.
    """
    if tied_logits and "lm_head.weight" not in state and "shared.weight" in state:
        state = {**state, "lm_head.weight": state["shared.weight"]}
    mapping = hf_name_map(config)
    known = {hf for hf, _ in mapping.values()} | set(_HF_TIED_KEYS)
    flat: dict[str, Any] = {}
    for ours, (hf, transposed) in mapping.items():
        if hf in state:
            value = _as_numpy(state[hf])
            flat[ours] = value.T if transposed else value
    for key in sorted(set(state) - known):
        flat[f"(HF) {key}"] = _as_numpy(state[key])
    missing_hf = [hf for ours, (hf, _) in mapping.items() if ours not in flat]
    if missing_hf:
        raise errors.UserError(
            f"checkpoint {source} lacks {len(missing_hf)} HF tensors the config needs, e.g. "
            f"{missing_hf[:5]}"
        )
    return _to_tree(config, flat, source, placement)


def to_hf_state_dict(params: Params, config: MT5Config) -> dict[str, np.ndarray]:
    """The inverse of `from_hf_state_dict` (used to export and to build test fixtures)."""
    flat = flax.traverse_util.flatten_dict(mt5.unbox(params), sep="/")
    state = {}
    for ours, (hf, transposed) in hf_name_map(config).items():
        value = np.asarray(flat[ours], dtype=np.float32)
        state[hf] = np.ascontiguousarray(value.T if transposed else value)
    return state


def _as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # torch tensor; bf16 has no numpy dtype: go via float32.
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


_SAFETENSORS_DTYPES = {
    "F32": np.float32,
    "F16": np.float16,
    "BF16": ml_dtypes.bfloat16,
    "F64": np.float64,
}


def read_safetensors(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """A `.safetensors` file's tensors as memory-mapped numpy arrays (bfloat16 included).

    The `safetensors` package's parser validates the header, the dtypes and that every
    tensor's offsets lie inside the file; the tensors are then views of the memory-mapped
    file, so nothing is read until a tensor (or a shard of it) is used: an XXL checkpoint
    is never copied whole into host memory.

    Raises:
      UserError: the file is missing, truncated or malformed, naming it and what is wrong.
    """
    from safetensors import safe_open

    path = pathlib.Path(path)
    if not path.is_file():
        raise errors.UserError(f"safetensors file not found: {path}")
    try:
        with safe_open(str(path), framework="numpy") as f:
            names = list(f.keys())  # noqa: SIM118 - safe_open is not a Mapping
        with open(path, "rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(header_len))
    except Exception as e:  # noqa: BLE001 - SafetensorError, OSError, ValueError variants
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        raise errors.UserError(f"{path} is not a valid safetensors file: {reason}") from None
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    tensors: dict[str, np.ndarray] = {}
    for name in names:
        info = header[name]
        if info["dtype"] not in _SAFETENSORS_DTYPES:
            raise errors.UserError(
                f"{path}: tensor {name} has dtype {info['dtype']}; expected one of "
                f"{sorted(_SAFETENSORS_DTYPES)}"
            )
        start, end = info["data_offsets"]
        dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
        tensors[name] = data[start:end].view(dtype).reshape(info["shape"])
    return tensors


def _read_json_file(path: pathlib.Path, what: str) -> Any:
    try:
        with fileio.open_text_input(path) as f:
            text = f.read()
    except errors.DataError as e:
        raise errors.UserError(f"{what} {path}: {e.reason}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise errors.DataError(str(path), e.lineno, None, f"{what} is not JSON ({e.msg})") from None


def _read_torch_bin(torch_bin: pathlib.Path) -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        raise errors.UserError(
            f"{torch_bin} needs PyTorch to read; install `seahorse-t5x[hf]` or convert the "
            "checkpoint to safetensors"
        ) from None
    try:
        # weights_only: never unpickle arbitrary objects from a downloaded file.
        state = torch.load(torch_bin, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises pickle, zip and runtime errors
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        raise errors.UserError(
            f"{torch_bin} is not a readable PyTorch checkpoint: {reason}"
        ) from None
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and hasattr(v, "shape") for k, v in state.items()
    ):
        raise errors.UserError(
            f"{torch_bin} is not a state dict (tensor name -> tensor); found {type(state).__name__}"
        )
    return dict(state)


def _read_hf_weights(directory: pathlib.Path) -> dict[str, Any]:
    single = directory / "model.safetensors"
    index = directory / "model.safetensors.index.json"
    torch_bin = directory / "pytorch_model.bin"
    if single.exists():
        return read_safetensors(single)
    if index.exists():
        content = _read_json_file(index, "safetensors index")
        weight_map = content.get("weight_map") if isinstance(content, dict) else None
        if not isinstance(weight_map, dict) or not all(
            isinstance(v, str) for v in weight_map.values()
        ):
            raise errors.DataError(
                str(index), None, "weight_map", "expected an object of tensor name -> shard file"
            )
        state: dict[str, Any] = {}
        for shard in sorted(set(weight_map.values())):
            state.update(read_safetensors(directory / shard))
        return state
    if torch_bin.exists():
        return _read_torch_bin(torch_bin)
    raise errors.UserError(
        f"HF checkpoint {directory} has config.json but no model.safetensors, "
        "model.safetensors.index.json or pytorch_model.bin"
    )


# config.json keys the model reads, and the JSON types they must have.
_HF_INT_KEYS = (
    "vocab_size",
    "d_model",
    "num_heads",
    "d_kv",
    "d_ff",
    "num_layers",
    "num_decoder_layers",
    "relative_attention_num_buckets",
    "relative_attention_max_distance",
)
_HF_FLOAT_KEYS = ("dropout_rate", "layer_norm_epsilon")
_HF_STR_KEYS = ("feed_forward_proj", "model_type")
_HF_BOOL_KEYS = ("tie_word_embeddings",)


def read_hf_config(directory: str | os.PathLike) -> dict[str, Any]:
    """The `config.json` of an HF directory, checked to be an object with well-typed values.

    Raises:
      DataError: not JSON, not an object, or a value of the wrong type (naming the key).
    """
    path = pathlib.Path(directory) / "config.json"
    hf_config = _read_json_file(path, "config.json")
    if not isinstance(hf_config, dict):
        raise errors.DataError(
            str(path), None, None, f"expected a JSON object, got {type(hf_config).__name__}"
        )

    def wrong(key: str, expected: str) -> errors.DataError:
        return errors.DataError(
            str(path), None, key, f"expected {expected}, got {hf_config[key]!r}"
        )

    for key in _HF_INT_KEYS:
        value = hf_config.get(key)
        if value is None and key == "num_decoder_layers":
            continue
        if key in hf_config and (type(value) is not int or value <= 0):
            raise wrong(key, "a positive integer")
    for key in _HF_FLOAT_KEYS:
        value = hf_config.get(key)
        if key in hf_config and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise wrong(key, "a number")
    for key in _HF_STR_KEYS:
        if key in hf_config and not isinstance(hf_config[key], str):
            raise wrong(key, "a string")
    for key in _HF_BOOL_KEYS:
        if key in hf_config and not isinstance(hf_config[key], bool):
            raise wrong(key, "true or false")
    return hf_config


def load_hf(
    directory: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads an HF `MT5ForConditionalGeneration` directory."""
    directory = pathlib.Path(directory)
    hf_config = read_hf_config(directory)
    config = configs.from_hf_config(hf_config, dtype=dtype)
    return config, from_hf_state_dict(
        config,
        _read_hf_weights(directory),
        str(directory),
        tied_logits=bool(hf_config.get("tie_word_embeddings", False)),
        placement=placement,
    )


def save_hf(directory: str | os.PathLike, config: MT5Config, params: Params) -> None:
    """Writes `config.json` + `model.safetensors` readable by HF `MT5ForConditionalGeneration`."""
    from safetensors.numpy import save_file

    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    hf_config = {
        "architectures": ["MT5ForConditionalGeneration"],
        "model_type": "mt5",
        **configs.to_hf_config(config),
        "tie_word_embeddings": False,
        "is_encoder_decoder": True,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "decoder_start_token_id": 0,
    }
    (directory / "config.json").write_text(json.dumps(hf_config, indent=2))
    save_file(to_hf_state_dict(params, config), str(directory / "model.safetensors"))


# ---------------------------------------------------------------------------------------
# T5X checkpoints (t5x/checkpoints.py): `checkpoint` is msgpack of
# {"version": N, "optimizer": {"target": params, "state": {...}}}; each leaf is an array
# (written inline) or the JSON of a tensorstore spec whose kvstore path (relative to the
# checkpoint directory) names a zarr array such as `target.encoder.layers_0.attention...`.

T5X_MSGPACK = "checkpoint"


def _t5x_msgpack_path(path: pathlib.Path) -> pathlib.Path | None:
    """The msgpack file of a T5X checkpoint at `path`, or None if `path` is not one."""
    if path.is_file() and path.name == T5X_MSGPACK:
        return path
    for candidate in (path / T5X_MSGPACK, path / "state" / T5X_MSGPACK):
        if candidate.is_file():
            return candidate
    steps = _t5x_steps(path)
    return _t5x_msgpack_path(steps[-1][1]) if steps else None


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
    msgpack_path = _t5x_msgpack_path(pathlib.Path(path))
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


def infer_config(flat: Mapping[str, Any], dtype: str | None = None) -> MT5Config:
    """The config implied by parameter shapes (T5X checkpoints carry no config).

    `relative_attention_max_distance` cannot be seen in shapes: T5X's default (128) is used.
    """

    def shape(name: str) -> tuple[int, ...]:
        if name not in flat:
            raise errors.UserError(f"checkpoint lacks {name}; is it an mT5 (T5.1.1) checkpoint?")
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
    )


def load_t5x(
    path: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads a T5X `checkpoint_N` directory (or a T5X MODEL_DIR: its latest step)."""
    flat = read_t5x_params(path)
    config = infer_config(flat, dtype)
    return config, _to_tree(config, flat, str(path), placement)


# ---------------------------------------------------------------------------------------
# This project's orbax layout: a step directory with items `params` and `meta`.


def _is_orbax_step(path: pathlib.Path) -> bool:
    return (path / PARAMS_ITEM).is_dir() and (path / META_ITEM).exists()


def _orbax_steps(checkpoints_dir: pathlib.Path) -> list[int]:
    if not checkpoints_dir.is_dir():
        return []
    return sorted(
        int(child.name)
        for child in checkpoints_dir.iterdir()
        if child.name.isdigit() and _is_orbax_step(child)
    )


def model_dir_candidates(path: pathlib.Path) -> list[pathlib.Path]:
    """The step directories a MODEL_DIR (or its `checkpoints/`) stands for, in the order to
    try them: the best marked step, then the others from the newest. Empty when none."""
    for checkpoints_dir in (path / "checkpoints", path):
        steps = _orbax_steps(checkpoints_dir)
        if not steps:
            continue
        order = sorted(steps, reverse=True)
        marker = checkpoints_dir / BEST_MARKER
        if marker.exists():
            try:
                best = int(json.loads(marker.read_text())["step"])
            except (OSError, ValueError, KeyError, TypeError) as e:
                log.warning("ignoring unreadable best-checkpoint marker %s: %s", marker, e)
            else:
                if best in steps:
                    order = [best] + [s for s in order if s != best]
        return [checkpoints_dir / str(step) for step in order]
    return []


def resolve_model_dir(path: pathlib.Path) -> pathlib.Path | None:
    """The step directory a MODEL_DIR (or its `checkpoints/`) stands for: best, else latest."""
    candidates = model_dir_candidates(path)
    return candidates[0] if candidates else None


def _composite_checkpointer():
    import orbax.checkpoint as ocp

    return ocp, ocp.Checkpointer(ocp.CompositeCheckpointHandler())


def load_orbax(
    step_dir: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads a step directory with orbax items `params` and `meta` (`meta.model_config`)."""
    step_dir = pathlib.Path(step_dir).absolute()
    ocp, checkpointer = _composite_checkpointer()
    try:
        # Host (numpy) arrays, not arrays on the devices the step was saved from: in a run of
        # several processes, those are not every process's own (and `placement` puts the
        # parameters where this run wants them).
        saved = ocp.PyTreeCheckpointHandler().metadata(step_dir / PARAMS_ITEM)
        as_numpy = jax.tree_util.tree_map(
            lambda _: ocp.RestoreArgs(restore_type=np.ndarray), getattr(saved, "tree", saved)
        )
        restored = checkpointer.restore(
            step_dir,
            ocp.args.Composite(
                **{
                    PARAMS_ITEM: ocp.args.PyTreeRestore(restore_args=as_numpy),
                    META_ITEM: ocp.args.JsonRestore(),
                }
            ),
        )
    except Exception as e:  # noqa: BLE001 - orbax wraps IO and format errors variously
        reason = " ".join(str(e).split())[:300] or type(e).__name__
        raise errors.UserError(f"cannot restore checkpoint {step_dir}: {reason}") from None
    meta = restored[META_ITEM]
    if not isinstance(meta, Mapping) or not isinstance(meta.get(META_MODEL_CONFIG), Mapping):
        raise errors.UserError(f"checkpoint {step_dir}: meta has no {META_MODEL_CONFIG!r} object")
    meta = dict(meta)
    params = jax.tree_util.tree_map(np.asarray, dict(restored[PARAMS_ITEM]))
    verify_content(step_dir, meta, {PARAMS_ITEM: params})
    try:
        config = MT5Config.from_dict(dict(meta[META_MODEL_CONFIG]))
    except (TypeError, ValueError) as e:
        raise errors.UserError(
            f"checkpoint {step_dir}: meta {META_MODEL_CONFIG} is invalid: {e}"
        ) from None
    if dtype:
        config = config.replace(dtype=dtype)
    flat = flax.traverse_util.flatten_dict(params, sep="/")
    return config, _to_tree(config, flat, str(step_dir), placement)


def load_model_dir(
    path: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads a MODEL_DIR's best (else latest) step, falling back to the newest intact one.

    A damaged step (unreadable, content hash mismatch, non-finite weights) is skipped with
    a warning, as the trainer does when it resumes.

    Raises:
      UserError: no step can be loaded (the first step's error, and how many were tried).
    """
    candidates = model_dir_candidates(pathlib.Path(path))
    if not candidates:
        raise errors.UserError(f"{path} holds no checkpoint steps")
    first_error = None
    for step_dir in candidates:
        try:
            loaded = load_orbax(step_dir, dtype, placement)
        except errors.SettingsError:
            raise  # another step would not load either
        except errors.UserError as e:
            first_error = first_error or e
            log.warning("skipping checkpoint %s: %s", step_dir, e)
            continue
        if step_dir != candidates[0]:
            log.warning("using checkpoint %s instead of the damaged %s", step_dir, candidates[0])
        return loaded
    raise errors.UserError(
        f"none of the {len(candidates)} checkpoint steps in {path} can be loaded; the first: "
        f"{first_error}"
    )


def save_params(
    directory: str | os.PathLike,
    config: MT5Config,
    params: Params,
    extra_meta: Mapping[str, Any] | None = None,
) -> pathlib.Path:
    """Writes `params` (orbax standard) + `meta` (JSON with `model_config`) into `directory`.

    `load_checkpoint(directory)` reads it back. The directory must not exist yet.

    Raises:
      UserError: when `directory` exists or the parameters do not fit `config`.
    """
    directory = pathlib.Path(directory).absolute()
    if directory.exists():
        raise errors.UserError(f"{directory} exists; choose a new directory for the export")
    plain = mt5.unbox(params)
    check_params(config, flax.traverse_util.flatten_dict(plain, sep="/"), "to save")
    meta = {**dict(extra_meta or {}), META_MODEL_CONFIG: config.to_dict()}
    meta[META_CONTENT_HASHES] = {PARAMS_ITEM: tree_digest(plain), "meta": meta_digest(meta)}
    ocp, checkpointer = _composite_checkpointer()
    checkpointer.save(
        directory,
        ocp.args.Composite(
            **{
                PARAMS_ITEM: ocp.args.StandardSave(jax.tree_util.tree_map(np.asarray, plain)),
                META_ITEM: ocp.args.JsonSave(meta),
            }
        ),
    )
    return directory


# ---------------------------------------------------------------------------------------


def detect_format(path: str | os.PathLike) -> tuple[str, pathlib.Path]:
    """("hf" | "t5x" | "orbax", the directory to read) for a checkpoint path.

    Raises:
      UserError: when the path does not exist or holds no known checkpoint.
    """
    path = pathlib.Path(path)
    if not path.exists():
        raise errors.UserError(f"checkpoint not found: {path}")
    if path.is_dir() and (path / "config.json").is_file():
        return "hf", path
    if path.is_dir() and _is_orbax_step(path):
        return "orbax", path
    if _t5x_msgpack_path(path) is not None:
        return "t5x", path
    step_dir = resolve_model_dir(path) if path.is_dir() else None
    if step_dir is not None:
        return "orbax", step_dir
    raise errors.UserError(
        f"{path} holds no known checkpoint: expected an HF directory (config.json + "
        "model.safetensors or pytorch_model.bin), a T5X checkpoint_N directory (msgpack "
        "`checkpoint`), an orbax step directory (params/ + meta/) or a MODEL_DIR with "
        "checkpoints/"
    )


def load_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The `meta` item of this project's checkpoints (how the model was trained); `{}` for
    HF and T5X checkpoints, which carry none.

    Raises:
      UserError: for a missing path, an unknown format or an unreadable meta item.
    """
    kind, directory = detect_format(path)
    if kind != "orbax":
        return {}
    ocp, checkpointer = _composite_checkpointer()
    try:
        restored = checkpointer.restore(
            pathlib.Path(directory).absolute(),
            ocp.args.Composite(**{META_ITEM: ocp.args.JsonRestore()}),
        )
    except Exception as e:  # noqa: BLE001 - orbax wraps IO and format errors variously
        raise errors.UserError(f"cannot read the meta of checkpoint {directory}: {e}") from None
    return dict(restored[META_ITEM] or {})


def load_checkpoint(
    path: str | os.PathLike, dtype: str | None = None, placement: Placement | None = None
) -> tuple[MT5Config, Params]:
    """Loads any supported checkpoint as (config, float32 parameter tree of numpy arrays).

    Args:
      path: HF directory, T5X `checkpoint_N` directory (or T5X MODEL_DIR), orbax step
        directory, or this project's MODEL_DIR (best marked step, else the latest; a
        damaged one is skipped with a warning for the newest intact step).
      dtype: compute dtype to set in the returned config (`float32` or `bfloat16`);
        None keeps the checkpoint's (float32 for HF and T5X).
      placement: `placement(config)` returns `place(name, array)`, which puts each flat
        parameter where it will live as it is read (e.g. `inference.engine.Placer`: sharded
        on a mesh); default: float32 host arrays.

    Raises:
      UserError: for a missing path, an unknown format, a damaged file, or parameters that
        do not fit or are not finite.
    """
    if dtype is not None and dtype not in configs.DTYPES:
        raise errors.UserError(f"dtype must be one of {list(configs.DTYPES)}, got {dtype!r}")
    kind, directory = detect_format(path)
    if kind == "hf":
        return load_hf(directory, dtype, placement)
    if kind == "t5x":
        return load_t5x(directory, dtype, placement)
    if directory != pathlib.Path(path):
        # A MODEL_DIR: falls back past damaged steps.
        return load_model_dir(path, dtype, placement)
    return load_orbax(directory, dtype, placement)

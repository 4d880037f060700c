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
parameter, the expected shape and the found one.
"""

from __future__ import annotations

import json
import os
import pathlib
import struct
from collections.abc import Mapping
from typing import Any

import flax
import ml_dtypes
import numpy as np

from seahorse_t5x import errors
from seahorse_t5x.model import configs, mt5
from seahorse_t5x.model.configs import MT5Config

Params = dict[str, Any]

# Orbax item names of this project's checkpoints (shared with the local runner).
PARAMS_ITEM = "params"
META_ITEM = "meta"
META_MODEL_CONFIG = "model_config"
# A MODEL_DIR marks its best step with this file (JSON `{"step": N, ...}`) in checkpoints/.
BEST_MARKER = "best.json"


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


def _to_tree(config: MT5Config, flat: Mapping[str, Any], source: str, dtype: str | None) -> Params:
    check_params(config, flat, source)
    # Parameters stay float32 whatever the checkpoint stored (bf16 in some exports); the
    # compute dtype is the config's.
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in flat.items()}
    del dtype
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
    config: MT5Config, state: Mapping[str, Any], source: str = "HF state dict"
) -> Params:
    """Converts an HF mT5 state dict (numpy or torch tensors) into the Flax parameter tree.

    Raises:
      UserError: on missing, unexpected or mis-shaped tensors.
    """
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
    return _to_tree(config, flat, source, None)


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
    """Reads a `.safetensors` file into numpy arrays, memory-mapped, bfloat16 included.

    (The safetensors numpy reader rejects bfloat16, in which some exports are stored.)
    """
    path = pathlib.Path(path)
    try:
        with open(path, "rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(header_len))
    except (OSError, struct.error, ValueError) as e:
        raise errors.UserError(f"cannot read safetensors file {path}: {e}") from None
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _SAFETENSORS_DTYPES:
            raise errors.UserError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        start, end = info["data_offsets"]
        dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
        tensors[name] = data[start:end].view(dtype).reshape(info["shape"])
    return tensors


def _read_hf_weights(directory: pathlib.Path) -> dict[str, Any]:
    single = directory / "model.safetensors"
    index = directory / "model.safetensors.index.json"
    torch_bin = directory / "pytorch_model.bin"
    if single.exists():
        return read_safetensors(single)
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
        state: dict[str, Any] = {}
        for shard in sorted(set(weight_map.values())):
            state.update(read_safetensors(directory / shard))
        return state
    if torch_bin.exists():
        try:
            import torch
        except ImportError:
            raise errors.UserError(
                f"{torch_bin} needs PyTorch to read; install `seahorse-t5x[hf]` or convert the "
                "checkpoint to safetensors"
            ) from None
        # weights_only: never unpickle arbitrary objects from a downloaded file.
        return torch.load(torch_bin, map_location="cpu", weights_only=True)
    raise errors.UserError(
        f"HF checkpoint {directory} has config.json but no model.safetensors, "
        "model.safetensors.index.json or pytorch_model.bin"
    )


def load_hf(directory: str | os.PathLike, dtype: str | None = None) -> tuple[MT5Config, Params]:
    """Loads an HF `MT5ForConditionalGeneration` directory."""
    directory = pathlib.Path(directory)
    hf_config = json.loads((directory / "config.json").read_text())
    config = configs.from_hf_config(hf_config, dtype=dtype)
    return config, from_hf_state_dict(config, _read_hf_weights(directory), str(directory))


def save_hf(directory: str | os.PathLike, config: MT5Config, params: Params) -> None:
    """Writes `config.json` + `model.safetensors` readable by HF `MT5ForConditionalGeneration`."""
    from safetensors.numpy import save_file

    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    hf_config = {
        "architectures": ["MT5ForConditionalGeneration"],
        "model_type": "mt5",
        "vocab_size": config.vocab_size,
        "d_model": config.emb_dim,
        "d_kv": config.head_dim,
        "d_ff": config.mlp_dim,
        "num_layers": config.num_encoder_layers,
        "num_decoder_layers": config.num_decoder_layers,
        "num_heads": config.num_heads,
        "relative_attention_num_buckets": config.relative_attention_num_buckets,
        "relative_attention_max_distance": config.relative_attention_max_distance,
        "dropout_rate": config.dropout_rate,
        "layer_norm_epsilon": config.layer_norm_epsilon,
        "feed_forward_proj": "gated-gelu",
        "tie_word_embeddings": False,
        "is_encoder_decoder": True,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "decoder_start_token_id": 0,
    }
    (directory / "config.json").write_text(json.dumps(hf_config, indent=2))
    save_file(to_hf_state_dict(params, config), str(directory / "model.safetensors"))

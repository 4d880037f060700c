"""HF transformers checkpoints of the Flax mT5 (`MT5ForConditionalGeneration`).

An HF directory holds `config.json` and `model.safetensors` (or a sharded
`model.safetensors.index.json`, or `pytorch_model.bin` read with
`torch.load(weights_only=True)`), as `google/mt5-*` and `google/seahorse-*` ship. A damaged
file (a truncated or malformed safetensors file, a `config.json` that is not JSON or holds
wrong-typed values, a `pytorch_model.bin` that is not a PyTorch checkpoint) is one
`UserError` naming the file and what is wrong.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import struct
from collections.abc import Mapping
from typing import Any

import flax
import ml_dtypes
import numpy as np

from seahorse_t5x import errors, fileio
from seahorse_t5x.model import checkpoint_params, configs, families, mt5
from seahorse_t5x.model.checkpoint_params import Params, Placement
from seahorse_t5x.model.configs import MT5Config


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
    return checkpoint_params.to_tree(config, flat, source, placement)


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
# The keys an mT5 config.json must set (the others have T5's defaults).
_HF_REQUIRED_KEYS = ("vocab_size", "d_model", "num_heads", "d_kv", "d_ff", "num_layers")
_HF_FLOAT_KEYS = ("dropout_rate", "layer_norm_epsilon")
_HF_STR_KEYS = ("feed_forward_proj", "model_type")
_HF_BOOL_KEYS = ("tie_word_embeddings",)


def read_hf_config(directory: str | os.PathLike) -> dict[str, Any]:
    """The `config.json` of an HF directory, checked to be an object with well-typed values.

    Raises:
      DataError: not JSON, not an object, a required key missing or a value of the wrong
        type (naming the file and the key).
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

    for key in _HF_REQUIRED_KEYS:
        if key not in hf_config:
            raise errors.DataError(
                str(path),
                None,
                key,
                f"missing; an mT5 config.json sets {', '.join(_HF_REQUIRED_KEYS)} (the "
                "snapshot may be incomplete: download it again)",
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
    try:
        family = families.of_hf_config(hf_config).name
        config = configs.from_hf_config(hf_config, dtype=dtype, family=family)
    except errors.UserError as e:  # a model this one does not implement: name the file
        raise errors.UserError(f"{directory / 'config.json'}: {e}") from None
    return config, from_hf_state_dict(
        config,
        _read_hf_weights(directory),
        str(directory),
        tied_logits=bool(hf_config.get("tie_word_embeddings", False)),
        placement=placement,
    )


def save_hf(directory: str | os.PathLike, config: MT5Config, params: Params) -> None:
    """Writes `config.json` + `model.safetensors` readable by HF `MT5ForConditionalGeneration`
    (`T5ForConditionalGeneration` for the T5.1.1 families: `families.ModelFamily.hf_model_type`)."""
    from safetensors.numpy import save_file

    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model_type = families.of_config(config).hf_model_type
    architecture = (
        "MT5ForConditionalGeneration" if model_type == "mt5" else "T5ForConditionalGeneration"
    )
    hf_config = {
        "architectures": [architecture],
        "model_type": model_type,
        **configs.to_hf_config(config),
        "tie_word_embeddings": False,
        "is_encoder_decoder": True,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "decoder_start_token_id": 0,
    }
    (directory / "config.json").write_text(json.dumps(hf_config, indent=2))
    save_file(to_hf_state_dict(params, config), str(directory / "model.safetensors"))

"""mT5 (T5.1.1 architecture) sizes: one frozen dataclass and the published dimensions.

The named sizes follow T5X's `examples/t5/mt5/*.gin`; `tiny` is for tests. `from_hf_config`
reads the `config.json` of an HF `MT5ForConditionalGeneration` (how `google/mt5-*`,
`google/seahorse-*` and `bigscience/mt0-*` ship) or of a T5.1.1-architecture
`T5ForConditionalGeneration` (`google/flan-t5-*`: same network, English vocabulary of 32,128
ids).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from seahorse_t5x import errors

MT5_VOCAB_SIZE = 250112
DTYPES: tuple[str, ...] = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class MT5Config:
    """Dimensions and numerics of an mT5 encoder-decoder.

    Attributes:
      vocab_size: rows of the token embedding and columns of the output projection.
      emb_dim: model (residual stream) width.
      num_heads: attention heads per layer.
      head_dim: width of each head (q/k/v width is num_heads * head_dim).
      mlp_dim: inner width of the gated-GELU MLP.
      num_encoder_layers: encoder depth.
      num_decoder_layers: decoder depth.
      dropout_rate: dropout on embeddings, attention weights, residual branches and MLP.
      dtype: the dtype of the matrix products' operands, `float32` or `bfloat16`
        (accumulated in float32; all else float32: `model/mt5.py`).
      relative_attention_num_buckets: relative position buckets per stack.
      relative_attention_max_distance: distance beyond which positions share a bucket.
      layer_norm_epsilon: epsilon of the RMS layer norm.
      family: the model family (`model/families.py`: `mt5`, `mt0`, `t5.1.1`, `flan-t5`):
        which module builds it, its vocabulary and published checkpoints.
    """

    vocab_size: int = MT5_VOCAB_SIZE
    emb_dim: int = 512
    num_heads: int = 6
    head_dim: int = 64
    mlp_dim: int = 1024
    num_encoder_layers: int = 8
    num_decoder_layers: int = 8
    dropout_rate: float = 0.1
    dtype: str = "float32"
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128
    layer_norm_epsilon: float = 1e-6
    family: str = "mt5"

    def __post_init__(self) -> None:
        if not isinstance(self.family, str) or not self.family:
            raise errors.UserError(f"model config family must be a name, got {self.family!r}")
        if self.dtype not in DTYPES:
            raise errors.UserError(
                f"model dtype {self.dtype!r} is not supported; use one of {list(DTYPES)} "
                "(float16 overflows in mT5)"
            )
        for name in (
            "vocab_size",
            "emb_dim",
            "num_heads",
            "head_dim",
            "mlp_dim",
            "num_encoder_layers",
            "num_decoder_layers",
            "relative_attention_num_buckets",
            "relative_attention_max_distance",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise errors.UserError(f"model config {name} must be a positive int, got {value!r}")
        if not 0.0 <= self.dropout_rate < 1.0:
            raise errors.UserError(f"dropout_rate must be in [0, 1), got {self.dropout_rate}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (the `meta.model_config` of saved checkpoints)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> MT5Config:
        """Inverse of `to_dict`.

        Raises:
          UserError: on unknown keys (a config from another model or a typo).
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise errors.UserError(
                f"unknown mT5 config keys {unknown}; expected a subset of {sorted(known)}"
            )
        return cls(**values)

    def replace(self, **overrides: Any) -> MT5Config:
        return dataclasses.replace(self, **overrides)


# Published mT5 dimensions (T5X examples/t5/mt5/*.gin).
_SIZES: dict[str, dict[str, Any]] = {
    # Tiny: fast tests. vocab_size covers the shipped demo vocabulary.
    "tiny": dict(
        vocab_size=3072,  # covers the shipped demo vocabulary (3,000 pieces)
        emb_dim=32,
        num_heads=4,
        head_dim=8,
        mlp_dim=64,
        num_encoder_layers=2,
        num_decoder_layers=2,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=20,
    ),
    "small": dict(
        emb_dim=512,
        num_heads=6,
        head_dim=64,
        mlp_dim=1024,
        num_encoder_layers=8,
        num_decoder_layers=8,
    ),
    "base": dict(
        emb_dim=768,
        num_heads=12,
        head_dim=64,
        mlp_dim=2048,
        num_encoder_layers=12,
        num_decoder_layers=12,
    ),
    "large": dict(
        emb_dim=1024,
        num_heads=16,
        head_dim=64,
        mlp_dim=2816,
        num_encoder_layers=24,
        num_decoder_layers=24,
    ),
    "xl": dict(
        emb_dim=2048,
        num_heads=32,
        head_dim=64,
        mlp_dim=5120,
        num_encoder_layers=24,
        num_decoder_layers=24,
    ),
    "xxl": dict(
        emb_dim=4096,
        num_heads=64,
        head_dim=64,
        mlp_dim=10240,
        num_encoder_layers=24,
        num_decoder_layers=24,
    ),
}
SIZE_NAMES: tuple[str, ...] = tuple(_SIZES)


def get_config(name: str, **overrides: Any) -> MT5Config:
    """The named size (`tiny`, `small`, `base`, `large`, `xl`, `xxl`) with overrides.

    Raises:
      UserError: for an unknown size name or override key.
    """
    if name not in _SIZES:
        raise errors.UserError(f"unknown model size {name!r}; choose one of {list(SIZE_NAMES)}")
    values = dict(_SIZES[name])
    values.update(overrides)
    return MT5Config.from_dict(values)


def from_hf_config(hf: dict[str, Any], dtype: str | None = None, family: str = "mt5") -> MT5Config:
    """Builds the config from an HF T5/MT5 `config.json` dict (`family`: its model family,
    `families.of_hf_config`).

    Raises:
      UserError: when the HF model is not a gated-GELU T5.1.1/mT5 with untied logits.
    """
    act = hf.get("feed_forward_proj", "gated-gelu")
    if act not in ("gated-gelu", "gated-gelu_new"):
        raise errors.UserError(
            f"HF config has feed_forward_proj={act!r}; only gated-gelu (T5.1.1/mT5) is supported"
        )
    # transformers >= 5 writes tie_word_embeddings=true for every mt5 config (its MT5 ties
    # lm_head to the embedding without T5's output rescaling). For model_type t5 (Flan-T5
    # and other T5.1.1 models) it writes tie_word_embeddings=true with
    # scale_decoder_outputs=false: the same unscaled tied logits. A tied t5 config without
    # that key (older transformers), or with it true, is the original T5 (rescaled tied
    # logits), which this model does not implement. Published Flan-T5 and mT0 configs say
    # tie_word_embeddings=false and ship their own lm_head.
    rescaled = hf.get("model_type") != "mt5" and hf.get("scale_decoder_outputs", True)
    if hf.get("tie_word_embeddings", False) and rescaled:
        raise errors.UserError(
            "HF config has tie_word_embeddings=true (original T5); only untied T5.1.1/mT5 "
            "models are supported"
        )
    try:
        return MT5Config(
            vocab_size=int(hf["vocab_size"]),
            emb_dim=int(hf["d_model"]),
            num_heads=int(hf["num_heads"]),
            head_dim=int(hf["d_kv"]),
            mlp_dim=int(hf["d_ff"]),
            num_encoder_layers=int(hf["num_layers"]),
            num_decoder_layers=int(hf.get("num_decoder_layers") or hf["num_layers"]),
            dropout_rate=float(hf.get("dropout_rate", 0.1)),
            dtype=dtype or "float32",
            relative_attention_num_buckets=int(hf.get("relative_attention_num_buckets", 32)),
            relative_attention_max_distance=int(hf.get("relative_attention_max_distance", 128)),
            layer_norm_epsilon=float(hf.get("layer_norm_epsilon", 1e-6)),
            family=family,
        )
    except KeyError as e:
        raise errors.UserError(f"HF config.json lacks the key {e.args[0]!r}") from None


def to_hf_config(config: MT5Config) -> dict[str, Any]:
    """The HF `MT5Config` keyword arguments of the same shapes (inverse of `from_hf_config`).

    Leaves `tie_word_embeddings` to the caller (transformers >= 5 ties mT5 by default).
    """
    return {
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
    }

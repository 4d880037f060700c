"""Model families: the one place that says what a family is and how to build one.

A family is a network with its named sizes, its vocabulary, how its HF `config.json` reads
and which published checkpoints belong to it. Every family here is the T5.1.1
encoder-decoder of `model/mt5.py` (gated-GELU, RMS norm, relative positions, untied
logits); they differ in vocabulary and in the checkpoints that ship them:

| family | vocabulary | HF `model_type` | published checkpoints |
|---|---|---|---|
| `mt5` | mT5's SentencePiece (`mc4.250000.100extra`, 250,112 ids) | `mt5` | `google/mt5-*`, `google/seahorse-*` |
| `mt0` | mT5's | `mt5` | `bigscience/mt0-*` (mT5 fine-tuned on xP3) |
| `t5.1.1` | T5's (`cc_all.32000.100extra`, 32,128 ids) | `t5` | `google/t5-v1_1-*` |
| `flan-t5` | T5's | `t5` | `google/flan-t5-*` (T5.1.1 fine-tuned on Flan) |

Callers ask the registry, never a config class or module directly: `get(name).config(size)`
for a named size, `build(config, ...)` for the Flax module (scoring, training and cached
decoding alike: `model/decoding.py`), `of_hf_config` for an HF checkpoint's family, and
`of_config` for the family a loaded config belongs to. A new family (another architecture)
registers a `ModelFamily` with its own config class and module.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from seahorse_t5x import errors
from seahorse_t5x.model import configs
from seahorse_t5x.model.configs import MT5Config

MT5_VOCAB_SIZE = configs.MT5_VOCAB_SIZE
# T5's English SentencePiece vocabulary with its 100 extra ids, padded to a multiple of 128
# as the published T5.1.1 and Flan-T5 checkpoints are.
T5_VOCAB_SIZE = 32128


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    """What callers need to size, build, load and tokenise one family.

    Attributes:
      name: the registry key and the `family` of its configs (`mt5`, `flan-t5`, ...).
      description: one line for `--help` and the docs.
      vocab_size: the embedding rows of its published checkpoints.
      vocabulary: the SentencePiece model the family was trained with (a name for the docs:
        the file itself comes with each checkpoint or through `formats/vocab.py`).
      hf_model_type: the `model_type` of its HF `config.json`.
      hub_names: a pattern of its published Hub names (`of_hub_name`).
      config_class: its config dataclass (`from_dict`, `replace`, `to_dict`).
      module: `module(config, **options)` -> the Flax module; options are the module's own
        (`scan_layers`, `head_major_attention`, ...).
    """

    name: str
    description: str
    vocab_size: int
    vocabulary: str
    hf_model_type: str
    hub_names: str
    config_class: type = MT5Config
    module: Callable[..., Any] | None = None

    def config(self, size: str, **overrides: Any) -> MT5Config:
        """The named size (`configs.SIZE_NAMES`) in this family's vocabulary.

        `tiny` (tests) keeps its own small vocabulary unless `vocab_size` is overridden.

        Raises:
          UserError: for an unknown size or override key.
        """
        values: dict[str, Any] = {"family": self.name}
        if size != "tiny":
            values["vocab_size"] = self.vocab_size
        values.update(overrides)
        return configs.get_config(size, **values)

    def build(self, config: MT5Config, **options: Any) -> Any:
        """The Flax module of `config` (`options`: the module's own flags)."""
        module = self.module if self.module is not None else _t5_module
        return module(config, **options)


def _t5_module(config: MT5Config, **options: Any) -> Any:
    # Imported on first use: the registry is read by layers that load no JAX.
    from seahorse_t5x.model import mt5

    return mt5.MT5(config, **options)


_REGISTRY: dict[str, ModelFamily] = {}


def register(family: ModelFamily) -> ModelFamily:
    """Adds a family; a second family of the same name is refused (one home per name).

    Raises:
      ValueError: when the name is taken.
    """
    if family.name in _REGISTRY:
        raise ValueError(f"model family {family.name!r} is already registered")
    _REGISTRY[family.name] = family
    return family


def names() -> tuple[str, ...]:
    """Registered family names, in registration order."""
    return tuple(_REGISTRY)


def get(name: str) -> ModelFamily:
    """The family of this name.

    Raises:
      UserError: for an unknown name, listing the known ones.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise errors.UserError(
            f"unknown model family {name!r}; choose one of {list(_REGISTRY)}"
        ) from None


def of_config(config: MT5Config) -> ModelFamily:
    """The family a config belongs to (its `family` field)."""
    return get(config.family)


def build(config: MT5Config, **options: Any) -> Any:
    """The Flax module of a config, built by its family: what the engine, the runner,
    `plan` and the decoder call instead of naming a module class."""
    return of_config(config).build(config, **options)


def of_hub_name(name: str) -> ModelFamily | None:
    """The family whose published checkpoints a Hub name matches, else None.

    >>> of_hub_name("google/flan-t5-base").name, of_hub_name("bigscience/mt0-xxl").name
    ('flan-t5', 'mt0')
    """
    text = str(name).split("@")[0]
    for family in _REGISTRY.values():
        if re.search(family.hub_names, text):
            return family
    return None


def of_hf_config(hf: Mapping[str, Any]) -> ModelFamily:
    """The family of an HF `config.json`: by the Hub name it records (`_name_or_path`)
    where that names a family of its `model_type`, else the base family of the type
    (`mt5` or `t5.1.1`).

    Raises:
      UserError: for a `model_type` no family reads.
    """
    model_type = hf.get("model_type", "mt5")
    named = of_hub_name(str(hf.get("_name_or_path", "")))
    if named is not None and named.hf_model_type == model_type:
        return named
    for family in _REGISTRY.values():
        if family.hf_model_type == model_type:
            return family
    raise errors.UserError(
        f"HF config has model_type={model_type!r}; the model families read "
        f"{sorted({f.hf_model_type for f in _REGISTRY.values()})}"
    )


register(
    ModelFamily(
        name="mt5",
        description="mT5 (T5.1.1 on mC4, 101 languages): google/mt5-*, google/seahorse-*",
        vocab_size=MT5_VOCAB_SIZE,
        vocabulary="mc4.250000.100extra",
        hf_model_type="mt5",
        hub_names=r"(^|/)(mt5|seahorse)[-_]",
    )
)
register(
    ModelFamily(
        name="mt0",
        description="mT0 (mT5 fine-tuned on xP3 prompts): bigscience/mt0-*",
        vocab_size=MT5_VOCAB_SIZE,
        vocabulary="mc4.250000.100extra",
        hf_model_type="mt5",
        hub_names=r"(^|/)mt0[-_]",
    )
)
register(
    ModelFamily(
        name="t5.1.1",
        description="T5.1.1 (English, C4): google/t5-v1_1-*",
        vocab_size=T5_VOCAB_SIZE,
        vocabulary="cc_all.32000.100extra",
        hf_model_type="t5",
        hub_names=r"(^|/)t5-v1_1[-_]",
    )
)
register(
    ModelFamily(
        name="flan-t5",
        description="Flan-T5 (T5.1.1 fine-tuned on the Flan collection): google/flan-t5-*",
        vocab_size=T5_VOCAB_SIZE,
        vocabulary="cc_all.32000.100extra",
        hf_model_type="t5",
        hub_names=r"(^|/)flan[-_]t5[-_]",
    )
)

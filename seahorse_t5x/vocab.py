"""The SentencePiece vocabulary, defined once for tasks, model, scorer and runner.

The default is mT5's `mc4.250000.100extra` model, spelled exactly as T5X's mT5 model gins
spell it (T5X refuses a task whose vocabulary differs from the model's). It can be pointed
at a local `.model` file with the `SEAHORSE_VOCAB` environment variable, or with gin
(`seahorse_t5x.vocab.vocabulary_path.path = "..."`) before the tasks are imported. The
demo and the tests use the small vocabulary shipped in `seahorse_t5x/assets/`.
"""

from __future__ import annotations

import functools
import os
import pathlib

import gin

from seahorse_t5x import constants, errors

MT5_VOCAB_PATH = "gs://t5-data/vocabs/mc4.250000.100extra/sentencepiece.model"
# The mc4.250000.100extra model already holds its 100 sentinel ids: T5X's mT5 gins use the
# vocabulary with extra_ids = 0.
MT5_EXTRA_IDS = 0

_ASSETS = pathlib.Path(__file__).parent / "assets"


def demo_vocab_path() -> str:
    """Path of the small SentencePiece model trained on the synthetic demo data."""
    return str(_ASSETS / "demo_spm.model")


@gin.configurable(module="seahorse_t5x.vocab")
def vocabulary_path(path: str | None = None) -> str:
    """The vocabulary's SentencePiece model path: gin binding, then env, then mT5's.

    The value `demo` names the shipped demo vocabulary.
    """
    chosen = path or os.environ.get(constants.ENV_VOCAB) or MT5_VOCAB_PATH
    return demo_vocab_path() if chosen == "demo" else chosen


@functools.cache
def _vocabulary(path: str, extra_ids: int):
    import seqio  # TensorFlow-heavy: imported only when a vocabulary is needed.

    if "://" not in path and not os.path.exists(path):
        raise errors.UserError(
            f"SentencePiece model not found: {path}. Set {constants.ENV_VOCAB} to a local "
            "`.model` file, or `demo` for the shipped demo vocabulary."
        )
    return seqio.SentencePieceVocabulary(path, extra_ids=extra_ids)


def get_vocabulary(path: str | None = None, extra_ids: int = MT5_EXTRA_IDS):
    """Returns the `seqio.SentencePieceVocabulary` for `path` (default: `vocabulary_path()`).

    The same object is returned for the same path, so tasks and models share it.
    """
    return _vocabulary(vocabulary_path(path), extra_ids)


def label_token_ids(vocab) -> tuple[int, int]:
    """Token ids of the targets `1` (yes) and `0` (no): the first decoder step's choices.

    Raises:
      UserError: if either target is not a single token of `vocab`, or both are the same.
    """
    ids = []
    for target in (constants.TARGET_YES, constants.TARGET_NO):
        pieces = list(vocab.encode(target))
        if len(pieces) != 1:
            raise errors.UserError(
                f"target {target!r} encodes to {len(pieces)} tokens {pieces} in "
                f"{getattr(vocab, 'sentencepiece_model_file', vocab)}; the score needs a "
                "single token for each of '1' and '0'"
            )
        ids.append(int(pieces[0]))
    if ids[0] == ids[1]:
        raise errors.UserError(f"targets '1' and '0' share token id {ids[0]}")
    return ids[0], ids[1]

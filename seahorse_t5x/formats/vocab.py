"""The SentencePiece vocabulary, defined once for tasks, model, scorer and runner.

The default is mT5's `mc4.250000.100extra` model, spelled exactly as T5X's mT5 model gins
spell it (T5X refuses a task whose vocabulary differs from the model's). It can be pointed
at a local `.model` file with the `SEAHORSE_VOCAB` environment variable, or with gin
(`seahorse_t5x.formats.vocab.vocabulary_path.path = "..."`). The demo and the tests use the small
vocabulary shipped in `seahorse_t5x/assets/`.

Every caller resolves the path in one order, `RESOLUTION_ORDER`, through
`resolve_vocabulary_path`. Tasks register at import time, often while T5X is still parsing
the gin file that imports them, so their features hold a `DeferredSentencePieceVocabulary`:
it resolves the path each time it is used, not when the task is registered. A binding or env
value set after `import seahorse_t5x.tasks` therefore still applies.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pathlib
from collections.abc import Iterator, Sequence

import gin

from seahorse_t5x import constants, errors, fileio

MT5_VOCAB_PATH = "gs://t5-data/vocabs/mc4.250000.100extra/sentencepiece.model"
# The mc4.250000.100extra model already holds its 100 sentinel ids: T5X's mT5 gins use the
# vocabulary with extra_ids = 0.
MT5_EXTRA_IDS = 0

_ASSETS = pathlib.Path(__file__).parents[1] / "assets"


def demo_vocab_path() -> str:
    """Path of the small SentencePiece model trained on the synthetic demo data."""
    return str(_ASSETS / "demo_spm.model")


# The demo explainer's vocabulary: the demo texts and their error analyses, whose English
# labels are whole pieces (scripts/build_demo_vocab.py --explanations).
DEMO_EXPLANATIONS = "demo_explanations"


def demo_explanations_vocab_path() -> str:
    """Path of the demo explainer's SentencePiece model (4,000 pieces)."""
    return str(_ASSETS / "demo_explanations_spm.model")


# Names that stand for a shipped vocabulary wherever a path is taken.
_SHIPPED = {"demo": demo_vocab_path, DEMO_EXPLANATIONS: demo_explanations_vocab_path}


# The one order in which every command, task and the trainer picks its vocabulary
# (`resolve_vocabulary_path`); docs/scoring.md writes it down for users.
RESOLUTION_ORDER = (
    "an explicit choice (a command's --vocab, an argument, `chosen_vocabulary`)",
    "the gin binding `seahorse_t5x.formats.vocab.vocabulary_path.path`",
    f"the {constants.ENV_VOCAB} environment variable",
    "the vocabulary a runner checkpoint records (`score`, `evaluate`)",
    "the `spiece.model` an HF checkpoint ships beside its weights (`score`, `evaluate`)",
    "mT5's mc4.250000.100extra model",
)

_GIN_PATH = "seahorse_t5x.formats.vocab.vocabulary_path.path"
_chosen: list[str] = []


@gin.configurable(module="seahorse_t5x.formats.vocab")
def vocabulary_path(path: str | None = None) -> str:
    """The vocabulary's SentencePiece model path (`resolve_vocabulary_path` without a
    checkpoint). The values `demo` and `demo_explanations` name the shipped demo vocabularies.
    """
    return resolve_vocabulary_path(path)


def file_sha256(path: str | os.PathLike) -> str | None:
    """The SHA-256 of a vocabulary file's bytes (None when it cannot be read): what a
    checkpoint records, so the same vocabulary at another path is recognised."""
    try:
        return fileio.file_sha256(path)
    except OSError:
        return None


def _gin_bound_path() -> str | None:
    """The gin binding of `vocabulary_path.path`, the innermost active scope's first (as
    calling the configurable would see it)."""
    scopes = gin.current_scope()
    for depth in range(len(scopes), -1, -1):
        prefix = "/".join(scopes[:depth])
        try:
            value = gin.query_parameter(f"{prefix}/{_GIN_PATH}" if prefix else _GIN_PATH)
        except ValueError:  # not bound in this scope
            continue
        return _evaluated(value)
    return None


def _evaluated(value: object) -> object:
    """A bound gin value as the configurable would receive it: `@fn()` called (T5X's
    `VOCAB_PATH = @vocab.demo_vocab_path()`), `@fn` as the function, anything else as is."""
    if isinstance(value, gin.config.ConfigurableReference):
        fn = value.scoped_configurable_fn
        return fn() if value.evaluate else fn
    return value


def checkpoint_sentencepiece(checkpoint: object) -> str | None:
    """The `spiece.model` an HF checkpoint directory ships beside its weights, if any."""
    if not isinstance(checkpoint, str | os.PathLike):
        return None
    candidate = os.path.join(os.fspath(checkpoint), "spiece.model")
    return candidate if os.path.isfile(candidate) else None


def resolve_vocabulary_path(
    explicit: str | os.PathLike | None = None,
    *,
    trained_with: str | None = None,
    checkpoint: object = None,
) -> str:
    """The vocabulary path, first found in `RESOLUTION_ORDER`.

    Args:
      explicit: the caller's choice (a flag or argument); `demo` names the demo vocabulary,
        `demo_explanations` the demo explainer's.
      trained_with: the vocabulary a runner checkpoint's meta records.
      checkpoint: a checkpoint path, for the `spiece.model` HF checkpoints ship.
    """
    chosen = (
        (None if explicit is None else os.fspath(explicit))
        or (_chosen[-1] if _chosen else None)
        or _gin_bound_path()
        or os.environ.get(constants.ENV_VOCAB)
        or trained_with
        or checkpoint_sentencepiece(checkpoint)
        or MT5_VOCAB_PATH
    )
    return _SHIPPED[chosen]() if chosen in _SHIPPED else chosen


@contextlib.contextmanager
def chosen_vocabulary(path: str) -> Iterator[None]:
    """Makes `path` the explicit choice inside the block, for code that resolves the
    vocabulary itself (the SeqIO tasks' deferred vocabulary, the evaluation loop)."""
    _chosen.append(path)
    try:
        yield
    finally:
        _chosen.pop()


def check_fits(vocabulary, model_vocab_size: int, fix: str) -> None:
    """Raises UserError when `vocabulary` has more ids than the model's embedding rows.

    Args:
      fix: what the user can do about it, appended to the message.
    """
    if vocabulary.vocab_size > model_vocab_size:
        raise errors.UserError(
            f"the vocabulary has {vocabulary.vocab_size} ids but the model only "
            f"{model_vocab_size}: {fix}"
        )


_HOW_TO_PASS = (
    f"set {constants.ENV_VOCAB} (or a command's --vocab) to a local SentencePiece `.model` "
    "file (for mT5: a copy of mc4.250000.100extra/sentencepiece.model), or `demo` for the "
    "shipped demo vocabulary"
)


@functools.cache
def _vocabulary(path: str, extra_ids: int):
    import seqio  # TensorFlow-heavy: imported only when a vocabulary is needed.

    check_model_file(path)
    vocabulary = seqio.SentencePieceVocabulary(path, extra_ids=extra_ids)
    if "://" in path:
        # Read it now: an unreachable remote file (offline, no credentials) is then one
        # clear error here instead of a TensorFlow traceback at first use.
        _load_remote(path, vocabulary._model_context)  # noqa: SLF001 - seqio's loader
    return vocabulary


def _load_remote(path: str, load):
    try:
        return load()
    except Exception as e:  # noqa: BLE001 - TensorFlow's file system raises many types
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        raise errors.UserError(
            f"cannot read the vocabulary {path} ({reason}); offline or without access, "
            f"{_HOW_TO_PASS}"
        ) from None


def check_model_file(path: str) -> None:
    """Raises UserError unless a local `path` is a readable SentencePiece model.

    Remote paths (`gs://...`) are checked when they are read.
    """
    if "://" in path:
        return
    try:
        stat = os.stat(path)
    except OSError as e:
        raise errors.UserError(
            f"SentencePiece model not found: {path} ({e.strerror}); {_HOW_TO_PASS}"
        ) from None
    _check_model_bytes(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _check_model_bytes(path: str, mtime_ns: int, size: int) -> None:
    """Parses the file once per (path, modification time, size)."""
    del mtime_ns, size  # cache key only
    if os.path.isdir(path):
        raise errors.UserError(f"vocabulary {path} is a folder; {_HOW_TO_PASS}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise errors.UserError(f"cannot read vocabulary {path}: {e.strerror}") from None
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(data)
    except Exception as e:  # noqa: BLE001 - sentencepiece raises RuntimeError/OSError variants
        reason = " ".join(str(e).split())[:120] or type(e).__name__
        raise errors.UserError(
            f"{path} is not a SentencePiece model ({reason}); {_HOW_TO_PASS}"
        ) from None
    if processor.GetPieceSize() == 0:
        raise errors.UserError(f"{path} is a SentencePiece model without pieces; {_HOW_TO_PASS}")


def get_vocabulary(
    path=None,
    extra_ids: int = MT5_EXTRA_IDS,
    *,
    trained_with: str | None = None,
    checkpoint: object = None,
):
    """Returns the `seqio.SentencePieceVocabulary` that `resolve_vocabulary_path` picks
    (`path` may also be a vocabulary object, returned as it is).

    The path is resolved now and the same object is returned for the same path. SeqIO tasks
    hold `deferred_vocabulary()` instead, which equals this object for the same path.
    """
    if path is not None and not isinstance(path, str | os.PathLike):
        return path
    resolved = resolve_vocabulary_path(path, trained_with=trained_with, checkpoint=checkpoint)
    return _vocabulary(resolved, extra_ids)


@functools.cache
def deferred_vocabulary_class() -> type:
    """The class `DeferredSentencePieceVocabulary`, built on first use.

    Built lazily because it subclasses `seqio.SentencePieceVocabulary`, and importing SeqIO
    (TensorFlow) here would slow down every CLI command that only needs `vocabulary_path()`.
    """
    from seqio import vocabularies as seqio_vocabularies

    class DeferredSentencePieceVocabulary(seqio_vocabularies.SentencePieceVocabulary):
        """A `seqio.SentencePieceVocabulary` whose model path is `vocabulary_path()` at use time.

        It compares equal to a plain `seqio.SentencePieceVocabulary(path, extra_ids)` for the
        path it currently resolves to (SeqIO compares the pickled state, T5X compares task and
        model vocabularies this way), and it pickles as that plain vocabulary.
        """

        def __init__(self, extra_ids: int = MT5_EXTRA_IDS) -> None:
            self._resolved: tuple[str, object] | None = None
            super().__init__(sentencepiece_model_file="", extra_ids=extra_ids)

        # The base class stores the path in `_sentencepiece_model_file`: a property makes every
        # read of it (model loading, `__str__`, equality) see the path chosen now.
        @property
        def _sentencepiece_model_file(self) -> str:
            return resolve_vocabulary_path()

        @_sentencepiece_model_file.setter
        def _sentencepiece_model_file(self, value: str) -> None:
            del value  # the path is never fixed; see the class docstring

        def _model_context(self):
            path = self._sentencepiece_model_file
            if self._resolved is None or self._resolved[0] != path:
                check_model_file(path)
                self._model = None
                self._resolved = (path, _load_remote(path, super()._model_context))
            return self._resolved[1]

        def __getstate__(self) -> dict:
            # Exactly the state of the plain vocabulary this one stands for.
            return seqio_vocabularies.SentencePieceVocabulary(
                self._sentencepiece_model_file,
                extra_ids=self._extra_ids,
                normalizer_spec_overrides=self._normalizer_spec_overrides,
                reverse_extra_ids=self._reverse_extra_ids,
                use_fast_tokenizer=self._use_fast_tokenizer,
            ).__getstate__()

        def __reduce__(self):
            state = self.__getstate__()
            return (
                seqio_vocabularies.SentencePieceVocabulary,
                (state["_sentencepiece_model_file"], state["_extra_ids"]),
            )

    return DeferredSentencePieceVocabulary


@functools.cache
def deferred_vocabulary(extra_ids: int = MT5_EXTRA_IDS):
    """The vocabulary SeqIO tasks hold: resolved through `vocabulary_path()` at each use.

    One object per `extra_ids`, so every task shares it; see `deferred_vocabulary_class`.
    """
    return deferred_vocabulary_class()(extra_ids)


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


# The answer words of the learnt metrics: their targets `1` (yes) and `0` (no).
DEFAULT_ANSWER_WORDS: tuple[str, str] = (constants.TARGET_YES, constants.TARGET_NO)


def parse_answer_words(text: str) -> tuple[str, str]:
    """`"Yes,No"` -> `("Yes", "No")`: the yes word, then the no word.

    Raises:
      UserError: unless the text names exactly two different, non-empty words.
    """
    words = tuple(w.strip() for w in text.split(","))
    if len(words) != 2 or not all(words):
        raise errors.UserError(
            f"answer words must be two comma-separated words, yes first (e.g. Yes,No), got {text!r}"
        )
    if words[0] == words[1]:
        raise errors.UserError(f"the two answer words are the same: {text!r}")
    return words[0], words[1]


def answer_token_ids(vocab, words: Sequence[str] = DEFAULT_ANSWER_WORDS) -> tuple[int, int]:
    """Token ids scored at the first decoder step for the answers `words` (yes, no).

    Each word's id is its first SentencePiece piece in `vocab`: what the decoder emits first
    when it writes the word as a target. For the default words `1` and `0` (single pieces in
    mT5's and the demo vocabulary) this equals `label_token_ids(vocab)`.

    Raises:
      UserError: if there are not two words, a word encodes to nothing or holds the
        unknown piece, or both words start with the same piece (the first step could not
        tell them apart).
    """
    if len(words) != 2:
        raise errors.UserError(f"expected two answer words (yes, no), got {list(words)!r}")
    where = getattr(vocab, "sentencepiece_model_file", vocab)
    unk_id = getattr(vocab, "unk_id", None)
    ids = []
    for word in words:
        pieces = [int(p) for p in vocab.encode(word)]
        if not pieces:
            raise errors.UserError(f"answer word {word!r} encodes to no token in {where}")
        if unk_id is not None and unk_id in pieces:
            raise errors.UserError(
                f"answer word {word!r} holds the unknown piece (id {unk_id}) in {where}: "
                "pick a word the vocabulary knows"
            )
        ids.append(pieces[0])
    if ids[0] == ids[1]:
        first = vocab.decode([ids[0]]) if hasattr(vocab, "decode") else ids[0]
        raise errors.UserError(
            f"answer words {words[0]!r} and {words[1]!r} share their first piece "
            f"(id {ids[0]}, {first!r}) in {where}: the first decoder step cannot tell them apart"
        )
    return ids[0], ids[1]

"""`Scorer`: P(yes) of one metric for (article, summary) pairs, from a checkpoint or params.

    scorer = Scorer.from_pretrained("google/seahorse-large", questions=[4])
    p_yes = scorer.score(articles, summaries)                  # shape (n,)
    table = score_questions("google/seahorse-large", articles, summaries)  # shape (n, 6)

`questions` means the same for every checkpoint (`inference.questions`): a family's members,
the questions a multi-question model's inputs name (`Scorer.question`), or a check against a
one-question model's own question.

A checkpoint is a path (any format `model.checkpoints.load_checkpoint` reads) or a Hub name
`ORG/NAME[@REVISION]`, fetched into the HF cache (`model.hub`). Scores come back in input
order as float64. The inputs are cut exactly like the SeqIO tasks (`inputs`); batches run
through the `engine` on a device mesh.
"""

from __future__ import annotations

import gc
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jax.sharding import Mesh

from seahorse_t5x import arguments, constants, errors
from seahorse_t5x.formats import input_format
from seahorse_t5x.formats import vocab as vocab_lib
from seahorse_t5x.inference import engine as engine_lib
from seahorse_t5x.inference import inputs, placement, precision, settings, windows
from seahorse_t5x.inference import questions as questions_lib
from seahorse_t5x.model import checkpoint_layout, checkpoints, partitioning
from seahorse_t5x.model.configs import MT5Config

log = logging.getLogger(__name__)

COMPUTE_DTYPES = precision.CHOICES
# Keys of the runner's checkpoint meta this module reads (written by runner/trainer.py).
META_TASK_FEATURE_LENGTHS = "task_feature_lengths"
META_VOCABULARY = checkpoint_layout.META_VOCABULARY
META_VOCABULARY_SHA256 = checkpoint_layout.META_VOCABULARY_SHA256


def input_length_for(meta: dict[str, Any], requested: int | None, checkpoint: Any) -> int:
    """The input length to score with: the one asked for (with a warning when the checkpoint
    was trained with another), else the checkpoint's training length, else 2048."""
    trained = (meta.get(META_TASK_FEATURE_LENGTHS) or {}).get("inputs")
    if requested is None:
        return int(trained or constants.DEFAULT_INPUT_LENGTH)
    if trained and int(trained) != requested:
        log.warning(
            "%s was trained with inputs of %d tokens; scoring with %d",
            checkpoint,
            int(trained),
            requested,
        )
    return requested


def warn_on_vocabulary_mismatch(meta: dict[str, Any], checkpoint: Any, vocab: Any = None) -> None:
    """Warns when the vocabulary in use is not the one the checkpoint records."""
    trained = meta.get(META_VOCABULARY)
    if not trained:
        return
    used = getattr(vocab, "sentencepiece_model_file", None) or vocab_lib.vocabulary_path()
    if os.path.abspath(str(used)) == os.path.abspath(str(trained)):
        return
    # The same file at another path (another checkout, a copy) is the same vocabulary.
    recorded = meta.get(META_VOCABULARY_SHA256) or vocab_lib.file_sha256(str(trained))
    if recorded is not None and recorded == vocab_lib.file_sha256(str(used)):
        return
    log.warning("%s was trained with the vocabulary %s; using %s", checkpoint, trained, used)


def _checked_question(question: int | str | None) -> int | str | None:
    """The question the inputs name: SEAHORSE's 1..6, a prompt's text, or None.

    Raises:
      UserError: anything else.
    """
    if question is not None and question not in constants.QUESTIONS:
        if not isinstance(question, str) or not question.strip():
            raise errors.UserError(
                f"question must be one of 1..6 or a prompt's text, got {question!r}"
            )
    return question


def _label_ids(
    vocab: Any, label_ids: tuple[int, int] | None, label_words: Sequence[str] | None
) -> tuple[int, int]:
    """The (yes, no) token ids: as given, else the answer words' first pieces, else the
    vocabulary's `1` and `0`."""
    if label_ids is None and label_words is not None:
        label_ids = vocab_lib.answer_token_ids(vocab, label_words)
    if label_ids is None:
        label_ids = vocab_lib.label_token_ids(vocab)
    return label_ids


class Scorer:
    """P(yes) of one mT5 metric for (article, summary) pairs.

    Args:
      checkpoint: a checkpoint path (any format `model.checkpoints.load_checkpoint` reads),
        a Hub name `ORG/NAME[@REVISION]`, or an already loaded `(MT5Config, params)` pair.
      vocab: a SentencePiece vocabulary, a `.model` path, `demo`, or None for the default
        (`vocab.resolve_vocabulary_path`, with this checkpoint).
      input_length: input length in tokens (EOS included). None: the length a runner
        checkpoint was trained with, else 2048 as in the paper.
      batch_size: rows per batch at `input_length`; shorter buckets get more rows
        (same number of tokens). `auto` (the default): 1 on CPUs, 8 on GPUs and TPUs
        (`settings.choose_batch_size`); the number chosen is `batch_size`.
      dtype: the dtype of the model's matrix products: `float32`, `bfloat16` (bfloat16
        operands, float32 accumulation) or `auto` (`precision.choose`: bfloat16 on GPUs and
        TPUs, float32 on CPUs); float16 overflows in mT5. The choice is `dtype_choice`.
      truncation: `keep_summary` (default: cut the article, keep the summary) or `right`.
      mesh: the device mesh, or its `(data, model)` shape (`settings.create_mesh`; the
        `mesh` setting's, as `ScoringSettings` parse it); default: every local device on
        `data`.
      param_dtype: dtype the weights are kept in on the devices (`bfloat16` halves them;
        `int8`: weight-only int8 projections with per-channel scales, `inference/quantize.py`).
      label_ids: token ids of the (yes, no) answers (default: those of `1` and `0`).
      label_words: the (yes, no) answer words instead of ids: each word's first piece in the
        vocabulary (e.g. `("Yes", "No")` for Flan-T5 or mT0).
      packing: pack several inputs into each row with segment ids instead of bucketing by
        length (`engine.Engine`).
      question: the question the inputs name when `encode`/`score` are given none (a
        multi-question model's): SEAHORSE's 1..6, or a prompt's text (a rating set's
        question's, as `from_pretrained` reads it from the meta); None: the inputs name no
        question.
      compilation_cache: keep compiled programs on disk (`settings.compilation_cache_dir`):
        True (the default folder), a folder, or False.

    Raises:
      UserError: for a bad checkpoint, vocabulary, dtype, truncation or length.
    """

    def __init__(
        self,
        checkpoint: str | os.PathLike | tuple[MT5Config, Any],
        vocab: Any = None,
        input_length: int | None = None,
        batch_size: int | str = settings.DEFAULT_BATCH_SIZE,
        dtype: str = precision.AUTO,
        truncation: str = input_format.TRUNCATION_KEEP_SUMMARY,
        mesh: Mesh | tuple[int, int] | None = None,
        param_dtype: str = "float32",
        label_ids: tuple[int, int] | None = None,
        packing: bool = False,
        label_words: Sequence[str] | None = None,
        question: int | str | None = None,
        compilation_cache: settings.CompilationCache = True,
        *,
        max_input_length: int | None = None,
    ) -> None:
        if max_input_length is not None:
            warnings.warn(
                "Scorer(max_input_length=...) is deprecated; use input_length=",
                FutureWarning,
                stacklevel=2,
            )
            input_length = max_input_length if input_length is None else input_length
        self.question = _checked_question(question)
        settings.check_batch_size(batch_size)
        if isinstance(mesh, tuple):
            mesh = settings.create_mesh(mesh)
        if mesh is None:  # every device: on a CPU, one per core if JAX has not started
            partitioning.one_cpu_device_per_core()
        settings.enable_compilation_cache(compilation_cache)
        platform = None if mesh is None else mesh.devices.flat[0].platform
        self.dtype_choice = precision.choose(dtype, platform)
        dtype = self.dtype_choice.dtype
        # `auto`: 1 row per batch at the input length on CPUs, 8 on GPUs and TPUs.
        self.batch_size = settings.choose_batch_size(batch_size, self.dtype_choice.platform)
        batch_size = self.batch_size
        input_format.check_truncation(truncation)
        if not isinstance(checkpoint, tuple):
            # A Hub name is fetched (or found in the HF cache) once, here; a path stays.
            checkpoint = checkpoints.resolve(checkpoint)
        self.checkpoint = checkpoint
        meta = {} if isinstance(checkpoint, tuple) else checkpoints.load_meta(checkpoint)
        input_length = input_length_for(meta, input_length, checkpoint)
        self.vocab = vocab_lib.get_vocabulary(
            vocab,
            trained_with=meta.get(META_VOCABULARY),
            checkpoint=None if isinstance(checkpoint, tuple) else checkpoint,
        )
        warn_on_vocabulary_mismatch(meta, checkpoint, self.vocab)
        self.meta = meta  # how a runner checkpoint was trained ({} for other formats)
        label_ids = _label_ids(self.vocab, label_ids, label_words)

        def placement(config: MT5Config) -> placement.Placer:
            # Called once the checkpoint's config is read, before any weight is.
            vocab_lib.check_fits(
                self.vocab, config.vocab_size, "use the vocabulary the model was trained with"
            )
            self.engine = engine_lib.build_engine(
                config, label_ids, mesh, input_length, batch_size, packing=packing
            )
            self._placer = self.engine.placer(param_dtype)
            return self._placer

        if isinstance(checkpoint, tuple):
            config, params = checkpoint
            config = config.replace(dtype=dtype)
            params = placement(config).place_tree(params)
        else:
            config, params = checkpoints.load_checkpoint(checkpoint, dtype, placement)
        # The scanned layout (one traced layer per stack). The per-layer arrays read from a
        # checkpoint are ours to free as they are stacked; a caller's tree is left whole.
        owned = not isinstance(checkpoint, tuple)
        self.params = self._placer.stack_layers(params, consume=owned)
        self.config = config
        self.yes_id, self.no_id = self.engine.label_ids
        self.input_length = input_length
        self.truncation = truncation
        self.checkpoint_meta = meta

    @property
    def max_input_length(self) -> int:
        """The older name of `input_length`."""
        return self.input_length

    def encode(
        self, articles: Sequence[str], summaries: Sequence[str], question: int | str | None = None
    ) -> inputs.EncodedInputs:
        """Token ids of the model inputs, truncated like the SeqIO tasks; `question`: the
        question they name (default: the scorer's `question`)."""
        return inputs.encode_pairs(
            self.vocab,
            articles,
            summaries,
            self.input_length,
            self.truncation,
            self._prompt(question),
        )

    def _prompt(self, question: int | str | None) -> int | str | None:
        return self.question if question is None else question

    def score_tokens(
        self,
        tokens: Sequence[np.ndarray],
        progress: Callable[[int], None] | None = None,
        bucketed: bool = True,
    ) -> np.ndarray:
        """P(yes) for encoded inputs (EOS included, within input_length), input order."""
        return self.engine.p_yes(self.params, tokens, progress, bucketed)

    def score(
        self,
        articles: Sequence[str],
        summaries: Sequence[str],
        question: int | str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """P(yes) = softmax over the answer logits at the first decoder step, input order.

        Raises:
          UserError: `articles` or `summaries` is a bare string or holds something that is
            not a string (`arguments.string_list`), or their lengths differ.
        """
        encoded = self.encode(articles, summaries, question)
        return self.score_tokens(encoded.tokens, progress)

    def encode_windows(
        self,
        articles: Sequence[str],
        summaries: Sequence[str],
        question: int | str | None = None,
        window_overlap: int = windows.DEFAULT_OVERLAP,
        markers: Sequence[str] | None = None,
    ) -> windows.WindowedInputs:
        """Token ids of every window of every article beside its whole summary; consecutive
        windows share `window_overlap` sentences."""
        question = None if markers is not None else self._prompt(question)
        return windows.encode_windows(
            self.vocab, articles, summaries, self.input_length, question, window_overlap, markers
        )

    def score_windows(
        self,
        articles: Sequence[str],
        summaries: Sequence[str],
        question: int | str | None = None,
        window_overlap: int = windows.DEFAULT_OVERLAP,
        window_aggregate: str = windows.AGGREGATE_MAX,
        markers: Sequence[str] | None = None,
    ) -> tuple[np.ndarray, windows.WindowedInputs]:
        """P(yes) of each row from its article's windows (`inference.windows`), input order.

        Args:
          window_overlap: sentences consecutive windows share.
          window_aggregate: a row's score from its windows' P(yes): `max` or `mean`.
          markers: each row's marker text instead of `question`'s (a task's own prompts).

        Returns:
          (scores [n], the windows scored: `.windows` per row, `.summary_truncated`).
        """
        windows.check_aggregate(window_aggregate)
        encoded = self.encode_windows(articles, summaries, question, window_overlap, markers)
        window_scores = self.score_tokens(encoded.tokens)
        scores = windows.aggregate_windows(
            window_scores, encoded.row_of_window, len(articles), window_aggregate
        )
        return scores, encoded

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | os.PathLike,
        questions: int | Sequence[int] | str | None = None,
        *,
        question: int | None = None,
        **kwargs: Any,
    ) -> Scorer:
        """A scorer for a released metric or a local checkpoint.

            scorer = Scorer.from_pretrained("google/seahorse-large", questions=[4])

        Args:
          name_or_path: a checkpoint path, a Hub name (`google/seahorse-large-q4`), or a
            family (`google/seahorse-large`, a folder of `q1`..`q6` checkpoints).
          questions: the one SEAHORSE question (1..6) to score (`inference.questions`): a
            family's member; for a multi-question model (trained on `seahorse_all`), the
            question its inputs name, so `score(articles, summaries)` prompts it; for a
            one-question model, a check against its own question.
          question: deprecated spelling of `questions`.
          **kwargs: the `Scorer` arguments (`vocab`, `input_length`, `batch_size`,
            `dtype`, `param_dtype`, `mesh`, `compilation_cache`, ...).

        Raises:
          UserError: a request the checkpoint cannot answer (a family or a multi-question
            model without a question, several questions, a question that is not a
            one-question model's own), or anything `Scorer` refuses.
        """
        wanted = arguments.parse_questions(
            arguments.questions_with_deprecated(questions, question, "Scorer.from_pretrained"),
            names=True,
        )
        if wanted is not None and len(wanted) > 1:
            raise errors.UserError(
                f"a Scorer scores one question, got questions {list(wanted)}: use "
                "score_questions() for one column per question"
            )
        if wanted is None and checkpoints.is_family(name_or_path):
            raise errors.UserError(
                f"{name_or_path} holds one metric per question: pass questions=[N] (1..6), "
                "or use score_questions() for all six"
            )
        (column,), _ = questions_lib.plan_columns(name_or_path, wanted)
        return Scorer(column.checkpoint, question=column.prompt, **kwargs)


def score_questions(
    name_or_path: str | os.PathLike,
    articles: Sequence[str],
    summaries: Sequence[str],
    questions: Sequence[int] | str | None = None,
    **kwargs: Any,
) -> np.ndarray:
    """P(yes) for each question asked: one column per question.

        p_yes = score_questions("google/seahorse-large", articles, summaries)  # (n, 6)

    For a family, each column is its member's (one model in memory at a time; the compiled
    programs of the first are reused by the others: same shapes). For a multi-question model
    (trained on `seahorse_all`), each column is the same model with the inputs naming that
    question.

    Args:
      name_or_path: a family (`google/seahorse-large` or `-xxl`, another Hub name whose
        members end in `-q1`..`-q6`, a folder of `q1`..`q6` checkpoints) or a multi-question
        model.
      articles, summaries: the pairs.
      questions: the questions, in column order (default: 1..6).
      **kwargs: the `Scorer` arguments.

    Returns:
      float64 array of shape (len(articles), len(questions)).

    Raises:
      UserError: `articles` or `summaries` is a bare string or holds something that is not
        a string (`arguments.string_list`), `name_or_path` is a one-question model, a
        question is not 1..6, or any `Scorer` error.
    """
    return _score_columns(name_or_path, articles, summaries, questions, kwargs)


def _score_columns(name_or_path, articles, summaries, wanted, kwargs) -> np.ndarray:
    # Checked before any model loads.
    articles = arguments.string_list(articles, "articles")
    summaries = arguments.string_list(summaries, "summaries")
    wanted = arguments.parse_questions(wanted, names=True) or constants.QUESTIONS
    columns, family = questions_lib.plan_columns(name_or_path, wanted)
    if not family and columns[0].prompt is None:
        raise errors.UserError(
            f"{name_or_path} is one model answering one question, not a family of "
            "per-question metrics or a multi-question model: use "
            "Scorer.from_pretrained(...).score(...)"
        )
    scores = []
    scorer, loaded = None, None
    for column in columns:
        if column.checkpoint != loaded:
            scorer = None  # one model in memory at a time
            gc.collect()
            scorer = Scorer(column.checkpoint, **kwargs)
            loaded = column.checkpoint
        scores.append(scorer.score(articles, summaries, question=column.prompt))
    return np.stack(scores, axis=1)

"""Length-bucketed batched scoring: P(yes) of an mT5 metric for (article, summary) pairs.

The input text and its truncation are exactly those of the SeqIO tasks
(`seahorse_t5x.preprocessors`): `premise: {article} hypothesis: {summary}` (or
`question: {prompt} premise: ...` for a multi-question model), cut inside the article at the
token level so the whole summary and EOS fit (`truncation="keep_summary"`), or cut from
the right as in the paper (`truncation="right"`).

Speed comes from three things:
- length bucketing: examples are sorted by length and batched so that each batch is padded
  to one of a few fixed lengths, with the number of rows chosen to keep tokens per batch
  about constant; jit compiles one program per bucket, not per batch;
- one decoder step: the encoder runs once and the decoder only for the start token;
- two logits: only the `1` and `0` columns of `logits_dense` are multiplied, not the
  250,112-wide vocabulary projection.
Scores come back in input order.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from seahorse_t5x import constants, errors
from seahorse_t5x import vocab as vocab_lib
from seahorse_t5x.model import checkpoints, mt5
from seahorse_t5x.model.configs import MT5Config

# Kept equal to seahorse_t5x.preprocessors (a test checks the token ids agree); repeated
# here so scoring does not need TensorFlow's dataset machinery.
PREMISE_MARKER = "premise:"
HYPOTHESIS_MARKER = "hypothesis:"
QUESTION_MARKER = "question:"
TRUNCATION_MODES: tuple[str, ...] = ("keep_summary", "right")
EOS_ID = 1
PAD_ID = 0
DECODER_START_ID = 0

# Bucket lengths: ~1.4x apart, so padding wastes at most ~30% (usually far less).
_BASE_BUCKETS = (32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
# Row cap for short buckets: past it, CPU/accelerator throughput no longer grows.
MAX_ROWS_PER_BATCH = 256


def bucket_lengths(max_input_length: int) -> tuple[int, ...]:
    """The padded lengths batches use: the base ladder below the maximum, then the maximum."""
    return tuple(b for b in _BASE_BUCKETS if b < max_input_length) + (max_input_length,)


def enable_compilation_cache(directory: str | os.PathLike) -> None:
    """Keeps compiled programs on disk, so a later run with the same shapes skips compiling.

    (JAX's persistent compilation cache; the environment variable
    `JAX_COMPILATION_CACHE_DIR` does the same.)
    """
    jax.config.update("jax_compilation_cache_dir", os.fspath(directory))
    # Every scoring program is worth keeping, however fast it compiled.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


@dataclasses.dataclass(frozen=True)
class EncodedInputs:
    """Token ids of each model input (EOS included) and what truncation cost.

    Attributes:
      tokens: one int32 array per example.
      article_tokens_dropped: article tokens cut from each input.
      summary_truncated: True where summary tokens (or their marker) were cut.
    """

    tokens: list[np.ndarray]
    article_tokens_dropped: np.ndarray
    summary_truncated: np.ndarray


def build_inputs(
    marker_tokens: Sequence[int],
    premise_tokens: Sequence[int],
    hypothesis_tokens: Sequence[int],
    max_input_length: int | None,
    truncation: str = "keep_summary",
) -> tuple[np.ndarray, int, bool]:
    """One model input from its three tokenized parts, as `preprocessors.truncate_inputs`
    followed by SeqIO's `append_eos_after_trim` build it.

    Returns:
      (token ids ending in EOS, article tokens dropped, whether the summary was cut).

    With max_input_length 7, marker [5], premise [7, 8, 9, 10], hypothesis [6, 11, 12]:
      keep_summary -> [5, 7, 8, 6, 11, 12, 1], 2 dropped, summary kept
      right        -> [5, 7, 8, 9, 10, 6, 1], 0 dropped, summary cut
    """
    marker, premise, hypothesis = (
        np.asarray(p, np.int32) for p in (marker_tokens, premise_tokens, hypothesis_tokens)
    )
    if max_input_length is None:
        joined = np.concatenate([marker, premise, hypothesis])
        return np.append(joined, EOS_ID).astype(np.int32), 0, False
    budget = max_input_length - 1  # one token for EOS
    if budget < 1:
        raise errors.UserError(f"max_input_length must be at least 2, got {max_input_length}")
    if truncation == "keep_summary":
        premise_budget = max(0, budget - len(marker) - len(hypothesis))
        kept = premise[:premise_budget]
        joined = np.concatenate([marker, kept, hypothesis])[:budget]
        dropped = len(premise) - len(kept)
        summary_cut = len(marker) + len(hypothesis) > budget
    elif truncation == "right":
        joined = np.concatenate([marker, premise, hypothesis])
        overflow = max(0, len(joined) - budget)
        hypothesis_cut = min(len(hypothesis), overflow)
        dropped = min(len(premise), overflow - hypothesis_cut)
        summary_cut = hypothesis_cut > 0
        joined = joined[:budget]
    else:
        raise errors.UserError(f"truncation must be one of {TRUNCATION_MODES}, got {truncation!r}")
    return np.append(joined, EOS_ID).astype(np.int32), int(dropped), bool(summary_cut)


def _encode_batch(vocab, texts: list[str]) -> list[list[int]]:
    tokenizer = getattr(vocab, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "encode"):
        # SentencePiece's batch API: one call, threads inside.
        return tokenizer.encode(texts, out_type=int)
    return [list(vocab.encode(t)) for t in texts]


def encode_pairs(
    vocab,
    articles: Sequence[str],
    summaries: Sequence[str],
    max_input_length: int | None,
    truncation: str = "keep_summary",
    question: int | None = None,
) -> EncodedInputs:
    """Tokenizes and truncates (article, summary) pairs like the SeqIO tasks.

    Args:
      vocab: a `seqio.SentencePieceVocabulary` (or anything with `encode`).
      articles, summaries: equal-length sequences of strings.
      max_input_length: the model's input length (EOS included); None: no cut.
      truncation: `keep_summary` or `right`.
      question: 1..6 to name the question in the input (multi-question models).

    Raises:
      UserError: for unequal lengths, an unknown question or truncation mode.
    """
    if len(articles) != len(summaries):
        raise errors.UserError(f"{len(articles)} articles but {len(summaries)} summaries")
    if truncation not in TRUNCATION_MODES:
        raise errors.UserError(f"truncation must be one of {TRUNCATION_MODES}, got {truncation!r}")
    if question is None:
        marker_text = PREMISE_MARKER
    elif question in constants.QUESTION_PROMPTS:
        marker_text = f"{QUESTION_MARKER} {constants.QUESTION_PROMPTS[question]} {PREMISE_MARKER}"
    else:
        raise errors.UserError(
            f"question must be one of {list(constants.QUESTIONS)}, got {question!r}"
        )
    (marker,) = _encode_batch(vocab, [marker_text])
    premises = _encode_batch(vocab, list(articles))
    hypotheses = _encode_batch(vocab, [f"{HYPOTHESIS_MARKER} {s}" for s in summaries])
    tokens, dropped, cut = [], [], []
    for premise, hypothesis in zip(premises, hypotheses, strict=True):
        ids, n_dropped, summary_cut = build_inputs(
            marker, premise, hypothesis, max_input_length, truncation
        )
        tokens.append(ids)
        dropped.append(n_dropped)
        cut.append(summary_cut)
    return EncodedInputs(tokens, np.asarray(dropped, np.int64), np.asarray(cut, bool))


@dataclasses.dataclass(frozen=True)
class Batch:
    """Indices of the examples in one padded batch; rows past `len(indices)` are padding."""

    indices: np.ndarray
    length: int
    rows: int


def plan_batches(
    lengths: Sequence[int], buckets: Sequence[int], tokens_per_batch: int
) -> list[Batch]:
    """Groups examples into padded batches of a few fixed shapes.

    Examples are taken longest first; each batch is padded to the bucket of its longest
    example and holds `tokens_per_batch // bucket` rows (at least 1, at most
    MAX_ROWS_PER_BATCH), so a bucket always has the same shape. Only the last batch may be
    smaller: its rows are rounded up to a power of two (one more shape at most, instead of
    up to a whole batch of empty rows).

    Raises:
      UserError: when an example is longer than the largest bucket.
    """
    order = np.argsort(-np.asarray(lengths, np.int64), kind="stable")
    batches = []
    start = 0
    while start < len(order):
        longest = int(lengths[order[start]])
        at = bisect.bisect_left(buckets, longest)
        if at == len(buckets):
            raise errors.UserError(
                f"input of {longest} tokens exceeds the largest bucket {buckets[-1]}"
            )
        length = int(buckets[at])
        rows = max(1, min(MAX_ROWS_PER_BATCH, tokens_per_batch // length))
        remaining = len(order) - start
        if remaining < rows:
            rows = min(rows, 1 << (remaining - 1).bit_length())
        indices = order[start : start + rows]
        batches.append(Batch(indices=indices, length=length, rows=rows))
        start += rows
    return batches


@functools.cache
def make_label_logits_fn(
    config: MT5Config, yes_id: int, no_id: int
) -> Callable[[Any, jax.Array], jax.Array]:
    """Jitted (params, tokens [b, L]) -> logits [b, 2] of (`1`, `0`) at the first decoder step.

    Cached per (config, ids), so scorers of the same model share compiled programs.
    """
    model = mt5.MT5(config)
    columns = jnp.asarray([yes_id, no_id], jnp.int32)
    dtype = jnp.dtype(config.dtype)

    def label_logits(params, tokens):
        variables = {"params": params}
        encoded = model.apply(variables, tokens, method=mt5.MT5.encode)
        start = jnp.full((tokens.shape[0], 1), DECODER_START_ID, jnp.int32)
        hidden = model.apply(
            variables, encoded, tokens, start, return_hidden=True, method=mt5.MT5.decode
        )
        # Only the two label columns of the output projection: [embed, 2].
        kernel = jnp.take(params["decoder"]["logits_dense"]["kernel"], columns, axis=1)
        return jnp.dot(hidden[:, 0].astype(dtype), kernel.astype(dtype)).astype(jnp.float32)

    return jax.jit(label_logits)


def p_yes_from_label_logits(logits: np.ndarray) -> np.ndarray:
    """softmax over (yes, no) -> P(yes), computed stably in float64."""
    logits = np.asarray(logits, np.float64)
    return 1.0 / (1.0 + np.exp(logits[:, 1] - logits[:, 0]))


def _checkpoint_sentencepiece(checkpoint: Any) -> str | None:
    """The `spiece.model` HF checkpoints ship beside their weights, if there is one."""
    if isinstance(checkpoint, tuple):
        return None
    candidate = os.path.join(os.fspath(checkpoint), "spiece.model")
    return candidate if os.path.isfile(candidate) else None


class Scorer:
    """P(yes) of one mT5 metric for (article, summary) pairs.

    Args:
      checkpoint: a checkpoint path (any format `model.checkpoints.load_checkpoint` reads)
        or an already loaded `(MT5Config, params)` pair.
      vocab: a SentencePiece vocabulary, a `.model` path, `demo`, or None for the default:
        `SEAHORSE_VOCAB`, else the checkpoint's own `spiece.model` (HF directories ship
        one), else mT5's.
      max_input_length: input length in tokens (EOS included), 2048 as in the paper.
      batch_size: rows per batch at `max_input_length`; shorter buckets get more rows
        (same number of tokens).
      dtype: compute dtype, `float32` or `bfloat16` (float16 overflows in mT5).
      truncation: `keep_summary` (default: cut the article, keep the summary) or `right`.

    Raises:
      UserError: for a bad checkpoint, vocabulary, dtype, truncation or length.
    """

    def __init__(
        self,
        checkpoint: str | os.PathLike | tuple[MT5Config, Any],
        vocab: Any = None,
        max_input_length: int = constants.DEFAULT_INPUT_LENGTH,
        batch_size: int = 1,
        dtype: str = "float32",
        truncation: str = "keep_summary",
    ) -> None:
        if dtype not in ("float32", "bfloat16"):
            raise errors.UserError(
                f"dtype must be float32 or bfloat16, got {dtype!r} (float16 overflows in mT5)"
            )
        if truncation not in TRUNCATION_MODES:
            raise errors.UserError(
                f"truncation must be one of {TRUNCATION_MODES}, got {truncation!r}"
            )
        if max_input_length < 2:
            raise errors.UserError(f"max_input_length must be at least 2, got {max_input_length}")
        if batch_size < 1:
            raise errors.UserError(f"batch_size must be at least 1, got {batch_size}")
        if isinstance(checkpoint, tuple):
            config, params = checkpoint
            config = config.replace(dtype=dtype)
        else:
            config, params = checkpoints.load_checkpoint(checkpoint, dtype=dtype)
        if vocab is None and not os.environ.get(constants.ENV_VOCAB):
            vocab = _checkpoint_sentencepiece(checkpoint)
        if vocab is None or isinstance(vocab, str | os.PathLike):
            vocab = vocab_lib.get_vocabulary(None if vocab is None else str(vocab))
        if vocab.vocab_size > config.vocab_size:
            raise errors.UserError(
                f"the vocabulary has {vocab.vocab_size} ids but the model only "
                f"{config.vocab_size}: use the vocabulary the model was trained with"
            )
        self.config = config
        self.vocab = vocab
        self.yes_id, self.no_id = vocab_lib.label_token_ids(vocab)
        self.max_input_length = max_input_length
        self.truncation = truncation
        self.tokens_per_batch = batch_size * max_input_length
        self.buckets = bucket_lengths(max_input_length)
        self.params = jax.device_put(mt5.unbox(params))
        self._label_logits = make_label_logits_fn(config, self.yes_id, self.no_id)

    def encode(
        self, articles: Sequence[str], summaries: Sequence[str], question: int | None = None
    ) -> EncodedInputs:
        """Token ids of the model inputs, truncated like the SeqIO tasks."""
        return encode_pairs(
            self.vocab, articles, summaries, self.max_input_length, self.truncation, question
        )

    def score_tokens(
        self,
        tokens: Sequence[np.ndarray],
        progress: Callable[[int], None] | None = None,
        bucketed: bool = True,
    ) -> np.ndarray:
        """P(yes) for encoded inputs, in input order.

        Args:
          tokens: one int array per example (EOS included), each within max_input_length.
          progress: called with the number of examples finished after each batch.
          bucketed: False pads every batch to max_input_length (for comparison only).
        """
        if not len(tokens):
            return np.zeros((0,), np.float32)
        lengths = [len(t) for t in tokens]
        buckets = self.buckets if bucketed else (self.max_input_length,)
        logits = np.zeros((len(tokens), 2), np.float32)
        for batch in plan_batches(lengths, buckets, self.tokens_per_batch):
            array = np.full((batch.rows, batch.length), PAD_ID, np.int32)
            for row, index in enumerate(batch.indices):
                array[row, : lengths[index]] = tokens[index]
            out = np.asarray(self._label_logits(self.params, array))
            logits[batch.indices] = out[: len(batch.indices)]
            if progress is not None:
                progress(len(batch.indices))
        return p_yes_from_label_logits(logits).astype(np.float32)

    def score(
        self,
        articles: Sequence[str],
        summaries: Sequence[str],
        question: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """P(yes) = softmax over the `1`/`0` logits at the first decoder step, input order."""
        encoded = self.encode(articles, summaries, question)
        return self.score_tokens(encoded.tokens, progress)

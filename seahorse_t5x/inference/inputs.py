"""Model inputs for scoring: token ids in numpy, cut exactly like the SeqIO tasks.

The text is `premise: {article} hypothesis: {summary}` (or `question: {prompt} premise: ...`
for a multi-question model), cut inside the article at the token level so the whole summary
and EOS fit (`truncation="keep_summary"`), or cut from the right as in the paper
(`truncation="right"`). The markers and modes are `seahorse_t5x.constants`', shared with
`seahorse_t5x.preprocessors`; a test checks both give the same ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from seahorse_t5x import constants, errors


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


def check_input_length(value: int, name: str) -> int:
    """Returns `value` when it can be an input length, else raises UserError.

    The one check of an input length (EOS included), wherever a user sets one:
    `--input_length` of `score` and `evaluate`, `TASK_FEATURE_LENGTHS['inputs']` of a
    training run, SeqIO's `sequence_length['inputs']` and `build_inputs` here.

    Args:
      value: the length in tokens.
      name: how the user set it (a flag or field name), for the message.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise errors.UserError(f"{name} must be an integer, got {value!r}")
    if value < constants.MIN_INPUT_LENGTH:
        raise errors.UserError(
            f"{name} must be at least {constants.MIN_INPUT_LENGTH} (one token and the EOS), "
            f"got {value}"
        )
    return int(value)


def check_truncation(truncation: str) -> None:
    if truncation not in constants.TRUNCATION_MODES:
        raise errors.UserError(
            f"truncation must be one of {constants.TRUNCATION_MODES}, got {truncation!r}"
        )


def build_inputs(
    marker_tokens: Sequence[int],
    premise_tokens: Sequence[int],
    hypothesis_tokens: Sequence[int],
    max_input_length: int | None,
    truncation: str = constants.TRUNCATION_KEEP_SUMMARY,
) -> tuple[np.ndarray, int, bool]:
    """One model input from its three tokenized parts, as `preprocessors.truncate_inputs`
    followed by SeqIO's `append_eos_after_trim` build it.

    Returns:
      (token ids ending in EOS, article tokens dropped, whether the summary was cut).

    With max_input_length 7, marker [5], premise [7, 8, 9, 10], hypothesis [6, 11, 12]:
      keep_summary -> [5, 7, 8, 6, 11, 12, 1], 2 dropped, summary kept
      right        -> [5, 7, 8, 9, 10, 6, 1], 0 dropped, summary cut
    """
    # Python lists until the end: one array per input (this runs once per row of a corpus).
    marker, premise, hypothesis = (
        list(p) for p in (marker_tokens, premise_tokens, hypothesis_tokens)
    )
    eos = constants.EOS_ID
    if max_input_length is None:
        return np.array(marker + premise + hypothesis + [eos], np.int32), 0, False
    budget = check_input_length(max_input_length, "max_input_length") - 1  # one for EOS
    if truncation == constants.TRUNCATION_KEEP_SUMMARY:
        premise_budget = max(0, budget - len(marker) - len(hypothesis))
        kept = premise[:premise_budget]
        joined = (marker + kept + hypothesis)[:budget]
        dropped = len(premise) - len(kept)
        summary_cut = len(marker) + len(hypothesis) > budget
    elif truncation == constants.TRUNCATION_RIGHT:
        joined = marker + premise + hypothesis
        overflow = max(0, len(joined) - budget)
        hypothesis_cut = min(len(hypothesis), overflow)
        dropped = min(len(premise), overflow - hypothesis_cut)
        summary_cut = hypothesis_cut > 0
        joined = joined[:budget]
    else:
        check_truncation(truncation)
    return np.array(joined + [eos], np.int32), int(dropped), bool(summary_cut)


def encode_texts(vocab, texts: list[str]) -> list[list[int]]:
    """Token ids of each text; SentencePiece's batch API when the vocabulary has one."""
    tokenizer = getattr(vocab, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "encode"):
        return tokenizer.encode(texts, out_type=int)
    return [list(vocab.encode(t)) for t in texts]


def marker_text(question: int | None) -> str:
    """`premise:`, or `question: {prompt} premise:` for question 1..6.

    Raises:
      UserError: for an unknown question.
    """
    if question is None:
        return constants.PREMISE_MARKER
    if question in constants.QUESTION_PROMPTS:
        prompt = constants.QUESTION_PROMPTS[question]
        return f"{constants.QUESTION_MARKER} {prompt} {constants.PREMISE_MARKER}"
    raise errors.UserError(f"question must be one of {list(constants.QUESTIONS)}, got {question!r}")


def min_input_length(vocab, summaries: Sequence[str], question: int | None = None) -> int:
    """The shortest input length that keeps the marker, the whole of each summary and EOS."""
    (marker,) = encode_texts(vocab, [marker_text(question)])
    hypotheses = encode_texts(vocab, [f"{constants.HYPOTHESIS_MARKER} {s}" for s in summaries])
    return len(marker) + max((len(h) for h in hypotheses), default=0) + 1


def check_room_for_summary(
    vocab, input_length: int, name: str, question: int | None = None
) -> None:
    """Raises UserError when `input_length` cannot hold the markers, a summary and EOS.

    Args:
      name: how the user set the length (a flag), for the message.
    """
    smallest = min_input_length(vocab, ["x"], question)
    if input_length < smallest:
        raise errors.UserError(
            f"{name} {input_length} leaves no room for the summary: "
            f"the markers and EOS alone take {smallest - 1} tokens"
        )


def encode_pairs(
    vocab,
    articles: Sequence[str],
    summaries: Sequence[str],
    max_input_length: int | None,
    truncation: str = constants.TRUNCATION_KEEP_SUMMARY,
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
    check_truncation(truncation)
    (marker,) = encode_texts(vocab, [marker_text(question)])
    premises = encode_texts(vocab, list(articles))
    hypotheses = encode_texts(vocab, [f"{constants.HYPOTHESIS_MARKER} {s}" for s in summaries])
    tokens, dropped, cut = [], [], []
    for premise, hypothesis in zip(premises, hypotheses, strict=True):
        ids, n_dropped, summary_cut = build_inputs(
            marker, premise, hypothesis, max_input_length, truncation
        )
        tokens.append(ids)
        dropped.append(n_dropped)
        cut.append(summary_cut)
    return EncodedInputs(tokens, np.asarray(dropped, np.int64), np.asarray(cut, bool))

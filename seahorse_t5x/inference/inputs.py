"""Model inputs for scoring: token ids in numpy, cut exactly like the SeqIO tasks.

The text, its length budget and its truncation modes are `seahorse_t5x.formats.input_format`'s, as
for `seahorse_t5x.tasks.preprocessors`: `premise: {article} hypothesis: {summary}` (or
`question: {prompt} premise: ...` for a multi-question model), cut inside the article so the
whole summary and EOS fit (`keep_summary`), or from the right as in the paper (`right`).
A test checks both give the same ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from seahorse_t5x import arguments, constants, errors
from seahorse_t5x.formats import input_format


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
    truncation: str = input_format.TRUNCATION_KEEP_SUMMARY,
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
    budget = input_format.content_budget(max_input_length, "max_input_length")
    if budget is None:
        return np.array(marker + premise + hypothesis + [constants.EOS_ID], np.int32), 0, False
    cut = input_format.plan_cut(len(marker), len(premise), len(hypothesis), budget, truncation)
    joined = (marker + premise[: cut.premise_kept] + hypothesis)[:budget]
    ids = np.array(joined + [constants.EOS_ID], np.int32)
    return ids, int(cut.article_tokens_dropped), bool(cut.summary_truncated)


def encode_texts(vocab, texts: list[str]) -> list[list[int]]:
    """Token ids of each text; SentencePiece's batch API when the vocabulary has one."""
    tokenizer = getattr(vocab, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "encode"):
        return tokenizer.encode(texts, out_type=int)
    return [list(vocab.encode(t)) for t in texts]


def marker_text(question: int | str | None) -> str:
    """`premise:`, or `question: {prompt} premise:` for SEAHORSE's question 1..6 (its
    prompt), or for a string (the prompt itself: a rating set's question's, as its
    multi-question tasks name it).

    Raises:
      UserError: for an unknown question number or an empty prompt.
    """
    if question is None:
        return input_format.marker_text()
    if isinstance(question, str) and question.strip():
        return input_format.marker_text(question)
    if question in constants.QUESTION_PROMPTS:
        return input_format.marker_text(constants.QUESTION_PROMPTS[question])
    raise errors.UserError(
        f"question must be one of {list(constants.QUESTIONS)} or a prompt, got {question!r}"
    )


def min_input_length(vocab, summaries: Sequence[str], question: int | str | None = None) -> int:
    """The shortest input length that keeps the marker, the whole of each summary and EOS."""
    (marker,) = encode_texts(vocab, [marker_text(question)])
    hypotheses = encode_texts(vocab, [input_format.hypothesis_text(s) for s in summaries])
    return len(marker) + max((len(h) for h in hypotheses), default=0) + 1


def check_room_for_summary(
    vocab, input_length: int, name: str, question: int | str | None = None
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
    truncation: str = input_format.TRUNCATION_KEEP_SUMMARY,
    question: int | str | None = None,
) -> EncodedInputs:
    """Tokenizes and truncates (article, summary) pairs like the SeqIO tasks.

    Args:
      vocab: a `seqio.SentencePieceVocabulary` (or anything with `encode`).
      articles, summaries: equal-length sequences of strings.
      max_input_length: the model's input length (EOS included); None: no cut.
      truncation: `keep_summary` or `right`.
      question: 1..6 (or a prompt's text) to name the question in the input
        (multi-question models).

    Raises:
      UserError: for texts that are not a sequence of strings (`arguments.string_list`),
        unequal lengths, an unknown question or truncation mode.
    """
    articles = arguments.string_list(articles, "articles")
    summaries = arguments.string_list(summaries, "summaries")
    if len(articles) != len(summaries):
        raise errors.UserError(f"{len(articles)} articles but {len(summaries)} summaries")
    input_format.check_truncation(truncation)
    (marker,) = encode_texts(vocab, [marker_text(question)])
    premises = encode_texts(vocab, articles)
    hypotheses = encode_texts(vocab, [input_format.hypothesis_text(s) for s in summaries])
    tokens, dropped, cut = [], [], []
    for premise, hypothesis in zip(premises, hypotheses, strict=True):
        ids, n_dropped, summary_cut = build_inputs(
            marker, premise, hypothesis, max_input_length, truncation
        )
        tokens.append(ids)
        dropped.append(n_dropped)
        cut.append(summary_cut)
    return EncodedInputs(tokens, np.asarray(dropped, np.int64), np.asarray(cut, bool))

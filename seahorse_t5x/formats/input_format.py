"""The model input of every premise/hypothesis task: its text, its length and how it is cut.

    premise: {premise} hypothesis: {hypothesis}
    question: {prompt} premise: {premise} hypothesis: {hypothesis}     (multi-question models)

The text is three parts joined by spaces: the marker (`premise:`, or `question: {prompt}
premise:`), the premise (an article, an NLI premise, ...) and `hypothesis: {hypothesis}`.
Each part starts a word and SentencePiece never merges across a space, so the tokens of the
parts, joined, are the tokens of the whole text: an input can be cut inside one part.

An input of `length` tokens ends with EOS, so its parts get `length - 1` (`content_budget`).
What does not fit is cut one of two ways (`TRUNCATION_MODES`):

  keep_summary   inside the premise, so the marker, the whole hypothesis and EOS fit (default)
  right          from the end of the joined parts, as the SEAHORSE paper did

`plan_cut` is the arithmetic of both on the parts' lengths. The SeqIO preprocessors
(`seahorse_t5x.tasks.preprocessors`, TensorFlow) and the scoring inputs
(`seahorse_t5x.inference.inputs`, numpy) apply it to their token ids; a test holds the two
equal. This module imports neither.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from seahorse_t5x import errors

PREMISE_MARKER = "premise:"
HYPOTHESIS_MARKER = "hypothesis:"
QUESTION_MARKER = "question:"
# Between the parts (and between a marker and its text).
SEPARATOR = " "

TRUNCATION_KEEP_SUMMARY = "keep_summary"
TRUNCATION_RIGHT = "right"
TRUNCATION_MODES: tuple[str, ...] = (TRUNCATION_KEEP_SUMMARY, TRUNCATION_RIGHT)

# The shortest input a model can take: one token of content and the EOS.
MIN_INPUT_LENGTH = 2


# ----------------------------------------------------------------------------- text


def marker_text(question_prompt: str | None = None) -> str:
    """The first part: `premise:`, or `question: {prompt} premise:` for multi-question inputs.

    >>> marker_text("concise")
    'question: concise premise:'
    """
    if question_prompt is None:
        return PREMISE_MARKER
    return SEPARATOR.join([QUESTION_MARKER, question_prompt, PREMISE_MARKER])


def hypothesis_text(hypothesis: str) -> str:
    """The last part: `hypothesis: {hypothesis}`."""
    return SEPARATOR.join([HYPOTHESIS_MARKER, hypothesis])


def input_text(premise: str, hypothesis: str, question_prompt: str | None = None) -> str:
    """The model input as plain text (what a task's `inputs_pretokenized` holds).

    >>> input_text("A cat sat.", "A cat.")
    'premise: A cat sat. hypothesis: A cat.'
    """
    return SEPARATOR.join([marker_text(question_prompt), premise, hypothesis_text(hypothesis)])


# ----------------------------------------------------------------------------- length


def check_truncation(truncation: object) -> str:
    """Returns `truncation` when it is one of `TRUNCATION_MODES`.

    Raises:
      UserError: for any other value.
    """
    if truncation not in TRUNCATION_MODES:
        raise errors.UserError(
            f"truncation must be one of {', '.join(TRUNCATION_MODES)}, got {truncation!r}"
        )
    return truncation


def check_input_length(value: object, name: str) -> int:
    """Returns `value` when it can be an input length (EOS included), else raises UserError.

    The one check of an input length, wherever a user sets one: `--input_length` of `score`
    and `evaluate`, `TASK_FEATURE_LENGTHS['inputs']` of a training run, SeqIO's
    `sequence_length['inputs']`, the scoring engine's `max_input_length`.

    Args:
      value: the length in tokens.
      name: how the user set it (a flag or field name), for the message.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise errors.UserError(f"{name} must be an integer, got {value!r}")
    if value < MIN_INPUT_LENGTH:
        raise errors.UserError(
            f"{name} must be at least {MIN_INPUT_LENGTH} (one token and the EOS), got {value}"
        )
    return int(value)


def content_budget(input_length: int | None, name: str) -> int | None:
    """Tokens the parts may take in an input of `input_length` (one is the EOS's); None when
    there is no length (nothing is cut).

    Raises:
      UserError: for a length `check_input_length` refuses (named `name`).
    """
    if input_length is None:
        return None
    return check_input_length(input_length, name) - 1


def sequence_budget(sequence_length: Mapping[str, int] | None) -> int | None:
    """`content_budget` of SeqIO's `sequence_length["inputs"]` (None or absent: no cut)."""
    length = (sequence_length or {}).get("inputs")
    return content_budget(None if length is None else int(length), "sequence_length['inputs']")


@dataclasses.dataclass(frozen=True)
class Cut:
    """What fits of one input: `(marker + premise[:premise_kept] + hypothesis)[:budget]`.

    The fields are Python ints and a bool, or scalar tensors when `plan_cut` is given tensor
    lengths and TensorFlow's `maximum`/`minimum`.

    Attributes:
      premise_kept: premise tokens kept (a prefix of the premise).
      article_tokens_dropped: premise tokens cut.
      summary_truncated: whether tokens of the hypothesis (or of its marker) were cut.
    """

    premise_kept: Any
    article_tokens_dropped: Any
    summary_truncated: Any


def plan_cut(
    marker_length: Any,
    premise_length: Any,
    hypothesis_length: Any,
    budget: int,
    truncation: str,
    *,
    maximum: Callable[[Any, Any], Any] = max,
    minimum: Callable[[Any, Any], Any] = min,
) -> Cut:
    """How an input of three parts is cut to `budget` tokens (`content_budget`).

    keep_summary: the premise gets the tokens the marker and the hypothesis leave; only when
    those two alone exceed the budget is the end cut (and the summary truncated). right: the
    joined parts are cut at the end, the hypothesis first, then the premise.

    With budget 6, marker [5], premise [7, 8, 9, 10], hypothesis [6, 11, 12]:
      keep_summary -> [5, 7, 8, 6, 11, 12]: 2 premise tokens kept, 2 dropped, summary whole
      right        -> [5, 7, 8, 9, 10, 6]: 4 kept, 0 dropped, summary truncated

    Args:
      marker_length, premise_length, hypothesis_length: the parts' token counts (ints, or
        scalar tensors with `maximum=tf.maximum, minimum=tf.minimum`).
      truncation: one of `TRUNCATION_MODES`.

    Raises:
      UserError: for an unknown `truncation`.
    """
    if check_truncation(truncation) == TRUNCATION_KEEP_SUMMARY:
        room = maximum(0, budget - marker_length - hypothesis_length)
        kept = minimum(premise_length, room)
        summary_cut = marker_length + hypothesis_length > budget
    else:
        overflow = maximum(0, marker_length + premise_length + hypothesis_length - budget)
        hypothesis_cut = minimum(hypothesis_length, overflow)
        kept = premise_length - minimum(premise_length, overflow - hypothesis_cut)
        summary_cut = hypothesis_cut > 0
    return Cut(kept, premise_length - kept, summary_cut)

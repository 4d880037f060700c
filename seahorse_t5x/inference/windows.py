"""Long articles scored in windows: every part of the article beside the whole summary.

A model input holds `input_length` tokens; an article longer than what the markers and the
summary leave is cut (`input_format`'s `keep_summary`), and a summary whose support sits past
the cut is scored without it. In window mode the article is split at sentence boundaries
into windows that each fit beside the whole summary, consecutive windows sharing
`overlap` sentences; every window is scored as an input of its own (through the same engine
batches), and a row's score is the largest (`max`, as MiniCheck and AlignScore aggregate
support) or the mean of its windows' P(yes).

    article: S1 S2 S3 S4 S5   (each sentence 40 tokens; 100 tokens of room beside the summary)
    overlap 1  -> windows [S1 S2] [S2 S3] [S3 S4] [S4 S5]
    overlap 0  -> windows [S1 S2] [S3 S4] [S5]

An article that fits is one window, the same input as `truncate` gives (the same score). A
sentence longer than a window is cut at the token level into window-sized pieces. Sentences
end at `.`, `!`, `?` (and their CJK and Devanagari forms) followed by white space, and at line
breaks: the split falls on white space, where SentencePiece starts a new piece, so the
windows' tokens are the tokens of their text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from seahorse_t5x import arguments, errors
from seahorse_t5x.formats import input_format
from seahorse_t5x.inference import inputs

LONG_INPUTS_TRUNCATE = "truncate"
LONG_INPUTS_WINDOWS = "windows"
LONG_INPUTS_MODES: tuple[str, ...] = (LONG_INPUTS_TRUNCATE, LONG_INPUTS_WINDOWS)
AGGREGATE_MAX = "max"
AGGREGATE_MEAN = "mean"
AGGREGATES: tuple[str, ...] = (AGGREGATE_MAX, AGGREGATE_MEAN)
DEFAULT_OVERLAP = 1

# End punctuation followed by white space, or a line break: the split keeps the punctuation
# with its sentence and drops the white space (SentencePiece marks word starts, not spaces).
_SENTENCE_END = re.compile(r"(?<=[.!?。！？।])\s+|\s*\n\s*")


def check_long_inputs(mode: object) -> str:
    """Returns `mode` when it is one of `LONG_INPUTS_MODES`, else raises UserError."""
    if mode not in LONG_INPUTS_MODES:
        raise errors.UserError(
            f"long_inputs must be one of {', '.join(LONG_INPUTS_MODES)}, got {mode!r}"
        )
    return str(mode)


def check_aggregate(aggregate: object) -> str:
    """Returns `aggregate` when it is one of `AGGREGATES`, else raises UserError."""
    if aggregate not in AGGREGATES:
        raise errors.UserError(
            f"window_aggregate must be one of {', '.join(AGGREGATES)}, got {aggregate!r}"
        )
    return str(aggregate)


def check_overlap(overlap: object) -> int:
    """Returns `overlap` (sentences shared by consecutive windows) when it is an int >= 0."""
    if isinstance(overlap, bool) or not isinstance(overlap, int | np.integer) or overlap < 0:
        raise errors.UserError(f"window_overlap must be an integer >= 0, got {overlap!r}")
    return int(overlap)


def split_sentences(text: str) -> list[str]:
    """The article's sentences, in order, without the white space between them.

    >>> split_sentences("A cat sat. It purred!\\nThe end")
    ['A cat sat.', 'It purred!', 'The end']
    """
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def _pieces(sentence_tokens: Sequence[Sequence[int]], room: int) -> list[list[int]]:
    """The sentences' tokens, a sentence longer than `room` cut into `room`-sized pieces."""
    pieces: list[list[int]] = []
    for tokens in sentence_tokens:
        tokens = list(tokens)
        if not tokens:
            continue
        pieces.extend(tokens[i : i + room] for i in range(0, len(tokens), room))
    return pieces


def window_spans(lengths: Sequence[int], room: int, overlap: int) -> list[tuple[int, int]]:
    """[start, end) sentence spans of the windows: each as many sentences from its start as
    fit in `room` tokens (at least one), the next starting `overlap` sentences before the end
    (and always after the previous start), until the last sentence is in a window.

    >>> window_spans([40, 40, 40, 40, 40], room=100, overlap=1)
    [(0, 2), (1, 3), (2, 4), (3, 5)]
    >>> window_spans([40, 40, 40, 40, 40], room=100, overlap=0)
    [(0, 2), (2, 4), (4, 5)]
    """
    spans: list[tuple[int, int]] = []
    start, n = 0, len(lengths)
    while start < n:
        end, used = start, 0
        while end < n and (end == start or used + lengths[end] <= room):
            used += lengths[end]
            end += 1
        spans.append((start, end))
        if end == n:
            break
        start = max(end - overlap, start + 1)
    return spans or [(0, 0)]


@dataclasses.dataclass(frozen=True)
class WindowedInputs:
    """Every window's model input, and which row it belongs to.

    Attributes:
      tokens: one int32 array per window (EOS included), rows in order, windows in order.
      row_of_window: the row index of each window.
      windows: the number of windows of each row.
      summary_truncated: True where a row's summary (or its marker) did not fit whole.
    """

    tokens: list[np.ndarray]
    row_of_window: np.ndarray
    windows: np.ndarray
    summary_truncated: np.ndarray


def encode_windows(
    vocab,
    articles: Sequence[str],
    summaries: Sequence[str],
    max_input_length: int,
    question: int | str | None = None,
    overlap: int = DEFAULT_OVERLAP,
    markers: Sequence[str] | None = None,
) -> WindowedInputs:
    """The inputs of (article, summary) pairs with each article split into windows.

    Each window is `marker + window's article tokens + hypothesis + EOS`, built as
    `inputs.build_inputs` builds an input (`keep_summary`). Where the summary leaves no room
    for any article token, the row gets one window cut as `keep_summary` cuts it.

    Args:
      question: 1..6 (or a prompt's text) to name the question in every input
        (multi-question models).
      markers: instead of `question`, each row's marker text (`input_format.marker_text`),
        as a task's rows name their own questions.

    Raises:
      UserError: for texts that are not a sequence of strings (`arguments.string_list`),
        unequal lengths, an unknown question or a bad overlap.
    """
    articles = arguments.string_list(articles, "articles")
    summaries = arguments.string_list(summaries, "summaries")
    if markers is not None:
        markers = arguments.string_list(markers, "markers")
    if len(articles) != len(summaries) or (markers is not None and len(markers) != len(articles)):
        raise errors.UserError(f"{len(articles)} articles but {len(summaries)} summaries")
    overlap = check_overlap(overlap)
    budget = input_format.content_budget(max_input_length, "max_input_length")
    if markers is None:
        row_markers = inputs.encode_texts(vocab, [inputs.marker_text(question)]) * len(articles)
    else:
        row_markers = inputs.encode_texts(vocab, list(markers)) if markers else []
    hypotheses = inputs.encode_texts(vocab, [input_format.hypothesis_text(s) for s in summaries])
    sentences = [split_sentences(a) for a in articles]
    flat = [s for row in sentences for s in row]
    flat_tokens = iter(inputs.encode_texts(vocab, flat) if flat else [])
    tokens: list[np.ndarray] = []
    rows: list[int] = []
    counts: list[int] = []
    cut: list[bool] = []
    for row, (row_sentences, hypothesis, marker) in enumerate(
        zip(sentences, hypotheses, row_markers, strict=True)
    ):
        marker = list(marker)
        sentence_tokens = [next(flat_tokens) for _ in row_sentences]
        room = budget - len(marker) - len(hypothesis)
        if room <= 0:
            premise = [t for s in sentence_tokens for t in s]
            windows = [premise]
        else:
            pieces = _pieces(sentence_tokens, room)
            spans = window_spans([len(p) for p in pieces], room, overlap)
            windows = [[t for p in pieces[a:b] for t in p] for a, b in spans]
        summary_cut = False
        for premise in windows:
            ids, _, window_cut = inputs.build_inputs(
                marker, premise, hypothesis, max_input_length, input_format.TRUNCATION_KEEP_SUMMARY
            )
            summary_cut = summary_cut or window_cut
            tokens.append(ids)
            rows.append(row)
        counts.append(len(windows))
        cut.append(summary_cut)
    return WindowedInputs(
        tokens,
        np.asarray(rows, np.int64),
        np.asarray(counts, np.int64),
        np.asarray(cut, bool),
    )


def aggregate_windows(
    window_scores: np.ndarray, row_of_window: np.ndarray, n_rows: int, how: str = AGGREGATE_MAX
) -> np.ndarray:
    """Per row, the max (or mean) of its windows' scores; NaN for a row without windows.

    >>> aggregate_windows(np.array([.2, .9, .4]), np.array([0, 0, 1]), 2).tolist()
    [0.9, 0.4]
    """
    check_aggregate(how)
    scores = np.asarray(window_scores, np.float64)
    rows = np.asarray(row_of_window, np.int64)
    out = np.full(n_rows, np.nan)
    if how == AGGREGATE_MAX:
        out_max = np.full(n_rows, -np.inf)
        np.maximum.at(out_max, rows, scores)
        has = np.bincount(rows, minlength=n_rows) > 0
        out[has] = out_max[has]
    else:
        sums = np.bincount(rows, weights=scores, minlength=n_rows)
        n = np.bincount(rows, minlength=n_rows)
        out[n > 0] = sums[n > 0] / n[n > 0]
    return out

"""SeqIO preprocessors for every premise/hypothesis task: text, targets, truncation, EOS.

Every task in this project (SEAHORSE, NLI, mFACE, TRUE, METAL) first maps its raw rows to
one intermediate schema, then reuses `premise_hypothesis_preprocessors(...)`:

  premise           string   the article (or NLI premise, dialogue context, ...)
  hypothesis        string   the summary (or NLI hypothesis)
  label             int64    1 / 0 for binary questions; float32 for graded benchmarks
  question_prompt   string   optional: the question named in multi-question inputs
  gem_id, language, dataset, system   strings, passed through untouched
  question          int64    passed through untouched

The model input, its length budget and its two truncation modes are
`seahorse_t5x.formats.input_format`'s: `premise: {premise} hypothesis: {hypothesis}` (multi-question:
`question: {prompt} premise: ... hypothesis: ...`), cut inside the premise at the token level
so the question, both markers, the whole hypothesis and EOS fit (`keep_summary`, the
default), or cut from the right as in the SEAHORSE paper (`right`).

Two int features say what the cut cost, for callers to count (`truncation_counts`):
`article_tokens_dropped` (premise tokens not in the input) and `summary_truncated` (1 when
tokens of the hypothesis, or of its marker, were cut).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping

import gin
import numpy as np
import seqio
import tensorflow as tf

from seahorse_t5x import constants
from seahorse_t5x.formats import input_format

# The map functions hold no Python control flow on tensors: converting them with autograph
# on every dataset build is wasted time.
_no_autograph = tf.autograph.experimental.do_not_convert

# Features this module adds after tokenization and removes again once `inputs` is built.
_PART_FEATURES = ("marker_tokens", "premise_tokens", "hypothesis_tokens")


@seqio.map_over_dataset
@_no_autograph
def label_targets(x: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Adds `targets_pretokenized`: "1" for label 1, "0" for label 0 (training mode).

    {"label": 1, ...} -> {"label": 1, "targets_pretokenized": "1", ...}

    A label other than 0 or 1 stops the pipeline with an InvalidArgumentError: sources
    filter unlabeled rows before this step.
    """
    label = tf.cast(x["label"], tf.float32)
    is_binary = tf.logical_or(tf.equal(label, 0.0), tf.equal(label, 1.0))
    with tf.control_dependencies(
        [tf.debugging.Assert(is_binary, ["training targets need a 0/1 label, got", label])]
    ):
        target = tf.where(
            tf.equal(label, 1.0),
            tf.constant(constants.TARGET_YES),
            tf.constant(constants.TARGET_NO),
        )
    return {**x, "targets_pretokenized": target}


@seqio.map_over_dataset
@_no_autograph
def constant_yes_targets(x: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Adds `targets_pretokenized` = "1" whatever the label (T5X score mode).

    T5X's score mode returns log P(targets | inputs): with the constant target "1" that is
    the model's log-probability of "yes". The gold label stays in `label` for the metrics.

    {"label": 0, ...} -> {"label": 0, "targets_pretokenized": "1", ...}
    """
    return {**x, "targets_pretokenized": tf.constant(constants.TARGET_YES)}


@seqio.map_over_dataset
@_no_autograph
def tokenize_premise_hypothesis(
    x: Mapping[str, tf.Tensor],
    output_features: Mapping[str, seqio.Feature],
    multi_question: bool = False,
) -> dict[str, tf.Tensor]:
    """Tokenizes the input's three parts separately, and the targets.

    The parts are the marker (`premise:`, or `question: {prompt} premise:`), the premise,
    and `hypothesis: {hypothesis}`. Each starts a new word, so the concatenation of their
    tokens is the tokenization of the joined text (SentencePiece never merges across a
    space); keeping them apart lets `truncate_inputs` cut the premise alone.

    {"premise": "A cat sat.", "hypothesis": "A cat.", "targets_pretokenized": "1"} ->
    {..., "inputs_pretokenized": "premise: A cat sat. hypothesis: A cat.",
     "marker_tokens": ids("premise:"), "premise_tokens": ids("A cat sat."),
     "hypothesis_tokens": ids("hypothesis: A cat."), "targets": ids("1")}
    """
    input_vocab = output_features["inputs"].vocabulary
    target_vocab = output_features["targets"].vocabulary
    # `input_format.input_text`, per example.
    separator = input_format.SEPARATOR
    if multi_question:
        marker = tf.strings.join(
            [input_format.QUESTION_MARKER, x["question_prompt"], input_format.PREMISE_MARKER],
            separator=separator,
        )
    else:
        marker = tf.constant(input_format.marker_text())
    hypothesis_part = tf.strings.join(
        [input_format.HYPOTHESIS_MARKER, x["hypothesis"]], separator=separator
    )
    out = dict(x)
    out["inputs_pretokenized"] = tf.strings.join(
        [marker, x["premise"], hypothesis_part], separator=separator
    )
    out["marker_tokens"] = input_vocab.encode_tf(marker)
    out["premise_tokens"] = input_vocab.encode_tf(x["premise"])
    out["hypothesis_tokens"] = input_vocab.encode_tf(hypothesis_part)
    out["targets"] = target_vocab.encode_tf(x["targets_pretokenized"])
    return out


@gin.configurable(module="seahorse_t5x.tasks.preprocessors")
def configured_truncation(mode: str = input_format.TRUNCATION_KEEP_SUMMARY) -> str:
    """The truncation of chains built with `truncation=None` (all registered tasks).

    Read when a dataset is built, so the gin binding
    `seahorse_t5x.tasks.preprocessors.configured_truncation.mode = "right"` (the paper's
    behaviour) applies to tasks registered before it. Truncation runs after SeqIO's cache
    placeholder, so cached tasks follow it too.

    Raises:
      UserError: for an unknown mode.
    """
    return input_format.check_truncation(mode)


@seqio.map_over_dataset
@_no_autograph
def truncate_inputs(
    x: Mapping[str, tf.Tensor],
    sequence_length: Mapping[str, int] | None = None,
    truncation: str | None = input_format.TRUNCATION_KEEP_SUMMARY,
) -> dict[str, tf.Tensor]:
    """Builds `inputs` (without EOS) from the parts, within `sequence_length["inputs"] - 1`.

    `truncation=None` takes the mode from `configured_truncation()` (gin). The cut is
    `input_format.plan_cut`'s; one token is left for the EOS that `append_eos_after_trim`
    adds next. keep_summary cuts the premise here; right leaves the end to SeqIO's own trim,
    as the paper's pipeline did, and only counts what it will cost.

    With budget 6, marker [5], premise [7, 8, 9, 10], hypothesis [6, 11, 12]:
      keep_summary -> inputs [5, 7, 8, 6, 11, 12], article_tokens_dropped 2, summary_truncated 0
      right        -> inputs [5, 7, 8, 9, 10, 6, ...] (cut to 6 later), dropped 0, truncated 1

    Raises:
      UserError: for an unknown `truncation` mode or an input length below
        `input_format.MIN_INPUT_LENGTH`.
    """
    if truncation is None:
        truncation = configured_truncation()
    input_format.check_truncation(truncation)
    marker = x["marker_tokens"]
    premise = x["premise_tokens"]
    hypothesis = x["hypothesis_tokens"]
    budget = input_format.sequence_budget(sequence_length)
    out = {k: v for k, v in x.items() if k not in _PART_FEATURES}
    if budget is None:
        out["inputs"] = tf.concat([marker, premise, hypothesis], axis=0)
        out["article_tokens_dropped"] = tf.constant(0, tf.int32)
        out["summary_truncated"] = tf.constant(0, tf.int32)
        return out
    cut = input_format.plan_cut(
        tf.size(marker),
        tf.size(premise),
        tf.size(hypothesis),
        budget,
        truncation,
        maximum=tf.maximum,
        minimum=tf.minimum,
    )
    if truncation == input_format.TRUNCATION_KEEP_SUMMARY:
        joined = tf.concat([marker, premise[: cut.premise_kept], hypothesis], axis=0)
        out["inputs"] = joined[:budget]
    else:
        out["inputs"] = tf.concat([marker, premise, hypothesis], axis=0)
    out["article_tokens_dropped"] = tf.cast(cut.article_tokens_dropped, tf.int32)
    out["summary_truncated"] = tf.cast(cut.summary_truncated, tf.int32)
    return out


def premise_hypothesis_preprocessors(
    score_mode: bool,
    truncation: str | None = input_format.TRUNCATION_KEEP_SUMMARY,
    multi_question: bool = False,
) -> list[Callable[..., tf.data.Dataset]]:
    """The preprocessor chain from the intermediate schema to `inputs` and `targets`.

    Args:
      score_mode: True for T5X score-mode evaluation (constant target "1", gold label kept
        in `label`); False for training and predict-mode evaluation (target "1"/"0").
      truncation: "keep_summary" (cut the premise, keep hypothesis and EOS), "right"
        (the paper: cut the end of the joined input), or None: `configured_truncation()`
        (gin), looked up when the dataset is built.
      multi_question: name the question (`question_prompt`) at the start of the input.

    Returns:
      Preprocessors for `seqio.Task(preprocessors=...)`, to follow the source's own
      mapping into the intermediate schema. Tokenization comes before SeqIO's cache
      placeholder; truncation (which needs `sequence_length`) and EOS come after it.

    Raises:
      UserError: for an unknown `truncation` mode.
    """
    if truncation is not None:
        input_format.check_truncation(truncation)
    return [
        constant_yes_targets if score_mode else label_targets,
        functools.partial(tokenize_premise_hypothesis, multi_question=multi_question),
        seqio.CacheDatasetPlaceholder(),
        functools.partial(truncate_inputs, truncation=truncation),
        seqio.preprocessors.append_eos_after_trim,
    ]


def truncation_counts(dataset: Iterable[Mapping[str, object]]) -> dict[str, int]:
    """Counts what truncation cost over a preprocessed dataset (or any example iterable).

    Returns:
      `examples`, `articles_truncated` (examples that lost premise tokens),
      `article_tokens_dropped` (their sum) and `summaries_truncated`.
    """
    counts = {
        "examples": 0,
        "articles_truncated": 0,
        "article_tokens_dropped": 0,
        "summaries_truncated": 0,
    }
    if isinstance(dataset, tf.data.Dataset):
        dataset = dataset.as_numpy_iterator()
    for ex in dataset:
        dropped = int(np.asarray(ex["article_tokens_dropped"]))
        counts["examples"] += 1
        counts["articles_truncated"] += int(dropped > 0)
        counts["article_tokens_dropped"] += dropped
        counts["summaries_truncated"] += int(np.asarray(ex["summary_truncated"]))
    return counts

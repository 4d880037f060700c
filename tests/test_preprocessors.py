"""Preprocessors: targets, tokenization, summary-keeping and right truncation, EOS."""

from __future__ import annotations

import numpy as np
import pytest
import seqio
import tasks_testing
import tensorflow as tf
from seqio import test_utils

from seahorse_t5x import constants, errors
from seahorse_t5x.formats import input_format
from seahorse_t5x.tasks import postprocessors, preprocessors

EOS = 1


@pytest.fixture(scope="module")
def vocabulary(task_vocab_file):
    return seqio.SentencePieceVocabulary(task_vocab_file)


@pytest.fixture(scope="module")
def output_features(vocabulary):
    return {
        "inputs": seqio.Feature(vocabulary=vocabulary, add_eos=True),
        "targets": seqio.Feature(vocabulary=vocabulary, add_eos=True),
    }


def _raw(premise: str, hypothesis: str, label=1, question: int = 4) -> dict:
    return {
        "premise": premise,
        "hypothesis": hypothesis,
        "label": label,
        "question": question,
        "question_prompt": constants.QUESTION_PROMPTS[question],
        "gem_id": "xsum-test-1",
        "language": "en",
        "dataset": "xsum",
        "system": "reference",
    }


def _task(examples: list[dict], output_features, **chain_kwargs) -> seqio.Task:
    """An unregistered task over in-memory examples, with the shared preprocessor chain."""
    label_dtype = tf.float32 if isinstance(examples[0]["label"], float) else tf.int64

    def dataset_fn(split, shuffle_files):
        del split, shuffle_files
        columns = {k: [ex[k] for ex in examples] for k in examples[0]}
        ds = tf.data.Dataset.from_tensor_slices(columns)
        return ds.map(lambda x: {**x, "label": tf.cast(x["label"], label_dtype)})

    return seqio.Task(
        "preprocessors_test_task",
        source=seqio.FunctionDataSource(dataset_fn, splits=["test"]),
        preprocessors=preprocessors.premise_hypothesis_preprocessors(**chain_kwargs),
        output_features=output_features,
    )


def _examples(task: seqio.Task, input_length: int | None) -> list[dict]:
    lengths = None if input_length is None else {"inputs": input_length, "targets": 4}
    ds = task.get_dataset(lengths, split="test", shuffle=False)
    return list(ds.as_numpy_iterator())


# ---------------------------------------------------------------------------------------
# Single steps, with seqio.test_utils.assert_dataset.


def test_input_text_single_and_multi_question():
    assert input_format.input_text("A cat sat.", "A cat.") == (
        "premise: A cat sat. hypothesis: A cat."
    )
    assert input_format.input_text("A cat sat.", "A cat.", "concise") == (
        "question: concise premise: A cat sat. hypothesis: A cat."
    )


def test_label_targets_maps_label_to_1_or_0():
    ds = tf.data.Dataset.from_tensor_slices({"label": tf.constant([1, 0], tf.int64)})
    test_utils.assert_dataset(
        preprocessors.label_targets(ds),
        [
            {"label": 1, "targets_pretokenized": b"1"},
            {"label": 0, "targets_pretokenized": b"0"},
        ],
    )


def test_label_targets_rejects_a_label_that_is_not_binary():
    ds = tf.data.Dataset.from_tensor_slices({"label": tf.constant([2], tf.int64)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="0/1 label"):
        list(preprocessors.label_targets(ds).as_numpy_iterator())


def test_constant_yes_targets_keeps_the_gold_label():
    ds = tf.data.Dataset.from_tensor_slices({"label": tf.constant([0.25, 1.0])})
    test_utils.assert_dataset(
        preprocessors.constant_yes_targets(ds),
        [
            {"label": 0.25, "targets_pretokenized": b"1"},
            {"label": 1.0, "targets_pretokenized": b"1"},
        ],
    )


def test_tokenize_premise_hypothesis_parts(vocabulary, output_features):
    ds = tf.data.Dataset.from_tensors(
        {
            "premise": "A cat sat on the mat.",
            "hypothesis": "A cat sat.",
            "question_prompt": "concise",
            "targets_pretokenized": "1",
        }
    )
    out = preprocessors.tokenize_premise_hypothesis(
        ds, output_features=output_features, multi_question=True
    )
    test_utils.assert_dataset(
        out,
        {
            "premise": b"A cat sat on the mat.",
            "hypothesis": b"A cat sat.",
            "question_prompt": b"concise",
            "targets_pretokenized": b"1",
            "inputs_pretokenized": (
                b"question: concise premise: A cat sat on the mat. hypothesis: A cat sat."
            ),
            "marker_tokens": vocabulary.encode("question: concise premise:"),
            "premise_tokens": vocabulary.encode("A cat sat on the mat."),
            "hypothesis_tokens": vocabulary.encode("hypothesis: A cat sat."),
            "targets": vocabulary.encode("1"),
        },
    )


def _parts(marker, premise, hypothesis):
    return tf.data.Dataset.from_tensors(
        {
            "marker_tokens": tf.constant(marker, tf.int32),
            "premise_tokens": tf.constant(premise, tf.int32),
            "hypothesis_tokens": tf.constant(hypothesis, tf.int32),
        }
    )


def test_truncate_inputs_keep_summary_cuts_the_premise_only():
    ds = _parts([5], [7, 8, 9, 10], [6, 11, 12])
    out = preprocessors.truncate_inputs(ds, sequence_length={"inputs": 7})
    test_utils.assert_dataset(
        out,
        {"inputs": [5, 7, 8, 6, 11, 12], "article_tokens_dropped": 2, "summary_truncated": 0},
    )


def test_truncate_inputs_refuses_an_input_length_without_room_for_a_token():
    ds = _parts([5], [7, 8, 9, 10], [6, 11, 12])
    with pytest.raises(errors.UserError) as raised:
        list(preprocessors.truncate_inputs(ds, sequence_length={"inputs": 1}))
    # tf.data prefixes the trace of the mapped function; the message is the project's.
    assert (
        str(raised.value)
        .strip()
        .endswith("sequence_length['inputs'] must be at least 2 (one token and the EOS), got 1")
    )
    out = preprocessors.truncate_inputs(ds, sequence_length={"inputs": 2})
    test_utils.assert_dataset(
        out, {"inputs": [5], "article_tokens_dropped": 4, "summary_truncated": 1}
    )


def test_truncate_inputs_right_reports_the_cut_summary():
    ds = _parts([5], [7, 8, 9, 10], [6, 11, 12])
    out = preprocessors.truncate_inputs(ds, sequence_length={"inputs": 7}, truncation="right")
    # The end is cut later by append_eos_after_trim; the flags already say what it costs.
    test_utils.assert_dataset(
        out,
        {
            "inputs": [5, 7, 8, 9, 10, 6, 11, 12],
            "article_tokens_dropped": 0,
            "summary_truncated": 1,
        },
    )


def test_truncate_inputs_summary_longer_than_budget_is_cut_last():
    ds = _parts([5], [7, 8], [6, 11, 12, 13, 14, 15])
    out = preprocessors.truncate_inputs(ds, sequence_length={"inputs": 5})
    test_utils.assert_dataset(
        out, {"inputs": [5, 6, 11, 12], "article_tokens_dropped": 2, "summary_truncated": 1}
    )


def test_truncate_inputs_without_sequence_length_keeps_everything():
    ds = _parts([5], [7, 8, 9], [6, 11])
    test_utils.assert_dataset(
        preprocessors.truncate_inputs(ds, sequence_length=None),
        {"inputs": [5, 7, 8, 9, 6, 11], "article_tokens_dropped": 0, "summary_truncated": 0},
    )


def test_unknown_truncation_mode_is_a_user_error():
    with pytest.raises(errors.UserError, match="keep_summary, right"):
        preprocessors.premise_hypothesis_preprocessors(score_mode=False, truncation="left")


# ---------------------------------------------------------------------------------------
# The whole chain, through a seqio.Task.


def test_acceptance_long_article_keeps_whole_summary_and_eos(vocabulary, output_features):
    article = tasks_testing.words_with_tokens(
        vocabulary, 3000, ("government", "schools", "report", "people", "city")
    )
    summary = tasks_testing.words_with_tokens(vocabulary, 60, ("team", "cup", "water"))
    task = _task([_raw(article, summary)], output_features, score_mode=False)
    (ex,) = _examples(task, 2048)

    inputs = ex["inputs"].tolist()
    marker = vocabulary.encode("premise:")
    hypothesis = vocabulary.encode(f"hypothesis: {summary}")
    summary_tokens = vocabulary.encode(summary)
    assert len(summary_tokens) == 60
    assert len(inputs) == 2048
    assert inputs[-61:] == summary_tokens + [EOS]
    assert inputs[-(len(hypothesis) + 1) :] == hypothesis + [EOS]
    kept_article = 2047 - len(marker) - len(hypothesis)
    assert (
        inputs[: len(marker) + kept_article] == marker + vocabulary.encode(article)[:kept_article]
    )
    assert ex["article_tokens_dropped"] == 3000 - kept_article
    assert ex["summary_truncated"] == 0
    assert ex["targets"].tolist() == vocabulary.encode("1") + [EOS]
    assert preprocessors.truncation_counts([ex]) == {
        "examples": 1,
        "articles_truncated": 1,
        "article_tokens_dropped": 3000 - kept_article,
        "summaries_truncated": 0,
    }


def test_right_truncation_is_the_papers_concatenate_then_cut(vocabulary, output_features):
    article = tasks_testing.words_with_tokens(vocabulary, 3000, ("schools", "report"))
    summary = tasks_testing.words_with_tokens(vocabulary, 60, ("team", "cup"))
    task = _task([_raw(article, summary)], output_features, score_mode=False, truncation="right")
    (ex,) = _examples(task, 2048)
    full = vocabulary.encode(input_format.input_text(article, summary))
    assert ex["inputs"].tolist() == full[:2047] + [EOS]
    assert ex["summary_truncated"] == 1
    assert ex["article_tokens_dropped"] == 3000 - (2047 - len(vocabulary.encode("premise:")))


def test_short_inputs_are_the_same_in_both_modes(vocabulary, output_features):
    rows = [
        _raw("Plants need water. Keep it in the sun.", "Water the plant.", label=1),
        _raw("The team won the cup on Saturday.", "The team lost.", label=0),
    ]
    kept = _examples(_task(rows, output_features, score_mode=False), 512)
    right = _examples(_task(rows, output_features, score_mode=False, truncation="right"), 512)
    for row, a, b in zip(rows, kept, right, strict=True):
        text = input_format.input_text(row["premise"], row["hypothesis"])
        # Tokenizing the parts apart gives the tokens of the joined text.
        assert a["inputs"].tolist() == vocabulary.encode(text) + [EOS]
        assert b["inputs"].tolist() == a["inputs"].tolist()
        assert vocabulary.decode(a["inputs"].tolist()) == tasks_testing.roundtrip(vocabulary, text)
        assert a["inputs_pretokenized"].decode() == text
        assert a["article_tokens_dropped"] == b["article_tokens_dropped"] == 0
        assert a["summary_truncated"] == b["summary_truncated"] == 0
    assert [vocabulary.decode(ex["targets"].tolist()) for ex in kept] == ["1", "0"]


def test_multi_question_input_names_the_question(vocabulary, output_features):
    row = _raw("The team won the cup.", "The team won.", question=6)
    (ex,) = _examples(_task([row], output_features, score_mode=False, multi_question=True), 256)
    text = "question: concise premise: The team won the cup. hypothesis: The team won."
    assert ex["inputs_pretokenized"].decode() == text
    assert ex["inputs"].tolist() == vocabulary.encode(text) + [EOS]
    assert ex["question"] == 6


def test_score_mode_has_constant_target_and_carries_the_label(vocabulary, output_features):
    rows = [_raw("A.", "B.", label=0), _raw("C.", "D.", label=1)]
    out = _examples(_task(rows, output_features, score_mode=True), 64)
    assert [vocabulary.decode(ex["targets"].tolist()) for ex in out] == ["1", "1"]
    assert [int(ex["label"]) for ex in out] == [0, 1]
    assert [ex["gem_id"] for ex in out] == [b"xsum-test-1"] * 2
    # What T5X does with the constant target in score mode: the gold label comes back.
    assert [postprocessors.score_postprocessor("1", example=ex, is_target=True) for ex in out] == [
        0,
        1,
    ]


def test_score_mode_keeps_graded_float_labels(output_features):
    rows = [_raw("A.", "B.", label=0.25), _raw("C.", "D.", label=0.75)]
    out = _examples(_task(rows, output_features, score_mode=True), 64)
    targets = [postprocessors.score_postprocessor("1", example=ex, is_target=True) for ex in out]
    assert targets == [0.25, 0.75]
    assert all(isinstance(t, float) for t in targets)


def test_summary_longer_than_the_whole_input_is_cut_and_flagged(vocabulary, output_features):
    summary = tasks_testing.words_with_tokens(vocabulary, 40, ("team", "cup"))
    (ex,) = _examples(_task([_raw("The city.", summary)], output_features, score_mode=False), 16)
    expected = (vocabulary.encode("premise:") + vocabulary.encode(f"hypothesis: {summary}"))[:15]
    assert ex["inputs"].tolist() == expected + [EOS]
    assert ex["summary_truncated"] == 1
    assert ex["article_tokens_dropped"] == len(vocabulary.encode("The city."))


def test_truncation_counts_over_a_dataset():
    ds = tf.data.Dataset.from_tensor_slices(
        {
            "article_tokens_dropped": np.array([0, 5, 7], np.int32),
            "summary_truncated": np.array([0, 0, 1], np.int32),
        }
    )
    assert preprocessors.truncation_counts(ds) == {
        "examples": 3,
        "articles_truncated": 2,
        "article_tokens_dropped": 12,
        "summaries_truncated": 1,
    }


def test_predict_postprocessor_parses_labels():
    assert [postprocessors.predict_postprocessor(t) for t in ("1", b"0", " 1 ", "yes", "")] == [
        1,
        0,
        1,
        -1,
        -1,
    ]


def test_score_postprocessor_passes_scores_and_needs_a_label():
    assert postprocessors.score_postprocessor(-0.5, example={}, is_target=False) == -0.5
    with pytest.raises(ValueError, match="label"):
        postprocessors.score_postprocessor("1", example={"inputs": [1]}, is_target=True)

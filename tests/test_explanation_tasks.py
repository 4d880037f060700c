"""MetricInstruct as SeqIO tasks (`tasks/explanations.py`), built from the fixture.

The fixture is tests/testdata/metric_instruct/: `mix_instruct_sample.json` (nine rows,
three of each of summarization, translation, data2text; the first with a long source) and
`malformed.jsonl` (two good rows among bad ones). Token counts are the demo vocabulary's.
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest
import seqio
import tasks_testing
import tensorflow as tf
from seqio import test_utils

from seahorse_t5x import constants, errors
from seahorse_t5x.data import metric_instruct
from seahorse_t5x.formats import error_analysis, vocab
from seahorse_t5x.tasks import explanations

TESTDATA = pathlib.Path(__file__).parent / "testdata" / "metric_instruct"
SAMPLE = TESTDATA / "mix_instruct_sample.json"
MALFORMED = TESTDATA / "malformed.jsonl"
EOS = 1
NAME = "mi_fixture"
TYPES = ("summarization", "translation", "data2text", "mathqa", "long_form_qa")
EXPECTED_NAMES = [
    NAME,
    *(f"{NAME}.{t}" for t in TYPES),
    f"{NAME}.instruction_following",
    f"{NAME}_all",
]
# The lengths the module docstring states, in demo-vocabulary tokens without EOS.
PROMPT_LENGTHS = (346, 1646)
TARGET_LENGTHS = (41, 422)
TEMPLATE_LENGTHS = (54, 239)


@pytest.fixture(scope="module")
def vocabulary():
    return seqio.SentencePieceVocabulary(vocab.demo_vocab_path())


@pytest.fixture(scope="module")
def fixture_tasks():
    """The fixture registered as `mi_fixture` (train: the sample, validation: malformed)."""
    names = explanations.register_explanation_tasks(
        {"train": SAMPLE, "validation": MALFORMED}, name=NAME, vocabulary="demo"
    )
    try:
        yield names
    finally:
        explanations.remove_explanation_tasks(NAME)


@pytest.fixture(scope="module")
def records():
    return metric_instruct.load(SAMPLE)[0]


def _dataset(name: str, lengths=None, split: str = "train") -> list[dict]:
    task = seqio.get_mixture_or_task(name)
    return list(task.get_dataset(lengths, split=split, shuffle=False).as_numpy_iterator())


def _ids(vocabulary, text: str) -> list[int]:
    # As the tasks tokenize (TensorFlow's SentencePiece op: on the demo vocabulary it splits
    # a few digit runs differently from the Python library, same count).
    return vocabulary.encode_tf(tf.constant(text)).numpy().tolist()


def _parts(vocabulary, record) -> tuple[list[int], list[int], list[int]]:
    parts = error_analysis.prompt_parts(
        record.instruction, record.input_context, record.hypothesis_output
    )
    return tuple(_ids(vocabulary, p) for p in parts)


# ----------------------------------------------------------------------------- names


def test_import_registers_the_default_set():
    assert {"metricinstruct", "metricinstruct_all"} <= set(seqio.TaskRegistry.names()) | set(
        seqio.MixtureRegistry.names()
    )
    for task_type in ("summarization", "translation", "data2text", "long_form_qa", "mathqa"):
        assert f"metricinstruct.{task_type}" in seqio.TaskRegistry.names()
    mixture = seqio.get_mixture_or_task("metricinstruct_all")
    assert sorted(t.name for t in mixture.tasks) == sorted(
        f"metricinstruct.{explanations.task_type_suffix(t)}" for t in error_analysis.TASK_TYPES
    )


def test_registered_names_and_sources(fixture_tasks):
    assert fixture_tasks == EXPECTED_NAMES
    task = seqio.get_mixture_or_task(NAME)
    assert task.splits == ("train", "validation")
    assert task.num_input_examples("train") == 9
    assert task.num_input_examples("validation") == 2
    counts = {
        t: seqio.get_mixture_or_task(f"{NAME}.{t}").num_input_examples("train") for t in TYPES
    }
    assert counts == {
        "summarization": 3,
        "translation": 3,
        "data2text": 3,
        "mathqa": 0,
        "long_form_qa": 0,
    }


def test_names_that_cannot_be_registered(fixture_tasks):
    with pytest.raises(errors.UserError, match="SeqIO already has mi_fixture, mi_fixture.summ"):
        explanations.register_explanation_tasks(SAMPLE, name=NAME)
    with pytest.raises(errors.UserError, match="must be a lowercase identifier, got 'MI'"):
        explanations.register_explanation_tasks(SAMPLE, name="MI")
    with pytest.raises(errors.UserError, match=r"with splits among train, validation, test"):
        explanations.register_explanation_tasks({"dev": SAMPLE}, name="mi_other")
    with pytest.raises(errors.UserError, match="input_length must be at least 2"):
        explanations.register_explanation_tasks(SAMPLE, name="mi_other", input_length=1)
    assert "mi_other" not in seqio.TaskRegistry.names()
    assert explanations.remove_explanation_tasks("mi_other") == []


# ----------------------------------------------------------------------------- examples


def test_examples_are_the_prompt_and_the_rendered_analysis(fixture_tasks, vocabulary, records):
    examples = _dataset(NAME, {"inputs": 1024, "targets": 512})
    assert len(examples) == 9
    for example, record in zip(examples, records, strict=True):
        head, context, tail = _parts(vocabulary, record)
        target = error_analysis.render_analysis(record.errors)
        assert example["inputs_pretokenized"].decode() == error_analysis.render_prompt(
            record.instruction, record.input_context, record.hypothesis_output
        )
        assert example["targets_pretokenized"].decode() == target
        assert example["targets"].tolist() == _ids(vocabulary, target) + [EOS]
        assert example["task_type"].decode() == record.task
        assert example["id"].decode() == record.id
        assert example["score"] == pytest.approx(record.score)
        assert example["num_errors"] == len(record.errors)
        assert example["hypothesis_truncated"] == 0 and example["targets_truncated"] == 0
        kept = min(len(context), 1023 - len(head) - len(tail))
        assert example["inputs"].tolist() == head + context[:kept] + tail + [EOS]
        assert example["context_tokens_dropped"] == len(context) - kept
    assert [int(e["context_tokens_dropped"]) for e in examples] == [623] + [0] * 8
    # The whole prompt's tokens are the parts' tokens: cutting apart changes nothing else.
    # (On the demo vocabulary the ids of a few digit runs depend on their neighbours in
    # TensorFlow's op, so the uncut prompts are compared by length and text.)
    for example in examples[1:]:
        whole = example["inputs_pretokenized"].decode()
        assert len(example["inputs"]) == len(_ids(vocabulary, whole)) + 1
        assert vocabulary.decode(example["inputs"].tolist()) == tasks_testing.roundtrip(
            vocabulary, whole
        )


def test_a_long_source_is_cut_and_the_hypothesis_kept_whole(fixture_tasks, vocabulary, records):
    record = records[0]
    head, context, tail = _parts(vocabulary, record)
    # No sequence_length: the set's input length, 1024 (TIGERScore's context).
    first = _dataset(NAME)[0]
    assert len(first["inputs"]) == 1024
    assert first["context_tokens_dropped"] == len(context) - (1023 - len(head) - len(tail)) == 623
    decoded = vocabulary.decode(first["inputs"].tolist())
    hypothesis = tasks_testing.roundtrip(vocabulary, record.hypothesis_output)
    request_end = tasks_testing.roundtrip(vocabulary, "Your evaluation output:")
    assert hypothesis in decoded and decoded.endswith(request_end)
    assert tasks_testing.roundtrip(vocabulary, record.input_context) not in decoded
    kept_source = vocabulary.decode(context[: 1023 - len(head) - len(tail)])
    assert kept_source in decoded
    # T5X's lengths: a shorter input cuts only the source, a shorter target is counted.
    examples = _dataset(NAME, {"inputs": 512, "targets": 128})
    assert len(examples[0]["inputs"]) == 512
    assert hypothesis in vocabulary.decode(examples[0]["inputs"].tolist())
    assert explanations.truncation_counts(examples) == {
        "examples": 9,
        "sources_cut": 1,
        "source_tokens_dropped": PROMPT_LENGTHS[1] - 511,
        "hypotheses_truncated": 0,
        # Targets longer than 127 tokens: 422, 208, 165, 248, 268, 141, 183.
        "targets_truncated": 7,
    }


def test_an_input_too_short_for_the_hypothesis_cuts_the_end(fixture_tasks, vocabulary, records):
    examples = _dataset(NAME, {"inputs": 320, "targets": 512})
    head, context, tail = _parts(vocabulary, records[0])
    assert examples[0]["inputs"].tolist() == (head + tail)[:319] + [EOS]
    assert explanations.truncation_counts(examples)["hypotheses_truncated"] == 9


def test_task_type_tasks_and_the_mixture(fixture_tasks):
    translation = _dataset(f"{NAME}.translation", {"inputs": 1024, "targets": 512})
    assert [e["id"].decode() for e in translation] == [
        "mix_instruct_sample:23",
        "mix_instruct_sample:30",
        "mix_instruct_sample:37",
    ]
    assert _dataset(f"{NAME}.mathqa", {"inputs": 1024, "targets": 512}) == []
    mixture = seqio.get_mixture_or_task(f"{NAME}_all")
    rates = {t.name: mixture.get_rate(t) for t in mixture.tasks}
    assert rates == {
        f"{NAME}.summarization": 3.0,
        f"{NAME}.translation": 3.0,
        f"{NAME}.data2text": 3.0,
        f"{NAME}.mathqa": 0.0,
        f"{NAME}.long_form_qa": 0.0,
        f"{NAME}.instruction_following": 0.0,
    }
    lengths = {"inputs": 1024, "targets": 512}
    mixed = mixture.get_dataset(lengths, split="train", shuffle=False)
    # A mixture keeps only the output features: its inputs say which task type's row it is.
    type_of_inputs = {
        tuple(e["inputs"]): t for t in TYPES for e in _dataset(f"{NAME}.{t}", lengths)
    }
    assert len(type_of_inputs) == 9
    types = {type_of_inputs[tuple(e["inputs"])] for e in mixed.take(30).as_numpy_iterator()}
    assert types == {"summarization", "translation", "data2text"}


def test_validation_split_keeps_the_good_rows_and_reports_the_drops(fixture_tasks):
    examples = _dataset(NAME, {"inputs": 1024, "targets": 512}, split="validation")
    assert [(e["id"].decode(), e["source"].decode()) for e in examples] == [
        ("good-1", "xsum"),
        ("42", ""),
    ]
    report = explanations.drop_report(NAME)
    assert report["train"]["rows_dropped"] == 0
    assert report["validation"]["rows_read"] == 21
    assert report["validation"]["rows_dropped"] == 19
    assert report["validation"]["drop_examples"][5] == (
        f"{MALFORMED}:7 field 'task': expected a string or null, got 3"
    )
    with pytest.raises(errors.UserError, match="has no 'test' file"):
        seqio.get_mixture_or_task(NAME).get_dataset(None, split="test")


def test_default_set_reads_its_file_from_the_environment(monkeypatch, vocabulary):
    monkeypatch.setenv(constants.ENV_VOCAB, "demo")
    monkeypatch.delenv(explanations.ENV_PATH, raising=False)
    with pytest.raises(errors.UserError, match="set the environment variable SEAHORSE_METRIC_"):
        seqio.get_mixture_or_task("metricinstruct").get_dataset(None, split="train")
    monkeypatch.setenv(explanations.ENV_PATH, str(SAMPLE))
    examples = _dataset("metricinstruct.data2text", {"inputs": 1024, "targets": 512})
    assert [e["score"] for e in examples] == [-8.0, -0.5, -3.5]
    with pytest.raises(errors.UserError, match="has no 'validation' file"):
        seqio.get_mixture_or_task("metricinstruct").get_dataset(None, split="validation")


def test_lengths_stated_in_the_module_docstring(vocabulary, records):
    prompts, targets = [], []
    for record in records:
        prompts.append(sum(len(p) for p in _parts(vocabulary, record)))
        targets.append(len(_ids(vocabulary, error_analysis.render_analysis(record.errors))))
    assert (min(prompts), max(prompts)) == PROMPT_LENGTHS
    assert max(prompts[1:]) == 457
    assert (min(targets), max(targets)) == TARGET_LENGTHS
    head, _, tail = error_analysis.prompt_parts("", "", "")
    assert (len(_ids(vocabulary, head)), len(_ids(vocabulary, tail))) == TEMPLATE_LENGTHS
    doc = explanations.__doc__
    assert "prompts 346-1,646" in doc and "targets 41-422" in doc and "is 293 (54" in doc
    assert explanations.FEATURE_LENGTHS == {"inputs": 1024, "targets": 512}
    assert max(targets) < explanations.TARGET_LENGTH


# ----------------------------------------------------------------------------- preprocessors


def test_tokenize_prompt_keeps_the_parts_apart(vocabulary):
    features = {
        "inputs": seqio.Feature(vocabulary, add_eos=True),
        "targets": seqio.Feature(vocabulary, add_eos=True),
    }
    ds = tf.data.Dataset.from_tensors(
        {
            "prompt_head": "the cat\n",
            "prompt_context": "sat on the mat",
            "prompt_tail": "\n\nthe dog\n",
            "targets_pretokenized": "a report",
            "id": "x",
        }
    )
    test_utils.assert_dataset(
        explanations.tokenize_prompt(ds, output_features=features),
        {
            "head_tokens": vocabulary.encode("the cat"),
            "context_tokens": vocabulary.encode("sat on the mat"),
            "tail_tokens": vocabulary.encode("the dog"),
            "targets_pretokenized": b"a report",
            "targets": vocabulary.encode("a report"),
            "id": b"x",
        },
    )


@pytest.mark.parametrize(
    "lengths, inputs, dropped, hypothesis_cut, targets_cut",
    [
        ({"inputs": 7, "targets": 4}, [5, 6, 7, 8, 11, 12], 2, 0, 0),
        ({"inputs": 11, "targets": 3}, [5, 6, 7, 8, 9, 10, 11, 12], 0, 0, 1),
        ({"inputs": 4, "targets": 4}, [5, 6, 11], 4, 1, 0),
        (None, [5, 6, 7, 8, 9, 10, 11, 12], 0, 0, 0),
    ],
)
def test_cut_source(lengths, inputs, dropped, hypothesis_cut, targets_cut):
    ds = tf.data.Dataset.from_tensors(
        {
            "head_tokens": [5, 6],
            "context_tokens": [7, 8, 9, 10],
            "tail_tokens": [11, 12],
            "targets": [3, 4, 2],
        }
    )
    test_utils.assert_dataset(
        explanations.cut_source(ds, sequence_length=lengths, input_length=9),
        {
            "inputs": inputs,
            "targets": [3, 4, 2],
            "context_tokens_dropped": dropped,
            "hypothesis_truncated": hypothesis_cut,
            "targets_truncated": targets_cut,
        },
    )


# ----------------------------------------------------------------------------- predictions


def test_postprocessor_parses_or_says_why_not():
    text = error_analysis.render_analysis(
        [error_analysis.ExplainedError("x", "Fluency", "y", "Minor", 1.5)]
    )
    assert explanations.analysis_postprocessor(text.encode()) == {
        "score": -1.5,
        "num_errors": 1,
        "parse_error": None,
    }
    assert explanations.analysis_postprocessor(text.replace("Minor", "Small"), is_target=True) == {
        "score": None,
        "num_errors": None,
        "parse_error": "error 1: severity 'Small'; expected Major or Minor",
    }


def test_postprocessor_parses_what_t5x_decodes():
    # T5X's predict-mode output of the sample (tests/testdata/t5x_infer, written by T5X's
    # writer): SentencePiece decoded the analyses' line breaks as spaces. Each of the five
    # rows that predict their own analysis gives the target's score and error count.
    infer = TESTDATA.parent / "t5x_infer" / "metricinstruct-predict.jsonl-00000-of-00001"
    records = [json.loads(line) for line in infer.read_text(encoding="utf-8").splitlines()]
    for position in (0, 3, 5, 6, 8):
        prediction = records[position]["prediction"]
        assert "\n" not in prediction
        target = records[position]["inputs"]["targets_pretokenized"]
        parsed = explanations.analysis_postprocessor(prediction)
        assert parsed == explanations.analysis_postprocessor(target, is_target=True)
        assert parsed["parse_error"] is None
        assert parsed["score"] == metric_instruct.load(SAMPLE)[0][position].score


def test_metrics_count_parse_failures_and_compare_scores():
    def analysis(score, n):
        return {"score": score, "num_errors": n, "parse_error": None}

    failed = {"score": None, "num_errors": None, "parse_error": "no first line"}
    targets = [analysis(-4.0, 1), analysis(0.0, 0), analysis(-6.5, 2), analysis(-1.0, 1)]
    predictions = [analysis(-5.0, 1), failed, analysis(-6.5, 3), failed]
    metrics = explanations.analysis_metrics(targets, predictions)
    assert metrics == {
        "parse_failures": 2.0,
        "parse_failure_rate": 0.5,
        "scored": 2.0,
        "score_mae": np.mean([abs(-5.0 + 4.0), abs(-6.5 + 6.5)]),
        "num_errors_accuracy": 0.5,
    }
    none_parsed = explanations.analysis_metrics(targets[:1], [failed])
    assert none_parsed["parse_failures"] == 1.0 and math.isnan(none_parsed["score_mae"])

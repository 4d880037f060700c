"""SEAHORSE SeqIO tasks and mixtures over the joined-split fixtures in testdata/tasks/."""

from __future__ import annotations

import importlib
import json
import pickle
import re

import gin
import numpy as np
import pytest
import seqio
import tasks_testing
from sklearn import metrics as sk_metrics

import seahorse_t5x.tasks  # noqa: F401  (registers the tasks)
from seahorse_t5x import constants, errors
from seahorse_t5x.evaluation import seqio_metrics
from seahorse_t5x.formats import input_format, vocab
from seahorse_t5x.tasks import seahorse

EOS = 1
LENGTHS = {"inputs": 256, "targets": 4}
NAME = re.compile(r"seahorse_(all_)?q([1-6])(_score)?(?:\.([a-z]{2}))?")


@pytest.fixture(scope="module", autouse=True)
def environment(task_vocab_file):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(constants.ENV_DATA_DIR, str(tasks_testing.TESTDATA))
        mp.setenv(constants.ENV_VOCAB, task_vocab_file)
        yield task_vocab_file


@pytest.fixture(scope="module")
def vocabulary(environment):
    return seqio.SentencePieceVocabulary(environment)


def _fixture_rows(split: str) -> list[dict]:
    path = tasks_testing.TESTDATA / f"{split}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _expected_rows(split: str, question: int, language: str | None) -> list[dict]:
    return [
        row
        for row in _fixture_rows(split)
        if row[f"q{question}"] is not None and language in (None, row["language"])
    ]


def _seahorse_names(registry) -> list[str]:
    return [n for n in registry.names() if n.startswith("seahorse")]


# ---------------------------------------------------------------------------------------
# The registry.


def test_names_are_valid_unique_and_counted():
    names = _seahorse_names(seqio.TaskRegistry)
    assert len(names) == 96 == len(set(names))
    assert sorted(names) == sorted(seahorse.task_names())
    assert all(re.fullmatch(r"[\w\d.:_#]+", n) for n in names)
    assert all(NAME.fullmatch(n) for n in names)
    assert sorted(_seahorse_names(seqio.MixtureRegistry)) == ["seahorse_all", "seahorse_all_score"]
    for q in constants.QUESTIONS:
        for lang in constants.LANGUAGES:
            assert f"seahorse_q{q}.{lang}" in names
            assert f"seahorse_q{q}_score.{lang}" in names


def test_importing_twice_registers_nothing_new():
    before = _seahorse_names(seqio.TaskRegistry)
    importlib.import_module("seahorse_t5x.tasks")
    importlib.import_module("seahorse_t5x.tasks.seahorse")
    assert _seahorse_names(seqio.TaskRegistry) == before
    # A second registration under another module path would be an error, not a silent copy.
    with pytest.raises(ValueError, match="seahorse_q1"):
        existing = seqio.get_mixture_or_task("seahorse_q1")
        seqio.TaskRegistry.add(
            "seahorse_q1", source=existing.source, output_features=existing.output_features
        )


def test_every_task_counts_its_labelled_rows_in_every_split():
    # Hand-counted from the fixtures for one task, then every task against the files.
    q4 = seqio.get_mixture_or_task("seahorse_q4")
    assert [q4.num_input_examples(s) for s in constants.SPLITS] == [4, 3, 3]
    assert seqio.get_mixture_or_task("seahorse_q1.ru").num_input_examples("test") == 1
    for name in seahorse.task_names():
        task = seqio.get_mixture_or_task(name)
        assert tuple(task.splits) == constants.SPLITS
        _, q, _, lang = NAME.fullmatch(name).groups()
        for split in constants.SPLITS:
            assert task.num_input_examples(split) == len(_expected_rows(split, int(q), lang)), (
                name,
                split,
            )


def test_score_tasks_have_score_metrics_and_others_predict_metrics():
    for name in seahorse.task_names():
        task = seqio.get_mixture_or_task(name)
        if name.split(".")[0].endswith("_score"):
            assert task.score_metric_fns == [seqio_metrics.score_metrics], name
            assert task.predict_metric_fns == [], name
            # The gold label, not the constant target, is what the metric sees.
            gold = task.postprocess_fn("1", example={"label": np.int64(0)}, is_target=True)
            assert gold == 0
        else:
            assert task.predict_metric_fns == [seqio_metrics.predict_metrics], name
            assert task.score_metric_fns == [], name
            assert task.postprocess_fn("1", example={"label": np.int64(0)}, is_target=True) == 1
            assert task.postprocess_fn("0", example={}, is_target=False) == 0


# ---------------------------------------------------------------------------------------
# Datasets: one of each kind of task through the whole pipeline, decoded.

REPRESENTATIVE = [
    ("seahorse_q4", "train"),
    ("seahorse_q4", "validation"),
    ("seahorse_q4", "test"),
    ("seahorse_all_q6", "validation"),
    ("seahorse_q5_score.de", "validation"),
    ("seahorse_all_q3_score", "train"),
]
# Every task x split through the whole pipeline takes minutes on two cores: opt in with
# `--task-datasets` (conftest.py; the registry and counting tests above cover every task).
EVERY = [
    pytest.param(name, split, marks=pytest.mark.task_datasets)
    for name in seahorse.task_names()
    for split in constants.SPLITS
    if (name, split) not in REPRESENTATIVE
]


@pytest.mark.parametrize("name,split", REPRESENTATIVE + EVERY)
def test_task_dataset_decodes_to_the_fixture_rows(name, split, vocabulary):
    multi, q, score, lang = NAME.fullmatch(name).groups()
    question = int(q)
    task = seqio.get_mixture_or_task(name)
    examples = list(task.get_dataset(LENGTHS, split=split, shuffle=False).as_numpy_iterator())
    rows = _expected_rows(split, question, lang)
    assert len(examples) == len(rows) == task.num_input_examples(split)
    for row, ex in zip(rows, examples, strict=True):
        prompt = constants.QUESTION_PROMPTS[question] if multi else None
        text = input_format.input_text(row["article"], row["summary"], prompt)
        assert ex["inputs"].tolist() == vocabulary.encode(text) + [EOS]
        assert vocabulary.decode(ex["inputs"].tolist()) == tasks_testing.roundtrip(vocabulary, text)
        gold = row[f"q{question}"]
        assert vocabulary.decode(ex["targets"].tolist()) == ("1" if score else str(gold))
        assert ex["label"] == gold
        assert ex["gem_id"].decode() == row["gem_id"]
        assert ex["language"].decode() == row["language"]
        assert ex["system"].decode() == row["system"]
        assert ex["question"] == question
    if score:
        # T5X's score mode: postprocess_fn(target, example=, is_target=True) -> gold label,
        # then the (targets, scores) metric.
        targets = [task.postprocess_fn("1", example=ex, is_target=True) for ex in examples]
        assert targets == [row[f"q{question}"] for row in rows]
        scores = np.linspace(-2.0, -0.1, len(targets))
        if len(set(targets)) == 2:
            result = seqio_metrics.score_metrics(targets, scores)
            assert result["roc_auc"] == pytest.approx(sk_metrics.roc_auc_score(targets, scores))


@pytest.mark.slow
def test_mixture_seahorse_all_rates_and_examples(vocabulary):
    mixture = seqio.get_mixture_or_task("seahorse_all")
    rates = [mixture.get_rate(t) for t in mixture.tasks]
    assert [t.name for t in mixture.tasks] == [f"seahorse_all_q{q}" for q in constants.QUESTIONS]
    assert rates == [float(len(_expected_rows("train", q, None))) for q in constants.QUESTIONS]
    assert rates == [6.0, 5.0, 5.0, 4.0, 5.0, 5.0]
    ds = mixture.get_dataset(LENGTHS, split="train", shuffle=True, seed=7, num_epochs=1)
    examples = list(ds.take(12).as_numpy_iterator())
    assert len(examples) == 12
    texts = {
        input_format.input_text(r["article"], r["summary"], constants.QUESTION_PROMPTS[q])
        for q in constants.QUESTIONS
        for r in _expected_rows("train", q, None)
    }
    for ex in examples:
        assert vocabulary.decode(ex["targets"].tolist()) in ("1", "0")
        decoded = vocabulary.decode(ex["inputs"].tolist())
        assert decoded in {tasks_testing.roundtrip(vocabulary, t) for t in texts}


def test_score_mixture_holds_the_multi_question_score_tasks():
    mixture = seqio.get_mixture_or_task("seahorse_all_score")
    assert [t.name for t in mixture.tasks] == [
        f"seahorse_all_q{q}_score" for q in constants.QUESTIONS
    ]
    assert all(mixture.get_rate(t) == 1.0 for t in mixture.tasks)


# ---------------------------------------------------------------------------------------
# Errors and configuration.


def test_missing_data_dir_and_split_file_are_user_errors(tmp_path, monkeypatch):
    task = seqio.get_mixture_or_task("seahorse_q1")
    monkeypatch.delenv(constants.ENV_DATA_DIR)
    with pytest.raises(errors.UserError, match="SEAHORSE_DATA_DIR"):
        task.get_dataset(LENGTHS, split="train")
    monkeypatch.setenv(constants.ENV_DATA_DIR, str(tmp_path))
    with pytest.raises(errors.UserError, match=r"validation\.jsonl.*seahorse-t5x prepare"):
        task.get_dataset(LENGTHS, split="validation")


def test_malformed_row_is_a_data_error_with_line_and_field(tmp_path, monkeypatch):
    good = (tasks_testing.TESTDATA / "test.jsonl").read_text(encoding="utf-8").splitlines()
    bad = json.loads(good[1])
    bad["q3"] = "Yes"
    (tmp_path / "test.jsonl").write_text(
        "\n".join([good[0], json.dumps(bad), *good[2:]]) + "\n", encoding="utf-8"
    )
    monkeypatch.setenv(constants.ENV_DATA_DIR, str(tmp_path))
    with pytest.raises(errors.DataError, match=r"test\.jsonl:2 field 'q3'") as info:
        seqio.get_mixture_or_task("seahorse_q1").get_dataset(LENGTHS, split="test")
    assert (info.value.line, info.value.field) == (2, "q3")


def test_gin_binds_data_dir_and_vocabulary_after_import(tmp_path, monkeypatch):
    monkeypatch.delenv(constants.ENV_DATA_DIR)
    try:
        gin.parse_config(
            [
                f"seahorse_t5x.tasks.seahorse.data_dir.path = '{tasks_testing.TESTDATA}'",
                "seahorse_t5x.formats.vocab.vocabulary_path.path = '/models/spm.model'",
            ]
        )
        assert seahorse.data_dir() == str(tasks_testing.TESTDATA)
        task_vocab = seqio.get_mixture_or_task("seahorse_q1").output_features["inputs"].vocabulary
        # The tasks were registered long before this binding; their vocabulary follows it.
        assert task_vocab.sentencepiece_model_file == "/models/spm.model"
        assert task_vocab == seqio.SentencePieceVocabulary("/models/spm.model")
    finally:
        gin.clear_config()


def test_gin_vocabulary_binding_reaches_get_vocabulary(monkeypatch):
    # What the trainer's size check and the label ids use must be what the tasks use.
    monkeypatch.setenv(constants.ENV_VOCAB, "/nonexistent/spm.model")
    try:
        gin.parse_config(
            f"seahorse_t5x.formats.vocab.vocabulary_path.path = '{vocab.demo_vocab_path()}'"
        )
        resolved = vocab.get_vocabulary()
        task_vocab = seqio.get_mixture_or_task("seahorse_q1").output_features["inputs"].vocabulary
        assert resolved == task_vocab  # the task's vocabulary resolves while gin binds it
    finally:
        gin.clear_config()
    assert resolved.sentencepiece_model_file == vocab.demo_vocab_path()
    assert resolved == seqio.SentencePieceVocabulary(vocab.demo_vocab_path(), extra_ids=0)
    assert vocab.get_vocabulary("demo") is resolved


def test_task_vocabulary_equals_the_model_vocabulary_for_the_same_path(environment):
    task_vocab = seqio.get_mixture_or_task("seahorse_q4").output_features["targets"].vocabulary
    model_vocab = seqio.SentencePieceVocabulary(environment, extra_ids=0)
    # T5X compares `task_vocab != model_vocab`; both directions must agree.
    assert task_vocab == model_vocab and model_vocab == task_vocab
    assert not task_vocab != model_vocab
    assert task_vocab != seqio.SentencePieceVocabulary(environment, extra_ids=100)
    assert task_vocab != seqio.SentencePieceVocabulary(environment + ".other")
    restored = pickle.loads(pickle.dumps(task_vocab))
    assert type(restored) is seqio.SentencePieceVocabulary and restored == model_vocab
    assert task_vocab.vocab_size == model_vocab.vocab_size


def test_default_vocabulary_is_mt5_exactly_as_t5x_gins_spell_it(monkeypatch):
    monkeypatch.delenv(constants.ENV_VOCAB)
    task_vocab = seqio.get_mixture_or_task("seahorse_q4").output_features["inputs"].vocabulary
    mt5 = seqio.SentencePieceVocabulary(
        "gs://t5-data/vocabs/mc4.250000.100extra/sentencepiece.model", extra_ids=0
    )
    assert task_vocab.sentencepiece_model_file == mt5.sentencepiece_model_file
    assert task_vocab.extra_ids == 0
    assert task_vocab == mt5  # compares state only: nothing is read from GCS


def test_missing_vocabulary_file_is_a_user_error(monkeypatch):
    monkeypatch.setenv(constants.ENV_VOCAB, "/nonexistent/spm.model")
    with pytest.raises(errors.UserError, match="SentencePiece model not found"):
        seqio.get_mixture_or_task("seahorse_q4").get_dataset(LENGTHS, split="test")
    assert vocab.vocabulary_path() == "/nonexistent/spm.model"


def test_gin_switches_registered_tasks_to_the_papers_right_truncation(vocabulary):
    row = _expected_rows("train", 4, None)[0]
    text = input_format.input_text(row["article"], row["summary"])
    length = len(vocabulary.encode(row["summary"])) + 4  # shorter than the joined input
    task = seqio.get_mixture_or_task("seahorse_q4")
    try:
        gin.parse_config("seahorse_t5x.tasks.preprocessors.configured_truncation.mode = 'right'")
        ds = task.get_dataset({"inputs": length, "targets": 4}, split="train", shuffle=False)
        ex = next(ds.as_numpy_iterator())
    finally:
        gin.clear_config()
    assert ex["inputs"].tolist() == vocabulary.encode(text)[: length - 1] + [EOS]
    assert ex["summary_truncated"] == 1
    article_tokens = len(vocabulary.encode(row["article"]))
    kept = min(article_tokens, length - 1 - len(vocabulary.encode("premise:")))
    assert ex["article_tokens_dropped"] == article_tokens - kept

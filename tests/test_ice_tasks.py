"""ICE (in-context evaluator) prompts and SeqIO tasks: sampling, fitting, task features."""

from __future__ import annotations

import collections
import json
import math

import gin
import numpy as np
import pytest
import seqio

import seahorse_t5x.tasks  # noqa: F401  (registers the tasks)
from seahorse_t5x import constants, errors
from seahorse_t5x.formats import ice_format, vocab
from seahorse_t5x.formats.task_names import question_of_task
from seahorse_t5x.scoring import task_examples
from seahorse_t5x.tasks import ice as ice_tasks

EOS = 1
QUESTION = 4
# Training pool per language: (Yes rows, No rows) labelled for Q4.
POOL = {"en": (7, 5), "de": (3, 2)}
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
# Non-ASCII words in the German rows (demonstrations and rated items).
GERMAN_WORDS = "Brücke Straße über Köln grün Fluss".split()


def _text(seed: int, words: int, language: str = "en") -> str:
    vocabulary = WORDS + GERMAN_WORDS if language == "de" else WORDS
    return " ".join(vocabulary[(seed * 5 + i) % len(vocabulary)] for i in range(words))


def _row(gem_id, language, label, article_words, summary_words, seed, system="t5_base"):
    labels = {f"q{q}": None for q in constants.QUESTIONS}
    labels["q1"] = 1
    labels[f"q{QUESTION}"] = label
    return {
        "gem_id": gem_id,
        "language": language,
        "dataset": "xlsum",
        "system": system,
        "summary": _text(seed + 1, summary_words, language),
        "article": _text(seed, article_words, language),
        **labels,
    }


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ice_data")
    train = []
    n = 0
    for language, (yes, no) in POOL.items():
        for label, count in ((1, yes), (0, no)):
            for _ in range(count):
                n += 1
                train.append(
                    _row(f"xlsum_{language}-validation-{n}", language, label, 20 + n, 5, n)
                )
    # A row without a Q4 label never becomes a demonstration.
    train.append(_row("xlsum_en-validation-999", "en", None, 10, 5, 99))
    _write(root / "train.jsonl", train)
    test = [
        _row("xlsum_en-test-1", "en", 1, 30, 6, 201),
        _row("xlsum_en-test-1", "en", 0, 30, 9, 202, system="mt5_small"),
        _row("xlsum_de-test-2", "de", 0, 80, 7, 203),
        _row("xlsum_en-test-3", "en", 1, 700, 12, 204),
        _row("xlsum_en-test-4", "en", None, 10, 5, 205),
    ]
    _write(root / "test.jsonl", test)
    # Validation rows share articles with the training rows (as SEAHORSE's do).
    _write(root / "validation.jsonl", [_row(train[0]["gem_id"], "en", 0, 25, 5, 301)])
    return root


@pytest.fixture(autouse=True)
def environment(data_dir, monkeypatch):
    monkeypatch.setenv(constants.ENV_DATA_DIR, str(data_dir))
    monkeypatch.setenv(constants.ENV_VOCAB, vocab.demo_vocab_path())
    monkeypatch.delenv(ice_format.ENV_ANSWER_WORDS, raising=False)
    gin.clear_config()
    yield
    gin.clear_config()


def _train_labels(data_dir) -> dict[str, int]:
    rows = [json.loads(x) for x in (data_dir / "train.jsonl").read_text().splitlines()]
    return {r["gem_id"]: r[f"q{QUESTION}"] for r in rows}


# --------------------------------------------------------------------------- sampling


def test_stratified_counts_are_exact():
    assert ice_format.stratified_counts(4, 0.5) == (2, 2)
    assert ice_format.stratified_counts(2, 0.5) == (1, 1)
    assert ice_format.stratified_counts(3, 0.5) == (2, 1)
    assert ice_format.stratified_counts(4, 0.25) == (1, 3)
    assert ice_format.stratified_counts(4, 0.0) == (0, 4)
    assert ice_format.stratified_counts(4, 1.0) == (4, 0)


@pytest.mark.parametrize(("shots", "fraction"), [(4, 0.5), (4, 0.25), (3, 0.5), (2, 1.0)])
def test_stratified_draws_hold_the_asked_ratio_for_every_seed(shots, fraction):
    pool = [{"gem_id": f"g{i}", "label": int(i % 3 == 0)} for i in range(30)]
    want_yes, want_no = ice_format.stratified_counts(shots, fraction)
    for seed in range(50):
        drawn = ice_format.sample_demonstrations(
            pool, shots, ice_format.STRATIFIED, np.random.default_rng(seed), fraction
        )
        labels = collections.Counter(d["label"] for d in drawn)
        assert (labels[1], labels[0]) == (want_yes, want_no)
        assert len({d["gem_id"] for d in drawn}) == shots  # without replacement


def test_draws_are_deterministic_per_seed_and_exclude_the_rated_article():
    pool = [{"gem_id": f"g{i % 6}", "label": i % 2, "n": i} for i in range(12)]

    def draw(seed):
        rng = np.random.default_rng(ice_format.item_seed(seed, "task", "g1", "t5_base"))
        return [
            d["n"]
            for d in ice_format.sample_demonstrations(pool, 4, ice_format.UNIFORM, rng, 0.5, "g1")
        ]

    assert draw(0) == draw(0)
    assert draw(7) == draw(7)
    assert any(draw(0) != draw(s) for s in range(1, 6))
    for seed in range(20):
        assert all(pool[n]["gem_id"] != "g1" for n in draw(seed))
    assert (
        ice_format.item_seed(0, "a", "b")
        == ice_format.item_seed(0, "a", "b")
        != ice_format.item_seed(1, "a", "b")
    )


def test_a_pool_too_small_is_a_user_error():
    pool = [{"gem_id": "a", "label": 1}, {"gem_id": "b", "label": 1}, {"gem_id": "c", "label": 0}]
    rng = np.random.default_rng(0)
    with pytest.raises(errors.UserError, match="needs 2 demonstrations rated No"):
        ice_format.sample_demonstrations(pool, 4, ice_format.STRATIFIED, rng)
    with pytest.raises(errors.UserError, match="needs 4 demonstrations"):
        ice_format.sample_demonstrations(pool, 4, ice_format.UNIFORM, rng)
    with pytest.raises(errors.UserError, match="sampling must be one of"):
        ice_format.sample_demonstrations(pool, 1, "random", rng)


# --------------------------------------------------------------------------- fitting


def _fit(budget, demo_articles=((10,) * 6, (11,) * 2), article=(20,) * 5):
    return ice_format.fit_ice_tokens(
        instruction=[1000, 1001],
        article_marker=[7],
        demo_articles=[list(a) for a in demo_articles],
        demo_rests=[[30, 31], [32, 33]],
        article=list(article),
        rest=[40, 41, 42],
        budget=budget,
    )


def test_fit_keeps_everything_when_it_fits():
    tokens, counts = _fit(100)
    assert tokens == [1000, 1001, 7, *[10] * 6, 30, 31, 7, 11, 11, 32, 33, 7, *[20] * 5, 40, 41, 42]
    assert counts == {
        "demo_article_tokens_dropped": 0,
        "article_tokens_dropped": 0,
        "demonstrations_dropped": 0,
        "summary_truncated": 0,
    }


def test_fit_cuts_the_longest_demonstration_article_first():
    # Fixed parts: 2 + 3 * 1 + 2 * 2 + 3 = 12; the rated article (5) fits; 4 tokens remain
    # for the demonstrations' articles (6 and 2): the longer is cut to 2, the shorter kept.
    tokens, counts = _fit(21)
    assert len(tokens) == 21
    assert tokens == [1000, 1001, 7, 10, 10, 30, 31, 7, 11, 11, 32, 33, 7, *[20] * 5, 40, 41, 42]
    assert counts["demo_article_tokens_dropped"] == 4
    assert counts["article_tokens_dropped"] == 0
    # Less room: both demonstration articles at an equal cap before the rated article is cut.
    tokens, counts = _fit(19)
    assert tokens[:9] == [1000, 1001, 7, 10, 30, 31, 7, 11, 32]
    assert counts["demo_article_tokens_dropped"] == 6 and counts["article_tokens_dropped"] == 0


def test_fit_cuts_the_rated_article_then_drops_demonstrations_never_the_summary():
    tokens, counts = _fit(14)
    assert tokens == [1000, 1001, 7, 30, 31, 7, 32, 33, 7, 20, 20, 40, 41, 42]
    assert counts["demo_article_tokens_dropped"] == 8
    assert counts["article_tokens_dropped"] == 3
    tokens, counts = _fit(10)  # the two demonstrations' rests no longer fit: last dropped
    assert tokens == [1000, 1001, 7, 30, 31, 7, 20, 40, 41, 42]
    assert counts["demonstrations_dropped"] == 1 and counts["summary_truncated"] == 0
    assert counts["demo_article_tokens_dropped"] == 8  # the dropped one's article included
    tokens, counts = _fit(6)
    assert tokens == [1000, 1001, 7, 40, 41, 42]
    assert counts["demonstrations_dropped"] == 2 and counts["article_tokens_dropped"] == 5
    tokens, counts = _fit(4)  # instruction dropped before any summary token
    assert tokens == [7, 40, 41, 42] and counts["summary_truncated"] == 0
    tokens, counts = _fit(3)  # only now is the summary cut, and it is reported
    assert tokens == [7, 40, 41] and counts["summary_truncated"] == 1


# --------------------------------------------------------------------------- tasks


def test_registry_names():
    names = [n for n in seqio.TaskRegistry.names() if n.startswith("ice_")]
    assert sorted(names) == sorted(ice_tasks.task_names())
    assert len(names) == 6 * 2 * 2 * 7
    assert "ice_q4_k2_uniform" in names and "ice_q6_k4_stratified.de" in names
    assert question_of_task("ice_q4_k2_uniform.de") == 4


def test_rows_draw_same_language_demonstrations_deterministically(data_dir):
    labels = _train_labels(data_dir)
    first = ice_tasks.ice_rows("test", question=QUESTION, shots=4, mode=ice_format.STRATIFIED)
    again = ice_tasks.ice_rows("test", question=QUESTION, shots=4, mode=ice_format.STRATIFIED)
    assert [r["demo_gem_ids"] for r in first] == [r["demo_gem_ids"] for r in again]
    assert [r["gem_id"] for r in first] == [
        "xlsum_en-test-1",
        "xlsum_en-test-1",
        "xlsum_de-test-2",
        "xlsum_en-test-3",
    ]
    for row in first:
        assert len(row["demo_gem_ids"]) == 4
        assert all(g.startswith(f"xlsum_{row['language']}-") for g in row["demo_gem_ids"])
        assert sorted(labels[g] for g in row["demo_gem_ids"]) == [0, 0, 1, 1]
        assert row["demo_labels"] == [labels[g] for g in row["demo_gem_ids"]]
        for rest, label in zip(row["demo_rests"], row["demo_labels"], strict=True):
            assert rest.endswith("Answer: Yes" if label else "Answer: No")
    # One language's task draws exactly what the all-language task draws for its items.
    german = ice_tasks.ice_rows(
        "test", question=QUESTION, shots=4, mode=ice_format.STRATIFIED, language="de"
    )
    assert [r["demo_gem_ids"] for r in german] == [first[2]["demo_gem_ids"]]
    # Another seed, other draws.
    gin.bind_parameter("seahorse_t5x.formats.ice_format.ice_settings.seed", 3)
    other = ice_tasks.ice_rows("test", question=QUESTION, shots=4, mode=ice_format.STRATIFIED)
    assert [r["demo_gem_ids"] for r in other] != [r["demo_gem_ids"] for r in first]


def test_the_rated_article_is_never_its_own_demonstration(data_dir):
    for seed in range(10):
        gin.bind_parameter("seahorse_t5x.formats.ice_format.ice_settings.seed", seed)
        (row,) = ice_tasks.ice_rows(
            "validation", question=QUESTION, shots=4, mode=ice_format.UNIFORM
        )
        assert row["gem_id"] not in row["demo_gem_ids"]


def test_stratified_draw_beyond_the_pool_names_task_and_language():
    gin.bind_parameter("seahorse_t5x.formats.ice_format.ice_settings.yes_fraction", 1.0)
    with pytest.raises(errors.UserError, match=r"ice_q4_k4_stratified, language de: .* 4 .*Yes"):
        ice_tasks.ice_rows("test", question=QUESTION, shots=4, mode=ice_format.STRATIFIED)


def _examples(name, length, split="test"):
    task = seqio.get_mixture_or_task(name)
    dataset = task.get_dataset(
        {"inputs": length, "targets": 4}, split=split, shuffle=False, use_cached=False
    )
    return list(dataset.as_numpy_iterator())


@pytest.mark.parametrize("length", [2048, 160, 64])
def test_task_inputs_fit_and_end_with_the_whole_rated_summary(length, demo_vocabulary):
    rows = ice_tasks.ice_rows("test", question=QUESTION, shots=4, mode=ice_format.UNIFORM)
    examples = _examples("ice_q4_k4_uniform", length)
    assert len(examples) == len(rows) == 4
    for ex, row in zip(examples, rows, strict=True):
        inputs = ex["inputs"].tolist()
        assert len(inputs) <= length and inputs[-1] == EOS
        rest = demo_vocabulary.encode(row["query_rest"])
        assert inputs[-1 - len(rest) : -1] == rest
        assert row["query_rest"] == f"Summary: {row['hypothesis']} Answer:"
        assert row["hypothesis"] in demo_vocabulary.decode(rest)
        assert ex["summary_truncated"] == 0
        assert ex["targets"].tolist() == demo_vocabulary.encode("Yes") + [EOS]
        assert ex["label"] == row["label"] and ex["question"] == QUESTION
        for field in ("gem_id", "language", "dataset", "system"):
            assert ex[field].decode() == row[field]
        full = demo_vocabulary.encode(ex["inputs_pretokenized"].decode())
        dropped = ex["demo_article_tokens_dropped"] + ex["article_tokens_dropped"]
        if ex["demonstrations_dropped"] == 0:
            # Only article tokens were cut, and exactly as many as reported.
            assert len(inputs) - 1 == len(full) - dropped
        else:
            assert len(inputs) - 1 < len(full) - dropped
        if dropped == 0 and ex["demonstrations_dropped"] == 0:
            assert inputs[:-1] == full  # nothing cut: the whole prompt's tokens
            head = ex["inputs_pretokenized"].decode()[:100]
            assert head.startswith(
                f"{ice_format.QUESTION_TEXTS[QUESTION]} Answer Yes or No. Article"
            )
        if length == 2048:
            assert (dropped == 0) == (row["gem_id"] != "xlsum_en-test-3")
    # The 700-word article of the last item is cut at 2048 only after the demonstrations..
    long_item = _examples("ice_q4_k4_uniform", 2048)[3]
    demo_tokens = sum(len(demo_vocabulary.encode(a)) for a in rows[3]["demo_articles"])
    assert long_item["demo_article_tokens_dropped"] == demo_tokens
    assert long_item["article_tokens_dropped"] > 0
    assert long_item["demonstrations_dropped"] == 0
    if length == 64:
        assert all(ex["demonstrations_dropped"] > 0 for ex in examples)


def test_answer_words_come_from_the_environment(monkeypatch, demo_vocabulary):
    monkeypatch.setenv(ice_format.ENV_ANSWER_WORDS, "Ja,Nein")
    (ex,) = _examples("ice_q4_k2_stratified.de", 1024)
    assert ex["targets"].tolist() == demo_vocabulary.encode("Ja") + [EOS]
    text = ex["inputs_pretokenized"].decode()
    assert "Answer Ja or Nein." in text
    assert text.count("Answer: Ja") == 1 and text.count("Answer: Nein") == 1
    assert text.endswith("Answer:")


def test_evaluate_reads_ice_tasks_as_score_tasks():
    examples = task_examples.load_task_examples("ice_q4_k2_uniform", "test", 128)
    assert examples.question == QUESTION
    assert examples.labels.tolist() == [1.0, 0.0, 0.0, 1.0]
    assert [m["system"] for m in examples.metadata] == [
        "t5_base",
        "mt5_small",
        "t5_base",
        "t5_base",
    ]
    assert all(len(t) <= 128 and t[-1] == EOS for t in examples.tokens)


def test_bad_settings_are_user_errors():
    with pytest.raises(errors.UserError, match="yes_fraction"):
        ice_format.ice_settings(yes_fraction=1.5)
    with pytest.raises(errors.UserError, match="two comma-separated words"):
        ice_format.ice_settings(answer_words="Yes")
    with pytest.raises(errors.UserError, match="the same"):
        ice_format.ice_settings(answer_words=("Yes", "Yes"))


def test_t5x_infer_output_of_an_ice_task_becomes_a_score_file(data_dir, tmp_path):
    from seahorse_t5x import cli
    from seahorse_t5x.data import scorefiles
    from seahorse_t5x.scoring import t5x_scores

    examples = _examples("ice_q4_k2_uniform", 2048)
    # What t5x/infer.py writes in score mode with the ICE gins' LabelScoringModel: the
    # pretokenized features, log P(yes word) and, as aux value, log P(no word).
    records = [
        {
            "inputs": {
                "inputs_pretokenized": ex["inputs_pretokenized"].decode(),
                "targets_pretokenized": ex["targets_pretokenized"].decode(),
            },
            "score": -0.25 * (i + 1),
            "aux": {"log_p_no": math.log1p(-math.exp(-0.25 * (i + 1)))},
        }
        for i, ex in enumerate(examples)
    ]
    infer = tmp_path / "ice_q4_k2_uniform-score.jsonl-00000-of-00001"
    infer.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "ice.jsonl"
    args = ["t5x-scores", "--infer_output", str(infer), "--task", "ice_q4_k2_uniform"]
    args += ["--data_dir", str(data_dir), "--metric", "flan_ice", "--output", str(out)]
    assert cli.main(args) == 0
    frame = scorefiles.read_score_file(out)
    assert frame["label"].tolist() == [float(ex["label"]) for ex in examples]
    # P(yes word) = exp(log P(yes word)), as `evaluate` scores the ICE task.
    assert frame["score"].tolist() == pytest.approx(np.exp([-0.25, -0.5, -0.75, -1.0]))
    assert frame["system"].tolist() == [ex["system"].decode() for ex in examples]
    assert set(frame["question"]) == {"4"}

    # The same records under a SEAHORSE score task's name: not its target, refused at line 1.
    with pytest.raises(errors.DataError, match=r"-score.jsonl-00000-of-00001:1 field") as info:
        t5x_scores.convert([str(infer)], "seahorse_q4_score", str(data_dir), "test", "m")
    assert "expected the constant target '1' of a score task, got 'Yes'" in str(info.value)
    infer.write_text("".join(json.dumps(r) + "\n" for r in reversed(records)))
    with pytest.raises(errors.DataError, match="not in the same order"):
        t5x_scores.convert([str(infer)], "ice_q4_k2_uniform", str(data_dir), "test", "m")
    with pytest.raises(errors.UserError, match="ice_q4_k2_uniform has the splits validation, test"):
        t5x_scores.convert([str(infer)], "ice_q4_k2_uniform", str(data_dir), "train", "m")


def test_preprocessors_on_tiny_datasets(demo_vocabulary):
    import tensorflow as tf

    labels = tf.data.Dataset.from_tensors({"label": tf.constant(0, tf.int64)})
    seqio.test_utils.assert_dataset(
        ice_tasks.yes_word_targets(labels), [{"label": 0, "targets_pretokenized": b"Yes"}]
    )
    marker = demo_vocabulary.encode(ice_format.ARTICLE_MARKER)
    parts = tf.data.Dataset.from_tensors(
        {
            "instruction_tokens": tf.constant([1000], tf.int32),
            "demo_article_tokens": tf.ragged.constant([[10, 10, 10]], tf.int32),
            "demo_rest_tokens": tf.ragged.constant([[30]], tf.int32),
            "premise_tokens": tf.constant([20, 20], tf.int32),
            "query_rest_tokens": tf.constant([40], tf.int32),
            "label": tf.constant(1, tf.int64),
        }
    )
    features = {"inputs": seqio.Feature(demo_vocabulary), "targets": seqio.Feature(demo_vocabulary)}
    budget = 1 + 2 * len(marker) + 1 + 2 + 1 + 1  # all but two demonstration-article tokens
    fitted = ice_tasks.fit_ice_inputs(parts, {"inputs": budget + 1}, features)
    seqio.test_utils.assert_dataset(
        fitted,
        [
            {
                "inputs": [1000, *marker, 10, 30, *marker, 20, 20, 40],
                "label": 1,
                "demo_article_tokens_dropped": 2,
                "article_tokens_dropped": 0,
                "demonstrations_dropped": 0,
                "summary_truncated": 0,
            }
        ],
    )

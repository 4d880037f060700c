"""Task names: every registered name parses back to what built it, and nothing else parses.

SEAHORSE/ICE names are `formats.task_names`', the benchmarks' come from their registry
entries, rating sets' from `data.ratings`, and `evaluation.task_rows` says whose rows a
score task's are."""

from __future__ import annotations

import pytest

from seahorse_t5x import constants, errors
from seahorse_t5x.data import ratings
from seahorse_t5x.data.benchmarks import metal, mface, registry, true
from seahorse_t5x.evaluation import task_rows
from seahorse_t5x.formats import task_names


def test_seahorse_names_round_trip():
    built = [
        task_names.SeahorseTask(q, language, score, multi)
        for q in constants.QUESTIONS
        for language in (None, *constants.LANGUAGES)
        for score in (False, True)
        for multi in (False, True)
    ]
    assert len({t.name for t in built}) == 6 * 7 * 2 * 2
    for task in built:
        assert task_names.parse_seahorse_task(task.name) == task
    assert task_names.seahorse_task(4, language="de", score=True) == "seahorse_q4_score.de"
    assert task_names.seahorse_task(6, multi_question=True) == "seahorse_all_q6"


def test_ice_names_round_trip():
    task = task_names.IceTask(question=5, shots=4, mode="stratified", language="vi")
    assert task.name == "ice_q5_k4_stratified.vi"
    assert task_names.parse_ice_task(task.name) == task
    assert task_names.parse_ice_task("ice_q2_k2_uniform") == task_names.IceTask(2, 2, "uniform")


def test_benchmark_names():
    assert mface.task_name("attribution") == "mface_attribution"
    assert mface.task_name("attribution", five_languages=True) == "mface_attribution_5lang"
    assert true.task_name("frank") == "true_frank"
    assert metal.task_name("task_quality") == "metal_task_quality"
    assert metal.task_name("task_quality", "hi") == "metal_task_quality.hi"
    assert registry.score_task("frank", "factuality", "bbc") == "frank_factuality_score.bbc"


def test_benchmark_names_parse_back_to_their_benchmark_and_question():
    for dimension in mface.MFACE_DIMENSIONS:
        for five in (False, True):
            name = mface.task_name(dimension, five_languages=five)
            assert registry.benchmark_of_task(name) == ("mface", dimension)
    for dataset in true.TRUE_DATASETS:
        assert registry.benchmark_of_task(true.task_name(dataset)) == ("true", 4)
    for metric in metal.METAL_METRICS:
        for language in (None, *metal.METAL_LANGUAGES):
            name = metal.task_name(metric, language)
            assert registry.benchmark_of_task(name) == ("metal", metric)
    # Every registered benchmark's task names parse back to it.
    for benchmark in registry.benchmarks():
        names = benchmark.task_names()
        assert names, benchmark.name
        for name in names:
            assert registry.benchmark_of_task(name)[0] == benchmark.name, name
    for other in ("mface_fluency", "true_nope", "metal_nope.de", "seahorse_q4_score", "mface"):
        assert registry.benchmark_of_task(other) is None


def test_benchmark_of_task_names_the_rows_of_every_kind_of_task():
    sets = {"chat": ("polite",)}
    cases = {
        "mface_quality_5lang": ("mface", "quality"),
        "true_summeval": ("true", 4),
        "metal_task_quality.de": ("metal", "task_quality"),
        "chat_polite_score.de": ("chat", "polite"),
        "chat_all": ("chat", None),
        "chat_rude_score": ("seahorse", None),  # not a question of the set
        "seahorse_all_q4_score": ("seahorse", None),
        "ice_q4_k2_uniform.de": ("seahorse", None),
    }
    for name, expected in cases.items():
        assert task_rows.benchmark_of_task(name, sets) == expected, name
    assert task_rows.benchmark_of_task("chat_polite_score", {}) == ("seahorse", None)


@pytest.mark.parametrize(
    "name",
    [
        "seahorse_q7",
        "seahorse_q4_scores",
        "seahorse_q4.deu",
        "seahorse_all",
        "xseahorse_q4",
        "ice_q4_k2_uniform",
        "mface_attribution",
    ],
)
def test_other_names_are_not_seahorse_tasks(name):
    assert task_names.parse_seahorse_task(name) is None


@pytest.mark.parametrize("name", ["ice_q0_k2_uniform", "ice_q4_kx_uniform", "seahorse_q4_score"])
def test_other_names_are_not_ice_tasks(name):
    assert task_names.parse_ice_task(name) is None


def test_rating_names_round_trip_with_the_registered_sets():
    sets = {"chat": ("polite", "formal"), "chat_x": ("polite",)}
    built = [
        ratings.RatingTask("chat", q, language, score, False)
        for q in ("polite", "formal")
        for language in (None, "de", "pt_br")
        for score in (False, True)
    ]
    built += [ratings.RatingTask("chat", "polite", None, s, True) for s in (False, True)]
    built += [ratings.RatingTask("chat", None, None, s, True) for s in (False, True)]
    built += [ratings.RatingTask("chat_x", "polite", "en", score=True)]
    assert [t.name for t in built[-5:]] == [
        "chat_all_polite",
        "chat_all_polite_score",
        "chat_all",
        "chat_all_score",
        "chat_x_polite_score.en",
    ]
    for task in built:
        parsed = ratings.parse_rating_task(task.name, sets)
        assert (parsed.benchmark, parsed.question) == (task.benchmark, task.question), task
        assert parsed == task
        # With the set names only (no questions), the longer set name wins.
        assert ratings.parse_rating_task(task.name, list(sets)) == parsed
    assert ratings.rating_task_names("chat", ["polite"], ["de"]) == [
        "chat_polite",
        "chat_polite.de",
        "chat_all_polite",
        "chat_polite_score",
        "chat_polite_score.de",
        "chat_all_polite_score",
    ]


@pytest.mark.parametrize(
    "name",
    [
        "chat_rude",  # not a question of the set
        "chat_polite.EN",
        "chat_all_polite.de",  # multi-question tasks have no language variants
        "chat_all.de",
        "chatter_polite",
        "seahorse_q4_score",
        "chat_polite_score_score",
    ],
)
def test_other_names_are_not_rating_tasks(name):
    assert ratings.parse_rating_task(name, {"chat": ("polite",)}) is None


def test_rating_names_are_checked():
    assert ratings.check_rating_names("chat", ["polite"], ["en"]) == (
        "chat",
        ("polite",),
        ("en",),
    )
    for name, questions, message in (
        ("chat", ["score"], "question 'score'"),
        ("chat", ["all_polite"], "question 'all_polite'"),
        ("metal", ["polite"], "'metal' is the project's own"),
        ("2chat", ["polite"], "rating set name '2chat'"),
        ("chat", ["id"], "question 'id'"),
    ):
        with pytest.raises(errors.UserError, match=message):
            ratings.check_rating_names(name, questions)


def test_reserved_rating_set_names_are_the_task_families_and_every_benchmark():
    assert ratings.reserved_names() == {
        "seahorse",
        "ice",
        "xnli",
        "nli",
        "aggrefact",
        "frank",
        "llm_aggrefact",
        "metal",
        "mface",
        "mface_5lang",
        "summeval",
        "true",
    }
    assert ratings.ROW_FIELDS == {
        "article",
        "summary",
        "language",
        "system",
        "dataset",
        "gem_id",
        "id",
    }

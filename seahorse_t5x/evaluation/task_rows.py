"""Which benchmark and question a score task's rows belong to in score files.

A registered benchmark's task names come from its registry entry
(`data.benchmarks.registry`), a rating set's from `data.ratings`; every other task
(SEAHORSE, ICE) scores SEAHORSE rows, whose question each example carries.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from seahorse_t5x import constants
from seahorse_t5x.data import ratings
from seahorse_t5x.data.benchmarks import registry


def benchmark_of_task(
    name: str, rating_sets: Mapping[str, Collection[str]] | Collection[str]
) -> tuple[str, str | int | None]:
    """(benchmark, question) that a score task's rows belong to in score files.

    `mface_attribution_5lang` -> ("mface", "attribution"), `true_frank` -> ("true", 4),
    `frank_factuality_score.bbc` -> ("frank", "factuality") (`registry.benchmark_of_task`);
    a rating set's task -> (its name, its question): `chat_polite_score.de` ->
    ("chat", "polite"); any other name (SEAHORSE, ICE) -> (`constants.SEAHORSE_BENCHMARK`,
    None): its question comes from the task's examples.

    Args:
      rating_sets: the registered rating sets, as `ratings.parse_rating_task` takes them
        (`ratings.rating_questions()`).
    """
    parsed = registry.benchmark_of_task(name)
    if parsed is not None:
        return parsed
    rating = ratings.parse_rating_task(name, rating_sets)
    if rating is not None:
        return rating.benchmark, rating.question
    return constants.SEAHORSE_BENCHMARK, None

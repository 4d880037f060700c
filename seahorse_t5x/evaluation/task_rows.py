"""A score task's rows in score files: which benchmark and question they belong to, and the
rows themselves (`score_rows`, through the one row builder `scorefiles.score_row`).

A registered benchmark's task names come from its registry entry
(`data.benchmarks.registry`), a rating set's from `data.ratings`; every other task
(SEAHORSE, ICE) scores SEAHORSE rows, whose question each example carries.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from seahorse_t5x import constants
from seahorse_t5x.data import ratings, scorefiles
from seahorse_t5x.data.benchmarks import registry

# Carried into the score file after the slice fields (`constants.SLICE_FIELDS`) where a
# benchmark's tasks have them (`data.benchmarks.registry` row_fields), and not empty: the
# split and AggreFact's origin, which its protocol reads.
OPTIONAL_FIELDS = ("split", "origin")


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


def score_rows(examples: Any, scores: Sequence[float], metric: str) -> list[dict]:
    """Score-file rows (docs/architecture.md contract) for one task's examples
    (`scoring.task_examples.TaskExamples`: its `task_name`, `question`, `labels` and
    `metadata`), under the benchmark and question the task belongs to (`benchmark_of_task`,
    with the rating sets registered now).

    The rows of a rating set's task also say `"label_kind": "binary"` (their labels are the
    integers 0/1, as `report` checks) and leave out the slice fields its rows lack (an empty
    `language` is no language).
    """
    benchmark, question = benchmark_of_task(examples.task_name, ratings.rating_questions())
    rating = ratings.is_rating_benchmark(benchmark)
    if question is None:
        question = examples.question if examples.question is not None else examples.task_name
    rows = []
    for label, score, meta in zip(examples.labels, scores, examples.metadata, strict=True):
        kept = {k: v for k, v in meta.items() if v != ""} if rating else meta
        rows.append(
            scorefiles.score_row(
                metric=metric,
                benchmark=benchmark,
                question=question,
                label=int(label) if float(label).is_integer() else float(label),
                score=float(score),
                label_kind=scorefiles.LABEL_KIND_BINARY if rating else None,
                slices=kept,
                extra={k: kept[k] for k in OPTIONAL_FIELDS if k in kept},
            )
        )
    return rows

"""How the report is computed: `ReportSettings`, shared by the report's statistics, its
teacher agreement and the benchmark protocols (all written into report.json)."""

from __future__ import annotations

import dataclasses

from seahorse_t5x.evaluation import explanation_report

DEFAULT_BY: tuple[str, ...] = ("language", "dataset", "system")


@dataclasses.dataclass
class ReportSettings:
    """How the report is computed (all written into report.json)."""

    by: tuple[str, ...] = DEFAULT_BY
    n_resamples: int = 1000
    seed: int = 0
    baseline: str | None = None
    plots: bool = True
    drop_duplicates: bool = False
    # Only these benchmarks' rows (empty: all); with a path, the benchmark's reader runs
    # too and its section says how many of its items each metric scored.
    benchmarks: tuple[str, ...] = ()
    benchmark_paths: dict[str, str | None] = dataclasses.field(default_factory=dict)
    # A metric whose scores the others (its students) are compared with, row by row.
    teacher: str | None = None
    # Items listed per metric and question where an explainable metric's score and the
    # label disagree most (explanation_report.disagreements; 0: none).
    disagreements: int = explanation_report.DEFAULT_DISAGREEMENTS

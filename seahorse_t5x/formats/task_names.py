"""The SEAHORSE and ICE task-name grammar, built and parsed in one place (no TensorFlow).

The task modules register these names (`seahorse_t5x.tasks`, docs/tasks.md); the T5X
converters (`t5x-scores`, `t5x-explanations`) parse them back to learn which rows of a file
a task read:

  seahorse_q{n}[_score][.{lang}]      one question; `_score`: T5X score mode
  seahorse_all_q{n}[_score]           the multi-question input
  ice_q{n}_k{K}_{mode}[.{lang}]       in-context evaluator prompts (K demonstrations)
  {set}[.{task type}], {set}_all      an explanation set's tasks (MetricInstruct rows, of
                                      one task type) and their mixture; `metricinstruct`
                                      is the default set (`seahorse_t5x.tasks.explanations`)

A language suffix (`.de`) restricts a task to one language's rows. The `_score` suffix
marks a T5X score-mode task (constant target `1`, gold label in `label`); the trainer's
validation finds a training task's score task by adding it (`seahorse_q4.de` ->
`seahorse_q4_score.de`). The outside benchmarks name their tasks in their registry entries
(`data.benchmarks.registry`), a user's rating sets in `data.ratings`.
"""

from __future__ import annotations

import dataclasses
import re

from seahorse_t5x import constants
from seahorse_t5x.formats import error_analysis

SCORE_SUFFIX = "_score"
# The multi-question mixtures: one model for all six questions, each input naming its own.
SEAHORSE_MIXTURES = (
    f"{constants.SEAHORSE_BENCHMARK}_all",
    f"{constants.SEAHORSE_BENCHMARK}_all_score",
)
ICE_PREFIX = "ice"
# The explanation sets: names are lowercase identifiers; `{set}_all` mixes the typed tasks.
EXPLANATION_MIXTURE_SUFFIX = "_all"
_EXPLANATION_SET = re.compile(r"[a-z][a-z0-9_]*")
# The multi-question part of SEAHORSE and rating-set names (`seahorse_all`, `polite_all_x`).
ALL = "all"
_SEAHORSE = re.compile(
    rf"{constants.SEAHORSE_BENCHMARK}_(?P<all>all_)?q(?P<question>[1-6])(?P<score>{SCORE_SUFFIX})?"
    r"(?:\.(?P<language>[a-z]{2}))?"
)
_ICE = re.compile(
    rf"{ICE_PREFIX}_q(?P<question>[1-6])_k(?P<shots>\d+)_(?P<mode>[a-z]+)"
    r"(?:\.(?P<language>[a-z]{2}))?"
)


@dataclasses.dataclass(frozen=True)
class SeahorseTask:
    """What a SEAHORSE task name says: question, language, score mode, multi-question input."""

    question: int
    language: str | None = None
    score: bool = False
    multi_question: bool = False

    @property
    def name(self) -> str:
        return seahorse_task(
            self.question,
            language=self.language,
            score=self.score,
            multi_question=self.multi_question,
        )


@dataclasses.dataclass(frozen=True)
class IceTask:
    """What an ICE task name says: question, demonstrations, sampling mode, language."""

    question: int
    shots: int
    mode: str
    language: str | None = None

    @property
    def name(self) -> str:
        return ice_task(self.question, self.shots, self.mode, self.language)


def with_language(name: str, language: str | None) -> str:
    """`name.{language}`, or `name` when language is None."""
    return name if language is None else f"{name}.{language}"


def seahorse_task(
    question: int,
    *,
    language: str | None = None,
    score: bool = False,
    multi_question: bool = False,
) -> str:
    """A SEAHORSE task name.

    >>> seahorse_task(4, language="de", score=True)
    'seahorse_q4_score.de'
    >>> seahorse_task(6, multi_question=True)
    'seahorse_all_q6'
    """
    all_part = "all_" if multi_question else ""
    name = f"{constants.SEAHORSE_BENCHMARK}_{all_part}q{question}"
    return with_language(name + (SCORE_SUFFIX if score else ""), language)


def ice_task(question: int, shots: int, mode: str, language: str | None = None) -> str:
    """An ICE task name: `ice_task(4, 2, "uniform", "de")` -> `ice_q4_k2_uniform.de`."""
    return with_language(f"{ICE_PREFIX}_q{question}_k{shots}_{mode}", language)


def parse_seahorse_task(name: str) -> SeahorseTask | None:
    """The parts of a SEAHORSE task name, or None for any other name (languages unchecked).

    >>> parse_seahorse_task("seahorse_all_q4_score")
    SeahorseTask(question=4, language=None, score=True, multi_question=True)
    """
    match = _SEAHORSE.fullmatch(name)
    if not match:
        return None
    return SeahorseTask(
        question=int(match["question"]),
        language=match["language"],
        score=match["score"] is not None,
        multi_question=match["all"] is not None,
    )


def names_the_question(name: str) -> bool | None:
    """Whether a SEAHORSE task or mixture's inputs name the question (the multi-question
    ones: `seahorse_all_q4`, `seahorse_all`); None for other names.

    >>> names_the_question("seahorse_all"), names_the_question("seahorse_q4_score.de")
    (True, False)
    """
    if name in SEAHORSE_MIXTURES:
        return True
    task = parse_seahorse_task(name)
    return None if task is None else task.multi_question


def parse_ice_task(name: str) -> IceTask | None:
    """The parts of an ICE task name, or None for any other name (mode and language unchecked).

    >>> parse_ice_task("ice_q4_k2_uniform.de")
    IceTask(question=4, shots=2, mode='uniform', language='de')
    """
    match = _ICE.fullmatch(name)
    if not match:
        return None
    return IceTask(
        question=int(match["question"]),
        shots=int(match["shots"]),
        mode=match["mode"],
        language=match["language"],
    )


def question_of_task(name: str) -> int | None:
    """The SEAHORSE question a SEAHORSE or ICE task name asks, else None.

    >>> question_of_task("seahorse_all_q4_score.de")
    4
    """
    parsed = parse_seahorse_task(name) or parse_ice_task(name)
    return None if parsed is None else parsed.question


def task_type_suffix(task_type: str) -> str:
    """A MetricInstruct task type as a task-name suffix.

    >>> task_type_suffix("long-form QA")
    'long_form_qa'
    """
    return re.sub(r"[^a-z0-9]+", "_", task_type.lower()).strip("_")


def explanation_task(name: str, task_type: str | None = None) -> str:
    """An explanation set's task: `{name}` (every row) or `{name}.{task type}`.

    >>> explanation_task("metricinstruct", "long-form QA")
    'metricinstruct.long_form_qa'
    """
    return name if task_type is None else f"{name}.{task_type_suffix(task_type)}"


def explanation_mixture(name: str) -> str:
    """An explanation set's mixture of its task-type tasks: `metricinstruct_all`."""
    return name + EXPLANATION_MIXTURE_SUFFIX


def is_explanation_set_name(name: str) -> bool:
    """Whether `name` can name an explanation set (a lowercase identifier)."""
    return isinstance(name, str) and _EXPLANATION_SET.fullmatch(name) is not None


@dataclasses.dataclass(frozen=True)
class ExplanationTask:
    """What an explanation task name says: its set and task type (None: every row)."""

    set_name: str
    task_type: str | None = None

    @property
    def name(self) -> str:
        return explanation_task(self.set_name, self.task_type)


def parse_explanation_task(name: str) -> ExplanationTask | None:
    """The set and task type of an explanation task name, or None when it cannot be one
    (the suffix after `.` is none of `error_analysis.TASK_TYPES`' suffixes).

    >>> parse_explanation_task("metricinstruct.long_form_qa")
    ExplanationTask(set_name='metricinstruct', task_type='long-form QA')
    """
    set_name, dot, suffix = name.partition(".")
    if not is_explanation_set_name(set_name):
        return None
    if not dot:
        return ExplanationTask(set_name)
    types = {task_type_suffix(t): t for t in error_analysis.TASK_TYPES}
    return ExplanationTask(set_name, types[suffix]) if suffix in types else None

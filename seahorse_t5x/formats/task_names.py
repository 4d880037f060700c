"""The names of the SeqIO tasks, built and parsed in one place (no TensorFlow here).

The task modules register these names (`seahorse_t5x.tasks`, docs/tasks.md); the T5X
score converter (`t5x-scores`) parses them back to learn which rows of a split file a task
read:

  seahorse_q{n}[_score][.{lang}]      one question; `_score`: T5X score mode
  seahorse_all_q{n}[_score]           the multi-question input
  ice_q{n}_k{K}_{mode}[.{lang}]       in-context evaluator prompts (K demonstrations)
  mface_{dimension}[_5lang], true_{dataset}, metal_{metric}[.{lang}]   outside benchmarks
  {benchmark}_{dimension}_score[.{dataset}]   other registered benchmarks (SummEval, ...)
  {set}_{question}[_score][.{lang}]   a user's rating set (`tasks.register_rating_tasks`)
  {set}_all_{question}[_score]        its multi-question input; {set}_all[_score]: mixtures

A language suffix (`.de`) restricts a task to one language's rows. The `_score` suffix
marks a T5X score-mode task (constant target `1`, gold label in `label`); the trainer's
validation finds a training task's score task by adding it (`{set}_polite` ->
`{set}_polite_score`, `seahorse_q4.de` -> `seahorse_q4_score.de`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable, Mapping

from seahorse_t5x import constants, errors

SCORE_SUFFIX = "_score"
# The multi-question mixtures: one model for all six questions, each input naming its own.
SEAHORSE_MIXTURES = (
    f"{constants.SEAHORSE_BENCHMARK}_all",
    f"{constants.SEAHORSE_BENCHMARK}_all_score",
)
ICE_PREFIX = "ice"
# The multi-question part of SEAHORSE and rating-set names (`seahorse_all`, `polite_all_x`).
ALL = "all"
# Names a rating set may not take: the project's own benchmarks and task families.
RESERVED_RATING_SET_NAMES: frozenset[str] = frozenset(
    {
        constants.SEAHORSE_BENCHMARK,
        "mface",
        "mface_5lang",
        "true",
        "metal",
        ICE_PREFIX,
        "xnli",
        "nli",
        "summeval",
        "frank",
        "aggrefact",
        "llm_aggrefact",
    }
)
# Fields of a rating row that are not questions (data/ratings.py reads them).
RATING_ROW_FIELDS: frozenset[str] = frozenset(
    {"article", "summary", "language", "system", "dataset", "gem_id", "id"}
)
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
# `q4` would read as SEAHORSE's question 4 in score files and reports.
_NUMBERED_QUESTION = re.compile(r"q\d+")

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


def _with_language(name: str, language: str | None) -> str:
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
    return _with_language(name + (SCORE_SUFFIX if score else ""), language)


def ice_task(question: int, shots: int, mode: str, language: str | None = None) -> str:
    """An ICE task name: `ice_task(4, 2, "uniform", "de")` -> `ice_q4_k2_uniform.de`."""
    return _with_language(f"{ICE_PREFIX}_q{question}_k{shots}_{mode}", language)


def mface_task(dimension: str, five_languages: bool = False) -> str:
    """`mface_attribution`, or `mface_attribution_5lang` for SEAHORSE's five XL-Sum languages."""
    return f"mface_{dimension}" + ("_5lang" if five_languages else "")


def true_task(dataset: str) -> str:
    """`true_frank` for TRUE's FRANK."""
    return f"true_{dataset}"


def metal_task(metric: str, language: str | None = None) -> str:
    """`metal_task_quality`, or `metal_task_quality.hi` for one language."""
    return _with_language(f"metal_{metric}", language)


def benchmark_score_task(benchmark: str, dimension: str, dataset: str | None = None) -> str:
    """A registered benchmark's score task: `benchmark_score_task("frank", "factuality",
    "bbc")` -> `frank_factuality_score.bbc`."""
    return _with_language(f"{benchmark}_{dimension}{SCORE_SUFFIX}", dataset)


def parse_benchmark_task(name: str) -> tuple[str, str | int] | None:
    """(benchmark, question) of an mFACE, TRUE or METAL task name (any language suffix),
    else None: the question is mFACE's dimension, TRUE's SEAHORSE question (4), METAL's
    metric.

    >>> parse_benchmark_task("mface_attribution_5lang"), parse_benchmark_task("true_frank")
    (('mface', 'attribution'), ('true', 4))
    >>> parse_benchmark_task("metal_task_quality.de")
    ('metal', 'task_quality')
    """
    # The benchmarks' dimensions, datasets and metrics are their readers'.
    from seahorse_t5x.data import benchmarks

    base = name.split(".")[0]
    for dimension in benchmarks.MFACE_DIMENSIONS:
        if base in (mface_task(dimension), mface_task(dimension, five_languages=True)):
            return "mface", dimension
    if base in {true_task(dataset) for dataset in benchmarks.TRUE_DATASETS}:
        return "true", benchmarks.TRUE_QUESTION
    for metric in benchmarks.METAL_METRICS:
        if base == metal_task(metric):
            return benchmarks.METAL_BENCHMARK, metric
    from seahorse_t5x.data.benchmarks import registry

    for benchmark in registry.names():
        for dimension in registry.get(benchmark).dimensions:
            if base == benchmark_score_task(benchmark, dimension):
                return benchmark, dimension
    return None


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


# ----------------------------------------------------------------------------- rating sets


@dataclasses.dataclass(frozen=True)
class RatingTask:
    """What a rating-set task or mixture name says (`question` None: the `_all` mixtures)."""

    benchmark: str
    question: str | None
    language: str | None = None
    score: bool = False
    multi_question: bool = False

    @property
    def name(self) -> str:
        if self.question is None:
            return rating_mixture(self.benchmark, score=self.score)
        return rating_task(
            self.benchmark,
            self.question,
            language=self.language,
            score=self.score,
            multi_question=self.multi_question,
        )


def rating_task(
    benchmark: str,
    question: str,
    *,
    language: str | None = None,
    score: bool = False,
    multi_question: bool = False,
) -> str:
    """A rating-set task name.

    >>> rating_task("chat", "polite", language="de", score=True)
    'chat_polite_score.de'
    >>> rating_task("chat", "polite", multi_question=True)
    'chat_all_polite'
    """
    all_part = f"{ALL}_" if multi_question else ""
    name = f"{benchmark}_{all_part}{question}" + (SCORE_SUFFIX if score else "")
    return _with_language(name, language)


def rating_mixture(benchmark: str, score: bool = False) -> str:
    """`chat_all` (training, multi-question input) or `chat_all_score` (its score tasks)."""
    return f"{benchmark}_{ALL}" + (SCORE_SUFFIX if score else "")


def is_identifier(value: object) -> bool:
    """Whether `value` may be part of a rating-set name: a lowercase identifier (`polite`)."""
    return isinstance(value, str) and _IDENTIFIER.fullmatch(value) is not None


def _check_identifier(value: object, what: str) -> str:
    if not is_identifier(value):
        raise errors.UserError(
            f"{what} {value!r}: expected a lowercase identifier (a letter, then letters, "
            "digits or _), e.g. 'polite'"
        )
    return value


def check_rating_names(
    name: object, questions: object, languages: Iterable[object] = ()
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Checks the parts of a rating set's task names; returns them as (name, questions,
    languages) tuples.

    A name, question or language is a lowercase identifier. The name is none of the
    project's own (`RESERVED_RATING_SET_NAMES`). A question is not `all` or `score`, does not
    start with `all_` or end with `_score` (each would make two names the same), is not
    `q4`-like (score files read that as a SEAHORSE question) and is not a row field
    (`article`, `summary`, `language`, `system`, `dataset`, `gem_id`, `id`).

    Raises:
      UserError: naming the value that is wrong and what was expected.
    """
    _check_identifier(name, "rating set name")
    # Every registered benchmark's name is taken too (a module added to data/benchmarks/).
    from seahorse_t5x.data.benchmarks import registry

    reserved = RESERVED_RATING_SET_NAMES | set(registry.names())
    if name in reserved:
        raise errors.UserError(
            f"rating set name {name!r} is the project's own; choose another "
            f"(reserved: {', '.join(sorted(reserved))})"
        )
    if isinstance(questions, str) or not isinstance(questions, Iterable):
        raise errors.UserError(
            f"questions: expected a list of question names such as ['polite'], got {questions!r}"
        )
    questions = tuple(questions)
    if not questions:
        raise errors.UserError("questions: expected at least one question name, got none")
    for question in questions:
        _check_identifier(question, "question")
        if (
            question in (ALL, SCORE_SUFFIX[1:])
            or question.startswith(f"{ALL}_")
            or question.endswith(SCORE_SUFFIX)
            or _NUMBERED_QUESTION.fullmatch(question)
            or question in RATING_ROW_FIELDS
        ):
            raise errors.UserError(
                f"question {question!r}: expected a name that is not 'all' or 'score', does "
                f"not start with 'all_' or end with '{SCORE_SUFFIX}', is not like 'q4' and is not a row "
                f"field ({', '.join(sorted(RATING_ROW_FIELDS))})"
            )
    repeated = sorted({q for q in questions if questions.count(q) > 1})
    if repeated:
        raise errors.UserError(f"questions: {', '.join(repeated)} given more than once")
    languages = tuple(languages)
    for language in languages:
        _check_identifier(language, "language")
    return name, questions, languages


def rating_task_names(
    benchmark: str, questions: Iterable[str], languages: Iterable[str] = ()
) -> list[str]:
    """Every task name of a rating set, in registration order (its mixtures not included):
    per question, training then score mode, each as all rows, one per language, and the
    multi-question input.

    >>> rating_task_names("chat", ["polite"], ["de"])[:3]
    ['chat_polite', 'chat_polite.de', 'chat_all_polite']
    """
    languages = tuple(languages)
    names = []
    for question in questions:
        for score in (False, True):
            names.append(rating_task(benchmark, question, score=score))
            names.extend(
                rating_task(benchmark, question, language=lang, score=score) for lang in languages
            )
            names.append(rating_task(benchmark, question, score=score, multi_question=True))
    return names


def parse_rating_task(
    name: str, rating_sets: Mapping[str, Collection[str]] | Collection[str]
) -> RatingTask | None:
    """The rating set (benchmark) and question a task name belongs to, or None.

    Args:
      name: a task or mixture name.
      rating_sets: the registered rating sets: their names, or a mapping from each name to
        its questions (then only those questions parse). A name that two sets could claim
        goes to the longer set name.

    >>> parse_rating_task("chat_polite_score.de", {"chat": ["polite"]}).question
    'polite'
    >>> parse_rating_task("chat_all", ["chat"]).question is None
    True
    """
    base, dot, language = name.partition(".")
    if dot and not _IDENTIFIER.fullmatch(language):
        return None
    for benchmark in sorted(rating_sets, key=len, reverse=True):
        if not base.startswith(f"{benchmark}_"):
            continue
        rest = base[len(benchmark) + 1 :]
        score = rest.endswith(SCORE_SUFFIX)
        if score:
            rest = rest[: -len(SCORE_SUFFIX)]
        if rest == ALL:
            if language:
                continue
            return RatingTask(benchmark, None, score=score, multi_question=True)
        multi = rest.startswith(f"{ALL}_")
        if multi:
            rest = rest[len(ALL) + 1 :]
        known = rating_sets[benchmark] if isinstance(rating_sets, Mapping) else None
        if not _IDENTIFIER.fullmatch(rest) or (known is not None and rest not in known):
            continue
        if multi and language:
            continue
        return RatingTask(benchmark, rest, language or None, score, multi)
    return None


# ----------------------------------------------------------------------------- score files


def benchmark_of_task(
    name: str, rating_sets: Mapping[str, Collection[str]] | Collection[str]
) -> tuple[str, str | int | None]:
    """(benchmark, question) that a score task's rows belong to in score files.

    `mface_attribution_5lang` -> ("mface", "attribution"), `true_frank` -> ("true", 4),
    `metal_task_quality.de` -> ("metal", "task_quality") (`parse_benchmark_task`); a rating
    set's task -> (its name, its question): `chat_polite_score.de` -> ("chat", "polite");
    any other name (SEAHORSE, ICE) -> (`constants.SEAHORSE_BENCHMARK`, None): its question
    comes from the task's examples.

    Args:
      rating_sets: the registered rating sets, as `parse_rating_task` takes them
        (`data.ratings.rating_questions()`).
    """
    parsed = parse_benchmark_task(name)
    if parsed is not None:
        return parsed
    rating = parse_rating_task(name, rating_sets)
    if rating is not None:
        return rating.benchmark, rating.question
    return constants.SEAHORSE_BENCHMARK, None

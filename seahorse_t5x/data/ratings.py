"""A user's own rating sets: their task and mixture names, and the registry of rating sets.

A rating set is a folder of JSON Lines split files `{data_dir}/{split}.jsonl` rated for
questions of the user's own (e.g. "is the summary polite"; the rows are read and checked by
`rating_rows`), registered as SeqIO tasks by `seahorse_t5x.tasks.register_rating_tasks`
(docs/tasks.md, "Your own rating data").

The registry (`add_rating_set`, `rating_task_of`) tells `evaluate` and `report` which
benchmark and question a registered rating task belongs to. No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Collection, Iterable, Mapping

import gin

from seahorse_t5x import constants, errors
from seahorse_t5x.data import rating_rows
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.formats import task_names as names

# ----------------------------------------------------------------------------- names

# The project's own task families, besides the registered benchmarks.
TASK_FAMILIES: tuple[str, ...] = (constants.SEAHORSE_BENCHMARK, names.ICE_PREFIX, "xnli", "nli")
# Fields of a rating row that are not questions.
ROW_FIELDS: frozenset[str] = frozenset(
    (*rating_rows.TEXT_FIELDS, *rating_rows.RATING_SLICE_FIELDS, *rating_rows.ID_FIELDS)
)
# `q4` would read as SEAHORSE's question 4 in score files and reports.
_NUMBERED_QUESTION = re.compile(r"q\d+")


def reserved_names() -> frozenset[str]:
    """Names a rating set may not take: the project's task families and every registered
    benchmark's name, with their language subsets' (`mface_5lang`)."""
    return frozenset((*TASK_FAMILIES, *registry.reported_names()))


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
    all_part = f"{names.ALL}_" if multi_question else ""
    name = f"{benchmark}_{all_part}{question}" + (names.SCORE_SUFFIX if score else "")
    return names.with_language(name, language)


def rating_mixture(benchmark: str, score: bool = False) -> str:
    """`chat_all` (training, multi-question input) or `chat_all_score` (its score tasks)."""
    return f"{benchmark}_{names.ALL}" + (names.SCORE_SUFFIX if score else "")


def _check_identifier(value: object, what: str) -> str:
    if not rating_rows.is_identifier(value):
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
    project's own (`reserved_names()`). A question is not `all` or `score`, does not
    start with `all_` or end with `_score` (each would make two names the same), is not
    `q4`-like (score files read that as a SEAHORSE question) and is not a row field
    (`article`, `summary`, `language`, `system`, `dataset`, `gem_id`, `id`).

    Raises:
      UserError: naming the value that is wrong and what was expected.
    """
    _check_identifier(name, "rating set name")
    reserved = reserved_names()
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
            question in (names.ALL, names.SCORE_SUFFIX[1:])
            or question.startswith(f"{names.ALL}_")
            or question.endswith(names.SCORE_SUFFIX)
            or _NUMBERED_QUESTION.fullmatch(question)
            or question in ROW_FIELDS
        ):
            raise errors.UserError(
                f"question {question!r}: expected a name that is not 'all' or 'score', does "
                f"not start with 'all_' or end with '{names.SCORE_SUFFIX}', is not like 'q4' and is not a row "
                f"field ({', '.join(sorted(ROW_FIELDS))})"
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
    out = []
    for question in questions:
        for score in (False, True):
            out.append(rating_task(benchmark, question, score=score))
            out.extend(
                rating_task(benchmark, question, language=lang, score=score) for lang in languages
            )
            out.append(rating_task(benchmark, question, score=score, multi_question=True))
    return out


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
    if dot and not rating_rows.is_identifier(language):
        return None
    for benchmark in sorted(rating_sets, key=len, reverse=True):
        if not base.startswith(f"{benchmark}_"):
            continue
        rest = base[len(benchmark) + 1 :]
        score = rest.endswith(names.SCORE_SUFFIX)
        if score:
            rest = rest[: -len(names.SCORE_SUFFIX)]
        if rest == names.ALL:
            if language:
                continue
            return RatingTask(benchmark, None, score=score, multi_question=True)
        multi = rest.startswith(f"{names.ALL}_")
        if multi:
            rest = rest[len(names.ALL) + 1 :]
        known = rating_sets[benchmark] if isinstance(rating_sets, Mapping) else None
        if not rating_rows.is_identifier(rest) or (known is not None and rest not in known):
            continue
        if multi and language:
            continue
        return RatingTask(benchmark, rest, language or None, score, multi)
    return None


# ----------------------------------------------------------------------------- rating sets


@gin.configurable(module="seahorse_t5x.data.ratings")
def rating_data_dirs(paths: Mapping[str, str] | None = None) -> dict[str, str]:
    """Rating-set data folders bound in gin, by set name:
    `seahorse_t5x.data.ratings.rating_data_dirs.paths = {"chat": "/data/chat_ratings"}`."""
    return dict(paths or {})


def env_data_dir_name(name: str) -> str:
    """The environment variable of a rating set's data folder: `SEAHORSE_RATINGS_DIR_CHAT`."""
    return f"{constants.ENV_RATINGS_DIR_PREFIX}{name.upper()}"


@dataclasses.dataclass(frozen=True)
class RatingSet:
    """A registered rating set: what `register_rating_tasks` was given and registered.

    Attributes:
      name: the set's name, which is also the `benchmark` of its score-file rows.
      questions: its question names, in the order given.
      prompts: the text that names each question in multi-question inputs.
      languages: the languages that have their own tasks (`{name}_{q}.{lang}`).
      splits: the split files it reads.
      data_dir: the folder as given (None: gin or the environment, when a dataset is built).
      task_names: every task it registered, in registration order.
      mixture_names: `{name}_all` and `{name}_all_score`.
    """

    name: str
    questions: tuple[str, ...]
    prompts: Mapping[str, str]
    languages: tuple[str, ...]
    splits: tuple[str, ...]
    data_dir: str | None
    task_names: tuple[str, ...] = ()
    mixture_names: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        """Its tasks, then its mixtures."""
        return [*self.task_names, *self.mixture_names]

    def resolved_data_dir(self) -> str:
        """The data folder: as given, else gin `rating_data_dirs.paths[name]`, else the
        environment variable `SEAHORSE_RATINGS_DIR_{NAME}`.

        Raises:
          UserError: none of the three is set.
        """
        chosen = self.data_dir or rating_data_dirs().get(self.name)
        chosen = chosen or os.environ.get(env_data_dir_name(self.name))
        if not chosen:
            raise errors.UserError(
                f"no data folder for the rating set {self.name!r}: pass data_dir= to "
                f"register_rating_tasks, set {env_data_dir_name(self.name)}, or bind gin "
                f"`seahorse_t5x.data.ratings.rating_data_dirs.paths = {{'{self.name}': PATH}}`"
            )
        return os.fspath(chosen)

    def split_path(self, split: str) -> str:
        """`{data folder}/{split}.jsonl` (not checked to exist).

        Raises:
          UserError: `split` is not one of the set's splits, or no data folder is set.
        """
        if split not in self.splits:
            raise errors.UserError(
                f"the rating set {self.name!r} has no split {split!r}; it has "
                f"{', '.join(self.splits)}"
            )
        return os.path.join(self.resolved_data_dir(), f"{split}.jsonl")


_RATING_SETS: dict[str, RatingSet] = {}


def add_rating_set(rating_set: RatingSet) -> None:
    """Records a registered set (by `register_rating_tasks`, after its SeqIO tasks).

    Raises:
      UserError: a set of that name is registered already.
    """
    if rating_set.name in _RATING_SETS:
        raise errors.UserError(
            f"a rating set named {rating_set.name!r} is registered already; call "
            "seahorse_t5x.tasks.ratings.remove_rating_tasks(name) first to register it again"
        )
    _RATING_SETS[rating_set.name] = rating_set


def remove_rating_set(name: str) -> RatingSet | None:
    """Forgets a set (its SeqIO tasks are removed by `tasks.ratings.remove_rating_tasks`)."""
    return _RATING_SETS.pop(name, None)


def get_rating_set(name: str) -> RatingSet | None:
    """The registered set of that name, or None."""
    return _RATING_SETS.get(name)


def rating_sets() -> dict[str, RatingSet]:
    """Every registered set, by name (a copy)."""
    return dict(_RATING_SETS)


def is_rating_benchmark(benchmark: str) -> bool:
    """Whether `benchmark` is a registered rating set (its labels are 0/1)."""
    return benchmark in _RATING_SETS


def rating_questions() -> dict[str, tuple[str, ...]]:
    """Each registered rating set's questions, by set name: what
    `parse_rating_task` and `evaluation.task_rows.benchmark_of_task` take."""
    return {name: s.questions for name, s in _RATING_SETS.items()}


def rating_task_of(task_name: str) -> RatingTask | None:
    """The registered rating set and question of a task or mixture name, else None
    (`chat_polite_score.de` -> benchmark `chat`, question `polite`, once `chat` is registered
    with the question `polite`)."""
    return parse_rating_task(task_name, rating_questions())

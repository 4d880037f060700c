"""A user's own rating data: its rows read and checked, and the registry of rating sets.

A rating set is a folder of JSON Lines split files `{data_dir}/{split}.jsonl` rated for
questions of the user's own (e.g. "is the summary polite"), registered as SeqIO tasks by
`seahorse_t5x.tasks.register_rating_tasks` (docs/tasks.md, "Your own rating data"). One
object per line:

  article, summary        non-empty strings (the premise and the hypothesis)
  one field per question  1 (Yes), 0 (No) or null; a row without the field is unlabelled
                          for that question, as with null
  language                optional: a lowercase code such as `en` (or null)
  system, dataset         optional strings (or null): slice fields in the report
  gem_id (or id)          optional string or integer; without one a row is `train:12`
                          (its file's name and line)

Other fields are ignored. Unlike the SEAHORSE split files (`splits.py`, checked once and
strict), a bad row here is dropped and counted, never lost silently: a line that is not
UTF-8, not JSON or not an object, a missing or empty `article`/`summary`, a label other than
1, 0 or null (`"yes"`, `true` and `1.0` are not labels), or a slice field of the wrong type
becomes one `errors.DataError` (file, line, field, reason) in `RatingsFile.dropped`, and
`rows_kept + rows_dropped == rows_read` for every file.

The registry (`add_rating_set`, `rating_task_of`) tells `evaluate` and `report` which
benchmark and question a registered rating task belongs to. No TensorFlow here.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

import gin

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.formats import task_names as names

Opener = Callable[[str], contextlib.AbstractContextManager[Iterable[str]]]

TEXT_FIELDS: tuple[str, ...] = ("article", "summary")
RATING_SLICE_FIELDS: tuple[str, ...] = ("language", "system", "dataset")
ID_FIELDS: tuple[str, ...] = ("gem_id", "id")
# The field of a drop that concerns the whole line (not UTF-8, not JSON, not an object).
WHOLE_ROW = "row"
# How the drop report counts rows without a language.
NO_LANGUAGE = "(none)"
# Drops listed by `RatingsFile.as_dict`; the counts are always complete.
MAX_DROP_EXAMPLES = 10


# ----------------------------------------------------------------------------- rows


def _json_text(value: object) -> str:
    """A value as the file spells it (`true`, `1.0`, `"yes"`), for error messages."""
    return json.dumps(value, ensure_ascii=False)


def _label_problem(value: object) -> str | None:
    # bool is an int subclass: true/false are not labels; 1.0 is written only as 1.
    if value is None or (type(value) is int and value in (0, 1)):
        return None
    hint = ""
    if isinstance(value, bool):
        hint = " (true/false are not labels)"
    elif isinstance(value, float) and value in (0.0, 1.0):
        hint = " (write 1 or 0, not a decimal)"
    return f"expected 1 (Yes), 0 (No) or null, got {_json_text(value)}{hint}"


def check_row(
    path: str, line: int, record: Mapping, questions: Iterable[str], default_id: str
) -> dict:
    """One rating row, checked and normalized.

    Args:
      path, line: where the row was read (for the error).
      record: the row's JSON object.
      questions: the set's question names (one label field each).
      default_id: the `gem_id` of a row without `gem_id` or `id`.

    Returns:
      `{"article", "summary", "language", "system", "dataset", "gem_id", "labels",
      "unasked"}`: `labels` maps each question to 1, 0 or None (also for a row without the
      field, whose question is listed in `unasked`); absent slice fields are None.

    Raises:
      DataError: naming the file, line and field that is wrong and what was expected.
    """
    row: dict = {}
    for field in TEXT_FIELDS:
        value = record.get(field)
        if field not in record or value is None:
            raise errors.DataError(path, line, field, "missing; expected a non-empty string")
        if not isinstance(value, str):
            raise errors.DataError(
                path, line, field, f"expected a non-empty string, got {_json_text(value)}"
            )
        if not value.strip():
            raise errors.DataError(path, line, field, "empty; expected a non-empty string")
        row[field] = value
    labels = {}
    for question in questions:
        value = record.get(question)
        problem = _label_problem(value)
        if problem:
            raise errors.DataError(path, line, question, problem)
        labels[question] = value
    for field in RATING_SLICE_FIELDS:
        value = record.get(field)
        if value is not None and not isinstance(value, str):
            raise errors.DataError(
                path, line, field, f"expected a string or null, got {_json_text(value)}"
            )
        row[field] = value
    language = row["language"]
    if language is not None and not is_identifier(language):
        raise errors.DataError(
            path,
            line,
            "language",
            f"expected a lowercase code such as 'en' (letters, digits, _) or null, got "
            f"{_json_text(language)}",
        )
    row["gem_id"] = default_id
    for field in ID_FIELDS:
        value = record.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise errors.DataError(
                path, line, field, f"expected a string, an integer or null, got {_json_text(value)}"
            )
        row["gem_id"] = str(value)
        break
    row["labels"] = labels
    row["unasked"] = tuple(q for q in labels if q not in record)
    return row


def _stem(path: str) -> str:
    base = os.path.basename(path)
    return base[: -len(".jsonl")] if base.endswith(".jsonl") else base


def iter_rows(
    path: str | os.PathLike, questions: Iterable[str], opener: Opener | None = None
) -> Iterator[tuple[int, dict | errors.DataError]]:
    """(1-based line, checked row or the `DataError` that drops it) per non-blank line.

    Args:
      path: a rating split file.
      questions: the set's question names.
      opener: opens the path as an iterable of lines (default `fileio.open_text_input`,
        with lines that are not UTF-8 reported; the SeqIO tasks pass a `tf.io.gfile`
        opener for remote folders).

    Raises:
      UserError: the file cannot be read.
    """
    path = os.fspath(path)
    questions = tuple(questions)
    stem = _stem(path)
    for line, record in fileio.iter_json_lines(path, opener=opener):
        if isinstance(record, errors.DataError):
            yield line, record
            continue
        try:
            yield line, check_row(path, line, record, questions, f"{stem}:{line}")
        except errors.DataError as e:
            yield line, e


@dataclasses.dataclass
class RatingsFile:
    """What one rating split file holds: counts, labels per question, and every drop.

    Attributes:
      path: the file read.
      questions: the question names it was read for.
      rows_read: non-blank lines.
      rows_kept: rows that passed the check (examples for each question they label).
      dropped: one `DataError` (file, line, field, reason) per dropped row, in file order.
      labels: per question, `{"yes", "no", "null", "missing"}` over the kept rows
        (`missing`: rows without the field, which count as unlabelled like `null`).
      labelled: rows labelled 1 or 0, per (question, language); language None for rows
        without one.
      languages: kept rows per language (None: rows without one).
    """

    path: str
    questions: tuple[str, ...]
    rows_read: int = 0
    rows_kept: int = 0
    dropped: list[errors.DataError] = dataclasses.field(default_factory=list)
    labels: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    labelled: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    languages: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    @property
    def rows_dropped(self) -> int:
        return len(self.dropped)

    def drop_counts(self) -> dict[str, int]:
        """Dropped rows per field (`"row"` for a line that is not a JSON object), sorted."""
        counts = collections.Counter(d.field or WHOLE_ROW for d in self.dropped)
        return dict(sorted(counts.items()))

    def labelled_row_count(self, question: str, language: str | None = None) -> int:
        """Rows labelled 1 or 0 for `question` (in `language`, if given): its tasks' examples."""
        return sum(
            n
            for (q, lang), n in self.labelled.items()
            if q == question and language in (None, lang)
        )

    def unasked_questions(self) -> list[str]:
        """Questions no kept row has a field for (a misspelt question name, most likely)."""
        return [
            q
            for q in self.questions
            if self.rows_kept and self.labels[q]["missing"] == self.rows_kept
        ]

    def summary(self) -> str:
        """One line: read, kept and dropped rows, the drops per field and the first drop
        (an empty file says so: its tasks have no examples in this split)."""
        if not self.rows_read:
            return (
                f"{self.path}: empty (no rows; expected one JSON object per line with "
                f"article, summary and the questions {', '.join(self.questions)})"
            )
        line = (
            f"{self.path}: read {self.rows_read} rows, kept {self.rows_kept}, "
            f"dropped {self.rows_dropped}"
        )
        if self.dropped:
            counts = ", ".join(f"{k} {v}" for k, v in self.drop_counts().items())
            line += f" ({counts}; first: {self.dropped[0]})"
        unasked = self.unasked_questions()
        if unasked:
            line += f"; no row has a field for {', '.join(unasked)}"
        return line

    def as_dict(self) -> dict:
        """The drop report as JSON-ready data (the first `MAX_DROP_EXAMPLES` drops listed)."""
        return {
            "path": self.path,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "rows_dropped": self.rows_dropped,
            "dropped_by_field": self.drop_counts(),
            "drop_examples": [str(d) for d in self.dropped[:MAX_DROP_EXAMPLES]],
            "labels": {q: dict(c) for q, c in self.labels.items()},
            # Rows without a language as "(none)", which no language code can be.
            "languages": dict(
                sorted((NO_LANGUAGE if k is None else k, v) for k, v in self.languages.items())
            ),
        }


def read_file(
    path: str | os.PathLike, questions: Iterable[str], opener: Opener | None = None
) -> RatingsFile:
    """Reads a whole rating split file into its counts and drops (the rows are not kept:
    `iter_rows` streams them again when a dataset is built).

    Raises:
      UserError: the file cannot be read.
    """
    questions = tuple(questions)
    result = RatingsFile(
        os.fspath(path),
        questions,
        labels={q: {"yes": 0, "no": 0, "null": 0, "missing": 0} for q in questions},
    )
    for _, row in iter_rows(path, questions, opener):
        result.rows_read += 1
        if isinstance(row, errors.DataError):
            result.dropped.append(row)
            continue
        result.rows_kept += 1
        result.languages[row["language"]] += 1
        for question, value in row["labels"].items():
            if value is None:
                result.labels[question]["missing" if question in row["unasked"] else "null"] += 1
            else:
                result.labels[question]["yes" if value == 1 else "no"] += 1
                result.labelled[(question, row["language"])] += 1
    # The accounting every consumer relies on: nothing is lost silently.
    assert result.rows_kept + result.rows_dropped == result.rows_read
    return result


# ----------------------------------------------------------------------------- names

# The project's own task families, besides the registered benchmarks.
TASK_FAMILIES: tuple[str, ...] = (constants.SEAHORSE_BENCHMARK, names.ICE_PREFIX, "xnli", "nli")
# Fields of a rating row that are not questions.
ROW_FIELDS: frozenset[str] = frozenset((*TEXT_FIELDS, *RATING_SLICE_FIELDS, *ID_FIELDS))
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
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
    if dot and not _IDENTIFIER.fullmatch(language):
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
        if not _IDENTIFIER.fullmatch(rest) or (known is not None and rest not in known):
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

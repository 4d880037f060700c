"""A teacher metric's P(yes) over article/summary pairs: what distillation tasks learn from.

Two forms are read (`read_teacher_scores`), one per file, told apart by their rows:

- **scored pairs**: rows with `article`, `summary` and one `score_q{N}` per question, as
  `seahorse-t5x score --questions ...` writes them (without `--metric`); a human label for
  question N, when a row has one, is its `q{N}` field (1, 0 or null).
- **score-file rows** (`data/scorefiles.py`): `metric`, `question`, `score`, `label` and the
  pair's identity, as `score --metric`, `import-scores` (an LLM judge, a released metric)
  and every other producer write them. The texts come from `pairs` files (JSON Lines with
  `article` and `summary`), joined on `key` (default `gem_id`, `system`, `summary`: the
  row identity of score files); `label` is the human label when it is 0 or 1.

Every score must be a probability in [0, 1] (P(yes)); a row that is not usable for a
question is dropped for that question and counted with file, line, field and reason
(`TeacherScores.summary()`). No TensorFlow: `tasks/distillation.py` makes SeqIO tasks of
the result.

Duplicates, across all the files given: a pair is its article and summary in scored
pairs, and its `key` in score-file rows and pairs files. A pair given again with the same
teacher scores (within `SAME_SCORE_TOLERANCE`) and labels (a pairs row again with the same article and summary) is
collapsed into the first and counted (`TeacherScores.duplicates`); given again with
anything else (another score for a question, another label, another article for a key) it
is refused: every such conflict is counted, and the error names the first at its
`file:line`, its key and where the pair was first read. A teacher cannot mean two
probabilities for one pair, and training on both would average them silently.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from seahorse_t5x import arguments, errors, fileio
from seahorse_t5x.data import scorefiles

DEFAULT_KEY: tuple[str, ...] = scorefiles.ITEM_FIELDS
Opener = Callable[[str], contextlib.AbstractContextManager[Iterable[str]]]
# Examples of drops kept for the summary.
_DROP_EXAMPLES = 5
_METADATA = ("gem_id", "language", "dataset", "system")
# Teacher scores of one pair that differ by no more than this are the same score: the same
# model scoring the same text in other batches differs in the last float32 bits.
SAME_SCORE_TOLERANCE = 1e-6


@dataclasses.dataclass
class TeacherExample:
    """One pair with the teacher's P(yes) per question (and human labels where known)."""

    article: str
    summary: str
    p_yes: dict[int, float]
    labels: dict[int, int]
    metadata: dict[str, str]


@dataclasses.dataclass
class TeacherScores:
    """The pairs read, and what was dropped.

    Attributes:
      examples: in file order (files in the order given).
      questions: the questions asked for.
      rows_read: score rows read (score-file rows: one per question and pair).
      dropped: `{field: count}` of rows (or row-questions) dropped.
      drop_examples: the first few drops, `file:line field 'x': reason`.
      paths: the files read.
      duplicates: rows that repeated a pair with the same scores and labels (or a pairs
        row that repeated its key with the same texts), collapsed into the first.
      duplicate_example: where the first of them is, `file:line (first at file:line)`.
    """

    examples: list[TeacherExample]
    questions: tuple[int, ...]
    rows_read: int = 0
    dropped: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    drop_examples: list[str] = dataclasses.field(default_factory=list)
    paths: list[str] = dataclasses.field(default_factory=list)
    duplicates: int = 0
    duplicate_example: str = ""

    def count(self, question: int) -> int:
        """Pairs with a teacher P(yes) for `question`."""
        return sum(question in example.p_yes for example in self.examples)

    def human_labelled(self, question: int) -> int:
        """Pairs with both a teacher P(yes) and a human label for `question`."""
        return sum(
            question in example.p_yes and question in example.labels for example in self.examples
        )

    def summary(self) -> str:
        """One line: files, rows read, pairs per question, drops with their first causes."""
        per_question = ", ".join(f"q{q} {self.count(q)}" for q in self.questions)
        text = (
            f"teacher scores: {len(self.paths)} file(s), {self.rows_read} rows read; "
            f"pairs per question: {per_question}"
        )
        if self.duplicates:
            text += (
                f"; {self.duplicates} identical duplicate row(s) collapsed, e.g. "
                f"{self.duplicate_example}"
            )
        total = sum(self.dropped.values())
        if total:
            fields = ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items()))
            text += f"; {total} dropped ({fields}), e.g. " + "; ".join(self.drop_examples)
        return text

    def _duplicate(self, where: str, first: str) -> None:
        self.duplicates += 1
        if not self.duplicate_example:
            self.duplicate_example = f"{where} (first at {first})"

    def _drop(self, error: errors.DataError) -> None:
        self.dropped[error.field or "row"] += 1
        if len(self.drop_examples) < _DROP_EXAMPLES:
            self.drop_examples.append(str(error))


@dataclasses.dataclass
class _Conflicts:
    """Pairs (or pairs-file keys) given twice with different contents: counted while the
    files are read, refused at the end in one line (`check`)."""

    what: str
    count: int = 0
    first: str = ""

    def add(self, path: str, line: int, key: tuple[str, ...], difference: str) -> None:
        """Counts a conflict; the first is kept for the message (`difference`: what differs
        from where the key was first read)."""
        self.count += 1
        if not self.first:
            self.first = f"{path}:{line}: key {key!r} {difference}"

    def check(self) -> None:
        """Raises UserError naming the count and the first conflict, if there was one."""
        if self.count:
            raise errors.UserError(
                f"{self.count} {self.what} given twice with different contents, the first: "
                f"{self.first}; a pair has one article, summary and teacher score per "
                "question: remove or correct one of each (identical repeats are collapsed)"
            )


def _probability(value: Any, path: str, line: int, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise errors.DataError(path, line, field, f"expected P(yes) in [0, 1], got {value!r}")
    p = float(value)
    if not math.isfinite(p) or not 0.0 <= p <= 1.0:
        raise errors.DataError(
            path,
            line,
            field,
            f"expected P(yes) in [0, 1], got {value!r} (a score that is "
            "not a probability cannot be a soft target)",
        )
    return p


def _human_label(value: Any, path: str, line: int, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in (0, 1):
        raise errors.DataError(
            path, line, field, f"expected a human label 1, 0 or null, got {value!r}"
        )
    return int(value)


def _text(row: Mapping[str, Any], field: str, path: str, line: int) -> str:
    value = row.get(field)
    if not isinstance(value, str) or not value.strip():
        raise errors.DataError(path, line, field, "expected a non-empty string")
    return value


def _metadata(row: Mapping[str, Any]) -> dict[str, str]:
    return {field: "" if row.get(field) is None else str(row[field]) for field in _METADATA}


def _is_score_file_row(row: Mapping[str, Any]) -> bool:
    return "score" in row and "question" in row


def _read_scored_pairs(
    path: str,
    rows: Iterable[tuple[int, Any]],
    result: TeacherScores,
    human_labels: bool,
    key: Sequence[str],
    seen: dict[tuple[str, str], tuple[TeacherExample, str]],
    conflicts: _Conflicts,
) -> None:
    for line, row in rows:
        if isinstance(row, errors.DataError):
            result._drop(row)
            continue
        result.rows_read += 1
        try:
            article = _text(row, "article", path, line)
            summary = _text(row, "summary", path, line)
        except errors.DataError as error:
            result._drop(error)
            continue
        example = TeacherExample(article, summary, {}, {}, _metadata(row))
        for question in result.questions:
            field = f"score_q{question}"
            try:
                if field not in row:
                    raise errors.DataError(path, line, field, "missing")
                example.p_yes[question] = _probability(row[field], path, line, field)
                label_field = f"q{question}"
                label = _human_label(row.get(label_field), path, line, label_field)
            except errors.DataError as error:
                result._drop(error)
                example.p_yes.pop(question, None)
                continue
            if human_labels and label is not None:
                example.labels[question] = label
        if not example.p_yes:
            continue
        earlier = seen.get((article, summary))
        if earlier is None:
            seen[(article, summary)] = (example, f"{path}:{line}")
            result.examples.append(example)
        elif _same(earlier[0], example):
            result._duplicate(f"{path}:{line}", earlier[1])
        else:
            conflicts.add(
                path, line, _key_of(row, key), _difference(earlier[0], example, earlier[1])
            )


def _same_score(first: float | None, again: float | None) -> bool:
    if first is None or again is None:
        return first is again
    return abs(first - again) <= SAME_SCORE_TOLERANCE


def _same(first: TeacherExample, again: TeacherExample) -> bool:
    """Whether a repeated pair has the first one's scores (within `SAME_SCORE_TOLERANCE`)
    and labels, for the same questions."""
    return (
        first.labels == again.labels
        and first.p_yes.keys() == again.p_yes.keys()
        and all(_same_score(first.p_yes[q], again.p_yes[q]) for q in first.p_yes)
    )


def _difference(first: TeacherExample, again: TeacherExample, where: str) -> str:
    """What a repeated pair changes, for the message: `has score_q4 0.7 here and 0.2 at
    t.jsonl:2` (`where`: the first one's place)."""
    for kind, before, now in (
        ("score_q", first.p_yes, again.p_yes),
        ("label q", first.labels, again.labels),
    ):
        for question in sorted(set(before) | set(now)):
            same = (
                _same_score(before.get(question), now.get(question))
                if kind == "score_q"
                else before.get(question) == now.get(question)
            )
            if not same:
                return (
                    f"has {kind}{question} {now.get(question)} here and "
                    f"{before.get(question)} at {where}"
                )
    return f"differs from {where}"


def _one_score(question: int, p: float, label: int | None) -> TeacherExample:
    """One question's score and label, to compare a repeated score-file row with the first."""
    return TeacherExample("", "", {question: p}, {} if label is None else {question: label}, {})


def _key_of(row: Mapping[str, Any], key: Sequence[str]) -> tuple[str, ...]:
    return tuple("" if row.get(field) is None else str(row[field]) for field in key)


def _read_pairs(
    paths: Sequence[str], key: Sequence[str], opener: Opener | None, result: TeacherScores
) -> dict[tuple[str, ...], dict]:
    """The pairs rows by key; a key again with the same texts is collapsed and counted.

    Raises:
      UserError: a file is empty, or keys repeat with another article or summary
        (`_Conflicts`).
    """
    pairs: dict[tuple[str, ...], dict] = {}
    where: dict[tuple[str, ...], str] = {}
    conflicts = _Conflicts("pairs-file keys")
    for path in paths:
        found = False
        for line, row in fileio.iter_json_objects(path, opener):
            found = True
            _text(row, "article", path, line)
            _text(row, "summary", path, line)
            identity = _key_of(row, key)
            first = pairs.get(identity)
            if first is None:
                pairs[identity], where[identity] = row, f"{path}:{line}"
                continue
            changed = [f for f in ("article", "summary") if first[f] != row[f]]
            if changed:
                difference = f"has another {changed[0]} here than at {where[identity]}"
                conflicts.add(path, line, identity, difference)
            else:
                result._duplicate(f"{path}:{line}", where[identity])
        if not found:
            raise fileio.empty_file_error(path, "JSON Lines pairs with article and summary")
    conflicts.check()
    return pairs


def _read_score_rows(
    path: str,
    rows: Iterable[tuple[int, Any]],
    result: TeacherScores,
    pairs: Mapping[tuple[str, ...], dict] | None,
    key: Sequence[str],
    metric: str | None,
    human_labels: bool,
    joined: dict[tuple[str, ...], TeacherExample],
    first_rows: dict[tuple[tuple[str, ...], int], str],
    conflicts: _Conflicts,
    metrics_found: set[str],
) -> None:
    """Score-file rows joined to their texts into `joined` (by key); `first_rows`: where
    each key (question 0) and each key's question was first read; `metrics_found`: the
    metrics the rows carry, `metric` or not."""
    metrics_seen: set[str] = set()
    for line, row in rows:
        if isinstance(row, errors.DataError):
            result._drop(row)
            continue
        metrics_found.add(str(row.get("metric")))
        if metric is not None and row.get("metric") != metric:
            continue
        metrics_seen.add(str(row.get("metric")))
        if metric is None and len(metrics_seen) > 1:
            raise errors.UserError(
                f"{path}:{line}: score rows of several metrics ({', '.join(sorted(metrics_seen))});"
                " name the teacher with metric="
            )
        result.rows_read += 1
        try:
            question = int(scorefiles.normalize_question(row["question"]))
        except (ValueError, TypeError):
            result._drop(errors.DataError(path, line, "question", "expected a question 1..6"))
            continue
        if question not in result.questions:
            continue
        try:
            p = _probability(row.get("score"), path, line, "score")
            label = _human_label(row.get("label"), path, line, "label")
            identity = _key_of(row, key)
            if pairs is None:
                text_row = row
                _text(row, "article", path, line)
            else:
                text_row = pairs.get(identity)
                if text_row is None:
                    raise errors.DataError(
                        path,
                        line,
                        ",".join(key),
                        f"no pair with this key {identity!r} in the pairs files",
                    )
            summary = _text(text_row, "summary", path, line)
        except errors.DataError as error:
            result._drop(error)
            continue
        example = joined.get(identity)
        if example is None:
            example = TeacherExample(
                text_row["article"], summary, {}, {}, _metadata({**text_row, **row})
            )
            joined[identity] = example
            first_rows[(identity, 0)] = f"{path}:{line}"
            result.examples.append(example)
        elif (example.article, example.summary) != (text_row["article"], summary):
            # (Score rows that carry their texts: the same key with another text.)
            changed = "article" if example.article != text_row["article"] else "summary"
            where = first_rows[(identity, 0)]
            conflicts.add(path, line, identity, f"has another {changed} here than at {where}")
            continue
        kept_label = label if human_labels else None
        if question in example.p_yes:
            first = first_rows[(identity, question)]
            before = _one_score(question, example.p_yes[question], example.labels.get(question))
            again = _one_score(question, p, kept_label)
            if _same(before, again):
                result._duplicate(f"{path}:{line}", first)
            else:
                conflicts.add(path, line, identity, _difference(before, again, first))
            continue
        first_rows[(identity, question)] = f"{path}:{line}"
        example.p_yes[question] = p
        if kept_label is not None:
            example.labels[question] = kept_label


def _check_metric(metric: str | None, found: set[str], paths: Sequence[str]) -> None:
    """Refuses a `metric` that no score-file row carries, naming the ones found.

    Raises:
      UserError: `metric` is given but no row has it (or the files hold scored pairs,
        which come from one teacher and carry no metric).
    """
    if metric is None or metric in found:
        return
    files = ", ".join(paths)
    if not found:
        raise errors.UserError(
            f"metric={metric!r} picks a teacher among score-file rows, but {files} hold scored "
            "pairs (score_qN), one teacher's: leave metric out"
        )
    raise errors.UserError(
        f"no score row of {files} has metric {metric!r} (the rows have "
        f"{', '.join(sorted(found))}): name one of them with metric="
    )


def read_teacher_scores(
    scores: str | os.PathLike | Sequence[str | os.PathLike],
    questions: Iterable[int | str] | int | str,
    *,
    pairs: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    key: Sequence[str] = DEFAULT_KEY,
    metric: str | None = None,
    human_labels: bool = True,
    opener: Opener | None = None,
) -> TeacherScores:
    """The teacher's P(yes) per pair and question from one or more files (module docstring).

    Args:
      scores: JSON Lines files of scored pairs or of score-file rows.
      questions: the SEAHORSE questions to read (`arguments.parse_questions`: 4, "q4",
        "1,4", [1, 4]).
      pairs: for score-file rows without `article`: files with the texts, joined on `key`.
      key: the fields that identify a pair in score rows and pairs files.
      metric: with score-file rows of several metrics, the teacher's.
      human_labels: keep the human labels the rows carry (False: the teacher's alone).
      opener: opens a path as lines (default: local files; e.g. `tf.io.gfile.GFile` for
        gs://).

    Raises:
      UserError: a file cannot be read or is empty, `key` is a bare string
        (`arguments.string_list`), rows of several metrics without `metric`, a `metric`
        no row has (naming the metrics found), a pair or a
        pairs-file key given twice with different contents (module docstring), or no pair
        is left for a question.
    """
    paths = [os.fspath(p) for p in ([scores] if isinstance(scores, (str, os.PathLike)) else scores)]
    if not paths:
        raise errors.UserError("no teacher score files given")
    pair_paths = (
        None
        if pairs is None
        else [os.fspath(p) for p in ([pairs] if isinstance(pairs, (str, os.PathLike)) else pairs)]
    )
    key = tuple(arguments.string_list(key, "key", "field name"))
    wanted = arguments.parse_questions(questions)
    if wanted is None:
        raise errors.UserError("no questions given: name the teacher's questions, e.g. [4]")
    result = TeacherScores(examples=[], questions=wanted, paths=paths)
    pair_index = None if pair_paths is None else _read_pairs(pair_paths, key, opener, result)
    joined: dict[tuple[str, ...], TeacherExample] = {}
    first_rows: dict[tuple[tuple[str, ...], int], str] = {}
    seen: dict[tuple[str, str], tuple[TeacherExample, str]] = {}
    conflicts = _Conflicts("pairs")
    metrics_found: set[str] = set()
    for path in paths:
        rows = list(fileio.iter_json_lines(path, opener))
        objects = [row for _, row in rows if isinstance(row, dict)]
        if not objects:
            raise fileio.empty_file_error(
                path, "JSON Lines of scored pairs (score_qN) or score-file rows"
            )
        if _is_score_file_row(objects[0]):
            _read_score_rows(
                path,
                rows,
                result,
                pair_index,
                key,
                metric,
                human_labels,
                joined,
                first_rows,
                conflicts,
                metrics_found,
            )
        else:
            _read_scored_pairs(path, rows, result, human_labels, key, seen, conflicts)
    conflicts.check()
    _check_metric(metric, metrics_found, paths)
    for question in result.questions:
        if not result.count(question):
            raise errors.UserError(
                f"no pair has a teacher score for q{question} in {', '.join(paths)} "
                f"({result.summary()})"
            )
    return result

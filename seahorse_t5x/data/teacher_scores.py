"""A teacher metric's P(yes) over article/summary pairs, joined once into a split file: what
distillation tasks learn from.

Two forms are read, one per file, told apart by their rows:

- **scored pairs**: rows with `article`, `summary` and one `score_{q}` column per question,
  as `seahorse-t5x score --questions ...` writes them (without `--score_file`): `score_q4` for
  SEAHORSE's question 4, `score_polite` for a rating set's question `polite`; a file of one
  question's scores may carry it as `score` (`score --questions 4` on one column). A human
  label, when a row has one, is the question's own field (`q4`, `polite`: 1, 0 or null).
- **score-file rows** (`data/scorefiles.py`): `metric`, `question`, `score`, `label` and the
  pair's identity, as `score --score_file`, `import-scores` (an LLM judge, a released metric)
  and every other producer write them. The texts come from `pairs` files (JSON Lines with
  `article` and `summary`), joined on `key` (default `gem_id`, `system`, `summary`: the
  row identity of score files); `label` is the human label when it is 0 or 1.

`join_teacher_scores` reads them once, a row at a time, and writes the pairs to one split
file, `{output_dir}/train.jsonl` (one row per pair: its texts, `gem_id`, `language`,
`dataset`, `system` from the row holding its texts, `score_{q}` per question and the human
label `{q}` where one is kept), with its counts in `teacher_report.json`: the distillation
tasks read the pairs from there, as the SEAHORSE tasks read `prepare`'s split files. What
it holds in memory is a fixed few dozen bytes per pair (a digest of its identity, its scores
and where its texts are), never the texts, so 10^7 pairs join on a small machine.
`read_teacher_scores` joins into a temporary folder and reads the pairs back into memory
(for small sets and tests).

Every score must be a probability in [0, 1] (P(yes)); a row that is not usable for a
question is dropped for that question and counted with file, line, field and reason
(`TeacherScores.summary()`). No TensorFlow: `tasks/distillation.py` makes SeqIO tasks of
the result.

Duplicates, across all the files given: a pair is its article and summary in scored
pairs, and its `key` in score-file rows and pairs files. A pair given again with the same
teacher scores (within `teacher_rows.SAME_SCORE_TOLERANCE`) and labels (a pairs row again
with the same article and summary) is collapsed into the first and counted (`TeacherScores.duplicates`);
given again with anything else (another score for a question, another label, another
article for a key) it is refused: every such conflict is counted, and the error names the
first at its `file:line`, its key and where the pair was first read. A teacher cannot mean
two probabilities for one pair, and training on both would average them silently.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

import numpy as np

from seahorse_t5x import arguments, errors, fileio
from seahorse_t5x.arguments import Question, question_key
from seahorse_t5x.data import scorefiles, teacher_rows

DEFAULT_KEY: tuple[str, ...] = scorefiles.ITEM_FIELDS
Opener = Callable[[str], contextlib.AbstractContextManager[Iterable[str]]]
OutputOpener = Callable[[str], contextlib.AbstractContextManager[IO[str]]]
# The joined split file and its report, in the output folder.
SPLIT_FILE = "train.jsonl"
REPORT_FILE = "teacher_report.json"
# Examples of drops kept for the summary.
_DROP_EXAMPLES = 5
_NO_LABEL = -1


@dataclasses.dataclass
class TeacherExample:
    """One pair with the teacher's P(yes) per question (and human labels where known)."""

    article: str
    summary: str
    p_yes: dict[Question, float]
    labels: dict[Question, int]
    metadata: dict[str, str]


@dataclasses.dataclass
class TeacherScores:
    """What was read and joined, and what was dropped.

    Attributes:
      examples: the pairs in memory (`read_teacher_scores`; a join leaves them on disk).
      questions: the questions asked for.
      rows_read: score rows read (score-file rows: one per question and pair).
      dropped: `{field: count}` of rows (or row-questions) dropped.
      drop_examples: the first few drops, `file:line field 'x': reason`.
      paths: the files read.
      duplicates: rows that repeated a pair with the same scores and labels (or a pairs
        row that repeated its key with the same texts), collapsed into the first.
      duplicate_example: where the first of them is, `file:line (first at file:line)`.
      pairs: pairs joined (with a teacher P(yes) for at least one question).
      counts, labelled: per question key (`q4`, `polite`), pairs with a teacher P(yes),
        and those with a human label too.
      fingerprint: what the join was made from (its caller's: files, settings), kept in
        the report so that the same join is not made twice.
    """

    examples: list[TeacherExample]
    questions: tuple[Question, ...]
    rows_read: int = 0
    dropped: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    drop_examples: list[str] = dataclasses.field(default_factory=list)
    paths: list[str] = dataclasses.field(default_factory=list)
    duplicates: int = 0
    duplicate_example: str = ""
    pairs: int = 0
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    labelled: dict[str, int] = dataclasses.field(default_factory=dict)
    fingerprint: dict[str, Any] = dataclasses.field(default_factory=dict)

    def count(self, question: Question) -> int:
        """Pairs with a teacher P(yes) for `question`."""
        return self.counts.get(question_key(question), 0)

    def human_labelled(self, question: Question) -> int:
        """Pairs with both a teacher P(yes) and a human label for `question`."""
        return self.labelled.get(question_key(question), 0)

    def summary(self) -> str:
        """One line: files, rows read, pairs per question, drops with their first causes."""
        per_question = ", ".join(f"{question_key(q)} {self.count(q)}" for q in self.questions)
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

    def as_dict(self) -> dict[str, Any]:
        """The report's fields (`REPORT_FILE`), the pairs left out."""
        return {
            "questions": list(self.questions),
            "pairs": self.pairs,
            "counts": dict(self.counts),
            "labelled": dict(self.labelled),
            "rows_read": self.rows_read,
            "dropped": dict(self.dropped),
            "drop_examples": list(self.drop_examples),
            "duplicates": self.duplicates,
            "duplicate_example": self.duplicate_example,
            "paths": list(self.paths),
            "fingerprint": dict(self.fingerprint),
        }

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> TeacherScores:
        """The counts of a report written by `join_teacher_scores` (no examples)."""
        return cls(
            examples=[],
            questions=tuple(fields["questions"]),
            rows_read=fields["rows_read"],
            dropped=collections.Counter(fields["dropped"]),
            drop_examples=list(fields["drop_examples"]),
            paths=list(fields["paths"]),
            duplicates=fields["duplicates"],
            duplicate_example=fields["duplicate_example"],
            pairs=fields["pairs"],
            counts=dict(fields["counts"]),
            labelled=dict(fields["labelled"]),
            fingerprint=dict(fields.get("fingerprint") or {}),
        )

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


class _Pairs:
    """Every pair seen, by a 16-byte digest of its identity, in arrays: its scores and
    labels per question, where its texts are (file number and line: assigned in reading
    order, so increasing with the pair's number), a digest of each text, and where each
    question's score was first read. No text is kept."""

    def __init__(self, questions: Sequence[Question]) -> None:
        self.column = {q: i for i, q in enumerate(questions)}
        self.index: dict[bytes, int] = {}
        self.size = 0
        self._grow(1024)

    def _grow(self, capacity: int) -> None:
        width = len(self.column)
        old = self.size

        def grown(array, fill):
            new = np.full((capacity, *array.shape[1:]), fill, array.dtype)
            new[:old] = array[:old]
            return new

        if old == 0:
            self.p = np.full((capacity, width), np.nan)
            self.labels = np.full((capacity, width), _NO_LABEL, np.int8)
            self.place = np.zeros((capacity, 2), np.int32)
            self.texts = np.zeros((capacity, 2), np.uint64)
            self.first = np.zeros((capacity, width, 2), np.int32)
        else:
            self.p = grown(self.p, np.nan)
            self.labels = grown(self.labels, _NO_LABEL)
            self.place = grown(self.place, 0)
            self.texts = grown(self.texts, 0)
            self.first = grown(self.first, 0)

    def add(self, identity: bytes, file: int, line: int, article: str, summary: str) -> int:
        """A new pair's number; its texts are in `file` at `line`."""
        if self.size == len(self.p):
            self._grow(2 * self.size)
        number = self.size
        self.index[identity] = number
        self.place[number] = (file, line)
        self.texts[number] = (teacher_rows.text_digest(article), teacher_rows.text_digest(summary))
        self.size += 1
        return number

    def scores_of(self, number: int) -> tuple[dict[Question, float], dict[Question, int]]:
        """A pair's scores and labels, by question."""
        p, labels = {}, {}
        for question, column in self.column.items():
            if not math.isnan(self.p[number, column]):
                p[question] = float(self.p[number, column])
            if self.labels[number, column] != _NO_LABEL:
                labels[question] = int(self.labels[number, column])
        return p, labels


@dataclasses.dataclass
class _Join:
    """The state of one join: the files by number (pairs files first), the pairs, the
    counts and the conflicts."""

    files: list[str]
    result: TeacherScores
    pairs: _Pairs
    key: tuple[str, ...]
    human_labels: bool
    conflicts: _Conflicts
    metric: str | None = None
    metrics_found: set[str] = dataclasses.field(default_factory=set)
    # The files holding texts of the pairs (the others are score rows joined to pairs files).
    text_files: set[int] = dataclasses.field(default_factory=set)

    def where(self, file: int, line: int) -> str:
        return f"{self.files[file]}:{line}"


def _read_pairs_files(join: _Join, count: int, opener: Opener | None) -> None:
    """The pairs files (numbers 0..count-1) indexed by key; a key again with the same texts
    is collapsed and counted.

    Raises:
      UserError: a file is empty, or keys repeat with another article or summary.
    """
    conflicts = _Conflicts("pairs-file keys")
    pairs = join.pairs
    for file in range(count):
        path = join.files[file]
        found = False
        for line, row in fileio.iter_json_objects(path, opener):
            found = True
            article = teacher_rows.text(row, "article", path, line)
            summary = teacher_rows.text(row, "summary", path, line)
            identity = teacher_rows.key_of(row, join.key)
            digest = teacher_rows.digest("key", *identity)
            number = pairs.index.get(digest)
            if number is None:
                pairs.add(digest, file, line, article, summary)
                continue
            first = join.where(*pairs.place[number])
            changed = [
                field
                for field, text, known in zip(
                    ("article", "summary"), (article, summary), pairs.texts[number], strict=True
                )
                if teacher_rows.text_digest(text) != int(known)
            ]
            if changed:
                conflicts.add(
                    path, line, identity, f"has another {changed[0]} here than at {first}"
                )
            else:
                join.result._duplicate(f"{path}:{line}", first)
        if not found:
            raise fileio.empty_file_error(path, "JSON Lines pairs with article and summary")
        join.text_files.add(file)
    conflicts.check()


def _scored_pair(join: _Join, file: int, line: int, row: Mapping[str, Any], single: bool) -> None:
    result, path = join.result, join.files[file]
    try:
        article = teacher_rows.text(row, "article", path, line)
        summary = teacher_rows.text(row, "summary", path, line)
    except errors.DataError as error:
        result._drop(error)
        return
    p_yes: dict[Question, float] = {}
    labels: dict[Question, int] = {}
    for question in result.questions:
        field = teacher_rows.score_field(question)
        if field not in row and single and "score" in row:
            field = "score"  # one question's scores, as `score --questions N` writes them
        try:
            if field not in row:
                raise errors.DataError(path, line, teacher_rows.score_field(question), "missing")
            p_yes[question] = teacher_rows.probability(row[field], path, line, field)
            label_field = question_key(question)
            label = teacher_rows.human_label(row.get(label_field), path, line, label_field)
        except errors.DataError as error:
            result._drop(error)
            p_yes.pop(question, None)
            continue
        if join.human_labels and label is not None:
            labels[question] = label
    if not p_yes:
        return
    pairs = join.pairs
    digest = teacher_rows.digest("texts", article, summary)
    number = pairs.index.get(digest)
    if number is None:
        number = pairs.add(digest, file, line, article, summary)
        for question, p in p_yes.items():
            column = pairs.column[question]
            pairs.p[number, column] = p
            pairs.labels[number, column] = labels.get(question, _NO_LABEL)
        return
    first = pairs.scores_of(number)
    where = join.where(*pairs.place[number])
    if teacher_rows.same(first, (p_yes, labels)):
        result._duplicate(f"{path}:{line}", where)
    else:
        join.conflicts.add(
            path,
            line,
            teacher_rows.key_of(row, join.key),
            teacher_rows.difference(first, (p_yes, labels), where),
        )


def _score_row(join: _Join, file: int, line: int, row: Mapping[str, Any], joined: bool) -> None:
    """A score-file row's P(yes) for its pair and question; `joined`: the texts are in the
    pairs files (else in the row)."""
    result, path = join.result, join.files[file]
    join.metrics_found.add(str(row.get("metric")))
    if join.metric is not None and row.get("metric") != join.metric:
        return
    result.rows_read += 1
    try:
        question = teacher_rows.question_of_row(row["question"])
    except (ValueError, TypeError):
        result._drop(errors.DataError(path, line, "question", "expected a question"))
        return
    if question not in join.pairs.column:
        return
    pairs = join.pairs
    try:
        p = teacher_rows.probability(row.get("score"), path, line, "score")
        label = teacher_rows.human_label(row.get("label"), path, line, "label")
        identity = teacher_rows.key_of(row, join.key)
        digest = teacher_rows.digest("key", *identity)
        number = pairs.index.get(digest)
        if joined:
            if number is None:  # (with pairs files, only their keys are indexed)
                raise errors.DataError(
                    path,
                    line,
                    ",".join(join.key),
                    f"no pair with this key {identity!r} in the pairs files",
                )
        else:
            article = teacher_rows.text(row, "article", path, line)
        summary = teacher_rows.text(row, "summary", path, line) if not joined else None
    except errors.DataError as error:
        result._drop(error)
        return
    if not joined:
        if number is None:
            number = pairs.add(digest, file, line, article, summary)
        elif (teacher_rows.text_digest(article), teacher_rows.text_digest(summary)) != tuple(
            int(d) for d in pairs.texts[number]
        ):
            # (Score rows that carry their texts: the same key with another text.)
            changed = (
                "article"
                if teacher_rows.text_digest(article) != int(pairs.texts[number, 0])
                else "summary"
            )
            first = join.where(*pairs.place[number])
            join.conflicts.add(path, line, identity, f"has another {changed} here than at {first}")
            return
    column = pairs.column[question]
    kept_label = label if join.human_labels else None
    if not math.isnan(pairs.p[number, column]):
        first = join.where(*pairs.first[number, column])
        known = pairs.labels[number, column]
        before = (
            {question: float(pairs.p[number, column])},
            {} if known == _NO_LABEL else {question: int(known)},
        )
        again = ({question: p}, {} if kept_label is None else {question: kept_label})
        if teacher_rows.same(before, again):
            result._duplicate(f"{path}:{line}", first)
        else:
            join.conflicts.add(path, line, identity, teacher_rows.difference(before, again, first))
        return
    pairs.first[number, column] = (file, line)
    pairs.p[number, column] = p
    if kept_label is not None:
        pairs.labels[number, column] = kept_label


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


def _read_scores_file(join: _Join, file: int, opener: Opener | None, joined: bool) -> None:
    path = join.files[file]
    rows = fileio.iter_json_lines(path, opener)
    kind = None
    metrics_seen: set[str] = set()
    single = len(join.result.questions) == 1
    for line, row in rows:
        if isinstance(row, errors.DataError):
            join.result._drop(row)
            continue
        if kind is None:
            kind = "score rows" if teacher_rows.is_score_file_row(row) else "scored pairs"
            if kind == "scored pairs" or not joined:
                join.text_files.add(file)
        if kind == "scored pairs":
            join.result.rows_read += 1
            _scored_pair(join, file, line, row, single)
            continue
        if join.metric is None:
            metrics_seen.add(str(row.get("metric")))
            if len(metrics_seen) > 1:
                raise errors.UserError(
                    f"{path}:{line}: score rows of several metrics "
                    f"({', '.join(sorted(metrics_seen))}); name the teacher with metric="
                )
        _score_row(join, file, line, row, joined)
    if kind is None:
        raise fileio.empty_file_error(
            path, "JSON Lines of scored pairs (score_qN) or score-file rows"
        )


def _write_pairs(join: _Join, out: IO[str], opener: Opener | None) -> None:
    """The pairs with a score, each written where its texts are read again (the files in
    order: a pair's number and its texts' place increase together)."""
    pairs = join.pairs
    scored = ~np.all(np.isnan(pairs.p[: pairs.size]), axis=1)
    number = 0
    for file in sorted(join.text_files):
        while number < pairs.size and pairs.place[number, 0] < file:
            number += 1
        if number == pairs.size:
            break
        if pairs.place[number, 0] != file:
            continue
        for line, row in fileio.iter_json_lines(join.files[file], opener):
            if number == pairs.size or pairs.place[number, 0] != file:
                break
            if line != pairs.place[number, 1]:
                continue
            if scored[number]:
                p_yes, labels = pairs.scores_of(number)
                written = {
                    "article": row["article"],
                    "summary": row["summary"],
                    **teacher_rows.metadata(row),
                }
                for question, p in p_yes.items():
                    written[teacher_rows.score_field(question)] = p
                    if question in labels:
                        written[question_key(question)] = labels[question]
                out.write(json.dumps(written, ensure_ascii=False) + "\n")
            number += 1


def _counts(join: _Join) -> None:
    pairs, result = join.pairs, join.result
    p = pairs.p[: pairs.size]
    labelled = pairs.labels[: pairs.size] != _NO_LABEL
    has = ~np.isnan(p)
    result.pairs = int(np.any(has, axis=1).sum())
    for question, column in pairs.column.items():
        result.counts[question_key(question)] = int(has[:, column].sum())
        result.labelled[question_key(question)] = int((has[:, column] & labelled[:, column]).sum())


def _paths(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    values = [value] if isinstance(value, (str, os.PathLike)) else arguments.path_list(value, name)
    return [os.fspath(p) for p in values]


def join_teacher_scores(
    scores: str | os.PathLike | Sequence[str | os.PathLike],
    questions: Iterable[Question] | Question,
    output_dir: str | os.PathLike,
    *,
    pairs: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    key: Sequence[str] = DEFAULT_KEY,
    metric: str | None = None,
    human_labels: bool = True,
    opener: Opener | None = None,
    output_opener: OutputOpener | None = None,
    fingerprint: Mapping[str, Any] | None = None,
) -> TeacherScores:
    """Joins the teacher's P(yes) per pair and question into `{output_dir}/train.jsonl` and
    its counts into `{output_dir}/teacher_report.json` (module docstring).

    Args:
      scores: JSON Lines files of scored pairs or of score-file rows.
      questions: the questions to read (`arguments.parse_questions` with names: 4, "q4",
        "1,4", [1, 4], a rating set's "polite").
      output_dir: the folder of the split file and report (created; both written whole or
        not at all).
      pairs: for score-file rows without `article`: files with the texts, joined on `key`.
      key: the fields that identify a pair in score rows and pairs files.
      metric: with score-file rows of several metrics, the teacher's.
      human_labels: keep the human labels the rows carry (False: the teacher's alone).
      opener: opens a path as lines (default: local files; e.g. `tf.io.gfile.GFile` for
        gs://).
      output_opener: opens an output path for writing (default: local, atomic).
      fingerprint: kept in the report (`TeacherScores.fingerprint`).

    Returns:
      The counts (`TeacherScores`, without examples).

    Raises:
      UserError: a file cannot be read or is empty, `key` is a bare string
        (`arguments.string_list`), rows of several metrics without `metric`, a `metric`
        no row has (naming the metrics found), a pair or a pairs-file key given twice with
        different contents (module docstring), or no pair is left for a question.
    """
    paths = _paths(scores, "scores")
    if not paths:
        raise errors.UserError("no teacher score files given")
    pair_paths = _paths(pairs, "pairs")
    key = tuple(arguments.string_list(key, "key", "field name"))
    wanted = arguments.parse_questions(questions, names=True)
    if wanted is None:
        raise errors.UserError("no questions given: name the teacher's questions, e.g. [4]")
    join = _Join(
        files=[*pair_paths, *paths],
        result=TeacherScores(
            examples=[], questions=wanted, paths=paths, fingerprint=dict(fingerprint or {})
        ),
        pairs=_Pairs(wanted),
        key=key,
        human_labels=bool(human_labels),
        conflicts=_Conflicts("pairs"),
        metric=metric,
    )
    _read_pairs_files(join, len(pair_paths), opener)
    for file in range(len(pair_paths), len(join.files)):
        _read_scores_file(join, file, opener, joined=bool(pair_paths))
    join.conflicts.check()
    _check_metric(metric, join.metrics_found, paths)
    _counts(join)
    result = join.result
    for question in result.questions:
        if not result.count(question):
            raise errors.UserError(
                f"no pair has a teacher score for {question_key(question)} in "
                f"{', '.join(paths)} ({result.summary()})"
            )
    output_dir = os.fspath(output_dir)
    write = output_opener or fileio.atomic_writer
    with write(os.path.join(output_dir, SPLIT_FILE)) as out:
        _write_pairs(join, out, opener)
    with write(os.path.join(output_dir, REPORT_FILE)) as out:
        json.dump(result.as_dict(), out, indent=1, ensure_ascii=False)
        out.write("\n")
    return result


def read_report(output_dir: str | os.PathLike, opener: Opener | None = None) -> TeacherScores:
    """The counts of a joined folder (`teacher_report.json`).

    Raises:
      UserError: the report cannot be read.
    """
    path = os.path.join(os.fspath(output_dir), REPORT_FILE)
    if opener is None:
        fields = fileio.read_json(path, "a teacher report (join_teacher_scores)")
    else:
        with opener(path) as f:
            fields = json.loads("".join(f))
    try:
        return TeacherScores.from_dict(fields)
    except (KeyError, TypeError) as e:
        raise errors.UserError(f"{path}: not a teacher report ({e})") from None


def iter_joined(
    output_dir: str | os.PathLike, question: Question | None = None, opener: Opener | None = None
) -> Iterator[TeacherExample]:
    """The pairs of a joined folder in file order; `question`: only those scored for it."""
    path = os.path.join(os.fspath(output_dir), SPLIT_FILE)
    field = None if question is None else teacher_rows.score_field(question)
    for _, row in fileio.iter_json_objects(path, opener):
        if field is not None and field not in row:
            continue
        p_yes: dict[Question, float] = {}
        labels: dict[Question, int] = {}
        for name, value in row.items():
            if name.startswith("score_"):
                asked = name[len("score_") :]
                q: Question = int(asked[1:]) if asked[:1] == "q" and asked[1:].isdigit() else asked
                p_yes[q] = value
                label = row.get(question_key(q))
                if label is not None:
                    labels[q] = label
        yield TeacherExample(
            row["article"], row["summary"], p_yes, labels, teacher_rows.metadata(row)
        )


def read_teacher_scores(
    scores: str | os.PathLike | Sequence[str | os.PathLike],
    questions: Iterable[Question] | Question,
    *,
    pairs: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    key: Sequence[str] = DEFAULT_KEY,
    metric: str | None = None,
    human_labels: bool = True,
    opener: Opener | None = None,
) -> TeacherScores:
    """The teacher's P(yes) per pair and question, in memory: `join_teacher_scores` into a
    temporary folder, read back (for small sets; a large one is joined once and read from
    disk). Arguments and errors as `join_teacher_scores`'s."""
    with tempfile.TemporaryDirectory(prefix="teacher_scores_") as folder:
        result = join_teacher_scores(
            scores,
            questions,
            folder,
            pairs=pairs,
            key=key,
            metric=metric,
            human_labels=human_labels,
            opener=opener,
        )
        result.examples = list(iter_joined(folder))
    return result

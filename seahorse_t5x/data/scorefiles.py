"""Per-example score files: JSON Lines, one object per scored item.

Required fields: `metric` (name of the scorer), `benchmark` (`seahorse`, `mface`, `true`,
`metal`, ...), `question` (1..6, or the benchmark's dimension name), `label` (0/1, or a float
for graded benchmarks) and `score` (float, higher = more likely Yes; null or NaN when the
scorer produced none). Optional slice fields: `gem_id`, `language`, `dataset`, `system`.
Other fields are kept as extra columns and otherwise ignored.

Labels are checked per benchmark: SEAHORSE's labels and those of every registered
benchmark whose label kind is binary (TRUE, AggreFact, LLM-AggreFact) are 0 or 1 (graded
labels belong to graded benchmarks such as mFACE and METAL), and numbered SEAHORSE questions
are 1..6. So are the labels of a user's rating set (`tasks.register_rating_tasks`): its rows
say `"label_kind": "binary"`, an optional field any row may carry (`"graded"` allows any
finite number).

An item is identified by `gem_id` with `system` (and `summary` where a file carries it): in
SEAHORSE one article has summaries from several systems, so `gem_id` alone repeats. The same
metric, benchmark, question and item twice (in one file or across files) is an error, or,
when asked, an explicit de-duplication that keeps the first row and counts the others.

Rows whose score is null, NaN or infinite are read (their `score` is NaN) so the report can
count them; `drop_missing_scores` removes them and says how many per metric and question.

Every producer (`score`, `evaluate`, `t5x-scores`, `baselines`, `import-scores`, METAL's LLM
scores) builds its rows with `score_row` and writes them with `ScoreFileWriter` (or
`write_score_file`, a list of rows at once).
"""

from __future__ import annotations

import contextlib
import json
import math
import pathlib
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, TYPE_CHECKING

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.data import ratings, score_paths

if TYPE_CHECKING:  # pandas is imported where a frame is built: `--help` stays light
    import pandas as pd

REQUIRED_FIELDS: tuple[str, ...] = ("metric", "benchmark", "question", "label", "score")
# What identifies an item (with metric, benchmark and question): the fields a row carries.
ITEM_FIELDS: tuple[str, ...] = ("gem_id", "system", "summary")
# Columns added by the reader: which file and line a row came from.
SOURCE_FIELD = "source_file"
LINE_FIELD = "source_line"
# Benchmarks whose labels are 0/1 only besides the registered ones of label kind `binary`
# (`binary_label_benchmarks`); the others may carry graded labels.
BINARY_LABEL_BENCHMARKS: tuple[str, ...] = (constants.SEAHORSE_BENCHMARK,)
# The optional field that says what a row's label is: the integers 0/1, or any number.
LABEL_KIND_FIELD = "label_kind"
LABEL_KIND_BINARY = "binary"
LABEL_KIND_GRADED = "graded"
LABEL_KINDS: tuple[str, ...] = (LABEL_KIND_BINARY, LABEL_KIND_GRADED)
_SEAHORSE_QUESTIONS = frozenset(str(q) for q in constants.QUESTIONS)

_NUMBER = (int, float)


def normalize_question(value: object) -> str:
    """A question as the report spells it: `"4"` for 4, "4", "q4" or "Q4"; names kept as given.

    Raises:
      ValueError: the value is empty, a bool, or neither an int nor a string.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError("expected a question number 1..6 or a dimension name")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("expected a question number 1..6 or a dimension name, got ''")
        if text[:1] in "qQ" and text[1:].isdigit():
            return text[1:]
        return text
    raise ValueError(f"expected a question number or name, got {type(value).__name__}")


def binary_label_benchmarks() -> frozenset[str]:
    """The benchmarks whose score rows hold 0/1 labels only: SEAHORSE, and every registered
    benchmark whose label kind is binary (TRUE, AggreFact, LLM-AggreFact, one a user
    `register`s), with its language subset's name."""
    from seahorse_t5x.data.benchmarks import registry  # the registry's modules use this one

    names = set(BINARY_LABEL_BENCHMARKS)
    for benchmark in registry.benchmarks():
        if benchmark.label_kind == registry.LABEL_BINARY:
            names.add(benchmark.name)
            if benchmark.subset_name:
                names.add(benchmark.subset_name)
    return frozenset(names)


def graded_label_benchmarks() -> list[str]:
    """The registered benchmarks whose labels may be graded, sorted."""
    from seahorse_t5x.data.benchmarks import registry

    return [b.name for b in registry.benchmarks() if b.label_kind != registry.LABEL_BINARY]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def validate_row(
    row: object,
    path: str,
    line: int,
    exact_labels: bool = False,
    binary_benchmarks: frozenset[str] | None = None,
) -> dict:
    """Checks one score row and returns it normalized (question as str, label/score floats).

    Labels are numbers, never booleans. With `exact_labels` (rows read from a file) the
    labels of 0/1 benchmarks must be the integers 0 or 1, as in the split files; rows given
    to the writer may hold 1.0, which it writes as 1. `binary_benchmarks`: the benchmarks
    whose labels are 0/1 (None: `binary_label_benchmarks()`, looked up for this row).

    Raises:
      errors.DataError: naming the file, line and field that is wrong.
    """
    if not isinstance(row, Mapping):
        raise errors.DataError(
            path, line, None, f"expected a JSON object, got {type(row).__name__}"
        )
    for field in REQUIRED_FIELDS:
        if field not in row:
            raise errors.DataError(path, line, field, "required field is missing")
    out = dict(row)
    for field in ("metric", "benchmark"):
        value = row[field]
        if not isinstance(value, str) or not value.strip():
            raise errors.DataError(path, line, field, f"expected a non-empty string, got {value!r}")
        out[field] = value.strip()
    try:
        out["question"] = normalize_question(row["question"])
    except ValueError as e:
        raise errors.DataError(path, line, "question", f"{e} (got {row['question']!r})") from None
    out["label"] = _checked_label(
        row, out["benchmark"], path, line, exact_labels, binary_benchmarks
    )
    # A numbered SEAHORSE question is 1..6. A named one is the score task's name, which
    # `evaluate` writes for tasks that are not one question's (e.g. the NLI score tasks).
    if (
        out["benchmark"] == constants.SEAHORSE_BENCHMARK
        and _is_number(out["question"])
        and out["question"] not in _SEAHORSE_QUESTIONS
    ):
        raise errors.DataError(
            path, line, "question", f"SEAHORSE questions are 1..6, got {row['question']!r}"
        )
    out["score"] = _checked_score(row["score"], path, line)
    for field in (*constants.SLICE_FIELDS, "summary"):
        value = row.get(field)
        if isinstance(value, float) and math.isnan(value):
            out[field] = value = None  # a missing value in a pandas-made row
        if value is not None and not isinstance(value, str):
            raise errors.DataError(path, line, field, f"expected a string or null, got {value!r}")
    return out


def _checked_label(
    row: Mapping,
    benchmark: str,
    path: str,
    line: int,
    exact_labels: bool,
    binary_benchmarks: frozenset[str] | None,
) -> float:
    """The row's label as a float, checked as `validate_row` says (with its `label_kind`).

    Raises:
      errors.DataError: a label that is no finite number, a bad `label_kind`, or a label
        other than 0/1 (with `exact_labels`, the integers 0/1) where the labels are binary.
    """
    label = row["label"]
    if isinstance(label, bool):
        # bool is an int subclass; the split files refuse true/false as labels too.
        raise errors.DataError(
            path,
            line,
            "label",
            f"expected 1 (Yes), 0 (No) or a graded number, got {label!r}; true/false are not "
            "labels",
        )
    if not isinstance(label, _NUMBER) or not math.isfinite(label):
        raise errors.DataError(
            path, line, "label", f"expected 0/1 or a finite number, got {label!r}"
        )
    kind = row.get(LABEL_KIND_FIELD)
    if kind is not None and kind not in LABEL_KINDS:
        raise errors.DataError(
            path,
            line,
            LABEL_KIND_FIELD,
            f"expected {' or '.join(map(repr, LABEL_KINDS))} or null, got {kind!r}",
        )
    if binary_benchmarks is None:
        binary_benchmarks = binary_label_benchmarks()
    binary_benchmark = benchmark in binary_benchmarks
    binary = binary_benchmark or kind == LABEL_KIND_BINARY or ratings.is_rating_benchmark(benchmark)
    if binary and float(label) not in (0.0, 1.0):
        raise errors.DataError(
            path,
            line,
            "label",
            f"{benchmark} labels are 0 (No) or 1 (Yes), got {label!r}; "
            + (
                "graded labels belong to graded benchmarks "
                f"({', '.join(graded_label_benchmarks())})"
                if binary_benchmark
                else "the row's label_kind is binary"
                if kind == LABEL_KIND_BINARY
                else "a registered rating set's labels are 0/1"
            ),
        )
    if binary and exact_labels and type(label) is not int:
        # As in the split files, a 0/1 label is written 0 or 1 (the writer writes 1.0 as 1).
        raise errors.DataError(
            path,
            line,
            "label",
            f"{benchmark} labels are 0 (No) or 1 (Yes), got {label!r}; write 1 or 0, not a decimal",
        )
    return float(label)


def _checked_score(score: object, path: str, line: int) -> float:
    """A row's score as a float: NaN for a missing one (null), -inf (log 0) or NaN, which
    the report counts as missing.

    Raises:
      errors.DataError: a score that is neither a number nor null.
    """
    if score is None:
        return math.nan
    if isinstance(score, bool) or not isinstance(score, _NUMBER):
        raise errors.DataError(path, line, "score", f"expected a number or null, got {score!r}")
    return float(score) if math.isfinite(score) else math.nan


def score_row(
    *,
    metric: str,
    benchmark: str,
    question: int | str,
    label: object,
    score: object,
    details: Mapping[str, object] | None = None,
    label_kind: str | None = None,
    slices: Mapping[str, object] | None = None,
    extra: Mapping[str, object] | None = None,
) -> dict:
    """One score-file row, its fields in the order every score file holds them.

    The order: the required fields (`metric`, `benchmark`, `question`, `label`, `score`),
    then `details` (what the score is made of, e.g. `log_p_yes`, `score_kind`, `llm_score`),
    `label_kind`, the slice fields (`constants.SLICE_FIELDS`, in that order) and `extra`.
    For example `score_row(metric="m", benchmark="seahorse", question=4, label=1, score=0.9,
    slices={"system": "t5", "gem_id": "x-1", "summary": "..."})` is
    `{"metric": "m", "benchmark": "seahorse", "question": 4, "label": 1, "score": 0.9,
    "gem_id": "x-1", "system": "t5"}`.

    Args:
      metric, benchmark, question, label, score: the required fields, as given (the writer
        checks and normalizes them).
      details: fields that describe the score, right after it.
      label_kind: `"binary"` or `"graded"` (`LABEL_KIND_FIELD`); left out when None.
      slices: a mapping holding the slice fields (e.g. a split-file row or a benchmark
        example): those it has are kept, other keys ignored. Leave out the ones a row
        should not carry before passing it.
      extra: further columns, in their order (kept by the reader, ignored otherwise).

    Raises:
      ValueError: a field given twice (e.g. a required field in `extra`).
    """
    row: dict = {
        "metric": metric,
        "benchmark": benchmark,
        "question": question,
        "label": label,
        "score": score,
    }
    more: list[tuple[str, object]] = list((details or {}).items())
    if label_kind is not None:
        more.append((LABEL_KIND_FIELD, label_kind))
    if slices is not None:
        more += [(k, slices[k]) for k in constants.SLICE_FIELDS if k in slices]
    more += list((extra or {}).items())
    for key, value in more:
        if key in row:
            raise ValueError(f"score_row: field {key!r} given twice")
        row[key] = value
    return row


class ScoreFileWriter:
    """Writes score rows to one file as JSON Lines (UTF-8), row by row.

    The file appears under its name only when the `with` block ends without an exception
    (`fileio.atomic_writer`); parent folders are created. With `validate` (the default) each
    row is checked with `validate_row` (a `DataError` names the file and the row's 1-based
    position) and written normalized: `question` as an int where it is a number, labels
    1.0/0.0 as 1/0, and a missing score (None/NaN) or NaN in any field as `null`. Without it
    rows are written as given (the caller has checked them, e.g. against its input's lines).

        with scorefiles.ScoreFileWriter(path) as writer:
            for ...:
                writer.write(scorefiles.score_row(metric=..., ...))
        print(writer.count)
    """

    def __init__(self, path: str | pathlib.Path, *, validate: bool = True) -> None:
        self.path = pathlib.Path(path)
        self.validate = validate
        self.count = 0
        self._stack = contextlib.ExitStack()
        self._file: IO[str] | None = None
        self._binary: frozenset[str] | None = None

    def __enter__(self) -> ScoreFileWriter:
        self._binary = binary_label_benchmarks()
        self._file = self._stack.enter_context(
            fileio.atomic_writer(self.path, "w", encoding="utf-8")
        )
        return self

    def __exit__(self, *exc_info: object) -> bool | None:
        self._file = None
        return self._stack.__exit__(*exc_info)

    def write(self, row: Mapping) -> None:
        """Writes one row (checked first with `validate`).

        Raises:
          errors.DataError: with `validate`, a field missing or wrong; the file is then not
            written when the error leaves the `with` block.
          RuntimeError: outside the `with` block.
        """
        if self._file is None:
            raise RuntimeError(f"write {self.path} inside `with ScoreFileWriter(...)`")
        if self.validate:
            line = json.dumps(
                _record_for_file(row, str(self.path), self.count + 1, self._binary),
                ensure_ascii=False,
                allow_nan=False,
                default=_to_json,
            )
        else:
            line = json.dumps(row, ensure_ascii=False)
        self._file.write(line + "\n")
        self.count += 1


def _record_for_file(
    row: Mapping, path: str, line: int, binary_benchmarks: frozenset[str] | None = None
) -> dict:
    clean = validate_row(row, path, line, binary_benchmarks=binary_benchmarks)
    # NaN (pandas' missing value) in any field is written as null: strict JSON.
    record = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
    record["question"] = _question_for_file(clean["question"])
    record["label"] = _plain_number(clean["label"])
    record["score"] = None if math.isnan(clean["score"]) else clean["score"]
    return record


def write_score_file(path: str | pathlib.Path, rows: Iterable[Mapping]) -> int:
    """Writes score rows (see `ScoreFileWriter`, validating each).

    Returns:
      The number of rows written.

    Raises:
      errors.DataError: a row lacks a required field or holds a wrong value (the line is
        the row's 1-based position); nothing is left half-written.
    """
    with ScoreFileWriter(path) as writer:
        for row in rows:
            writer.write(row)
    return writer.count


def _question_for_file(normalized: str) -> int | str:
    return int(normalized) if normalized.isdigit() else normalized


def _plain_number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def _to_json(value: object) -> object:
    # numpy scalars in slice/extra fields.
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def check_not_plain_scores(row: object, path: str | pathlib.Path) -> None:
    """Refuses, in one line, the plain output of `seahorse-t5x score` (a row per input with
    `score` or `score_q1`..`score_q6` but no metric, benchmark, question or label).

    Raises:
      UserError: naming what the file lacks and the command that writes a score file.
    """
    if not isinstance(row, Mapping) or "metric" in row or "summary" not in row:
        return
    columns = [k for k in row if k == "score" or k.startswith("score_q")]
    if not columns:
        return
    lacks = [field for field in REQUIRED_FIELDS if field not in row and field != "score"]
    raise errors.UserError(
        f"{path} is `seahorse-t5x score` output ({', '.join(columns)} per row) without "
        f"{', '.join(lacks)}: score rows that carry labels (`label`, or q1..q6) with "
        "`seahorse-t5x score ... --score_file --metric NAME`, or join these scores "
        f"to a split's labels with `seahorse-t5x import-scores --external {path} --metric NAME "
        "--questions N --data_dir DIR --output FILE`"
    )


def read_score_file(path: str | pathlib.Path) -> pd.DataFrame:
    """Reads one score file (see `read_score_files`)."""
    import pandas as pd

    path = pathlib.Path(path)
    if not path.is_file():
        raise errors.UserError(f"score file not found: {path}")
    records = []
    binary = binary_label_benchmarks()
    for number, row in fileio.iter_json_objects(path):
        if number == 1:
            check_not_plain_scores(row, path)
        record = validate_row(row, str(path), number, exact_labels=True, binary_benchmarks=binary)
        record[SOURCE_FIELD] = str(path)
        record[LINE_FIELD] = number
        records.append(record)
    if not records:
        raise fileio.empty_file_error(
            path, "one score row per line (a JSON object with metric, benchmark, score, ...)"
        )
    return _normalize_columns(pd.DataFrame.from_records(records))


def _normalize_columns(frame: pd.DataFrame) -> pd.DataFrame:
    for field in (*constants.SLICE_FIELDS, "summary"):
        if field not in frame.columns:
            frame[field] = None
        # Files without the field leave NaN after concat: absent is None, like a null.
        column = frame[field].astype(object)
        frame[field] = column.where(column.notna(), None)
    frame["label"] = frame["label"].astype("float64")
    frame["score"] = frame["score"].astype("float64")
    return frame


def read_score_files(
    paths: Sequence[str | pathlib.Path], drop_duplicates: bool = False
) -> pd.DataFrame:
    """Reads and concatenates score files (or folders of them) into one table.

    Args:
      paths: score files, or folders standing for the `*.jsonl` files in them and their
        sub-folders (`score_paths.score_file_paths`).
      drop_duplicates: keep the first row of each duplicated item and record how many were
        dropped in `frame.attrs["duplicates_dropped"]` (`{"metric/benchmark/question": n}`)
        instead of raising.

    Returns:
      A DataFrame with the required fields (`question` as str, `label` and `score` float,
      missing scores NaN), the slice fields and `summary` (None where absent), every extra
      field, `source_file` and `source_line`; `frame.attrs["score_files"]` lists the files
      read.

    Raises:
      errors.UserError: one path given bare, no paths, a path given twice, or a file is
        missing.
      errors.DataError: a line is not JSON or a field is missing or wrong, or (unless
        `drop_duplicates`) the same item is scored twice for one metric and question.
    """
    import pandas as pd

    paths = score_paths.score_file_paths(paths)
    frame = pd.concat([read_score_file(p) for p in paths], ignore_index=True, sort=False)
    frame = _normalize_columns(frame)
    frame = _handle_duplicates(frame, drop_duplicates)
    frame.attrs["score_files"] = [str(p) for p in paths]
    return frame


def _item_keys(frame: pd.DataFrame) -> pd.Series:
    """(metric, benchmark, question, gem_id, system, summary) per row; absent fields as ""."""
    import pandas as pd

    columns = ["metric", "benchmark", "question", *ITEM_FIELDS]
    values = frame[columns].astype(object).where(frame[columns].notna(), "")
    return pd.Series(list(map(tuple, values.to_numpy())), index=frame.index)


def duplicate_rows(frame: pd.DataFrame) -> pd.Series:
    """True for each row whose metric, benchmark, question and item an earlier row has.

    Rows without a `gem_id` carry no item identity and are never duplicates.
    """
    keys = _item_keys(frame)
    return keys.duplicated(keep="first") & frame["gem_id"].notna()


def _handle_duplicates(frame: pd.DataFrame, drop_duplicates: bool) -> pd.DataFrame:
    repeated = duplicate_rows(frame)
    frame.attrs["duplicates_dropped"] = {}
    if not repeated.any():
        return frame
    if not drop_duplicates:
        keys = _item_keys(frame)
        row = frame[repeated].iloc[0]
        first = frame[keys == keys[repeated].iloc[0]].iloc[0]
        item = ", ".join(f"{k} {row[k]!r}" for k in ITEM_FIELDS if row[k] is not None)
        raise errors.DataError(
            row[SOURCE_FIELD],
            int(row[LINE_FIELD]),
            None,
            f"metric {row['metric']!r}, benchmark {row['benchmark']!r}, question "
            f"{row['question']}, item ({item}) already scored at {first[SOURCE_FIELD]}:"
            f"{int(first[LINE_FIELD])} ({int(repeated.sum())} duplicated row(s) in all); "
            "remove them, or pass --drop_duplicates to keep the first of each and count the rest",
        )
    grouped = frame[repeated].groupby(["metric", "benchmark", "question"], sort=True).size()
    kept = frame[~repeated].reset_index(drop=True)
    kept.attrs["duplicates_dropped"] = {"/".join(map(str, k)): int(n) for k, n in grouped.items()}
    return kept


def drop_missing_scores(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Removes rows without a usable score and counts them.

    Returns:
      The remaining rows and `{"metric/benchmark/question": dropped}` for each group that
      lost rows (empty when none did).
    """
    missing = frame["score"].isna()
    counts: dict[str, int] = {}
    if missing.any():
        grouped = frame[missing].groupby(["metric", "benchmark", "question"], sort=True).size()
        counts = {"/".join(map(str, key)): int(n) for key, n in grouped.items()}
    return frame[~missing].reset_index(drop=True), counts


def first_missing_score(frame: pd.DataFrame) -> str | None:
    """`FILE:LINE` of the first row (in the order read) whose score is null, NaN or
    infinite; None when every row has a score."""
    missing = frame[frame["score"].isna()]
    if missing.empty:
        return None
    row = missing.iloc[0]
    return f"{row[SOURCE_FIELD]}:{int(row[LINE_FIELD])}"

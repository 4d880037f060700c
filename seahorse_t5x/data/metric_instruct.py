"""MetricInstruct, TIGERScore's training data, read and checked row by row.

MetricInstruct (Hugging Face dataset `TIGER-Lab/MetricInstruct`) is released as
`data/mix_instruct_v1.2.json`: a JSON array of objects, as TIGERScore's scripts write their
data (`json.dump(..., indent=4, ensure_ascii=False)`). A JSON Lines file (one object per
line) is read as well; the first character says which (`[`: an array). The fields, named as
TIGERScore's code reads them (tigerscore/finetune/format_data_v2.py: `instruction`,
`input_context`, `hypo_output`, `errors`; the README of 2023-10 and
tigerscore/scorer/tigerscore.py: `task`):

  task            the task type: summarization, translation, data2text, long-form QA, mathQA,
                  instruction-following (`formats.error_analysis.TASK_TYPES`); optional (a
                  string or null): a row without one is in no task type's subset
  instruction     a non-empty string
  input_context   a string, possibly empty (the source: article, text to translate, table)
  hypo_output     a non-empty string: the output evaluated
  errors          the error analysis as TIGERScore renders it
                  (`formats.error_analysis.render_analysis`): a string
  id, source      optional (a string, an integer for `id`, or null): TIGERScore's code names
                  neither; they are kept when a file has them. A row without `id` is
                  `{file stem}:{line}`.

Other fields are ignored. A bad row is dropped and counted, never lost silently: a line that
is not UTF-8 or not JSON (JSON Lines), an element that is not an object, a missing or
mistyped field, or an analysis that `parse_analysis` refuses becomes one `errors.DataError`
(file, line, field, reason) in `MetricInstructFile.dropped`, and
`rows_kept + rows_dropped == rows_read`. A row with one bad error entry (a severity other
than Major/Minor, a reduction outside [0.5, 5], a missing `Explanation 2:` line) is dropped
whole, its field naming the entry (`errors[2].severity`): an analysis without one of its
errors would teach a wrong score. In a JSON array the line of a row is the line of its `{`.

No TensorFlow or JAX here (`seahorse_t5x.tasks.explanations` makes SeqIO tasks of it).
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping

from seahorse_t5x import errors, fileio
from seahorse_t5x.formats import error_analysis

Opener = Callable[[str], contextlib.AbstractContextManager[Iterable[str]]]

TASK_FIELD = "task"
INSTRUCTION_FIELD = "instruction"
CONTEXT_FIELD = "input_context"
OUTPUT_FIELD = "hypo_output"
ERRORS_FIELD = "errors"
ID_FIELD = "id"
SOURCE_FIELD = "source"
# The field of a drop that concerns the whole row (not UTF-8, not JSON, not an object).
WHOLE_ROW = "row"
# How the report counts rows without a task type.
NO_TASK = "(none)"
# Drops listed by `MetricInstructFile.as_dict`; the counts are always complete.
MAX_DROP_EXAMPLES = 10

JSON_ARRAY = "json"
JSON_LINES = "jsonl"


@dataclasses.dataclass(frozen=True)
class MetricInstructRecord:
    """One checked row.

    Attributes:
      task: the task type, or None.
      instruction, input_context: the task's instruction and input (the source).
      hypothesis_output: the output evaluated (the release's `hypo_output`).
      errors: the analysis' errors, in order.
      id: the row's `id`, else `{file stem}:{line}`.
      source: the row's `source`, or None.
      line: where the row starts in its file (1-based).
    """

    task: str | None
    instruction: str
    input_context: str
    hypothesis_output: str
    errors: tuple[error_analysis.ExplainedError, ...]
    id: str
    source: str | None
    line: int

    @property
    def analysis(self) -> error_analysis.ErrorAnalysis:
        return error_analysis.ErrorAnalysis.of(self.errors)

    @property
    def score(self) -> float:
        """Minus the sum of the reductions (0.0: no error)."""
        return self.analysis.score


def _json_text(value: object) -> str:
    """A value as the file spells it, for messages (long strings cut)."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _string(path: str, line: int, record: Mapping, field: str, *, empty_ok: bool) -> str:
    value = record.get(field)
    if field not in record or value is None:
        raise errors.DataError(path, line, field, "missing; expected a string")
    if not isinstance(value, str):
        raise errors.DataError(path, line, field, f"expected a string, got {_json_text(value)}")
    if not empty_ok and not value.strip():
        raise errors.DataError(path, line, field, "empty; expected a non-empty string")
    return value


def _optional(path: str, line: int, record: Mapping, field: str, types: tuple) -> object:
    value = record.get(field)
    if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
        kinds = "a string, an integer" if int in types else "a string"
        raise errors.DataError(
            path, line, field, f"expected {kinds} or null, got {_json_text(value)}"
        )
    return value


def check_row(path: str, line: int, record: Mapping, default_id: str) -> MetricInstructRecord:
    """One MetricInstruct row, checked, its analysis parsed.

    Args:
      path, line: where the row was read (for the error).
      record: the row's JSON object.
      default_id: the `id` of a row without one.

    Raises:
      DataError: naming the file, line and field that is wrong (`errors[k].severity` for a
        field of the k-th error) and what was expected.
    """
    task = _optional(path, line, record, TASK_FIELD, (str,))
    if task is not None and not task.strip():
        raise errors.DataError(path, line, TASK_FIELD, "empty; expected a task type or null")
    instruction = _string(path, line, record, INSTRUCTION_FIELD, empty_ok=False)
    context = _string(path, line, record, CONTEXT_FIELD, empty_ok=True)
    output = _string(path, line, record, OUTPUT_FIELD, empty_ok=False)
    analysis_text = _string(path, line, record, ERRORS_FIELD, empty_ok=False)
    try:
        analysis = error_analysis.parse_analysis(analysis_text)
    except error_analysis.AnalysisParseError as e:
        raise errors.DataError(path, line, e.field, e.reason) from None
    row_id = _optional(path, line, record, ID_FIELD, (str, int))
    source = _optional(path, line, record, SOURCE_FIELD, (str,))
    return MetricInstructRecord(
        task=task,
        instruction=instruction,
        input_context=context,
        hypothesis_output=output,
        errors=analysis.errors,
        id=default_id if row_id is None else str(row_id),
        source=source,
        line=line,
    )


# ----------------------------------------------------------------------------- files


def _open(path: str, opener: Opener | None, invalid: str = "raise"):
    return opener(path) if opener else fileio.open_text_input(path, invalid=invalid)


def file_format(path: str | os.PathLike, opener: Opener | None = None) -> str:
    """`json` (a JSON array: the first non-blank character is `[`) or `jsonl`.

    Raises:
      UserError: the file cannot be read.
      DataError: the file is empty.
    """
    path = os.fspath(path)
    with _open(path, opener, invalid="replace") as f:
        for text in f:
            stripped = text.lstrip("\ufeff \t\r\n")
            if stripped:
                return JSON_ARRAY if stripped.startswith("[") else JSON_LINES
    raise fileio.empty_file_error(path, "a JSON array of MetricInstruct rows, or JSON Lines")


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, c in enumerate(text) if c == "\n")
    return starts


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _iter_json_array(path: str, opener: Opener | None) -> Iterator[tuple[int, object]]:
    """(1-based line of the element's first character, element) for each array element.

    Raises:
      DataError: the file is not one JSON array (a syntax error is reported with its line:
        the elements after it cannot be located, so the file is refused whole).
    """
    with _open(path, opener) as f:
        text = "".join(f).lstrip("\ufeff")
    starts = _line_starts(text)

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset)

    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if not text.startswith("[", position):
        raise errors.DataError(path, line_of(position), None, "expected a JSON array")
    position = _skip_space(text, position + 1)
    if not text.startswith("]", position):
        while True:
            try:
                element, end = decoder.raw_decode(text, position)
            except json.JSONDecodeError as e:
                raise errors.DataError(
                    path,
                    e.lineno,
                    None,
                    f"not JSON ({e.msg}); a JSON array is read whole, so no row of it is kept",
                ) from None
            yield line_of(position), element
            position = _skip_space(text, end)
            if text.startswith(",", position):
                position = _skip_space(text, position + 1)
                continue
            if text.startswith("]", position):
                break
            raise errors.DataError(
                path, line_of(position), None, "not JSON: expected ',' or ']' after an element"
            )
    rest = _skip_space(text, position + 1)
    if rest < len(text):
        raise errors.DataError(path, line_of(rest), None, "not JSON: text after the array")


def _stem(path: str) -> str:
    base = os.path.basename(path)
    for suffix in (".jsonl", ".json"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def iter_records(
    path: str | os.PathLike, opener: Opener | None = None
) -> Iterator[tuple[int, MetricInstructRecord | errors.DataError]]:
    """(1-based line, checked record or the `DataError` that drops it) per row, in file order.

    Args:
      path: a MetricInstruct file (a JSON array or JSON Lines).
      opener: opens the path as an iterable of lines (default `fileio.open_text_input`;
        the SeqIO tasks pass a `tf.io.gfile` opener for remote files).

    Raises:
      UserError: the file cannot be read.
      DataError: the file is empty, or a JSON array that is not valid JSON.
    """
    path = os.fspath(path)
    stem = _stem(path)
    if file_format(path, opener) == JSON_ARRAY:
        rows: Iterator[tuple[int, object]] = _iter_json_array(path, opener)
    else:
        rows = fileio.iter_json_lines(path, opener=opener)
    for line, record in rows:
        if isinstance(record, errors.DataError):
            yield line, record
            continue
        if not isinstance(record, dict):
            kind = type(record).__name__
            yield line, errors.DataError(path, line, None, f"expected a JSON object, got {kind}")
            continue
        try:
            yield line, check_row(path, line, record, f"{stem}:{line}")
        except errors.DataError as e:
            yield line, e


@dataclasses.dataclass
class MetricInstructFile:
    """What one MetricInstruct file holds: counts per task type and every drop.

    Attributes:
      path: the file read.
      format: `json` (an array) or `jsonl`.
      rows_read: rows (array elements, or non-blank lines).
      rows_kept: rows that passed the check.
      dropped: one `DataError` (file, line, field, reason) per dropped row, in file order.
      task_types: kept rows per task type (None: rows without one).
      errors_kept: errors in the kept rows' analyses.
      severities: kept errors per severity.
      free_form_aspects: kept errors whose aspect is not one of their task type's
        predefined aspects (`error_analysis.TASK_ASPECTS`); counted, not dropped.
    """

    path: str
    format: str
    rows_read: int = 0
    rows_kept: int = 0
    dropped: list[errors.DataError] = dataclasses.field(default_factory=list)
    task_types: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    errors_kept: int = 0
    severities: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    free_form_aspects: int = 0

    @property
    def rows_dropped(self) -> int:
        return len(self.dropped)

    def add(self, row: MetricInstructRecord | errors.DataError) -> None:
        """Counts one row of `iter_records`."""
        self.rows_read += 1
        if isinstance(row, errors.DataError):
            self.dropped.append(row)
            return
        self.rows_kept += 1
        self.task_types[row.task] += 1
        self.errors_kept += len(row.errors)
        predefined = error_analysis.aspects_for(row.task or "")
        for error in row.errors:
            self.severities[error.severity] += 1
            self.free_form_aspects += error.aspect not in predefined

    def rows_of(self, task: str | None) -> int:
        """Kept rows of one task type (None: every kept row)."""
        return self.rows_kept if task is None else self.task_types[task]

    def drop_counts(self) -> dict[str, int]:
        """Dropped rows per field (`row` for a row that is not a JSON object), sorted."""
        counts = collections.Counter(d.field or WHOLE_ROW for d in self.dropped)
        return dict(sorted(counts.items()))

    def summary(self) -> str:
        """One line: read, kept and dropped rows, the drops per field and the first drop."""
        line = (
            f"{self.path}: read {self.rows_read} rows, kept {self.rows_kept}, "
            f"dropped {self.rows_dropped}"
        )
        if self.dropped:
            counts = ", ".join(f"{k} {v}" for k, v in self.drop_counts().items())
            line += f" ({counts}; first: {self.dropped[0]})"
        return line

    def as_dict(self) -> dict:
        """The report as JSON-ready data (the first `MAX_DROP_EXAMPLES` drops listed)."""
        return {
            "path": self.path,
            "format": self.format,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "rows_dropped": self.rows_dropped,
            "dropped_by_field": self.drop_counts(),
            "drop_examples": [str(d) for d in self.dropped[:MAX_DROP_EXAMPLES]],
            "task_types": dict(
                sorted((NO_TASK if k is None else k, v) for k, v in self.task_types.items())
            ),
            "errors_kept": self.errors_kept,
            "severities": dict(sorted(self.severities.items())),
            "free_form_aspects": self.free_form_aspects,
        }


def read_file(path: str | os.PathLike, opener: Opener | None = None) -> MetricInstructFile:
    """Reads a whole file into its counts and drops (the rows are not kept: `iter_records`
    reads them again; `load` keeps them).

    Raises:
      UserError: the file cannot be read.
      DataError: the file is empty, or a JSON array that is not valid JSON.
    """
    return load(path, opener, keep_rows=False)[1]


def load(
    path: str | os.PathLike, opener: Opener | None = None, *, keep_rows: bool = True
) -> tuple[list[MetricInstructRecord], MetricInstructFile]:
    """The kept records of a file, in order, and its report.

    Raises:
      UserError: the file cannot be read.
      DataError: the file is empty, or a JSON array that is not valid JSON.
    """
    path = os.fspath(path)
    report = MetricInstructFile(path, file_format(path, opener))
    records: list[MetricInstructRecord] = []
    for _, row in iter_records(path, opener):
        report.add(row)
        if keep_rows and not isinstance(row, errors.DataError):
            records.append(row)
    # The accounting every consumer relies on: nothing is lost silently.
    assert report.rows_kept + report.rows_dropped == report.rows_read
    return records, report

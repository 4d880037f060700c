"""Reading and writing files the same way in every command.

Three rules hold for every file this package reads or writes:

- A text input is UTF-8; a leading byte-order mark (as spreadsheet exports write) is not
  text and is dropped; bytes that are not UTF-8 are reported as `file:line`
  (`open_text_input`). JSON Lines files have one reader (`iter_json_objects`, and
  `iter_json_lines` for readers that drop and count), and so have CSV and TSV tables
  (`open_table`, `iter_table_records`).
- An output is written under a temporary name in its own folder and renamed into place
  only once it is complete, so a failed run (full disk, kill, bad input found late) never
  leaves a truncated or empty file under the final name (`atomic_writer`,
  `atomic_write_text`).
- An output path is checked before long work starts: a file where a folder is expected (or
  the reverse), a parent that is a file, or a read-only location is a one-line error
  (`check_output_path`).

Every failure is an `errors.UserError` (or `errors.DataError`) naming the path.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import dataclasses
import hashlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Literal

from seahorse_t5x import errors

__all__ = [
    "Table",
    "TableRecord",
    "TableRow",
    "TextInput",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_writer",
    "check_input_file",
    "check_output_path",
    "empty_file_error",
    "iter_json_lines",
    "read_json",
    "iter_json_objects",
    "iter_table_records",
    "open_table",
    "open_text_input",
    "table_kind",
]

_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


class TextInput:
    """A UTF-8 text file read line by line, with line numbers for error messages.

    Lines keep their line endings (as with `open(..., newline="")`, which is what the
    `csv` module wants); `json.loads` ignores them. Iterate over it, or call `readline()` /
    `read()`. `line_number` is the 1-based number of the last line returned.

    Attributes:
      path: the file, as given.
      line_number: 1-based number of the last line returned (0 before the first).
      invalid_lines: with `invalid="replace"`, the numbers of the lines that were not
        UTF-8 (their bad bytes are returned as U+FFFD), for the caller to drop and count.
    """

    def __init__(self, path: str | os.PathLike, invalid: Literal["raise", "replace"] = "raise"):
        if invalid not in ("raise", "replace"):
            raise ValueError(f"invalid must be 'raise' or 'replace', not {invalid!r}")
        self.path = os.fspath(path)
        self.line_number = 0
        self.invalid_lines: list[int] = []
        self._invalid = invalid
        check_input_file(self.path)
        try:
            self._file = open(self.path, "rb")  # noqa: SIM115 - closed by close()/__exit__
        except OSError as e:
            raise errors.UserError(f"cannot read {self.path}: {_reason(e)}") from e

    def readline(self) -> str:
        """The next line with its line ending, or "" at the end of the file."""
        try:
            raw = self._file.readline()
        except OSError as e:
            raise errors.UserError(f"cannot read {self.path}: {_reason(e)}") from e
        if not raw:
            return ""
        self.line_number += 1
        if self.line_number == 1:
            if raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            elif raw.startswith(_UTF16_BOMS):
                raise errors.DataError(
                    self.path, 1, None, "the file is UTF-16 (byte-order mark); expected UTF-8"
                )
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if self._invalid == "raise":
                raise errors.DataError(
                    self.path,
                    self.line_number,
                    None,
                    f"invalid UTF-8 (byte 0x{raw[e.start]:02x} at byte {e.start + 1} of the "
                    "line); expected UTF-8 text",
                ) from None
            self.invalid_lines.append(self.line_number)
            return raw.decode("utf-8", errors="replace")

    def read(self) -> str:
        """The rest of the file as one string."""
        return "".join(iter(self.readline, ""))

    def __iter__(self) -> Iterator[str]:
        return iter(self.readline, "")

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> TextInput:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def check_input_file(path: str | os.PathLike) -> None:
    """Refuses an input that is not a file, in the words every reader uses.

    Raises:
      UserError: `cannot read PATH: it is a folder; expected a file`, or `cannot read PATH:
        No such file or directory`.
    """
    if os.path.isdir(path):
        raise errors.UserError(f"cannot read {os.fspath(path)}: it is a folder; expected a file")
    if not os.path.exists(path):
        raise errors.UserError(f"cannot read {os.fspath(path)}: No such file or directory")


def open_text_input(
    path: str | os.PathLike, invalid: Literal["raise", "replace"] = "raise"
) -> TextInput:
    """Opens a UTF-8 text input (JSON Lines, CSV, TSV, plain text).

    Args:
      path: the file.
      invalid: "raise" turns bytes that are not UTF-8 into a `DataError` with the file and
        line; "replace" decodes them as U+FFFD and records the line in `invalid_lines`
        (for readers that drop and count bad rows).

    Returns:
      A `TextInput` (a context manager, iterable over lines).

    Raises:
      UserError: the file is missing, a folder, or unreadable.
      DataError: (on reading) a line is not UTF-8, or the file is UTF-16.
    """
    return TextInput(path, invalid=invalid)


def empty_file_error(
    path: str | os.PathLike, expected: str, header_only: bool = False
) -> errors.DataError:
    """The one message for an input with nothing in it: `PATH: empty file; expected ...`.

    Every reader says it the same way when a file holds no data: 0 bytes, only whitespace
    or blank lines, or (`header_only`) a table's header and no row after it.

    Args:
      path: the file.
      expected: what the file should hold (`one JSON object per line with ...`).
      header_only: the file has a header row and nothing after it.
    """
    what = "empty file (a header and no rows)" if header_only else "empty file"
    return errors.DataError(os.fspath(path), None, None, f"{what}; expected {expected}")


def read_json(path: str | os.PathLike, expected: str = "a JSON document") -> object:
    """A whole JSON document (not JSON Lines), read with the text-input rules.

    Args:
      path: the file.
      expected: what the document should be, for the message when the file is empty.

    Raises:
      UserError: the file cannot be read.
      DataError: the file is empty (`empty_file_error`), bytes that are not UTF-8
        (file:line), or not JSON (with the line).
    """
    with open_text_input(path) as f:
        text = f.read()
    if not text.strip():
        raise empty_file_error(path, expected)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise errors.DataError(os.fspath(path), e.lineno, None, f"not JSON: {e.msg}") from None


def iter_json_lines(
    path: str | os.PathLike,
    opener: Callable[[str], contextlib.AbstractContextManager[Iterable[str]]] | None = None,
) -> Iterator[tuple[int, dict | errors.DataError]]:
    """(1-based line, object or problem) for each non-blank line of a JSON Lines file of objects.

    For readers that drop and count bad lines: a line that is not UTF-8, not JSON or not a
    JSON object comes back, in file order, as a `DataError` (file, line, reason) in place of
    the object, and reading goes on. `iter_json_objects` raises it instead.

    Args:
      path: the file.
      opener: opens `path` as an iterable of lines (default `open_text_input` with bytes
        that are not UTF-8 replaced and their lines reported; e.g. a `tf.io.gfile.GFile`
        opener for remote paths).

    Raises:
      UserError: the file cannot be read.
    """
    yield from _json_lines(os.fspath(path), opener, invalid="replace")


def iter_json_objects(
    path: str | os.PathLike,
    opener: Callable[[str], contextlib.AbstractContextManager[Iterable[str]]] | None = None,
) -> Iterator[tuple[int, dict]]:
    """(1-based line, object) for each non-blank line of a JSON Lines file of objects.

    The one JSON Lines reader of the package (with `iter_json_lines`, its drop-and-count
    form): a byte-order mark is dropped, blank lines are skipped.

    Args:
      path: the file.
      opener: opens `path` as an iterable of lines (default `open_text_input`; e.g. a
        `tf.io.gfile.GFile` opener for remote paths).

    Raises:
      UserError: the file cannot be read.
      DataError: a line that is not UTF-8, not JSON, or not a JSON object, with file:line.
    """
    for number, record in _json_lines(os.fspath(path), opener, invalid="raise"):
        if isinstance(record, errors.DataError):
            raise record
        yield number, record


def _json_lines(
    path: str,
    opener: Callable[[str], contextlib.AbstractContextManager[Iterable[str]]] | None,
    invalid: Literal["raise", "replace"],
) -> Iterator[tuple[int, dict | errors.DataError]]:
    with opener(path) if opener else open_text_input(path, invalid=invalid) as f:
        invalid_lines = getattr(f, "invalid_lines", ())
        for number, line in enumerate(f, start=1):
            if invalid_lines and invalid_lines[-1] == number:
                yield number, errors.DataError(path, number, None, "not valid UTF-8")
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                yield number, errors.DataError(path, number, None, f"not valid JSON ({e.msg})")
                continue
            if not isinstance(record, dict):
                yield (
                    number,
                    errors.DataError(
                        path, number, None, f"expected a JSON object, got {type(record).__name__}"
                    ),
                )
                continue
            yield number, record


# ----------------------------------------------------------------------------- tables

# The table kinds, by file suffix, and their field separators.
TABLE_DELIMITERS: dict[str, str] = {".csv": ",", ".tsv": "\t"}
TableKind = Literal[".csv", ".tsv"]


def table_kind(path: str | os.PathLike) -> TableKind:
    """`.csv` or `.tsv`, from the file's suffix (in any case).

    Raises:
      UserError: another suffix.
    """
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in TABLE_DELIMITERS:
        raise errors.UserError(f"{os.fspath(path)}: expected a .csv or .tsv file")
    return suffix


@dataclasses.dataclass(frozen=True)
class TableRecord:
    """One record of a CSV or TSV file, as `iter_table_records` reads it.

    Attributes:
      line: the 1-based line the record starts on (a quoted CSV field may span lines).
      fields: the record's fields, as text.
      blank: the record's line holds nothing but its line ending (`fields` is `[""]` in a
        TSV, `[]` in a CSV).
      invalid_utf8: with `invalid="replace"`, a line of the record was not UTF-8 (its bad
        bytes are U+FFFD in `fields`).
    """

    line: int
    fields: list[str]
    blank: bool = False
    invalid_utf8: bool = False


def iter_table_records(
    path: str | os.PathLike,
    kind: TableKind | None = None,
    invalid: Literal["raise", "replace"] = "raise",
) -> Iterator[TableRecord]:
    """Every record of a CSV or TSV file, the header first, blank lines included.

    The one reader of delimited tables, with the text-input rules (`open_text_input`: a
    byte-order mark dropped, bytes that are not UTF-8 a `DataError` at file:line, or with
    `invalid="replace"` flagged on their record). The two kinds are read as their files are
    written:

    - TSV (the SEAHORSE files, and any `.tsv`): one line is one record, split on tabs
      only, a trailing `\\r` dropped; quote characters are text (csv.QUOTE_NONE), since
      summaries hold them: `"Yes," he said` is read as it stands.
    - CSV: the csv module's standard quoting (a quoted field may hold commas, doubled
      quotes and line breaks), with no limit on a field's length (articles).

    Args:
      path: the file.
      kind: `.csv` or `.tsv` (None: from the file's suffix, `table_kind`).
      invalid: as for `open_text_input`.

    Raises:
      UserError: the file cannot be read, or (kind None) is neither .csv nor .tsv.
      DataError: bytes that are not UTF-8 (with `invalid="raise"`), or a CSV record the
        csv module cannot parse, with the file and line.
    """
    path = os.fspath(path)
    kind = table_kind(path) if kind is None else kind
    if kind not in TABLE_DELIMITERS:
        raise ValueError(f"kind must be '.csv' or '.tsv', not {kind!r}")
    with open_text_input(path, invalid=invalid) as f:
        if kind == ".tsv":
            for line in f:
                text = (line[:-1] if line.endswith("\n") else line).rstrip("\r")
                yield TableRecord(
                    f.line_number,
                    text.split("\t"),
                    blank=not text,
                    invalid_utf8=f.line_number in f.invalid_lines[-1:],
                )
            return
        # Articles are longer than csv's default 128 KiB field limit.
        csv.field_size_limit(2**31 - 1)
        reader = csv.reader(f)
        invalid_seen = 0
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                raise errors.DataError(path, start, None, f"not a CSV record ({e})") from None
            yield TableRecord(
                start,
                fields,
                blank=not fields,
                invalid_utf8=len(f.invalid_lines) > invalid_seen,
            )
            invalid_seen = len(f.invalid_lines)


@dataclasses.dataclass(frozen=True)
class TableRow:
    """A record after the header, by column (as csv.DictReader gives it).

    Attributes:
      line: the 1-based line the record starts on.
      values: column -> text; None for a column the record has no field for.
      extra: the fields beyond the header's columns.
      invalid_utf8: as `TableRecord.invalid_utf8`.
    """

    line: int
    values: dict[str, str | None]
    extra: list[str]
    invalid_utf8: bool = False


class Table:
    """A CSV or TSV file as its header and its rows (`open_table`).

    Attributes:
      path: the file, as given.
      header: the first record's fields as written (None for an empty file).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        kind: TableKind | None = None,
        invalid: Literal["raise", "replace"] = "raise",
    ):
        self.path = os.fspath(path)
        self._records = iter_table_records(path, kind, invalid)
        first = next(self._records, None)
        self.header: list[str] | None = None if first is None else first.fields

    def __iter__(self) -> Iterator[TableRow]:
        """The rows after the header, blank lines skipped. A later column of the same name
        as an earlier one wins, as with csv.DictReader."""
        header = self.header or []
        for record in self._records:
            if record.blank:
                continue
            values: dict[str, str | None] = dict.fromkeys(header)
            values.update(zip(header, record.fields, strict=False))
            yield TableRow(record.line, values, record.fields[len(header) :], record.invalid_utf8)

    def close(self) -> None:
        self._records.close()

    def __enter__(self) -> Table:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def open_table(
    path: str | os.PathLike,
    kind: TableKind | None = None,
    invalid: Literal["raise", "replace"] = "raise",
) -> Table:
    """Opens a CSV or TSV file with a header row (see `iter_table_records` for how each
    kind is read); the header is read now.

    >>> with open_table("scores.tsv") as table:  # doctest: +SKIP
    ...     table.header, [row.values for row in table]

    Raises:
      UserError / DataError: as `iter_table_records`.
    """
    return Table(path, kind, invalid)


@contextlib.contextmanager
def atomic_writer(
    path: str | os.PathLike,
    mode: Literal["w", "wb"] = "w",
    encoding: str | None = "utf-8",
    newline: str | None = None,
) -> Iterator[IO]:
    """Opens `path` for writing so that it appears only once complete.

    Writes to a temporary file in the same folder (`.NAME.<random>.tmp`), flushes it to
    disk, and renames it to `path` when the `with` block ends without an exception. On any
    exception the temporary file is removed and `path` is left as it was. Missing parent
    folders are created.

    Args:
      path: the final file name.
      mode: "w" (text) or "wb" (bytes).
      encoding: text encoding (ignored for "wb").
      newline: as for `open` (ignored for "wb").

    Yields:
      The open temporary file.

    Raises:
      UserError: the file cannot be written (a folder at `path`, read-only location, full
        disk, ...), naming `path`.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', not {mode!r}")
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(21, "it is a folder; expected a file")
        os.makedirs(directory, exist_ok=True)
        # 0o666 before the umask: the same permissions a plain open() would give.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:
        raise errors.UserError(f"cannot write {path}: {_reason(e)}") from e
    try:
        if mode == "wb":
            f = os.fdopen(fd, "wb")
        else:
            f = os.fdopen(fd, "w", encoding=encoding, newline=newline)
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(e, OSError):
            raise errors.UserError(f"cannot write {path}: {_reason(e)}") from e
        raise


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Writes `text` to `path` atomically (see `atomic_writer`)."""
    with atomic_writer(path, "w", encoding=encoding) as f:
        f.write(text)


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 (hex) of a file's bytes, read in blocks.

    Raises:
      OSError: when the file cannot be read.
    """
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Writes `data` to `path` atomically (see `atomic_writer`)."""
    with atomic_writer(path, "wb") as f:
        f.write(data)


def check_output_path(
    path: str | os.PathLike, kind: Literal["file", "directory"], flag: str | None = None
) -> None:
    """Checks, before long work starts, that `path` can be written as a `kind`.

    Refuses a folder where a file is expected and a file where a folder is expected, a
    parent that is a file, and a location where no file can be created (read-only file
    system, no permission), by creating and removing a probe file. Creates nothing that
    stays. A full disk can only be found when writing; `atomic_writer` reports it.

    Args:
      path: the output file or folder.
      kind: "file" or "directory".
      flag: the command-line flag that gave `path`, named in the message when given.

    Raises:
      UserError: naming the path (and flag) and what is wrong.
    """
    if kind not in ("file", "directory"):
        raise ValueError(f"kind must be 'file' or 'directory', not {kind!r}")
    path = os.fspath(path)
    named = f"{flag} {path}" if flag else path
    if os.path.exists(path):
        if kind == "file" and os.path.isdir(path):
            raise errors.UserError(f"{named} is a folder; expected a file name")
        if kind == "directory" and not os.path.isdir(path):
            raise errors.UserError(f"{named} is a file; expected a folder")
    # The nearest folder that exists is where files (or the missing folders) get created.
    existing = path if kind == "directory" else os.path.dirname(os.path.abspath(path))
    existing = os.path.abspath(existing)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise errors.UserError(f"cannot create {named}: {existing} is a file, not a folder")
    probe = os.path.join(existing, f".seahorse-write-check.{secrets.token_hex(4)}.tmp")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.remove(probe)
    except OSError as e:
        raise errors.UserError(f"cannot write {named}: {_reason(e)} ({existing})") from e

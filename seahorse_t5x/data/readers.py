"""Reader for the SEAHORSE rating files (`train.tsv`, `validation.tsv`, `test.tsv`).

The files are tab separated with a header row and no quoting: summaries may hold quote
characters, so fields are split on tabs only (csv.QUOTE_NONE semantics), by the package's
one table reader (`fileio.iter_table_records`). Older copies store
non-ASCII text as `\\uXXXX` escapes; both escaped and plain unicode files are read, and
text comes out as real unicode. Labels become 1 (Yes), 0 (No) or None (Unsure or empty);
a `question1` of No blanks questions 2..6, as the dataset's own convention says.

A row that cannot be used is not lost silently: it becomes a `Drop` (file, line, reason,
field, detail) that `prepare` counts and reports, or, in strict mode, a `DataError`.
"""

from __future__ import annotations

import dataclasses
import re

from seahorse_t5x import constants, errors, fileio

# Why a row was dropped: report keys, in the order the checks run.
INVALID_UTF8 = "invalid_utf8"
MALFORMED_ROW = "malformed_row"
MISSING_GEM_ID = "missing_gem_id"
UNPARSEABLE_GEM_ID = "unparseable_gem_id"
UNKNOWN_LABEL = "unknown_label"
EMPTY_SUMMARY = "empty_summary"
DUPLICATE = "duplicate"
MISSING_ARTICLE = "missing_article"  # found by the join in prepare.py
DROP_REASONS: tuple[str, ...] = (
    INVALID_UTF8,
    MALFORMED_ROW,
    MISSING_GEM_ID,
    UNPARSEABLE_GEM_ID,
    UNKNOWN_LABEL,
    EMPTY_SUMMARY,
    DUPLICATE,
    MISSING_ARTICLE,
)

_LABELS: dict[str, int | None] = {
    constants.LABEL_YES.lower(): 1,
    constants.LABEL_NO.lower(): 0,
    constants.LABEL_UNSURE.lower(): None,
    "": None,
    # pandas writes a missing value as NaN in some exported copies.
    "nan": None,
}
_MISSING_IDS = frozenset({"", "nan", "none", "null"})
_GEM_PREFIX = "GEM-"
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_LANGUAGE_BY_NAME = {name: code for code, name in constants.LANGUAGE_NAMES.items()}
_GEM_ID_FORMS = (
    # xlsum_<language name>-<split>-<n>
    (re.compile(r"^xlsum_([a-z_]+)-(?:train|validation|test)-\d+$"), "xlsum", "name"),
    # mlsum_<code>-<split>-<n>
    (re.compile(r"^mlsum_([a-z]{2})-(?:train|validation|test)-\d+$"), "mlsum", "code"),
    # xsum-<split>-<n> (English only)
    (re.compile(r"^xsum-(?:train|validation|test)-\d+$"), "xsum", None),
    # GEM v1 WikiLingua: wiki_lingua_<language name>_<code>-<val|test>-<n>
    (
        re.compile(r"^wiki_lingua_[a-z_]+_([a-z]{2})-(?:train|val|validation|test)-\d+$"),
        "wikilingua",
        "code",
    ),
)


@dataclasses.dataclass(frozen=True)
class Rating:
    """One usable SEAHORSE row.

    Attributes:
      gem_id: the source article's id, `GEM-` prefix removed.
      language: 2-letter code (de, en, es, ru, tr, vi).
      dataset: xsum, xlsum, mlsum or wikilingua (parsed from gem_id).
      system: the summarization system (`model` column).
      summary: the summary, real unicode.
      labels: q1..q6 as 1 (Yes), 0 (No) or None (Unsure, empty, or blanked by Q1 = No).
      path, line: where the row was read (1-based line, the header is line 1).
    """

    gem_id: str
    language: str
    dataset: str
    system: str
    summary: str
    labels: tuple[int | None, ...]
    path: str
    line: int


@dataclasses.dataclass(frozen=True)
class Drop:
    """A row that was not kept, and why (`reason` is one of `DROP_REASONS`)."""

    path: str
    line: int
    reason: str
    field: str | None
    detail: str

    def as_error(self) -> errors.DataError:
        return errors.DataError(self.path, self.line, self.field, self.detail)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class RatingsFile:
    """What `read_ratings` found in one file.

    Attributes:
      path: the file read.
      rows_read: data rows (lines after the header, blank lines included).
      ratings: the usable rows, in file order.
      drops: the unusable rows, in file order.
      q1_no_blanked: rows whose Q2..Q6 ratings were blanked because Q1 was No.
    """

    path: str
    rows_read: int = 0
    ratings: list[Rating] = dataclasses.field(default_factory=list)
    drops: list[Drop] = dataclasses.field(default_factory=list)
    q1_no_blanked: int = 0


def decode_unicode_escapes(text: str) -> str:
    """Turns `\\uXXXX` escapes (as older SEAHORSE copies store non-ASCII) into unicode.

    Surrogate pairs (`\\ud83d\\ude00`) are joined into one character. Text without escapes
    is returned unchanged, so plain unicode files read the same.

    >>> decode_unicode_escapes("\\\\u041f\\\\u0440\\\\u0438\\\\u0432\\\\u0435\\\\u0442")
    'Привет'
    """
    if "\\u" not in text:
        return text
    decoded = _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return decoded.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def normalize_gem_id(gem_id: str) -> str:
    """Strips whitespace and the `GEM-` prefix some GEM cards show on ids."""
    gem_id = gem_id.strip()
    return gem_id[len(_GEM_PREFIX) :] if gem_id.startswith(_GEM_PREFIX) else gem_id


def parse_gem_id(gem_id: str) -> tuple[str, str] | None:
    """The (dataset, language) a SEAHORSE gem_id names, or None for an unknown form.

    >>> parse_gem_id("xlsum_russian-validation-3133")
    ('xlsum', 'ru')
    >>> parse_gem_id("wiki_lingua_english_en-val-12")
    ('wikilingua', 'en')
    """
    gem_id = normalize_gem_id(gem_id)
    for pattern, dataset, language_kind in _GEM_ID_FORMS:
        match = pattern.match(gem_id)
        if not match:
            continue
        if language_kind is None:
            return dataset, "en"
        value = match.group(1)
        language = _LANGUAGE_BY_NAME.get(value) if language_kind == "name" else value
        if language not in constants.LANGUAGES:
            return None
        return dataset, language
    return None


def _label(value: str) -> tuple[bool, int | None]:
    key = value.strip().lower()
    if key not in _LABELS:
        return False, None
    return True, _LABELS[key]


def _check_header(path: str, header: list[str]) -> dict[str, int]:
    names = [decode_unicode_escapes(h).strip() for h in header]
    missing = [c for c in constants.TSV_COLUMNS if c not in names]
    if missing:
        raise errors.DataError(
            path,
            1,
            None,
            f"header lacks column(s) {', '.join(missing)}; expected the SEAHORSE header "
            f"{' '.join(constants.TSV_COLUMNS)} (tab separated)",
        )
    return {name: names.index(name) for name in constants.TSV_COLUMNS}


def read_ratings(path: str, strict: bool = False) -> RatingsFile:
    """Reads one SEAHORSE TSV file.

    Args:
      path: a `train.tsv`, `validation.tsv` or `test.tsv` file.
      strict: raise on the first unusable row instead of recording a `Drop`.

    Returns:
      The usable rows, the drops and the counts (see `RatingsFile`).

    Raises:
      UserError: the file cannot be read or is not UTF-8.
      DataError: the file is empty (or a header only), the header lacks SEAHORSE columns,
        or (strict) a row is unusable.
    """
    result = RatingsFile(path=path)
    # Read whole first, as `fileio.open_table` reads every TSV (one line a record, split on
    # tabs only): a byte-order mark is dropped; a row that is not UTF-8 is dropped (strict:
    # an error, before any row is checked).
    records = list(
        fileio.iter_table_records(path, ".tsv", invalid="raise" if strict else "replace")
    )
    columns, width = _header(path, records)
    seen: dict[tuple[str, str], int] = {}
    for record in records[1:]:
        result.rows_read += 1
        checked = _check_row(path, record, columns, width, seen)
        if isinstance(checked, Drop):
            if strict:
                raise checked.as_error()
            result.drops.append(checked)
            continue
        seen[(checked.gem_id, checked.summary)] = checked.line
        if checked.labels[0] == 0 and any(v is not None for v in checked.labels[1:]):
            # The dataset's convention: a Q1 of No leaves Q2..Q6 unrated.
            result.q1_no_blanked += 1
            checked = dataclasses.replace(checked, labels=(0,) + (None,) * 5)
        result.ratings.append(checked)
    return result


_EXPECTED_TSV = "the SEAHORSE header row (tab separated) and one rated summary per line"


def _header(path: str, records: list[fileio.TableRecord]) -> tuple[dict[str, int], int]:
    """The column index of each SEAHORSE column, and the number of fields a row must have."""
    if not records or all(not "".join(r.fields).strip() for r in records):
        raise fileio.empty_file_error(path, _EXPECTED_TSV)
    header = records[0]
    if header.invalid_utf8:
        raise errors.DataError(path, 1, None, "the header row is not UTF-8 text")
    columns = _check_header(path, header.fields)
    if all(r.blank for r in records[1:]):
        raise fileio.empty_file_error(path, _EXPECTED_TSV, header_only=True)
    return columns, len(header.fields)


def _check_row(
    path: str,
    record: fileio.TableRecord,
    columns: dict[str, int],
    width: int,
    seen: dict[tuple[str, str], int],
) -> Rating | Drop:
    """The row as a `Rating` (labels as rated), or the first check it fails as a `Drop`.

    The checks run in `DROP_REASONS` order; `seen` maps the (gem_id, summary) of the rows
    kept so far to their lines.
    """
    line = record.line
    if record.invalid_utf8:
        return Drop(path, line, INVALID_UTF8, None, "the row is not UTF-8 text")
    fields = record.fields
    if len(fields) != width:
        return Drop(
            path,
            line,
            MALFORMED_ROW,
            None,
            f"expected {width} tab-separated fields, found {len(fields)}",
        )
    row = {name: decode_unicode_escapes(fields[i]) for name, i in columns.items()}
    gem_id = normalize_gem_id(row["gem_id"])
    if gem_id.lower() in _MISSING_IDS:
        return Drop(path, line, MISSING_GEM_ID, "gem_id", "empty or NaN gem_id; expected an id")
    parsed = parse_gem_id(gem_id)
    if parsed is None:
        return Drop(
            path,
            line,
            UNPARSEABLE_GEM_ID,
            "gem_id",
            f"{gem_id!r} is not a SEAHORSE id (expected e.g. xlsum_english-test-12, "
            "mlsum_de-validation-3, xsum-test-5, wiki_lingua_spanish_es-val-7)",
        )
    labels, bad_label = _labels(row)
    if bad_label is not None:
        return Drop(
            path,
            line,
            UNKNOWN_LABEL,
            bad_label,
            f"{row[bad_label]!r} is not a rating; expected Yes, No, Unsure or empty",
        )
    summary = row["summary"].strip()
    if not summary:
        return Drop(path, line, EMPTY_SUMMARY, "summary", "empty summary")
    if (gem_id, summary) in seen:
        return Drop(
            path,
            line,
            DUPLICATE,
            "summary",
            f"same gem_id and summary as line {seen[gem_id, summary]}; the first one is kept",
        )
    dataset, language = parsed
    return Rating(
        gem_id=gem_id,
        language=language,
        dataset=dataset,
        system=row["model"].strip(),
        summary=summary,
        labels=labels,
        path=path,
        line=line,
    )


def _labels(row: dict[str, str]) -> tuple[tuple[int | None, ...], str | None]:
    """The q1..q6 labels of a row, or the first question column that holds no rating."""
    labels: list[int | None] = []
    for column in constants.TSV_QUESTION_COLUMNS:
        known, value = _label(row[column])
        if not known:
            return (), column
        labels.append(value)
    return tuple(labels), None

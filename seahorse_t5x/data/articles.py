"""Source articles for the SEAHORSE summaries, keyed by GEM id.

Sources, each named by a path (a file or a folder of such files):

- GEM Parquet exports (`*.parquet`): id column `gem_id`; text column `text` (xlsum,
  mlsum), `document` (xsum), `source` (GEM v1 wiki_lingua) or `article` (pre-joined copies);
- JSON Lines (`*.jsonl`): one `{"gem_id": ..., "article": ...}` object per line (the other
  text field names are accepted too);
- `hf:<dataset>:<config>[:<split>]` (e.g. `hf:GEM/xlsum:english:validation`): the Hub's
  Parquet conversion via the optional `datasets` package. Never needed by the tests or the
  demo.

Ids lose a `GEM-` prefix; `\\uXXXX` escapes in text are decoded. When two sources hold the
same id, the first one read wins and the conflict is counted.
"""

from __future__ import annotations

import dataclasses
import os

from seahorse_t5x import errors, fileio
from seahorse_t5x.data import readers

# Text fields, in the order they are looked for.
TEXT_FIELDS: tuple[str, ...] = ("article", "text", "document", "source")
ID_FIELD = "gem_id"
HUB_PREFIX = "hf:"
_SUFFIXES = (".parquet", ".jsonl")
_GET_DATA_HINT = (
    "expected GEM Parquet files (gem_id + text/document/source) or JSON Lines "
    '{"gem_id", "article"}; see docs/data.md for how to get the GEM articles'
)


@dataclasses.dataclass
class SourceReport:
    """Counts for one article source.

    Attributes:
      source: the path or hub name given.
      files: the files read from it.
      records_read: records seen (all ids, wanted or not).
      articles_added: records that supplied a wanted article.
      skipped_empty: wanted records with an empty text.
      conflicts: wanted ids already supplied by an earlier source with a different text.
      duplicates: wanted ids already supplied with the same text.
      bad_records: unreadable JSON lines (not UTF-8, not a JSON object), records without an
        id, and wanted records whose text field is not text (a number, an object); the
        first few are listed in `bad_examples`.
    """

    source: str
    files: list[str] = dataclasses.field(default_factory=list)
    records_read: int = 0
    articles_added: int = 0
    skipped_empty: int = 0
    conflicts: int = 0
    duplicates: int = 0
    bad_records: int = 0
    bad_examples: list[str] = dataclasses.field(default_factory=list)


MAX_BAD_EXAMPLES = 10
# What an article file holds, for the message when it is empty.
_EXPECTED = "GEM records (JSON Lines or Parquet) with gem_id and the article text"


def _text_of(record: dict) -> tuple[str | None, str | None]:
    """(the record's article text or None, why its text field is unusable or None)."""
    for field in TEXT_FIELDS:
        value = record.get(field)
        if value is None:
            continue
        if isinstance(value, list | tuple):  # some exports split documents into sentences
            if not all(isinstance(v, str) for v in value):
                return None, f"field {field!r} is a list holding non-text items; expected text"
            value = " ".join(value)
        if not isinstance(value, str):
            # A number or an object is not an article: never turn it into text.
            return None, f"field {field!r} is {type(value).__name__}, expected text"
        return readers.decode_unicode_escapes(value), None
    return None, None


def _files_of(source: str) -> list[str]:
    if os.path.isfile(source):
        if not source.endswith(_SUFFIXES):
            raise errors.UserError(
                f"article source {source} is neither .parquet nor .jsonl; {_GET_DATA_HINT}"
            )
        return [source]
    if os.path.isdir(source):
        found = sorted(
            os.path.join(root, name)
            for root, _, names in os.walk(source)
            for name in names
            if name.endswith(_SUFFIXES)
        )
        if not found:
            raise errors.UserError(
                f"article folder {source} holds no .parquet or .jsonl files; {_GET_DATA_HINT}"
            )
        return found
    raise errors.UserError(f"article source not found: {source}; {_GET_DATA_HINT}")


def _parquet_records(path: str):
    import pyarrow.parquet as pq  # only when Parquet sources are given

    if os.path.getsize(path) == 0:
        raise fileio.empty_file_error(path, _EXPECTED)

    try:
        table = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a bad file
        raise errors.DataError(path, None, None, f"not a readable Parquet file ({e})") from e
    names = table.schema_arrow.names
    text_field = next((f for f in TEXT_FIELDS if f in names), None)
    if ID_FIELD not in names or text_field is None:
        raise errors.DataError(
            path,
            None,
            None,
            f"columns {names} lack {ID_FIELD!r} or a text column ({', '.join(TEXT_FIELDS)})",
        )
    row_number = 1  # 1-based row of the file, for messages
    for batch in table.iter_batches(columns=[ID_FIELD, text_field], batch_size=4096):
        ids = batch.column(0).to_pylist()
        texts = batch.column(1).to_pylist()
        for gem_id, text in zip(ids, texts, strict=True):
            yield row_number, {ID_FIELD: gem_id, text_field: text}
            row_number += 1


def _bad_record(report: SourceReport, where: str, what: str) -> None:
    report.bad_records += 1
    if len(report.bad_examples) < MAX_BAD_EXAMPLES:
        report.bad_examples.append(f"{where}: {what}")


def _jsonl_records(path: str, report: SourceReport, strict: bool):
    # A byte-order mark is dropped; a line that is not UTF-8 or not a JSON object is counted
    # (strict: an error).
    lines = fileio.iter_json_objects(path) if strict else fileio.iter_json_lines(path)
    for line_number, record in lines:
        if isinstance(record, errors.DataError):
            _bad_record(report, f"{path}:{line_number}", record.reason)
            continue
        yield line_number, record


def _hub_records(source: str):
    """Records of `hf:<dataset>:<config>[:<split>]` from the Hub's Parquet conversion."""
    name, config, split_name = (source[len(HUB_PREFIX) :].split(":") + ["", ""])[:3]
    try:
        import datasets  # optional: not a dependency of this project
    except ImportError as e:
        raise errors.UserError(
            f"{source} needs the `datasets` package (pip install datasets), or download the "
            "GEM Parquet files and pass their paths"
        ) from e
    loaded = datasets.load_dataset(name, config or None, revision="refs/convert/parquet")
    for split, rows in loaded.items():
        if not split_name or split == split_name:
            yield from enumerate(rows, start=1)


def load_articles(
    sources: list[str], wanted: set[str] | None = None, strict: bool = False
) -> tuple[dict[str, str], list[SourceReport]]:
    """Reads article texts from every source.

    Args:
      sources: paths (files or folders) or `hf:` names, read in order.
      wanted: only these gem_ids are kept (None keeps all), which keeps memory small when
        a source is a whole GEM split.
      strict: raise on the first bad JSON line instead of counting it.

    Returns:
      (gem_id -> article text, one `SourceReport` per source).

    Raises:
      UserError: a source is missing or of an unknown kind.
      DataError: a file is not a usable Parquet/JSONL file (or, strict, has a bad line).
    """
    articles: dict[str, str] = {}
    reports = []
    for source in sources:
        report = SourceReport(source=source)
        if source.startswith(HUB_PREFIX):
            streams = [(source, _hub_records(source))]
        else:
            files = _files_of(source)
            report.files = files
            streams = [
                (
                    path,
                    _parquet_records(path)
                    if path.endswith(".parquet")
                    else _jsonl_records(path, report, strict),
                )
                for path in files
            ]
        for path, records in streams:
            read_before = report.records_read + report.bad_records
            for position, record in records:
                report.records_read += 1
                raw_id = record.get(ID_FIELD)
                if raw_id is None or not str(raw_id).strip():
                    if strict:
                        raise errors.DataError(path, position, ID_FIELD, "record has no gem_id")
                    _bad_record(report, f"{path}:{position}", "no gem_id")
                    continue
                gem_id = readers.normalize_gem_id(str(raw_id))
                if wanted is not None and gem_id not in wanted:
                    continue
                text, unusable = _text_of(record)
                if unusable is not None:
                    if strict:
                        raise errors.DataError(path, position, None, unusable)
                    _bad_record(report, f"{path}:{position}", unusable)
                    continue
                if text is None or not text.strip():
                    report.skipped_empty += 1
                    continue
                if gem_id in articles:
                    if articles[gem_id] != text:
                        report.conflicts += 1
                    else:
                        report.duplicates += 1
                    continue
                articles[gem_id] = text
                report.articles_added += 1
            if report.records_read + report.bad_records == read_before and path in report.files:
                raise fileio.empty_file_error(path, _EXPECTED)
        reports.append(report)
    return articles, reports

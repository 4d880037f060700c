"""What every benchmark reader shares: `ReadResult`, the gin paths, file checks, CSV records.

Plain Python: no TensorFlow here, so the readers serve the SeqIO tasks, the model-free
baselines and the report alike.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import math
import os
import pathlib
from collections.abc import Iterator, Sequence

import gin

from seahorse_t5x import errors, fileio

# Raw example keys shared by every reader (the shared preprocessors' input), with the
# slice fields (`constants.SLICE_FIELDS`).
TEXT_FIELDS: tuple[str, ...] = ("premise", "hypothesis")

# XL-Sum language names (mFACE's `lang`, METAL's `Language`) -> codes; codes are accepted too.
XLSUM_NAME_TO_CODE: dict[str, str] = {
    "english": "en",
    "spanish": "es",
    "russian": "ru",
    "turkish": "tr",
    "vietnamese": "vi",
    "french": "fr",
    "arabic": "ar",
    "bengali": "bn",
    "hindi": "hi",
    "japanese": "ja",
    "swahili": "sw",
    "chinese_simplified": "zh",
}


@dataclasses.dataclass
class ReadResult:
    """Examples read from one benchmark file, and the rows dropped on the way.

    Attributes:
      path: the file read.
      examples: raw example dicts (`premise`, `hypothesis`, `label`, metadata strings,
        and per-benchmark extras such as `label_binary`).
      dropped: one `DataError` per dropped row, saying where and why.
      notes: lines about the release as a whole that the command reports once it has
        run (TRUE: the CSVs absent or empty, skipped); a reader prints nothing itself.
    """

    path: str
    examples: list[dict]
    dropped: list[errors.DataError] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def drop_counts(self) -> dict[str, int]:
        """Number of dropped rows per field (`"row"` for whole-row problems)."""
        return dict(collections.Counter(d.field or "row" for d in self.dropped))

    def summary(self) -> str:
        """One line: kept and dropped counts, with the first drop as an example."""
        line = f"{self.path}: {len(self.examples)} examples kept, {len(self.dropped)} dropped"
        if self.dropped:
            counts = ", ".join(f"{k}: {v}" for k, v in sorted(self.drop_counts().items()))
            line += f" ({counts}; first: {self.dropped[0]})"
        return line


# ----------------------------------------------------------------------------- paths


def resolve_path(path: str | None, env: str, what: str, source: str) -> str:
    """`path`, else the environment variable `env`; a `UserError` saying where to get it."""
    chosen = path or os.environ.get(env)
    if not chosen:
        raise errors.UserError(
            f"no {what} given: pass its path, bind it in gin or set {env}. Get it from {source}."
        )
    return chosen


@gin.configurable(module="seahorse_t5x.data.benchmarks")
def benchmark_paths(
    mface: str | None = None,
    true: str | None = None,
    metal: str | None = None,
    xlsum_articles: str | None = None,
    fever_nli_dir: str | None = None,
    vitaminc_dir: str | None = None,
    **registered: str | None,
) -> dict[str, str | None]:
    """The paths bound in gin (`seahorse_t5x.data.benchmarks.benchmark_paths.mface = ...`);
    any registered benchmark's by its name (`benchmark_paths.frank = "frank/data"`).

    Kept free of checks so that gin never wraps a missing-file message: each reader's `*_path`
    function adds the environment and the error.
    """
    return {
        "mface": mface,
        "true": true,
        "metal": metal,
        "xlsum_articles": xlsum_articles,
        "fever": fever_nli_dir,
        "vitaminc": vitaminc_dir,
        **registered,
    }


def existing_file(path: str | os.PathLike, what: str, source: str) -> pathlib.Path:
    """`path`, checked to be a file; a `UserError` naming `what` and its `source` if not."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise errors.UserError(f"{what} not found: {p}. Get it from {source}.")
    return p


# Where a release's checkout keeps its files (AggreFact, FRANK, METAL: `data/`).
RELEASE_DATA_FOLDER = "data"


def release_path(
    path: str | os.PathLike,
    names: Sequence[str],
    what: str,
    source: str,
    folder: bool = False,
) -> pathlib.Path:
    """A benchmark's file (or, with `folder`, the folder holding its files), given as the
    file itself, the folder holding it, or the release's checkout root (the files under
    `data/`): every reader accepts the three spellings alike.

    Args:
      path: as the user gave it.
      names: the release's file names, preferred first (glob patterns allowed: a pattern
        that matches several files in one folder is ambiguous).
      what: the file or folder, for messages (`AggreFact CSV`).
      source: where to get the release, for messages.
      folder: return the folder holding the first of `names` found (a file given stands
        for its folder).

    Raises:
      UserError: no such path, a folder holding none of `names` (nor under `data/`), or a
        pattern matching several files.
    """
    p = pathlib.Path(path)
    if p.is_file():
        return p.parent if folder else p
    if not p.is_dir():
        raise errors.UserError(f"{what} not found: {p}. Get it from {source}.")
    for base in (p, p / RELEASE_DATA_FOLDER):
        for name in names:
            found = sorted(f for f in base.glob(name) if f.is_file())
            if len(found) > 1 and not folder:
                listed = ", ".join(f.name for f in found)
                raise errors.UserError(
                    f"{base} holds several files matching {name} ({listed}): pass the {what} itself"
                )
            if found:
                return base if folder else found[0]
    wanted = " nor ".join(names)
    raise errors.UserError(
        f"{p} holds neither {wanted}, here or under {RELEASE_DATA_FOLDER}/ (a {what}, the "
        f"folder holding it, or the release's checkout root). Get it from {source}."
    )


# ----------------------------------------------------------------------------- CSV rows


def csv_rows(path: pathlib.Path) -> Iterator[tuple[int, list[str]]]:
    """(line number where the record starts, fields) for each CSV record after the header."""
    # Articles are longer than csv's default 128 KiB field limit.
    csv.field_size_limit(2**31 - 1)
    # utf-8-sig: spreadsheet exports often start with a byte-order mark.
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f)
        start = 1
        for fields in reader:
            yield start, fields
            start = reader.line_num + 1


def csv_header(
    path: pathlib.Path, rows: Iterator[tuple[int, list[str]]], required: Sequence[str]
) -> list[str]:
    """The header row (stripped), taken from `rows`; a `DataError` if it lacks `required`."""
    # Blank lines before the header (a whitespace-only file) are no header.
    header = next((fields for _, fields in rows if any(f.strip() for f in fields)), None)
    if header is None:
        raise fileio.empty_file_error(path, f"a header row with the columns {', '.join(required)}")
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        raise errors.DataError(
            str(path), 1, None, f"missing columns {missing}; the header is {header}"
        )
    return header


def csv_records(
    path: pathlib.Path,
    rows: Iterator[tuple[int, list[str]]],
    header: Sequence[str],
    drops: list[errors.DataError],
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, column -> value) for each record left in `rows`: blank lines (as spreadsheet
    exports end) are skipped, a record with another number of fields than the header is
    a drop; a header with no record after it is an empty file (`fileio.empty_file_error`)."""
    seen = False
    for line, fields in rows:
        if not any(f.strip() for f in fields):
            continue
        seen = True
        if len(fields) != len(header):
            drops.append(
                errors.DataError(
                    str(path), line, None, f"{len(fields)} fields, the header has {len(header)}"
                )
            )
            continue
        yield line, dict(zip(header, fields, strict=True))
    if not seen:
        raise fileio.empty_file_error(path, "one record per line after the header", True)


def float_field(value: str) -> float | None:
    """A finite number, or None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def text_or_drop(row: dict, column: str, path: str, line: int, drops: list) -> str | None:
    """The stripped text of `column`, or None with a drop recorded when it is empty."""
    text = (row.get(column) or "").strip()
    if not text:
        drops.append(errors.DataError(path, line, column, "empty text"))
        return None
    return text


def normalize_language(value: str) -> str:
    """An XL-Sum language name or code as this project's code (`english` -> `en`).

    Names without a known code are kept, lower-cased, as they are.
    """
    text = value.strip().lower()
    return XLSUM_NAME_TO_CODE.get(text, text)

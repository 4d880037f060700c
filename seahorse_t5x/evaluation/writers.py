"""The report's output formats: a lookup from format to writer (`WRITERS`), so that a new
format is one writer. A writer renders a `Document` (a title, its tables, and the report's
numbers) as text; `write` puts it in `NAME.SUFFIX`, atomically.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from seahorse_t5x import fileio
from seahorse_t5x.evaluation import tables


@dataclasses.dataclass(frozen=True)
class Document:
    """What one output file holds: its title and tables, and for a format that writes the
    numbers (report.json) the report's content."""

    title: str
    tables: Sequence[tables.Table] = ()
    numbers: Mapping | None = None


@dataclasses.dataclass(frozen=True)
class Writer:
    """One format: its name in report.json's `outputs`, the file suffix, the text, and
    whether the report's table files (`tables`, `teacher_agreement`) are written in it."""

    output_key: str
    suffix: str
    render: Callable[[Document], str]
    table_files: bool = True


def _markdown(document: Document) -> str:
    return f"# {document.title}\n\n" + "\n".join(t.to_markdown() for t in document.tables)


def _latex(document: Document) -> str:
    return f"% {document.title} (needs \\usepackage{{booktabs}})\n\n" + "\n".join(
        t.to_latex() for t in document.tables
    )


def _to_json(value: object) -> object:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _json(document: Document) -> str:
    # Strict JSON: a NaN or infinity in the numbers is an error, never `NaN` in the file.
    return json.dumps(
        document.numbers, indent=1, ensure_ascii=False, default=_to_json, allow_nan=False
    )


WRITERS: dict[str, Writer] = {
    "md": Writer("markdown", ".md", _markdown),
    "tex": Writer("latex", ".tex", _latex),
    # report.json: every number, the tables as data among them.
    "json": Writer("json", ".json", _json, table_files=False),
}
# The formats of the report's table files, in the order report.json lists them.
TABLE_FORMATS: tuple[str, ...] = tuple(name for name, w in WRITERS.items() if w.table_files)


def output_path(output_dir: pathlib.Path, name: str, output_format: str) -> pathlib.Path:
    """Where `write` puts `name` in `output_format`: `output_dir/NAME.SUFFIX`."""
    return output_dir / f"{name}{WRITERS[output_format].suffix}"


def write(
    output_dir: pathlib.Path, name: str, document: Document, formats: Sequence[str]
) -> dict[str, str]:
    """Writes `document` as `output_dir/NAME.SUFFIX` in each of `formats`.

    Returns:
      `{output_key: path}` per format, in the order of `formats` (report.json's `outputs`).
    """
    written = {}
    for output_format in formats:
        path = output_path(output_dir, name, output_format)
        fileio.atomic_write_text(path, WRITERS[output_format].render(document))
        written[WRITERS[output_format].output_key] = str(path)
    return written

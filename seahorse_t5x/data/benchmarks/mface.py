"""mFACE (Aharoni et al. 2023): multilingual summaries rated for quality, attribution and
informativeness, read from the ratings spreadsheet's CSV export (docs/benchmarks.md).

The path comes from an argument, gin (`seahorse_t5x.data.benchmarks.benchmark_paths.mface`)
or `SEAHORSE_MFACE_PATH`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from seahorse_t5x import errors
from seahorse_t5x.data.benchmarks import common, registry

ENV_MFACE_PATH = "SEAHORSE_MFACE_PATH"

MFACE_SOURCE = (
    "the mFACE ratings spreadsheet linked from google-research/google-research mface/README.md "
    "(Google Drive), exported as CSV"
)
# mFACE question -> (SEAHORSE dimension name, the SEAHORSE question whose metric scores it).
# q1 "Is the summary comprehensible?" (Quality), q2 "Is all the information fully
# attributable to the article?" (Attribution), q3 "Is the summary a good summary of the
# article?" (Informativeness): the paper's Table 6 mapping to Q1, Q4 and Q6.
MFACE_DIMENSIONS: dict[str, tuple[str, int]] = {
    "quality": ("q1", 1),
    "attribution": ("q2", 4),
    "informativeness": ("q3", 6),
}
MFACE_CSV_COLUMNS: tuple[str, ...] = ("id", "lang", "split", "input", "summary", "system")
# The five SEAHORSE languages that XL-Sum (hence mFACE) covers: XL-Sum has no German.
MFACE_5LANG: tuple[str, ...] = ("en", "es", "ru", "tr", "vi")
# A graded mFACE label (mean of three raters' 0/1 answers) counts as Yes for ROC-AUC when
# most raters said Yes.
MFACE_BINARY_THRESHOLD = 0.5
# mFACE's `split` column (XL-Sum split of the document) -> SeqIO split name.
MFACE_SPLITS: dict[str, str] = {"train": "train", "dev": "validation", "test": "test"}


def mface_path(path: str | None = None) -> str:
    """The mFACE CSV: argument, then gin binding, then `SEAHORSE_MFACE_PATH`."""
    path = path or common.benchmark_paths()["mface"]
    return common.resolve_path(path, ENV_MFACE_PATH, "mFACE CSV", MFACE_SOURCE)


def read_mface(
    path: str | os.PathLike | None,
    dimension: str,
    languages: Sequence[str] | None = None,
    splits: Sequence[str] | None = None,
) -> common.ReadResult:
    """Reads one mFACE dimension from the spreadsheet's CSV export.

    Args:
      path: the CSV (None: `mface_path()`).
      dimension: `quality`, `attribution` or `informativeness` (see `MFACE_DIMENSIONS`).
      languages: keep only these language codes (None: all 45 languages).
      splits: keep only rows whose `split` is one of these SeqIO split names (`train`,
        `validation`, `test`); None keeps every row.

    Returns:
      Examples with `label` = the raters' mean (`q{n}_avg`, in [0, 1]), `label_binary` =
      1 when that mean is above 0.5 (most raters said Yes), `question` = the dimension and
      `seahorse_question` = the SEAHORSE question whose metric scores it. Rows with empty
      text or a missing or out-of-range average are dropped and reported.

    Raises:
      UserError: the file is missing or lacks a required column; unknown dimension.
    """
    if dimension not in MFACE_DIMENSIONS:
        raise errors.UserError(
            f"unknown mFACE dimension {dimension!r}: expected one of {list(MFACE_DIMENSIONS)}"
        )
    column_prefix, question = MFACE_DIMENSIONS[dimension]
    label_column = f"{column_prefix}_avg"
    p = common.release_path(path or mface_path(), ("*.csv",), "mFACE CSV", MFACE_SOURCE)
    rows = common.csv_rows(p)
    header = common.csv_header(p, rows, (*MFACE_CSV_COLUMNS, label_column))
    keep_languages = (
        None if languages is None else {common.normalize_language(x) for x in languages}
    )
    keep_splits = None if splits is None else set(splits)
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    for line, row in common.csv_records(p, rows, header, drops):
        language = common.normalize_language(row["lang"])
        split = MFACE_SPLITS.get(row["split"].strip().lower(), row["split"].strip().lower())
        if keep_languages is not None and language not in keep_languages:
            continue
        if keep_splits is not None and split not in keep_splits:
            continue
        label = common.float_field(row[label_column])
        if label is None or not 0.0 <= label <= 1.0:
            drops.append(
                errors.DataError(
                    str(p),
                    line,
                    label_column,
                    f"{row[label_column]!r} is not a mean rating in [0, 1]",
                )
            )
            continue
        article = common.text_or_drop(row, "input", str(p), line, drops)
        summary = article and common.text_or_drop(row, "summary", str(p), line, drops)
        if not summary:
            continue
        examples.append(
            {
                "premise": article,
                "hypothesis": summary,
                "label": label,
                "label_binary": int(label > MFACE_BINARY_THRESHOLD),
                "gem_id": row["id"].strip(),
                "language": language,
                "dataset": "xlsum",
                "system": row["system"].strip(),
                "split": split,
                "question": dimension,
                "seahorse_question": question,
            }
        )
    return common.ReadResult(str(p), examples, drops)


# The five-language subset's name part: its tasks are `mface_{dimension}_5lang` and its score
# rows' benchmark in the report `mface_5lang`.
FIVE_LANGUAGES = "5lang"


def task_name(dimension: str, five_languages: bool = False) -> str:
    """`mface_attribution`, or `mface_attribution_5lang` for SEAHORSE's five XL-Sum languages."""
    return f"mface_{dimension}" + (f"_{FIVE_LANGUAGES}" if five_languages else "")


def task_names(five_languages: bool | None = None) -> list[str]:
    """Its score tasks: every dimension on all languages, then on the five (None: both)."""
    chosen = (False, True) if five_languages is None else (five_languages,)
    return [task_name(d, five) for five in chosen for d in MFACE_DIMENSIONS]


def task_question(name: str) -> str | None:
    """The dimension of an mFACE task name (`mface_quality_5lang` -> `quality`), else None."""
    base = name.split(".")[0]
    for dimension in MFACE_DIMENSIONS:
        if base in (task_name(dimension), task_name(dimension, five_languages=True)):
            return dimension
    return None


def read_all(path: str, languages: Sequence[str] | None = None) -> list[common.ReadResult]:
    """Every mFACE dimension (the registry's reader): one `ReadResult` per dimension."""
    return [read_mface(path, dimension, languages) for dimension in MFACE_DIMENSIONS]


BENCHMARK = registry.Benchmark(
    name="mface",
    title="mFACE",
    read=read_all,
    dimensions=tuple(MFACE_DIMENSIONS),
    label_kind=registry.LABEL_GRADED,
    key=("gem_id", "system"),
    protocol=registry.Protocol(
        registry.PAPER,
        ("pearson", "roc_auc"),
        description="Pearson rho against the raters' mean, ROC-AUC against their majority "
        "(the paper's Table 6)",
    ),
    env=ENV_MFACE_PATH,
    source=MFACE_SOURCE,
    questions={d: q for d, (_, q) in MFACE_DIMENSIONS.items()},
    splits=("train", "validation", "test", "all"),
    mixture="mface_all",
    options=("languages",),
    display_names={d: d.capitalize() for d in MFACE_DIMENSIONS},
    table=registry.PaperTable(
        6, "Table 6: mFACE", "Each cell: ρ/roc; ROC-AUC against the raters' majority."
    ),
    subset=registry.LanguageSubset(
        FIVE_LANGUAGES, MFACE_5LANG, "5 SEAHORSE languages", "all languages"
    ),
    tasks=registry.TaskNames(task_names, task_question),
)

"""TRUE (Honovich et al. 2022): eleven factual-consistency datasets, one CSV each, as its
download script writes them (docs/benchmarks.md).

The folder comes from an argument, gin (`seahorse_t5x.data.benchmarks.benchmark_paths.true`)
or `SEAHORSE_TRUE_DIR`.
"""

from __future__ import annotations

import os
import pathlib

from seahorse_t5x import errors
from seahorse_t5x.data.benchmarks import common, registry

ENV_TRUE_DIR = "SEAHORSE_TRUE_DIR"

TRUE_SOURCE = (
    "google-research/true: run its src/download_datasets.py, which writes the *_download.csv files"
)
# Task key -> (file name, display name in the paper's Table 7), in the table's order.
TRUE_DATASETS: dict[str, tuple[str, str]] = {
    "frank": ("frank_valid_download.csv", "FRANK"),
    "summeval": ("summeval_download.csv", "SummEval"),
    "mnbn": ("mnbm_download.csv", "MNBN"),
    "qags_c": ("qags_cnndm_download.csv", "QAGS-C"),
    "qags_x": ("qags_xsum_download.csv", "QAGS-X"),
    "begin": ("begin_dev_download.csv", "BEGIN"),
    "q2": ("q2_download.csv", "Q2"),
    "dialfact": ("dialfact_valid_download.csv", "DialFact"),
    "fever": ("fever_dev_download.csv", "FEVER"),
    "vitaminc": ("vitc_dev_download.csv", "VitaminC"),
    "paws": ("paws_download.csv", "PAWS"),
}
# Other names score files give TRUE's datasets by (the CSVs' own file names).
TRUE_ALIASES: dict[str, str] = {
    "mnbm": "mnbn",
    "qags_cnndm": "qags_c",
    "qags_xsum": "qags_x",
    "vitc": "vitaminc",
}
TRUE_QUESTION = 4
TRUE_CSV_COLUMNS: tuple[str, ...] = ("grounding", "generated_text", "label")


def true_dir(path: str | None = None) -> str:
    """The folder holding TRUE's CSVs: argument, then gin binding, then `SEAHORSE_TRUE_DIR`."""
    path = path or common.benchmark_paths()["true"]
    return common.resolve_path(path, ENV_TRUE_DIR, "TRUE folder", TRUE_SOURCE)


def true_file(dataset: str, directory: str | os.PathLike | None = None) -> pathlib.Path:
    """Path of one TRUE dataset's CSV (`dataset` is a key of `TRUE_DATASETS`)."""
    if dataset not in TRUE_DATASETS:
        raise errors.UserError(
            f"unknown TRUE dataset {dataset!r}: expected one of {list(TRUE_DATASETS)}"
        )
    return true_folder(directory or true_dir()) / TRUE_DATASETS[dataset][0]


def true_folder(path: str | os.PathLike) -> pathlib.Path:
    """The folder of TRUE's CSVs given as itself, one of its CSVs, or a checkout holding them
    under `data/` (`common.release_path`); `path` itself when it holds none of them."""
    names = tuple(name for name, _ in TRUE_DATASETS.values())
    try:
        return common.release_path(path, names, "TRUE folder", TRUE_SOURCE, folder=True)
    except errors.UserError:  # the callers name the CSV that is missing
        return pathlib.Path(path)


def _binary_label(value: str) -> int | None:
    number = common.float_field(value)
    if number in (0.0, 1.0):
        return int(number)
    return None


def read_true(dataset: str, directory: str | os.PathLike | None = None) -> common.ReadResult:
    """Reads one TRUE dataset: `grounding` is the premise, `generated_text` the hypothesis.

    TRUE's download script writes each CSV with pandas' default index, so the header starts
    with an unnamed column; it is ignored (files written without it read the same).

    Returns:
      Examples with `label` 1 (consistent) or 0, `dataset` = the display name (`FRANK`, ...),
      `question` = 4. Rows with empty text or a label other than 0/1 are dropped and reported.

    Raises:
      UserError: the file is missing or lacks `grounding`, `generated_text` or `label`.
    """
    p = common.existing_file(true_file(dataset, directory), f"TRUE {dataset} CSV", TRUE_SOURCE)
    display = TRUE_DATASETS[dataset][1]
    rows = common.csv_rows(p)
    header = common.csv_header(p, rows, TRUE_CSV_COLUMNS)
    model_column = "model" if "model" in header else None
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    for line, row in common.csv_records(p, rows, header, drops):
        label = _binary_label(row["label"])
        if label is None:
            drops.append(errors.DataError(str(p), line, "label", f"{row['label']!r} is not 0 or 1"))
            continue
        grounding = common.text_or_drop(row, "grounding", str(p), line, drops)
        generated = grounding and common.text_or_drop(row, "generated_text", str(p), line, drops)
        if not generated:
            continue
        # The unnamed index column (header "") numbers the rows; else the record's line.
        index = row.get("", "").strip() or str(line)
        examples.append(
            {
                "premise": grounding,
                "hypothesis": generated,
                "label": label,
                "gem_id": f"true_{dataset}-{index}",
                "language": "en",
                "dataset": display,
                "system": row.get(model_column, "").strip() if model_column else "",
                "question": TRUE_QUESTION,
            }
        )
    return common.ReadResult(str(p), examples, drops)


def task_name(dataset: str) -> str:
    """`true_frank` for TRUE's FRANK."""
    return f"true_{dataset}"


def task_names() -> list[str]:
    """Its score tasks, one per dataset."""
    return [task_name(d) for d in TRUE_DATASETS]


def task_question(name: str) -> int | None:
    """The SEAHORSE question (4) of a TRUE task name, else None."""
    return TRUE_QUESTION if name.split(".")[0] in task_names() else None


def read_all(directory: str) -> list[common.ReadResult]:
    """Every TRUE dataset whose CSV is in `directory` (the registry's reader); the absent
    and empty CSVs are skipped and said in the first result's `notes` (a folder may hold
    only some of the eleven), which the command reports once it has run.

    Raises:
      UserError: the folder holds none of TRUE's CSVs; DataError: every CSV it holds is
        empty (the first one's `fileio.empty_file_error`).
    """
    present = [d for d in TRUE_DATASETS if true_file(d, directory).is_file()]
    if not present:
        files = ", ".join(f for f, _ in TRUE_DATASETS.values())
        raise errors.UserError(
            f"{directory} holds none of TRUE's CSVs ({files}). Get them from {TRUE_SOURCE}."
        )
    results, empty, notes = [], [], []
    absent = [TRUE_DATASETS[d][0] for d in TRUE_DATASETS if d not in present]
    if absent:
        notes.append(
            f"TRUE: {len(absent)} of {len(TRUE_DATASETS)} CSVs not in "
            f"{true_folder(directory)}, skipped: {', '.join(absent)}"
        )
    for dataset in present:
        try:
            results.append(read_true(dataset, directory))
        except errors.DataError as e:
            if not e.reason.startswith("empty file"):
                raise
            # Like an absent CSV: TRUE is eleven files, and a folder may hold only some.
            notes.append(f"TRUE {dataset}: {e}; skipped")
            empty.append(e)
    if not results:
        raise empty[0]
    results[0].notes.extend(notes)
    return results


BENCHMARK = registry.Benchmark(
    name="true",
    title="TRUE",
    read=read_all,
    dimensions=(str(TRUE_QUESTION),),
    label_kind=registry.LABEL_BINARY,
    # Each CSV row is one item, and most CSVs name no system: the id alone is the key
    # (`true_<dataset>-<row index>`, the unnamed first column numbering the rows).
    key=("gem_id",),
    protocol=registry.Protocol(
        registry.PAPER,
        ("roc_auc",),
        by=("dataset",),
        description="ROC-AUC per dataset (the paper's Table 7)",
    ),
    env=ENV_TRUE_DIR,
    source=TRUE_SOURCE,
    path_kind="folder",
    questions={str(TRUE_QUESTION): TRUE_QUESTION},
    mixture="true_all",
    display_names={
        **{key: display for key, (_, display) in TRUE_DATASETS.items()},
        **{alias: TRUE_DATASETS[key][1] for alias, key in TRUE_ALIASES.items()},
    },
    table=registry.PaperTable(7, "Table 7: TRUE benchmark"),
    tasks=registry.TaskNames(task_names, task_question),
)

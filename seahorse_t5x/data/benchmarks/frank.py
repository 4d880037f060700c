"""FRANK (Pagnoni et al. 2021): CNN/DM and XSum (BBC) summaries of 9 systems with a human
factuality score in [0, 1] (docs/benchmarks.md).

Read from the release's `data/` folder: `human_annotations.json` (a JSON list: `hash`,
`model_name`, `dataset` cnndm/bbc, `Factuality`, `split` valid/test, error fields) joined
one to one on `hash` + `model_name` with `benchmark_data.json` (a JSON list: `hash`,
`model_name`, `article`, `summary`, ...). XSum hashes look like numbers (`"34687720"`);
they stay strings. The folder comes from an argument, gin
(`seahorse_t5x.data.benchmarks.benchmark_paths.frank`) or `SEAHORSE_FRANK_DIR`.
"""

from __future__ import annotations

import collections
import math
import os
import pathlib

from seahorse_t5x import errors, fileio
from seahorse_t5x.data.benchmarks import common, registry

ENV_FRANK_DIR = "SEAHORSE_FRANK_DIR"
FRANK_SOURCE = "artidoro/frank, folder data/ (human_annotations.json, benchmark_data.json)"
FRANK_ANNOTATIONS = "human_annotations.json"
FRANK_BENCHMARK_DATA = "benchmark_data.json"
FRANK_DIMENSION = "factuality"
FRANK_SPLITS: dict[str, str] = {"valid": "validation", "validation": "validation", "test": "test"}
FRANK_DATASETS: tuple[str, ...] = ("cnndm", "bbc")
_ANNOTATION_FIELDS = ("hash", "model_name", "dataset", "Factuality", "split")
_DATA_FIELDS = ("hash", "model_name", "article", "summary")


_EXPECTED = "a JSON list of FRANK records"


def _records(path: pathlib.Path) -> list:
    data = fileio.read_json(path, _EXPECTED)
    if not isinstance(data, list):
        raise errors.DataError(str(path), None, None, "expected a JSON list of records")
    if not data:
        raise fileio.empty_file_error(path, _EXPECTED)
    return data


def _key(record: dict) -> tuple[str, str]:
    # json keeps "34687720" a string; a copy re-saved by pandas may hold the int.
    return str(record["hash"]).strip(), str(record["model_name"]).strip()


def _texts_by_key(
    data_path: os.PathLike, drops: list[errors.DataError]
) -> tuple[dict[tuple[str, str], dict], set[tuple[str, str]]]:
    """The benchmark data's records by (hash, model_name), and the keys given twice; a
    record without a field is a drop (its 1-based position locates it)."""
    texts: dict[tuple[str, str], dict] = {}
    repeated: set[tuple[str, str]] = set()
    for position, record in enumerate(_records(data_path), start=1):
        missing = [f for f in _DATA_FIELDS if not isinstance(record, dict) or f not in record]
        if missing:
            drops.append(errors.DataError(str(data_path), position, missing[0], "field missing"))
            continue
        key = _key(record)
        if key in texts:
            repeated.add(key)
        texts[key] = record
    return texts, repeated


def _annotation_problem(
    record: dict,
    key: tuple[str, str],
    split: str | None,
    one_to_one: bool,
    texts: dict[tuple[str, str], dict],
) -> tuple[str, str] | None:
    """(field, reason) that drops an annotation record, or None to keep it."""
    factuality = record["Factuality"]
    if not one_to_one:
        return "hash", f"{key} is not one to one"
    if (
        isinstance(factuality, bool)
        or not isinstance(factuality, (int, float))
        or not (math.isfinite(factuality) and 0 <= factuality <= 1)
    ):
        return "Factuality", f"{factuality!r} not in [0, 1]"
    if split is None:
        return "split", f"{record['split']!r}"
    if key not in texts:
        return "hash", f"{key} not in {FRANK_BENCHMARK_DATA}"
    if not str(texts[key]["article"]).strip() or not str(texts[key]["summary"]).strip():
        return "summary", "empty article or summary"
    return None


def read_frank(directory: str | os.PathLike) -> list[common.ReadResult]:
    """Reads FRANK's annotations joined with its articles and summaries.

    Returns:
      One `ReadResult` (dimension `factuality`): `label` = `Factuality` in [0, 1],
      `gem_id` = `hash`, `system` = `model_name`, `dataset` cnndm/bbc, `split`
      validation/test. An annotation record missing a field or with a value out of range,
      a key given twice (in either file), or no article and summary for the key, is a
      counted drop (the record's 1-based position in the list locates it).

    Raises:
      UserError: a file is missing; DataError: a file is not a JSON list.
    """
    folder = common.release_path(
        directory, (FRANK_ANNOTATIONS, FRANK_BENCHMARK_DATA), "FRANK folder", FRANK_SOURCE, True
    )
    annotations_path = common.existing_file(
        folder / FRANK_ANNOTATIONS, "FRANK human annotations", FRANK_SOURCE
    )
    data_path = common.existing_file(
        folder / FRANK_BENCHMARK_DATA, "FRANK benchmark data", FRANK_SOURCE
    )
    drops: list[errors.DataError] = []
    texts, repeated = _texts_by_key(data_path, drops)
    annotations = _records(annotations_path)
    counts = collections.Counter(
        _key(r) for r in annotations if isinstance(r, dict) and "hash" in r and "model_name" in r
    )
    examples: list[dict] = []
    at = str(annotations_path)
    for position, record in enumerate(annotations, start=1):
        missing = [f for f in _ANNOTATION_FIELDS if not isinstance(record, dict) or f not in record]
        if missing:
            drops.append(errors.DataError(at, position, missing[0], "field missing"))
            continue
        key = _key(record)
        split = FRANK_SPLITS.get(str(record["split"]).strip().lower())
        one_to_one = counts[key] == 1 and key not in repeated
        problem = _annotation_problem(record, key, split, one_to_one, texts)
        if problem is not None:
            drops.append(errors.DataError(at, position, *problem))
        else:
            factuality = record["Factuality"]
            examples.append(
                {
                    "premise": str(texts[key]["article"]).strip(),
                    "hypothesis": str(texts[key]["summary"]).strip(),
                    "label": float(factuality),
                    "gem_id": key[0],
                    "language": "en",
                    "dataset": str(record["dataset"]).strip(),
                    "system": key[1],
                    "split": split,
                    "question": FRANK_DIMENSION,
                }
            )
    return [common.ReadResult(str(annotations_path), examples, drops)]


BENCHMARK = registry.Benchmark(
    key_aliases={"gem_id": ("hash",), "system": ("model_name",)},
    row_fields=("split",),
    name="frank",
    title="FRANK",
    read=read_frank,
    dimensions=(FRANK_DIMENSION,),
    label_kind=registry.LABEL_GRADED,
    key=("gem_id", "system"),
    protocol=registry.Protocol(
        registry.PARTIAL,
        ("pearson", "spearman", "partial_pearson", "partial_spearman"),
        by=("split", "dataset"),
        description="Pearson and Spearman, plain and partial (residuals after the one-hot "
        "system), per split and dataset; Williams' test between metrics",
    ),
    env=ENV_FRANK_DIR,
    source=FRANK_SOURCE,
    path_kind="folder",
    questions={FRANK_DIMENSION: 4},
    datasets={d: d for d in FRANK_DATASETS},
    splits=("validation", "test"),
)

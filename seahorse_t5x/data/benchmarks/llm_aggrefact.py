"""LLM-AggreFact (Tang et al. 2024): grounding documents and claims from 11 datasets,
labelled supported (1) or not (0) (docs/benchmarks.md).

Read from the Parquet files of the HF dataset `lytang/LLM-AggreFact` (`data/dev-*.parquet`,
`data/test-*.parquet`; columns `dataset`, `doc`, `claim`, `label`,
`contamination_identifier`). The path is that folder (or one Parquet file, whose name says
its split); it comes from an argument, gin
(`seahorse_t5x.data.benchmarks.benchmark_paths.llm_aggrefact`) or
`SEAHORSE_LLM_AGGREFACT_DIR`. The rows have no id: the item key is dataset + doc + claim.
"""

from __future__ import annotations

import hashlib
import math
import os
import pathlib

from seahorse_t5x import errors, fileio
from seahorse_t5x.data.benchmarks import common, registry

ENV_LLM_AGGREFACT_DIR = "SEAHORSE_LLM_AGGREFACT_DIR"
LLM_AGGREFACT_SOURCE = (
    "the HF dataset lytang/LLM-AggreFact (gated): its data/dev-*.parquet and "
    "data/test-*.parquet files"
)
LLM_AGGREFACT_DATASETS: tuple[str, ...] = (
    "AggreFact-CNN",
    "AggreFact-XSum",
    "TofuEval-MediaS",
    "TofuEval-MeetB",
    "Wice",
    "Reveal",
    "ClaimVerify",
    "FactCheck-GPT",
    "ExpertQA",
    "Lfqa",
    "RAGTruth",
)
LLM_AGGREFACT_DIMENSION = "supported"
# File name prefix -> split.
_SPLIT_PREFIXES: dict[str, str] = {"dev": "validation", "validation": "validation", "test": "test"}
_COLUMNS = ("dataset", "doc", "claim", "label")


def item_id(dataset: str, document: str, claim: str) -> str:
    """A stable id for a row without one: the dataset and a hash of its texts."""
    digest = hashlib.sha256(f"{document}\0{claim}".encode()).hexdigest()[:16]
    return f"{registry.dataset_suffix(dataset)}-{digest}"


def parquet_files(path: str | os.PathLike) -> list[tuple[pathlib.Path, str]]:
    """(file, split) for each Parquet file under `path` (or `path` itself).

    Raises:
      UserError: no Parquet file, or a file name that says no split (dev-*, test-*).
    """
    p = pathlib.Path(path)
    if p.is_dir():
        # The dataset's folder, its `data/` or any folder above them: every Parquet file
        # below (`common.release_path` finds the folder).
        try:
            p = common.release_path(p, ("*.parquet",), "LLM-AggreFact folder", "", folder=True)
        except errors.UserError:
            pass
    files = sorted(p.rglob("*.parquet")) if p.is_dir() else [p]
    if not files or not files[0].is_file():
        raise errors.UserError(
            f"no LLM-AggreFact Parquet file at {p}. Get it from {LLM_AGGREFACT_SOURCE}."
        )
    out = []
    for file in files:
        prefix = file.name.split("-")[0].split(".")[0].lower()
        if prefix not in _SPLIT_PREFIXES:
            raise errors.UserError(
                f"{file}: the name says no split; expected dev-*.parquet or test-*.parquet"
            )
        out.append((file, _SPLIT_PREFIXES[prefix]))
    return out


def _label(value: object) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number in (0.0, 1.0) else None


def read_llm_aggrefact(path: str | os.PathLike) -> list[common.ReadResult]:
    """Reads LLM-AggreFact's dev and test Parquet files.

    Returns:
      One `ReadResult` per file: `premise` = `doc`, `hypothesis` = `claim`, `label` 1
      (supported) or 0, `dataset`, `split` (validation for dev, test). A row with a missing
      or empty field or a label other than 0/1 is a counted drop (its 1-based row in the
      file locates it).

    Raises:
      UserError: no file, a file without the columns, or not Parquet.
    """
    import pyarrow.parquet as pq

    results = []
    expected = f"a Parquet table with the columns {', '.join(_COLUMNS)} and at least one row"
    for file, split in parquet_files(path):
        if file.stat().st_size == 0:
            raise fileio.empty_file_error(file, expected)
        try:
            table = pq.read_table(file)
        except Exception as e:  # pyarrow raises its own error kinds for a bad file
            raise errors.UserError(f"{file}: not a readable Parquet file ({e})") from None
        missing = [c for c in _COLUMNS if c not in table.column_names]
        if missing:
            raise errors.DataError(
                str(file), None, missing[0], f"column missing; columns: {table.column_names}"
            )
        if not table.num_rows:
            raise fileio.empty_file_error(file, expected)
        columns = {c: table.column(c).to_pylist() for c in _COLUMNS}
        examples, drops = [], []
        for row in range(table.num_rows):
            values = {c: columns[c][row] for c in _COLUMNS}
            empty = [
                c
                for c in ("dataset", "doc", "claim")
                if not isinstance(values[c], str) or not values[c].strip()
            ]
            label = _label(values["label"])
            if empty:
                drops.append(errors.DataError(str(file), row + 1, empty[0], "missing or empty"))
                continue
            if label is None or (
                isinstance(values["label"], float) and math.isnan(values["label"])
            ):
                drops.append(
                    errors.DataError(
                        str(file), row + 1, "label", f"{values['label']!r} is not 0 or 1"
                    )
                )
                continue
            dataset = values["dataset"].strip()
            examples.append(
                {
                    "premise": values["doc"],
                    "hypothesis": values["claim"],
                    "label": label,
                    "gem_id": item_id(dataset, values["doc"], values["claim"]),
                    "language": "en",
                    "dataset": dataset,
                    "system": "",
                    "split": split,
                    "question": LLM_AGGREFACT_DIMENSION,
                }
            )
        results.append(common.ReadResult(str(file), examples, drops))
    return results


BENCHMARK = registry.Benchmark(
    key_aliases={"article": ("doc",), "summary": ("claim",)},
    row_fields=("split",),
    name="llm_aggrefact",
    title="LLM-AggreFact",
    read=read_llm_aggrefact,
    dimensions=(LLM_AGGREFACT_DIMENSION,),
    label_kind=registry.LABEL_BINARY,
    key=("dataset", "article", "summary"),
    protocol=registry.Protocol(
        registry.FIXED_THRESHOLD,
        ("balanced_accuracy",),
        by=("dataset",),
        threshold="score > 0.5",
        description="balanced accuracy per dataset and their unweighted mean at the fixed "
        "threshold (supported when score > 0.5); a threshold tuned per dataset on dev is "
        "reported apart",
    ),
    env=ENV_LLM_AGGREFACT_DIR,
    source=LLM_AGGREFACT_SOURCE,
    path_kind="folder",
    questions={LLM_AGGREFACT_DIMENSION: 4},
    datasets={registry.dataset_suffix(d): d for d in LLM_AGGREFACT_DATASETS},
    splits=("validation", "test"),
)

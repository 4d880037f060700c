"""AggreFact (Tang et al. 2023): nine factual-consistency datasets over CNN/DM and XSum
summaries, unified with binary labels (docs/benchmarks.md).

Read from the release's `data/aggre_fact_final.csv` (or `aggre_fact_sota.csv`, the SOTA
systems' rows): header `dataset,origin,id,doc,summary,model_name,label,cut` followed by
other metrics' score columns; `cut` is val or test; label 1 = consistent (`1.0` when pandas
wrote a column with a missing value). Quotes and newlines inside fields are CSV-quoted. The
path is the CSV or a folder holding it; it comes from an argument, gin
(`seahorse_t5x.data.benchmarks.benchmark_paths.aggrefact`) or `SEAHORSE_AGGREFACT_PATH`.
"""

from __future__ import annotations

import os
import pathlib

from seahorse_t5x import errors
from seahorse_t5x.data.benchmarks import common, registry

ENV_AGGREFACT_PATH = "SEAHORSE_AGGREFACT_PATH"
AGGREFACT_SOURCE = "Liyan06/AggreFact, data/aggre_fact_final.csv (or aggre_fact_sota.csv)"
AGGREFACT_FILES: tuple[str, ...] = ("aggre_fact_final.csv", "aggre_fact_sota.csv")
AGGREFACT_DIMENSION = "consistency"
AGGREFACT_COLUMNS: tuple[str, ...] = (
    "dataset",
    "origin",
    "id",
    "doc",
    "summary",
    "model_name",
    "label",
    "cut",
)
# AggreFact's system categories (its utils.py); LEAD3 and the references are in none.
AGGREFACT_SOTA: tuple[str, ...] = ("BART", "PegasusDynamic", "T5", "Pegasus")
# origin -> the SOTA benchmark's name.
AGGREFACT_SOTA_BENCHMARKS: dict[str, str] = {
    "cnndm": "AggreFact-CNN-SOTA",
    "xsum": "AggreFact-XSum-SOTA",
}
_CUTS: dict[str, str] = {"val": "validation", "validation": "validation", "test": "test"}


def aggrefact_file(path: str | os.PathLike) -> pathlib.Path:
    """The CSV: `path` itself, or the first of `AGGREFACT_FILES` in a folder or under the
    release checkout's `data/` (`common.release_path`)."""
    return common.release_path(path, AGGREFACT_FILES, "AggreFact CSV", AGGREFACT_SOURCE)


def read_aggrefact(path: str | os.PathLike) -> list[common.ReadResult]:
    """Reads AggreFact's unified CSV.

    Returns:
      One `ReadResult`: `premise` = `doc`, `hypothesis` = `summary`, `label` 1/0, `gem_id`
      = `id` (kept as text: XSum ids look like numbers), `system` = `model_name`,
      `dataset`, `origin` (cnndm/xsum), `split` (validation for val, test). A record with
      another number of fields than the header, an empty text, id or origin, a label other
      than 0/1 (`1.0` is 1) or a cut other than val/test is a counted drop.

    Raises:
      UserError: the file is missing; DataError: the header lacks a column.
    """
    p = aggrefact_file(path)
    rows = common.csv_rows(p)
    header = common.csv_header(p, rows, AGGREFACT_COLUMNS)
    examples: list[dict] = []
    drops: list[errors.DataError] = []
    for line, row in common.csv_records(p, rows, header, drops):
        number = common.float_field(row["label"])
        split = _CUTS.get(row["cut"].strip().lower())
        if number not in (0.0, 1.0):
            drops.append(errors.DataError(str(p), line, "label", f"{row['label']!r} is not 0 or 1"))
            continue
        if split is None:
            drops.append(
                errors.DataError(str(p), line, "cut", f"{row['cut']!r} is not val or test")
            )
            continue
        document = common.text_or_drop(row, "doc", str(p), line, drops)
        summary = document and common.text_or_drop(row, "summary", str(p), line, drops)
        item = summary and common.text_or_drop(row, "id", str(p), line, drops)
        origin = item and common.text_or_drop(row, "origin", str(p), line, drops)
        if not origin:
            continue
        examples.append(
            {
                "premise": document,
                "hypothesis": summary,
                "label": int(number),
                "gem_id": item,
                "language": "en",
                "dataset": row["dataset"].strip(),
                "system": row["model_name"].strip(),
                "split": split,
                "origin": origin.lower(),
                "question": AGGREFACT_DIMENSION,
            }
        )
    return [common.ReadResult(str(p), examples, drops)]


BENCHMARK = registry.Benchmark(
    key_aliases={"gem_id": ("id",), "system": ("model_name",), "article": ("doc",)},
    row_fields=("split", "origin"),
    name="aggrefact",
    title="AggreFact",
    read=read_aggrefact,
    dimensions=(AGGREFACT_DIMENSION,),
    label_kind=registry.LABEL_BINARY,
    key=("dataset", "gem_id", "system"),
    protocol=registry.Protocol(
        registry.TUNED_THRESHOLD,
        ("balanced_accuracy",),
        by=("origin", "dataset"),
        threshold="tuned on val: percentile candidates, score > t, last t with BAcc >= best",
        description="balanced accuracy on test per dataset at the threshold tuned on its val "
        "rows; AggreFact-CNN-SOTA and AggreFact-XSum-SOTA with one threshold per origin",
        groups=tuple(
            registry.SystemGroup(name, origin, AGGREFACT_SOTA)
            for origin, name in AGGREFACT_SOTA_BENCHMARKS.items()
        ),
    ),
    env=ENV_AGGREFACT_PATH,
    source=AGGREFACT_SOURCE,
    questions={AGGREFACT_DIMENSION: 4},
    datasets={"cnndm": "cnndm", "xsum": "xsum"},
    dataset_field="origin",
    splits=("validation", "test"),
)

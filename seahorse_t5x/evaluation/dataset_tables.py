"""The paper's tables of a prepared dataset (`report --data_dir`), as `tables.Table`s:

- Table 1: annotations per language and source dataset;
- Table 3: share of Yes per summarizing system, Q1..Q6;
- Table 8: share of Yes per language, Q1..Q6;
- Table 4: share of agreeing rater pairs per question, on items rated more than once;

and the Figure-3 label correlations between the six questions.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from seahorse_t5x import constants
from seahorse_t5x.evaluation import tables

# A duplicated SEAHORSE item: the same summary of the same article, rated again.
DUPLICATE_KEY: tuple[str, ...] = ("gem_id", "summary")
# The paper's system order in Table 3.
TABLE3_SYSTEMS: tuple[str, ...] = (
    "reference",
    "t5_base_250",
    "t5_base",
    "t5_xxl",
    "mt5_small_250",
    "mt5_small",
    "mt5_xxl",
    "palm_1shot",
    "palm_finetuned",
)


def table1(items: pd.DataFrame) -> tables.Table:
    """Table 1: annotations per language and source dataset (with the total)."""
    counts = items.groupby(["language", "dataset"], sort=False).size()
    order = {lang: i for i, lang in enumerate(constants.LANGUAGES)}
    dataset_order = {d: i for i, d in enumerate(constants.DATASETS)}
    keys = sorted(
        counts.index, key=lambda k: (order.get(k[0], 99), k[0], dataset_order.get(k[1], 99), k[1])
    )
    rows = [[lang, dataset, str(int(counts[(lang, dataset)]))] for lang, dataset in keys]
    rows.append(["all", "all", str(int(counts.sum()))])
    return tables.Table(
        name="table1",
        title="Table 1: annotations per language and dataset",
        header=["Language", "Dataset", "Annotations"],
        rows=rows,
        label_columns=2,
    )


_PAPER_ORDER: dict[str, Sequence[str]] = {
    "system": TABLE3_SYSTEMS,
    "language": constants.LANGUAGES,
    "dataset": constants.DATASETS,
}


def yes_rates(items: pd.DataFrame, by: str) -> pd.DataFrame:
    """Share of Yes per `by` value and question, over the items rated Yes or No.

    Rows follow the paper's order for `system`, `language` and `dataset` (others sorted).
    """
    columns = list(constants.LABEL_FIELDS)
    rated = items[[by, *columns]].copy()
    for c in columns:
        rated[c] = pd.to_numeric(rated[c], errors="coerce")
    rates = rated.groupby(by, sort=True)[columns].mean()
    order = _PAPER_ORDER.get(by, ())
    keys = [k for k in order if k in rates.index] + [k for k in rates.index if k not in order]
    return rates.loc[keys]


def _rate_table(
    items: pd.DataFrame, by: str, order: Sequence[str], name: str, title: str
) -> tables.Table:
    rates = yes_rates(items, by)
    keys = [k for k in order if k in rates.index] + sorted(k for k in rates.index if k not in order)
    rows = [
        [key, *[tables.format_value(rates.loc[key, c]) for c in constants.LABEL_FIELDS]]
        for key in keys
    ]
    return tables.Table(
        name=name,
        title=title,
        header=[by.capitalize(), *tables.QUESTION_HEADERS],
        rows=rows,
        caption="Share of Yes among the Yes/No ratings.",
    )


def table3(items: pd.DataFrame) -> tables.Table:
    """Table 3: share of Yes per summarizing system, Q1..Q6."""
    return _rate_table(
        items, "system", TABLE3_SYSTEMS, "table3", "Table 3: share of Yes per system"
    )


def table8(items: pd.DataFrame) -> tables.Table:
    """Table 8 layout: share of Yes per language, Q1..Q6."""
    return _rate_table(
        items, "language", constants.LANGUAGES, "table8", "Table 8: share of Yes per language"
    )


def label_correlations(items: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Pearson correlations between the six questions' labels (the paper's Figure 3).

    Only items with all six labels enter (a Q1 No leaves Q2..Q6 empty).

    Returns:
      The 6x6 correlation matrix (index and columns `Q1`..`Q6`) and the number of items.
    """
    labels = items[list(constants.LABEL_FIELDS)].apply(pd.to_numeric, errors="coerce").dropna()
    matrix = labels.corr(method="pearson")
    matrix.index = matrix.columns = list(tables.QUESTION_HEADERS)
    return matrix, int(len(labels))


def pairwise_agreement(
    ratings: pd.DataFrame, key: Sequence[str] = ("gem_id", "system")
) -> tables.Table:
    """Table 4 layout: share of agreeing rater pairs per question, on items rated twice or more.

    Args:
      ratings: one row per rating with `q1`..`q6` (1, 0 or null) and the `key` columns.
    """
    cells = []
    totals = []
    for column in constants.LABEL_FIELDS:
        agree = pairs = 0
        for _, group in ratings.groupby(list(key), sort=False):
            values = pd.to_numeric(group[column], errors="coerce").dropna()
            yes = int((values == 1).sum())
            no = int((values == 0).sum())
            pairs += (yes + no) * (yes + no - 1) // 2
            agree += yes * (yes - 1) // 2 + no * (no - 1) // 2
        cells.append(tables.format_value(agree / pairs if pairs else None))
        totals.append(pairs)
    items = int((ratings.groupby(list(key), sort=False).size() > 1).sum())
    return tables.Table(
        name="table4",
        title="Table 4: pairwise agreement between raters",
        header=["Items", *tables.QUESTION_HEADERS],
        rows=[[str(items), *cells]],
        caption=f"Rater pairs per question: {', '.join(map(str, totals))}.",
    )


def paper_tables(items: pd.DataFrame, duplicates: pd.DataFrame | None = None) -> list[tables.Table]:
    """Tables 1, 3 and 8 (and Table 4 when duplicate ratings are given)."""
    out = [table1(items), table3(items), table8(items)]
    if duplicates is not None and len(duplicates):
        out.append(pairwise_agreement(duplicates, key=DUPLICATE_KEY))
    return out

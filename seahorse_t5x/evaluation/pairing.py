"""Two metrics' score rows paired item by item: the one pairing behind every paired test.

`pair_rows(a, b)` pairs metric A's rows with metric B's on one benchmark and question.
`report`'s paired bootstrap (`score_statistics.compare_metrics`), the benchmark protocols'
comparisons (`protocols.py`) and the agreement of students with their teacher
(`teacher_agreement.teacher_agreement`, B being the teacher) all call it, so a pair of
metrics is paired the same way in every table.

The item key (`ITEM_KEY`): `id`, `gem_id`, `system`, `summary`, `dataset`, `split`,
`origin`: of these, the fields that every row of both sides carries (not null). Values are
compared as text, so the id 7 in one file and "7" in another name one item. The key pairs
rows item by item when it holds an item id (`ID_FIELDS`: `id` or `gem_id`).

The rules. Each of A's rows with a score ends in exactly one count, and so does each of
B's: `n_items` (the pairs used), `label_mismatches`, `unpaired_a`/`unpaired_b`,
`missing_ids_a`/`missing_ids_b` or `duplicates_a`/`duplicates_b`.

- Rows without a score (null, NaN or infinite in the file) are paired like the others and
  left out with their pair afterwards, so a missing score never moves another pair. They
  are counted where the rows are read (the report's `missing_scores`), not here.
- Rows one side lacks: A's scored rows without a scored row of B on their item are
  `unpaired_a`; B's without A's, `unpaired_b`.
- Labels that differ: a pair whose two rows give the item different labels is left out
  (`label_mismatches`); the files do not describe the same item.
- Duplicates: rows whose key repeats on their side (an item scored twice, or a key too
  weak to tell items apart, such as `gem_id` alone when only one side carries `system`)
  are left out (`duplicates_a`, `duplicates_b`) rather than paired by a guess.
- Missing ids: when some rows carry an item id and others do not, those without one are
  left out (`missing_ids_a`, `missing_ids_b`). When the two sides carry their ids in
  different fields (A `id`, B `gem_id` alone), nothing is paired (`paired_by` is empty).
- No ids at all: when no row of either side carries an item id, the k-th row of A's
  metric, benchmark and question is paired with B's k-th, counted in the order the rows
  were read before any row was dropped (`POSITION_FIELD`, set by `number_rows`; rows
  without it are counted as given, which must then be all of their group), and the other
  key fields both sides carry must agree. `paired_by` then ends in `ROW_ORDER`, and
  `pairing_note` says so under every table built on such pairs.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from seahorse_t5x.data import scorefiles

# The item ids, the first fields of the key.
ID_FIELDS: tuple[str, ...] = ("id", "gem_id")
# What identifies an item when two metrics' rows are paired: the ids, the score files' item
# fields (`scorefiles.ITEM_FIELDS`) and the fields that place an item in a benchmark (its
# dataset, split and origin: AggreFact's natural key holds its dataset).
ITEM_KEY: tuple[str, ...] = (
    *ID_FIELDS,
    *(f for f in scorefiles.ITEM_FIELDS if f not in ID_FIELDS),
    "dataset",
    "split",
    "origin",
)
# A row's place among its metric's rows of one benchmark and question, as read.
POSITION_FIELD = "_position"
# The last entry of `paired_by` when rows without ids were paired by their position.
ROW_ORDER = "row order"
# The columns of a group: a row's position is counted within them.
_GROUP = ("metric", "benchmark", "question")
# The counts that appear in `Pairing.info` only where they are not 0.
_LEFT_OUT = ("missing_ids_a", "missing_ids_b", "duplicates_a", "duplicates_b")


@dataclasses.dataclass(frozen=True)
class Pairing:
    """Two metrics' rows paired (see the module docstring for the rules).

    Attributes:
      rows: one row per pair used: A's columns, its score as `score_a`, and `score_b`.
      paired_by: the key fields joined on, `ROW_ORDER` last when rows were paired by
        position; empty when the sides share no id field.
      n_items: the pairs used (both scored, the same label).
      unpaired_a, unpaired_b: scored rows without a scored row of the other side.
      label_mismatches: scored pairs whose labels differ (left out).
      missing_ids_a, missing_ids_b: scored rows left out for want of an item id.
      duplicates_a, duplicates_b: scored rows left out because their key repeats.
    """

    rows: pd.DataFrame
    paired_by: tuple[str, ...]
    n_items: int
    unpaired_a: int
    unpaired_b: int
    label_mismatches: int
    missing_ids_a: int = 0
    missing_ids_b: int = 0
    duplicates_a: int = 0
    duplicates_b: int = 0

    @property
    def by_position(self) -> bool:
        """True when the rows carried no item ids and were paired by row order."""
        return ROW_ORDER in self.paired_by

    def left_out(self) -> dict[str, int]:
        """The counts of rows left out for a missing id or a repeated key, those not 0."""
        return {name: getattr(self, name) for name in _LEFT_OUT if getattr(self, name)}

    def info(self) -> dict:
        """How the rows were paired, as report.json records it beside each comparison."""
        return {
            "paired_by": list(self.paired_by),
            "n_items": self.n_items,
            "unpaired_a": self.unpaired_a,
            "unpaired_b": self.unpaired_b,
            "label_mismatches": self.label_mismatches,
            **self.left_out(),
        }


def number_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with `POSITION_FIELD`: each row's position (from 0) among the rows of its
    metric, benchmark and question, in the order read. Call it before any row is dropped,
    so that rows without ids keep their place when rows are left out later."""
    return frame.assign(**{POSITION_FIELD: frame.groupby(list(_GROUP), sort=False).cumcount()})


def _carried(frame: pd.DataFrame, field: str) -> pd.Series:
    """True where a row carries `field` (the column exists and holds no null)."""
    if field not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame[field].notna()


def _has_id(frame: pd.DataFrame) -> pd.Series:
    carried = pd.Series(False, index=frame.index)
    for field in ID_FIELDS:
        carried |= _carried(frame, field)
    return carried


def _as_text(value: object) -> str:
    """A key value as text: 7, 7.0 (an integer column that pandas widened to hold a null)
    and "7" are one id; other values (a list, by mistake) as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return json.dumps(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    return json.dumps(value, sort_keys=True, default=str)


def _join_columns(frame: pd.DataFrame, fields: Iterable[str]) -> pd.DataFrame:
    """The key fields as text, in columns `_key_<field>` (the rows' own values kept)."""
    return frame.assign(**{f"_key_{f}": frame[f].map(_as_text) for f in fields})


def _duplicated(frame: pd.DataFrame, on: list[str]) -> pd.Series:
    if not on:
        return pd.Series(False, index=frame.index)
    return frame.duplicated(on, keep=False)


def _scored(frame: pd.DataFrame) -> pd.Series:
    return frame["score"].notna()


def pair_rows(a: pd.DataFrame, b: pd.DataFrame) -> Pairing:
    """Pairs metric A's rows with metric B's on one benchmark and question.

    Args:
      a, b: each metric's rows (`label`, `score`, the key fields they carry), rows without
        a score included: they are left out after pairing. Rows without item ids are
        paired by `POSITION_FIELD` where they have it (`number_rows`), else by their order
        here.

    Returns:
      The pairs used and how every scored row was counted (the module docstring's rules).
    """
    with_id_a, with_id_b = _has_id(a), _has_id(b)
    by_position = not with_id_a.any() and not with_id_b.any()
    missing_ids = (0, 0)
    if not by_position:
        missing_ids = (
            int((~with_id_a & _scored(a)).sum()),
            int((~with_id_b & _scored(b)).sum()),
        )
        a, b = a[with_id_a], b[with_id_b]
    key = [f for f in ITEM_KEY if _carried(a, f).all() and _carried(b, f).all()]
    a, b = _join_columns(a, key), _join_columns(b, key)
    on = [f"_key_{f}" for f in key]
    paired_by = tuple(key)
    if by_position:
        if POSITION_FIELD not in a.columns or POSITION_FIELD not in b.columns:
            a = a.assign(**{POSITION_FIELD: np.arange(len(a))})
            b = b.assign(**{POSITION_FIELD: np.arange(len(b))})
        on.append(POSITION_FIELD)
        paired_by += (ROW_ORDER,)
    elif not any(f in ID_FIELDS for f in key):
        # The sides carry their ids in different fields: no item can be matched.
        on, paired_by = [], ()
    repeated_a, repeated_b = _duplicated(a, on), _duplicated(b, on)
    duplicates = (int((repeated_a & _scored(a)).sum()), int((repeated_b & _scored(b)).sum()))
    a, b = a[~repeated_a], b[~repeated_b]
    if on:
        joined = a.merge(
            b[[*on, "label", "score"]], on=on, how="inner", suffixes=("", "_b"), sort=False
        )
    else:
        joined = a.iloc[:0].assign(label_b=pd.Series(dtype=float), score_b=pd.Series(dtype=float))
    both_scored = joined["score"].notna() & joined["score_b"].notna()
    same_label = joined["label"] == joined["label_b"]
    used = joined[both_scored & same_label]
    helpers = [c for c in joined.columns if c.startswith("_key_")] + ["label_b"]
    return Pairing(
        rows=used.drop(columns=helpers).rename(columns={"score": "score_a"}),
        paired_by=paired_by,
        n_items=int(len(used)),
        unpaired_a=int(_scored(a).sum() - both_scored.sum()),
        unpaired_b=int(_scored(b).sum() - both_scored.sum()),
        label_mismatches=int((both_scored & ~same_label).sum()),
        missing_ids_a=missing_ids[0],
        missing_ids_b=missing_ids[1],
        duplicates_a=duplicates[0],
        duplicates_b=duplicates[1],
    )


def pairing_note(entries: Iterable[Mapping], name: Callable[[Mapping], str]) -> str:
    """The sentence a table built on paired rows adds when pairs were not all made item by
    item: which were paired by row order, and how many rows were left out for a missing id
    or a repeated key. Empty when there is nothing to say.

    Args:
      entries: the table's records, each holding `paired_by` and the counts of
        `Pairing.info` (a pair's records may repeat: each name is counted once).
      name: how a record's pair is named (`"A - B (Q4)"`).
    """
    by_name: dict[str, Mapping] = {}
    for entry in entries:
        by_name.setdefault(name(entry), entry)
    by_position = [n for n, e in by_name.items() if ROW_ORDER in e.get("paired_by", ())]
    no_id = sum(e.get("missing_ids_a", 0) + e.get("missing_ids_b", 0) for e in by_name.values())
    repeated = sum(e.get("duplicates_a", 0) + e.get("duplicates_b", 0) for e in by_name.values())
    sentences = []
    if by_position:
        sentences.append(
            f"Paired by row order, their rows carrying no item id ({' or '.join(ID_FIELDS)}): "
            + ", ".join(by_position)
            + "."
        )
    if no_id or repeated:
        parts = [f"{no_id} without an item id"] if no_id else []
        parts += [f"{repeated} whose item key repeats"] if repeated else []
        sentences.append(f"Rows left out of the pairs: {' and '.join(parts)}.")
    return " ".join(sentences)

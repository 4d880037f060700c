"""Score rows as the report groups them (`normalized_scores`): one model per question merged
into its family, a benchmark reported by dataset keyed by dataset, language subsets added;
the benchmarks' order and the (benchmark, metric, question) groups the statistics loop over.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from seahorse_t5x import constants
from seahorse_t5x.data import scorefiles
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import tables

# The item a label belongs to when the questions are pivoted (Figure 3): one article
# (gem_id) has summaries from several systems; the summary, where files carry it. (Two
# metrics' rows are paired on `pairing.ITEM_KEY`.)
ITEM_KEY: tuple[str, ...] = scorefiles.ITEM_FIELDS


def datasets_reported_as_questions() -> list[registry.Benchmark]:
    """The benchmarks whose paper protocol reports by dataset (TRUE's Table 7 columns)."""
    return [
        b
        for b in registry.benchmarks()
        if b.protocol.kind == registry.PAPER and b.protocol.by == ("dataset",)
    ]


def datasets_as_questions(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of a benchmark reported by dataset grouped by their dataset, not by the
    question they all share (TRUE's Q4 -> Table 7's columns).

    For such a benchmark's rows whose `dataset` is one of its display names (or their
    keys), `question` becomes the display name; the original is kept in `scored_question`.
    """
    columns = pd.Series([None] * len(frame), index=frame.index, dtype=object)
    mask = pd.Series(False, index=frame.index)
    for benchmark in datasets_reported_as_questions():
        rows = frame["benchmark"] == benchmark.name
        if not rows.any():
            continue
        names = frame.loc[rows, "dataset"].map(benchmark.display_name)
        columns[names.index] = names
        mask |= rows & columns.notna()
    if not mask.any():
        return frame
    frame = frame.copy()
    frame["scored_question"] = frame["question"].where(mask, None)
    frame.loc[mask, "question"] = columns[mask]
    return frame


_QUESTION_MODEL = re.compile(r"^(?P<family>.+?)[_.-]q(?P<question>[1-6])$")


def merge_question_models(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """One row per metric family: `NAME_q1` .. `NAME_q6` (one model per question) -> `NAME`.

    A metric `NAME_qN` (also `NAME.qN`, `NAME-qN`) joins the family `NAME` when every one of
    its rows with a question number has question N (rows of benchmark dimensions, such as
    mFACE's `attribution`, may be scored by it too), `NAME` is not itself a metric, and no
    two members score the same benchmark and question. The original name is kept in
    `model`.

    Returns:
      The frame with merged metric names, and `{family: [members]}` for each merge.
    """
    metrics = list(dict.fromkeys(frame["metric"]))
    members: dict[str, list[str]] = {}
    for metric in metrics:
        match = _QUESTION_MODEL.match(metric)
        if not match or match["family"] in metrics:
            continue
        questions = frame.loc[frame["metric"] == metric, "question"]
        numbered = set(questions[questions.str.isdigit()])
        if numbered <= {match["question"]}:
            members.setdefault(match["family"], []).append(metric)
    merged: dict[str, list[str]] = {}
    for family, names in members.items():
        rows = frame[frame["metric"].isin(names)]
        if (
            len(names) > 1
            and not rows.groupby(["benchmark", "question"])["metric"].nunique().gt(1).any()
        ):
            merged[family] = names
    if not merged:
        return frame, {}
    rename = {name: family for family, names in merged.items() for name in names}
    frame = frame.copy()
    frame["model"] = frame["metric"]
    frame["metric"] = frame["metric"].map(lambda m: rename.get(m, m))
    return frame, merged


def normalized_scores(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Score rows as the report groups them: question models merged into families
    (`merge_question_models`), rows of a benchmark reported by dataset keyed by dataset
    (`datasets_as_questions`), language subsets added (`language_subsets`)."""
    frame, merged = merge_question_models(frame)
    return language_subsets(datasets_as_questions(frame)), merged


def language_subsets(frame: pd.DataFrame) -> pd.DataFrame:
    """Adds each benchmark's language subset (`registry.LanguageSubset`, e.g. mFACE's five
    SEAHORSE languages, as `mface_5lang`) when its rows hold other languages too (the
    paper's Table 6 shows both); otherwise returns `frame`."""
    subsets = []
    for benchmark in registry.benchmarks():
        if benchmark.subset is None:
            continue
        rows = frame[frame["benchmark"] == benchmark.name]
        inside = rows["language"].isin(benchmark.subset.languages)
        if inside.any() and not inside.all():
            subsets.append(rows[inside].assign(benchmark=benchmark.subset_name))
    return pd.concat([frame, *subsets], ignore_index=True) if subsets else frame


def subset_names() -> set[str]:
    """The registered language subsets' benchmark names (`mface_5lang`): their rows are
    copies of their benchmark's rows, counted once."""
    return {b.subset_name for b in registry.benchmarks() if b.subset_name}


def ordered_benchmarks(frame: pd.DataFrame) -> list[str]:
    """Benchmarks in the paper's order: SEAHORSE, then those with a paper table by its
    number, each after its language subset (mFACE's Table 6, TRUE's Table 7), then the
    others as first seen."""
    seen = list(dict.fromkeys(frame["benchmark"]))
    tabled = sorted((b for b in registry.benchmarks() if b.table), key=lambda b: b.table.number)
    order = [constants.SEAHORSE_BENCHMARK]
    for benchmark in tabled:
        order += [name for name in (benchmark.subset_name, benchmark.name) if name]
    known = [b for b in order if b in seen]
    return known + [b for b in seen if b not in known]


def groups(frame: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    """(benchmark, metric, question) groups: benchmarks and metrics in first-seen order."""
    benchmarks = ordered_benchmarks(frame)
    metrics = list(dict.fromkeys(frame["metric"]))
    out = []
    for key, rows in frame.groupby(["benchmark", "metric", "question"], sort=False):
        out.append((key, rows))
    out.sort(
        key=lambda kv: (
            benchmarks.index(kv[0][0]),
            metrics.index(kv[0][1]),
            tables.question_sort_key(kv[0][2]),
        )
    )
    return out


def scored_groups(
    frame: pd.DataFrame, by: list[str]
) -> list[tuple[tuple, pd.DataFrame, pd.DataFrame]]:
    """(key, rows with a score, all rows) per group of `by` that has a scored row, in the
    order the scored rows first show them: the pairs are made on all rows
    (`pairing.pair_rows` leaves out the unscored after pairing)."""
    everything = dict(iter(frame.groupby(by, sort=False)))
    scored = frame[frame["score"].notna()]
    return [(key, rows, everything[key]) for key, rows in scored.groupby(by, sort=False)]


def items_with_all_labels(frame: pd.DataFrame) -> pd.DataFrame | None:
    """SEAHORSE score rows pivoted to one row per item with `q1`..`q6` labels (Figure 3).

    An item's label is the same in every metric's rows, so all metrics contribute (one
    model per question gives each question's labels in a different metric). None when the
    rows carry no item ids.
    """
    rows = frame[frame["benchmark"] == constants.SEAHORSE_BENCHMARK]
    if rows.empty or rows["gem_id"].isna().any():
        return None
    key = [k for k in ITEM_KEY if rows[k].notna().all()]
    pivot = rows.pivot_table(index=key, columns="question", values="label", aggfunc="first")
    pivot = pivot.rename(columns={str(q): f"q{q}" for q in constants.QUESTIONS})
    for column in constants.LABEL_FIELDS:
        if column not in pivot.columns:
            pivot[column] = np.nan
    return pivot.reset_index()

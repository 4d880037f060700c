"""The Markdown/LaTeX tables and plots of a benchmark's own protocol section.

`section_tables` looks the section's protocol kind up in `BUILDERS` (one small builder per
kind, `registry.PROTOCOL_KINDS`); the kinds that compare metrics by a paired bootstrap share
`significance_table`. What a builder needs of its benchmark beyond the section's numbers
(AggreFact's origins and SOTA groups) it reads from the registry entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd

from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import pairing, plots, tables

ALL = "all"


def _value(entry: Mapping | None, key: str = "balanced_accuracy") -> str:
    return tables.format_value(None if entry is None else entry.get(key), 3)


def _with_interval(value: float | None, ci: Mapping | None) -> str:
    text = tables.format_value(value, 3)
    if ci and ci.get("low") is not None:
        text += " " + tables.format_interval(ci, 3)
    return text


def _p(p_value: float | None) -> str:
    return "-" if p_value is None else tables.format_p(p_value)


def _pairing_caption(caption: str, comparisons: list[Mapping]) -> str:
    """`caption` with `pairing.pairing_note`'s sentence when some pairs were not made item
    by item (rows without ids) or rows were left out of them."""
    note = pairing.pairing_note(comparisons, tables.comparison_name)
    return f"{caption} {note}".strip() if note else caption


def section_caption(section: Mapping) -> str:
    """The protocol's sentence, with its note and how many items each metric scored."""
    caption = section["protocol"]["description"] + "; 95% bootstrap intervals in brackets."
    if "note" in section:
        caption += f" Note: {section['note']}."
    if "coverage" in section:
        items = section["coverage"]["items"]
        scored = [
            f"{metric} scored {sum(counts.values())} of {sum(items.values())} items"
            for metric, counts in section["coverage"]["scored"].items()
        ]
        caption += " " + "; ".join(scored) + "."
    return caption


def summary_system_tables(name: str, section: Mapping, caption: str) -> list[tables.Table]:
    """SummEval: per dimension and metric, summary- and system-level correlations."""
    kinds = section["protocol"]["statistics"]
    rows = []
    for r in section["results"]:
        cells = []
        for level in ("summary_level", "system_level"):
            ci = r[level].get("ci", {})
            cells += [_with_interval(r[level][k], ci.get(k)) for k in kinds]
        skipped = sum(r["summary_level"]["skipped"].values())
        rows.append([tables.question_header(r["question"]), r["metric"], *cells, str(skipped)])
    header = ["dimension", "metric"]
    header += [f"summary {k}" for k in kinds] + [f"system {k}" for k in kinds]
    table = tables.Table(
        name=f"{name}_protocol",
        title=f"{section['title']}: summary- and system-level correlations",
        header=[*header, "documents skipped"],
        rows=rows,
        caption=caption,
        label_columns=2,
    )
    return [table, *significance_table(name, section, by_statistic=True)]


_PARTIAL_KEYS = ("pearson", "spearman", "partial_pearson", "partial_spearman")


def partial_tables(name: str, section: Mapping, caption: str) -> list[tables.Table]:
    """FRANK: plain and partial correlations per split and dataset, and Williams' test."""
    rows = [
        [r["metric"], c.get("split", ALL), c.get("dataset", ALL), str(c["n"])]
        + [_with_interval(c[k], c.get("ci", {}).get(k)) for k in _PARTIAL_KEYS]
        for r in section["results"]
        for c in r["cells"]
    ]
    out = [
        tables.Table(
            name=f"{name}_protocol",
            title=f"{section['title']}: Pearson and Spearman, plain and partial (system)",
            header=["metric", "split", "dataset", "n", "Pearson", "Spearman"]
            + ["partial Pearson", "partial Spearman"],
            rows=rows,
            caption=caption,
            label_columns=3,
        )
    ]
    if section["significance"]:
        sig = [
            [s["metric_a"], s["metric_b"], s.get("split", ALL), s.get("dataset", ALL)]
            + [tables.format_value(s["partial"]["t"], 3)]
            + [_p(s["partial"]["p_value"]), _p(s["plain"]["p_value"])]
            for s in section["significance"]
        ]
        out.append(
            tables.Table(
                name=f"{name}_williams",
                title=f"{section['title']}: Williams' test, metric A vs B",
                header=["metric A", "metric B", "split", "dataset"]
                + ["t (partial)", "p (partial)", "p (plain)"],
                rows=sig,
                caption=_pairing_caption(
                    "one-sided p of the larger correlation exceeding the smaller (n - 3 df)",
                    section["significance"],
                ),
                label_columns=4,
            )
        )
    return out


def fixed_threshold_tables(name: str, section: Mapping, caption: str) -> list[tables.Table]:
    """LLM-AggreFact: balanced accuracy per dataset at score > 0.5 and their mean; the
    threshold tuned per dataset on dev apart."""
    results = section["results"]
    datasets = list(dict.fromkeys(d["dataset"] for r in results for d in r["datasets"]))
    rows = []
    for r in results:
        by = {d["dataset"]: d for d in r["datasets"]}
        cells = [
            _with_interval(by.get(d, {}).get("balanced_accuracy"), by.get(d, {}).get("ci"))
            for d in datasets
        ]
        mean = _with_interval(r["mean"]["balanced_accuracy"], r["mean"].get("ci"))
        rows.append([r["metric"], *cells, mean])
    title = section["title"]
    out = [
        tables.Table(
            name=f"{name}_protocol",
            title=f"{title}: balanced accuracy at score > 0.5",
            header=["metric", *datasets, "mean"],
            rows=rows,
            caption=caption,
        )
    ]
    tuned = [r for r in results if "dev_tuned" in r]
    if tuned:
        rows = []
        for r in tuned:
            by = {d["dataset"]: d for d in r["dev_tuned"]["datasets"]}
            mean = tables.format_value(r["dev_tuned"]["mean"], 3)
            rows.append([r["metric"], *(_value(by.get(d)) for d in datasets), mean])
        out.append(
            tables.Table(
                name=f"{name}_dev_tuned",
                title=f"{title}: balanced accuracy, threshold tuned per dataset on dev "
                "(not the leaderboard's)",
                header=["metric", *datasets, "mean"],
                rows=rows,
            )
        )
    return out + significance_table(name, section)


def tuned_threshold_tables(name: str, section: Mapping, caption: str) -> list[tables.Table]:
    """AggreFact: balanced accuracy on test at the threshold tuned on val, per (origin,
    dataset), count-weighted per origin, and per SOTA group."""
    benchmark = registry.get(name)
    origins = list(benchmark.datasets.values())
    groups = [g.name for g in benchmark.protocol.groups]
    results = section["results"]
    columns = list(
        dict.fromkeys((c["origin"], c["dataset"]) for r in results for c in r["datasets"])
    )
    rows = []
    for r in results:
        by = {(c["origin"], c["dataset"]): c for c in r["datasets"]}
        sota = {s["benchmark"]: s for s in r["sota"]}
        rows.append(
            [r["metric"]]
            + [
                _with_interval(by.get(k, {}).get("balanced_accuracy"), by.get(k, {}).get("ci"))
                for k in columns
            ]
            + [_value(r["origins"].get(o)) for o in origins]
            + [
                _with_interval(sota.get(g, {}).get("balanced_accuracy"), sota.get(g, {}).get("ci"))
                for g in groups
            ]
        )
    table = tables.Table(
        name=f"{name}_protocol",
        title=f"{section['title']}: balanced accuracy on test, threshold tuned on val",
        header=["metric", *(f"{o}/{d}" for o, d in columns)]
        + [f"{o} (weighted)" for o in origins]
        + groups,
        rows=rows,
        caption=caption,
    )
    return [table, *significance_table(name, section)]


def significance_table(
    name: str, section: Mapping, by_statistic: bool = False
) -> list[tables.Table]:
    """The paired bootstrap between metrics (A - B), per dataset or, `by_statistic`, per
    statistic; none without comparisons."""
    if not section["significance"]:
        return []
    sig = [
        [s["metric_a"], s["metric_b"], tables.question_header(s["question"])]
        + [s["statistic"] if by_statistic else s.get("dataset") or s.get("statistic", "")]
        + [tables.format_value(s["difference"], 3)]
        + [tables.format_interval(s, 3), _p(s["p_value"])]
        for s in section["significance"]
    ]
    return [
        tables.Table(
            name=f"{name}_significance",
            title=f"{section['title']}: paired bootstrap, metric A - B",
            header=["metric A", "metric B", "dimension", "statistic", "difference"]
            + ["95% CI", "p"],
            rows=sig,
            caption=_pairing_caption("", section["significance"]),
            label_columns=4,
        )
    ]


# Protocol kind -> the builder of its section's tables (the paper's kind has no section:
# `report` gives it Table 5, a paper table or the generic per-question table).
BUILDERS: dict[str, Callable[[str, Mapping, str], list[tables.Table]]] = {
    registry.SUMMARY_SYSTEM: summary_system_tables,
    registry.PARTIAL: partial_tables,
    registry.FIXED_THRESHOLD: fixed_threshold_tables,
    registry.TUNED_THRESHOLD: tuned_threshold_tables,
}


def section_tables(name: str, section: Mapping) -> list[tables.Table]:
    """The Markdown/LaTeX tables of one benchmark's section (95% intervals in brackets)."""
    return BUILDERS[section["protocol"]["kind"]](name, section, section_caption(section))


def section_plots(frame: pd.DataFrame, name: str, section: Mapping, plot_dir) -> list[str]:
    """The protocol's plot: the summary/system kind's system-level scatter (per-system mean
    human score against mean metric score, one panel per dimension and metric)."""
    if section["protocol"]["kind"] != registry.SUMMARY_SYSTEM:
        return []
    rows = frame[frame["benchmark"] == name]
    return [
        plots.system_level_scatter(rows, plot_dir / f"{name}_system_level.png", section["title"])
    ]

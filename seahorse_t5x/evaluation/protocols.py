"""The report's sections for benchmarks with their own protocol (`registry.Protocol`).

SummEval: summary- and system-level Kendall, Spearman and Pearson. FRANK: Pearson and
Spearman, plain and partial (one-hot system), per split and dataset, with Williams' test
between metrics. LLM-AggreFact: balanced accuracy per dataset at score > 0.5 and their
unweighted mean (and, apart, a threshold tuned per dataset on dev). AggreFact: balanced
accuracy on test at the threshold tuned on val, per dataset, count-weighted per origin,
and the SOTA benchmarks with one threshold per origin. Every number comes with a bootstrap
interval over the protocol's unit (documents, systems or items) and metrics are compared on
the same resamples (docs/benchmarks.md states each protocol), their rows paired as
everywhere in the report (`pairing.pair_rows`).

`evaluate_protocol` looks the benchmark's protocol kind up in `EVALUATORS` (its numbers per
metric) and `COMPARISONS` (metric against metric); what a kind needs of its benchmark
beyond the rows (dataset order, system groups) it reads from the registry entry. The
section's tables are `protocol_tables`'.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import pairing, protocol_stats, stats, tables, unit_bootstrap

ALL = "all"


def protocol_of(benchmark: str) -> registry.Benchmark | None:
    """The registered benchmark when its protocol is its own (not the paper's), else None."""
    found = registry.find(benchmark)
    return found if found is not None and found.protocol.kind != registry.PAPER else None


def _arrays(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return rows["label"].to_numpy(np.float64), rows["score"].to_numpy(np.float64)


def _column(rows: pd.DataFrame, field: str) -> list:
    return rows[field].tolist() if field in rows.columns else [None] * len(rows)


def _pairs(metrics: Sequence[str], baseline: str | None) -> list[tuple[str, str]]:
    if baseline is not None:
        return [(m, baseline) for m in metrics if m != baseline] if baseline in metrics else []
    return list(itertools.combinations(metrics, 2))


def _metric_rows(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    return rows[rows["metric"] == metric]


# ------------------------------------------------------------------------ SummEval


def _summary_system(rows: pd.DataFrame, kinds: Sequence[str], settings) -> dict:
    y, s = _arrays(rows)
    documents, systems = _column(rows, "gem_id"), _column(rows, "system")
    entry = {
        "summary_level": protocol_stats.summary_level(documents, y, s, kinds),
        "system_level": protocol_stats.system_level(systems, y, s, kinds),
    }
    if settings.n_resamples > 0:
        for level, units in (("summary", documents), ("system", systems)):
            entry[f"{level}_level"]["ci"] = unit_bootstrap.level_bootstrap_ci(
                level, units, y, s, kinds, settings.n_resamples, settings.seed
            )
    return entry


def _summary_system_significance(rows, question, metrics, kinds, settings) -> list[dict]:
    out = []
    for metric_a, metric_b in _pairs(metrics, settings.baseline):
        paired = pairing.pair_rows(_metric_rows(rows, metric_a), _metric_rows(rows, metric_b))
        joined, info = paired.rows, paired.info()
        y = joined["label"].to_numpy(np.float64)
        for level, field in (("summary", "gem_id"), ("system", "system")):
            for kind in kinds:
                result = unit_bootstrap.level_paired_bootstrap(
                    level,
                    joined[field].tolist(),
                    y,
                    joined["score_a"].to_numpy(np.float64),
                    joined["score_b"].to_numpy(np.float64),
                    kind,
                    settings.n_resamples,
                    settings.seed,
                )
                out.append(
                    {"question": question, "metric_a": metric_a, "metric_b": metric_b}
                    | info
                    | result
                )
    return out


# ------------------------------------------------------------------------ FRANK


def _cells(rows: pd.DataFrame, by: Sequence[str]) -> list[tuple[dict, pd.DataFrame]]:
    """(cell, rows) for each combination of `by` values present, each with `all` too."""
    values = []
    for field in by:
        present = sorted({v for v in _column(rows, field) if v is not None and v == v})
        values.append([ALL, *present] if len(present) != 1 else present)
    out = []
    for combination in itertools.product(*values):
        mask = np.ones(len(rows), dtype=bool)
        for field, value in zip(by, combination, strict=True):
            if value != ALL:
                mask &= np.array([v == value for v in _column(rows, field)])
        if mask.any():
            out.append((dict(zip(by, combination, strict=True)), rows[mask]))
    return out


def _partial(rows: pd.DataFrame, settings) -> list[dict]:
    cells = []
    for cell, part in _cells(rows, ("split", "dataset")):
        y, s = _arrays(part)
        systems = _column(part, "system")
        plain = stats.graded_metrics(y, s)
        partial = protocol_stats.partial_correlation(y, s, systems)
        entry = {
            **cell,
            "n": plain["n"],
            "n_systems": partial["n_groups"],
            "pearson": plain["pearson"],
            "spearman": plain["spearman"],
            "partial_pearson": partial["pearson"],
            "partial_spearman": partial["spearman"],
            "reasons": {
                **{k: v for k, v in plain["reasons"].items() if k != "kendall"},
                **{f"partial_{k}": v for k, v in partial["reasons"].items()},
            },
        }
        if settings.n_resamples > 0:
            plain_ci = stats.bootstrap_ci(
                y, s, ("pearson", "spearman"), settings.n_resamples, settings.seed
            )
            partial_ci = unit_bootstrap.partial_bootstrap_ci(
                y, s, systems, settings.n_resamples, settings.seed
            )
            entry["ci"] = {
                **plain_ci,
                **{f"partial_{k}": v for k, v in partial_ci.items()},
            }
        cells.append(entry)
    return cells


def _williams(rows, question, metrics, settings) -> list[dict]:
    out = []
    for metric_a, metric_b in _pairs(metrics, settings.baseline):
        paired = pairing.pair_rows(_metric_rows(rows, metric_a), _metric_rows(rows, metric_b))
        for cell, part in _cells(paired.rows, ("split", "dataset")):
            y = part["label"].to_numpy(np.float64)
            a = part["score_a"].to_numpy(np.float64)
            b = part["score_b"].to_numpy(np.float64)
            systems = _column(part, "system")
            entry = {"question": question, "metric_a": metric_a, "metric_b": metric_b, **cell}
            entry["n_items"] = int(len(part))
            entry["paired_by"] = list(paired.paired_by)
            entry.update(paired.left_out())
            entry["plain"] = protocol_stats.williams_compare(y, a, b)
            entry["partial"] = protocol_stats.williams_compare(y, a, b, groups=systems)
            out.append(entry)
    return out


# ------------------------------------------------------------------------ balanced accuracy


def _ordered_datasets(values: Sequence[str], known: Sequence[str]) -> list[str]:
    present = [v for v in dict.fromkeys(values) if v is not None]
    return [d for d in known if d in present] + sorted(d for d in present if d not in known)


def _accuracy_entry(y, s, threshold, settings, seed_offset: int) -> tuple[dict, np.ndarray | None]:
    entry = protocol_stats.threshold_metrics(y, s, threshold)
    draws = None
    if settings.n_resamples > 0 and entry["balanced_accuracy"] is not None:
        draws = unit_bootstrap.balanced_accuracy_draws(
            y, s, threshold, settings.n_resamples, settings.seed + seed_offset
        )
        entry["ci"] = {
            "estimate": entry["balanced_accuracy"],
            "confidence": 0.95,
            "n_resamples": settings.n_resamples,
            **stats.interval(draws, settings.n_resamples),
        }
    return entry, draws


def _mean_entry(entries: Sequence[dict], draws: Sequence, weights, settings) -> dict:
    """The (weighted) mean of per-dataset balanced accuracies, with its interval from the
    per-dataset resamples (items resampled within each dataset)."""
    values = [e["balanced_accuracy"] for e in entries]
    out: dict = {"n_datasets": len(entries), "n": int(sum(e["n"] for e in entries))}
    if not values or any(v is None for v in values):
        out["balanced_accuracy"] = None
        out["reasons"] = {"balanced_accuracy": "a dataset's balanced accuracy is undefined"}
        return out
    w = np.asarray(weights, dtype=np.float64)
    out["balanced_accuracy"] = float(np.dot(w, values) / w.sum())
    out["reasons"] = {}
    if settings.n_resamples > 0 and all(d is not None for d in draws):
        stacked = np.stack(draws)  # (datasets, resamples)
        mean_draws = (w[:, None] * stacked).sum(0) / w.sum()
        out["ci"] = {
            "estimate": out["balanced_accuracy"],
            "confidence": 0.95,
            "n_resamples": settings.n_resamples,
            **stats.interval(mean_draws, settings.n_resamples),
        }
        out["_draws"] = mean_draws
    return out


def _fixed_threshold(rows: pd.DataFrame, settings, benchmark: registry.Benchmark) -> dict:
    test = rows[[v != "validation" for v in _column(rows, "split")]]
    dev = rows[[v == "validation" for v in _column(rows, "split")]]
    datasets = _ordered_datasets(_column(test, "dataset"), tuple(benchmark.datasets.values()))
    per_dataset, draws = [], []
    for i, dataset in enumerate(datasets):
        part = test[test["dataset"] == dataset]
        y, s = _arrays(part)
        entry, draw = _accuracy_entry(y, s, protocol_stats.FIXED_THRESHOLD, settings, i)
        per_dataset.append({"dataset": dataset, **entry})
        draws.append(draw)
    section = {
        "threshold": protocol_stats.FIXED_THRESHOLD,
        "datasets": per_dataset,
        "mean": _mean_entry(per_dataset, draws, [1.0] * len(per_dataset), settings),
    }
    tuned = []
    for dataset in datasets:
        dev_part, test_part = dev[dev["dataset"] == dataset], test[test["dataset"] == dataset]
        if dev_part.empty:
            continue
        result = protocol_stats.tuned_threshold_metrics(*_arrays(dev_part), *_arrays(test_part))
        tuned.append({"dataset": dataset, **result})
    if tuned:
        values = [t["balanced_accuracy"] for t in tuned]
        section["dev_tuned"] = {
            "datasets": tuned,
            "mean": None if None in values else float(np.mean(values)),
        }
    return section


def _tuned_cell(val: pd.DataFrame, test: pd.DataFrame, settings, offset: int):
    if val.empty:
        entry = {"n": int(len(test)), "n_val": 0, "threshold": None, "balanced_accuracy": None}
        entry["reasons"] = {"balanced_accuracy": "no val rows to tune the threshold on"}
        return entry, None
    result = protocol_stats.tuned_threshold_metrics(*_arrays(val), *_arrays(test))
    if result["threshold"] is None:
        return {"n_val": result.pop("n_dev"), **result}, None
    y, s = _arrays(test)
    entry, draws = _accuracy_entry(y, s, result["threshold"], settings, offset)
    entry["n_val"] = result["n_dev"]
    entry["val_balanced_accuracy"] = result["dev_balanced_accuracy"]
    return entry, draws


def _tuned_threshold(rows: pd.DataFrame, settings, benchmark: registry.Benchmark) -> dict:
    val = rows[[v == "validation" for v in _column(rows, "split")]]
    test = rows[[v == "test" for v in _column(rows, "split")]]
    cells, by_origin = [], {}
    offset = 0
    for origin in sorted({o for o in _column(rows, "origin") if o is not None}):
        entries, draws = [], []
        for dataset in sorted({d for d in _column(test, "dataset") if d is not None}):
            test_part = test[(test["origin"] == origin) & (test["dataset"] == dataset)]
            if test_part.empty:
                continue
            val_part = val[(val["origin"] == origin) & (val["dataset"] == dataset)]
            entry, draw = _tuned_cell(val_part, test_part, settings, offset)
            offset += 1
            cells.append({"origin": origin, "dataset": dataset, **entry})
            entries.append(entry)
            draws.append(draw)
        mean = _mean_entry(entries, draws, [e["n"] for e in entries], settings)
        mean.pop("_draws", None)
        by_origin[origin] = mean
    sota = []
    for group in benchmark.protocol.groups:
        in_group = rows["system"].isin(group.systems)
        test_part = test[(test["origin"] == group.origin) & in_group[test.index]]
        if test_part.empty:
            continue
        val_part = val[(val["origin"] == group.origin) & in_group[val.index]]
        entry, _ = _tuned_cell(val_part, test_part, settings, offset)
        offset += 1
        sota.append({"benchmark": group.name, "origin": group.origin, **entry})
    return {"datasets": cells, "origins": by_origin, "sota": sota}


def _fixed_draw_deltas(part: pd.DataFrame, settings) -> np.ndarray:
    """Resampled balanced accuracy of metric A minus B at score > 0.5 (same resamples)."""
    y = part["label"].to_numpy(np.float64)
    draws = [
        unit_bootstrap.balanced_accuracy_draws(
            y, part[score], protocol_stats.FIXED_THRESHOLD, settings.n_resamples, settings.seed
        )
        for score in ("score_a", "score_b")
    ]
    return draws[0] - draws[1]


def _fixed_significance(rows, question, metrics, sections, settings, benchmark) -> list[dict]:
    """Paired bootstrap of balanced accuracy at score > 0.5, A - B, per dataset and for
    the datasets' mean."""
    del sections  # one threshold for every metric
    out = []
    for metric_a, metric_b in _pairs(metrics, settings.baseline):
        paired = pairing.pair_rows(_metric_rows(rows, metric_a), _metric_rows(rows, metric_b))
        joined = paired.rows
        base = {"question": question, "metric_a": metric_a, "metric_b": metric_b}
        base.update(paired.info())
        test = joined[[v != "validation" for v in _column(joined, "split")]]
        deltas, per_dataset = [], []
        known = tuple(benchmark.datasets.values())
        for dataset in _ordered_datasets(_column(test, "dataset"), known):
            part = test[test["dataset"] == dataset]
            result = unit_bootstrap.paired_balanced_accuracy_bootstrap(
                part["label"],
                part["score_a"],
                part["score_b"],
                protocol_stats.FIXED_THRESHOLD,
                protocol_stats.FIXED_THRESHOLD,
                settings.n_resamples,
                settings.seed,
            )
            per_dataset.append({**base, "dataset": dataset, **result})
            deltas.append(_fixed_draw_deltas(part, settings))
        if deltas:
            mean_delta = np.mean(np.stack(deltas), axis=0)
            differences = [e["difference"] for e in per_dataset]
            entry = {**base, "dataset": "mean", "statistic": "balanced_accuracy"}
            entry["difference"] = None if None in differences else float(np.mean(differences))
            entry.update(stats.interval(mean_delta, settings.n_resamples))
            found = entry["low"] is not None
            entry["p_value"] = stats.paired_p_value(mean_delta) if found else None
            out += [*per_dataset, entry]
    return out


def _tuned_significance(rows, question, metrics, sections, settings, benchmark) -> list[dict]:
    """Paired bootstrap of balanced accuracy, A - B, each metric at its own tuned
    threshold, per system group (AggreFact's SOTA benchmarks)."""
    out = []
    for metric_a, metric_b in _pairs(metrics, settings.baseline):
        paired = pairing.pair_rows(_metric_rows(rows, metric_a), _metric_rows(rows, metric_b))
        joined = paired.rows
        base = {"question": question, "metric_a": metric_a, "metric_b": metric_b}
        base.update(paired.info())
        thresholds = {
            name: {s["benchmark"]: s["threshold"] for s in sections[name]["sota"]}
            for name in (metric_a, metric_b)
        }
        test = joined[[v == "test" for v in _column(joined, "split")]]
        for group in benchmark.protocol.groups:
            part = test[(test["origin"] == group.origin) & test["system"].isin(group.systems)]
            t_a, t_b = thresholds[metric_a].get(group.name), thresholds[metric_b].get(group.name)
            if part.empty or t_a is None or t_b is None:
                continue
            result = unit_bootstrap.paired_balanced_accuracy_bootstrap(
                part["label"],
                part["score_a"],
                part["score_b"],
                t_a,
                t_b,
                settings.n_resamples,
                settings.seed,
            )
            out.append({**base, "dataset": group.name, **result})
    return out


# ------------------------------------------------------------------------ sections


def _summary_system_entry(part, settings, benchmark) -> dict:
    return _summary_system(part, benchmark.protocol.statistics, settings)


def _partial_entry(part, settings, benchmark) -> dict:
    del benchmark
    return {"cells": _partial(part, settings)}


def _fixed_threshold_entry(part, settings, benchmark) -> dict:
    entry = _fixed_threshold(part, settings, benchmark)
    entry["mean"].pop("_draws", None)
    return entry


def _summary_system_comparisons(rows, question, metrics, sections, settings, benchmark):
    del sections
    kinds = benchmark.protocol.statistics
    return _summary_system_significance(rows, question, metrics, kinds, settings)


def _williams_comparisons(rows, question, metrics, sections, settings, benchmark):
    del sections, benchmark
    return _williams(rows, question, metrics, settings)


# Protocol kind -> its numbers for one metric's rows: `f(rows, settings, benchmark)`.
EVALUATORS: dict[str, Callable[..., dict]] = {
    registry.SUMMARY_SYSTEM: _summary_system_entry,
    registry.PARTIAL: _partial_entry,
    registry.FIXED_THRESHOLD: _fixed_threshold_entry,
    registry.TUNED_THRESHOLD: _tuned_threshold,
}
# Protocol kind -> its comparisons of two or more metrics on one question:
# `f(rows, question, metrics, entries by metric, settings, benchmark)`; `rows` holds the
# question's rows without a score too, for `pairing.pair_rows` to pair before leaving out.
COMPARISONS: dict[str, Callable[..., list[dict]]] = {
    registry.SUMMARY_SYSTEM: _summary_system_comparisons,
    registry.PARTIAL: _williams_comparisons,
    registry.FIXED_THRESHOLD: _fixed_significance,
    registry.TUNED_THRESHOLD: _tuned_significance,
}


def _section_head(benchmark: registry.Benchmark, rows_all: pd.DataFrame) -> dict:
    """The section's title and protocol, and a note when the rows lack its fields."""
    protocol = benchmark.protocol
    section = {
        "title": benchmark.title,
        "protocol": {
            "kind": protocol.kind,
            "statistics": list(protocol.statistics),
            "by": list(protocol.by),
            "threshold": protocol.threshold,
            "description": protocol.description,
        },
        "results": [],
        "significance": [],
    }
    # Rows of files without the protocol's fields (`split`, `origin`) read them as unknown
    # (all test); the tuned-threshold protocol cannot run without them, and says so.
    needed = benchmark.row_fields if protocol.kind == registry.TUNED_THRESHOLD else ()
    missing = [f for f in needed if f not in rows_all.columns or rows_all[f].isna().all()]
    if missing:
        section["missing_fields"] = missing
        section["note"] = (
            f"no score row carries {', '.join(missing)}, which {benchmark.title}'s protocol "
            "reads: score files written by baselines, evaluate or import-scores with "
            f"--benchmark {benchmark.name} carry them"
        )
    return section


def evaluate_protocol(frame: pd.DataFrame, benchmark: registry.Benchmark, settings) -> dict:
    """All numbers of one benchmark's section (what report.json holds under
    `scores.protocols[benchmark]`).

    Args:
      frame: score rows; those without a score are left out of every number, and paired
        with the others' rows before they are (`pairing.pair_rows`).
      benchmark: the registered benchmark whose protocol runs.
      settings: the report's settings (`n_resamples`, `seed`, `baseline`).
    """
    everything = frame[frame["benchmark"] == benchmark.name]
    section = _section_head(benchmark, everything[everything["score"].notna()])
    everything = everything.assign(
        **{f: _column(everything, f) for f in ("split", "origin") if f not in everything.columns}
    )
    rows_all = everything[everything["score"].notna()]
    evaluate, compare = EVALUATORS[benchmark.protocol.kind], COMPARISONS[benchmark.protocol.kind]
    for question in sorted(set(rows_all["question"]), key=tables.question_sort_key):
        rows = rows_all[rows_all["question"] == question]
        metrics = list(dict.fromkeys(rows["metric"]))
        by_metric = {}
        for metric in metrics:
            part = rows[rows["metric"] == metric]
            entry = {"question": question, "metric": metric, "n": int(len(part))}
            entry.update(evaluate(part, settings, benchmark))
            by_metric[metric] = entry
            section["results"].append(entry)
        if settings.n_resamples > 0 and len(metrics) >= 2:
            section["significance"] += compare(
                everything[everything["question"] == question],
                question,
                metrics,
                by_metric,
                settings,
                benchmark,
            )
    return section


def coverage(frame: pd.DataFrame, name: str, path: str | None) -> dict:
    """The benchmark's items as its reader keeps them from `path`, and how many each
    metric's rows score per dimension (a metric scored on part of a benchmark is not
    comparable with published numbers)."""
    results = registry.get(name).read_all(path)
    kept: dict[str, int] = {}
    for result in results:
        for example in result.examples:
            kept[str(example["question"])] = kept.get(str(example["question"]), 0) + 1
    rows = frame[frame["benchmark"] == name]
    scored = {
        metric: {str(q): int(n) for q, n in part.groupby("question").size().items()}
        for metric, part in rows.groupby("metric", sort=False)
    }
    return {
        "items": kept,
        "dropped": sum(len(r.dropped) for r in results),
        "drop_counts": [r.drop_counts() for r in results],
        "scored": scored,
    }

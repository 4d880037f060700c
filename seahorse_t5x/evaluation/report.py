"""The `report` command: score files or a prepared dataset -> tables, plots, JSON.

From score files (`data/scorefiles.py`), per benchmark, metric and question:
Pearson ρ and ROC-AUC (Spearman and Kendall tau-b for graded labels) with 95% bootstrap
intervals, breakdowns by slice fields, and a paired bootstrap between metrics on the same
items. From a prepared dataset folder (`prepare` output): the paper's Tables 1, 3 and 8,
pairwise agreement (Table 4) when duplicate ratings are given, and the Figure-3 label correlations.

This module chooses the tables and plots and puts the parts together: the rows are grouped
by `normalizing`, their numbers come from `score_statistics`, `teacher_agreement`,
`protocols` and `explanation_report`, and the files are written by `writers`.
Everything lands in one folder: `report.json` (all numbers, with the reason for each
undefined value), `tables.md`, `tables.tex` and `plots/*.png`.
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from seahorse_t5x import constants, errors, fileio
from seahorse_t5x.data import duplicate_ratings, scorefiles, splits
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import (
    dataset_tables,
    explanation_report,
    explanation_tables,
    normalizing,
    pairing,
    plots,
    protocol_tables,
    protocols,
    score_statistics,
    stats,
    tables,
    teacher_agreement,
    writers,
)
from seahorse_t5x.evaluation.report_settings import ReportSettings

log = logging.getLogger(__name__)

# The name of the teacher-agreement tables' files (`teacher_agreement.md`, `.tex`).
TEACHER_AGREEMENT = "teacher_agreement"


# ------------------------------------------------------------------------ statistics


def evaluate_scores(frame: pd.DataFrame, settings: ReportSettings) -> dict:
    """All numbers of the score-file report (what report.json holds under `scores`).

    Args:
      frame: rows from `scorefiles.read_score_files` (missing scores are dropped here and
        counted; the paired tests pair the rows first: `pairing.pair_rows`).

    Raises:
      errors.UserError: an `--only_benchmark` without rows, a `--by` field no score row has, or a
        baseline or teacher that is not a metric.
    """
    frame = _selected_benchmarks(frame, settings.benchmarks)
    n_rows, n_scored = int(len(frame)), int(frame["score"].notna().sum())
    # Each row's place as read, before any is dropped: rows without ids are paired by it.
    frame, merged = normalizing.normalized_scores(pairing.number_rows(frame))
    metrics = list(dict.fromkeys(frame["metric"]))
    if settings.baseline is not None and settings.baseline not in metrics:
        raise errors.UserError(
            f"--baseline {settings.baseline!r} is not a metric in the score files: {metrics}"
        )
    if settings.teacher is not None:
        teacher_agreement.check_teacher(frame, settings.teacher)
    all_kept, _ = scorefiles.drop_missing_scores(frame)
    # Counted once: a language subset's rows are copies of its benchmark's rows.
    own_rows = frame[~frame["benchmark"].isin(normalizing.subset_names())]
    _, dropped = scorefiles.drop_missing_scores(own_rows)
    # Benchmarks with their own protocol (SummEval, FRANK, ...) get their own sections.
    sections = _protocol_sections(frame, all_kept, settings)
    own = list(sections)
    kept = all_kept[~all_kept["benchmark"].isin(own)]
    results = score_statistics.question_results(kept, settings)
    breakdowns, skipped_fields = score_statistics.breakdowns(kept, settings.by, all_kept.columns)
    # Paired on every row, scored or not, so that a missing score moves no other pair.
    to_pair = frame[~frame["benchmark"].isin(own)]
    comparisons = (
        score_statistics.compare_metrics(to_pair, settings) if settings.n_resamples > 0 else []
    )
    numbers = {
        "n_rows": n_rows,
        "n_scored": n_scored,
        "missing_scores": dropped,
        "first_missing_score": scorefiles.first_missing_score(own_rows),
        "benchmarks": normalizing.ordered_benchmarks(all_kept),
        "metrics": metrics,
        "merged_question_models": merged,
        "results": results,
        "breakdowns": breakdowns,
        "breakdowns_skipped": skipped_fields,
        "significance": comparisons,
        "protocols": sections,
        "teacher_agreement": _teacher_agreement(to_pair, own, settings),
    }
    explanations = explanation_report.evaluate_explanations(
        own_rows, settings.n_resamples, settings.seed, settings.disagreements
    )
    if explanations:  # only with rows of an explainable metric
        numbers["explanations"] = explanations
    return numbers


def _selected_benchmarks(frame: pd.DataFrame, benchmarks: Sequence[str]) -> pd.DataFrame:
    """Only the rows of `benchmarks` (all rows when none is named)."""
    if not benchmarks:
        return frame
    absent = [b for b in benchmarks if b not in set(frame["benchmark"])]
    if absent:
        raise errors.UserError(
            f"--only_benchmark {absent[0]}: no score row of it in the score files (benchmarks "
            f"there: {', '.join(sorted(set(frame['benchmark'])))})"
        )
    return frame[frame["benchmark"].isin(benchmarks)]


def _protocol_sections(
    frame: pd.DataFrame, all_kept: pd.DataFrame, settings: ReportSettings
) -> dict[str, dict]:
    """The numbers of each benchmark with its own protocol, in the report's order, with the
    coverage of its reader's items where `settings.benchmark_paths` names its files."""
    own = [
        b for b in normalizing.ordered_benchmarks(all_kept) if protocols.protocol_of(b) is not None
    ]
    sections = {
        name: protocols.evaluate_protocol(frame, protocols.protocol_of(name), settings)
        for name in own
    }
    for name, path in settings.benchmark_paths.items():
        if name in sections:
            sections[name]["coverage"] = protocols.coverage(all_kept, name, path)
    return sections


def _teacher_agreement(
    to_pair: pd.DataFrame, own: Sequence[str], settings: ReportSettings
) -> dict | None:
    """The students against `settings.teacher` (None without one); the benchmarks with their
    own protocol are listed as left out."""
    if settings.teacher is None:
        return None
    agreement = teacher_agreement.teacher_agreement(to_pair, settings.teacher, settings)
    agreement["left_out"] = {
        name: "its protocol's own section; rows paired by its protocol" for name in own
    }
    return agreement


# ------------------------------------------------------------------------ dataset


def read_prepared_dir(directory: str | pathlib.Path) -> pd.DataFrame:
    """The split files of a `prepare` output folder, with a `split` column.

    Raises:
      errors.UserError: the folder or all of its split files are missing, or its split files
        hold no rows.
      errors.DataError: a row lacks a field, or holds a label other than 1, 0 or null, or
        an unknown language.
    """
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise errors.UserError(f"dataset folder not found: {directory}")
    frames = []
    present: list[pathlib.Path] = []
    for split in constants.SPLITS:
        path = pathlib.Path(splits.split_path(directory, split))
        if path.is_file():
            present.append(path)
            rows = splits.read_rows(path)
            if not rows:  # `prepare` writes a split that kept no row: said, then left out
                log.warning("%s; the report leaves that split out", splits.empty_split_error(path))
            frame = pd.DataFrame.from_records(rows, columns=None if rows else list(splits.FIELDS))
            frames.append(frame.assign(split=split))
    if not frames:
        raise errors.UserError(
            f"{directory} holds no split files ({', '.join(s + '.jsonl' for s in constants.SPLITS)}):"
            " is it a `seahorse-t5x prepare` output folder?"
        )
    items = pd.concat(frames, ignore_index=True)
    if items.empty:
        # Tables of no items say nothing, as for a score file without rows.
        found = [str(p) for p in present]
        where = found[0] if len(found) == 1 else f"{directory} ({', '.join(found)})"
        raise errors.UserError(
            f"{where}: {'holds' if len(found) == 1 else 'hold'} no rows (expected the rows of "
            "a `seahorse-t5x prepare` run that kept some)"
        )
    return items


# ------------------------------------------------------------------------ output


def _benchmark_tables(scores: Mapping, benchmark: str) -> list[tables.Table]:
    """One benchmark's tables: its protocol's section, SEAHORSE's Table 5, its own paper
    table (a language subset's too), or the generic per-question table."""
    results = scores["results"]
    # An explainable metric's tables (none without its rows) follow the benchmark's own.
    explained = explanation_tables.section_tables(scores, benchmark)
    if benchmark in scores.get("protocols", {}):
        own = protocol_tables.section_tables(benchmark, scores["protocols"][benchmark])
        return own + explained
    if benchmark == constants.SEAHORSE_BENCHMARK:
        out = [tables.table5(results, benchmark)]
        if any("ci" in r for r in results):  # none with --bootstrap 0
            out.append(tables.table5_intervals(results, benchmark))
        return out + explained
    declared, parent = registry.find(benchmark), registry.subset_parent(benchmark)
    if parent is not None and parent.table is not None:
        return [tables.paper_table(results, parent, benchmark, parent.subset.title), *explained]
    if declared is not None and declared.table is not None:
        with_subset = declared.subset_name in scores["benchmarks"]
        subset = declared.subset.whole_title if with_subset else ""
        return [tables.paper_table(results, declared, benchmark, subset), *explained]
    if explained:  # the generic table's numbers, with n and the rows without a score
        return explained
    out = [tables.benchmark_table(results, benchmark)]
    if any("ci" in r for r in results if r["benchmark"] == benchmark):
        out.append(tables.benchmark_intervals(results, benchmark))
    return out


def score_tables(scores: Mapping) -> list[tables.Table]:
    """The paper-layout tables for each benchmark present, then breakdowns and significance."""
    out: list[tables.Table] = []
    for benchmark in scores["benchmarks"]:
        out += _benchmark_tables(scores, benchmark)
    for field, records in scores["breakdowns"].items():
        for benchmark in scores["benchmarks"]:
            if any(r["benchmark"] == benchmark for r in records):
                out.append(tables.breakdown_table(records, benchmark, field))
    for benchmark in scores["benchmarks"]:
        for statistic in ("pearson", "roc_auc", "spearman", "kendall"):
            if any(c["benchmark"] == benchmark and statistic in c for c in scores["significance"]):
                out.append(tables.significance_table(scores["significance"], benchmark, statistic))
    return out


def teacher_tables(agreement: Mapping) -> list[tables.Table]:
    """One teacher-agreement table per benchmark, in the order of `agreement["results"]`."""
    results = agreement["results"]
    benchmarks = list(dict.fromkeys(r["benchmark"] for r in results))
    return [
        tables.teacher_agreement_table(results, benchmark, agreement["teacher"])
        for benchmark in benchmarks
    ]


def _matrix_json(matrix: pd.DataFrame) -> dict:
    # NaN (a question whose labels are constant) becomes null: report.json is strict JSON.
    return {
        column: {row: (None if pd.isna(v) else round(float(v), 6)) for row, v in values.items()}
        for column, values in matrix.to_dict().items()
    }


@dataclasses.dataclass
class _Section:
    """One input's part of the report: its numbers, tables, plots and summary phrase;
    tables of their own file (`{name: tables}`, written as NAME.md, NAME.tex, ...) and
    further summary lines."""

    numbers: dict
    paper_tables: list[tables.Table]
    plots: list[str]
    summary: str
    own_files: dict[str, list[tables.Table]] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    # Markdown documents of their own (`{name: text}`, written as NAME.md).
    documents: dict[str, str] = dataclasses.field(default_factory=dict)


def write_report(
    output_dir: str | pathlib.Path,
    score_paths: Sequence[str | pathlib.Path] = (),
    dataset_dir: str | pathlib.Path | None = None,
    settings: ReportSettings | None = None,
    duplicates_path: str | pathlib.Path | None = None,
) -> dict:
    """Computes and writes the report.

    Returns:
      report.json's content, with `summary` (one line) and `outputs` (paths written).

    Raises:
      errors.UserError: neither score files nor a dataset folder, or bad input (see the
        readers).
    """
    settings = settings or ReportSettings()
    if not score_paths and dataset_dir is None:
        raise errors.UserError(
            "nothing to report: give --scores FILE [FILE ...] and/or --data_dir DIR"
        )
    fileio.check_output_path(output_dir, "directory", flag="--output_dir")
    output_dir = pathlib.Path(output_dir)
    plot_dir = output_dir / "plots"
    report: dict = {"settings": dataclasses.asdict(settings), "inputs": {}}
    sections: list[_Section] = []
    if score_paths:
        section = _score_section(score_paths, settings, plot_dir)
        report["inputs"]["scores"] = [str(p) for p in score_paths]
        report["scores"] = section.numbers
        sections.append(section)
    if dataset_dir is not None:
        section = _dataset_section(dataset_dir, duplicates_path, settings, plot_dir)
        report["inputs"]["dataset"] = str(dataset_dir)
        report["dataset"] = section.numbers
        sections.append(section)
    _write_outputs(report, sections, output_dir)
    return report


def _score_section(
    score_paths: Sequence[str | pathlib.Path], settings: ReportSettings, plot_dir: pathlib.Path
) -> _Section:
    """Statistics, tables and plots of the score files."""
    frame = scorefiles.read_score_files(score_paths, settings.drop_duplicates)
    duplicates_dropped = frame.attrs.get("duplicates_dropped", {})
    scores = evaluate_scores(frame, settings)
    scores["duplicates_dropped"] = duplicates_dropped
    scores["score_files"] = frame.attrs.get("score_files", [])
    score_table_list = score_tables(scores)
    kept, _ = scorefiles.drop_missing_scores(normalizing.normalized_scores(frame)[0])
    items = normalizing.items_with_all_labels(kept)
    matrix, n_items = dataset_tables.label_correlations(items) if items is not None else (None, 0)
    scores["label_correlations"] = {
        "n_items": n_items,
        "matrix": _matrix_json(matrix) if n_items > 1 else None,
    }
    written_plots: list[str] = []
    if settings.plots:
        written_plots += _score_plots(kept, scores, plot_dir)
        if n_items > 1:
            written_plots.append(
                plots.label_correlation_heatmap(
                    matrix, n_items, plot_dir / "label_correlations_scores.png"
                )
            )
    section = _Section(scores, score_table_list, written_plots, _score_summary(scores))
    agreement = scores.get("teacher_agreement")
    if agreement is not None:
        section.own_files[TEACHER_AGREEMENT] = teacher_tables(agreement)
        section.notes.append(agreement["summary"])
    explanations = scores.get("explanations")
    if explanations:
        name = explanation_report.DISAGREEMENTS
        section.documents[name] = explanation_tables.disagreements_markdown(explanations)
        section.notes.append(explanation_report.summary(explanations))
    return section


def _score_summary(scores: Mapping) -> str:
    duplicates_dropped = scores["duplicates_dropped"]
    missing = sum(scores["missing_scores"].values())
    files = len(scores.get("score_files", []))
    return (
        f"{len(scores['metrics'])} metric(s) on {', '.join(scores['benchmarks'])}: "
        f"{scores['n_scored']} scored rows from {files} score file(s)"
        + (
            f", {missing} without a score (null, NaN or infinite) dropped, the first at "
            f"{scores['first_missing_score']}"
            if missing
            else ""
        )
        + (
            f", {sum(duplicates_dropped.values())} duplicated rows dropped"
            if duplicates_dropped
            else ""
        )
    )


def _dataset_section(
    dataset_dir: str | pathlib.Path,
    duplicates_path: str | pathlib.Path | None,
    settings: ReportSettings,
    plot_dir: pathlib.Path,
) -> _Section:
    """Tables 1, 3, 8 (and 4), label correlations and yes rates of a prepared dataset."""
    items = read_prepared_dir(dataset_dir)
    duplicates = (
        duplicate_ratings.read_duplicate_ratings(duplicates_path) if duplicates_path else None
    )
    matrix, n_items = dataset_tables.label_correlations(items)
    numbers = {
        "n_items": int(len(items)),
        "n_per_split": {k: int(v) for k, v in items["split"].value_counts().items()},
        "label_correlations": {"n_items": n_items, "matrix": _matrix_json(matrix)},
    }
    written_plots = _dataset_plots(items, matrix, n_items, plot_dir) if settings.plots else []
    return _Section(
        numbers,
        dataset_tables.paper_tables(items, duplicates),
        written_plots,
        f"dataset of {len(items)} items",
    )


def _dataset_plots(
    items: pd.DataFrame, matrix: pd.DataFrame, n_items: int, plot_dir: pathlib.Path
) -> list[str]:
    written = []
    if n_items > 1:
        written.append(
            plots.label_correlation_heatmap(matrix, n_items, plot_dir / "label_correlations.png")
        )
    written.append(
        plots.yes_rate_bars(
            dataset_tables.yes_rates(items, "system"),
            plot_dir / "yes_rate_by_system.png",
            "Share of Yes per system",
        )
    )
    written.append(
        plots.yes_rate_bars(
            dataset_tables.yes_rates(items, "language"),
            plot_dir / "yes_rate_by_language.png",
            "Share of Yes per language",
        )
    )
    return written


def _write_outputs(report: dict, sections: Sequence[_Section], output_dir: pathlib.Path) -> None:
    """Writes the tables in each of `writers.TABLE_FORMATS` (tables.md, tables.tex, and each
    section's own table files), the sections' documents and report.json, completing `report`
    with what it holds."""
    all_tables = [table for section in sections for table in section.paper_tables]
    own_files = {name: t for section in sections for name, t in section.own_files.items()}
    report["tables"] = [t.to_json() for t in all_tables]
    report["tables"] += [t.to_json() for table_list in own_files.values() for t in table_list]
    title = "seahorse-t5x report"
    written = writers.write(
        output_dir, "tables", writers.Document(title, all_tables), writers.TABLE_FORMATS
    )
    report["outputs"] = {
        "json": str(writers.output_path(output_dir, "report", "json")),
        **written,
        "plots": [path for section in sections for path in section.plots],
    }
    for name, table_list in own_files.items():
        document = writers.Document(f"{title}: {name.replace('_', ' ')}", table_list)
        report["outputs"][name] = writers.write(output_dir, name, document, writers.TABLE_FORMATS)
    for section in sections:
        for name, text in section.documents.items():
            fileio.atomic_write_text(output_dir / f"{name}.md", text)
            report["outputs"][name] = {"markdown": str(output_dir / f"{name}.md")}
    summary = "; ".join(section.summary for section in sections)
    notes = [note for section in sections for note in section.notes]
    report["summary"] = "\n".join([f"report: {summary} -> {output_dir}", *notes])
    writers.write(output_dir, "report", writers.Document(title, numbers=report), ("json",))


def _score_plots(kept: pd.DataFrame, scores: Mapping, plot_dir: pathlib.Path) -> list[str]:
    written = []
    for benchmark in scores["benchmarks"]:
        rows = kept[kept["benchmark"] == benchmark]
        if benchmark in scores.get("protocols", {}):
            written += protocol_tables.section_plots(
                kept, benchmark, scores["protocols"][benchmark], plot_dir
            )
            continue
        if "label_binary" in rows.columns and rows["label_binary"].notna().all():
            # Graded labels with a majority vote: the ROC and calibration plots use the vote.
            rows = rows.assign(label=rows["label_binary"].astype(np.float64))
        if stats.labels_are_binary(rows["label"].to_numpy(dtype=np.float64)):
            written.append(
                plots.roc_curves(rows, plot_dir / f"roc_{benchmark}.png", title=benchmark)
            )
            written.append(
                plots.reliability_diagram(
                    rows, plot_dir / f"reliability_{benchmark}.png", title=benchmark
                )
            )
        records = [
            r for r in scores["breakdowns"].get("language", []) if r["benchmark"] == benchmark
        ]
        if records:
            has_roc = any(r.get("roc_auc") is not None for r in records)
            statistic = "roc_auc" if has_roc else "pearson"
            written.append(
                plots.slice_bars(
                    records, plot_dir / f"{benchmark}_by_language.png", statistic, "language"
                )
            )
    return written

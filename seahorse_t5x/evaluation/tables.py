"""The paper's tables as data, rendered as Markdown and LaTeX.

A `Table` is a title, a header row, body rows of strings and a caption; builders turn the
report's result records (see `report.py`) into the paper's layouts (a prepared dataset's
tables, Tables 1, 3, 4 and 8, are `dataset_tables`'):

- Table 5: SEAHORSE test set, one row per metric, each cell `ρ/roc` for Q1..Q6;
- a registered benchmark's own paper table (`registry.PaperTable`, e.g. Tables 6 and 7):
  one column per display name, cells its protocol's statistics (`ρ/roc`, or one ROC-AUC);
- any other benchmark (a user's rating set, a benchmark without a paper table): one column
  per question, `ρ/roc` (or `ρ/Spearman/Kendall τ` for graded labels), with its bootstrap
  intervals.
- `evaluate`'s table (`metrics.md`): one row per score task beside the majority baseline.

Numbers are written as the paper writes them: two decimals without the leading zero
(`.52`, `-.03`); an undefined value is `-` (`-[n]` in the other benchmarks' tables, whose
captions give reason n).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

from seahorse_t5x import constants
from seahorse_t5x.data.benchmarks import registry
from seahorse_t5x.evaluation import pairing

QUESTION_HEADERS: tuple[str, ...] = tuple(f"Q{q}" for q in constants.QUESTIONS)
RHO = "ρ"
CELL_RHO_ROC = f"{RHO}/roc"
MISSING = "-"


@dataclasses.dataclass
class Table:
    """A rendered-ready table: every cell is already a string."""

    name: str
    title: str
    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    # Leading columns that hold names (left-aligned in LaTeX), not numbers.
    label_columns: int = 1

    def to_markdown(self) -> str:
        lines = [f"### {self.title}", ""]
        lines.append("| " + " | ".join(map(_markdown, self.header)) + " |")
        lines.append("|" + "|".join("---" for _ in self.header) + "|")
        for row in self.rows:
            lines.append("| " + " | ".join(map(_markdown, row)) + " |")
        if self.caption:
            lines += ["", self.caption]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        spec = "l" * self.label_columns + "c" * (len(self.header) - self.label_columns)
        lines = [
            "\\begin{table}[t]",
            "\\centering",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(_latex(h) for h in self.header) + " \\\\",
            "\\midrule",
        ]
        lines += [" & ".join(_latex(c) for c in row) + " \\\\" for row in self.rows]
        lines += ["\\bottomrule", "\\end{tabular}"]
        caption = self.title + (f". {self.caption}" if self.caption else "")
        lines += [f"\\caption{{{_latex(caption)}}}", f"\\label{{tab:{self.name}}}", "\\end{table}"]
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def _markdown(cell: str) -> str:
    # A `|` inside a cell (e.g. in a metric name) would end the cell.
    return cell.replace("|", "\\|")


_LATEX_ESCAPES: dict[str, str] = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "_": "\\_",
    "#": "\\#",
    "$": "\\$",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    "<": "$<$",
    ">": "$>$",
    RHO: "$\\rho$",
    "Δ": "$\\Delta$",
    "τ": "$\\tau$",
}


def _latex(text: str) -> str:
    # One pass, character by character: escapes are never escaped again.
    return "".join(_LATEX_ESCAPES.get(char, char) for char in text)


def format_value(value: float | None, digits: int = 2) -> str:
    """`.52`, `-.03`, `1.00`; `-` for None/NaN. Every table and summary line prints its
    statistics this way, as the paper does: two digits (the benchmark protocols' tables
    three, as their papers report them); JSON outputs keep full precision."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    text = f"{value:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]  # -0.001 prints as .00, not -.00
    if text.startswith("0."):
        return text[1:]
    if text.startswith("-0."):
        return "-" + text[2:]
    return text


def format_pair(first: float | None, second: float | None) -> str:
    """A `ρ/roc` cell; `-` when both are undefined."""
    if first is None and second is None:
        return MISSING
    return f"{format_value(first)}/{format_value(second)}"


def format_interval(entry: Mapping | None, digits: int = 2) -> str:
    """`[.50, .54]` from a bootstrap entry; `-` when undefined."""
    if not entry or entry.get("low") is None:
        return MISSING
    return f"[{format_value(entry['low'], digits)}, {format_value(entry['high'], digits)}]"


# --------------------------------------------------------------- meta-evaluation tables


def _by_metric(results: Iterable[Mapping], benchmark: str) -> dict[str, dict[str, Mapping]]:
    """`{metric: {question: result}}` for one benchmark, metrics in first-seen order."""
    out: dict[str, dict[str, Mapping]] = {}
    for entry in results:
        if entry["benchmark"] == benchmark:
            out.setdefault(entry["metric"], {})[entry["question"]] = entry
    return out


def table5(results: Sequence[Mapping], benchmark: str = constants.SEAHORSE_BENCHMARK) -> Table:
    """Table 5: rows = metrics, columns Q1..Q6, cells Pearson ρ / ROC-AUC."""
    rows = []
    for metric, by_question in _by_metric(results, benchmark).items():
        cells = []
        for q in constants.QUESTIONS:
            entry = by_question.get(str(q))
            cells.append(format_pair(entry["pearson"], entry["roc_auc"]) if entry else MISSING)
        rows.append([metric, *cells])
    caption = f"Each cell: {CELL_RHO_ROC}. `-`: undefined (see report.json for why)."
    constant = constant_score_metrics(results, benchmark)
    if constant:
        caption += (
            f" Constant scores ({', '.join(constant)}): {RHO} and ROC-AUC are undefined"
            " (every pair of items is tied; the paper lists such a majority class as roc .5)."
        )
    return Table(
        name="table5",
        title=f"Table 5: {benchmark}, Pearson {RHO} / ROC-AUC",
        header=["Metric", *QUESTION_HEADERS],
        rows=rows,
        caption=caption,
    )


def constant_score_metrics(results: Sequence[Mapping], benchmark: str) -> list[str]:
    """Metrics whose scores are constant on every question of `benchmark` (e.g. majority)."""
    out = []
    for metric, by_question in _by_metric(results, benchmark).items():
        reasons = [e["reasons"].get("roc_auc", "") for e in by_question.values()]
        if reasons and all(r.startswith("scores are constant") for r in reasons):
            out.append(metric)
    return out


def table5_intervals(
    results: Sequence[Mapping], benchmark: str = constants.SEAHORSE_BENCHMARK
) -> Table:
    """Table 5's 95% bootstrap intervals: cells `[low, high]/[low, high]` for ρ and roc."""
    rows = []
    for metric, by_question in _by_metric(results, benchmark).items():
        cells = []
        for q in constants.QUESTIONS:
            ci = (by_question.get(str(q)) or {}).get("ci") or {}
            if not ci:
                cells.append(MISSING)
            else:
                pearson, roc = (
                    format_interval(ci.get("pearson")),
                    format_interval(ci.get("roc_auc")),
                )
                cells.append(MISSING if pearson == roc == MISSING else f"{pearson}/{roc}")
        rows.append([metric, *cells])
    return Table(
        name="table5_ci",
        title=f"Table 5 intervals: {benchmark}, 95% bootstrap CI of {RHO} / ROC-AUC",
        header=["Metric", *QUESTION_HEADERS],
        rows=rows,
        caption="Percentile bootstrap over items.",
    )


_STATISTIC_TITLES: dict[str, str] = {
    "pearson": f"Pearson {RHO}",
    "roc_auc": "ROC-AUC",
    "spearman": "Spearman",
    "kendall": "Kendall τ",
}


def _paper_cell(entry: Mapping | None, statistics: Sequence[str]) -> str:
    if entry is None:
        return MISSING
    if len(statistics) == 2:
        return format_pair(entry[statistics[0]], entry[statistics[1]])
    return "/".join(format_value(entry[k]) for k in statistics)


def paper_table(
    results: Sequence[Mapping], benchmark: registry.Benchmark, name: str, subset: str = ""
) -> Table:
    """A registered benchmark's own table (`benchmark.table`, e.g. Table 6 for mFACE):
    rows = metrics, columns = its display names, cells its protocol's statistics.

    Args:
      name: the benchmark name of the rows (the benchmark's, or its language subset's).
      subset: which languages, for the title (`5 SEAHORSE languages`, `all languages`).
    """
    layout = benchmark.table
    statistics = benchmark.protocol.statistics
    rows = []
    for metric, by_question in _by_metric(results, name).items():
        by_column = {benchmark.display_name(q): e for q, e in by_question.items()}
        cells = [_paper_cell(by_column.get(c), statistics) for c in benchmark.columns]
        rows.append([metric, *cells])
    table_name = f"table{layout.number}"
    return Table(
        name=table_name if name == benchmark.name else f"{table_name}_{name}",
        title=f"{layout.title}{f' ({subset})' if subset else ''}, "
        + " / ".join(_STATISTIC_TITLES.get(k, k) for k in statistics),
        header=["Metric", *benchmark.columns],
        rows=rows,
        caption=layout.caption,
    )


GRADED_CELL = f"{RHO}/Spearman/Kendall τ"
_GRADED_KEYS: tuple[str, ...] = ("pearson", "spearman", "kendall")


def has_graded_labels(entries: Iterable[Mapping]) -> bool:
    """True when some entry's ROC-AUC is undefined because its labels are graded."""
    return any("graded" in (e.get("reasons") or {}).get("roc_auc", "") for e in entries)


class _Notes:
    """Numbered reasons for the undefined cells of one table: `-[1]`, and in the caption
    `Undefined (-[n]): [1] labels hold one class only (all 1).`"""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def mark(self, reason: str | None) -> str:
        reason = reason or "undefined"
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"{MISSING}[{self.reasons.index(reason) + 1}]"

    def caption(self) -> str:
        if not self.reasons:
            return ""
        notes = "; ".join(f"[{i}] {reason}" for i, reason in enumerate(self.reasons, start=1))
        return f" Undefined ({MISSING}[n]): {notes}."


_NOT_SCORED = "the metric has no score rows for this question"
_CELL_KEYS: dict[bool, tuple[str, ...]] = {False: ("pearson", "roc_auc"), True: _GRADED_KEYS}
_INTERVAL_KEYS: dict[bool, tuple[str, ...]] = {False: ("pearson", "roc_auc"), True: _GRADED_KEYS}


def _joined(parts: list[str]) -> str:
    # One mark for a cell whose values are all undefined for the same reason.
    if len(set(parts)) == 1 and parts[0].startswith(MISSING):
        return parts[0]
    return "/".join(parts)


def _noted_cell(
    entry: Mapping | None, graded: bool, notes: _Notes, not_scored: str = _NOT_SCORED
) -> str:
    """A `ρ/roc` (or graded) cell whose undefined values carry the number of their reason."""
    if entry is None:
        return notes.mark(not_scored)
    reasons = entry.get("reasons") or {}
    parts = []
    for key in _CELL_KEYS[graded]:
        value = entry.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            parts.append(notes.mark(reasons.get(key)))
        else:
            parts.append(format_value(value))
    return _joined(parts)


def _noted_interval_cell(entry: Mapping | None, graded: bool, notes: _Notes) -> str:
    """`[low, high]/[low, high]` with numbered reasons for the undefined intervals."""
    if entry is None:
        return notes.mark(_NOT_SCORED)
    ci = entry.get("ci") or {}
    parts = []
    for key in _INTERVAL_KEYS[graded]:
        interval = ci.get(key)
        if interval is None:
            # One note for every statistic left out (rank correlations on 0/1 labels).
            parts.append(notes.mark("no interval computed for this statistic on these labels"))
        elif interval.get("low") is None:
            parts.append(notes.mark(interval.get("reason")))
        else:
            parts.append(format_interval(interval))
    return _joined(parts)


def _benchmark_columns(
    results: Sequence[Mapping], benchmark: str
) -> tuple[dict[str, dict[str, Mapping]], list[str], bool]:
    by_metric = _by_metric(results, benchmark)
    questions = sorted({q for qs in by_metric.values() for q in qs}, key=question_sort_key)
    graded = has_graded_labels(e for qs in by_metric.values() for e in qs.values())
    return by_metric, questions, graded


def benchmark_table(results: Sequence[Mapping], benchmark: str) -> Table:
    """Any other benchmark (METAL, a user's rating set): rows = metrics, one column per
    question or dimension; cells ρ/roc, or ρ/Spearman/Kendall τ if graded.

    An undefined value is `-[n]`, and the caption gives reason n (as report.json does).
    """
    by_metric, questions, graded = _benchmark_columns(results, benchmark)
    notes = _Notes()
    rows = [
        [metric, *[_noted_cell(by_question.get(q), graded, notes) for q in questions]]
        for metric, by_question in by_metric.items()
    ]
    cell = GRADED_CELL if graded else CELL_RHO_ROC
    return Table(
        name=f"{benchmark}_table",
        title=f"{benchmark}: {cell}",
        header=["Metric", *[question_header(q) for q in questions]],
        rows=rows,
        caption=f"Each cell: {cell}." + notes.caption(),
    )


def benchmark_intervals(results: Sequence[Mapping], benchmark: str) -> Table:
    """`benchmark_table`'s 95% bootstrap intervals: `[low, high]/[low, high]` for ρ and roc
    (ρ, Spearman and Kendall τ if graded); undefined intervals as `-[n]` with the reason in
    the caption.
    """
    by_metric, questions, graded = _benchmark_columns(results, benchmark)
    notes = _Notes()
    rows = [
        [metric, *[_noted_interval_cell(by_question.get(q), graded, notes) for q in questions]]
        for metric, by_question in by_metric.items()
    ]
    statistics = f"{RHO} / Spearman / Kendall τ" if graded else f"{RHO} / ROC-AUC"
    return Table(
        name=f"{benchmark}_table_ci",
        title=f"{benchmark} intervals: 95% bootstrap CI of {statistics}",
        header=["Metric", *[question_header(q) for q in questions]],
        rows=rows,
        caption="Percentile bootstrap over items." + notes.caption(),
    )


def breakdown_table(records: Sequence[Mapping], benchmark: str, field: str) -> Table:
    """Rows = (metric, slice value), columns = the benchmark's questions; cells as in
    `benchmark_table` (ρ/roc, or ρ/Spearman/Kendall τ for graded labels), an undefined value
    as `-[n]` with reason n in the caption."""
    records = [r for r in records if r["benchmark"] == benchmark]
    questions = sorted({r["question"] for r in records}, key=question_sort_key)
    graded = has_graded_labels(records)
    grid: dict[tuple[str, str], dict[str, Mapping]] = {}
    for r in records:
        grid.setdefault((r["metric"], r["group"]), {})[r["question"]] = r
    notes = _Notes()
    not_scored = f"the metric has no score rows for this {field} and question"
    rows = [
        [
            metric,
            group,
            *[_noted_cell(by_question.get(q), graded, notes, not_scored) for q in questions],
        ]
        for (metric, group), by_question in grid.items()
    ]
    cell = GRADED_CELL if graded else CELL_RHO_ROC
    return Table(
        name=f"{benchmark}_by_{field}",
        title=f"{benchmark} by {field}: {cell}",
        header=["Metric", field.capitalize(), *[question_header(q) for q in questions]],
        rows=rows,
        caption=f"Each cell: {cell}." + notes.caption(),
        label_columns=2,
    )


def significance_table(comparisons: Sequence[Mapping], benchmark: str, statistic: str) -> Table:
    """Rows = `A - B` metric pairs, columns = questions; cells `Δ (p)` from the paired bootstrap."""
    comparisons = [c for c in comparisons if c["benchmark"] == benchmark and statistic in c]
    questions = sorted({c["question"] for c in comparisons}, key=question_sort_key)
    grid: dict[str, dict[str, Mapping]] = {}
    for c in comparisons:
        grid.setdefault(f"{c['metric_a']} - {c['metric_b']}", {})[c["question"]] = c[statistic]
    rows = []
    for pair, by_question in grid.items():
        cells = []
        for q in questions:
            test = by_question.get(q)
            if not test or test.get("difference") is None or test.get("p_value") is None:
                cells.append(MISSING)
            else:
                sign = "+" if test["difference"] >= 0 else ""
                cells.append(
                    f"{sign}{format_value(test['difference'])} ({format_p(test['p_value'])})"
                )
        rows.append([pair, *cells])
    label = {
        "pearson": f"Δ{RHO}",
        "roc_auc": "Δroc",
        "spearman": "ΔSpearman",
        "kendall": "ΔKendall τ",
    }.get(statistic, statistic)
    note = pairing.pairing_note(comparisons, comparison_name)
    return Table(
        name=f"{benchmark}_significance_{statistic}",
        title=f"{benchmark}: paired bootstrap, {label} (two-sided p)",
        header=["Metrics (A - B)", *[question_header(q) for q in questions]],
        rows=rows,
        caption="Same items for both metrics; p from the paired bootstrap."
        + (f" {note}" if note else ""),
    )


def comparison_name(comparison: Mapping) -> str:
    """`A - B (Q4)`: a comparison of two metrics as a pairing note names it."""
    question = question_header(comparison["question"])
    return f"{comparison['metric_a']} - {comparison['metric_b']} ({question})"


def _with_interval(entry: Mapping) -> str:
    """`.93 [.91, .95]`, `.93` without an interval, `-` when undefined."""
    if entry.get("estimate") is None:
        return MISSING
    if entry.get("low") is None:
        return format_value(entry["estimate"])
    return f"{format_value(entry['estimate'])} {format_interval(entry)}"


def _difference_cell(test: Mapping | None) -> str:
    if not test or test.get("difference") is None or test.get("p_value") is None:
        return MISSING
    sign = "+" if test["difference"] >= 0 else ""
    return f"{sign}{format_value(test['difference'])} ({format_p(test['p_value'])})"


def teacher_agreement_table(results: Sequence[Mapping], benchmark: str, teacher: str) -> Table:
    """Students against their teacher on one benchmark: rows = (student, question).

    Columns: the joined rows and the student rows without a teacher row; the student's
    Pearson and Spearman with the teacher's scores `[95% interval]`; student and teacher
    against the labels (`ρ/roc`, `ρ/Spearman` for graded labels); the paired bootstrap of
    student - teacher on the same rows (`Δ (p)`) and Williams' test of their Pearson ρ.
    """
    results = [r for r in results if r["benchmark"] == benchmark]
    graded = has_graded_labels(r["student_vs_labels"] for r in results)
    note = pairing.pairing_note(
        results, lambda r: f"{r['student']} ({question_header(r['question'])})"
    )
    # Rows without item ids are joined by row order: the caption says so, and for which.
    by_position = any(pairing.ROW_ORDER in r["paired_by"] for r in results)
    joined = "item by item"
    if by_position:
        joined = "item by item, or by row order where noted,"
    second = "spearman" if graded else "roc_auc"
    second_title = "Spearman" if graded else "roc"
    rows = []
    for r in results:
        student, teacher_labels = r["student_vs_labels"], r["teacher_vs_labels"]
        williams = r["williams"]
        rows.append(
            [
                r["student"],
                question_header(r["question"]),
                str(r["n_joined"]),
                str(r["no_teacher_score"]),
                _with_interval(r["agreement"]["pearson"]),
                _with_interval(r["agreement"]["spearman"]),
                format_pair(student["pearson"], student.get(second)),
                format_pair(teacher_labels["pearson"], teacher_labels.get(second)),
                _difference_cell(r["paired"].get("pearson")),
                _difference_cell(r["paired"].get(second)),
                MISSING if williams.get("p_value") is None else format_p(williams["p_value"]),
            ]
        )
    return Table(
        name=f"{benchmark}_teacher_agreement",
        title=f"{benchmark}: students against the teacher {teacher}",
        header=[
            "Student",
            "Question",
            "n",
            "No teacher",
            f"Pearson {RHO} (teacher)",
            "Spearman (teacher)",
            f"Student {RHO}/{second_title}",
            f"Teacher {RHO}/{second_title}",
            f"Δ{RHO} (p)",
            f"Δ{second_title} (p)",
            "Williams p",
        ],
        rows=rows,
        caption=(
            f"Rows joined {joined} as for the paired tests; No teacher: student rows "
            "without a teacher row. Agreement with the teacher: 95% percentile bootstrap "
            f"interval over rows. Against the labels: {RHO}/{second_title} of each metric on "
            "the joined rows; Δ = student - teacher, p from the paired bootstrap; Williams p: "
            f"one-sided test of the larger Pearson {RHO}." + (f" {note}" if note else "")
        ),
        label_columns=2,
    )


def task_metrics_table(results: Mapping[str, Mapping], title: str) -> Table:
    """`evaluate`'s table (`metrics.md`): one row per score task, its Yes rate, Pearson rho
    and ROC-AUC (`score_statistics.task_metrics`) next to the majority baseline's."""
    rows = []
    for task_name, result in results.items():
        baseline = result["majority_baseline"]
        values = (result["positive_rate"], result["pearson"], result["roc_auc"])
        values += (baseline["pearson"], baseline["roc_auc"])
        question = _task_question_cell(result.get("question"))
        rows.append([question, task_name, str(result["n"])] + [format_value(v) for v in values])
    header = ["question", "task", "n", "Yes rate", "Pearson rho", "ROC-AUC"]
    header += ["majority rho", "majority ROC"]
    return Table(name="evaluate", title=title, header=header, rows=rows, label_columns=2)


def _task_question_cell(question: str | int | None) -> str:
    if question is None:
        return MISSING
    if isinstance(question, int) and question in constants.QUESTION_NAMES:
        return f"{question_header(str(question))} {constants.QUESTION_NAMES[question]}"
    return question_header(str(question))


def format_p(p: float) -> str:
    """`p=.031`, or `p<.001`."""
    return f"p={p:.3f}".replace("=0.", "=.") if p >= 0.001 else "p<.001"


def _display_columns() -> list[str]:
    """The paper tables' columns, in the tables' order (mFACE's, then TRUE's)."""
    tabled = sorted((b for b in registry.benchmarks() if b.table), key=lambda b: b.table.number)
    return [column for b in tabled for column in b.columns]


def question_sort_key(question: str) -> tuple[int, int, str]:
    """Q1..Q6 by number, then the paper tables' columns in their order, then by name."""
    if question.isdigit():
        return (0, int(question), "")
    known = [c.lower() for c in _display_columns()]
    column = question_header(question).lower()
    if column in known:
        return (1, known.index(column), "")
    return (2, 0, question)


def question_header(question: str) -> str:
    """`Q4` for SEAHORSE question numbers, a benchmark's display name, else the name itself."""
    if question.isdigit():
        return f"Q{question}"
    for benchmark in registry.benchmarks():
        display = benchmark.display_name(question)
        if display is not None:
            return display
    return question

"""The tables and the disagreements document of an explainable metric's rows, from the
numbers of `explanation_report.evaluate_explanations` (report.json's `scores.explanations`).

- `correlation_table`: per metric and question of a benchmark, n, the rows without a score
  (unparsed) and Pearson ρ, Spearman and Kendall τ-b with their 95% bootstrap intervals;
- `quality_table`: per explainable metric and question, items, unparsed rows, location exact
  and token F1, aspect accuracy, detection precision and recall with their intervals;
- `disagreements_markdown`: `disagreements.md`, the items where score and label disagree
  most, each with its ids, numbers, summary, generated and true errors and generated text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from seahorse_t5x.evaluation import explanation_report, tables

_CORRELATIONS: tuple[tuple[str, str], ...] = (
    ("pearson", f"Pearson {tables.RHO}"),
    ("spearman", "Spearman"),
    ("kendall", "Kendall τ-b"),
)
_QUALITY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("location_exact", "location exact"),
    ("location_f1", "location token F1"),
    ("aspect_accuracy", "aspect accuracy"),
    ("precision", "detection precision"),
    ("recall", "detection recall"),
)


class _Reasons:
    """Numbered reasons of a table's undefined cells: `-[1]`, the caption lists them."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def mark(self, reason: str | None) -> str:
        reason = reason or "undefined"
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"{tables.MISSING}[{self.reasons.index(reason) + 1}]"

    def caption(self) -> str:
        if not self.reasons:
            return ""
        listed = "; ".join(f"[{i}] {r}" for i, r in enumerate(self.reasons, start=1))
        return f" Undefined ({tables.MISSING}[n]): {listed}."


def _cell(value: float | None, reason: str | None, ci: Mapping | None, notes: _Reasons) -> str:
    """`.52 [.31, .70]`; the value alone when its interval is undefined (reason noted)."""
    if value is None:
        return notes.mark(reason)
    text = tables.format_value(value)
    if ci is None:
        return text
    if ci.get("low") is None:
        return f"{text} {notes.mark('interval: ' + str(ci.get('reason') or 'undefined'))}"
    return f"{text} {tables.format_interval(ci)}"


def correlation_table(scores: Mapping, benchmark: str) -> tables.Table:
    """Per metric and question of `benchmark`: n, unparsed, and Pearson ρ, Spearman and
    Kendall τ-b with their 95% bootstrap intervals (the report's `results`)."""
    section = scores["explanations"]
    results = {
        (r["metric"], r["question"]): r for r in scores["results"] if r["benchmark"] == benchmark
    }
    notes = _Reasons()
    rows = []
    with_intervals = any("ci" in r for r in results.values())
    for count in section["counts"]:
        if count["benchmark"] != benchmark:
            continue
        entry = results.get((count["metric"], count["question"]))
        cells = [count["metric"], tables.question_header(count["question"])]
        if entry is None:
            cells += ["0", str(count["n_unscored"])]
            cells += [notes.mark("no row with a score")] * len(_CORRELATIONS)
        else:
            cells += [str(entry["n"]), str(count["n_unscored"])]
            reasons, intervals = entry.get("reasons") or {}, entry.get("ci")
            for name, _ in _CORRELATIONS:
                ci = None if intervals is None else intervals.get(name)
                cells.append(_cell(entry.get(name), reasons.get(name), ci, notes))
        rows.append(cells)
    return tables.Table(
        name=f"{benchmark}_explanation_correlations",
        title=f"{benchmark}: agreement of the scores with the labels",
        header=["Metric", "Question", "n", "unparsed", *(header for _, header in _CORRELATIONS)],
        rows=rows,
        caption=(
            "On the rows with a score (n)"
            + ("; 95% percentile bootstrap intervals over items in brackets" * with_intervals)
            + ". unparsed: rows without a score (for an explainable metric, the generated "
            "analysis did not parse), left out of every statistic, never scored as 0."
            + notes.caption()
        ),
        label_columns=2,
    )


def quality_table(section: Mapping, benchmark: str) -> tables.Table:
    """Per explainable metric and question of `benchmark`: items, unparsed rows, location
    exact and token F1, aspect accuracy, detection precision and recall with intervals."""
    notes = _Reasons()
    rows = []
    without_truth = []
    with_intervals = any("ci" in q for q in section["quality"] if q["benchmark"] == benchmark)
    for entry in section["quality"]:
        if entry["benchmark"] != benchmark:
            continue
        cells = [
            entry["metric"],
            tables.question_header(entry["question"]),
            str(entry["n_items"]),
            str(entry["n_unparsed"]),
        ]
        intervals = entry.get("ci")
        for name, _ in _QUALITY_COLUMNS:
            ci = None if intervals is None else intervals[name]
            cells.append(_cell(entry[name], entry["reasons"].get(name), ci, notes))
        rows.append(cells)
        if entry["n_without_truth"]:
            without_truth.append(
                f"{entry['metric']}/{entry['question']} {entry['n_without_truth']}"
            )
    caption = (
        "Items: rows whose generated errors parsed and that carry true errors; unparsed: "
        "rows whose errors did not parse, left out (never read as an analysis without "
        "errors). Errors are matched one to one by best location token F1; location exact "
        "and token F1 are averaged over items, aspect accuracy is the share of matched "
        "errors with the true aspect, detection precision and recall are matched errors "
        "over predicted and over true errors."
        + (" 95% percentile bootstrap intervals over items in brackets." * with_intervals)
        + f" The items where score and label disagree most: {explanation_report.DISAGREEMENTS}.md."
    )
    if without_truth:
        caption += f" Rows without true errors, left out: {', '.join(without_truth)}."
    return tables.Table(
        name=f"{benchmark}_explanation_quality",
        title=f"{benchmark}: explanation quality",
        header=["Metric", "Question", "items", "unparsed", *(h for _, h in _QUALITY_COLUMNS)],
        rows=rows,
        caption=caption + notes.caption(),
        label_columns=2,
    )


def section_tables(scores: Mapping, benchmark: str) -> list[tables.Table]:
    """The explanation tables of `benchmark` (none when it holds no explanation rows): the
    correlation table when the report has results for it, the quality table when some of
    its explanation rows carry true errors."""
    section = scores.get("explanations") or {}
    if benchmark not in section.get("benchmarks", ()):
        return []
    out = []
    if any(r["benchmark"] == benchmark for r in scores["results"]):
        out.append(correlation_table(scores, benchmark))
    if any(q["benchmark"] == benchmark for q in section["quality"]):
        out.append(quality_table(section, benchmark))
    return out


# ------------------------------------------------------------------------ the document


_MARKDOWN_SPECIAL = set("\\`*_[]<>#|")


def _inline(text: object) -> str:
    """`text` on one line, Markdown's special characters escaped."""
    flat = " ".join(str(text).split())
    return "".join(f"\\{c}" if c in _MARKDOWN_SPECIAL else c for c in flat)


def _number(value: float) -> str:
    return f"{value + 0.0:g}"  # + 0.0: -0.0 (no error's reduction) prints as 0


def _present(value: object) -> bool:
    return not explanation_report.is_missing(value) and value != ""


def _error_lines(error_list: Sequence[Any]) -> list[str]:
    if not error_list:
        return ["  none"]
    lines = []
    for i, error in enumerate(error_list, start=1):
        error = error if isinstance(error, Mapping) else {"explanation": error}
        head = _inline(error.get("aspect") or "error")
        details = [_inline(error["severity"])] if _present(error.get("severity")) else []
        reduction = error.get("score_reduction")
        if isinstance(reduction, (int, float)) and not explanation_report.is_missing(reduction):
            details.append(f"-{_number(float(reduction))}")
        line = f"  {i}. **{head}**" + (f" ({', '.join(details)})" if details else "")
        if _present(error.get("location")):
            line += f" at “{_inline(error['location'])}”"
        if _present(error.get("explanation")):
            line += f": {_inline(error['explanation'])}"
        lines.append(line)
    return lines


def _fenced(text: str) -> list[str]:
    # A fence longer than any run of backticks in the text, so the text cannot close it.
    longest = max((len(run) for run in _backtick_runs(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def _backtick_runs(text: str) -> list[str]:
    runs, current = [], ""
    for char in text:
        if char == "`":
            current += char
        elif current:
            runs.append(current)
            current = ""
    return [*runs, current] if current else runs


def _item_markdown(rank: int, item: Mapping) -> list[str]:
    ids = ", ".join(f"{field} `{_inline(value)}`" for field, value in item["ids"].items())
    generated = item.get(explanation_report.ERRORS_FIELD)
    problem = item.get(explanation_report.PROBLEM_FIELD)
    true_errors = item.get(explanation_report.TRUE_ERRORS_FIELD)
    text = item.get(explanation_report.TEXT_FIELD)
    lines = [
        f"### {rank}. {ids or item['row']}",
        "",
        f"- rank difference {item['rank_difference']:+g}: score {_number(item['score'])} "
        f"(rank {_number(item['score_rank'])}), label {_number(item['label'])} "
        f"(rank {_number(item['label_rank'])})",
        f"- row: {item['row']}",
    ]
    if "summary" in item:
        lines.append(f"- summary: {_inline(item['summary'])}")
    if generated is not None:
        lines += [f"- generated errors ({len(generated)}):", *_error_lines(generated)]
    elif problem is not None:
        lines.append(f"- generated errors: did not parse ({_inline(problem)})")
    if true_errors is not None:
        lines += [f"- true errors ({len(true_errors)}):", *_error_lines(true_errors)]
    if text is not None:
        lines += ["", "<details><summary>generated text</summary>", ""]
        lines += [*_fenced(str(text)), "", "</details>"]
    return [*lines, ""]


def disagreements_markdown(section: Mapping) -> str:
    """The disagreements document: per metric, benchmark and question, its items where score
    and label disagree most, each with its ids, numbers, summary and errors."""
    lines = [
        "# seahorse-t5x report: disagreements",
        "",
        f"Per metric, benchmark and question, up to {section['k']} items where the score and "
        f"the label disagree most: {explanation_report.RANK_RULE}. Rows without a score (their generated "
        "analysis did not parse) are not ranked.",
        "",
    ]
    for group in section["disagreements"]:
        lines += [
            f"## {group['metric']}: {group['benchmark']} / "
            f"{tables.question_header(group['question'])}",
            "",
            f"{group['n_ranked']} rows ranked, {group['n_unscored']} without a score left out.",
            "",
        ]
        if not group["items"]:
            lines += ["No item whose ranks differ.", ""]
        for rank, item in enumerate(group["items"], start=1):
            lines += _item_markdown(rank, item)
    return "\n".join(lines).rstrip("\n") + "\n"

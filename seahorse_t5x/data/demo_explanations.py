"""Error analyses of the synthetic demo summaries, in MetricInstruct's row format.

SYNTHETIC, like the rest of the demo data (`demo_data`): each analysis is written from the
defects the generator built the summary with, so it is right by construction, and a small
explainable metric can be trained on it offline and checked against it. Nothing here says
anything about SEAHORSE or about MetricInstruct's own analyses.

One row per (article, summary) pair, in the split files' order, in the format that
`metric_instruct` reads (TIGERScore's fields): `task` summarization, a fixed `instruction`,
`input_context` the article, `hypo_output` the summary, `errors` the analysis as
`error_analysis.render_analysis` writes it; `id` (`{gem_id}/{model}`) and `source`. Beside
them, ignored by the reader: `gem_id` and `model` (the SEAHORSE row's key: the TSV's `gem_id`
and `model` columns, the prepared files' `gem_id` and `system`) and `defects` (the questions
whose defect the summary was built with, as ratings would say No without rater noise).

One error per defect the summary shows, its location the defective words exactly as the
summary writes them (`summary[start:end]`), ordered by where they start:

  question  defect                          location                      aspect
  Q1        garbled words                   first to last garbled word    Fluency
  Q2        a word said over and over       the looped words              Coherence
  Q3        scrambled sentence              the main sentence             Fluency
  Q4        invented person or place        the name (one error each)     Fact Consistency
  Q5        vague: no main idea             the main sentence             Relevance
  Q6        padding                         side detail and remark        Relevance

In a scrambled sentence a name's words may stand apart: its location runs from the first of
them to the last.

Q2 is Coherence: the loop is not a slip in the sentence's grammar, spelling or vocabulary
(Fluency in TIGERScore's definitions) but a sentence that stops making sense as a text: it
never says what it began to say. It also keeps the loop's aspect apart from Q1's and Q3's.

Severity: Major when the defect is in the summary's main sentence (the one that should say
what happened) or garbles the whole summary; Minor when it lies only in the padding after
the main sentence (Q6, and a Q2 loop that breaks off the padding's last sentence). Score
reductions are fixed per kind: Major Q1 5.0, Q3 4.0, Q5 4.0, Q2 3.0, Q4 3.0 per name; Minor
Q2 1.5, Q6 1.0 (Major always 3 or more, Minor at most 1.5).

A defect the text no longer shows gets no error (it stays in `defects`): a garbled summary
(Q1) hides the others, so its analysis holds the Q1 error alone (as SEAHORSE leaves Q2..Q6
unrated after Q1 No); a name the loop cut off; the word order of a sentence that the loop
breaks off at its first word. A summary built without defects gets no error (score 0).

Corrections quote the article's facts: the sentence in order, with the article's person and
place (never an invented name), for Q1, Q2 (a loop in the main sentence), Q3 and Q5 (the
language's first main template); the sentence as it was before the loop for a loop in the
padding; the article's name for Q4; deletion for Q6.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence

from seahorse_t5x import constants, fileio
from seahorse_t5x.data import metric_instruct
from seahorse_t5x.formats import error_analysis

# The folder under the demo's output folder, one `{split}.jsonl` per split.
EXPLANATIONS_DIR = "explanations"
INSTRUCTION = "Summarize the following news article."
SOURCE = "seahorse_demo"
TASK = error_analysis.SUMMARIZATION
ID_FORMAT = "{gem_id}/{model}"
# Fields beside MetricInstruct's: the SEAHORSE row's key and the defects built in.
GEM_ID_FIELD = "gem_id"
MODEL_FIELD = "model"
DEFECTS_FIELD = "defects"

_RELEVANCE, _FACT_CONSISTENCY, _COHERENCE, _FLUENCY = error_analysis.aspects_for(TASK)
# The summarization aspect of each question's defect (TIGERScore's EVAL_ASPECTS).
ASPECTS: dict[int, str] = {
    1: _FLUENCY,
    2: _COHERENCE,
    3: _FLUENCY,
    4: _FACT_CONSISTENCY,
    5: _RELEVANCE,
    6: _RELEVANCE,
}
# Score reductions: Major in the main sentence (or the whole summary), Minor in the padding.
MAJOR_REDUCTIONS: dict[int, float] = {1: 5.0, 2: 3.0, 3: 4.0, 4: 3.0, 5: 4.0}
MINOR_REDUCTIONS: dict[int, float] = {2: 1.5, 6: 1.0}

_EXPLANATIONS: dict[int, str] = {
    1: (
        "{count} of the {words} words are random letters, not words, so the summary cannot be "
        "understood. Write it in real words, e.g. '{correction}'"
    ),
    2: (
        "The word '{word}' is said {count} times in a row and the sentence breaks off. Say it "
        "once and finish the sentence: '{correction}'"
    ),
    3: (
        "The words are in scrambled order, in lower case, with stray punctuation marks: not a "
        "grammatical sentence. In order: '{correction}'"
    ),
    4: (
        "The article mentions no {kind} called '{entity}'. Replace it with the article's "
        "'{correction}'."
    ),
    5: (
        "It names the place but not what happened there: the article's main point is missing. "
        "Say what happened, e.g. '{correction}'"
    ),
    6: (
        "A side detail and an empty remark, not the article's main point: they only make the "
        "summary longer. Delete them."
    ),
}


@dataclasses.dataclass(frozen=True)
class Defect:
    """One defect as a summary shows it.

    Attributes:
      question: the SEAHORSE question it fails (1..6).
      start, end: its location, `summary[start:end]`.
      correction: what the location should say (Q6: "", delete it).
      in_padding: it lies only in the padding after the main sentence (Minor).
      count: Q1 the garbled words; Q2 how often the word is said.
      words: Q1 the summary's words.
      entity: Q4 the invented name as the generator chose it (before any change of case).
      kind: Q4 `person` or `place`.
    """

    question: int
    start: int
    end: int
    correction: str = ""
    in_padding: bool = False
    count: int = 0
    words: int = 0
    entity: str = ""
    kind: str = ""

    def location(self, summary: str) -> str:
        return summary[self.start : self.end]


@dataclasses.dataclass(frozen=True)
class SummaryDefects:
    """What a summary was built with, and what of it the text shows.

    Attributes:
      drawn: the questions whose defect the summary was built with, ascending.
      shown: one `Defect` per error of its analysis, in the order of their locations.
    """

    drawn: tuple[int, ...]
    shown: tuple[Defect, ...]


def severity(defect: Defect) -> str:
    """Major in the main sentence or the whole summary, Minor in the padding only."""
    return error_analysis.MINOR if defect.in_padding else error_analysis.MAJOR


def score_reduction(defect: Defect) -> float:
    table = MINOR_REDUCTIONS if defect.in_padding else MAJOR_REDUCTIONS
    return table[defect.question]


def explained_error(summary: str, defect: Defect) -> error_analysis.ExplainedError:
    """The analysis entry of one defect of `summary`."""
    location = defect.location(summary)
    explanation = _EXPLANATIONS[defect.question].format(
        count=defect.count,
        words=defect.words,
        word=location.split()[0],
        entity=defect.entity,
        kind=defect.kind,
        correction=defect.correction,
    )
    return error_analysis.ExplainedError(
        location=location,
        aspect=ASPECTS[defect.question],
        explanation=explanation,
        severity=severity(defect),
        score_reduction=score_reduction(defect),
    )


def analysis(summary: str, defects: SummaryDefects) -> error_analysis.ErrorAnalysis:
    """The summary's error analysis: one error per defect it shows (none: score 0)."""
    return error_analysis.ErrorAnalysis.of(explained_error(summary, d) for d in defects.shown)


def record(row: Mapping[str, str], article: str, defects: SummaryDefects) -> dict:
    """One MetricInstruct row for a SEAHORSE-format row (`constants.TSV_COLUMNS`)."""
    summary = row["summary"]
    return {
        metric_instruct.ID_FIELD: ID_FORMAT.format(gem_id=row["gem_id"], model=row["model"]),
        metric_instruct.SOURCE_FIELD: SOURCE,
        metric_instruct.TASK_FIELD: TASK,
        metric_instruct.INSTRUCTION_FIELD: INSTRUCTION,
        metric_instruct.CONTEXT_FIELD: article,
        metric_instruct.OUTPUT_FIELD: summary,
        metric_instruct.ERRORS_FIELD: error_analysis.render_analysis(analysis(summary, defects)),
        GEM_ID_FIELD: row["gem_id"],
        MODEL_FIELD: row["model"],
        DEFECTS_FIELD: list(defects.drawn),
    }


def write_explanations(
    output_dir: str,
    rows: Mapping[str, Sequence[Mapping[str, str]]],
    articles: Mapping[str, str],
    defects: Mapping[str, Sequence[SummaryDefects]],
) -> dict[str, str]:
    """Writes `output_dir/explanations/{split}.jsonl`, one row per split row, in order.

    Args:
      output_dir: the demo's output folder.
      rows: split -> SEAHORSE-format rows.
      articles: gem_id -> article text.
      defects: split -> each row's `SummaryDefects`, aligned with `rows`.

    Returns:
      split -> the file written.
    """
    paths = {}
    for split in constants.SPLITS:
        if split not in rows:
            continue
        if len(rows[split]) != len(defects[split]):
            raise ValueError(f"{split}: {len(rows[split])} rows, {len(defects[split])} analyses")
        path = os.path.join(output_dir, EXPLANATIONS_DIR, f"{split}.jsonl")
        with fileio.atomic_writer(path) as f:
            for row, built in zip(rows[split], defects[split], strict=True):
                line = record(row, articles[row["gem_id"]], built)
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
        paths[split] = path
    return paths

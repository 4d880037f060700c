"""The explainable metric's text formats (TIGERScore, Jiang et al., TMLR 2024): prompt and analysis.

An explainable metric reads an instruction, the task's input (the source) and a model's
output, and writes an error analysis: per error its location (the words of the output that
are wrong), aspect, explanation with a correction, severity (`Major` or `Minor`) and score
reduction in [0.5, 5]; the score is minus the sum of the reductions (0 is perfect).

The model input (`render_prompt`) is TIGERScore's fine-tuning input: `INST` and `TEMPLATE` of
tigerscore/finetune/format_data_v2.py, joined as tigerscore/finetune/train.py joins an
example's `instruction` and `input` (`(instruction + "\\n" + input).strip(" \\n") + "\\n"`):

    You are evaluating errors in a model-generated output for a given instruction.
    Instruction:
    {instruction}
    {input_context}

    Model-generated Output:
    {hypothesis_output}

    For each error you give in the response, please also elaborate the following information:
    - error location (the words that are wrong in the output)
    ...
    Your evaluation output:

with a line break at the end; `Instruction: ` and `Model-generated Output: ` keep a trailing
space. `prompt_parts` splits it around the input context, so that a tokenizer can cut the
source alone and keep the hypothesis whole; each part starts and ends at a line break, which
SentencePiece treats as a word boundary, so the parts' tokens joined are the prompt's tokens.

The target (`render_analysis`) is TIGERScore's training target, as
tigerscore/finetune/format_distill_data.py renders an analysis (MetricInstruct's `errors`):

    The model-generated output contains 2 errors, with a total score reduction of 5.0.
    Error location 1: ...
    Error aspect 1: ...
    Explanation 1: ...
    Severity 1: Major
    Score reduction 1: 4.0
    Error location 2: ...
    ...
    Score reduction 2: 1.0

and with no error the one line `The model-generated output contains 0 errors, with a total
score reduction of 0.` `parse_analysis` reads it back, checked: what it refuses raises
`AnalysisParseError` with one line saying what was wrong. It accepts what
tigerscore/scorer/tigerscore.py `decode_tigerscore_output` accepts (text before the first
line, a value on the line after its label, spaces around values), and a value that runs
over several lines. No TensorFlow or JAX here.
"""

from __future__ import annotations

import dataclasses
import math
import re
import string
from collections.abc import Iterable, Sequence

# ----------------------------------------------------------------------------- templates

# Copied from tigerscore/finetune/format_data_v2.py (TIGER-AI-Lab/TIGERScore), `INST`.
INST = "You are evaluating errors in a model-generated output for a given instruction."
# The variant that names the task type, commented out beside it there (`FINETUNE_INST`).
TASK_INST = "You are evaluating errors in a model-generated output for a(an) ${task} task."
# Copied from tigerscore/finetune/format_data_v2.py, `TEMPLATE` (the same text as
# `FINETUNE_INPUT` of format_distill_data.py). Written with explicit line breaks because two
# of its lines end in a space.
TEMPLATE = (
    "Instruction: \n"
    "${generation_instruction}\n"
    "${input_context}\n"
    "\n"
    "Model-generated Output: \n"
    "${hypothesis_output}\n"
    "\n"
    "For each error you give in the response, please also elaborate the following information:\n"
    "- error location (the words that are wrong in the output)\n"
    "- error aspect it belongs to.\n"
    "- explanation why it's an error, and the correction suggestions.\n"
    '- severity of the error ("Major" or "Minor"). \n'
    "- reduction of score (between 0.5 and 5 given the severity of the error)\n"
    "\n"
    "Your evaluation output:"
)
_CONTEXT_SLOT = "${input_context}"
_TEMPLATE_HEAD, _TEMPLATE_TAIL = TEMPLATE.split(_CONTEXT_SLOT)

# The target's first line and per-error labels, as format_distill_data.py writes them
# (`key.replace("_", " ").capitalize()` of error_location, error_aspect, explanation,
# severity, score_reduction).
HEADER = (
    "The model-generated output contains {count} errors, with a total score reduction of {total}."
)
LOCATION = "Error location"
ASPECT = "Error aspect"
EXPLANATION = "Explanation"
SEVERITY = "Severity"
SCORE_REDUCTION = "Score reduction"
LABELS: tuple[str, ...] = (LOCATION, ASPECT, EXPLANATION, SEVERITY, SCORE_REDUCTION)
# The `ExplainedError` field each label fills.
LABEL_FIELDS: dict[str, str] = {
    LOCATION: "location",
    ASPECT: "aspect",
    EXPLANATION: "explanation",
    SEVERITY: "severity",
    SCORE_REDUCTION: "score_reduction",
}

MAJOR = "Major"
MINOR = "Minor"
SEVERITIES: tuple[str, ...] = (MAJOR, MINOR)
MIN_REDUCTION = 0.5
MAX_REDUCTION = 5.0

# ----------------------------------------------------------------------------- task types

# MetricInstruct's task types, spelled as TIGERScore's scripts pass them (`--task` of
# tigerscore/finetune/format_distill_data.sh; the keys of EVAL_ASPECTS), and the aspects
# TIGERScore's analyses were asked to use for each: tigerscore/xgptscore/constants.py,
# EVAL_ASPECTS (the entries in force, not the commented-out drafts). MetricInstruct also
# holds free-form aspects (its synthetic channel), so an analysis is not checked against them.
SUMMARIZATION = "summarization"
TRANSLATION = "translation"
DATA2TEXT = "data2text"
LONG_FORM_QA = "long-form QA"
MATH_QA = "mathQA"
INSTRUCTION_FOLLOWING = "instruction-following"
TASK_ASPECTS: dict[str, tuple[str, ...]] = {
    SUMMARIZATION: ("Relevance", "Fact Consistency", "Coherence", "Fluency"),
    TRANSLATION: ("Accuracy", "Fluency", "Terminology", "Style Matching"),
    DATA2TEXT: ("Accuracy", "Logical Coherence", "Fluency"),
    MATH_QA: (
        "Problem Understanding",
        "Problem Formulation",
        "Computing Accuracy",
        "Solution Interpretation",
    ),
    LONG_FORM_QA: ("Accuracy", "Completeness", "Informativeness", "Clarity"),
    INSTRUCTION_FOLLOWING: ("Comprehension", "Accuracy", "Informativeness", "Coherence"),
}
TASK_TYPES: tuple[str, ...] = tuple(TASK_ASPECTS)


def aspects_for(task: str) -> tuple[str, ...]:
    """The predefined aspects of a task type (`()` for a type TIGERScore did not define).

    >>> aspects_for("data2text")
    ('Accuracy', 'Logical Coherence', 'Fluency')
    """
    return TASK_ASPECTS.get(task, ())


# ----------------------------------------------------------------------------- records


class AnalysisParseError(ValueError):
    """A text that is not an error analysis; `reason` says what was wrong, in one line.

    Attributes:
      reason: what was found and what was expected.
      error_number: the 1-based error the problem is in (None: the first line, or the
        analysis as a whole).
      label: the label of the field at fault (`Severity`, ...), or None.
    """

    def __init__(self, reason: str, error_number: int | None = None, label: str | None = None):
        self.reason = reason
        self.error_number = error_number
        self.label = label
        super().__init__(reason)

    @property
    def field(self) -> str:
        """Where in an analysis: `errors`, `errors[2]` or `errors[2].severity`."""
        if self.error_number is None:
            return "errors"
        where = f"errors[{self.error_number}]"
        return f"{where}.{LABEL_FIELDS[self.label]}" if self.label else where


@dataclasses.dataclass(frozen=True)
class ExplainedError:
    """One error of an analysis.

    Attributes:
      location: the words of the output that are wrong.
      aspect: the aspect it belongs to (a task type's, or free-form).
      explanation: why it is an error, and the correction.
      severity: `Major` or `Minor`.
      score_reduction: in [0.5, 5].

    Raises:
      ValueError: an empty text field, another severity, or a reduction outside [0.5, 5].
    """

    location: str
    aspect: str
    explanation: str
    severity: str
    score_reduction: float

    def __post_init__(self) -> None:
        for name in ("location", "aspect", "explanation"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name}: expected a non-empty string, got {value!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity: expected Major or Minor, got {self.severity!r}")
        reduction = self.score_reduction
        if isinstance(reduction, bool) or not isinstance(reduction, int | float):
            raise ValueError(f"score_reduction: expected a number, got {reduction!r}")
        if not MIN_REDUCTION <= reduction <= MAX_REDUCTION:
            raise ValueError(
                f"score_reduction: expected a number in [{MIN_REDUCTION:g}, "
                f"{MAX_REDUCTION:g}], got {reduction!r}"
            )
        object.__setattr__(self, "score_reduction", float(reduction))


def total_reduction(errors: Iterable[ExplainedError]) -> float:
    """The sum of the errors' reductions (0.0 with none)."""
    return float(sum(e.score_reduction for e in errors))


@dataclasses.dataclass(frozen=True)
class ErrorAnalysis:
    """An analysis: its errors, in order, and the score, minus the sum of their reductions.

    Raises:
      ValueError: a `score` other than minus the sum of the reductions.
    """

    errors: tuple[ExplainedError, ...]
    score: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", tuple(self.errors))
        expected = 0.0 - total_reduction(self.errors)
        if not math.isclose(self.score, expected, rel_tol=1e-9, abs_tol=1e-9):
            raise ValueError(f"score: expected {expected!r} (minus the reductions' sum)")

    @classmethod
    def of(cls, errors: Iterable[ExplainedError]) -> ErrorAnalysis:
        """The analysis of `errors`, its score computed."""
        errors = tuple(errors)
        return cls(errors, 0.0 - total_reduction(errors))

    @property
    def num_errors(self) -> int:
        return len(self.errors)


# ----------------------------------------------------------------------------- prompt


def _instruction_line(task: str | None) -> str:
    if task is None:
        return INST
    return string.Template(TASK_INST).substitute(task=task)


def prompt_parts(
    instruction: str, input_context: str, hypothesis_output: str, task: str | None = None
) -> tuple[str, str, str]:
    """The prompt in three parts: before the input context, the context, after it.

    `"".join(prompt_parts(...)) == render_prompt(...)`. The first part ends and the last
    starts with a line break, so a tokenizer that treats line breaks as spaces tokenizes
    each part as it would inside the whole prompt.

    >>> prompt_parts("Summarize.", "A long story.", "Short.")[1]
    'A long story.'
    """
    head = _instruction_line(task) + "\n"
    head += string.Template(_TEMPLATE_HEAD).substitute(generation_instruction=instruction)
    tail = string.Template(_TEMPLATE_TAIL).substitute(hypothesis_output=hypothesis_output)
    # train.py joins (instruction + "\n" + input).strip(" \n") + "\n": the strip never bites
    # (the head starts with INST, the tail ends with "Your evaluation output:").
    return head, input_context, tail + "\n"


def render_prompt(
    instruction: str, input_context: str, hypothesis_output: str, task: str | None = None
) -> str:
    """TIGERScore's fine-tuning input for one example.

    Args:
      instruction: the task instruction (`Summarize the news article.`).
      input_context: the task's input (the source article; may be empty).
      hypothesis_output: the model output to evaluate.
      task: None for TIGERScore's released prompt (`INST`); a task type (`summarization`)
        for the variant that names it (`TASK_INST`).

    >>> render_prompt("Summarize.", "A story.", "Short.").splitlines()[2:6]
    ['Summarize.', 'A story.', '', 'Model-generated Output: ']
    """
    return "".join(prompt_parts(instruction, input_context, hypothesis_output, task))


# ----------------------------------------------------------------------------- analysis


def _number_text(value: float | int) -> str:
    # format_distill_data.py formats the JSON number with "{}": a float as Python's repr
    # (4.0, 0.5, 2.7), the empty sum as the int 0.
    return f"{value}"


def render_analysis(errors: Sequence[ExplainedError] | ErrorAnalysis) -> str:
    """The target text of an analysis, as TIGERScore's training targets render it.

    The total is `abs(sum(reductions))` written as format_distill_data.py writes it: `5.0`
    for float reductions, `0` for no error.

    >>> render_analysis([])
    'The model-generated output contains 0 errors, with a total score reduction of 0.'
    """
    if isinstance(errors, ErrorAnalysis):
        errors = errors.errors
    errors = tuple(errors)
    total = abs(sum(e.score_reduction for e in errors)) if errors else 0
    lines = [HEADER.format(count=len(errors), total=_number_text(total))]
    for number, error in enumerate(errors, start=1):
        values = (
            error.location,
            error.aspect,
            error.explanation,
            error.severity,
            _number_text(error.score_reduction),
        )
        block = "".join(
            f"{label} {number}: {value}\n" for label, value in zip(LABELS, values, strict=True)
        )
        lines.append(block.strip(" \n"))
    return "\n".join(lines).strip(" \n")


# The first line; decode_tigerscore_output finds it anywhere in the text (`re.search`).
_HEADER_RE = re.compile(
    r"The model-generated output contains (?P<count>\d+) errors?, "
    r"with a total score reduction of (?P<total>[^\s]*?)\.?[ \t]*$",
    re.MULTILINE,
)
_LABEL_RE = re.compile(
    r"^[ \t]*(?P<label>" + "|".join(map(re.escape, LABELS)) + r") (?P<number>\d+):(?P<value>.*)$"
)
# decode_tigerscore_output's reduction: (\d+\.\d+|\d+), here the whole value.
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")


def _parse_number(text: str, what: str, error_number: int | None = None) -> float:
    if not _NUMBER_RE.fullmatch(text):
        label = SCORE_REDUCTION if error_number is not None else None
        raise AnalysisParseError(f"{what}: expected a number, got {text!r}", error_number, label)
    return float(text)


def _blocks(lines: list[str]) -> dict[int, dict[str, str]]:
    """Labelled values by error number; a line without a label continues the value above."""
    blocks: dict[int, dict[str, str]] = {}
    current: tuple[int, str] | None = None
    for text in lines:
        match = _LABEL_RE.match(text)
        if match is None:
            if current is None:
                if text.strip():
                    raise AnalysisParseError(
                        f"unexpected text after the first line: {text.strip()[:60]!r} "
                        f"(expected '{LOCATION} 1: ...')"
                    )
                continue
            number, label = current
            blocks[number][label] += "\n" + text
            continue
        number, label = int(match["number"]), match["label"]
        block = blocks.setdefault(number, {})
        if label in block:
            raise AnalysisParseError(f"two '{label} {number}:' lines", number, label)
        block[label] = match["value"]
        current = (number, label)
    return blocks


def parse_analysis(text: str | bytes) -> ErrorAnalysis:
    """Reads an error analysis back (`render_analysis`'s text, or a model's prediction).

    Checks: the first line states N errors and a total; the errors are numbered 1..N, each
    with its five labelled lines once (`Error location k:`, `Error aspect k:`,
    `Explanation k:`, `Severity k:`, `Score reduction k:`); non-empty values; severity
    `Major` or `Minor`; each reduction a number in [0.5, 5]; the stated total equal to their
    sum (within 1e-6).

    Raises:
      AnalysisParseError: saying, in one line, what was wrong (with the error's number and
        the field's label when the problem is in one error).
    """
    analysis, disagreement = _parse(text)
    if disagreement is not None:
        raise AnalysisParseError(disagreement)
    return analysis


def read_generated_analysis(text: str | bytes) -> tuple[ErrorAnalysis, str | None]:
    """Reads a generated analysis as TIGERScore's released decoder reads one: by its
    errors' labelled lines, each checked as `parse_analysis` checks it, the first line
    present but not required to agree with them. The score is minus the sum of the errors'
    reductions; a first line that states another count or total comes back as a one-line
    note (None when it agrees), for the caller to count and show.

    A first line that states errors where none follow does not parse: nothing would be left
    to score but a perfect 0.

    Raises:
      AnalysisParseError: as `parse_analysis`, except for the first line's count and total.
    """
    analysis, disagreement = _parse(text)
    if disagreement is not None and not analysis.errors:
        raise AnalysisParseError(disagreement)
    return analysis, disagreement


def _parse(text: str | bytes) -> tuple[ErrorAnalysis, str | None]:
    """The analysis, and how its first line disagrees with its errors (None: it agrees)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    header = _HEADER_RE.search(text)
    if header is None:
        raise AnalysisParseError(
            "no first line 'The model-generated output contains N errors, with a total score "
            "reduction of X.'"
        )
    count = int(header["count"])
    stated_total = _parse_number(header["total"], "the total score reduction")
    blocks = _blocks(text[header.end() :].split("\n")[1:])
    numbers = sorted(blocks)
    if numbers != list(range(1, len(numbers) + 1)):
        raise AnalysisParseError(f"errors numbered {numbers}; expected 1..{len(numbers)}")
    analysis = ErrorAnalysis.of(_error(number, blocks[number]) for number in numbers)
    if len(numbers) != count:
        follow = f"{len(numbers)} follows" if len(numbers) == 1 else f"{len(numbers)} follow"
        return analysis, f"the first line states {count} errors; {follow}"
    total = total_reduction(analysis.errors)
    if not math.isclose(stated_total, total, rel_tol=0.0, abs_tol=1e-6):
        return analysis, (
            f"the first line states a total score reduction of {header['total']}, the errors "
            f"sum to {_number_text(total)}"
        )
    return analysis, None


def _error(number: int, block: dict[str, str]) -> ExplainedError:
    values = {}
    for label in LABELS:
        if label not in block:
            raise AnalysisParseError(f"error {number}: no '{label} {number}:' line", number, label)
        value = block[label].strip()
        if not value:
            raise AnalysisParseError(f"error {number}: '{label}' is empty", number, label)
        values[label] = value
    severity = values[SEVERITY]
    if severity not in SEVERITIES:
        raise AnalysisParseError(
            f"error {number}: severity {severity!r}; expected Major or Minor", number, SEVERITY
        )
    reduction = _parse_number(values[SCORE_REDUCTION], f"error {number}: score reduction", number)
    if not MIN_REDUCTION <= reduction <= MAX_REDUCTION:
        raise AnalysisParseError(
            f"error {number}: score reduction {values[SCORE_REDUCTION]} outside "
            f"[{MIN_REDUCTION:g}, {MAX_REDUCTION:g}]",
            number,
            SCORE_REDUCTION,
        )
    return ExplainedError(
        location=values[LOCATION],
        aspect=values[ASPECT],
        explanation=values[EXPLANATION],
        severity=severity,
        score_reduction=reduction,
    )


# A label as a SentencePiece vocabulary gives it back: after a space instead of a line
# break, its colon possibly the unknown piece (` ⁇ `) of a vocabulary without `:`.
_FLAT_LABEL_RE = re.compile(
    r"[ \t\n]*\b(?P<label>" + "|".join(map(re.escape, LABELS)) + r") (?P<number>\d+)"
    r"[ \t]*(?::|\u2047)[ \t]*"
)


def restore_line_breaks(text: str) -> str:
    """A decoded analysis with its line breaks back, each label on its own line.

    T5's and mT5's SentencePiece vocabularies map a line break to a space, so a model
    trained on `render_analysis`'s targets writes them as one line; a vocabulary without
    `:` (the demo's) writes its unknown piece ` ⁇ ` there. `parse_analysis` reads the
    result as it reads the rendered text; text already in lines keeps them.

    >>> restore_line_breaks("... of 1. Error location 1 \u2047  x Severity 1: Minor")
    '... of 1.\\nError location 1: x\\nSeverity 1: Minor'
    """
    return _FLAT_LABEL_RE.sub(lambda m: f"\n{m['label']} {m['number']}: ", text).replace(
        " \n", "\n"
    )

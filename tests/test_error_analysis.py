"""The explainable metric's prompt and analysis text (`formats/error_analysis.py`).

Expected strings are written out here from TIGERScore's templates
(tigerscore/finetune/format_data_v2.py, format_distill_data.py, train.py), not built with
the module's own constants.
"""

from __future__ import annotations

import dataclasses

import pytest

from seahorse_t5x.formats import error_analysis
from seahorse_t5x.formats.error_analysis import (
    AnalysisParseError,
    ErrorAnalysis,
    ExplainedError,
    parse_analysis,
    render_analysis,
    render_prompt,
)

REQUEST = (
    "For each error you give in the response, please also elaborate the following information:\n"
    "- error location (the words that are wrong in the output)\n"
    "- error aspect it belongs to.\n"
    "- explanation why it's an error, and the correction suggestions.\n"
    '- severity of the error ("Major" or "Minor"). \n'
    "- reduction of score (between 0.5 and 5 given the severity of the error)\n"
    "\n"
    "Your evaluation output:\n"
)

MONDAY = ExplainedError(
    "on Monday", "Fact Consistency", "The article says Friday. Write 'on Friday'.", "Major", 4.0
)
BRIDGE = ExplainedError("a bridge", "Relevance", "It is the new bridge.", "Minor", 1.0)


# ----------------------------------------------------------------------------- prompt


def test_prompt_is_tigerscores_finetuning_input():
    prompt = render_prompt(
        "Summarize the news article.",
        "The mayor opened the new bridge on Friday.",
        "The mayor opened a bridge on Monday.",
    )
    assert prompt == (
        "You are evaluating errors in a model-generated output for a given instruction.\n"
        "Instruction: \n"
        "Summarize the news article.\n"
        "The mayor opened the new bridge on Friday.\n"
        "\n"
        "Model-generated Output: \n"
        "The mayor opened a bridge on Monday.\n"
        "\n" + REQUEST
    )


def test_prompt_naming_the_task_type_and_with_an_empty_source():
    prompt = render_prompt("Calculate 2 + 3.", "", "2 + 3 = 6.", task="mathQA")
    assert prompt == (
        "You are evaluating errors in a model-generated output for a(an) mathQA task.\n"
        "Instruction: \n"
        "Calculate 2 + 3.\n"
        "\n"
        "\n"
        "Model-generated Output: \n"
        "2 + 3 = 6.\n"
        "\n" + REQUEST
    )


def test_prompt_parts_join_to_the_prompt_with_the_source_alone_in_the_middle():
    args = ("Translate into English.", "Guten Morgen, $name.", "Good morning, ${name}.")
    head, context, tail = error_analysis.prompt_parts(*args)
    assert head + context + tail == render_prompt(*args)
    assert context == "Guten Morgen, $name."
    assert head.endswith("Translate into English.\n")
    # The hypothesis is substituted once, never read as a template itself.
    assert tail.startswith("\n\nModel-generated Output: \nGood morning, ${name}.\n\n")
    assert tail.endswith("Your evaluation output:\n")


# ----------------------------------------------------------------------------- rendering


def test_render_with_no_error_is_one_line():
    assert render_analysis([]) == (
        "The model-generated output contains 0 errors, with a total score reduction of 0."
    )


def test_render_two_errors():
    assert render_analysis([MONDAY, BRIDGE]) == (
        "The model-generated output contains 2 errors, with a total score reduction of 5.0.\n"
        "Error location 1: on Monday\n"
        "Error aspect 1: Fact Consistency\n"
        "Explanation 1: The article says Friday. Write 'on Friday'.\n"
        "Severity 1: Major\n"
        "Score reduction 1: 4.0\n"
        "Error location 2: a bridge\n"
        "Error aspect 2: Relevance\n"
        "Explanation 2: It is the new bridge.\n"
        "Severity 2: Minor\n"
        "Score reduction 2: 1.0"
    )


def test_render_writes_the_total_as_pythons_float_sum():
    # format_distill_data.py writes np.abs(sum(...)) with "{}": 1.1 + 2.2 is not 3.3.
    errors = [dataclasses.replace(BRIDGE, score_reduction=r) for r in (1.1, 2.2)]
    text = render_analysis(errors)
    assert text.splitlines()[0].endswith("total score reduction of 3.3000000000000003.")
    assert parse_analysis(text).score == -(1.1 + 2.2)
    # A writer that rounds the total is read as well.
    rounded = text.replace("3.3000000000000003.", "3.3.")
    assert parse_analysis(rounded).errors == parse_analysis(text).errors


def test_render_accepts_an_analysis_and_integer_reductions_become_floats():
    analysis = ErrorAnalysis.of([dataclasses.replace(MONDAY, score_reduction=2)])
    assert analysis.score == -2.0
    assert render_analysis(analysis).splitlines()[0].endswith("reduction of 2.0.")
    assert render_analysis(analysis).splitlines()[-1] == "Score reduction 1: 2.0"


@pytest.mark.parametrize(
    "errors",
    [
        [],
        [MONDAY],
        [MONDAY, BRIDGE, dataclasses.replace(BRIDGE, score_reduction=0.5)],
        # A value over several lines, and characters of other scripts.
        [
            dataclasses.replace(
                MONDAY, explanation="First line.\n\nSecond line: 周一 means Monday.", aspect="X"
            )
        ],
    ],
)
def test_render_then_parse_gives_the_errors_back(errors):
    analysis = parse_analysis(render_analysis(errors))
    assert analysis.errors == tuple(errors)
    assert analysis.score == -sum(e.score_reduction for e in errors)
    assert render_analysis(analysis) == render_analysis(errors)


# ----------------------------------------------------------------------------- parsing


def test_parse_accepts_what_tigerscores_decoder_accepts():
    # Forms TIGERScore-7B writes (tigerscore_example_usage.ipynb): the prompt echoed before
    # the analysis, a leading space, two spaces after a label, an integer total and
    # reduction, a value on the line after its label, trailing spaces.
    text = (
        "Model-generated Output: \nHey.\n\nYour evaluation output: The model-generated output "
        "contains 2 errors, with a total score reduction of 6.\n"
        'Error location 1:  "Hey"\n'
        "Error aspect 1:  Inappropriate tone\n"
        "Explanation 1:  Too informal for an apology. \n"
        "Severity 1: Major\n"
        "Score reduction 1: 4\n"
        "Error location 2:\n"
        "  the letter ends early\n"
        "Error aspect 2: Completeness\n"
        "Explanation 2: No closing line.\n"
        "Severity 2: Minor\n"
        "Score reduction 2: 2.0  \n"
    )
    analysis = parse_analysis(text)
    assert analysis.score == -6.0
    assert analysis.errors == (
        ExplainedError('"Hey"', "Inappropriate tone", "Too informal for an apology.", "Major", 4),
        ExplainedError("the letter ends early", "Completeness", "No closing line.", "Minor", 2),
    )
    assert parse_analysis(
        " The model-generated output contains 0 errors, with a total score reduction of 0."
    ) == ErrorAnalysis((), 0.0)


def test_parse_agrees_with_tigerscores_decoder_regexes():
    regex = pytest.importorskip("regex")  # variable-width lookbehinds, as TIGERScore uses
    text = render_analysis([MONDAY, BRIDGE]) + "\n"
    # tigerscore/scorer/tigerscore.py, decode_tigerscore_output's patterns.
    found = {
        "location": regex.findall(r"(?<=Error location \d+:[ \n]*).*?(?=\n)", text),
        "aspect": regex.findall(r"(?<=Error aspect \d+:[ \n]*).*?(?=\n)", text),
        "explanation": regex.findall(r"(?<=Explanation \d+:[ \n]*).*?(?=\n)", text),
        "severity": regex.findall(r"(?<=Severity \d+:[ \n]*).*?(?=\n)", text),
        "score_reduction": [
            float(x)
            for x in regex.findall(r"(?<=\nScore reduction \d+:[ \n]*)(\d+\.\d+|\d+)", text)
        ],
    }
    analysis = parse_analysis(text)
    for field, values in found.items():
        # decode_tigerscore_output then strips each value: .strip("\n ").
        values = [v.strip("\n ") if isinstance(v, str) else v for v in values]
        assert [getattr(e, field) for e in analysis.errors] == values
    count = regex.search(r"(?<=The model-generated output contains )\d+(?= errors)", text)
    assert int(count.group(0)) == analysis.num_errors


def _analysis(*blocks: str, count: int | None = None, total: str = "4.0") -> str:
    count = len(blocks) if count is None else count
    header = (
        f"The model-generated output contains {count} errors, with a total score reduction "
        f"of {total}."
    )
    return "\n".join((header, *blocks))


def _block(n: int, severity: str = "Major", reduction: str = "4.0", **drop: bool) -> str:
    lines = {
        "Error location": "on Monday",
        "Error aspect": "Fact Consistency",
        "Explanation": "The article says Friday.",
        "Severity": severity,
        "Score reduction": reduction,
    }
    return "\n".join(f"{k} {n}: {v}" for k, v in lines.items() if not drop.get(k.split()[-1]))


@pytest.mark.parametrize(
    "text, reason, field",
    [
        ("The output has no errors.", "no first line 'The model-generated output", "errors"),
        (_analysis(_block(1), count=2), "the first line states 2 errors; 1 follows", "errors"),
        (
            _analysis(_block(1), _block(2, location=True), total="8.0"),
            "error 2: no 'Error location 2:' line",
            "errors[2].location",
        ),
        (
            _analysis(_block(1, reduction="four")),
            "error 1: score reduction: expected a number, got 'four'",
            "errors[1].score_reduction",
        ),
        (
            _analysis(_block(1, reduction="-2")),
            "error 1: score reduction: expected a number, got '-2'",
            "errors[1].score_reduction",
        ),
        (
            _analysis(_block(1, reduction="7.5"), total="7.5"),
            "error 1: score reduction 7.5 outside [0.5, 5]",
            "errors[1].score_reduction",
        ),
        (
            _analysis(_block(1, reduction="0.25"), total="0.25"),
            "error 1: score reduction 0.25 outside [0.5, 5]",
            "errors[1].score_reduction",
        ),
        (
            _analysis(_block(1, severity="Critical")),
            "error 1: severity 'Critical'; expected Major or Minor",
            "errors[1].severity",
        ),
        (
            _analysis(_block(1, severity="major")),
            "error 1: severity 'major'; expected Major or Minor",
            "errors[1].severity",
        ),
        (
            _analysis(_block(1), total="3.5"),
            "the first line states a total score reduction of 3.5, the errors sum to 4.0",
            "errors",
        ),
        (
            _analysis(_block(1), total="lots"),
            "the total score reduction: expected a number, got 'lots'",
            "errors",
        ),
        (
            _analysis(_block(1), _block(3), total="8.0"),
            "errors numbered [1, 3]; expected 1..2",
            "errors",
        ),
        (
            _analysis(_block(1) + "\nSeverity 1: Minor"),
            "two 'Severity 1:' lines",
            "errors[1].severity",
        ),
        (
            _analysis(_block(1).replace("Fact Consistency", " ")),
            "error 1: 'Error aspect' is empty",
            "errors[1].aspect",
        ),
        (
            _analysis("Here are the errors:", _block(1), count=1),
            "unexpected text after the first line: 'Here are the errors:'",
            "errors",
        ),
    ],
)
def test_parse_refuses_with_one_line_saying_what_was_wrong(text, reason, field):
    with pytest.raises(AnalysisParseError) as caught:
        parse_analysis(text)
    assert caught.value.reason.startswith(reason)
    assert "\n" not in caught.value.reason
    assert caught.value.field == field


# ----------------------------------------------------------------------------- records


def test_explained_error_checks_its_fields():
    with pytest.raises(ValueError, match="severity: expected Major or Minor, got 'Severe'"):
        ExplainedError("x", "Fluency", "y", "Severe", 1.0)
    with pytest.raises(ValueError, match=r"score_reduction: expected a number in \[0.5, 5\]"):
        ExplainedError("x", "Fluency", "y", "Minor", 5.5)
    with pytest.raises(ValueError, match="score_reduction: expected a number, got True"):
        ExplainedError("x", "Fluency", "y", "Minor", True)
    with pytest.raises(ValueError, match="explanation: expected a non-empty string"):
        ExplainedError("x", "Fluency", "  ", "Minor", 1.0)
    assert ExplainedError("x", "Fluency", "y", "Minor", 5).score_reduction == 5.0


def test_analysis_score_is_minus_the_sum_of_reductions():
    assert ErrorAnalysis.of([MONDAY, BRIDGE]).score == -5.0
    assert ErrorAnalysis.of([]).score == 0.0
    with pytest.raises(ValueError, match="score: expected -5.0"):
        ErrorAnalysis((MONDAY, BRIDGE), -4.0)


def test_task_types_and_their_aspects():
    assert error_analysis.TASK_TYPES == (
        "summarization",
        "translation",
        "data2text",
        "mathQA",
        "long-form QA",
        "instruction-following",
    )
    assert error_analysis.aspects_for("summarization") == (
        "Relevance",
        "Fact Consistency",
        "Coherence",
        "Fluency",
    )
    assert error_analysis.aspects_for("translation") == (
        "Accuracy",
        "Fluency",
        "Terminology",
        "Style Matching",
    )
    assert error_analysis.aspects_for("data2text") == ("Accuracy", "Logical Coherence", "Fluency")
    assert error_analysis.aspects_for("story") == ()


def test_an_analysis_decoded_by_sentencepiece_parses_after_its_line_breaks_are_restored():
    """SentencePiece writes line breaks as spaces (and the demo vocabulary has no colon):
    the decoded text of a rendered analysis parses back to the same errors."""
    from seahorse_t5x.formats import vocab

    spm = vocab.get_vocabulary("demo")
    errors_in = [
        error_analysis.ExplainedError("on Monday", "Fact Consistency", "Say Friday.", "Major", 4.0),
        error_analysis.ExplainedError("x y", "Fluency", "Write it well.", "Minor", 0.5),
    ]
    for errors in (errors_in, []):
        flat = spm.decode(spm.encode(error_analysis.render_analysis(errors)))
        assert "\n" not in flat
        if errors:  # (no errors: one line anyway)
            with pytest.raises(error_analysis.AnalysisParseError):
                error_analysis.parse_analysis(flat)
        restored = error_analysis.restore_line_breaks(flat)
        assert error_analysis.parse_analysis(restored).errors == tuple(errors)
    rendered = error_analysis.render_analysis(errors_in)
    assert error_analysis.restore_line_breaks(rendered) == rendered


def test_a_generated_analysis_is_scored_by_its_errors_when_its_first_line_disagrees():
    text = error_analysis.render_analysis([MONDAY, BRIDGE])
    header, rest = text.split("\n", 1)
    miscounted = header.replace("2 errors", "3 errors") + "\n" + rest
    with pytest.raises(AnalysisParseError, match="states 3 errors; 2 follow"):
        error_analysis.parse_analysis(miscounted)
    analysis, note = error_analysis.read_generated_analysis(miscounted)
    assert analysis.errors == (MONDAY, BRIDGE)
    assert analysis.score == -(MONDAY.score_reduction + BRIDGE.score_reduction)
    assert note == "the first line states 3 errors; 2 follow"
    total = f"{MONDAY.score_reduction + BRIDGE.score_reduction}"
    mistotalled = header.replace(f"of {total}", "of 9.5") + "\n" + rest
    analysis, note = error_analysis.read_generated_analysis(mistotalled)
    assert analysis.score == -(MONDAY.score_reduction + BRIDGE.score_reduction)
    assert note.startswith("the first line states a total score reduction of 9.5")
    assert error_analysis.read_generated_analysis(text) == (
        error_analysis.parse_analysis(text),
        None,
    )


def test_a_generated_first_line_with_errors_but_none_following_does_not_parse():
    # Nothing to score but a perfect 0: refused, as a truncated analysis is.
    header = error_analysis.render_analysis([MONDAY]).split("\n", 1)[0]
    with pytest.raises(AnalysisParseError, match="states 1 errors; 0 follow"):
        error_analysis.read_generated_analysis(header)

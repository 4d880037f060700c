"""One meaning per flag spelling across commands: every spelling that several commands'
parsers show is documented once, in docs/commands.md's table of shared flags, with exactly
the commands that show it; a spelling a command keeps for another meaning is hidden and
deprecated there."""

from __future__ import annotations

import argparse
import collections
import pathlib
import re

import pytest

from seahorse_t5x import cli
from seahorse_t5x.cli import flags

COMMANDS_DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "commands.md"
SECTION = "## Flags shared by several commands"


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, as `seahorse-t5x COMMAND` builds it."""
    return {name: cli.subcommand_parser(name) for name in cli.SUBCOMMANDS}


def _shown(parsers) -> dict[str, set[str]]:
    """Spelling -> the commands whose --help shows it (train's --gin.MACRO flags aside)."""
    shown = collections.defaultdict(set)
    for name, parser in parsers.items():
        for action in parser._actions:
            if action.help is argparse.SUPPRESS:
                continue
            for option in action.option_strings:
                if not option.startswith("--gin."):
                    shown[option].add(name)
    return shown


def _documented() -> list[tuple[list[str], str, set[str]]]:
    """(spellings, meaning, commands) of each row of the documented table."""
    text = COMMANDS_DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{COMMANDS_DOC} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 3:
            continue
        spellings, meaning, commands = cells
        named = (
            set(cli.SUBCOMMANDS)
            if commands == "every command"
            else set(re.findall(r"`([a-z0-9-]+)`", commands))
        )
        rows.append((re.findall(r"`(-[\w-]+)`", spellings), meaning, named))
    return rows


def test_the_table_lists_each_spelling_once_with_a_meaning():
    rows = _documented()
    assert len(rows) > 30
    spellings = [s for row, _, _ in rows for s in row]
    assert len(spellings) == len(set(spellings)), "a spelling documented with two meanings"
    assert all(meaning for _, meaning, _ in rows)
    unknown = {c for _, _, commands in rows for c in commands} - set(cli.SUBCOMMANDS)
    assert unknown == set()


def test_every_shared_spelling_has_its_one_documented_meaning(parsers):
    shown = {s: names for s, names in _shown(parsers).items() if len(names) > 1}
    documented = {s: commands for row, _, commands in _documented() for s in row}
    # A spelling several commands show: one row naming exactly those commands.
    assert {s: shown[s] for s in shown if s not in documented} == {}
    assert {s: (shown[s], documented[s]) for s in shown if shown[s] != documented[s]} == {}
    # No row for a spelling no longer shared.
    assert sorted(set(documented) - set(shown)) == []


# Hidden with the deprecated `import-scores --t5x_infer`, whose work `t5x-scores` does: the
# table's meaning, `t5x-scores`'.
SERVE_A_DEPRECATED_FLAG = {("import-scores", "--task"), ("import-scores", "--join_by_position")}


def test_a_spelling_kept_for_another_meaning_is_a_deprecated_alias(parsers):
    # A hidden spelling that other commands show (with the table's meaning) stands, in its
    # own command, for that command's new flag and says so: never a second meaning in silence.
    shown = _shown(parsers)
    for name, parser in parsers.items():
        for action in parser._actions:
            if action.help is not argparse.SUPPRESS:
                continue
            for option in action.option_strings:
                if (name, option) in SERVE_A_DEPRECATED_FLAG:
                    continue
                if shown.get(option, set()) - {name}:
                    assert isinstance(action, flags.DeprecatedAlias | flags.DeprecatedFlag), (
                        name,
                        option,
                    )


@pytest.mark.parametrize(
    ("command", "old", "new"),
    [
        ("score", "--benchmark", "--rows_benchmark"),
        ("explain", "--benchmark", "--rows_benchmark"),
        ("t5x-explanations", "--benchmark", "--rows_benchmark"),
        ("report", "--benchmark", "--only_benchmark"),
    ],
)
def test_the_benchmark_spellings_that_meant_otherwise_are_renamed(parsers, command, old, new):
    action = parsers[command]._option_string_actions[old]
    assert isinstance(action, flags.DeprecatedAlias)
    assert action.canonical.option_strings == [new]


def test_metric_names_rows_and_score_file_asks_for_them(parsers):
    # `--metric` names the score-file rows in every command; where a command writes other
    # rows too, `--score_file` is what asks for score-file rows.
    with_own_rows = {"score", "explain", "t5x-explanations"}
    for name in with_own_rows:
        assert "--score_file" in parsers[name]._option_string_actions
        assert parsers[name]._option_string_actions["--metric"].default is None
    helps = {
        name: parser._option_string_actions["--metric"].help
        for name, parser in parsers.items()
        if "--metric" in parser._option_string_actions
    }
    assert all("metric name" in text for text in helps.values()), helps


def test_output_is_a_file_and_dtype_auto_chooses_for_the_command_s_platform(parsers):
    # import-scores --metal_llm writes a folder: --output_dir, as every command spells one.
    assert "folder" not in parsers["import-scores"]._option_string_actions["--output"].help
    assert "--output_dir" in parsers["import-scores"]._option_string_actions
    # plan runs on no platform of its own: --help offers no `auto`.
    assert parsers["plan"]._option_string_actions["--dtype"].metavar == "{float32,bfloat16}"
    assert "auto" not in parsers["plan"]._option_string_actions["--dtype"].help

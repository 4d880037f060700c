"""One name per concept, on the command line and in Python: each public function a command
calls takes the command's flags under the same names (the flag `--input_length` is the
parameter `input_length`), and every parameter a user sets has its flag."""

from __future__ import annotations

import argparse
import dataclasses
import inspect

import pytest

from seahorse_t5x import cli
from seahorse_t5x.inference import explain, score_file, scorer, settings
from seahorse_t5x.scoring import evaluate

# Parameters that are Python's own (callbacks, an already built object, the deprecated
# spelling of a parameter, **kwargs).
_PYTHON_ONLY = {
    "settings",
    "progress",
    "on_chunk",
    "question",
    "setting_values",
    "log",
}
# Flags that only the command line needs: its output, the cache switch's other half, and the
# user's modules `evaluate` imports.
_CLI_ONLY = {"verbose", "no_compilation_cache", "module"}


def _flags(command: str) -> set[str]:
    parser = cli.subcommand_parser(command)
    return {
        a.dest
        for a in parser._actions  # noqa: SLF001
        if a.dest != "help" and a.help is not argparse.SUPPRESS
    }


def _parameters(function) -> set[str]:
    return set(inspect.signature(function).parameters)


SETTING_FIELDS = {f.name for f in dataclasses.fields(settings.ScoringSettings)}


@pytest.mark.parametrize(
    "command, function, cli_only, python_only",
    [
        # `score --score_file` asks for score-file rows; in Python, `metric=` given asks.
        # `benchmark=` is the deprecated spelling of `rows_benchmark=`.
        ("score", score_file.score_file, {"score_file"}, {"benchmark"}),
        ("evaluate", evaluate.evaluate_checkpoint, set(), set()),
        # `explain --score_file` as `score --score_file`.
        ("explain", explain.explain_file, {"score_file"}, {"benchmark"}),
    ],
)
def test_a_command_and_its_function_share_their_names(command, function, cli_only, python_only):
    flags = _flags(command) - _CLI_ONLY - cli_only
    parameters = _parameters(function) - _PYTHON_ONLY - python_only
    assert flags - (parameters | SETTING_FIELDS) == set(), (
        f"{command}: flags without a parameter of that name"
    )
    assert parameters - _flags(command) == set(), (
        f"{function.__name__}: parameters without a flag of that name"
    )


def test_scorer_takes_the_scoring_settings_under_their_names():
    # The Scorer's arguments are the settings' (the mesh comes as a Mesh, not its shape).
    parameters = _parameters(scorer.Scorer.__init__) - {"self", "checkpoint"}
    # Long inputs are scored by `score_windows`, which takes the window settings.
    windowing = {"long_inputs", "window_overlap", "window_aggregate"}
    assert SETTING_FIELDS - windowing - parameters == set()
    assert windowing - {"long_inputs"} <= _parameters(scorer.Scorer.score_windows)
    assert set(settings.ScoringSettings().scorer_arguments()) <= parameters
    # `questions` is one concept in every entry point.
    assert "questions" in _parameters(scorer.Scorer.from_pretrained)
    assert "questions" in _parameters(scorer.score_questions)
    assert "questions" in _parameters(score_file.score_file)
    assert "questions" in _flags("score")


def test_explain_takes_the_mesh_as_score_does():
    # One name for the device mesh: the setting `score_file` takes, the flag `score` and
    # `explain` show, the parameter `explain_file` takes (the same `data=N,model=M` text).
    assert "mesh" in SETTING_FIELDS
    assert "mesh" in _flags("score") and "mesh" in _flags("explain")
    assert "mesh" in _parameters(explain.explain_file)
    metavars = {
        command: cli.subcommand_parser(command)._option_string_actions["--mesh"].metavar  # noqa: SLF001
        for command in ("score", "explain")
    }
    assert len(set(metavars.values())) == 1, metavars


def test_evaluate_with_a_scorer_names_its_arguments_as_the_command_does():
    # `evaluate(scorer, tasks, split, output_dir, metric, max_examples, ...)`.
    named = _parameters(evaluate.evaluate) - {"scorer", "run_info", "window_settings"}
    assert named - _PYTHON_ONLY - _flags("evaluate") == set()

"""Every flag of every `seahorse-t5x` command: help text, its default shown in `--help`, one
spelling per concept across commands, and the older spellings still accepted with a note."""

import argparse
import dataclasses

import pytest

from seahorse_t5x import cli, constants
from seahorse_t5x.cli import flags
from seahorse_t5x.runner import gin_config, trainer

# Concept -> (its flag, the commands that have it, spellings no command may show for it).
CONCEPTS: dict[str, tuple[str, set[str], set[str]]] = {
    "input length": (
        "--input_length",
        {"score", "evaluate", "plan"},
        {"--max_input_length", "--max_length", "--sequence_length", "--inputs_length"},
    ),
    "metric name": (
        "--metric",
        {"score", "evaluate", "import-scores", "t5x-scores"},
        {"--metric_name", "--name", "--metric_id"},
    ),
    "prepared data folder": (
        "--data_dir",
        {"baselines", "report", "import-scores", "t5x-scores"},
        {"--dataset", "--dataset_dir", "--prepared_dir", "--prepared"},
    ),
    "device mesh": (
        "--mesh",
        {"score", "evaluate", "plan"},
        {"--mesh_shape", "--model_parallel", "--data_parallel", "--num_partitions"},
    ),
    "compute dtype": (
        "--dtype",
        {"score", "evaluate", "plan", "demo"},
        {"--compute_dtype", "--activation_dtype"},
    ),
    "weights dtype": (
        "--param_dtype",
        {"score", "evaluate", "plan"},
        {"--params_dtype", "--weight_dtype", "--weights_dtype"},
    ),
    "vocabulary": (
        "--vocab",
        {"score", "evaluate", "baselines"},
        {"--vocabulary", "--vocab_path", "--spm", "--sentencepiece_model"},
    ),
    "truncation": ("--truncation", {"score", "evaluate"}, {"--truncate", "--truncation_mode"}),
    "user modules": (
        "--module",
        {"train", "evaluate", "t5x-scores"},
        {"--modules", "--user_module"},
    ),
    "batch size": ("--batch_size", {"score", "evaluate", "plan"}, {"--batch", "--rows"}),
}
# (command, older spelling) -> the flag it stands for: hidden, accepted with a note.
ALIASES: dict[tuple[str, str], str] = {
    ("score", "--max_input_length"): "--input_length",
    ("evaluate", "--metric_name"): "--metric",
    ("report", "--dataset"): "--data_dir",
}
# Flags whose default is the same in every command that has them. (`--dtype`: `auto` where
# the run's own platform decides, in `score` and `evaluate`; `plan` plans for another
# platform, in float32 unless told.)
SAME_DEFAULT = ("--param_dtype", "--truncation", "--vocab")
# The flags each command needs to parse at all, for the alias tests.
REQUIRED = {
    "score": ["--checkpoint", "c", "--input", "i", "--output", "o"],
    "evaluate": ["--checkpoint", "c", "--tasks", "t", "--output_dir", "o"],
    "report": ["--output_dir", "o"],
}
# An alias's value on the command line and as the command receives it.
ALIAS_VALUES = {
    "--max_input_length": ("64", 64),
    "--metric_name": ("m", "m"),
    "--dataset": ("d", "d"),
}


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, as `seahorse-t5x` builds it."""
    parser = cli.build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    built = dict(subparsers.choices)
    assert set(built) == set(cli.SUBCOMMANDS)
    return built


def _options(parser: argparse.ArgumentParser):
    """(option string, action) of every flag but -h/--help."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        for option in action.option_strings:
            yield option, action


def _visible(parser: argparse.ArgumentParser) -> set[str]:
    return {o for o, a in _options(parser) if a.help is not argparse.SUPPRESS}


def _expanded_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help exactly as `--help` prints it (before line wrapping)."""
    return parser._get_formatter()._expand_help(action)


def test_every_flag_has_help_text(parsers):
    missing = [
        f"{name} {option}"
        for name, parser in parsers.items()
        for option, action in _options(parser)
        if not isinstance(action, flags.DeprecatedAlias)
        and (action.help is None or action.help is argparse.SUPPRESS or not action.help.strip())
    ]
    assert missing == []


def test_help_shows_every_default(parsers):
    missing = []
    for name, parser in parsers.items():
        for option, action in _options(parser):
            default = action.default
            # (`is`: a default of 0 must be shown, though 0 == False.)
            if isinstance(action, flags.DeprecatedAlias) or default is None or default is False:
                continue
            if default == []:  # nothing given: the help says what an empty list means
                continue
            if f"(default: {default})" not in _expanded_help(parser, action):
                missing.append(f"{name} {option}: {default!r}")
    assert missing == []


def test_help_output_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        cli.main(["report", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert "(default: language,dataset,system)" in out and "(default: 1000)" in out
    with pytest.raises(SystemExit):
        cli.main(["plan", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for shown in ("(default: 2048)", "(default: 4)", "(default: float32)", "(default: 0.1)"):
        assert shown in out


def test_one_spelling_per_concept(parsers):
    for concept, (flag, commands, _) in CONCEPTS.items():
        having = {name for name, parser in parsers.items() if flag in _visible(parser)}
        assert having == commands, concept
    old = {o for _, o in ALIASES} | {o for _, _, spellings in CONCEPTS.values() for o in spellings}
    shown = {f"{name} {o}" for name, p in parsers.items() for o in _visible(p) & old}
    assert shown == set()


def test_the_same_concept_has_the_same_default(parsers):
    for flag in SAME_DEFAULT:
        defaults = {
            name: parser._option_string_actions[flag].default
            for name, parser in parsers.items()
            if flag in parser._option_string_actions
        }
        assert len(defaults) >= 2, flag
        assert len(set(defaults.values())) == 1, (flag, defaults)
    dtype = {
        n: p._option_string_actions["--dtype"].default
        for n, p in parsers.items()
        if "--dtype" in p._option_string_actions
    }
    assert dtype == {"score": "auto", "evaluate": "auto", "demo": "auto", "plan": "float32"}
    assert parsers["plan"]._option_string_actions["--input_length"].default == (
        constants.DEFAULT_INPUT_LENGTH
    )


def test_hidden_flags_are_exactly_the_aliases(parsers):
    hidden = {
        (name, option): action
        for name, parser in parsers.items()
        for option, action in _options(parser)
        if action.help is argparse.SUPPRESS
    }
    assert set(hidden) == set(ALIASES)
    for (name, option), action in hidden.items():
        assert isinstance(action, flags.DeprecatedAlias)
        assert action.canonical.option_strings == [ALIASES[name, option]]
        assert action.dest == action.canonical.dest


@pytest.mark.parametrize(("command", "old"), list(ALIASES))
def test_deprecated_alias_works_and_prints_one_note(command, old, capsys):
    new = ALIASES[command, old]
    text, value = ALIAS_VALUES[old]
    parser = cli.build_parser(command)
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    dest = subparsers.choices[command]._option_string_actions[new].dest
    for spelled in ([old, text], [f"{old}={text}"]):
        args = parser.parse_args([command, *REQUIRED[command], *spelled])
        assert getattr(args, dest) == value
        assert old.lstrip("-") not in vars(args)  # the command sees the new name only
        assert capsys.readouterr().err == (
            f"seahorse-t5x {command}: note: {old} is deprecated; use {new}\n"
        )
    # The new spelling: the same value, no note.
    args = parser.parse_args([command, *REQUIRED[command], new, text])
    assert getattr(args, dest) == value
    assert capsys.readouterr().err == ""


def test_deprecated_alias_in_a_run(tmp_path, capsys):
    # `report --dataset DIR`: the folder reaches the report (which finds no split files in
    # it), after the note.
    code = cli.main(["report", "--dataset", str(tmp_path), "--output_dir", str(tmp_path / "o")])
    assert code == 2
    note, error = capsys.readouterr().err.splitlines()
    assert note == "seahorse-t5x report: note: --dataset is deprecated; use --data_dir"
    assert error.startswith("seahorse-t5x report: error: ") and "holds no split files" in error


def test_an_alias_of_a_required_or_unknown_flag_is_refused():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", required=True)
    with pytest.raises(ValueError, match="--data_dir is required"):
        flags.add_alias(parser, "--dataset", "--data_dir")
    with pytest.raises(ValueError, match="no flag --metric"):
        flags.add_alias(parser, "--metric_name", "--metric")


def test_train_help_lists_every_macro_with_train_config_default(parsers, capsys):
    parser = parsers["train"]
    fields = {f.name: f for f in dataclasses.fields(trainer.TrainConfig)}
    for macro in gin_config.MACROS:
        action = parser._option_string_actions[f"--gin.{macro}"]
        text = _expanded_help(parser, action)
        field = fields[macro.lower()]
        if field.default is not dataclasses.MISSING:
            assert text.endswith(f"(default: {field.default!r})"), macro
        elif field.default_factory is not dataclasses.MISSING:
            assert text.endswith(f"(default: {field.default_factory()!r})"), macro
        else:
            assert text.endswith("(required: set it here or in a gin file)"), macro
    assert "data_parallel" in parser._option_string_actions["--gin.MODEL_PARALLEL"].help
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for macro in gin_config.MACROS:
        assert f"--gin.{macro} V" in out
    assert "--gin.BATCH_SIZE V global rows per step (default: 32)" in out
    assert "--gin.LEARNING_RATE_SCHEDULE V `constant`" in out and "(default: 'constant')" in out
    assert "--gin.MODEL_DIR V run directory: checkpoints, logs (required" in out

"""Every flag of every `seahorse-t5x` command: help text, its default shown in `--help`, one
spelling per concept and one concept per spelling across commands, the older spellings
hidden from `--help` but still accepted with a note, and a `--help` that starts neither JAX
nor TensorFlow."""

import argparse
import collections
import dataclasses
import json
import pathlib
import re
import subprocess
import sys

import pytest

from seahorse_t5x import cli, constants
from seahorse_t5x.cli import flags, inference_flags
from seahorse_t5x.inference import precision
from seahorse_t5x.runner import gin_config, train_config

TESTS = pathlib.Path(__file__).resolve().parent
# Concept -> (its flag, the commands that have it, spellings no command may show for it).
CONCEPTS: dict[str, tuple[str, set[str], set[str]]] = {
    "input length": (
        "--input_length",
        {"score", "evaluate", "plan", "explain"},
        {"--max_input_length", "--max_length", "--sequence_length", "--inputs_length"},
    ),
    "metric name": (
        "--metric",
        {"score", "evaluate", "import-scores", "t5x-scores", "t5x-explanations", "explain"},
        {"--metric_name", "--name", "--metric_id"},
    ),
    "prepared data folder": (
        "--data_dir",
        {"evaluate", "baselines", "report", "import-scores", "t5x-scores"},
        {"--dataset", "--dataset_dir", "--prepared_dir", "--prepared"},
    ),
    "device mesh": (
        "--mesh",
        {"score", "evaluate", "plan", "explain"},
        {"--mesh_shape", "--model_parallel", "--data_parallel", "--num_partitions"},
    ),
    "compute dtype": (
        "--dtype",
        {"score", "evaluate", "plan", "demo", "explain"},
        {"--compute_dtype", "--activation_dtype"},
    ),
    "weights dtype": (
        "--param_dtype",
        {"score", "evaluate", "plan"},
        {"--params_dtype", "--weight_dtype", "--weights_dtype"},
    ),
    "vocabulary": (
        "--vocab",
        {"score", "evaluate", "baselines", "explain"},
        {"--vocabulary", "--vocab_path", "--spm", "--sentencepiece_model"},
    ),
    "truncation": ("--truncation", {"score", "evaluate"}, {"--truncate", "--truncation_mode"}),
    "user modules": (
        "--module",
        {"train", "evaluate", "t5x-scores"},
        {"--modules", "--user_module"},
    ),
    "batch size": (
        "--batch_size",
        {"score", "evaluate", "plan", "explain"},
        {"--batch", "--rows"},
    ),
    "model size": ("--size", {"plan"}, {"--model", "--model_size"}),
}
# (command, older spelling) -> the flag it stands for: hidden, accepted with a note.
ALIASES: dict[tuple[str, str], str] = {
    ("score", "--max_input_length"): "--input_length",
    ("score", "--question"): "--questions",
    ("evaluate", "--metric_name"): "--metric",
    ("report", "--dataset"): "--data_dir",
    # Elsewhere --benchmark names a benchmark whose items are read.
    ("score", "--benchmark"): "--rows_benchmark",
    ("plan", "--model"): "--size",
}
# Flags that serve only a deprecated flag, hidden with it (no new spelling stands for them).
HIDDEN_WITH_DEPRECATED = {("import-scores", "--task"), ("import-scores", "--join_by_position")}
# Flags whose default is the same in every command that has them. (`--dtype`: `auto` where
# the run's own platform decides, in `score` and `evaluate`; `plan` plans for another
# platform, in float32 unless told.)
SAME_DEFAULT = ("--param_dtype", "--truncation", "--vocab")
# The flags each command needs to parse at all, for the alias tests.
REQUIRED = {
    "score": ["--checkpoint", "c", "--input", "i", "--output", "o"],
    "evaluate": ["--checkpoint", "c", "--tasks", "t", "--output_dir", "o"],
    "report": ["--output_dir", "o"],
    "plan": ["--mesh", "data=1", "--batch_size", "8"],
}
# An alias's value on the command line and as the command receives it.
ALIAS_VALUES = {
    "--max_input_length": ("64", 64),
    "--question": ("4", "4"),
    "--metric_name": ("m", "m"),
    "--benchmark": ("frank", "frank"),
    "--dataset": ("d", "d"),
    "--model": ("xl", "xl"),
}


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, as `seahorse-t5x COMMAND` builds it."""
    return {name: cli.subcommand_parser(name) for name in cli.SUBCOMMANDS}


def _options(parser: argparse.ArgumentParser):
    """(option string, action) of every flag but -h/--help."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        for option in action.option_strings:
            yield option, action


def _visible(parser: argparse.ArgumentParser) -> set[str]:
    return {o for o, a in _options(parser) if a.help is not argparse.SUPPRESS}


_DEPRECATED = (flags.DeprecatedAlias, flags.DeprecatedFlag)


def _deprecated(parsers) -> list[tuple[str, str, argparse.Action]]:
    """(command, older spelling, its action) of every deprecated spelling of every command."""
    return [
        (name, option, action)
        for name, parser in parsers.items()
        for option, action in _options(parser)
        if isinstance(action, _DEPRECATED)
    ]


def _expanded_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help exactly as `--help` prints it (before line wrapping)."""
    return parser._get_formatter()._expand_help(action)


def test_every_flag_has_help_text(parsers):
    missing = [
        f"{name} {option}"
        for name, parser in parsers.items()
        for option, action in _options(parser)
        if not isinstance(action, _DEPRECATED)
        and (name, option) not in HIDDEN_WITH_DEPRECATED
        and (action.help is None or action.help is argparse.SUPPRESS or not action.help.strip())
    ]
    assert missing == []


def test_help_shows_every_default(parsers):
    missing = []
    for name, parser in parsers.items():
        for option, action in _options(parser):
            default = action.default
            # (`is`: a default of 0 must be shown, though 0 == False.)
            if isinstance(action, _DEPRECATED) or default is None or default is False:
                continue
            if default == []:  # nothing given: shown as `(default: none)`, below
                continue
            if f"(default: {default})" not in _expanded_help(parser, action):
                missing.append(f"{name} {option}: {default!r}")
    assert missing == []


def test_every_optional_flag_says_its_default(parsers):
    # A value or, for an option that is off unless given, `(default: none)` or words that
    # say what happens without it; a switch (store_true) is off by default.
    missing = []
    for name, parser in parsers.items():
        for option, action in _options(parser):
            if isinstance(action, _DEPRECATED) or action.required or action.nargs == 0:
                continue
            text = _expanded_help(parser, action)
            if "default" not in text and "required" not in text:
                missing.append(f"{name} {option}")
    assert missing == []
    run_dir = parsers["demo"]._option_string_actions["--train_steps"]
    assert _expanded_help(parsers["demo"], run_dir).endswith("(default: 1600)")
    module = parsers["train"]._option_string_actions["--module"]
    assert _expanded_help(parsers["train"], module).endswith("(repeatable) (default: none)")


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
    assert "--size SIZE mT5 size: tiny, small, base, large, xl, xxl (required)" in out


def test_one_spelling_per_concept(parsers):
    for concept, (flag, commands, _) in CONCEPTS.items():
        having = {name for name, parser in parsers.items() if flag in _visible(parser)}
        assert having == commands, concept
    old = {o for _, o in ALIASES} | {o for _, _, spellings in CONCEPTS.values() for o in spellings}
    shown = {f"{name} {o}" for name, p in parsers.items() for o in _visible(p) & old}
    # An older spelling that another concept keeps: shown by the commands of that concept.
    kept = {f"{name} --benchmark" for name in ("evaluate", "baselines", "import-scores")}
    assert shown == kept


def test_flag_spellings_are_unique_across_commands(parsers):
    # One concept (the name a command receives, `dest`) has one visible spelling in every
    # command, and one spelling names one concept, of one type, in every command.
    spellings = collections.defaultdict(set)  # dest -> visible spellings
    meanings = collections.defaultdict(set)  # spelling -> (dest, type)
    for parser in parsers.values():
        for option, action in _options(parser):
            if action.help is argparse.SUPPRESS or option == "--verbose":
                continue
            spellings[action.dest].add(option)
            meanings[option].add((action.dest, getattr(action.type, "__name__", None)))
    assert {d: s for d, s in spellings.items() if len(s) > 1} == {}
    assert {o: m for o, m in meanings.items() if len(m) > 1} == {}


def test_extending_doc_names_the_commands_that_take_module(parsers):
    text = " ".join((TESTS.parent / "docs" / "extending.md").read_text().split())
    listed = re.search(r"Every command that resolves task names \(([^)]*)\) takes", text)
    assert listed, "docs/extending.md no longer lists the commands that take --module"
    named = set(re.findall(r"`([a-z0-9-]+)`", listed.group(1)))
    assert named == CONCEPTS["user modules"][1]


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
    assert dtype == {
        "score": "auto",
        "evaluate": "auto",
        "demo": "auto",
        "explain": "auto",
        "plan": "float32",
    }
    # Every command takes the same dtypes, `auto` included (`plan --dtype auto`, which chose
    # for another platform than the command's, is deprecated: hidden from --help).
    for name in dtype:
        assert parsers[name]._option_string_actions["--dtype"].choices == precision.CHOICES, name
    assert parsers["plan"]._option_string_actions["--dtype"].metavar == "{float32,bfloat16}"
    assert parsers["plan"]._option_string_actions["--input_length"].default == (
        constants.DEFAULT_INPUT_LENGTH
    )


def test_hidden_flags_are_exactly_the_deprecated_spellings(parsers):
    hidden = {
        (name, option): action
        for name, parser in parsers.items()
        for option, action in _options(parser)
        if action.help is argparse.SUPPRESS
    }
    deprecated = {(name, option) for name, option, _ in _deprecated(parsers)}
    assert set(hidden) == deprecated | HIDDEN_WITH_DEPRECATED
    assert set(ALIASES) <= deprecated
    for (name, option), new in ALIASES.items():
        action = hidden[name, option]
        assert isinstance(action, flags.DeprecatedAlias)
        assert action.canonical.option_strings == [new]
        assert action.dest == action.canonical.dest


def _spelled_out(word: str, text: str) -> bool:
    """Whether `text` holds the flag `word` itself (not as the start of a longer flag)."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def test_no_deprecated_spelling_in_help(parsers):
    deprecated = _deprecated(parsers)
    assert {(name, option) for name, option, _ in deprecated} >= set(ALIASES)
    shown = [
        f"{name} {option}"
        for name, option, _ in deprecated
        if _spelled_out(option, parsers[name].format_help())
    ]
    assert shown == []


def _value(action: argparse.Action) -> list[str]:
    """A value `action` accepts, as command-line words."""
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(list(action.choices)[-1])]
    if action.type in (int, inference_flags.batch_size_flag):
        return ["3"]
    if action.type is float:
        return ["0.5"]
    return ["v"]


def _required_words(parser: argparse.ArgumentParser) -> list[str]:
    """The flags (with a value each) a command needs to parse at all."""
    words = []
    for action in parser._actions:
        if action.required and action.option_strings:
            words += [action.option_strings[0], *_value(action)]
    return words


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


def test_every_deprecated_spelling_still_works_with_one_note(parsers, capsys):
    # Every command's older spellings, whoever added them: the same values as the new
    # spelling (an alias) or as given (a flag whose work moved), after one note.
    for name, old, action in _deprecated(parsers):
        parser = parsers[name]
        given = _value(action.canonical if isinstance(action, flags.DeprecatedAlias) else action)
        args = parser.parse_args([*_required_words(parser), old, *given])
        note = capsys.readouterr().err
        if isinstance(action, flags.DeprecatedAlias):
            new = action.canonical.option_strings[0]
            assert note == f"seahorse-t5x {name}: note: {old} is deprecated; use {new}\n"
            expected = parser.parse_args([*_required_words(parser), new, *given])
            assert vars(args) == vars(expected), (name, old)
        else:
            assert note == (
                f"seahorse-t5x {name}: note: {old} is deprecated; use {action.instead}\n"
            )
            if action.nargs in ("+", "*"):
                assert getattr(args, action.dest) == given, (name, old)
            else:
                assert getattr(args, action.dest) == (given[0] if given else action.const)
        capsys.readouterr()


def test_deprecated_alias_in_a_run(tmp_path, capsys):
    # `report --dataset DIR`: the folder reaches the report (which finds no split files in
    # it), after the note.
    code = cli.main(["report", "--dataset", str(tmp_path), "--output_dir", str(tmp_path / "o")])
    assert code == 2
    note, error = capsys.readouterr().err.splitlines()
    assert note == "seahorse-t5x report: note: --dataset is deprecated; use --data_dir"
    assert error.startswith("seahorse-t5x report: error: ") and "holds no split files" in error


# What `--help` may import: argparse, the flags' own modules, numpy (input formats), gin.
_HEAVY = ("jax", "tensorflow", "seqio", "flax", "orbax")
_HELP_PROBE = f"""
import contextlib, io, json, sys
from seahorse_t5x import cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        cli.main(sys.argv[1:])
    except SystemExit as e:
        code = e.code
heavy = [m for m in {_HEAVY!r} if m in sys.modules]
print(json.dumps({{"code": code, "usage": out.getvalue().startswith("usage:"), "heavy": heavy}}))
"""


@pytest.mark.parametrize("command", [None, *cli.SUBCOMMANDS])
def test_help_imports_neither_jax_nor_tensorflow(command):
    argv = [command, "--help"] if command else ["--help"]
    done = subprocess.run(
        [sys.executable, "-c", _HELP_PROBE, *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"code": 0, "usage": True, "heavy": []}


def test_python_m_seahorse_t5x_help_imports_neither_jax_nor_tensorflow():
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['seahorse_t5x', '--help']\n"
        "try:\n    runpy.run_module('seahorse_t5x', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print([m for m in {_HEAVY!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: seahorse-t5x")
    assert done.stdout.splitlines()[-1] == "[]"


def test_an_alias_of_a_required_or_unknown_flag_is_refused():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", required=True)
    with pytest.raises(ValueError, match="--data_dir is required"):
        flags.add_alias(parser, "--dataset", "--data_dir")
    with pytest.raises(ValueError, match="no flag --metric"):
        flags.add_alias(parser, "--metric_name", "--metric")


def test_train_help_lists_every_macro_with_train_config_default(parsers, capsys):
    parser = parsers["train"]
    fields = {f.name: f for f in dataclasses.fields(train_config.TrainConfig)}
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


# Flags that name where data is read or written, in every command that has them.
LOCATION_FLAGS = {
    "--articles",
    "--benchmark",
    "--benchmark_path",
    "--checkpoint",
    "--compilation_cache",
    "--data_dir",
    "--duplicates",
    "--external",
    "--includes",
    "--infer_output",
    "--input",
    "--metal_llm",
    "--only_benchmark",
    "--output",
    "--output_dir",
    "--scores",
    "--seahorse_dir",
    "--vocab",
    "--xlsum_articles",
    # deprecated spellings that name a benchmark's files
    "--mface",
    "--metal",
    "--true_dir",
    "--t5x_infer",
}
# Repeatable on purpose (one value per item, paired by position or read in order), or a
# name the rows carry rather than data read (`score --benchmark`, the older spelling of
# `--rows_benchmark`).
_NOT_ONCE = {
    ("prepare", "--articles"),
    ("baselines", "--benchmark_path"),  # one per --benchmark (a LocationList)
    ("report", "--benchmark_path"),
    ("score", "--benchmark"),
    ("explain", "--benchmark"),
    ("t5x-explanations", "--benchmark"),
}


def test_every_flag_naming_a_data_location_is_given_once(parsers):
    """Each is declared with the shared action, so a second value is refused, never kept
    in place of the first."""
    declared = set()
    for name, parser in parsers.items():
        for option, action in _options(parser):
            if option not in LOCATION_FLAGS or (name, option) in _NOT_ONCE:
                continue
            declared.add(option)
            if isinstance(action, flags.DeprecatedAlias):
                action = action.canonical
            once = isinstance(action, flags.Location | flags.LocationList) or (
                isinstance(action, flags.DeprecatedFlag) and action.location
            )
            assert once, f"{name} {option}: declare it with action=flags.Location"
    assert declared == LOCATION_FLAGS


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["report", "--scores", "a/", "b.jsonl", "--scores", "c/", "--output_dir", "o"],
            "argument --scores: given twice (--scores a/ b.jsonl, then --scores c/): give it "
            "once (several values go after one flag)",
        ),
        (
            [
                "report",
                "--scores",
                "a/",
                "--data_dir",
                "d1",
                "--dataset",
                "d2",
                "--output_dir",
                "o",
            ],
            "argument --data_dir: given twice (--data_dir d1, then --data_dir d2)",
        ),
        (
            [
                "baselines",
                "--benchmark",
                "frank",
                "--benchmark_path",
                "A",
                "--benchmark",
                "frank",
                "--benchmark_path",
                "B",
                "--output_dir",
                "o",
            ],
            "argument --benchmark: frank given twice: name each once",
        ),
        (
            ["baselines", "--true_dir", "A", "--true_dir", "B", "--output_dir", "o"],
            "argument --true_dir: given twice (--true_dir A, then --true_dir B)",
        ),
        (
            [
                "score",
                "--checkpoint",
                "m",
                "--input",
                "a.jsonl",
                "--output",
                "o.jsonl",
                "--output",
                "p.jsonl",
            ],
            "argument --output: given twice (--output o.jsonl, then --output p.jsonl)",
        ),
        (
            [
                "evaluate",
                "--checkpoint",
                "m",
                "--tasks",
                "t",
                "--output_dir",
                "o",
                "--benchmark",
                "frank",
                "--benchmark",
                "true",
            ],
            "argument --benchmark: given twice (--benchmark frank, then --benchmark true)",
        ),
    ],
)
def test_a_location_given_twice_is_refused_at_parsing(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "note:" not in line]
    assert len(lines) == 1 and message in lines[0], lines


def test_the_same_location_twice_with_the_same_value_is_one(parsers):
    args = parsers["report"].parse_args(
        [
            "--scores",
            "a/",
            "--scores",
            "a/",
            "--data_dir",
            "d",
            "--data_dir",
            "d",
            "--output_dir",
            "o",
        ]
    )
    assert (args.scores, args.data_dir) == (["a/"], "d")


def test_a_benchmark_named_by_two_flags_is_refused_before_anything_is_read(tmp_path, capsys):
    first, second = tmp_path / "a", tmp_path / "b"
    argv = ["baselines", "--true_dir", str(first), "--benchmark", "true", "--benchmark_path"]
    argv += [str(second), "--output_dir", str(tmp_path / "out"), "--vocab", "demo"]
    assert cli.main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "note:" not in line]
    assert lines == [
        f"seahorse-t5x baselines: error: --benchmark true --benchmark_path {second}: benchmark "
        f"true is named twice (also by --true_dir {first}): name each benchmark once, with one "
        "path"
    ]
    assert not (tmp_path / "out").exists()

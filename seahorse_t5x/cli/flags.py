"""Flags that several commands share, each defined once, and the older spellings of flags.

One concept has one spelling in every command (`--input_length`, `--metric`, `--data_dir`,
`--module`, ...), and one spelling one meaning in every command that shows it
(docs/commands.md, "Flags shared by several commands": `--metric` names score-file rows,
`--score_file` asks for them, `--benchmark` names a benchmark whose items are read). A
spelling that was renamed keeps working as a hidden alias (`add_alias`): it does what the
new flag does, after one line on stderr,

    seahorse-t5x score: note: --max_input_length is deprecated; use --input_length

A flag whose work moved to another command keeps working, with the same kind of note
naming the command (`DeprecatedFlag`):

    seahorse-t5x import-scores: note: --t5x_infer is deprecated; use seahorse-t5x t5x-scores

`HelpFormatter` ends every option's help with its default, so `--help` shows them all.
Deprecated spellings (`DeprecatedAlias`, `DeprecatedFlag`) are hidden from `--help`.

A flag that names where data is (a file or folder to read or write, a checkpoint, a
benchmark) is declared with `action=Location` (or `LocationList` where it repeats, one
value per item): given twice with different values it is refused in one line, where
argparse would keep the last silently,

    seahorse-t5x report: error: argument --scores: given twice (a/, then b/): give it once
    (several values go after one --scores)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's line breaks and ends each option's help with
    `(default: VALUE)`, or `(default: none)` for an option that is off unless given (None,
    an empty list), unless the help already says what the default is or that the option is
    required. A switch (`store_true`) shows none: off is its default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or "default" in text
            or "required" in text
            or action.required
            or default is False
            or default is argparse.SUPPRESS
        ):
            return text
        if default is None or default == []:
            return f"{text} (default: none)"
        return f"{text} (default: %(default)s)"


# Where a parse keeps the location flags given so far: {dest: (flag, value)}.
_LOCATIONS_GIVEN = "_location_flags_given"


def _shown(value: object) -> str:
    return " ".join(value) if isinstance(value, list | tuple) else str(value)


def refuse_second_location(
    action: argparse.Action, namespace: argparse.Namespace, value: object, option: str | None
) -> None:
    """Records `value` for `action`'s flag in this parse; a second, different one is refused.

    Raises:
      argparse.ArgumentError: the flag was given before with another value (argparse prints
        it in one line, exit code 2).
    """
    given = getattr(namespace, _LOCATIONS_GIVEN, None)
    if given is None:
        given = {}
        setattr(namespace, _LOCATIONS_GIVEN, given)
    earlier = given.get(action.dest)
    if earlier is not None and earlier[1] != value:
        several = " (several values go after one flag)" if action.nargs in ("+", "*") else ""
        raise argparse.ArgumentError(
            action,
            f"given twice ({earlier[0]} {_shown(earlier[1])}, then {option} {_shown(value)}): "
            f"give it once{several}",
        )
    given[action.dest] = (option, value)


class Location(argparse.Action):
    """`store` for a flag that names where data is (module docstring): a second occurrence
    with another value is refused rather than replacing the first."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        refuse_second_location(self, namespace, values, option_string)
        setattr(namespace, self.dest, values)


class LocationList(argparse.Action):
    """`append` for a repeatable flag whose each value names one data location or
    benchmark (`baselines --benchmark`): the same value twice is refused, since the
    command would keep only one of them (and its `--benchmark_path`)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        items = list(getattr(namespace, self.dest, None) or [])
        if values in items:
            raise argparse.ArgumentError(
                self,
                f"{values} given twice: name each once (a second one would replace the first, "
                "with its path)",
            )
        setattr(namespace, self.dest, [*items, values])


class DeprecatedAlias(argparse.Action):
    """An older spelling of a flag: does what the flag does, after a one-line note on stderr.

    Hidden from `--help` and from the usage line; it writes to the flag's `dest`, so the
    command sees only the new name.
    """

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        canonical: argparse.Action,
        **kwargs: object,
    ) -> None:
        del kwargs  # the alias takes everything from the flag it stands for
        super().__init__(
            option_strings,
            dest,
            nargs=canonical.nargs,
            const=canonical.const,
            default=argparse.SUPPRESS,  # the flag's own default stands
            type=canonical.type,
            choices=canonical.choices,
            metavar=canonical.metavar,
            help=argparse.SUPPRESS,
        )
        self.canonical = canonical

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        new = self.canonical.option_strings[0]
        note_deprecated(parser.prog, option_string, new)
        self.canonical(parser, namespace, values, new)


def note_deprecated(prog: str, old: str, new: str) -> None:
    """The one-line note on stderr for a deprecated spelling: `PROG: note: OLD is
    deprecated; use NEW` (NEW: a flag, or the command that now does the work)."""
    print(f"{prog}: note: {old} is deprecated; use {new}", file=sys.stderr)


class DeprecatedFlag(argparse.Action):
    """A flag whose work another command now does: stores its value as given (like
    `store`), after a one-line note on stderr naming that command (`instead`); with
    `location`, a second, different value is refused as `Location` refuses it.

    Hidden from `--help` like `DeprecatedAlias` (whatever `help` it is given): a user
    finds the command that does the work, not the old flag.
    """

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        instead: str,
        location: bool = False,
        **kwargs: object,
    ) -> None:
        kwargs["help"] = argparse.SUPPRESS
        super().__init__(option_strings, dest, **kwargs)
        self.instead = instead
        self.location = location

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        note_deprecated(parser.prog, option_string, self.instead)
        if self.location:  # a data location: given once, as `Location`
            refuse_second_location(self, namespace, values, option_string)
        setattr(namespace, self.dest, values)


def add_alias(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Makes `old` a hidden, deprecated spelling of the flag `new` (already added).

    Raises:
      ValueError: when `new` is not a flag of `parser`, or is required (argparse would ask
        for it even when the alias is given).
    """
    canonical = parser._option_string_actions.get(new)  # noqa: SLF001 - argparse's flag index
    if canonical is None:
        raise ValueError(f"{parser.prog} has no flag {new} to alias as {old}")
    if canonical.required:
        raise ValueError(f"{new} is required: an alias {old} could not stand in for it")
    parser.add_argument(old, dest=canonical.dest, action=DeprecatedAlias, canonical=canonical)


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1 (a count that 0 or less would empty),
    refused at parsing, before any data or model is read."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer of at least 1, got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 1, got {value}")
    return value


def add_module(parser: argparse.ArgumentParser) -> None:
    """`--module`: the user's own modules (task registrations), imported before any task
    name is resolved (`seahorse_t5x.tasks.user_modules.import_modules`)."""
    parser.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="NAME_OR_FILE.py",
        help="a Python module to import first, by name (found on PYTHONPATH or in the current "
        "folder) or as a .py file: e.g. one that registers your own SeqIO tasks (repeatable)",
    )


def add_score_file(parser: argparse.ArgumentParser, row: str) -> None:
    """`--score_file`: the command writes score-file rows for `report` (`row`: what one
    stands for), each carrying `--metric` and `--rows_benchmark`, instead of its own rows."""
    parser.add_argument(
        "--score_file",
        action="store_true",
        help=f"write a score file for `report` instead: one row per {row}, carrying "
        "--metric and --rows_benchmark",
    )


def add_rows_benchmark(parser: argparse.ArgumentParser, default: str, names: str) -> None:
    """`--rows_benchmark NAME`: the benchmark the rows of `--score_file` carry (`names`: what
    it may be; `default`: when not given). Its older spelling `--benchmark` is a hidden
    alias: elsewhere `--benchmark` names a benchmark whose items the command reads."""
    parser.add_argument(
        "--rows_benchmark",
        default=None,
        metavar="NAME",
        help=f"with --score_file: the benchmark the score-file rows carry, {names} "
        f"(default: {default})",
    )
    add_alias(parser, "--benchmark", "--rows_benchmark")


def score_file_rows(
    args: argparse.Namespace, prog: str, default_benchmark: str
) -> tuple[str | None, str]:
    """(metric, benchmark) of the score-file rows that `--score_file`, `--metric` and
    `--rows_benchmark` ask for; metric None: the command's own rows. `--metric` alone, its
    older way to ask, still writes them after a one-line note.

    Raises:
      UserError: `--score_file` without `--metric`, or `--rows_benchmark` without them.
    """
    from seahorse_t5x import errors

    score_file = args.score_file
    if args.metric is not None and not score_file:
        note_deprecated(prog, "--metric without --score_file", "--score_file --metric NAME")
        score_file = True
    if args.rows_benchmark is not None and not score_file:
        raise errors.UserError(
            "--rows_benchmark names the benchmark of the score-file rows --score_file writes: "
            "give --score_file --metric NAME too, or leave --rows_benchmark out"
        )
    if score_file and args.metric is None:
        raise errors.UserError(
            "--score_file writes score-file rows, which carry a metric name: give --metric NAME"
        )
    return (args.metric if score_file else None), args.rows_benchmark or default_benchmark


def add_distributed(parser: argparse.ArgumentParser, work: str) -> None:
    """`--coordinator_address`, `--num_processes`, `--process_id`: joining a multi-host run
    (`partitioning.maybe_initialize_distributed`); `work` names what the hosts do."""
    parser.add_argument(
        "--coordinator_address",
        default=None,
        metavar="HOST:PORT",
        help=f"host:port (or `auto`) of process 0, to {work} across hosts with "
        "jax.distributed (default: one host)",
    )
    parser.add_argument(
        "--num_processes",
        type=int,
        default=None,
        metavar="N",
        help="with --coordinator_address HOST:PORT: how many hosts take part (default: "
        "found by JAX, as with `auto` on Cloud TPU)",
    )
    parser.add_argument(
        "--process_id",
        type=int,
        default=None,
        metavar="I",
        help="with --coordinator_address HOST:PORT: this host's index, 0 to N-1 (default: "
        "found by JAX, as with `auto` on Cloud TPU)",
    )


def add_benchmark(
    parser: argparse.ArgumentParser,
    repeatable: bool = False,
    articles: bool = True,
    choices: Sequence[str] | None = None,
) -> None:
    """`--benchmark NAME` and `--benchmark_path PATH`: a registered benchmark
    (`seahorse_t5x.data.benchmarks.registry`) and its file or folder (default: its
    environment variable, docs/benchmarks.md); `--articles PATH` for a benchmark whose file
    lacks them (SummEval's unpaired file). Repeatable where a command takes several
    (each path goes with the benchmark in the same position). `choices`: the names
    `--benchmark` takes (default: the registered benchmarks, `registry.names()`; a command
    that also reads SEAHORSE's rows passes `registry.choices()`)."""
    from seahorse_t5x.data.benchmarks import registry

    choices = list(registry.names() if choices is None else choices)
    several = " (repeatable)" if repeatable else ""
    parser.add_argument(
        "--benchmark_path",
        action="append" if repeatable else Location,
        metavar="PATH",
        help="the benchmark's file or folder as released, e.g. SummEval's "
        "model_annotations.aligned.paired.jsonl or FRANK's data/ folder (default: its "
        f"environment variable, e.g. $SEAHORSE_SUMMEVAL_PATH){several}",
    )
    if articles:
        parser.add_argument(
            "--articles",
            action=Location,
            metavar="PATH",
            help="summeval: CNN/DM articles (JSON Lines of id and text) for the unpaired "
            "model_annotations.aligned.jsonl",
        )
    parser.add_argument(
        "--benchmark",
        action=LocationList if repeatable else Location,
        choices=choices,
        metavar="NAME",
        help=f"a registered benchmark: {', '.join(choices)}{several}",
    )


def requested_benchmarks(
    args: argparse.Namespace,
    also: Sequence[tuple[str, str, str]] = (),
    flag: str = "--benchmark",
) -> list[tuple[str, str | None, str]]:
    """(name, path or None, the flags as given) for each `flag` (`--benchmark` of a
    repeatable `add_benchmark`, `report --only_benchmark`) with its `--benchmark_path`,
    after `also` (the same for the deprecated flags that name one).

    Raises:
      UserError: `--benchmark_path` given, but not once per `flag`; or one benchmark
        named by two flags (`--true_dir DIR` and `--benchmark true`), whose second path
        would replace the first.
    """
    from seahorse_t5x import errors

    names = getattr(args, flag.removeprefix("--")) or []
    paths = args.benchmark_path or []
    if paths and len(paths) != len(names):
        raise errors.UserError(
            f"--benchmark_path given {len(paths)} times for {len(names)} {flag}: give one "
            "path per benchmark, in the same order (or none, to use their environment variables)"
        )
    out = list(also)
    for i, name in enumerate(names):
        path = paths[i] if paths else None
        out.append((name, path, f"{flag} {name}" + (f" --benchmark_path {path}" if path else "")))
    first: dict[str, str] = {}
    for name, _, given in out:
        if name in first:
            raise errors.UserError(
                f"{given}: benchmark {name} is named twice (also by {first[name]}): name each "
                "benchmark once, with one path"
            )
        first[name] = given
    return out


def benchmark_options(args: argparse.Namespace, benchmark) -> dict:
    """The reader options of `benchmark` (its `options`) that the command's flags give."""
    given = {
        "articles": getattr(args, "articles", None),
        "xlsum_articles": getattr(args, "xlsum_articles", None),
        "languages": None,
    }
    if getattr(args, "mface_languages", None) == "5lang" and benchmark.subset is not None:
        given["languages"] = benchmark.subset.languages
    return {k: v for k, v in given.items() if k in benchmark.options and v is not None}

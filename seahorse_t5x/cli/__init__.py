"""The `seahorse-t5x` command: one subcommand per module in this package.

Each subcommand module defines `HELP` (one line), `EXAMPLE` (a command line shown in
`--help`), `add_arguments(parser)` and `run(args) -> int`. Only the selected subcommand's
flags are added, and a subcommand module imports at module level, and in `add_arguments`,
only what its flags need: JAX, TensorFlow, SeqIO and the library's heavy modules are
imported inside `run`, so `seahorse-t5x --help` and every `seahorse-t5x COMMAND --help`
start neither JAX nor TensorFlow (tests/test_cli_flags.py holds it).

A user's mistake (`errors.UserError`, `errors.DataError`) or a file-system fault (`OSError`:
full disk, read-only location) ends the command with one line on stderr and exit code 2;
`--verbose` adds the full traceback. TensorFlow's and absl's log lines are kept off the
console unless `--verbose` (`console.quiet_libraries`).

A flag has one spelling in every command; renamed ones keep working as hidden aliases
that print a one-line note (`flags.add_alias`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from seahorse_t5x import errors
from seahorse_t5x.cli import console, flags

# Subcommand name -> module under seahorse_t5x.cli, in the order `--help` lists them.
SUBCOMMANDS: dict[str, str] = {
    "demo": "demo",
    "demo-data": "demo_data",
    "prepare": "prepare",
    "train": "train",
    "evaluate": "evaluate",
    "score": "score",
    "explain": "explain",
    "baselines": "baselines",
    "report": "report",
    "t5x-scores": "t5x_scores",
    "t5x-explanations": "t5x_explanations",
    "import-scores": "import_scores",
    "plan": "plan",
    "gin-path": "gin_path",
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (the usage is in `--help`)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _load(name: str):
    return importlib.import_module(f"seahorse_t5x.cli.{SUBCOMMANDS[name]}")


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """Builds the parser; only the selected subcommand's flags are added.

    The top-level `--help` lists every subcommand with its `HELP` line: each module is
    imported for it, so a subcommand module imports only what its flags need (argparse,
    `flags`, constants) and leaves JAX, TensorFlow and SeqIO to its `run`.
    """
    parser = _Parser(
        prog="seahorse-t5x",
        description="Learnt summarization metrics from SEAHORSE ratings, T5X-style.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        if selected is not None and name != selected:
            sub.add_parser(name, add_help=False)
            continue
        try:
            module = _load(name)
        except ModuleNotFoundError as e:
            if e.name and e.name.startswith("seahorse_t5x.cli."):
                continue  # subcommand not built in this version
            raise
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=f"{module.HELP}\n\nexample:\n  {module.EXAMPLE}",
            formatter_class=flags.HelpFormatter,  # every option's default shown
            # `--gin.MODEL_D=...` must not silently mean --gin.MODEL_DIR.
            allow_abbrev=False,
        )
        if name != selected:
            continue  # the top-level --help shows the HELP line only
        module.add_arguments(p)
        p.add_argument(
            "--verbose",
            action="store_true",
            help="show TensorFlow's and absl's log lines (kept off the console otherwise), "
            "and on an error the full traceback after the one-line message",
        )
    return parser


def subcommand_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one subcommand with all its flags, as `seahorse-t5x NAME` builds it."""
    parser = build_parser(name)
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    return subparsers.choices[name]


# gin appends where a configurable was called to the message of any exception raised in it.
_GIN_CALL_NOTE = "\n  In call to configurable"


def one_line(error: BaseException) -> str:
    """The message of `error` on one line, without gin's call-site notes."""
    if isinstance(error, OSError) and not isinstance(error, errors.UserError):
        if error.filename is not None:
            return f"{error.filename}: {error.strerror or error}"
    if isinstance(error, UnicodeDecodeError):
        return (
            f"an input file is not UTF-8 text (byte 0x{error.object[error.start]:02x} at byte "
            f"{error.start + 1} of the block read); expected UTF-8 (--verbose shows where)"
        )
    text = str(error).split(_GIN_CALL_NOTE, 1)[0]
    return " ".join(text.split()) or type(error).__name__


def _unknown_arguments(parser: argparse.ArgumentParser, command: str, extra: list[str]) -> None:
    """Exits (code 2) for arguments no option takes, naming the closest macro for a
    mistyped `--gin.NAME`."""
    message = f"unrecognized arguments: {' '.join(extra)}"
    for argument in extra:
        if argument.startswith("--gin."):
            from seahorse_t5x.runner import gin_config

            name = argument[len("--gin.") :].split("=", 1)[0]
            closest = gin_config.closest_macro(name)
            hint = f"; did you mean --gin.{closest}?" if closest else ""
            message = f"unknown gin macro flag --gin.{name}{hint}"
            break
    parser.exit(
        2, f"seahorse-t5x {command}: error: {message} (see seahorse-t5x {command} --help)\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    selected = next((a for a in argv if a in SUBCOMMANDS), None)
    parser = build_parser(selected)
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if extra:
        _unknown_arguments(parser, args.command, extra)
    verbose = getattr(args, "verbose", False)
    try:
        # TensorFlow's and absl's log lines say nothing useful to a user of this command:
        # off the console unless --verbose, set here before any command imports them.
        with console.quiet_libraries(verbose):
            return int(_load(args.command).run(args) or 0)
    except (errors.UserError, OSError, UnicodeDecodeError) as e:
        # OSError: a file-system fault (full disk, read-only location) not met in fileio.
        # UnicodeDecodeError: an input read without fileio (which names file and line).
        print(f"seahorse-t5x {args.command}: error: {one_line(e)}", file=sys.stderr)
        if verbose:
            traceback.print_exc(file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"seahorse-t5x {args.command}: interrupted", file=sys.stderr)
        return 130

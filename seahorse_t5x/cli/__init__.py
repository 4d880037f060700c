"""The `seahorse-t5x` command: one subcommand per module in this package.

Each subcommand module defines `HELP` (one line), `EXAMPLE` (a command line shown in
`--help`), `add_arguments(parser)` and `run(args) -> int`. Modules are imported only when
their subcommand runs, so `seahorse-t5x report --help` does not pay for TensorFlow or JAX.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from seahorse_t5x import errors

# Subcommand name -> module under seahorse_t5x.cli, in the order `--help` lists them.
SUBCOMMANDS: dict[str, str] = {
    "demo": "demo",
    "demo-data": "demo_data",
    "prepare": "prepare",
    "train": "train",
    "evaluate": "evaluate",
    "score": "score",
    "baselines": "baselines",
    "report": "report",
    "t5x-scores": "t5x_scores",
    "plan": "plan",
}


def _load(name: str):
    return importlib.import_module(f"seahorse_t5x.cli.{SUBCOMMANDS[name]}")


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """Builds the parser; only the selected subcommand's module is imported."""
    parser = argparse.ArgumentParser(
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
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # TensorFlow's C++ start-up lines (CUDA probing on CPU-only machines) say nothing useful
    # to a user of this command; a value set by the user wins.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    argv = list(sys.argv[1:] if argv is None else argv)
    selected = next((a for a in argv if a in SUBCOMMANDS), None)
    parser = build_parser(selected)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(_load(args.command).run(args) or 0)
    except errors.UserError as e:
        print(f"seahorse-t5x {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"seahorse-t5x {args.command}: interrupted", file=sys.stderr)
        return 130

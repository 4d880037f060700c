"""`seahorse-t5x gin-path`: the folder of the gin files installed with the package.

The package's gins name each other by package path, as T5X's do
(`include 'seahorse_t5x/gin/runs/finetune.gin'`, `include 't5x/configs/runs/finetune.gin'`):
gin finds both in the installed packages from any folder, so T5X needs no search path:
`python -m t5x.train --gin_file=seahorse_t5x/gin/experiments/seahorse_q4_small.gin`.
`--includes FILE` prints where each include of FILE resolves, without T5X installed.
"""

from __future__ import annotations

import argparse
import pathlib

from seahorse_t5x.cli import flags

HELP = "Print the folder of the installed gin files, or where each include of one resolves."
EXAMPLE = "seahorse-t5x gin-path --includes experiments/seahorse_q4_xxl.gin"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--includes",
        action=flags.Location,
        metavar="FILE",
        default=None,
        help="print the include tree of FILE (e.g. experiments/seahorse_q4_xxl.gin, a path "
        "under the gin folder, or any gin file) with where each include resolves; exit 2 "
        "if one resolves nowhere, the includes form a cycle, or a file is not gin or not "
        "UTF-8 (default: print the folder only)",
    )


def include_tree(name: str, gin_dir: pathlib.Path) -> list[tuple[int, str, str]]:
    """(depth, include, where it resolves) for `name` and every include below it, depth
    first (`gin_includes.include_tree`, which raises UserError for a file found nowhere, an
    include cycle, or a file that is not gin or not UTF-8)."""
    from seahorse_t5x.runner import gin_includes

    return [
        (row.depth, row.name, row.where) for row in gin_includes.include_tree(name, gin_dir=gin_dir)
    ]


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x.runner import gin_includes

    gin_dir = gin_includes.package_gin_dir()
    if args.includes is None:
        print(gin_dir)
        return 0
    rows = include_tree(args.includes, gin_dir)
    for depth, include, where in rows:
        print(f"{'  ' * depth}{include} -> {where}")
    print(f"{len(rows)} gin files")
    return 0

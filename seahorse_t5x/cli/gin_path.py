"""`seahorse-t5x gin-path`: the folder of the gin files installed with the package.

The package's gins name each other by package path, as T5X's do
(`include 'seahorse_t5x/gin/runs/finetune.gin'`, `include 't5x/configs/runs/finetune.gin'`):
gin finds both in the installed packages from any folder, so T5X needs no search path:
`python -m t5x.train --gin_file=seahorse_t5x/gin/experiments/seahorse_q4_small.gin`.
`--includes FILE` prints where each include of FILE resolves, without T5X installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib

from seahorse_t5x import errors

HELP = "Print the folder of the installed gin files, or where each include of one resolves."
EXAMPLE = "seahorse-t5x gin-path --includes experiments/seahorse_q4_xxl.gin"

# Includes under these prefixes are T5X's own gin files, read from the installed t5x package.
T5X_PREFIX = "t5x/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--includes",
        metavar="FILE",
        default=None,
        help="print the include tree of FILE (e.g. experiments/seahorse_q4_xxl.gin, a path "
        "under the gin folder, or any gin file) with where each include resolves; exit 2 "
        "if one resolves nowhere (default: print the folder only)",
    )


def _t5x_gin(name: str) -> pathlib.Path | None:
    """T5X's gin file `t5x/...` in the installed t5x package, or None without T5X."""
    if importlib.util.find_spec("t5x") is None:
        return None
    from importlib import resources

    return pathlib.Path(str(resources.files("t5x").joinpath(name[len(T5X_PREFIX) :])))


def include_tree(name: str, gin_dir: pathlib.Path) -> list[tuple[int, str, str]]:
    """(depth, include, where it resolves) for `name` and every include below it, depth first.

    `name` is found as `--gin_file` finds it (`gin_config.find_gin_file`); includes under
    `seahorse_t5x/gin/` resolve in `gin_dir`, T5X's in the installed `t5x` package.

    Raises:
      UserError: for a file or include found nowhere.
    """
    from gin import config_parser

    from seahorse_t5x.runner import gin_config

    rows: list[tuple[int, str, str]] = []
    package_prefix = f"{gin_dir.parent.name}/{gin_dir.name}/"

    def visit(include: str, depth: int, parent: str | None) -> None:
        if include.startswith(T5X_PREFIX):
            found = _t5x_gin(include)
            rows.append((depth, include, str(found) if found else "T5X's (t5x not installed)"))
            return
        if parent is None:
            path = gin_config.find_gin_file(include)
        elif include.startswith(package_prefix):
            path = gin_dir / include[len(package_prefix) :]
        else:
            path = pathlib.Path(include)
        if not path.is_file():
            raise errors.UserError(
                f"gin file {include} (included by {parent}) is neither in {gin_dir} nor T5X's"
            )
        rows.append((depth, include, str(path)))
        parser = config_parser.ConfigParser(path.read_text(encoding="utf-8"), _Literal())
        for statement in parser:
            if isinstance(statement, config_parser.IncludeStatement):
                visit(statement.filename, depth + 1, include)

    visit(name, 0, None)
    return rows


class _Literal:
    """A gin parser delegate that keeps references and macros unresolved (only includes
    matter here)."""

    def configurable_reference(self, scoped_name: str, evaluate: bool) -> str:
        return scoped_name

    def macro(self, macro_name: str) -> str:
        return macro_name


def run(args: argparse.Namespace) -> int:
    from seahorse_t5x.runner import gin_config

    gin_dir = gin_config.package_gin_dir()
    if args.includes is None:
        print(gin_dir)
        return 0
    rows = include_tree(args.includes, gin_dir)
    for depth, include, where in rows:
        print(f"{'  ' * depth}{include} -> {where}")
    print(f"{len(rows)} gin files")
    return 0

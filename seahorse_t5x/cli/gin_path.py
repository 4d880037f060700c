"""`seahorse-t5x gin-path`: the folder of the gin files installed with the package."""

from __future__ import annotations

import argparse

HELP = "Print the folder of the installed gin files (for T5X's --gin_search_paths)."
EXAMPLE = (
    "seahorse-t5x gin-path    # then: python -m t5x.train "
    "--gin_search_paths=$(seahorse-t5x gin-path) --gin_file=experiments/seahorse_q4_small.gin ..."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    del args
    from seahorse_t5x.runner import gin_config

    print(gin_config.package_gin_dir())
    return 0

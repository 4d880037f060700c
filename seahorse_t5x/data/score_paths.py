"""Which score files a list of paths stands for (what `report` and `read_score_files` read):
a file as it is, a folder the `*.jsonl` files in it and its sub-folders (a link to a folder
followed, one that loops or leads nowhere refused), each file once.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

from seahorse_t5x import arguments, errors


def score_files_in(folder: str | pathlib.Path) -> list[pathlib.Path]:
    """The `*.jsonl` files in a folder and its sub-folders (e.g. `scores/` holding
    `baselines`' `scores/baselines/`), in sorted order of their paths.

    Only names ending in `.jsonl` count: a run's `OUTPUT.partial` and a writer's temporary
    `.NAME.<random>.tmp` are never read. Hidden files and folders (a leading `.`) are
    skipped. A symbolic link to a folder is followed like a folder (its files are listed
    under the link's path); one that leads back to a folder it is inside, or nowhere, is
    refused.

    Raises:
      errors.UserError: a link that makes a loop or leads nowhere, naming it.
    """
    found: list[pathlib.Path] = []

    def visit(path: pathlib.Path, inside: tuple[pathlib.Path, ...]) -> None:
        real = path.resolve()
        # A folder that holds (or is) one this walk is inside would lead back into it.
        if any(real == outer or real in outer.parents for outer in inside):
            raise errors.UserError(
                f"score folder {folder}: the symbolic link {path} leads to {real}, a folder "
                "it is inside (a loop): remove the link, or give the folders to read"
            )
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            if entry.is_dir():  # (a link to a folder too)
                visit(pathlib.Path(path, entry.name), (*inside, real))
            elif entry.is_symlink() and not os.path.exists(entry.path):
                raise errors.UserError(
                    f"score folder {folder}: the symbolic link {entry.path} leads nowhere (its "
                    "target is missing, or links lead back to each other): remove or fix it"
                )
            elif entry.name.endswith(".jsonl"):
                found.append(pathlib.Path(path, entry.name))

    visit(pathlib.Path(folder), ())
    return sorted(found)


def expand_score_paths(paths: Sequence[str | pathlib.Path]) -> list[pathlib.Path]:
    """Score file paths, a folder standing for the `*.jsonl` files in it and its sub-folders
    (`score_files_in`; e.g. `evaluate`'s `OUT/scores/`, or `scores/` with `scores/baselines/`
    in it), in the order given, each folder's files sorted.

    Raises:
      errors.UserError: one path given bare (`arguments.path_list`), no paths, a folder
        without `.jsonl` files, or a symbolic link in one that makes a loop.
    """
    paths = arguments.path_list(paths, "paths")
    if not paths:
        raise errors.UserError("no score files given")
    out: list[pathlib.Path] = []
    for path in map(pathlib.Path, paths):
        if path.is_dir():
            found = score_files_in(path)
            if not found:
                raise errors.UserError(
                    f"no .jsonl score files in folder {path} (nor in its sub-folders)"
                )
            out += found
        else:
            out.append(path)
    return out


def score_file_paths(paths: Sequence[str | pathlib.Path]) -> list[pathlib.Path]:
    """`expand_score_paths`, each file checked to come once.

    Raises:
      errors.UserError: as `expand_score_paths`, or a file given twice (directly, or through
        a folder).
    """
    paths = arguments.path_list(paths, "paths")
    folders = any(pathlib.Path(p).is_dir() for p in paths)
    expanded = expand_score_paths(paths)
    seen: set[pathlib.Path] = set()
    for path in expanded:
        resolved = pathlib.Path(path).resolve()
        if resolved in seen:
            # Reading a file twice would count every item twice in every statistic.
            raise errors.UserError(
                f"score file given twice: {path}"
                + (
                    " (a folder stands for the .jsonl files of its sub-folders too)"
                    if folders
                    else ""
                )
            )
        seen.add(resolved)
    return expanded

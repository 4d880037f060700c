"""The include tree of gin files, read and checked before gin parses them.

gin follows `include` lines by recursion and reads whatever a name resolves to: an include
cycle ends in a `RecursionError`, a Python script or another non-gin file in gin's
`SyntaxError` with no file name, and a file that is not UTF-8 in a `UnicodeDecodeError`.
`include_tree` walks the includes as gin resolves them and turns each of these into one
line naming the file (and line): `train` (`gin_config.parse`) and `gin-path --includes` both
call it.

Includes resolve as gin resolves them: an absolute path as given; a package path
(`seahorse_t5x/gin/...`) in the package's gin folder; any other relative path in the current
folder, then in the search paths (`gin_search_paths`). T5X's own gins (`t5x/...`)
are read from the installed t5x package and not followed (they include only T5X's).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import io
import pathlib
import tokenize
from collections.abc import Sequence

from seahorse_t5x import errors

# Includes under this prefix are T5X's own gin files, read from the installed t5x package.
T5X_PREFIX = "t5x/"
T5X_MISSING = "T5X's (t5x not installed)"


def package_gin_dir() -> pathlib.Path:
    """The gin folder installed with the package: `seahorse_t5x/gin/` (package data)."""
    return pathlib.Path(str(importlib.resources.files("seahorse_t5x").joinpath("gin")))


def gin_search_paths(extra: Sequence[str] = ()) -> list[str]:
    """Where gin files and includes are looked up, in order: `extra`, the current folder,
    the package's gin folder, the package folder (for the `gin/...` spelling) and the folder
    holding the package (for `seahorse_t5x/gin/...`)."""
    gin_dir = package_gin_dir()
    return [*extra, ".", str(gin_dir), str(gin_dir.parent), str(gin_dir.parents[1])]


def find_gin_file(name: str, search_paths: Sequence[str] = ()) -> pathlib.Path:
    """The gin file `name` names: as given if it exists, else the first match under
    `gin_search_paths(search_paths)`.

    Raises:
      UserError: if no such file exists, naming where it was looked for.
    """
    given = pathlib.Path(name)
    if given.is_file():
        return given.resolve()
    if not given.is_absolute():
        for folder in gin_search_paths(search_paths):
            candidate = pathlib.Path(folder) / name
            if candidate.is_file():
                return candidate.resolve()
    where = "".join(f", nor under {folder}" for folder in search_paths)
    raise errors.UserError(
        f"gin file {name} not found: not a file here{where}, nor in the package's gin folder "
        f"{package_gin_dir()} (`ls $(seahorse-t5x gin-path)` lists them)"
    )


@dataclasses.dataclass(frozen=True)
class Include:
    """One file of an include tree.

    Attributes:
      depth: 0 for the file given, 1 for its includes, and so on.
      name: the name as given or as written in the `include` line.
      where: the file it resolves to, or a note for T5X's gins when t5x is not installed.
    """

    depth: int
    name: str
    where: str


class _Literal:
    """A gin parser delegate that keeps references and macros unresolved (only includes
    and syntax matter here)."""

    def configurable_reference(self, scoped_name: str, evaluate: bool) -> str:
        return scoped_name

    def macro(self, macro_name: str) -> str:
        return macro_name


def _t5x_gin(name: str) -> pathlib.Path | None:
    """T5X's gin file `t5x/...` in the installed t5x package, or None without T5X."""
    import importlib.util

    if importlib.util.find_spec("t5x") is None:
        return None
    from importlib import resources

    return pathlib.Path(str(resources.files("t5x").joinpath(name[len(T5X_PREFIX) :])))


def _resolve(
    include: str, search_paths: Sequence[str], gin_dir: pathlib.Path
) -> pathlib.Path | None:
    """The file an `include` line names, as gin finds it, or None."""
    package_prefix = f"{gin_dir.parent.name}/{gin_dir.name}/"
    if include.startswith(package_prefix):
        candidate = gin_dir / include[len(package_prefix) :]
        if candidate.is_file():
            return candidate
    path = pathlib.Path(include)
    if path.is_absolute():
        return path if path.is_file() else None
    for folder in ["", *search_paths]:
        candidate = pathlib.Path(folder) / include if folder else path
        if candidate.is_file():
            return candidate
    return None


def _unfinished(text: str, error: tokenize.TokenError) -> tuple[int, str]:
    """(line, what is wrong) for gin text that ends inside a statement: Python's tokenizer
    (which gin's parser reads with) names only the end of the file; the line that opens
    what is never closed is where to look."""
    message, (end_line, _) = error.args
    if "string" in message:  # (the tokenizer names the line the string opens on)
        return end_line, "a string opened here is never closed"
    opened: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string in "([{":
                opened.append((token.start[0], token.string))
            elif token.type == tokenize.OP and token.string in ")]}" and opened:
                opened.pop()
    except tokenize.TokenError:
        pass
    if opened:
        line, bracket = opened[0]
        return line, f"{bracket!r} opened here is never closed"
    lines = text.rstrip().splitlines() or [""]
    return len(lines), "the last line ends in a backslash: the statement never ends"


def gin_statements(text: str) -> list[object]:
    """The statements of gin `text` (`config_parser`'s), references and macros unresolved.

    Raises:
      SyntaxError: with the line and what is wrong, for every parse error: gin's own, and
        the tokenizer's (an unclosed bracket or string), located at the line that opens it.
    """
    from gin import config_parser

    try:
        return list(config_parser.ConfigParser(text, _Literal()))
    except tokenize.TokenError as e:
        line, reason = _unfinished(text, e)
        lines = text.splitlines()
        shown = lines[line - 1] if 0 < line <= len(lines) else None
        raise SyntaxError(reason, (None, line, None, shown)) from None


def syntax_message(error: SyntaxError) -> str:
    """gin's message of a parse error on one line: `Unable to parse value. at 'X = = 3'`
    (of a value Python cannot read, the token gin could not parse, not `ast`'s words)."""
    message = error.msg
    if "Failed to parse token" in message:
        message = "Failed to parse token" + message.split("Failed to parse token", 1)[1]
    content = " ".join((error.text or "").split())
    return " ".join(message.split()) + (f" at {content!r}" if content else "")


def check_bindings(bindings: Sequence[str]) -> None:
    """Parses each binding (`--gin.NAME=value`, `--gin_bindings`) as gin will.

    Raises:
      UserError: naming the binding and what is wrong with it, in one line.
    """
    for binding in bindings:
        try:
            gin_statements(binding)
        except SyntaxError as e:
            raise errors.UserError(f"gin binding {binding!r}: {syntax_message(e)}") from None


def _statements(path: pathlib.Path, by: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """The (include, line) and (imported module, line) statements of the gin file at `path`.

    Raises:
      UserError: if the file is not UTF-8 text or not gin syntax (a `.gin` file: a syntax
        error, the tokenizer's included; any other: not a gin file), naming it and the line.
    """
    from gin import config_parser

    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise errors.UserError(
            f"gin file {path}{by} is not UTF-8 text (byte 0x{raw[e.start]:02x} at line "
            f"{line}): save it as UTF-8"
        ) from None
    includes, imports = [], []
    try:
        for statement in gin_statements(text):
            if isinstance(statement, config_parser.IncludeStatement):
                includes.append((statement.filename, statement.location.line_num))
            elif isinstance(statement, config_parser.ImportStatement):
                imports.append((statement.module, statement.location.line_num))
    except SyntaxError as e:
        if path.suffix == ".gin":  # a gin file with a mistake in it
            raise errors.UserError(f"gin: {path}:{e.lineno}: {syntax_message(e)}{by}") from None
        raise errors.UserError(
            f"{path}:{e.lineno}: not a gin file ({syntax_message(e)}){by}; a gin file holds "
            "bindings (`name.param = value`), includes and imports"
        ) from None
    return includes, imports


def include_tree(
    name: str,
    search_paths: Sequence[str] = (),
    gin_dir: pathlib.Path | None = None,
) -> list[Include]:
    """`name` and every include below it, depth first, each checked before gin parses it.

    Args:
      name: a gin file, found as `--gin_file` finds it (`find_gin_file`).
      search_paths: extra folders to look the file and its includes up in.
      gin_dir: the package's gin folder (default: `package_gin_dir()`).

    Raises:
      UserError: as `walk`.
    """
    return walk(name, search_paths, gin_dir)[0]


def walk(
    name: str,
    search_paths: Sequence[str] = (),
    gin_dir: pathlib.Path | None = None,
) -> tuple[list[Include], list[tuple[str, str]]]:
    """The include tree of `name` (as `include_tree`) and the modules its files import, as
    (module, `file:line`), in the order gin reads them.

    Raises:
      UserError: for a file or include found nowhere, an include cycle (at any depth:
        naming the include line that closes it and the whole cycle), a file that is not
        UTF-8 or not gin, each naming the file, its line and the file that includes it.
    """
    gin_dir = gin_dir or package_gin_dir()
    paths = gin_search_paths(search_paths)
    rows: list[Include] = []
    imports: list[tuple[str, str]] = []
    # The files being read, from the top: (name as included, resolved path).
    chain: list[tuple[str, pathlib.Path]] = []

    def visit(include: str, depth: int, by: str) -> None:
        if include.startswith(T5X_PREFIX):
            found = _t5x_gin(include)
            rows.append(Include(depth, include, str(found) if found else T5X_MISSING))
            return
        if not chain:
            path = find_gin_file(include, search_paths)
        else:
            path = _resolve(include, paths, gin_dir)
            if path is None:
                raise errors.UserError(
                    f"gin file {include} (included by {by}) not found: not a file here, nor "
                    f"under {', '.join(p for p in paths if p != '.')}"
                )
        path = path.resolve()
        seen = [p for _, p in chain]
        if path in seen:
            cycle = " -> ".join([n for n, _ in chain[seen.index(path) :]] + [include])
            raise errors.UserError(
                f"gin include cycle: {by} includes {include}, which is already being read "
                f"({cycle}): remove one of these includes"
            )
        rows.append(Include(depth, include, str(path)))
        suffix = f" (included by {by})" if chain else ""
        chain.append((include, path))
        includes, modules = _statements(path, suffix)
        imports.extend((module, f"{path}:{line}") for module, line in modules)
        for child, child_line in includes:
            visit(child, depth + 1, f"{path}:{child_line}")
        chain.pop()

    visit(name, 0, "")
    return rows, imports


def check_gin_files(
    names: Sequence[str], search_paths: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """Checks each of `names` and its includes as `include_tree` does; returns the modules
    they import, as (module, `file:line`), leaving out gin's own `__gin__` ones.

    Raises:
      UserError: as `walk`.
    """
    imports = []
    for name in names:
        imports += walk(name, search_paths)[1]
    return [(module, at) for module, at in imports if not module.startswith("__gin__")]

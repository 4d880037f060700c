"""Reading gin files and `--gin.MACRO=value` flags for the local runner.

The package's gin files include each other as T5X's do, by package path
(`include 'seahorse_t5x/gin/local/train.gin'`): gin finds those in the installed package from
any folder, and a folder of the user's that happens to be called `runs/` or `local/` cannot
hide them. A `--gin_file` is looked up by `find_gin_file`: as given, in the search paths,
then in the package's gin folder (`package_gin_dir()`, printed by `seahorse-t5x gin-path`),
so `local/train.gin`, `seahorse_t5x/gin/local/train.gin` and the older `gin/local/train.gin`
all name the same file.

A macro that is set (in a file, by `--gin.NAME=...` or a binding) but that no binding reads
is an error naming it and the closest macro that is read: a typo in a macro name would
otherwise be ignored silently.

The runner's macros have one set of defaults: `trainer.TrainConfig`'s. A macro that the
configuration reads (`gin/local/train.gin` reads them all) but that no file or flag sets
takes the field's default (`bind_default_macros`); the gin files set only what differs.
Each also has that field's type: a value of another type is converted where the
conversion is exact (`"0.5"` or `.5` for a float, `1000.0` for an int) and otherwise
refused in one line naming the macro (`check_macro_types`), before any configurable runs.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import math
import pathlib
import re
import tokenize
import types
import typing
from collections.abc import Iterator, Sequence

import gin
import gin.config

from seahorse_t5x import errors
from seahorse_t5x.runner import gin_includes
from seahorse_t5x.runner.gin_includes import find_gin_file, gin_search_paths, package_gin_dir

# T5X's macro names (and this runner's few additions) that `--gin.NAME=value` accepts.
MACROS: tuple[str, ...] = (
    "MODEL_DIR",
    "MIXTURE_OR_TASK_NAME",
    "TASK_FEATURE_LENGTHS",
    "TRAIN_STEPS",
    "BATCH_SIZE",
    "LEARNING_RATE",
    "LEARNING_RATE_SCHEDULE",
    "WARMUP_STEPS",
    "LEARNING_RATE_MULTIPLIERS",
    "CLIP_GRADIENT_NORM",
    "DROPOUT_RATE",
    "INITIAL_CHECKPOINT_PATH",
    "EVAL_PERIOD",
    "RANDOM_SEED",
    "MODEL_SIZE",
    "MODEL_FAMILY",
    "MODEL_OVERRIDES",
    "DTYPE",
    "OPTIMIZER",
    "CHECKPOINT_PERIOD",
    "KEEP_CHECKPOINTS",
    "MODEL_PARALLEL",
    "PACK",
    "DISTILL_ALPHA",
    "DISTILL_TEMPERATURE",
)

_GIN_LITERAL_START = re.compile(r"""^\s*(['"{\[(@%]|-?\.?\d|True$|False$|None$)""")


def macro_binding(name: str, value: str) -> str:
    """`NAME = value`, quoting `value` when it is not already a gin literal.

    T5X expects `--gin.MODEL_DIR=\\"/path\\"`; a bare `/path` is accepted here as well.
    """
    if not _GIN_LITERAL_START.match(value):
        value = repr(value)
    return f"{name} = {value}"


def _required_macro(message: str) -> str | None:
    match = re.match(r"^(\w+)/macro\.value set to `%gin\.REQUIRED`", message)
    return match.group(1) if match else None


class _QuietLookups(logging.Filter):
    """Drops gin's `Path not found: F` log lines: gin's package-resource reader logs one
    for every relative file (and include) it tries before the search paths find it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Path not found:")


@contextlib.contextmanager
def _quiet_lookups() -> Iterator[None]:
    quiet = _QuietLookups()
    root = logging.getLogger()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def _macro_references(value: object) -> Iterator[str]:
    """Names of the macros (`%NAME`) a bound value refers to, at any depth."""
    if isinstance(value, gin.config.ConfigurableReference):
        selector = value.scoped_selector
        if selector.endswith("/gin.macro") or selector.endswith("/macro"):
            yield selector.rsplit("/", 1)[0]
    elif isinstance(value, dict):
        for item in value.values():
            yield from _macro_references(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _macro_references(item)


def unread_macros() -> list[str]:
    """Macros bound in gin's current configuration that no binding refers to."""
    # gin keeps its bindings in `_CONFIG`: {(scope, selector): {parameter: value}}.
    config = gin.config._CONFIG  # noqa: SLF001 - gin has no public view of its bindings
    defined = {scope for scope, selector in config if selector in ("gin.macro", "macro")}
    read = {
        name
        for bindings in config.values()
        for value in bindings.values()
        for name in _macro_references(value)
    }
    return sorted(defined - read)


def _read_macros() -> list[str]:
    config = gin.config._CONFIG  # noqa: SLF001 - see unread_macros
    return sorted(
        {
            name
            for bindings in config.values()
            for value in bindings.values()
            for name in _macro_references(value)
        }
    )


def check_macros_read(flag_macros: Sequence[str] = MACROS) -> None:
    """Raises UserError for the first macro that is set but that nothing reads.

    Args:
      flag_macros: the macros `--gin.NAME=...` sets, named as flags in the message.
    """
    unread = unread_macros()
    if not unread:
        return
    name = unread[0]
    candidates = [m for m in _read_macros() if m != name]
    closest = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    hint = f"; did you mean {closest[0]}?" if closest else ""
    how = f"--gin.{name}" if name in flag_macros else f"gin macro {name}"
    more = f" (and {len(unread) - 1} more: {', '.join(unread[1:])})" if len(unread) > 1 else ""
    raise errors.UserError(f"{how} is set but no gin binding reads %{name}{more}{hint}")


def closest_macro(name: str) -> str | None:
    """The macro in `MACROS` closest to `name` (for a mistyped `--gin.NAME` flag), or None."""
    found = difflib.get_close_matches(name, MACROS, n=1, cutoff=0.6)
    return found[0] if found else None


def bind_default_macros() -> list[str]:
    """Binds each runner macro that is read but not set to `TrainConfig`'s default for the
    field of the same (lower-case) name; returns the macros bound.

    Macros of fields without a default (`MODEL_DIR`, ...) are left unset: the trainer's
    call then names them as required.
    """
    import dataclasses

    from seahorse_t5x.runner import trainer

    config = gin.config._CONFIG  # noqa: SLF001 - see unread_macros
    defined = {scope for scope, selector in config if selector in ("gin.macro", "macro")}
    fields = {f.name: f for f in dataclasses.fields(trainer.TrainConfig)}
    bound = []
    for name in _read_macros():
        field = fields.get(name.lower())
        if name in defined or name not in MACROS or field is None:
            continue
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            continue
        gin.parse_config(f"{name} = {default!r}")
        bound.append(name)
    return bound


# What each plain type a macro declares accepts, for the message.
_EXPECTED = {bool: "True or False", int: "an integer", float: "a number", str: "text"}


def _as_declared(value: object, kind: type) -> object:
    """`value` as `kind` (bool, int, float or str) where that is exact; raises ValueError
    otherwise."""
    if isinstance(value, bool) and kind is not bool:
        raise ValueError(value)
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
            return int(value)
    elif kind is float:
        number = float(value) if isinstance(value, int | float | str) else math.nan
        if math.isfinite(number):
            return number
    elif kind is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int | float):  # e.g. `--gin.MODEL_DIR=2024`
            return str(value)
    raise ValueError(value)


def declared_macro_types() -> dict[str, tuple[type, ...]]:
    """The types each runner macro takes (`TrainConfig`'s field of its lower-case name),
    for the macros whose field has a plain type (bool, int, float, str, with or without
    None); mappings and sequences are left to the configurable."""
    from seahorse_t5x.runner import train_config

    hints = typing.get_type_hints(train_config.TrainConfig)
    declared = {}
    for name in MACROS:
        hint = hints.get(name.lower())
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        kinds = typing.get_args(hint) if union else (hint,)
        if kinds and all(kind in (*_EXPECTED, type(None)) for kind in kinds):
            declared[name] = kinds
    return declared


def check_macro_types() -> list[str]:
    """Converts each runner macro bound to a value of another type than its field's where
    the conversion is exact (`_as_declared`); returns the macros converted.

    Raises:
      UserError: naming the macro, its value and the type it takes.
    """
    config = gin.config._CONFIG  # noqa: SLF001 - see unread_macros
    converted = []
    for name, kinds in declared_macro_types().items():
        binding = config.get((name, "gin.macro")) or config.get((name, "macro"))
        if binding is None or "value" not in binding:
            continue
        value = binding["value"]
        if isinstance(value, gin.config.ConfigurableReference):
            continue  # `@configurable()` or `%MACRO`: its call's value is the configurable's
        if value is None and type(None) in kinds:
            continue
        kind = next(k for k in kinds if k is not type(None))
        try:
            wanted = _as_declared(value, kind)
        except ValueError:
            nullable = " or None" if type(None) in kinds else ""
            raise errors.UserError(
                f"gin macro {name} is {value!r} ({type(value).__name__}); it takes "
                f"{_EXPECTED[kind]}{nullable}: e.g. --gin.{name}={_example(name, kind)}"
            ) from None
        if type(wanted) is not type(value) or wanted != value:
            gin.bind_parameter(f"{name}/gin.macro.value", wanted)
            converted.append(name)
    return converted


def _example(name: str, kind: type) -> str:
    """The macro's default as a flag's value, else a value of its type."""
    import dataclasses

    from seahorse_t5x.runner import train_config

    field = {f.name: f for f in dataclasses.fields(train_config.TrainConfig)}.get(name.lower())
    default = None if field is None else field.default
    if type(default) is kind:
        return repr(default) if kind is str else str(default)
    return {bool: "True", int: "1", float: "0.5", str: "'...'"}[kind]


def _gin_import_error(error: ImportError) -> errors.UserError:
    """One line for a gin `import` line that failed, naming the module, file and line
    (`user_modules.import_error`: only a module that was not found is told to pass
    --module or set PYTHONPATH)."""
    from seahorse_t5x.tasks import user_modules

    text = str(error)
    message, _, where = text.partition(' In file "')
    name = error.name or (re.findall(r"No module named '([^']+)'", message) or ["?"])[0]
    location = re.match(r'([^"]+)", line (\d+)', where)
    at = f"{location.group(1)}:{location.group(2)}" if location else ""
    if isinstance(error, ModuleNotFoundError):
        plain = ModuleNotFoundError(message.strip(), name=error.name)
    else:
        plain = ImportError(message.strip(), name=error.name)
    plain.__traceback__ = error.__traceback__
    return user_modules.import_error(name, plain, at)


def parse(
    gin_files: Sequence[str],
    bindings: Sequence[str] = (),
    search_paths: Sequence[str] = (),
    finalize: bool = True,
    check_macros: bool = True,
) -> None:
    """Parses `gin_files` and `bindings` into gin's global configuration.

    Args:
      gin_files: gin files, looked up in `gin_search_paths(search_paths)`.
      bindings: extra bindings (`NAME = value`), applied after the files.
      search_paths: folders to look gin files and includes up in.
      finalize: lock the configuration afterwards.
      check_macros: refuse a macro that no binding reads (`check_macros_read`).

    Raises:
      UserError: for a missing file, an include cycle, a file that is not gin or not UTF-8
        (`gin_includes`), a module that a gin file imports that is missing or raises, a
        syntax error (at its file and line, or naming the binding), an unknown
        configurable, a runner macro of a type its field does not take
        (`check_macro_types`), a macro that nothing reads (naming the closest one that is
        read), or a required macro left unset (naming the flag that sets it).
    """
    found = _checked_files(gin_files, search_paths)
    # Each binding parsed as the files were: a syntax error names the binding.
    gin_includes.check_bindings(bindings)
    try:
        with _quiet_lookups():
            gin.parse_config_files_and_bindings(
                [str(path) for path in found], list(bindings), finalize_config=False
            )
        bind_default_macros()
        check_macro_types()
        if check_macros:
            check_macros_read()
        if finalize:
            gin.finalize()
    except errors.UserError:
        raise
    except Exception as e:
        error = _parse_error(e)
        if error is None:
            raise
        raise error from None


def _checked_files(gin_files: Sequence[str], search_paths: Sequence[str]) -> list[pathlib.Path]:
    """The gin files found, their includes checked and the modules they import imported.

    Raises:
      UserError: no file, a missing file, an include cycle, a file that is not gin or not
        UTF-8, or a module a gin file imports that is missing or raises.
    """
    if not gin_files:
        raise errors.UserError("give at least one --gin_file (e.g. local/train.gin)")
    for path in gin_search_paths(search_paths):
        gin.add_config_file_search_path(path)
    found = [find_gin_file(name, search_paths) for name in gin_files]
    # Include cycles and files that are not gin or not UTF-8: one line each, before gin
    # parses (gin would recurse without end, or fail without naming the file).
    imports = gin_includes.check_gin_files([str(path) for path in found], search_paths)
    # A gin `import polite_task` line finds modules in the current folder and beside the
    # user's gin files (the package's own gin folders hold no user modules).
    # (Imported here: importing the tasks package registers every task, with SeqIO and
    # TensorFlow; `MACROS` alone must not, for `seahorse-t5x train --help`.)
    from seahorse_t5x.tasks import user_modules

    gin_dir = package_gin_dir()
    user_modules.make_importable(
        ["."] + [path.parent for path in found if gin_dir not in path.parents]
    )
    # The modules the gin files import, imported first: one that is missing or raises is one
    # line naming the gin file and line (gin would pass a module's own error on as is).
    for module, at in imports:
        user_modules.import_module(module, at=at)
    return found


def _parse_error(e: Exception) -> errors.UserError | None:
    """What gin's parse raised, as one line for the user; None for an error of ours to
    raise as it is."""
    if isinstance(e, ImportError):
        return _gin_import_error(e)
    if isinstance(e, OSError):
        return errors.UserError(f"gin: {e}")
    if isinstance(e, tokenize.TokenError):  # (the files and bindings were tokenized above)
        return errors.UserError(f"gin: {e.args[0]} (at line {e.args[1][0]})")
    if isinstance(e, ValueError):
        macro = _required_macro(str(e))
        if macro:
            return errors.UserError(
                f"gin macro {macro} is required: pass --gin.{macro}=VALUE or bind it in a gin file"
            )
        return errors.UserError(f"gin: {str(e).splitlines()[0]}")
    if isinstance(e, TypeError):
        # gin's package-resource lookup of a relative include fails this way when a folder
        # of that name without `__init__.py` is importable (e.g. `runs/` in the current one).
        if "NoneType" not in str(e):
            return None
        return errors.UserError(
            f"gin: an include could not be looked up ({' '.join(str(e).split())}); a folder of "
            "the include's first name in the current folder hides it: include the package's "
            "gins as 'seahorse_t5x/gin/...'"
        )
    # gin's parser raises SyntaxError and its own error types.
    if type(e).__module__.startswith("gin") or isinstance(e, SyntaxError):
        return errors.UserError(f"gin: {' '.join(str(e).split())}")
    return None

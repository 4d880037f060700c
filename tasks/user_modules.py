"""A user's own Python modules (task registrations, gin configurables), imported by name or file.

`--module NAME_OR_FILE.py` (train, evaluate, plan, baselines, t5x-scores) and `import NAME`
lines in gin files both come here. The current folder and the folders of the gin files given
are made importable first, so a module beside the data or the gin file needs no `PYTHONPATH`.
A module that cannot be imported is one line naming it and what to do, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pathlib
import sys
import traceback
from collections.abc import Iterable, Sequence

from seahorse_t5x import errors


def make_importable(folders: Iterable[str | os.PathLike]) -> None:
    """Puts each folder on `sys.path` (once, at the front) so its modules can be imported."""
    for folder in folders:
        path = str(pathlib.Path(folder).resolve())
        if path not in sys.path:
            sys.path.insert(0, path)


def _not_found(name: str, error: BaseException) -> bool:
    """Whether `error` says that `name` itself (or a package above it) was not found, as
    opposed to the module being found and raising while it ran."""
    missing = getattr(error, "name", None)
    if not isinstance(error, ModuleNotFoundError) or not missing:
        return False
    return name == missing or name.startswith(missing + ".")


def _user_frame(error: BaseException) -> str:
    """`file:line` where `error` was raised in the user's code (the deepest frame outside
    Python's and the installed packages' own files), or ''."""
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        return f"{error.filename}:{error.lineno}"
    installed = {
        str(pathlib.Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)
    }
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if frame.filename.startswith("<"):
            continue
        path = str(pathlib.Path(frame.filename).resolve())
        if not any(path.startswith(prefix + os.sep) for prefix in installed):
            return f"{frame.filename}:{frame.lineno}"
    return ""


def import_error(name: str, error: BaseException, at: str = "") -> errors.UserError:
    """The one-line error for a module that failed to import.

    A module that was not found is told where modules are looked for (`--module`,
    `PYTHONPATH`); a module that was found and raised is named with the line that raised.

    Args:
      name: the module's name.
      error: what importing it raised.
      at: where the import was asked for (e.g. a gin file's `file:line`), or ''.
    """
    where = f" at {at}" if at else ""
    if _not_found(name, error):
        detail = " ".join(f"{type(error).__name__}: {error}".split())
        return errors.UserError(
            f"cannot import '{name}' ({detail}){where}; pass --module or set PYTHONPATH"
        )
    message = error.msg if isinstance(error, SyntaxError) else str(error)
    detail = " ".join(f"{type(error).__name__}: {message}".split())
    frame = _user_frame(error)
    raised = f" at {frame}" if frame else ""
    if isinstance(error, ModuleNotFoundError) and error.name:
        fix = f"install '{error.name}', which it imports, or put it on PYTHONPATH"
    else:
        fix = "fix the module"
    return errors.UserError(
        f"cannot import '{name}'{where}: it was found but raised {detail}{raised}; {fix}"
    )


def import_module(spec: str, at: str = "") -> object:
    """Imports a module given by dotted name or by `.py` file path; returns it.

    A file is imported under its stem (`polite_task.py` -> `polite_task`), with its folder
    made importable, so a gin `import polite_task` line finds the same module object.

    Args:
      spec: a dotted module name or a `.py` file.
      at: where the import was asked for (e.g. a gin file's `file:line`), named in errors.

    Raises:
      UserError: the module or file is missing, or importing it raised (one line).
    """
    if spec.endswith(".py") or os.sep in spec:
        path = pathlib.Path(spec)
        if not path.is_file():
            raise errors.UserError(f"--module {spec}: no such Python file")
        name = path.stem
        if name in sys.modules:
            return sys.modules[name]
        make_importable([path.parent])
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise errors.UserError(f"--module {spec}: not an importable Python file")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except errors.UserError:
            del sys.modules[name]
            raise
        except Exception as e:  # the user's module failed: one line, not a traceback
            del sys.modules[name]
            raise import_error(name, e) from None
        return module
    make_importable(["."])
    try:
        return importlib.import_module(spec)
    except errors.UserError:
        raise
    except Exception as e:
        raise import_error(spec, e, at) from None


def import_modules(specs: Sequence[str]) -> list[object]:
    """Imports every `--module` value in order (see `import_module`)."""
    return [import_module(spec) for spec in specs]

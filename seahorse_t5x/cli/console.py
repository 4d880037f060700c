"""What reaches the console besides a command's own lines: TensorFlow's and absl's log
lines are kept off it unless `--verbose` (`quiet_libraries`, entered once by `cli.main`
around the command, before any command imports TensorFlow).

TensorFlow writes its start-up lines from C++ straight to the process's stderr while it is
imported (`All log messages before absl::InitializeLog() ...`, oneDNN, CUDA probing on a
machine without a GPU), whatever `TF_CPP_MIN_LOG_LEVEL` says; so its import runs with file
descriptor 2 pointed at the null device. Its later C++ lines follow `TF_CPP_MIN_LOG_LEVEL`
(3: none but fatal ones), and absl's Python logger (SeqIO's, T5X's and orbax's notes) keeps
its errors only. A value of `TF_CPP_MIN_LOG_LEVEL` set by the user wins.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import logging
import os
import sys
from collections.abc import Iterator

# The modules whose import writes to stderr from C++.
_NOISY_IMPORTS = ("tensorflow",)


@contextlib.contextmanager
def _stderr_to_null() -> Iterator[None]:
    """File descriptor 2 on the null device inside the block (what C++ writes there too)."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


class _QuietLoader(importlib.abc.Loader):
    """Runs another loader's `exec_module` with stderr on the null device."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        # The module keeps its own loader (for its resources and reloads).
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        with _stderr_to_null():
            self.loader.exec_module(module)


class _QuietImport(importlib.abc.MetaPathFinder):
    """Finds `_NOISY_IMPORTS` with the other finders and imports them quietly, once."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _NOISY_IMPORTS:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _QuietLoader(spec.loader)
                return spec
        return None


@contextlib.contextmanager
def quiet_libraries(verbose: bool) -> Iterator[None]:
    """TensorFlow's and absl's log lines off the console inside the block, unless `verbose`
    (module docstring); absl's level and the import hook are restored after it."""
    if verbose:
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from absl import logging as absl_logging  # (absl-py alone: no TensorFlow)

    absl_logger = absl_logging.get_absl_logger()
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)
    hook = None
    if not all(name in sys.modules for name in _NOISY_IMPORTS):
        hook = _QuietImport()
        sys.meta_path.insert(0, hook)
    try:
        yield
    finally:
        absl_logger.setLevel(level)
        if hook is not None and hook in sys.meta_path:
            sys.meta_path.remove(hook)

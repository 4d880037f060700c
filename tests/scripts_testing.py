"""Imports a file of scripts/ as a module, for the tests of those scripts."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from collections.abc import Iterator
from types import ModuleType

SCRIPTS = pathlib.Path(__file__).resolve().parents[1] / "scripts"


def loaded_script(name: str) -> Iterator[ModuleType]:
    """Yields scripts/<name>.py as a module (for a pytest fixture), then unloads it.

    The module is in sys.modules while it is used: dataclasses look their module up there.
    scripts/ is on sys.path meanwhile, as when the script runs (`from bench_common import`).
    """
    sys.path.insert(0, str(SCRIPTS))
    try:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        yield module
        del sys.modules[name]
    finally:
        sys.path.remove(str(SCRIPTS))

"""The whole tree is formatted and linted with ruff (one tool, run by the test command)."""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    exe = shutil.which("ruff", path=str(pathlib.Path(sys.executable).parent))
    if exe is None:
        pytest.fail("ruff is not installed: it is part of the `test` extra")
    return [exe]


def test_ruff_check_passes():
    result = subprocess.run(
        _ruff() + ["check", str(ROOT)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = subprocess.run(
        _ruff() + ["format", "--check", str(ROOT)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""scripts/check_python_versions.py: what it asks pip to resolve (the resolution itself
needs the package index and is recorded in docs/tpu.md)."""

from __future__ import annotations

import pathlib
import re

import pytest

from tests import scripts_testing

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def check():
    yield from scripts_testing.loaded_script("check_python_versions")


def _pinned_block(name: str) -> list[str]:
    text = (ROOT / "setup.py").read_text(encoding="utf-8")
    block = text.split(f"{name} = [")[1].split("]\n")[0]
    return re.findall(r'"([^"]+==[^"]+)"', block)


def test_requirements_are_setup_py_install_requires_and_extras(check):
    base = check.setup_requirements([])
    assert base == _pinned_block("INSTALL_REQUIRES")
    assert "jax==0.10.2" in base and "tensorflow==2.21.0" in base
    with_beam = check.setup_requirements(["beam"])
    assert with_beam[: len(base)] == base
    assert with_beam[len(base) :] == _pinned_block("BEAM_REQUIRES")
    # The GPU extra pins JAX's CUDA plugin at the JAX version the package pins.
    with_cuda = check.setup_requirements(["cuda"])
    assert with_cuda[len(base) :] == ["jax[cuda13]==0.10.2"]
    jax_pin = next(r for r in base if r.startswith("jax=="))
    assert with_cuda[-1].split("==")[1] == jax_pin.split("==")[1]
    with pytest.raises(SystemExit, match="no extra 'nope'"):
        check.setup_requirements(["nope"])


def test_supported_versions_match_python_requires(check):
    text = (ROOT / "setup.py").read_text(encoding="utf-8")
    low, high = re.search(r'python_requires=">=3\.(\d+),<3\.(\d+)"', text).groups()
    assert check.SUPPORTED == tuple(f"3.{minor}" for minor in range(int(low), int(high)))
    # An interpreter that is not there (or a pyenv shim that does not run) is not used.
    assert check._interpreter("3.99") is None

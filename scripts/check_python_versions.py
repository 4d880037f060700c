"""Checks that the pinned packages install on each supported Python, from wheels only.

For every Python version asked for, runs pip's resolver without installing anything:

    python -m pip install --dry-run --ignore-installed --only-binary=:all: \
        --python-version 3.12 --report REPORT.json <setup.py's install_requires> [extras]

and prints one line per version: whether the set resolved, how many packages it pulls in,
and the versions it chose for the pinned packages (or pip's first error line). The wheels'
platform is this machine's (Linux x86_64, as on Cloud TPU VMs) unless --platform is given.
Needs the package index; it is a script, not a test, for that reason.

Usage:
    python scripts/check_python_versions.py                       # 3.11, 3.12, 3.13
    python scripts/check_python_versions.py --versions 3.12 --extras beam
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SUPPORTED = ("3.11", "3.12", "3.13")
# What scripts/launch_tpu.sh setup installs next to this package for T5X (T5X itself, airio
# and jestimator go in without dependencies).
T5X_EXTRA_REQUIREMENTS = (
    "fiddle",
    "jaxtyping",
    "cached_property",
    "chex",
    "grain",
    "portpicker",
    "tensorboard",
)


def setup_requirements(extras: list[str]) -> list[str]:
    """install_requires (and the named extras) read from setup.py without running it."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    lists: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.BinOp)):
            name = node.targets[0].id  # type: ignore[attr-defined]
            try:
                lists[name] = _string_list(node.value, lists)
            except ValueError:
                continue
    setup_call = next(
        n.value
        for n in tree.body
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
        and getattr(n.value.func, "id", "") == "setup"
    )  # fmt: skip
    keywords = {k.arg: k.value for k in setup_call.keywords}
    requirements = list(lists["INSTALL_REQUIRES"])
    extras_node = keywords["extras_require"]
    assert isinstance(extras_node, ast.Dict)
    extras_map = {
        key.value: value for key, value in zip(extras_node.keys, extras_node.values, strict=True)
    }
    for extra in extras:
        if extra not in extras_map:
            raise SystemExit(f"setup.py has no extra {extra!r} (it has {sorted(extras_map)})")
        requirements += _string_list(extras_map[extra], lists)
    return requirements


def _string_list(node: ast.expr, lists: dict[str, list[str]]) -> list[str]:
    if isinstance(node, ast.List):
        values = []
        for element in node.elts:
            if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                raise ValueError("not a list of strings")
            values.append(element.value)
        return values
    if isinstance(node, ast.Name) and node.id in lists:
        return list(lists[node.id])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _string_list(node.left, lists) + _string_list(node.right, lists)
    raise ValueError("not a list of strings")


def _interpreter(version: str) -> str | None:
    """A working `pythonX.Y` on PATH (pyenv shims of inactive versions do not run)."""
    found = shutil.which(f"python{version}")
    if not found:
        return None
    probe = subprocess.run([found, "-c", "import sys; print(sys.version_info[:2])"],
                           capture_output=True, text=True)  # fmt: skip
    expected = str(tuple(int(part) for part in version.split(".")))
    return found if probe.returncode == 0 and probe.stdout.strip() == expected else None


def resolve(version: str, requirements: list[str], platforms: list[str]) -> dict:
    """pip's dry-run resolution for one Python version.

    With an interpreter of that version on PATH (`python3.12`), pip runs under it: a real
    resolution, environment markers included, sdists allowed; the report then says which
    packages came as source (to be built on the host). Without one, pip resolves for
    `--python-version` from wheels only (`--only-binary=:all:`, as pip requires there).

    Returns:
      {ok, how, packages, pinned, sdists} or {ok: False, how, error}.
    """
    interpreter = _interpreter(version)
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.json"
        if interpreter and not platforms:
            how = f"{interpreter} -m pip install --dry-run --ignore-installed"
            command = [interpreter, "-m", "pip", "install", "--dry-run", "--ignore-installed",
                       "--quiet", "--report", str(report)]  # fmt: skip
        else:
            how = f"pip install --dry-run --only-binary=:all: --python-version {version}"
            # pip accepts --python-version only with --target; --dry-run writes nothing there.
            command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
                       "--only-binary=:all:", "--python-version", version, "--quiet",
                       "--target", str(pathlib.Path(tmp) / "target"), "--report", str(report)]  # fmt: skip
            for platform in platforms:
                command += ["--platform", platform]
        result = subprocess.run(command + requirements, capture_output=True, text=True)
        if result.returncode != 0:
            # pip's last ERROR line names what failed (the first may list skipped versions).
            errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
            lines = errors or result.stderr.splitlines() or ["?"]
            return {"ok": False, "how": how, "error": lines[-1]}
        installed = json.loads(report.read_text())["install"]
    chosen = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in installed}
    sdists = sorted(
        f"{item['metadata']['name']} {item['metadata']['version']}"
        for item in installed
        if not item["download_info"]["url"].endswith(".whl")
    )
    pinned = {}
    for requirement in requirements:
        if "==" in requirement:
            name = requirement.split("==")[0].split("[")[0].lower()
            pinned[name] = chosen.get(name, chosen.get(name.replace("_", "-"), "?"))
    return {"ok": True, "how": how, "packages": len(installed), "pinned": pinned,
            "sdists": sdists}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", default=",".join(SUPPORTED), help="e.g. 3.11,3.12,3.13")
    parser.add_argument("--extras", default="", help="setup.py extras to add, e.g. beam")
    parser.add_argument("--platform", action="append", default=[], help="pip --platform tag")
    parser.add_argument(
        "--without_t5x_requirements", action="store_true",
        help="only this package's requirements, not the packages T5X needs on top",
    )  # fmt: skip
    args = parser.parse_args(argv)
    extras = [e for e in args.extras.split(",") if e]
    requirements = setup_requirements(extras)
    if not args.without_t5x_requirements:
        requirements += list(T5X_EXTRA_REQUIREMENTS)
    failures = 0
    for version in args.versions.split(","):
        outcome = resolve(version, requirements, args.platform)
        if outcome["ok"]:
            sdists = ", ".join(outcome["sdists"]) or "none"
            print(f"Python {version}: resolved {outcome['packages']} packages "
                  f"[{outcome['how']}]; from source: {sdists}")  # fmt: skip
            mismatched = {k: v for k, v in outcome["pinned"].items() if v == "?"}
            if mismatched:
                failures += 1
                print(f"  pinned packages missing from the resolution: {sorted(mismatched)}")
        else:
            failures += 1
            print(f"Python {version}: FAILED [{outcome['how']}]: {outcome['error']}")
    extra_text = f" + extras {','.join(extras)}" if extras else ""
    t5x_text = "" if args.without_t5x_requirements else " + T5X's runtime packages"
    print(f"{len(requirements)} requirements (setup.py{extra_text}{t5x_text}); "
          f"{failures} version(s) failed")  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

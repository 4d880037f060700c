"""Runs the ```bash code blocks of a Markdown page in order, in one shell, in a folder.

A page that walks a user through commands (docs/extending.md) is run this way by the tests
and by the installed-wheel check (scripts/check_wheel.sh), so the page cannot drift from what
the commands do. Blocks fenced as ```bash run; other fences (```shell for commands that need
a TPU, T5X or a download, ```python, ```text) are shown to the reader only.

    python scripts/run_doc_blocks.py docs/extending.md --workdir /tmp/extending

Exit status: the shell's (0 when every block succeeded; `set -euo pipefail` stops at the
first failing command).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys

_BLOCK = re.compile(r"^```bash[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def bash_blocks(markdown: str) -> list[str]:
    """The bodies of the page's ```bash blocks, in order."""
    return [match.group(1) for match in _BLOCK.finditer(markdown)]


def script(markdown: str) -> str:
    """One bash script running every block in order, stopping at the first failure."""
    parts = ["set -euo pipefail"]
    for number, block in enumerate(bash_blocks(markdown), start=1):
        parts.append(f"echo '### block {number}' >&2")
        parts.append(block.rstrip("\n"))
    return "\n".join(parts) + "\n"


def run_as_a_new_user(page: pathlib.Path, workdir: pathlib.Path) -> subprocess.CompletedProcess:
    """Runs `page`'s blocks in `workdir` with this Python's commands first on PATH and none
    of the package's environment variables set (as in a fresh shell); output captured."""
    env = dict(os.environ)
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    for name in ("SEAHORSE_DATA_DIR", "SEAHORSE_VOCAB", "PYTHONPATH"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, __file__, str(page), "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", type=pathlib.Path, help="Markdown page")
    parser.add_argument(
        "--workdir",
        type=pathlib.Path,
        required=True,
        help="folder the blocks run in (created; should be empty)",
    )
    args = parser.parse_args(argv)
    markdown = args.page.read_text(encoding="utf-8")
    if not bash_blocks(markdown):
        print(f"{args.page}: no ```bash blocks", file=sys.stderr)
        return 2
    args.workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        ["bash", "-c", script(markdown)], cwd=args.workdir, env=dict(os.environ), check=False
    ).returncode


if __name__ == "__main__":
    sys.exit(main())

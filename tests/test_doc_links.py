"""Every relative link in the README and the docs points at a file that exists, and every
`#anchor` at a heading of its page (GitHub's heading ids)."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "PERFORMANCE.md", *(ROOT / "docs").glob("*.md")])

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's id for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: pathlib.Path) -> set[str]:
    """Every heading id of a page, duplicates numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    ids = set()
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        match = _HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        ids.add(base if count == 0 else f"{base}-{count}")
    return ids


def relative_links(page: pathlib.Path) -> list[str]:
    """The page's link targets that are neither URLs nor mail addresses."""
    links = []
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        for target in _LINK.findall(line):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                links.append(target)
    return links


def test_slug_follows_github():
    assert slug("`t5x-scores`") == "t5x-scores"
    assert slug("Packing of T5X's training rows") == "packing-of-t5xs-training-rows"
    assert slug("bfloat16 against float32 on a GPU (NVIDIA H200): scoring and training") == (
        "bfloat16-against-float32-on-a-gpu-nvidia-h200-scoring-and-training"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: pathlib.Path):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with that id")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)

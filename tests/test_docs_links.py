"""Links in README.md, CONTRIBUTING.md and docs/ point at files of the repository and at
headings that exist; no document points outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

from sharpness.readme.blocks import documents

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of ``path``."""
    out = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            text = re.sub(r"[^\w\- ]", "", text.replace("`", ""))
            out.add(text.replace(" ", "-"))
    return out


def test_links_resolve_inside_the_repository() -> None:
    broken = []
    for doc in documents(ROOT):
        text = doc.read_text()
        if "../shared" in text:
            broken.append(f"{doc.relative_to(ROOT)}: names ../shared (outside the repository)")
        for match in LINK.finditer(text):
            target = match["target"]
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, anchor = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            if not path.exists() or ROOT.resolve() not in path.parents:
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)

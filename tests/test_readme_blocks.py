"""The generated blocks of README.md and docs/: each equals what its source renders.

Computed blocks are regenerated here from the repository and compared; measured blocks must
equal their committed measurement file under benchmarks/measured/. A failure names the
command that renews the block (`sharpness readme refresh`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharpness.errors import SharpnessError
from sharpness.readme.blocks import blocks_in, documents, replace
from sharpness.readme.sources import SOURCES, source

ROOT = Path(__file__).resolve().parents[1]
LOCATED = [(doc.relative_to(ROOT).as_posix(), b.name, b.body)
           for doc in documents(ROOT) for b in blocks_in(doc.read_text())]


def test_every_block_has_a_source_and_the_readme_has_the_main_ones() -> None:
    names = {name for _, name, _ in LOCATED}
    assert names <= set(SOURCES), names - set(SOURCES)
    assert {"claims", "profiles", "gallery", "counts"} <= {
        name for doc, name, _ in LOCATED if doc == "README.md"}
    assert {"cost", "eos-toy", "budget-quick", "startup", "test-paper"} <= names


@pytest.mark.parametrize("doc,name,body", LOCATED, ids=[f"{d}:{n}" for d, n, _ in LOCATED])
def test_block_is_current(doc: str, name: str, body: str) -> None:
    expected = source(name).render(ROOT)
    assert body == expected.rstrip("\n") + "\n", (
        f"{doc}: block {name!r} is stale: run `sharpness readme refresh --only {name}`"
        + (f" after `{source(name).how}`" if source(name).measured else ""))


def test_measured_blocks_carry_commit_and_date() -> None:
    for doc, name, body in LOCATED:
        if source(name).measured and not body.startswith("Not measured yet"):
            assert "Measured on 20" in body and "commit" in body, (doc, name)


def test_markers_replace_and_errors() -> None:
    text = "a\n<!-- begin:x (note) -->\nold\n<!-- end:x -->\nb\n"
    new = replace(text, "x", "new body")
    assert [b.body for b in blocks_in(new)] == ["new body\n"]
    assert new.startswith("a\n") and new.endswith("<!-- end:x -->\nb\n")
    with pytest.raises(SharpnessError, match="no block 'y'"):
        replace(text, "y", "z")
    with pytest.raises(SharpnessError, match="no end marker"):
        blocks_in("<!-- begin:x -->\nbody\n")
    with pytest.raises(SharpnessError, match="more than once"):
        blocks_in(text + text)
    with pytest.raises(SharpnessError, match="no source"):
        source("nope")

"""The generated blocks of README.md and docs/: each equals what its source renders.

Computed blocks are regenerated here from the repository and compared; measured blocks must
equal their committed measurement file under benchmarks/measured/. A failure names the
command that renews the block (`sharpness readme refresh`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sharpness.errors import SharpnessError
from sharpness.readme.blocks import blocks_in, documents, replace
from sharpness.readme.sources import SOURCES, source

ROOT = Path(__file__).resolve().parents[1]
LOCATED = [(doc.relative_to(ROOT).as_posix(), b.name, b.body)
           for doc in documents(ROOT) for b in blocks_in(doc.read_text())]
#: blocks whose source plans the whole workflow (`snakemake -n`) or prices every job of the
#: paper profile (`sharpness cost`, `sharpness plan`: tens of seconds each): the `workflow` tier
PLANS_THE_WORKFLOW = {"counts", "cost", "plan"}


def test_every_block_has_a_source_and_the_readme_has_the_main_ones() -> None:
    names = {name for _, name, _ in LOCATED}
    assert names <= set(SOURCES), names - set(SOURCES)
    assert {"profiles", "gallery", "two-commands"} <= {
        name for doc, name, _ in LOCATED if doc == "README.md"}
    assert ("docs/findings.md", "claims") in {(doc, name) for doc, name, _ in LOCATED}
    assert ("docs/outputs.md", "counts") in {(doc, name) for doc, name, _ in LOCATED}
    assert ("docs/api_lesam.md", "lesam-items") in {(doc, name) for doc, name, _ in LOCATED}
    assert {"cost", "eos-toy", "optimizers", "budget-quick", "startup", "test-paper",
            "test-suite"} <= names


@pytest.mark.parametrize("doc,name,body", [
    pytest.param(d, n, b, id=f"{d}:{n}",
                 marks=[pytest.mark.workflow] if n in PLANS_THE_WORKFLOW else [])
    for d, n, b in LOCATED])
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


MEASURE = re.compile(r"\d[\d,.]*\s*(?:min\b|minutes?\b|s\b|seconds|hours?\b|GPU-hours|CPU-s|%|jobs\b|"
                     r"runs\b|GB\b|MB\b|KB\b|items\b)")


def _prose(text: str) -> str:
    """``text`` without generated blocks, code blocks, inline code and HTML comments."""
    for block in blocks_in(text):
        text = text.replace(block.body, "")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    return re.sub(r"`[^`]*`", "", text)


def test_readme_states_no_measurement_outside_generated_blocks() -> None:
    """A time, size, share or count in the README's own prose would be typed by hand: every
    such number belongs in a generated block."""
    prose = _prose((ROOT / "README.md").read_text())
    found = [m.group(0) for m in MEASURE.finditer(prose)]
    assert not found, f"typed measurements in README.md prose: {found}"

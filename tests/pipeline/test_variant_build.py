"""A figure built with one's own config lands beside the default one, both intact, named as a
variant on its caption, record and end screen; every command that screen suggests runs; and
switching back to the default rebuilds nothing (sharpness.config.variant)."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from tests.pipeline.helpers import (
    copy_workflow,
    run_commands,
    screen_commands,
    snakemake,
    write_config,
)

pytestmark = pytest.mark.workflow  # runs the workflow

FIGURE = "figures/minorfirst/l1_maxmargin.pdf"
TINY = {"minorfirst": {"l1_maxmargin": {"alphas": [1.0], "rhos": [0.1], "steps": 400,
                                        "record_every": 4}}}
MINE = {"minorfirst": {"l1_maxmargin": {"alphas": [1.0], "rhos": [0.1], "steps": 200,
                                        "record_every": 4}}}


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def both(tmp_path_factory, repo, bin_dir):
    """A checkout copy with the default build of FIGURE, then a variant build of it."""
    work = copy_workflow(repo, tmp_path_factory.mktemp("variant"))
    cfg = write_config(work, TINY)  # `variant: default`: the default folders
    snakemake(bin_dir, work, FIGURE, "--cores", "2", "--configfile", str(cfg))
    before = {p: _sha(p) for p in (work / "figures").rglob("*") if p.is_file()}
    (work / "my.yaml").write_text(yaml.safe_dump(MINE))
    proc = snakemake(bin_dir, work, FIGURE, "--cores", "2", "--configfile", "my.yaml")
    return work, before, proc.stdout + proc.stderr


def _variant(work):
    (folder,) = (work / "variants").glob("my-*")
    return folder


def test_the_variant_builds_beside_the_default_which_stays_intact(both, bin_dir):
    work, before, _ = both
    assert {p: _sha(p) for p in (work / "figures").rglob("*") if p.is_file()} == before
    folder = _variant(work)
    assert folder.name.startswith("my-")
    record = json.loads((folder / "variant.json").read_text())
    assert record["profile"] == "quick"
    keys = {d["key"] for d in record["differences"]}
    assert "minorfirst.l1_maxmargin.steps" in keys and "variant" not in keys
    for suffix in (".pdf", ".png", ".csv", ".caption.txt", ".provenance.json"):
        assert (folder / FIGURE.replace(".pdf", suffix)).stat().st_size > 0
    caption = (folder / FIGURE.replace(".pdf", ".caption.txt")).read_text()
    assert f"variant '{folder.name}' of the quick profile" in caption
    assert "minorfirst.l1_maxmargin.steps: 2000 → 200" in caption
    default_caption = (work / FIGURE.replace(".pdf", ".caption.txt")).read_text()
    assert "variant" not in default_caption
    prov = json.loads((folder / FIGURE.replace(".pdf", ".provenance.json")).read_text())
    assert prov["variant"]["name"] == folder.name and prov["params"]["steps"] == 200
    # switching back to the default recomputes nothing
    again = snakemake(bin_dir, work, "-n", FIGURE, "--configfile", "test-config.yaml")
    assert "Nothing to be done" in again.stdout + again.stderr


def test_every_command_the_variants_end_screen_suggests_runs(both, bin_dir):
    work, _, printed = both
    folder = _variant(work)
    assert f"  variants/{folder.name}/{FIGURE}\n" in printed
    commands = screen_commands(printed)
    assert [c.split()[:2] for c in commands] == [
        ["snakemake", FIGURE], ["sharpness", "crate"], ["sharpness", "audit"],
        ["sharpness", "diff"]], commands
    out = {c.split()[1]: text for c, text in run_commands(commands, work, bin_dir).items()}
    assert (folder / "report.html").stat().st_size > 0
    assert (folder / "results/part.crate.zip").stat().st_size > 0
    assert not (work / "report.html").exists() and not (work / "results/part.crate.zip").exists()
    assert f"variant:  variant '{folder.name}'" in out["audit"]
    assert "params:   steps: 400 -> 200" in out["diff"]
    assert "numbers:  " in out["diff"] and " rows x 6 columns -> " in out["diff"]
    assert (work / "compare.png").stat().st_size > 0


def test_a_seed_offset_from_the_command_line_is_a_named_second_look(both, bin_dir):
    work, _, _ = both
    proc = snakemake(bin_dir, work, "-n", FIGURE, "--config", "seed_offset=3")
    assert "builds in variants/seed3/" in proc.stderr

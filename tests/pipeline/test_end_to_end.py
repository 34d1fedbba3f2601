"""A tiny run of the real workflow in a temporary directory, then `sharpness audit` on it."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.pipeline.helpers import (
    copy_workflow,
    run_commands,
    screen_commands,
    snakemake,
    write_config,
)

pytestmark = pytest.mark.workflow  # runs the workflow

FIGURE = "figures/minorfirst/l1_maxmargin.pdf"  # the catalog item, at a tiny size
TINY = {"minorfirst": {"l1_maxmargin": {"alphas": [1.0], "rhos": [0.1], "steps": 400, "record_every": 4}}}
WILDCARD_FIGURE = "figures/minorfirst/flow_vs_discrete.pdf"  # built by a rule with a {fig} wildcard


@pytest.fixture(scope="module")
def built(tmp_path_factory, repo, bin_dir):
    work = copy_workflow(repo, tmp_path_factory.mktemp("e2e"))
    cfg = write_config(work, TINY)
    proc = snakemake(bin_dir, work, FIGURE, WILDCARD_FIGURE, "--cores", "2", "--configfile",
                     str(cfg))
    (work / "build.out").write_text(proc.stdout + proc.stderr)  # its closing screen
    return work


def test_the_closing_screen_lists_this_build_and_each_command_it_suggests_runs(built, bin_dir):
    """After a build of two figures the screen names those two (not the whole profile), and
    its report, crate and audit commands, computed from the build's targets, each succeed."""
    printed = (built / "build.out").read_text()
    screen = printed[printed.index("The build is done."):]
    assert "built:    2 figure(s) and table(s) in this run" in screen
    assert f"  {FIGURE}\n" in screen and f"  {WILDCARD_FIGURE}\n" in screen
    commands = screen_commands(printed)
    assert [c.split()[0] for c in commands] == ["snakemake", "sharpness", "sharpness"], commands
    assert FIGURE in commands[0] and "--report report.html" in commands[0]
    run_commands(commands, built, bin_dir)
    assert (built / "report.html").stat().st_size > 0
    assert (built / "results/part.crate.zip").stat().st_size > 0


def test_figure_and_sidecars_exist(built):
    for suffix in (".pdf", ".png", ".csv", ".provenance.json", ".caption.txt"):
        assert (built / FIGURE.replace(".pdf", suffix)).stat().st_size > 0
    assert (built / "results/minorfirst/l1_maxmargin/provenance.json").exists()
    assert list((built / "benchmarks/results/minorfirst").glob("*.tsv"))
    assert list((built / "logs/minorfirst").glob("*.log"))


def test_report_has_captions_categories_and_provenance_ids(built, bin_dir):
    import zipfile

    snakemake(bin_dir, built, "--report", "report.zip", FIGURE, WILDCARD_FIGURE,
              "--configfile", "test-config.yaml")
    with zipfile.ZipFile(built / "report.zip") as archive:
        html = next(archive.read(n).decode() for n in archive.namelist()
                    if n.endswith("report.html"))
    for fig in (FIGURE, WILDCARD_FIGURE):
        record = json.loads((built / fig.replace(".pdf", ".provenance.json")).read_text())
        assert record["id"] in html  # the provenance label, read when the report is built
    # each item's own caption, also for the wildcard rule (Snakemake cannot put a wildcard in
    # a caption path; the text comes through the rule's params)
    first_line = (built / "workflow/report/minorfirst/flow_vs_discrete.rst").read_text() \
        .splitlines()[2][:40]
    assert first_line in html
    assert "snakemake.params.caption" not in html and "minorfirst" in html


def test_pdf_and_png_carry_provenance_id(built):
    record = json.loads((built / FIGURE.replace(".pdf", ".provenance.json")).read_text())
    stamp = f"sharpness-provenance:{record['id']}".encode()
    assert stamp in (built / FIGURE).read_bytes()
    assert stamp in (built / FIGURE.replace(".pdf", ".png")).read_bytes()


def test_run_numbers_are_real(built):
    import numpy as np

    with np.load(built / "results/minorfirst/l1_maxmargin/data.npz") as data:
        cosine = data["single_gd_cos"][0]
        closed = data["single_closed_cos"][0]
    assert len(cosine) == 101  # 400 steps recorded every 4: the test's config reached the job
    assert np.all(np.diff(cosine) > 0)  # GD turns steadily toward the max-margin direction
    assert cosine[-1] > 0.9
    # at L=1 on one example GD's iterate is alpha 1 + s mu exactly: the run is that formula
    np.testing.assert_allclose(cosine, closed, atol=1e-12)


def test_audit_prints_chain(built, bin_dir):
    proc = subprocess.run([str(bin_dir / "sharpness"), "audit", FIGURE], cwd=built,
                          capture_output=True, text=True, check=True)
    out = proc.stdout
    assert "figure" in out and "run " in out  # the figure and the run behind it
    assert "steps=400" in out  # the resolved parameters
    assert "torch 2.14.1" in out and "code:" in out and "device:" in out


def test_audit_without_provenance_fails_clearly(tmp_path, bin_dir):
    stray = tmp_path / "stray.pdf"
    stray.write_bytes(b"%PDF-1.4")
    proc = subprocess.run([str(bin_dir / "sharpness"), "audit", str(stray)], capture_output=True,
                          text=True)
    assert proc.returncode == 2
    assert "no provenance found" in proc.stderr


def test_rerun_is_a_no_op_until_a_setting_changes(built, bin_dir):
    same = snakemake(bin_dir, built, "-n", FIGURE, "--configfile", "test-config.yaml")
    assert "Nothing to be done" in same.stdout + same.stderr
    changed = snakemake(bin_dir, built, "-n", FIGURE)  # default steps differ from the test's
    assert "minorfirst_diagonal_run" in changed.stdout

"""A tiny build of the real workflow (one figure, the ledger, the crate, as a GPU-budget plan
limits `all`), its end-of-run screen, and its `snakemake --report` opened in headless
Chromium: every figure and the ledger are shown, no console error, a screenshot kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sharpness.planning.claims_plan import plan_id
from tests.crate.validation import required_issues, seed_cache
from tests.pipeline.helpers import copy_workflow, snakemake, write_config

pytestmark = pytest.mark.workflow  # runs the workflow

FIGURE = "figures/minorfirst/l1_maxmargin.pdf"
TINY = {"minorfirst": {"l1_maxmargin": {"alphas": [1.0], "rhos": [0.1], "steps": 400,
                                        "record_every": 4}}}
#: where the screenshots are kept (CI artefacts); docs/report.png is a copy of one
ARTEFACTS = Path(os.environ.get("SHARPNESS_TEST_ARTEFACTS", "test-artefacts"))
#: Chromium's flags: headless, no sandbox (root in CI), nothing fetched, a fresh profile
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def built(tmp_path_factory, repo, bin_dir):
    """`snakemake --cores 2` over a plan of one figure and the ledger: returns the folder and
    what the run printed."""
    work = copy_workflow(repo, tmp_path_factory.mktemp("tiny"))
    plan = {"claims": {}, "targets": [FIGURE.replace(".pdf", ".csv"), "figures/CLAIMS.md"]}
    (work / "plan.json").write_text(json.dumps({"id": plan_id(plan), **plan}))
    cfg = write_config(work, {**TINY, "plan": {"id": plan_id(plan), "file": "plan.json",
                                               "targets": plan["targets"]}})
    proc = snakemake(bin_dir, work, "--cores", "2", "--configfile", str(cfg))
    return work, proc.stdout + proc.stderr


def test_the_crate_the_rule_wrote_passes_the_validator(built, tmp_path):
    work, _ = built
    issues, checked = required_issues(work / "results/build.crate.zip",
                                      "provenance-run-crate-0.5",
                                      seed_cache(tmp_path / "validator-cache"))
    assert issues == [] and "workflow-ro-crate-1.0" in checked, issues


def test_the_run_ends_with_what_it_made(built):
    work, printed = built
    screen = printed[printed.index("The build is done."):]
    assert "built:    1 figure(s) and table(s) in this run" in screen and f"  {FIGURE}\n" in screen
    assert "ledger:   figures/CLAIMS.md, profile quick" in screen
    assert "a smoke test" in screen  # the quick profile's evidence level, said
    counts = json.loads((work / "figures/claims.json").read_text())["counts"]
    for paper, verdicts in counts.items():
        line = next(x for x in screen.splitlines() if x.startswith(f"  {paper:<22} "))
        assert all(f"{n} {v}" in line for v, n in verdicts.items() if n), line
    assert "crate:    results/build.crate.zip" in screen
    assert (work / "results/build.crate.zip").stat().st_size > 0
    assert "--report report.html" in screen and f"sharpness audit {FIGURE}" in screen
    assert f"sharpness audit --crate results/build.crate.zip {FIGURE}" in screen


def _chromium() -> str:
    """Debian's Chromium, installed when missing (root with apt), else the test is skipped."""
    found = shutil.which("chromium")
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        for step in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]):
            subprocess.run(step, capture_output=True, timeout=900)
        found = shutil.which("chromium")
    if found is None:
        pytest.skip("no Chromium: `apt-get install chromium` (Debian) needs root and the "
                    "package archive")
    return found


def test_the_report_shows_every_figure_and_the_ledger_in_chromium(built, bin_dir, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    work, _ = built
    snakemake(bin_dir, work, "--report", "report.html", "--configfile", "test-config.yaml")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=FLAGS[1:], headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route("http*://**", lambda route: route.abort())  # nothing from the network
        shown = {}
        for category in ("minorfirst", "claims"):  # each from the report's first page
            page.goto((work / "report.html").as_uri())
            page.wait_for_load_state("networkidle")
            page.get_by_text(category, exact=True).first.click()
            page.wait_for_timeout(500)
            shown[category] = page.inner_text("body")
            page.screenshot(path=str(ARTEFACTS / f"report-{category}.png"))
        browser.close()
    # each item's row: its name and its provenance id, as the report read it from the record
    figure_id = json.loads((work / FIGURE.replace(".pdf", ".provenance.json")).read_text())["id"]
    assert f"l1_maxmargin\t{figure_id}" in shown["minorfirst"], shown["minorfirst"][:2000]
    assert "CLAIMS\tledger" in shown["claims"], shown["claims"][:2000]
    assert errors == [], errors
    assert all((ARTEFACTS / f"report-{c}.png").stat().st_size > 10_000 for c in shown)


def test_a_failed_job_names_its_log_and_the_resume_command(built, bin_dir):
    work, _ = built
    (work / "figures/minorfirst/l1_maxmargin.provenance.json").unlink()  # the plot reruns
    (work / "workflow/rules/minorfirst.smk").write_text(
        (work / "workflow/rules/minorfirst.smk").read_text().replace(
            '"sharpness --profile {params.profile:q} minorfirst plot',
            '"false && sharpness --profile {params.profile:q} minorfirst plot', 1))
    assert "false && sharpness" in (work / "workflow/rules/minorfirst.smk").read_text()
    proc = snakemake(bin_dir, work, FIGURE, "--cores", "1", "--configfile", "test-config.yaml",
                     check=False)
    printed = proc.stdout + proc.stderr
    assert proc.returncode != 0
    screen = printed[printed.index("The build stopped: a job failed."):]
    assert "its log logs/minorfirst/" in screen
    assert "--configfile test-config.yaml" in screen and "resume" in screen

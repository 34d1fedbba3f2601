"""A campaign cut at the end of an allocation and resumed twice ends with the same results as
an uncut one (issue 49, point 5), on the CPU (``sharpness campaign --tiny``).

One claim whose stage trains real runs (``ls-robust``: LE-SAM and SAM on the quick
profile's narrow ResNet-18, three seeds each, then PGD), made small by an overlay. The uncut
campaign runs once in one copy of the workflow. In a second copy the campaign is cut twice:
first by SIGTERM (a scheduler's warning before its wall-time limit, as SLURM's ``--signal``)
sent as soon as a training run has written its first checkpoint, so the next call must resume
that run from it; then by ``--max-wall`` (with ``--wall-margin 0``: seconds, not the minutes a
GPU allocation keeps free). A third call completes. The table's CSV and every run's
``final.json`` (final metrics, step count, fingerprints of initial weights and data order)
must be identical, and the run cut after its checkpoint must say it resumed from it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.workflow  # runs snakemake, starts and signals processes

#: small runs (three epochs of 256 images, a checkpoint every epoch) and a short PGD
OVERLAY = """\
lesam:
  base: {train_size: 256, test_size: 256, epochs: 3, batch_size: 64, checkpoint_every: 1}
  items:
    table_robustness: {n_test: 32, steps: 2}
"""
TABLE = "figures/lesam/table_robustness.csv"
RUNS = "results/lesam/runs"


def _copy(repo: Path, dest: Path) -> Path:
    from tests.pipeline.helpers import copy_workflow

    dest.mkdir()
    copy_workflow(repo, dest)
    (dest / "data").symlink_to(repo / "data")
    (dest / "tiny.yaml").write_text(OVERLAY)
    return dest


def _argv(bin_dir: Path, *extra: str) -> list[str]:
    return [str(bin_dir / "sharpness"), "campaign", "--tiny", "--gpu-hours", "1",
            "--claims", "ls-robust", "--cores", "2", "--configfile",
            "workflow/config/quick.yaml", "--configfile", "tiny.yaml", *extra]


def _env(bin_dir: Path) -> dict[str, str]:
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def _campaign(work: Path, bin_dir: Path, *extra: str) -> tuple[int, dict, str]:
    proc = subprocess.run(_argv(bin_dir, *extra), cwd=work, env=_env(bin_dir),
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, _record(work), proc.stdout[-3000:] + proc.stderr[-3000:]


def _record(work: Path) -> dict:
    return json.loads((work / "plans/campaign/campaign.json").read_text())


def _build(work: Path) -> Path:
    """The campaign's build: tiny.yaml changes the profile's settings, so it is a variant,
    built in variants/tiny-<hash>/ (sharpness.config.variant)."""
    found = sorted((work / "variants").glob("tiny-*"))
    assert len(found) <= 1, found
    return found[0] if found else work / "variants" / "none-yet"


def _runs(work: Path) -> list[Path]:
    """The run folders (not the hidden lock files beside them)."""
    return [d for d in sorted((_build(work) / RUNS).glob("[!.]*")) if d.is_dir()]


def _interrupted(work: Path) -> list[Path]:
    """Run folders holding a checkpoint and no final record: runs cut mid-training."""
    return [d for d in _runs(work)
            if (d / "checkpoint.pt").is_file() and not (d / "final.json").is_file()]


def _finals(work: Path) -> dict[str, dict]:
    return {d.name: json.loads((d / "final.json").read_text()) for d in _runs(work)}


def test_a_campaign_cut_twice_and_resumed_ends_as_an_uncut_one(repo, bin_dir, tmp_path):
    uncut = _copy(repo, tmp_path / "uncut")
    rc, record, log = _campaign(uncut, bin_dir)
    assert rc == 0 and record["ended"] == "completed", log
    assert record["bought"] == ["ls-robust", "ledger"]

    cut = _copy(repo, tmp_path / "cut")
    # 1. stopped by SIGTERM as soon as a run has written its first checkpoint
    t0 = time.monotonic()
    proc = subprocess.Popen(_argv(bin_dir), cwd=cut, env=_env(bin_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        while not _interrupted(cut):
            assert proc.poll() is None, "the campaign ended before any run checkpointed: " \
                + (proc.stdout.read()[-3000:] if proc.stdout else "")
            assert time.monotonic() - t0 < 300, "no checkpoint within 5 minutes"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        log = proc.communicate(timeout=300)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, log[-3000:]
    first = _record(cut)
    # the plan's claims and the ledger are one call (sharpness.planning.campaign.PLAN_STAGE)
    assert first["continues"] and "stopped by SIGTERM during stage \"the plan's claims" in \
        first["ended"] and "next call continues" in first["ended"], first["ended"]
    assert first["not_started"] == [] and first["bought"] == []
    resumable = _interrupted(cut)
    assert resumable, "the cut left no checkpointed, unfinished run"
    # 2. cut by the wall-time limit: the first call's overhead, then a third of the stage time
    # the uncut campaign needed for all of it (so the cut falls mid-stage on a fast machine as
    # on a slow one; a fixed allowance let a fast quiet machine finish uncut)
    overhead = first["spent_gpu_hours"] * 3600 - sum(s["wall_s"] for s in first["stages"])
    allowance = max(2.0, sum(s["wall_s"] for s in record["stages"]) / 3)
    rc, second, log = _campaign(cut, bin_dir, "--max-wall", f"{overhead + allowance:.0f}",
                                "--wall-margin", "0")
    assert rc == 0 and second["continues"] and "wall-time limit" in second["ended"], log
    assert second["spent_gpu_hours"] > first["spent_gpu_hours"]  # carried, then added to
    # 3. the last call completes
    done = [d for d in _runs(cut) if (d / "final.json").is_file()]  # finished before it
    rc, third, log = _campaign(cut, bin_dir)
    assert rc == 0 and third["ended"] == "completed", log
    assert third["bought"] == ["ls-robust", "ledger"]
    # the resumed plan prices the runs finished in earlier calls at 0 (--finished-free)
    source = json.loads((cut / "plans/campaign/plan.json").read_text())["claims"][
        "ls-robust"]["hours_source"]
    assert ("finished on this machine (paid earlier): 0 now" in source) == bool(done), source

    # the same results
    assert not (cut / "results").exists()  # the default folders are never written
    assert (_build(cut) / TABLE).read_text() == (_build(uncut) / TABLE).read_text()
    finals = _finals(cut)
    assert finals == _finals(uncut) and len(finals) == 6
    # a run cut after its checkpoint continues from it; one that finished in the instant
    # before a cut is deleted by Snakemake as incomplete and trains again (its checkpoint was
    # already gone), which a loaded machine makes likelier: at least one run must resume
    resumed = [run.name for run in resumable
               if json.loads((run / "provenance.json").read_text()).get("resumed_from_step")]
    assert resumed, f"none of {[r.name for r in resumable]} resumed from its checkpoint"
    # a further call would pay nothing for these runs: the planner recognises each finished
    # folder (its records hold the engine's validated config) as the planned run
    from sharpness.config.profiles import load_profile
    from sharpness.planning.prices import run_prices

    config = load_profile([str(cut / f) for f in ("workflow/config/quick.yaml", "tiny.yaml",
                                                  "plans/campaign/plan.yaml")], None)
    keys = frozenset(("lesam", d.name) for d in _runs(cut))
    again = run_prices(config, method="analytic", results=_build(cut) / "results", only=keys,
                       finished_free=True)
    assert {again.hours[k] for k in keys} == {0.0}, again.source

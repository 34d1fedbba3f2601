"""What a registration fixes beyond the predicates: rules, items' config, producer code, its
commit in git, and the rows re-registered after a committed ledger's data."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

from sharpness.claims.model import ItemData
from sharpness.claims.registration import deviations, registration, rules_changes
from sharpness.claims.registration_checks import (
    config_changes,
    git_check,
    item_facts,
    producer_changes,
    re_registered,
)
from sharpness.claims.rules import rules_for
from tests.catalog import CLAIMS as ALL_CLAIMS

CLAIMS = ALL_CLAIMS
CONFIG = {"profile": "evidence", "minorfirst": {"linf_depth": {"rho": 0.5}, "l1_maxmargin": {}}}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", f"--git-dir={repo / '.git'}", f"--work-tree={repo}", *args],
                   check=True, capture_output=True)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "config", "user.email", "t@example.org")
    _git(repo, "config", "user.name", "t")
    return repo


def test_min_seeds_under_a_registration_is_a_deviation() -> None:
    record = {"rules": vars(rules_for("evidence")), "claims": {}}
    assert rules_changes(record, rules_for("evidence")) == []
    assert rules_changes(record, rules_for("evidence", min_seeds=3)) == ["min_seeds 4 → 3"]
    devs = deviations(record, [], rules_for("evidence", min_seeds=3))
    assert devs[0]["id"] == "rules" and "min_seeds 4 → 3" in devs[0]["what"][0]


def test_a_changed_item_config_or_producer_is_a_deviation() -> None:
    claims = [c for c in CLAIMS if c.items == ("minorfirst/linf_depth",)]
    record = {"items": item_facts(CONFIG, claims),
              "code_files": {"sharpness/minorfirst/fig_linf.py": "a", "sharpness/io.py": "b"}}
    assert config_changes(record, CONFIG, claims) == {}
    moved = {**CONFIG, "minorfirst": {"linf_depth": {"rho": 0.3}}}
    changed = config_changes(record, moved, claims)
    assert changed[claims[0].id] == ["config of minorfirst/linf_depth changed"]
    data = {"minorfirst/linf_depth": ItemData("minorfirst/linf_depth", None, code_files={
        "sharpness/minorfirst/fig_linf.py": "z", "sharpness/io.py": "b",
        "sharpness/claims/ledger.py": "whatever"})}
    what = producer_changes(record, data, claims)[claims[0].id]
    assert what == ["producer code of minorfirst/linf_depth changed: "
                    "sharpness/minorfirst/fig_linf.py"]
    full = registration("evidence", claims, CONFIG)
    assert "sharpness/claims/registration_checks.py" in full["code_files"]
    assert set(full["items"]) == {"minorfirst/linf_depth"}


def test_git_check_finds_the_commit_and_an_edit_after_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    reg = repo / "docs" / "registration" / "evidence.json"
    reg.parent.mkdir(parents=True)
    reg.write_text('{"id": "x"}\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "register")
    later = ItemData("a/b", None, started="2999-01-01T00:00:00+00:00")
    found = git_check(reg, {"a/b": later})
    assert found["problem"] is None and found["blob_equal"] and found["before_run"]
    early = ItemData("a/b", None, started="2000-01-01T00:00:00+00:00")
    assert "after the run's first item was built" in git_check(reg, {"a/b": early})["problem"]
    reg.write_text('{"id": "y"}\n')  # edited after its commit, id recomputed or not
    assert "differs from the file committed in" in git_check(reg, {"a/b": later})["problem"]
    assert "not in a git checkout" in git_check(tmp_path / "r.json", {})["problem"]


def test_a_row_changed_after_a_committed_ledger_is_re_registered(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    claim = next(c for c in CLAIMS if c.id == "mf-l1")
    yaml_path = repo / "src" / "sharpness" / "claims" / "claims.yaml"
    yaml_path.parent.mkdir(parents=True)
    yaml_path.write_text(json.dumps([{"id": "mf-l1", "params": {"tol": 0.01},
                                      "predicate": claim.predicate}]))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the run's code")
    run = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                         capture_output=True, text=True).stdout.strip()
    (repo / "docs").mkdir()
    (repo / "docs" / "claims_evidence.record.json").write_text(
        json.dumps({"profile": "evidence", "git_commit": run}))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "its ledger")
    again = re_registered([claim, replace(claim, id="other")], "evidence", repo)
    assert again == {"mf-l1": f"docs/claims_evidence.csv (run at {run[:7]}): parameters",
                     "other": f"docs/claims_evidence.csv (run at {run[:7]}): new row"}
    kind = re_registered([replace(claim, params={"tol": 0.01}, kind="extension")], "evidence",
                         repo)
    assert kind == {"mf-l1": f"docs/claims_evidence.csv (run at {run[:7]}): kind"}
    assert re_registered([replace(claim, params={"tol": 0.01})], "evidence", repo) == {}
    assert re_registered([claim], "quick", repo) == {}


def test_the_first_job_is_the_earliest_run_behind_an_item(tmp_path: Path,
                                                          monkeypatch) -> None:
    """A figure built after the registration from runs trained before it: the git check reads
    the runs' start through the figure's inputs (and their inputs), not the figure job's own."""
    from sharpness.claims.model import load_item
    from sharpness.plots.save import write_csv
    from sharpness.runs import provenance
    from sharpness.runs.provenance import earliest, write_artifact_provenance

    trained = "2001-02-03T04:05:06+00:00"
    run = tmp_path / "results" / "run0"
    run.mkdir(parents=True)
    (run / "final.json").write_text("{}")
    with monkeypatch.context() as m:  # the run began long ago
        m.setattr(provenance, "now_iso", lambda: trained)
        provenance.write_run_provenance(run, params={"lr": 0.1}, seed=0,
                                        outputs=["final.json"])
    figures = tmp_path / "figures"
    write_csv(figures / "eos" / "fig_x.csv", [{"a": 1}])
    fig = write_artifact_provenance(figures / "eos" / "fig_x.csv", kind="figure", inputs=[run])
    assert fig["inputs"][0]["started"] == trained and fig["first_started"] == trained
    assert fig["started"] > trained
    # a figure of that figure: the earliest start of the whole chain
    write_csv(figures / "eos" / "fig_y.csv", [{"a": 2}])
    second = write_artifact_provenance(figures / "eos" / "fig_y.csv", kind="figure",
                                       inputs=[figures / "eos" / "fig_x.csv"])
    assert second["first_started"] == trained
    item = load_item(figures, "eos/fig_y")
    assert item is not None and item.started == trained
    assert earliest(["2002-01-01T00:00:00+00:00", trained, "not a time"]) == trained
    # a registration committed today is after this run's first job
    repo = _repo(tmp_path)
    reg = repo / "evidence.json"
    reg.write_text("{}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "register")
    assert "after the run's first item was built" in git_check(reg, {"eos/fig_y": item})["problem"]

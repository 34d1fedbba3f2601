"""A build's crate: valid against the Workflow Run profiles it declares (folder and zip),
every job an action from its record, the claims pointing at the files they read; the crate
refuses a file edited after its record."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.crate.build import PROFILES, write_crate
from tests.crate.conftest import FIGURE
from tests.crate.validation import (
    explained_kinds,
    issue_kinds,
    required_issues,
    seed_cache,
)

# builds a small run, figure and ledger (about 15 s) and runs roc-validator (about 10 s a
# profile): second tier
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def crate(build: Path) -> Path:
    out = build / "build.crate.zip"
    assert main(["crate", "--root", str(build), "--out", str(out)]) == 0
    return out


def _graph(crate: Path) -> dict[str, dict]:
    with zipfile.ZipFile(crate) as archive:
        graph = json.loads(archive.read("ro-crate-metadata.json"))["@graph"]
    return {e["@id"]: e for e in graph}


def test_zip_and_folder_pass_every_required_check_of_the_declared_profiles(crate, tmp_path):
    cache = seed_cache(tmp_path / "validator-cache")
    folder = tmp_path / "unpacked"
    with zipfile.ZipFile(crate) as archive:
        archive.extractall(folder)
    graph = _graph(crate)
    declared = {c["@id"] for c in graph["./"]["conformsTo"]}
    declared |= {c["@id"] for c in graph["ro-crate-metadata.json"]["conformsTo"]}
    assert set(PROFILES) | {"https://w3id.org/ro/crate/1.1"} <= declared
    for target in (crate, folder):
        issues, checked = required_issues(target, "provenance-run-crate-0.5", cache)
        assert issues == [], "\n".join(issues)
        # the profile and every profile it builds on were checked
        assert {"provenance-run-crate-0.5", "workflow-run-crate-0.5", "process-run-crate-0.5",
                "workflow-ro-crate-1.0", "ro-crate-1.1"} <= checked, checked


def _edited(crate: Path, folder: Path, edit: Callable[[dict], None]) -> Path:
    """The crate unpacked into ``folder``, ``edit`` applied to each entity of its metadata."""
    with zipfile.ZipFile(crate) as archive:
        archive.extractall(folder)
    metadata = folder / "ro-crate-metadata.json"
    doc = json.loads(metadata.read_text())
    for entity in doc["@graph"]:
        edit(entity)
    metadata.write_text(json.dumps(doc))
    return folder


def test_an_invalid_crate_is_caught(crate, tmp_path):
    """The validation can fail: the same crate with its main workflow's types cut to File."""
    cache = seed_cache(tmp_path / "validator-cache")

    def cut(entity: dict) -> None:
        if entity["@id"] == "Snakefile":
            entity["@type"] = "File"

    issues, _ = required_issues(_edited(crate, tmp_path / "broken", cut),
                                "workflow-ro-crate-1.0", cache)
    assert any("Main Workflow" in i for i in issues), issues


def test_the_recommended_issues_left_are_exactly_those_docs_audit_explains(crate, repo,
                                                                          tmp_path):
    """No REQUIRED issue; each kind of RECOMMENDED issue left (a validator check) has its
    paragraph in docs/audit.md, and each paragraph's kind still occurs (a new kind, or one
    fixed without its paragraph removed, fails)."""
    required, kinds = issue_kinds(crate, "provenance-run-crate-0.5",
                                  seed_cache(tmp_path / "validator-cache"))
    assert required == [], "\n".join(required)
    explained = explained_kinds(repo / "docs/audit.md")
    assert explained, "docs/audit.md explains no kind"
    assert set(kinds) == explained, (f"not explained in docs/audit.md: "
                                     f"{sorted(set(kinds) - explained)}; explained but gone: "
                                     f"{sorted(explained - set(kinds))}")


def test_a_recommended_kind_docs_audit_does_not_explain_is_caught(crate, repo, tmp_path):
    """The comparison can fail: the same crate without the root's mentions and the actions'
    agents shows the kinds the crate fixes, which docs/audit.md does not explain."""
    def unmention(entity: dict) -> None:
        entity.pop("mentions", None)
        if entity["@type"] == "CreateAction":
            entity.pop("agent", None)

    _, kinds = issue_kinds(_edited(crate, tmp_path / "unmentioned", unmention),
                           "provenance-run-crate-0.5",
                           seed_cache(tmp_path / "validator-cache"))
    new = set(kinds) - explained_kinds(repo / "docs/audit.md")
    assert {"process-run-crate-0.5_8.1", "process-run-crate-0.5_8.6"} <= new, kinds


def test_every_job_is_an_action_read_from_its_record(crate, build):
    graph = _graph(crate)
    workflow = graph[graph["./"]["mainEntity"]["@id"]]
    language = graph[workflow["programmingLanguage"]["@id"]]
    assert language["name"] == "Snakemake" and language["version"] == "9.27.1"
    jobs = [e for e in graph.values() if e["@type"] == "CreateAction"
            and e["@id"] != "#workflow-run"]
    records = sorted(str(p.relative_to(build)) for p in build.rglob("*provenance.json"))
    assert sorted(graph[j["subjectOf"]["@id"]]["@id"] for j in jobs) == records
    for job in jobs:
        record = json.loads((build / job["subjectOf"]["@id"]).read_text())
        assert job["identifier"] == record["id"]
        assert (job["startTime"], job["endTime"]) == (record["started"], record["ended"])
        assert job["actionStatus"] == "http://schema.org/CompletedActionStatus"
        assert job["description"].startswith("command: ")
        assert f"torch {record['packages']['torch']}" in job["description"]  # where it ran
        tool = graph[job["instrument"]["@id"]]
        pins = {graph[p["@id"]]["name"]: graph[p["@id"]]["version"]
                for p in tool["softwareRequirements"]}
        assert pins["torch"] == record["packages"]["torch"]
    figure = graph[FIGURE]
    assert figure["sha256"] == json.loads(
        (build / FIGURE.replace(".pdf", ".provenance.json")).read_text())["output_sha256"][
        str(build / FIGURE)]
    assert graph["figures/CLAIMS.md"]["isBasedOn"]["@id"] == "docs/registration/quick.json"
    # an input another job made is that job's entity in the crate, whatever the order
    read = {j["name"]: j.get("object") for j in jobs}
    assert read[f"figure {FIGURE}"] == {"@id": "results/minorfirst/l1_maxmargin/"}
    assert read["ledger figures/CLAIMS.md"] == {"@id": "figures/minorfirst/l1_maxmargin.csv"}


def test_each_claim_points_to_the_files_its_verdict_reads(crate, build):
    graph = _graph(crate)
    ledger = json.loads((build / "figures/claims.json").read_text())
    claims = {e["name"]: e for e in graph.values() if e["@type"] == "Claim"}
    assert set(claims) == {row["id"] for row in ledger["claims"]}
    mf_l1 = claims["mf-l1"]
    reads = mf_l1["isBasedOn"] if isinstance(mf_l1["isBasedOn"], list) else [mf_l1["isBasedOn"]]
    assert "figures/minorfirst/l1_maxmargin.csv" in {r["@id"] for r in reads}
    row = next(r for r in ledger["claims"] if r["id"] == "mf-l1")
    assert mf_l1["creativeWorkStatus"] == row["verdict"]


def test_a_file_edited_after_its_record_stops_the_crate(build, tmp_path):
    csv = build / "figures/minorfirst/l1_maxmargin.csv"
    saved = csv.read_bytes()
    try:
        csv.write_bytes(saved + b"0,0\n")
        with pytest.raises(Exception, match="l1_maxmargin.csv: its SHA-256 .* recorded"):
            write_crate(build, tmp_path / "x.zip")
    finally:
        csv.write_bytes(saved)
    assert not (tmp_path / "x.zip").exists()


def test_a_large_run_output_is_named_by_its_hash_not_copied(build, tmp_path):
    out = write_crate(build, tmp_path / "small.zip", max_bytes=0)
    graph = _graph(out)
    npz = "results/minorfirst/l1_maxmargin/data.npz"
    record = json.loads((build / "results/minorfirst/l1_maxmargin/provenance.json").read_text())
    named = next(e for e in graph.values() if e.get("name") == npz)
    assert named["@type"] == "CreativeWork" and named["sha256"] == record["output_sha256"][
        "data.npz"]
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
    assert npz not in names and FIGURE in names  # a figure is always copied


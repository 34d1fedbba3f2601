"""What a crate says beyond its records (sharpness.crate.describe): who ran the build, on every
action and as the author, from --agent or git, else an explicit unknown agent; each file's
media type from a fixed table; packages by their PyPI page; the crate's own README; no list
of one. A one-record build in a temporary folder, no workflow run."""

from __future__ import annotations

import hashlib
import json
import mimetypes
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sharpness.crate.build import crate_of, write_crate
from sharpness.crate.describe import OTHER_FORMAT, UNKNOWN_AGENT, encoding_format
from sharpness.errors import SharpnessError
from tests.crate.test_records import _record

ORCID = "https://orcid.org/0000-0002-1825-0097"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A build of one run (its record pins torch and this package) and a rule file, where
    git knows no user: the build is no checkout, and no global or system git settings."""
    root = tmp_path / "build"
    (root / "workflow/rules").mkdir(parents=True)
    (root / "results/run").mkdir(parents=True)
    (root / "results/run/data.npz").write_bytes(b"PK")
    (root / "results/run/notes.weird").write_bytes(b"x")
    _record(root / "results/run/provenance.json", command=["sharpness", "minorfirst", "run"],
            packages={"torch": "2.14.1", "sharpness": "0.1.0"},
            code={"git_commit": "ab" * 20},
            output_sha256={n: hashlib.sha256((root / "results/run" / n).read_bytes())
                           .hexdigest() for n in ("data.npz", "notes.weird")},
            started="2026-01-01T00:00:00+00:00", ended="2026-01-01T00:01:00+00:00")
    (root / "Snakefile").write_text("rule all:\n    input: []\n")
    (root / "workflow/rules/a.smk").write_text("rule a:\n    output: 'x'\n")
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    return root


def _graph(crate: Any) -> dict[str, dict[str, Any]]:
    return {e["@id"]: e for e in crate.metadata.generate()["@graph"]}


def _ids(value: Any) -> set[str]:
    return {v["@id"] for v in (value if isinstance(value, list) else [value])}


def test_every_create_action_has_the_agent_and_the_root_mentions_it(root):
    graph = _graph(crate_of(root, agent="Ada  Lovelace", agent_id=ORCID))
    actions = {i for i, e in graph.items() if e["@type"] == "CreateAction"}
    assert len(actions) == 2  # the job and the whole run
    assert _ids(graph["./"]["mentions"]) == actions
    assert {graph[i]["agent"]["@id"] for i in actions} == {ORCID}
    assert graph["./"]["author"] == {"@id": ORCID}
    assert graph[ORCID]["@type"] == "Person" and graph[ORCID]["name"] == "Ada Lovelace"
    assert all(graph[i].get("description") for i in actions)


def test_the_agent_is_git_user_name_else_an_explicit_unknown_agent(root, monkeypatch,
                                                                   tmp_path):
    graph = _graph(crate_of(root))
    job = next(e for e in graph.values() if e["@type"] == "CreateAction")
    assert job["agent"] == {"@id": UNKNOWN_AGENT} == graph["./"]["author"]
    assert graph[UNKNOWN_AGENT]["name"] == "unknown agent"
    assert "no --agent" in graph[UNKNOWN_AGENT]["description"]
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Grace Hopper\n"
                                        "\temail = grace@example.org\n")
    graph = _graph(crate_of(root))
    person = graph[graph["./"]["author"]["@id"]]
    assert person["name"] == "Grace Hopper"
    assert "grace@example.org" not in json.dumps(graph)  # never an e-mail address


@pytest.mark.parametrize("kwargs", [{"agent_id": "javascript:alert(1)"},
                                    {"agent_id": "https://x.org/a b"},
                                    {"agent": "\x1b[31mred"}, {"agent": "x" * 300},
                                    {"agent": "  "}])
def test_a_bad_agent_is_refused(root, kwargs):
    with pytest.raises(SharpnessError, match="--agent"):
        crate_of(root, **kwargs)


def test_each_file_has_the_media_type_of_the_table_not_the_hosts_guess(root):
    graph = _graph(crate_of(root))
    files = {i: e for i, e in graph.items() if "File" in e["@type"]}
    assert all(e.get("encodingFormat") == encoding_format(i) for i, e in files.items()), files
    assert files["workflow/rules/a.smk"]["encodingFormat"] == "text/plain"
    assert mimetypes.guess_type("a.smk")[0] != "text/plain"  # what the table replaces
    assert files["results/run/notes.weird"]["encodingFormat"] == OTHER_FORMAT
    assert files["README.md"]["encodingFormat"] == "text/markdown"
    assert encoding_format("figures/p/x.PDF") == "application/pdf"


def test_packages_are_their_pypi_release_and_tools_rules_are_versioned(root):
    graph = _graph(crate_of(root))
    torch = graph["https://pypi.org/project/torch/2.14.1/"]
    assert torch["url"] == torch["@id"] and torch["version"] == "2.14.1"
    own = graph["#package-sharpness-0.1.0"]
    assert "url" not in own and "no registry" in own["description"]
    tool = next(e for e in graph.values() if e["@id"].startswith("#tool-"))
    assert tool["version"] == "0.1.0"
    assert graph["workflow/rules/a.smk"]["version"] == "ab" * 20


def test_no_property_is_a_list_of_one_and_the_readme_is_about_the_crate(root, tmp_path):
    out = write_crate(root, tmp_path / "c.zip", agent="Ada Lovelace")
    with zipfile.ZipFile(out) as archive:
        graph = {e["@id"]: e for e in json.loads(archive.read("ro-crate-metadata.json"))[
            "@graph"]}
        text = archive.read("README.md")
    ones = [(i, k) for i, e in graph.items() for k, v in e.items()
            if not k.startswith("@") and isinstance(v, list) and len(v) == 1]
    assert ones == []
    entry = graph["README.md"]
    assert entry["about"] == {"@id": "./"} and entry["sha256"] == hashlib.sha256(
        text).hexdigest()
    assert b"run by: Ada Lovelace" in text and b"jobs: 1," in text

"""The crate reads a build's records as untrusted input: a folder without records, without a
Snakefile, or with a record that is not a record stops it with the file named."""

from __future__ import annotations

import json

import pytest

from sharpness.cli import main
from sharpness.crate.records import read_build
from sharpness.errors import SharpnessError
from sharpness.runs.provenance import content_id
from sharpness.runs.signing import sign


def _record(path, **fields):
    """A record as a job writes it: its id the hash of its content, signed (packing refuses
    any other)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"kind": "run", "status": "ok", "cwd": str(path.parent.parent), **fields}
    record["id"] = content_id(record)
    path.write_text(json.dumps(sign(record)))
    return path


def test_a_folder_without_records_is_refused_with_what_to_do(tmp_path, capsys):
    assert main(["crate", "--root", str(tmp_path), "--out", str(tmp_path / "c.zip")]) == 2
    err = capsys.readouterr().err
    assert "no provenance records under" in err and "build first" in err
    assert not (tmp_path / "c.zip").exists()


def test_a_build_without_its_snakefile_is_refused(tmp_path, capsys):
    _record(tmp_path / "results/run/provenance.json")
    assert main(["crate", "--root", str(tmp_path), "--out", str(tmp_path / "c.zip")]) == 2
    assert "Snakefile: not found" in capsys.readouterr().err


@pytest.mark.parametrize("text,message", [
    ("{not json", "not a readable provenance record"),
    ("[1, 2]", "a provenance record is a JSON object, this is a list"),
    ('{"output_sha256": [1]}', "key 'output_sha256' is a list"),
    ('{"inputs": [{"sha256": "x"}]}', "an entry of 'inputs' has no 'path'"),
])
def test_a_damaged_record_is_named(tmp_path, text, message):
    bad = tmp_path / "figures/minorfirst/fig.provenance.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(text)
    with pytest.raises(SharpnessError, match=message) as caught:
        read_build(tmp_path)
    assert str(bad) in str(caught.value)


def test_jobs_read_paths_relative_to_the_build_and_skip_hidden_folders(tmp_path):
    run = _record(tmp_path / "results/run/provenance.json", output_sha256={"a.npz": "00"},
                  inputs=[{"path": "data/mnist.json", "sha256": "11"}], command=["sharpness"])
    _record(tmp_path / "results/.crate-tmp/provenance.json")  # a crate being written
    figure = _record(tmp_path / "figures/p/fig.provenance.json", kind="figure",
                     artifact=str(tmp_path / "figures/p/fig.pdf"),
                     output_sha256={str(tmp_path / "figures/p/fig.pdf"): "22"},
                     inputs=[{"path": str(tmp_path / "results/run"), "folder": True}])
    build = read_build(tmp_path)
    jobs = {j.record_path: j for j in build.jobs}
    assert set(jobs) == {"figures/p/fig.provenance.json", "results/run/provenance.json"}
    assert jobs["results/run/provenance.json"].outputs == {"results/run/a.npz": "00"}
    assert jobs["results/run/provenance.json"].folder == "results/run"
    assert jobs["figures/p/fig.provenance.json"].outputs == {"figures/p/fig.pdf": "22"}
    assert jobs["figures/p/fig.provenance.json"].inputs[0]["path"] == "results/run"
    assert jobs["figures/p/fig.provenance.json"].subject == "figures/p/fig.pdf"
    assert build.ledger is None and build.claims is None and build.registration_file is None
    assert run.is_file() and figure.is_file()


def test_a_record_naming_files_outside_the_build_does_not_bring_them_in(tmp_path):
    """An output a record names by `..` is named by its hash in the crate, never copied into
    it; one reached through a link out of the build stops the crate."""
    from sharpness.crate.build import crate_of

    root = tmp_path / "build"
    (tmp_path / "secret.txt").write_text("not the build's")
    _record(root / "results/run/provenance.json", output_sha256={"../../../secret.txt": "00"})
    (root / "Snakefile").write_text("rule all:\n    input: []\n")
    crate = crate_of(root)
    held = {e.id for e in crate.data_entities}
    assert not any("secret" in i for i in held), held
    named = {e["name"] for e in crate.contextual_entities if e.id.startswith("#not-included")}
    assert named == {"results/run/../../../secret.txt"}
    _record(root / "results/run/provenance.json", output_sha256={"link.txt": "11"})
    (root / "results/run/link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(SharpnessError, match="reached through the link"):
        crate_of(root)



def test_a_workflow_link_is_followed_only_into_the_workflows_own_folders(tmp_path):
    """The checkout's committed `profiles/default -> ../workflow/profiles/default` is packed
    (its config, under the link's path); a profile or Snakefile linked out of the workflow's
    folders stops the crate."""
    from sharpness.crate.build import crate_of

    root = tmp_path / "build"
    _record(root / "results/run/provenance.json")
    (root / "Snakefile").write_text("rule all:\n    input: []\n")
    (root / "workflow/profiles/default").mkdir(parents=True)
    (root / "workflow/profiles/default/config.yaml").write_text("cores: 1\n")
    (root / "profiles").mkdir()
    (root / "profiles/default").symlink_to("../workflow/profiles/default")
    crate = crate_of(root)
    entity = crate.dereference("profiles/default/config.yaml")
    assert entity is not None and entity["contentSize"] == len("cores: 1\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/config.yaml").write_text("token: secret\n")
    (root / "profiles/evil").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SharpnessError, match="reached through the link .*evil"):
        crate_of(root)
    (root / "profiles/evil").unlink()
    (root / "Snakefile").rename(tmp_path / "Snakefile")
    (root / "Snakefile").symlink_to(tmp_path / "Snakefile")
    with pytest.raises(SharpnessError, match="Snakefile.*reached through the link"):
        crate_of(root)

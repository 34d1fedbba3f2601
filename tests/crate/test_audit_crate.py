"""`sharpness audit --crate ZIP FIGURE`: a figure checked against a crate alone (no results
folder): passes as built; a changed copy, an edited registration or a repacked crate fail."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from sharpness.cli import main
from tests.crate.conftest import FIGURE

pytestmark = pytest.mark.workflow  # builds a small run, figure and ledger (about 15 s)


@pytest.fixture(scope="module")
def crate(build: Path) -> Path:
    out = build / "build.crate.zip"
    assert main(["crate", "--root", str(build), "--out", str(out)]) == 0
    return out


def _repack(crate: Path, out: Path, name: str, edit) -> Path:
    """A copy of ``crate`` with the member ``name`` passed through ``edit``."""
    with zipfile.ZipFile(crate) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, edit(data) if info.filename == name else data)
    return out


def test_a_figure_sent_alone_passes_against_its_crate(crate, build, tmp_path, capsys):
    copy = tmp_path / "fig.pdf"  # the reader's copy, away from the build
    shutil.copy(build / FIGURE, copy)
    assert main(["audit", "--crate", str(crate), str(copy), FIGURE]) == 0
    out = capsys.readouterr().out
    assert f"{FIGURE} in the crate" in out
    # no failed check (a tree with uncommitted changes is a warning, not a failure)
    assert all("DIRTY TREE" in line for line in out.splitlines() if "!!!" in line), out
    assert "registration: docs/registration/quick.json id " in out
    assert "claim:    mf-l1: " in out
    record = json.loads((build / FIGURE.replace(".pdf", ".provenance.json")).read_text())
    assert record["code"]["git_commit"] in out


def test_a_figure_sent_alone_passes_beside_another_build(crate, build, tmp_path, capsys,
                                                        monkeypatch):
    """The working folder holds a build of its own (other bytes at the crate's path): the
    file given is what is checked; the other one is named as information, never a failure."""
    here = tmp_path / "checkout"
    (here / FIGURE).parent.mkdir(parents=True)
    (here / FIGURE).write_bytes(b"%PDF-1.4 another build\n")
    copy = tmp_path / "sent.pdf"
    shutil.copy(build / FIGURE, copy)
    monkeypatch.chdir(here)
    assert main(["audit", "--crate", str(crate), str(copy)]) == 0
    out = capsys.readouterr().out
    assert f"{FIGURE} in the crate" in out and "!!! FILE CHANGED" not in out
    assert f"note:     {FIGURE} in this folder has other bytes" in out
    # the same file named by its path in this folder is what is then checked, and fails
    assert main(["audit", "--crate", str(crate), FIGURE]) == 1
    assert "!!! FILE CHANGED" in capsys.readouterr().out


def test_a_changed_copy_fails_naming_the_hashes(crate, build, tmp_path, capsys):
    copy = tmp_path / "l1_maxmargin.pdf"
    copy.write_bytes((build / FIGURE).read_bytes() + b"\n")
    assert main(["audit", "--crate", str(crate), str(copy)]) == 1
    captured = capsys.readouterr()
    assert "!!! FILE CHANGED" in captured.out and "check(s) failed" in captured.err


def test_an_edited_registration_in_the_crate_fails(crate, tmp_path, capsys):
    def edit(data: bytes) -> bytes:
        reg = json.loads(data)
        reg["rules"]["min_seeds"] = 2
        return json.dumps(reg).encode()

    bad = _repack(crate, tmp_path / "bad.zip", "docs/registration/quick.json", edit)
    assert main(["audit", "--crate", str(bad), FIGURE]) == 1
    out = capsys.readouterr().out
    assert "CRATE FILE CHANGED: docs/registration/quick.json" in out
    assert "REGISTRATION CHANGED: docs/registration/quick.json" in out


def test_a_record_edited_in_the_crate_fails(crate, tmp_path, capsys):
    name = FIGURE.replace(".pdf", ".provenance.json")

    def edit(data: bytes) -> bytes:
        record = json.loads(data)
        record["params"]["figure"] = "edited"
        return json.dumps(record).encode()

    bad = _repack(crate, tmp_path / "bad.zip", name, edit)
    assert main(["audit", "--crate", str(bad), FIGURE]) == 1
    assert "RECORD EDITED" in capsys.readouterr().out


def test_not_a_crate_and_not_in_the_crate_are_clear_errors(crate, tmp_path, capsys):
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    assert main(["audit", "--crate", str(junk), FIGURE]) == 2
    assert "not an RO-Crate zip" in capsys.readouterr().err
    assert main(["audit", "--crate", str(crate), "figures/none.pdf"]) == 2
    assert "not in the crate" in capsys.readouterr().err


def test_a_member_whose_id_is_percent_encoded_is_read(tmp_path):
    from sharpness.crate.check import METADATA, Crate

    zip_path = tmp_path / "c.zip"
    with zipfile.ZipFile(zip_path, "w") as zf:
        zf.writestr(METADATA, json.dumps({"@graph": [{"@id": "runs/lr_1.1e%2B00/a.json"}]}))
        zf.writestr("runs/lr_1.1e+00/a.json", b"{}")
    crate = Crate(zip_path)
    assert crate.read("runs/lr_1.1e%2B00/a.json") == b"{}"
    assert crate.read("runs/missing.json") is None

"""A crate is a signed, bounded publication (``sharpness crate``, ``sharpness audit --crate``).

Packing refuses a record or a file reached through a link, and a record that does not verify;
the audit checks a figure against its own signed sidecar (never the crate's unsigned links), and
reads a hostile crate within bounds, refusing it in one line.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from sharpness.cli import main
from tests.security.crates import FIGURE, METADATA, OTHER, edit_graph, pack, repack, tiny_build

SECRET = b"API_TOKEN=never-publish-me\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    root = tiny_build(tmp_path_factory.mktemp("crate") / "build")
    crate = root.parent / "build.crate.zip"
    assert pack(root, crate) == 0
    return root, crate


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_record_planted_as_a_link_to_a_secret_is_never_packed(tmp_path, capsys) -> None:
    """The attack: `results/x/provenance.json` a link to a token outside the build. The
    crate stops naming the link; no zip is written, the token is in no file of the build."""
    root = tiny_build(tmp_path / "build")
    secret = tmp_path / "home" / ".token"
    secret.parent.mkdir()
    secret.write_bytes(SECRET)
    planted = root / "results" / "x" / "provenance.json"
    planted.parent.mkdir(parents=True)
    planted.symlink_to(secret)
    out = tmp_path / "out.crate.zip"
    capsys.readouterr()
    assert pack(root, out) == 2
    assert "reached through the link" in _one_line(capsys)
    assert not out.exists() and not list(tmp_path.glob("**/.crate-*"))


def test_an_output_reached_through_a_link_is_refused(tmp_path, capsys) -> None:
    """A table's file replaced by a link to a copy outside (same bytes, so every hash
    matches): packing refuses it rather than copy what a link names."""
    root = tiny_build(tmp_path / "build")
    outside = tmp_path / "outside.csv"
    outside.write_bytes((root / FIGURE).read_bytes())
    (root / FIGURE).unlink()
    (root / FIGURE).symlink_to(outside)
    out = tmp_path / "out.crate.zip"
    capsys.readouterr()
    assert pack(root, out) == 2
    assert f"an output of {FIGURE.replace('.csv', '.provenance.json')}" in _one_line(capsys)
    assert not out.exists()


def test_a_record_that_does_not_verify_is_never_packed(tmp_path, capsys) -> None:
    """A sidecar edited after signing (its caption): packing stops naming it."""
    root = tiny_build(tmp_path / "build")
    side = root / OTHER.replace(".csv", ".provenance.json")
    record = json.loads(side.read_text())
    record["caption"] = "edited"
    side.write_text(json.dumps(record))
    capsys.readouterr()
    assert pack(root, tmp_path / "out.zip") == 2
    assert "SIGNATURE MISMATCH" in _one_line(capsys)


def _forge(crate: Path, out: Path, swap_sidecar: bool) -> Path:
    """The issue's forgery: the figure's bytes edited, the crate's stated SHA-256 updated, its
    job pointed at another genuine record (optionally that record also copied over the
    figure's sidecar, its stated hash updated too)."""
    forged = b"x,y\n1,999\n"
    with zipfile.ZipFile(crate) as src:
        other = src.read(OTHER.replace(".csv", ".provenance.json"))

    def graph(entities: dict[str, dict]) -> None:
        entities[FIGURE]["sha256"] = hashlib.sha256(forged).hexdigest()
        job = next(e for e in entities.values() if e.get("result") == {"@id": FIGURE})
        job["subjectOf"] = {"@id": OTHER.replace(".csv", ".provenance.json")}
        if swap_sidecar:
            entities[FIGURE.replace(".csv", ".provenance.json")]["sha256"] = \
                hashlib.sha256(other).hexdigest()

    edits = {METADATA: edit_graph(graph), FIGURE: lambda _: forged}
    if swap_sidecar:
        edits[FIGURE.replace(".csv", ".provenance.json")] = lambda _: other
    return repack(crate, out, edits)


@pytest.mark.parametrize("swap_sidecar", [False, True])
def test_a_figure_pointed_at_another_genuine_record_fails_the_audit(built, tmp_path, capsys,
                                                                     swap_sidecar) -> None:
    """The figure is checked from its own signed sidecar, not from whichever genuine record
    points at it: the edited bytes fail, and so does a sidecar swapped for a record not
    listing it."""
    _, crate = built
    assert main(["audit", "--crate", str(crate), FIGURE]) == 0
    forged = _forge(crate, tmp_path / "forged.zip", swap_sidecar)
    capsys.readouterr()
    assert main(["audit", "--crate", str(forged), FIGURE]) == 1
    out = capsys.readouterr().out
    assert "!!! JOB MISMATCH" in out
    assert ("!!! NOT IN ITS RECORD" if swap_sidecar else "!!! FILE CHANGED") in out


def _metadata_crate(tmp_path: Path, metadata: bytes) -> Path:
    path = tmp_path / "hostile.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(METADATA, metadata)
    return path


@pytest.mark.parametrize(("metadata", "says"), [
    (b"[" * 200_000 + b"]" * 200_000, "nested deeper than"),
    (b'{"@graph": [{"@id": "./", "@type": 5}]}', "has a @type of type int"),
    (b'{"@graph": [{"@id": "x", "sha256": 1' + b"0" * 5000 + b"}]}", "not readable JSON"),
    (b'{"@graph": 7}', "not a list of entities"),
    (b" " * (70 * 2**20), "per-member limit"),  # inflates past the metadata's 64 MiB cap
], ids=["200000-deep", "number-for-a-type", "5000-digit-integer", "graph-not-a-list",
        "70-MiB-metadata"])
def test_a_hostile_crate_is_refused_in_one_line(tmp_path, capsys, metadata, says) -> None:
    crate = _metadata_crate(tmp_path, metadata)
    capsys.readouterr()
    assert main(["audit", "--crate", str(crate), FIGURE]) == 2
    err = _one_line(capsys)
    assert says in err and err.startswith("sharpness audit: error: --crate")


def test_a_crate_past_its_entry_limit_is_refused_naming_it(built, tmp_path, capsys,
                                                           monkeypatch) -> None:
    from sharpness.crate import check
    from sharpness.limits import ArchiveLimits

    _, crate = built
    monkeypatch.setattr(check, "LIMITS", ArchiveLimits(entries=3, member_bytes=2**20,
                                                       total_bytes=2**21))
    capsys.readouterr()
    assert main(["audit", "--crate", str(crate), FIGURE]) == 2
    assert "entry-count limit" in _one_line(capsys)


def test_a_record_of_another_shape_in_the_crate_is_one_line(built, tmp_path, capsys) -> None:
    """A sidecar whose `code` is a number (a type error deep in the checks): one line."""
    _, crate = built
    side = FIGURE.replace(".csv", ".provenance.json")

    def edit(data: bytes) -> bytes:
        record = json.loads(data)
        record["code"] = 5
        return json.dumps(record).encode()
    hostile = repack(crate, tmp_path / "h.zip", {side: edit})
    capsys.readouterr()
    assert main(["audit", "--crate", str(hostile), FIGURE]) == 2
    assert "malformed content (AttributeError" in _one_line(capsys)

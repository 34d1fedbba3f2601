"""A committed ledger rebuilds on a fresh clone: the keys that signed its data are committed
beside it and trusted for that archive only, as git has them."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import tarfile
from pathlib import Path

import pytest

from sharpness.claims.ledger import all_claims
from sharpness.claims.readme import read_record
from sharpness.claims.snapshot_data import archive_path
from sharpness.claims.snapshot_keys import keys_path, read_keys, signers
from sharpness.runs.signing import (
    KEY_ENV,
    TRUST_ENV,
    own_public_key,
    sign,
    signature_problem,
    trusting,
)
from tests.claims.test_snapshots import _figures

#: rebuilds every committed ledger from its archive: second tier
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EXACT = ("id", "verdict", "level", "kind", "n", "p_raw", "p_adj", "low", "high", "items")


def _stranger(monkeypatch: pytest.MonkeyPatch, where: Path) -> None:
    """This process signs with, and trusts, a key nobody else has (a fresh machine)."""
    monkeypatch.setenv(KEY_ENV, str(where / "signing_key"))
    monkeypatch.delenv(TRUST_ENV, raising=False)


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {r["id"]: r for r in csv.DictReader(handle)}


@pytest.mark.parametrize("archive", sorted((ROOT / "docs").glob("claims_*.figures.tar.gz")),
                         ids=lambda p: p.name)
def test_a_committed_ledger_rebuilds_with_no_key_of_this_machine(
        archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sharpness.cli import main

    snapshot = archive.with_name(archive.name.replace(".figures.tar.gz", ".csv"))
    record = read_record(snapshot)
    assert keys_path(archive).is_file(), f"{keys_path(archive)}: commit the archive's keys"
    _stranger(monkeypatch, tmp_path / "keys")
    monkeypatch.chdir(ROOT)
    out = tmp_path / "rebuilt" / "CLAIMS.md"
    assert main(["claims", "build", "--figures", str(archive), "--profile",
                 str(record["profile"]), "--seed-offset", str(record.get("seed_offset") or 0),
                 "--out", str(out)]) == 0
    committed, rebuilt = _rows(snapshot), _rows(out.with_name("claims.csv"))
    if record.get("superseded"):  # built by older deciding code: rebuilt, not compared
        # today's claims are all in the rebuild; a committed row is in it unless retired
        today = {c.id for c in all_claims()}
        assert set(rebuilt) == today
        assert set(committed) - set(rebuilt) <= set(committed) - today
        return
    assert committed.keys() == rebuilt.keys()
    for key, row in committed.items():
        assert {c: row[c] for c in EXACT} == {c: rebuilt[key][c] for c in EXACT}, key
        if row["estimate"] != rebuilt[key]["estimate"]:  # the last bit of a float may move
            assert math.isclose(float(row["estimate"]), float(rebuilt[key]["estimate"]),
                                rel_tol=1e-12), key


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.example", *args],
                   cwd=repo, check=True, capture_output=True)


def _resigned(archive: Path, member: str, out: Path, forger: Path) -> Path:
    """``archive`` with ``member`` signed again by the key at ``forger`` (neither this
    machine's nor the archive's)."""
    buffer = io.BytesIO()
    with tarfile.open(archive) as src, tarfile.open(fileobj=buffer, mode="w:gz") as dst:
        for info in src.getmembers():
            data = src.extractfile(info).read()
            if info.name == member:
                with pytest.MonkeyPatch.context() as patch:
                    patch.setenv(KEY_ENV, str(forger))
                    data = json.dumps(sign(json.loads(data))).encode()
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    out.write_bytes(buffer.getvalue())
    return out


def test_archive_keys_count_only_as_committed_and_only_for_their_archive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from sharpness.cli import main

    fig = _figures(tmp_path)
    assert main(["claims", "build", "--figures", str(fig), "--profile", "evidence"]) == 0
    repo = tmp_path / "clone"
    snap = repo / "docs" / "claims_small.csv"
    assert main(["claims", "snapshot", "--ledger", str(fig / "claims.csv"), "--out", str(snap),
                 "--data"]) == 0
    archive, keys = archive_path(snap), keys_path(snap)
    assert read_keys(keys) == set(signers(archive)) and len(signers(archive)) == 1
    _git(repo, "init", "-q")
    _git(repo, "add", "docs")
    _git(repo, "commit", "-q", "-m", "snapshot")
    _stranger(monkeypatch, tmp_path / "stranger")

    def build(what: Path) -> str | None:
        """None when the build succeeds, else its error."""
        capsys.readouterr()
        code = main(["claims", "build", "--figures", str(what), "--profile", "evidence",
                     "--out", str(tmp_path / "out" / "CLAIMS.md")])
        return None if code == 0 else capsys.readouterr().err

    assert build(archive) is None  # the committed keys vouch for its records
    assert (tmp_path / "out" / "claims.csv").read_bytes() == snap.read_bytes()
    record = json.loads((fig / "eos" / "fig_phase.provenance.json").read_text())
    assert "UNKNOWN KEY" in signature_problem(record)  # outside that build, no trust
    with trusting(read_keys(keys)):
        assert signature_problem(record) is None
    # a record of the archive signed by another key is refused
    forger = tmp_path / "forger" / "signing_key"
    forged = _resigned(archive, "eos/fig_phase.provenance.json", archive, forger)
    assert "UNKNOWN KEY" in (build(forged) or "")
    _git(repo, "checkout", "--", "docs")
    # a key file edited after its commit (the forger's key added) vouches for nothing
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, str(forger))
        forger_key = own_public_key()
    keys.write_text(keys.read_text() + f"{forger_key}\n")
    forged = _resigned(archive, "eos/fig_phase.provenance.json", archive, forger)
    assert "UNKNOWN KEY" in (build(forged) or "")
    # nor does an uncommitted one
    _git(repo, "checkout", "--", "docs")
    other = _resigned(archive, "eos/fig_phase.provenance.json",
                      repo / "docs" / "claims_other.figures.tar.gz", forger)
    keys_path(other).write_text(keys.read_text() + f"{forger_key}\n")
    assert "UNKNOWN KEY" in (build(other) or "")

"""Committed ledgers: their data beside them rebuild them byte for byte, and none is stale."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from sharpness.claims.ledger import all_claims
from sharpness.claims.readme import read_record
from sharpness.claims.registration import deviations, read_registration
from sharpness.claims.registration_files import existing_registration
from sharpness.claims.snapshot_data import archive_path, stale_reason, unpack
from sharpness.errors import SharpnessError
from sharpness.plots.save import write_csv
from sharpness.runs.provenance import write_artifact_provenance
from tests.claims.fixtures import phase, regimes

ROOT = Path(__file__).resolve().parents[2]


def _figures(tmp_path: Path) -> Path:
    fig = tmp_path / "figures"
    for name, data in {**phase(False), **regimes(False)}.items():
        write_csv(fig / f"{name}.csv", data.rows.to_dict("records"))
        write_artifact_provenance(fig / f"{name}.csv", kind="figure", params={"item": name})
    return fig


def test_a_snapshot_with_its_data_rebuilds_byte_for_byte(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    from sharpness.cli import main

    fig = _figures(tmp_path)
    assert main(["claims", "build", "--figures", str(fig), "--profile", "evidence"]) == 0
    snap = tmp_path / "docs" / "claims_small.csv"
    assert main(["claims", "snapshot", "--ledger", str(fig / "claims.csv"), "--out",
                 str(snap), "--data"]) == 0
    archive = archive_path(snap)
    assert archive.name == "claims_small.figures.tar.gz" and archive.stat().st_size < 64_000
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "eos/fig_phase.csv" in names and "eos/fig_phase.provenance.json" in names
    again = tmp_path / "again" / "CLAIMS.md"
    assert main(["claims", "build", "--figures", str(archive), "--profile", "evidence",
                 "--out", str(again)]) == 0
    assert again.with_name("claims.csv").read_bytes() == snap.read_bytes()
    capsys.readouterr()
    assert main(["claims", "build", "--figures", str(archive), "--profile", "evidence"]) != 0
    assert "give --out" in capsys.readouterr().err


def test_an_archive_entry_outside_its_folder_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.figures.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        info = tarfile.TarInfo("../escape.csv")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(SharpnessError, match="not a plain file under"):
        unpack(bad, tmp_path / "out")
    assert not (tmp_path / "escape.csv").exists()


def test_stale_reason() -> None:
    assert stale_reason({"registration": "a"}, "a") is None
    assert "built under registration a, today's is b" in stale_reason({"registration": "a"}, "b")
    marked = {"registration": "a", "superseded": {"registration": "a", "by": "b"}}
    assert stale_reason(marked, "b") is None


@pytest.mark.parametrize("snapshot", sorted((ROOT / "docs").glob("claims_*.csv")),
                         ids=lambda p: p.name)
def test_no_committed_snapshot_is_stale(snapshot: Path) -> None:
    """Each committed ledger is built under today's registration of its profile and seed
    offset, or marked superseded with the registration it was built under."""
    record = read_record(snapshot)
    assert record is not None, f"{snapshot} has no record"
    reg = existing_registration(str(record.get("profile")), int(record.get("seed_offset") or 0),
                                ROOT / "docs" / "registration")
    current = read_registration(reg)["id"] if reg else None
    assert stale_reason(record, current) is None, f"{snapshot.name}: {stale_reason(record, current)}"
    # and today's registration is of today's predicates, parameters and helpers
    if reg is not None:
        assert deviations(read_registration(reg), all_claims()) == [], \
            f"{reg} is not of today's claims: register again (`sharpness claims register`)"

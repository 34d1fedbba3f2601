"""Archives are bounded by what they inflate to (``sharpness.limits``).

The 8 MiB cap on a ledger's ``.figures.tar.gz`` counted compressed bytes: one member inflating
to 1 GiB exhausted memory and filled the temporary folder, which was never deleted. Every
unpacking now streams against limits on entries, bytes per member and bytes in all, says which
limit it hit, and leaves no temporary folder behind.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import tempfile
from pathlib import Path

import pytest

from sharpness.claims.snapshot_data import unpack
from sharpness.cli import main
from sharpness.data.unpack import bounded_members
from sharpness.errors import SharpnessError
from sharpness.limits import ArchiveLimits, LimitExceeded, load_json
from tests.security.archives import tar_gz

GIB = 2**30


def _declares(name: str, size: int, body: bytes = b"\0" * 4096) -> bytes:
    """A ``.tar.gz`` whose one member's header declares ``size`` bytes (its body cut short:
    the bytes a real 1 GiB member would inflate to are never needed to refuse it)."""
    info = tarfile.TarInfo(name)
    info.size = size
    return gzip.compress(info.tobuf(format=tarfile.PAX_FORMAT) + body, mtime=0)


@pytest.fixture
def own_tmp(tmp_path, monkeypatch) -> Path:
    """Python's temporary folder pointed at an empty folder of this test."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_ledger_archive_member_inflating_to_1_gib_is_refused_and_leaves_nothing(
        tmp_path, own_tmp, capsys) -> None:
    """The attack through `claims build --figures ARCHIVE`: refused in one line naming
    the per-member limit; no ledger written, the temporary folder removed."""
    archive = tmp_path / "claims_x.figures.tar.gz"
    archive.write_bytes(_declares("minorfirst/l1_maxmargin.csv", GIB))
    assert archive.stat().st_size < 64 * 1024
    out = tmp_path / "out" / "CLAIMS.md"
    capsys.readouterr()
    assert main(["claims", "build", "--figures", str(archive), "--profile", "quick",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "per-member limit" in err
    assert list(own_tmp.iterdir()) == [] and not out.parent.exists()


@pytest.mark.parametrize(("members", "limits", "says"), [
    ({f"f{i}.csv": b"x" for i in range(11)}, ArchiveLimits(10, 100, 1000), "entry-count"),
    ({"big.csv": b"y" * 101}, ArchiveLimits(10, 100, 1000), "per-member"),
    ({f"f{i}.csv": b"z" * 90 for i in range(5)}, ArchiveLimits(10, 100, 400), "total"),
], ids=["entries", "member", "total"])
def test_each_limit_of_a_ledger_archive_is_named(tmp_path, members, limits, says) -> None:
    archive = tmp_path / "a.figures.tar.gz"
    archive.write_bytes(tar_gz(members))
    with pytest.raises(LimitExceeded, match=f"the {says} limit"):
        unpack(archive, tmp_path / "dest", limits)
    unpack(archive, tmp_path / "ok", ArchiveLimits(100, 10**6, 10**7))  # within: unpacked
    assert sorted(p.name for p in (tmp_path / "ok").iterdir()) == sorted(members)


def test_a_data_set_archive_is_bounded_before_it_is_unpacked(tmp_path) -> None:
    """A downloaded data set's tar: its headers are counted one at a time, so a member
    declaring 1 GiB more than the limit stops before a byte of it is read."""
    archive = tmp_path / "set.tar.gz"
    archive.write_bytes(_declares("set/huge.bin", 5 * GIB))
    with tarfile.open(archive) as tar, pytest.raises(LimitExceeded, match="per-member"):
        bounded_members(tar, str(archive))
    archive.write_bytes(tar_gz({f"set/{i}": b"" for i in range(12)}))
    with tarfile.open(archive) as tar, pytest.raises(LimitExceeded, match="entry-count"):
        bounded_members(tar, str(archive), ArchiveLimits(10, 10, 10))


@pytest.mark.parametrize(("text", "says"), [
    ("[" * 200_000 + "]" * 200_000, "nested deeper than"),
    ("[" * 65 + "]" * 65, "nested deeper than 64"),
    ("1" * 4301, "not readable JSON"),
    ("{", "not readable JSON"),
])
def test_json_from_elsewhere_fails_in_one_line(text, says) -> None:
    with pytest.raises(SharpnessError, match=says) as caught:
        load_json(text, "x.json")
    assert "\n" not in str(caught.value)


def test_a_member_read_stops_at_its_limit_whatever_its_header_says() -> None:
    """The streaming count: a member read block by block stops as soon as it passes."""
    from sharpness.limits import Budget

    budget = Budget(ArchiveLimits(1, 2**20, 2**21), "z.zip")
    with pytest.raises(LimitExceeded, match="per-member"):
        budget.read("m", io.BytesIO(b"\0" * (3 * 2**20)))
    assert budget.total == 0

"""A received data folder never deletes, writes or moves files of another folder through a link.

The attack: a link inside ``data/mnist/`` pointing at another folder of yours, whose files of
the same names preparing would delete (the copies fail their pins and are removed as
"rejected"). A link leading out is reported and left alone, and preparing stops before it
touches a path reached through one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.data import DATASETS, DatasetSpec, FileSpec, resolve
from sharpness.data.links import outward_link, outward_links
from sharpness.errors import DataError
from tests.security.archives import tar_gz

MNIST_FILES = [f.path for f in DATASETS["mnist"].files]  # MNIST/raw/<four IDX files>


def _other_folder(tmp_path: Path) -> dict[Path, bytes]:
    """Another folder of the user's, holding files under MNIST's names (not MNIST's bytes)."""
    other = tmp_path / "my-papers"
    files = {}
    for rel in MNIST_FILES:
        path = other / Path(rel).relative_to("MNIST")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"my own notes called {path.name}\n".encode())
        files[path] = path.read_bytes()
    return files


def test_a_link_in_a_data_folder_to_another_folder_never_gets_its_files_deleted(
        tmp_path, capsys) -> None:
    """`data/mnist/MNIST -> ~/my-papers`: preparing MNIST stops with one line naming the link;
    the other folder's files of MNIST's names keep their bytes, the link stays, nothing is
    written (no stamp, no record)."""
    files = _other_folder(tmp_path)
    link = tmp_path / "data" / "mnist" / "MNIST"
    link.parent.mkdir(parents=True)
    link.symlink_to(tmp_path / "my-papers", target_is_directory=True)
    out = tmp_path / "record.json"
    code = main(["data", "prepare", "mnist", "--root", str(tmp_path / "data"),
                 "--no-download", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and f"{link} ->" in err
    assert "nothing was deleted or written" in err
    assert {p: p.read_bytes() for p in files} == files
    assert link.is_symlink()
    assert sorted(p.name for p in link.parent.iterdir()) == ["MNIST"]
    assert not out.exists()


def test_a_link_where_a_file_goes_is_left_alone_and_named(tmp_path) -> None:
    """The link at a file's own name leading out is refused too (not even the link is
    removed); a link that stays inside the folder is no concern."""
    victim = tmp_path / "outside.txt"
    victim.write_bytes(b"mine\n")
    folder = tmp_path / "data" / "mnist"
    (folder / "MNIST" / "raw").mkdir(parents=True)
    planted = folder / MNIST_FILES[0]
    planted.symlink_to(victim)
    (folder / "inner").symlink_to(folder / "MNIST")
    assert outward_links(folder) == [planted]
    assert outward_link(folder, "inner/raw") is None
    with pytest.raises(DataError, match="link leading out of the data folder"):
        resolve("mnist", tmp_path / "data", download=False)
    assert planted.is_symlink() and victim.read_bytes() == b"mine\n"


def test_a_data_folder_that_is_itself_a_link_is_still_prepared(tmp_path) -> None:
    """A data set kept elsewhere and linked in (`data/toy -> /big/disk/toy`) is common and
    stays allowed: "outside" is judged from where the folder really is."""
    payload = b"toy data\n"
    spec = DatasetSpec(name="toylink", title="toy", source="test", files=(FileSpec(
        "toy.txt", sha256=hashlib.sha256(payload).hexdigest(), size=len(payload)),))
    DATASETS["toylink"] = spec
    try:
        real = tmp_path / "disk" / "toylink"
        real.mkdir(parents=True)
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "toylink").symlink_to(real, target_is_directory=True)
        mirror = tmp_path / "mirror"
        mirror.mkdir()
        (mirror / "toy.txt").write_bytes(payload)
        resolve("toylink", tmp_path / "data", mirror=mirror, download=False)
        assert (real / "toy.txt").read_bytes() == payload
    finally:
        del DATASETS["toylink"]


def test_an_archive_member_below_a_link_leading_out_is_never_unpacked(tmp_path,
                                                                       monkeypatch) -> None:
    """A pinned archive whose member goes below `data/toytar/toy -> elsewhere`: nothing is
    unpacked through the link, the other folder is unchanged."""
    archive = tar_gz({"toy/named.txt": b"named\n", "extra/x.txt": b"x\n"})
    monkeypatch.setitem(DATASETS, "toytar", DatasetSpec(
        name="toytar", title="toy", source="test", files=(FileSpec(
            "extra/x.txt", sha256=hashlib.sha256(b"x\n").hexdigest(), remote="toy.tar.gz",
            unpack="untar", remote_sha256=hashlib.sha256(archive).hexdigest(),
            remote_size=len(archive)),)))
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "toy.tar.gz").write_bytes(archive)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "named.txt").write_bytes(b"mine\n")
    folder = tmp_path / "data" / "toytar"
    folder.mkdir(parents=True)
    (folder / "toy").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(DataError):
        resolve("toytar", tmp_path / "data", mirror=mirror, download=False)
    assert [p.name for p in elsewhere.iterdir()] == ["named.txt"]
    assert (elsewhere / "named.txt").read_bytes() == b"mine\n"

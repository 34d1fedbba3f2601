"""Data caches are checked, never trusted: every fetched file is pinned by SHA-256,
the ``.sharpness-verified.json`` stamp is a record that verification never reads, and
preparing a data set never deletes a file tracked by git."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from sharpness.cli import main
from sharpness.data import DATASETS, resolve
from sharpness.data.fetch import STAMP
from sharpness.errors import DataError
from tests.data.archives import toy_archive, unpacked_from_mirror
from tests.paper import formats


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_fetched_file_is_pinned_by_sha256():
    """Each file a data set fetches (a download, a mirror copy) has a SHA-256 pin: its own, or
    its archive's; the archives and ``.mat`` files carry their size too."""
    for spec in DATASETS.values():
        if spec.user_provided or not spec.files or spec.subdir == "embedded":
            continue
        for f in spec.files:
            assert f.sha256 or f.remote_sha256, (spec.name, f.path)
            if f.unpack == "untar":
                assert f.remote_sha256 and f.remote_size, (spec.name, f.path)
    for name in ("svhn",):
        assert all(f.sha256 and f.size for f in DATASETS[name].files)


def _fake_cifar(root: Path) -> Path:
    """A fake CIFAR-10 copy (synthetic pickles) in ``root/cifar10`` with stamps written by hand:
    one that keys each file by its SHA-256 and names the archive of every member, and one in
    the current format that matches the fake files' sizes, times and hashes and claims the
    pinned archive."""
    folder = formats.write_cifar(root, 10).parent
    members = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    (folder / STAMP).write_text(json.dumps({
        "files": {m: _sha(folder / m) for m in members},
        "archives": {m: members for m in members},
        "source": "cifar-10-python.tar.gz"}))
    return folder


def test_a_fake_cifar_copy_with_a_hand_written_stamp_is_not_called_verified(tmp_path, capsys):
    """The case: fake CIFAR-10 files with a hand-written `.sharpness-verified.json`
    are not a verified copy, whatever the stamp says; `data prepare` says so and writes no
    record of a verified copy."""
    folder = _fake_cifar(tmp_path / "data")
    with pytest.raises(DataError, match="not available"):
        resolve("cifar10", tmp_path / "data", download=False)
    # a stamp in the current format, matching the fake files exactly, changes nothing either
    formats.write_cifar(tmp_path / "data", 10)  # the rejected files were removed: again
    spec = DATASETS["cifar10"]
    stamp = {"files": {}, "archives": {spec.files[0].remote: {
        "sha256": spec.files[0].remote_sha256, "size": spec.files[0].remote_size}}}
    for p in folder.rglob("*"):
        if p.is_file() and p.name != STAMP:
            st = p.stat()
            stamp["files"][str(p.relative_to(folder))] = {
                "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": _sha(p)}
    (folder / STAMP).write_text(json.dumps(stamp))
    out = tmp_path / "prepared.json"
    capsys.readouterr()
    code = main(["data", "prepare", "cifar10", "--root", str(tmp_path / "data"),
                 "--no-download", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2 and "verified copy" not in captured.out
    assert "is not available" in captured.err and not out.exists()
    # nor is a mirror's `cifar-10-python.tar.gz` that is not the pinned archive unpacked
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with tarfile.open(mirror / "cifar-10-python.tar.gz", "w:gz") as tar:
        tar.add(formats.write_cifar(tmp_path / "src", 10), arcname="cifar-10-batches-py")
    with pytest.raises(DataError):
        resolve("cifar10", tmp_path / "fresh", mirror=mirror, download=False)
    assert not (tmp_path / "fresh" / "cifar10" / "cifar-10-batches-py").exists()


def test_members_without_a_pin_are_checked_against_their_archive_not_the_stamp(
        tmp_path, monkeypatch):
    """An archive whose members have no pin of their own (like the JPEG copy of CIFAR-10): the
    pinned archive is kept beside them and every member is compared with it on every check. A
    member edited and a stamp rewritten to match it (what a hand-written stamp does) is not
    verified; a stamp edited on its own changes nothing either."""
    archive = toy_archive(b"numbers" * 50)
    folder = unpacked_from_mirror("toyjpeg", archive, tmp_path, monkeypatch, pin_size=True)
    assert (folder / "toy.tar.gz").read_bytes() == archive  # kept: the check can be redone
    record = json.loads((folder / STAMP).read_text())
    assert set(record["files"]["toy/batch.bin"]) == {"size", "mtime_ns", "sha256"}
    # a stamp that says nothing true is ignored: the files still match their archive
    (folder / STAMP).write_text(json.dumps({"files": {"toy/batch.bin": "0" * 64}}))
    assert resolve("toyjpeg", tmp_path / "data", download=False) == folder
    # an edited member with a stamp rewritten to match it: not verified
    edited = folder / "toy/batch.bin"
    edited.write_bytes(b"edited numbers")
    members = ["toy/batch.bin", "toy/meta.txt"]
    (folder / STAMP).write_text(json.dumps({  # hashes only: no size or time of its own
        "files": {m: _sha(folder / m) for m in members},
        "archives": {"toy/meta.txt": members}}))
    with pytest.raises(DataError):
        resolve("toyjpeg", tmp_path / "data", download=False)
    assert not (folder / "toy/meta.txt").exists()  # rejected and removed (not tracked)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.invalid",
                    "-c", "user.name=test", "-c", "commit.gpgsign=false", *args],
                   check=True, capture_output=True)


def test_preparing_a_damaged_embedded_file_never_deletes_it(tmp_path, capsys):
    """The case: `sharpness data prepare mnist_embedded` on a damaged committed file
    (tracked by git) stops with an error that says how to restore it, and the file is still
    there, untouched."""
    repo = tmp_path / "checkout"
    embedded = repo / "data" / "embedded"
    embedded.mkdir(parents=True)
    target = embedded / DATASETS["mnist_embedded"].files[0].path
    target.write_bytes(b"damaged: not the committed subset")
    _git(repo, "init", "-q")
    _git(repo, "add", str(target.relative_to(repo)))
    _git(repo, "commit", "-q", "-m", "subset")
    before = target.read_bytes()
    capsys.readouterr()
    code = main(["data", "prepare", "mnist_embedded", "--root", str(repo / "data"),
                 "--no-download", "--out", str(tmp_path / "prepared.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert target.is_file() and target.read_bytes() == before
    assert "tracked by git" in err and "checkout --" in err and str(target) in err
    with pytest.raises(DataError, match="tracked by git"):
        resolve("mnist_embedded", repo / "data", download=False)
    assert target.read_bytes() == before


def test_the_checkouts_committed_subsets_count_as_tracked(repo):
    from sharpness.data.fetch import tracked_by_git

    for name in ("mnist_embedded", "cifar10_embedded"):
        path = repo / "data" / "embedded" / DATASETS[name].files[0].path
        if (repo / ".git").exists():
            assert tracked_by_git(path), path
    assert not tracked_by_git(Path(os.devnull).parent / "no-such-file")

"""Data folders and mirrors come from elsewhere: nothing in them runs, no write follows a link
planted in them, no pickle in them is loaded, and an archive is checked before it costs
anything (docs/security.md, "Data folders, links and archives")."""

from __future__ import annotations

import gzip
import hashlib
import os
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sharpness.data import DATASETS, DatasetSpec, FileSpec, load_dataset, resolve
from sharpness.data.checkout import tracked_by_git
from sharpness.data.fetch import STAMP
from sharpness.errors import DataError
from sharpness.io import LinkRefused
from sharpness.runs.lock import run_lock
from tests.paper import formats
from tests.security.archives import tar_gz

VICTIM = b"a file outside the project that must never change\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir(parents=True, exist_ok=True)
    victim.write_bytes(VICTIM)
    return victim


def _plant_fsmonitor(repo: Path, marker: Path) -> None:
    """A git repository at ``repo`` whose fsmonitor is a script that creates ``marker``."""
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    script = repo / "monitor.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    script.chmod(0o755)
    subprocess.run(["git", "-C", str(repo), "add", "monitor.sh"], check=True,
                   capture_output=True)
    subprocess.run(["git", "-C", str(repo), "config", "core.fsmonitor", str(script)],
                   check=True, capture_output=True)
    assert not marker.exists()


def test_a_git_fsmonitor_planted_in_a_data_folder_never_runs(tmp_path):
    """The attack: `data/mnist/` holds a `.git` whose `core.fsmonitor` is a script, beside
    a file that fails its pin. Rejecting the file asks whether it is committed; the script
    never runs (the question goes to the project's checkout alone)."""
    folder = tmp_path / "data" / "mnist"
    marker = tmp_path / "EXECUTED"
    _plant_fsmonitor(folder, marker)
    bad = folder / "MNIST" / "raw" / "train-images-idx3-ubyte"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not mnist")
    with pytest.raises(DataError):
        resolve("mnist", tmp_path / "data", download=False)
    assert not marker.exists()


def test_a_repository_nested_in_the_checkout_is_never_asked(tmp_path):
    """A data folder inside the checkout holding its own `.git` with a planted fsmonitor: git
    runs with the checkout's `--git-dir`/`--work-tree`, fsmonitor and hooks off."""
    checkout = tmp_path / "checkout"
    marker = tmp_path / "EXECUTED"
    _plant_fsmonitor(checkout, tmp_path / "EXECUTED_BY_CHECKOUT")  # even the checkout's own
    nested = checkout / "data" / "mnist"
    _plant_fsmonitor(nested, marker)
    bad = nested / "bad.bin"
    bad.write_bytes(b"x")
    assert tracked_by_git(checkout / "monitor.sh", checkout=checkout)
    assert not tracked_by_git(bad, checkout=checkout)
    assert not tracked_by_git(tmp_path / "elsewhere.bin", checkout=checkout)
    assert not marker.exists() and not (tmp_path / "EXECUTED_BY_CHECKOUT").exists()


@pytest.fixture
def gz_spec(monkeypatch):
    """A registry entry for one small ``.gz`` file, its unpacked content pinned."""
    payload = b"toy numbers\n" * 500

    def make(remote_sha256: str | None = None) -> tuple[DatasetSpec, bytes]:
        spec = DatasetSpec(name="toygz", title="toy", source="test", files=(
            FileSpec("raw/values.bin", sha256=hashlib.sha256(payload).hexdigest(),
                     size=len(payload), remote="values.bin.gz", unpack="gunzip",
                     remote_sha256=remote_sha256),))
        monkeypatch.setitem(DATASETS, "toygz", spec)
        return spec, payload
    return make


def test_a_link_at_the_unpacked_files_temporary_name_is_never_written_through(
        tmp_path, gz_spec):
    """The attack: a link at the predictable `<file>.part` name pointing at another file.
    The temporary file is a fresh `mkstemp` name, so the link's target keeps its bytes."""
    _, payload = gz_spec()
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "values.bin.gz").write_bytes(gzip.compress(payload))
    victim = _victim(tmp_path)
    raw = tmp_path / "data" / "toygz" / "raw"
    raw.mkdir(parents=True)
    (raw / "values.bin.part").symlink_to(victim)
    folder = resolve("toygz", tmp_path / "data", mirror=mirror, download=False)
    assert victim.read_bytes() == VICTIM
    target = folder / "raw" / "values.bin"
    assert not target.is_symlink() and target.read_bytes() == payload


def test_a_link_at_a_lock_file_is_refused_and_its_target_kept(tmp_path):
    """The attack: `data/.mnist.lock` is a link; the lock is opened with O_NOFOLLOW and
    must be a regular file, so the link's target is not truncated."""
    victim = _victim(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / ".mnist.lock").symlink_to(victim)
    with pytest.raises(LinkRefused, match=r"\.mnist\.lock is a link"), \
            run_lock(tmp_path / "data" / "mnist"):
        pass
    assert victim.read_bytes() == VICTIM


def _zeros_gz(path: Path, mib: int = 64) -> None:
    """``mib`` MiB of zeros, gzipped as a stream (about 64 KiB on disk)."""
    block = bytes(1 << 20)
    with gzip.open(path, "wb") as out:
        for _ in range(mib):
            out.write(block)


def _zeros_in_mirror(tmp_path: Path, monkeypatch, name: str, dataset: str) -> list[int]:
    """A mirror holding ``name``, a ``.gz`` of 64 MiB of zeros; resolving ``dataset`` from it
    is refused. Returns how many bytes any gzip stream handed out meanwhile."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _zeros_gz(mirror / name)
    counted = _read_counter(monkeypatch)
    with pytest.raises(DataError):
        resolve(dataset, tmp_path / "data", mirror=mirror, download=False)
    return counted


def _read_counter(monkeypatch) -> list[int]:
    """Counts the bytes any gzip stream hands out while the test runs."""
    counted = [0]
    original = gzip.GzipFile.read

    def read(self, *args):
        block = original(self, *args)
        counted[0] += len(block)
        return block
    monkeypatch.setattr(gzip.GzipFile, "read", read)
    return counted


def test_a_gz_of_64_mib_of_zeros_is_refused_before_it_is_unpacked(tmp_path, monkeypatch):
    """The attack: a `.gz` of 64 MiB of zeros in a mirror under MNIST's name. Its size is
    not a pinned copy's, so it is refused without being decompressed: no file under the final
    name, no stamp."""
    counted = _zeros_in_mirror(tmp_path, monkeypatch, "train-images-idx3-ubyte.gz", "mnist")
    folder = tmp_path / "data" / "mnist"
    assert counted[0] == 0
    assert not (folder / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()
    assert not (folder / STAMP).exists()


def test_an_unpinned_gz_stops_at_the_pinned_size_and_leaves_nothing(tmp_path, gz_spec,
                                                                     monkeypatch):
    """A `.gz` without a pin of its own is decompressed as a stream that stops as soon as it
    passes the unpacked file's pinned size: the 64 MiB are never written, nothing lands under
    the final name, no temporary file is left, and no stamp is written."""
    _, payload = gz_spec()
    counted = _zeros_in_mirror(tmp_path, monkeypatch, "values.bin.gz", "toygz")
    assert counted[0] <= len(payload) + (2 << 20)  # stopped within a block of the pin
    folder = tmp_path / "data" / "toygz"
    assert not (folder / STAMP).exists()
    assert [p for p in folder.rglob("*") if p.is_file()] == []


def test_every_download_source_is_https_and_every_gz_is_pinned():
    for spec in DATASETS.values():
        for url in spec.urls:
            assert url.startswith("https://"), (spec.name, url)
        for f in spec.files:
            if f.unpack == "gunzip":
                assert f.size and f.sha256 and f.remote_pins, (spec.name, f.path)
                assert all(p.size and (p.sha256 or p.md5) for p in f.remote_pins)


class _Payload:
    """A pickle whose loading would create a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def test_a_pickle_in_a_cifar_folder_never_runs_even_unverified(tmp_path, monkeypatch):
    """The attack: `SHARPNESS_UNVERIFIED_DATA` set and a pickle that runs a command as
    CIFAR-10's first batch. The hash check is off for the named folder; the batches are still
    read by the restricted unpickler, which refuses it, and nothing runs."""
    formats.write_cifar(tmp_path, 10)
    marker = tmp_path / "EXECUTED"
    batch = tmp_path / "cifar10" / "cifar-10-batches-py" / "data_batch_1"
    batch.write_bytes(pickle.dumps({"data": _Payload(marker), "labels": [1]}, protocol=2))
    monkeypatch.setenv("SHARPNESS_UNVERIFIED_DATA", str(tmp_path))
    with pytest.raises(DataError, match="data_batch_1: not read: it names posix.system"):
        load_dataset("cifar10", tmp_path, download=False)
    assert not marker.exists()
    formats.write_cifar(tmp_path, 10)  # a legitimate small batch loads
    assert len(load_dataset("cifar10", tmp_path, download=False).x_train) == 100


def test_the_unverified_switch_names_one_folder_and_nothing_else(tmp_path, monkeypatch):
    """Data outside the named folder is checked as always; a value that is no folder (the
    old free-text reason) is refused."""
    formats.write_cifar(tmp_path / "a", 10)
    (tmp_path / "b").mkdir()
    monkeypatch.setenv("SHARPNESS_UNVERIFIED_DATA", str(tmp_path / "b"))
    with pytest.raises(DataError):
        load_dataset("cifar10", tmp_path / "a", download=False)
    monkeypatch.setenv("SHARPNESS_UNVERIFIED_DATA", "synthetic files")
    with pytest.raises(DataError, match="names no folder"):
        load_dataset("cifar10", tmp_path / "a", download=False)


def test_a_batch_that_is_not_the_published_structure_is_refused(tmp_path):
    from sharpness.data.cifar import read_batch

    path = tmp_path / "batch"
    path.write_bytes(pickle.dumps({"data": np.zeros((2, 3072), np.float64), "labels": [0, 1]},
                                  protocol=2))
    with pytest.raises(DataError, match="not a CIFAR batch"):
        read_batch(path, "labels")


def test_a_link_where_an_archive_member_goes_is_left_alone_not_written_through(
        tmp_path, monkeypatch):
    """A link planted at the path of an archive member (one the registry does not name, so
    no check removes it first), leading out of the data folder: unpacking stops naming it,
    the link is left alone and its target keeps its bytes (sharpness.data.links)."""
    archive = tar_gz({"toy/named.txt": b"named\n", "toy/other.txt": b"other member\n"})
    monkeypatch.setitem(DATASETS, "toytar", DatasetSpec(
        name="toytar", title="toy", source="test", files=(FileSpec(
            "toy/named.txt", sha256=hashlib.sha256(b"named\n").hexdigest(),
            remote="toy.tar.gz", unpack="untar",
            remote_sha256=hashlib.sha256(archive).hexdigest(), remote_size=len(archive)),)))
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "toy.tar.gz").write_bytes(archive)
    victim = _victim(tmp_path)
    planted = tmp_path / "data" / "toytar" / "toy" / "other.txt"
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim)
    with pytest.raises(DataError):
        resolve("toytar", tmp_path / "data", mirror=mirror, download=False)
    assert victim.read_bytes() == VICTIM
    assert planted.is_symlink()

"""Data resolution: verified local copy -> mirror -> download -> clear error."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import tarfile
import threading
from pathlib import Path

import pytest

from sharpness.data import DATASETS, DatasetSpec, FileSpec, resolve
from sharpness.data.fetch import download_url
from sharpness.errors import DataError
from tests.data.archives import toy_archive, unpacked_from_mirror

PAYLOAD = b"tiny data set\n" * 100


def _archive() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("toy/values.txt")
        info.size = len(PAYLOAD)
        tar.addfile(info, io.BytesIO(PAYLOAD))
    return buf.getvalue()


ARCHIVE = _archive()


@pytest.fixture
def toy_spec(monkeypatch):
    """A registry entry for a tiny archive, checked by the SHA-256 of the unpacked file."""
    def make(urls=()):
        spec = DatasetSpec(
            name="toyset", title="toy", source="test",
            files=(FileSpec("toy/values.txt", sha256=hashlib.sha256(PAYLOAD).hexdigest(),
                            remote="toy.tar.gz", unpack="untar",
                            remote_sha256=hashlib.sha256(ARCHIVE).hexdigest()),),
            urls=tuple(urls))
        monkeypatch.setitem(DATASETS, "toyset", spec)
        return spec
    return make


@pytest.fixture
def http_server(tmp_path):
    """A local HTTP server on 127.0.0.1 serving ``tmp_path/served``."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # polled every 50 ms: shutdown() waits up to one poll interval (0.5 s by default)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_mirror_is_used_when_set(tmp_path, toy_spec):
    toy_spec()
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "toy.tar.gz").write_bytes(ARCHIVE)
    folder = resolve("toyset", tmp_path / "data", mirror=mirror, download=False)
    assert (folder / "toy/values.txt").read_bytes() == PAYLOAD


def test_mirror_from_environment(tmp_path, toy_spec, monkeypatch):
    toy_spec()
    mirror = tmp_path / "envmirror"
    (mirror / "toyset").mkdir(parents=True)
    (mirror / "toyset" / "toy.tar.gz").write_bytes(ARCHIVE)
    monkeypatch.setenv("SHARPNESS_DATA_MIRROR", str(mirror))
    folder = resolve("toyset", tmp_path / "data", download=False)
    assert (folder / "toy/values.txt").read_bytes() == PAYLOAD


def test_corrupted_local_copy_is_rejected_and_refetched(tmp_path, toy_spec, caplog):
    toy_spec()
    bad = tmp_path / "data" / "toyset" / "toy" / "values.txt"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"corrupted")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "toy.tar.gz").write_bytes(ARCHIVE)
    folder = resolve("toyset", tmp_path / "data", mirror=mirror, download=False)
    assert (folder / "toy/values.txt").read_bytes() == PAYLOAD
    assert "rejected" in caplog.text


def test_corrupted_mirror_is_never_used(tmp_path, toy_spec):
    toy_spec()
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "toy.tar.gz").write_bytes(ARCHIVE[:-10] + b"0123456789")
    with pytest.raises(DataError):
        resolve("toyset", tmp_path / "data", mirror=mirror, download=False)
    assert not (tmp_path / "data" / "toyset" / "toy" / "values.txt").exists()


def test_missing_data_set_says_what_to_put_where(tmp_path, toy_spec):
    toy_spec()
    with pytest.raises(DataError) as err:
        resolve("toyset", tmp_path / "data", download=False)
    text = str(err.value)
    assert "toyset" in text
    assert "toy/values.txt" in text
    assert str(tmp_path / "data" / "toyset") in text
    assert "SHARPNESS_DATA_MIRROR" in text and "data.mirror" in text


def test_download_from_local_http_server(tmp_path, toy_spec, http_server, capsys):
    served, url = http_server
    (served / "toy.tar.gz").write_bytes(ARCHIVE)
    toy_spec(urls=[url])
    folder = resolve("toyset", tmp_path / "data")
    assert (folder / "toy/values.txt").read_bytes() == PAYLOAD
    assert "toy.tar.gz" in capsys.readouterr().err  # the progress bar names the file


def test_download_with_wrong_checksum_is_rejected(tmp_path, toy_spec, http_server):
    served, url = http_server
    (served / "toy.tar.gz").write_bytes(_archive()[:-4] + b"oops")
    toy_spec(urls=[url])
    with pytest.raises(DataError):
        resolve("toyset", tmp_path / "data")


def test_download_progress_reports_size(tmp_path, http_server, capsys):
    served, url = http_server
    (served / "blob.bin").write_bytes(b"x" * 300_000)
    out = download_url(url + "blob.bin", tmp_path / "blob.bin")
    assert out.read_bytes() == b"x" * 300_000
    err = capsys.readouterr().err
    assert "100%" in err and "300k" in err


def test_unreachable_download_leaves_no_partial_file(tmp_path, toy_spec):
    toy_spec(urls=["http://127.0.0.1:9/"])
    with pytest.raises(DataError):
        resolve("toyset", tmp_path / "data")
    leftovers = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    # only the folder's lock file stays (sharpness.runs.lock), released: empty, no holder
    assert [p.name for p in leftovers] == [".toyset.lock"]
    assert leftovers[0].read_text() == ""


def test_verified_copy_is_used_without_mirror(tmp_path, toy_spec):
    toy_spec()
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "toy.tar.gz").write_bytes(ARCHIVE)
    resolve("toyset", tmp_path / "data", mirror=mirror, download=False)
    (mirror / "toy.tar.gz").unlink()
    assert resolve("toyset", tmp_path / "data", download=False) == Path(tmp_path / "data/toyset")


def test_unpacked_files_are_reused_only_while_their_content_is_the_verified_one(
        tmp_path, monkeypatch):
    """An archive with only an archive checksum (like CIFAR's): every file it unpacked is
    keyed by its SHA-256 in the stamp, so an edited member is not reused."""
    archive = toy_archive(PAYLOAD)
    folder = unpacked_from_mirror("toyarch", archive, tmp_path, monkeypatch)
    assert resolve("toyarch", tmp_path / "data", download=False) == folder  # verified: reused
    (folder / "toy/batch.bin").write_bytes(b"edited")  # not the file named in the registry
    with pytest.raises(DataError):
        resolve("toyarch", tmp_path / "data", download=False)
    (tmp_path / "mirror/toy.tar.gz").write_bytes(archive)
    resolve("toyarch", tmp_path / "data", mirror=tmp_path / "mirror", download=False)
    assert (folder / "toy/batch.bin").read_bytes() == PAYLOAD


def test_download_lands_with_the_umask_mode_not_mkstemps_0600(tmp_path, http_server):
    import os
    import stat

    served, url = http_server
    (served / "blob.bin").write_bytes(b"y" * 1000)
    old = os.umask(0o022)
    try:
        out = download_url(url + "blob.bin", tmp_path / "blob.bin")
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


@pytest.mark.workflow  # two processes on one folder's lock
def test_a_second_fetcher_waits_for_the_first_and_reuses_its_copy(tmp_path, toy_spec):
    """Two jobs that find a data set missing at once: the second waits on the folder's lock,
    then finds the first one's verified copy and fetches nothing."""
    import subprocess
    import sys
    import time

    toy_spec()
    folder = tmp_path / "data" / "toyset"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from sharpness.runs.lock import run_lock\n"
        f"folder = Path({str(folder)!r})\n"
        "with run_lock(folder, what='data folder'):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(1.5)\n"
        "    (folder / 'toy').mkdir(parents=True)\n"
        f"    (folder / 'toy' / 'values.txt').write_bytes({PAYLOAD!r})\n")],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"

    def refuse(*_args, **_kwargs):
        raise AssertionError("fetched although another process was fetching")

    start = time.monotonic()
    got = resolve("toyset", tmp_path / "data", opener=refuse, download=True)
    assert holder.wait(timeout=30) == 0
    assert time.monotonic() - start > 0.5  # it waited for the holder
    assert got == folder and (folder / "toy/values.txt").read_bytes() == PAYLOAD

"""A toy tar.gz data set served from a local mirror: what the cache tests of
``test_resolve.py`` and ``test_cache_trust.py`` unpack and then tamper with."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from sharpness.data import DATASETS, DatasetSpec, FileSpec, resolve


def toy_archive(payload: bytes) -> bytes:
    """A gzipped tar of ``toy/meta.txt`` and ``toy/batch.bin`` (holding ``payload``)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in (("toy/meta.txt", b"meta"), ("toy/batch.bin", payload)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def unpacked_from_mirror(name: str, archive: bytes, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch, *, pin_size: bool = False) -> Path:
    """Register ``name`` as ``archive`` (pinned by its SHA-256, and its size with
    ``pin_size``; no member pinned), resolve it from a mirror under ``tmp_path`` into
    ``tmp_path/data`` and take the mirror's copy away: the unpacked folder."""
    size = {"remote_size": len(archive)} if pin_size else {}
    monkeypatch.setitem(DATASETS, name, DatasetSpec(name=name, title="toy", source="test", files=(
        FileSpec("toy/meta.txt", remote="toy.tar.gz", unpack="untar",
                 remote_sha256=hashlib.sha256(archive).hexdigest(), **size),)))
    mirror = tmp_path / "mirror"
    mirror.mkdir(exist_ok=True)
    (mirror / "toy.tar.gz").write_bytes(archive)
    folder = resolve(name, tmp_path / "data", mirror=mirror, download=False)
    (mirror / "toy.tar.gz").unlink()
    return folder

"""Turning a fetched file into a data set's file, checked before it costs anything.

A fetched file (a download, a mirror copy) is compared with its pins before anything is
unpacked: its size first (a stat, free), then its SHA-256 (or, for a file of which only an
MD5 is published, that MD5 with the size). A ``.gz`` is then decompressed as a stream into a
``mkstemp`` file beside the target, counting bytes: it stops as soon as the output passes the
unpacked file's pinned size (or :data:`MAX_UNPACKED` when none is pinned), and the target is
replaced only once the output has exactly the pinned size and SHA-256. A refused file leaves
nothing under the final name, and the caller writes no stamp. An archive is unpacked only
once it matches its pins, and a link found on disk where one of its members goes is removed
first (:func:`no_links_filter`), never written through. Its members are counted first, one
header at a time, against :data:`ARCHIVE_LIMITS` (entries, bytes per member, bytes in all;
:func:`bounded_members`): a pinned archive is what its pin says, and the bound holds as well
for one that is not.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path

from sharpness.data.registry import FileSpec, RemotePin
from sharpness.errors import DataError
from sharpness.io import atomic_open
from sharpness.limits import ArchiveLimits, Budget

#: most bytes a ``.gz`` may unpack to when the unpacked file has no pinned size
MAX_UNPACKED = 1 << 30
_CHUNK = 1 << 20
#: what a data set's archive may unpack to (CIFAR's JPEG copy: 60,022 entries, 0.2 GB)
ARCHIVE_LIMITS = ArchiveLimits(entries=200_000, member_bytes=MAX_UNPACKED,
                               total_bytes=4 * MAX_UNPACKED)


def digest(path: Path, algo: str) -> str:
    """The ``algo`` hex digest of a file, streamed."""
    hasher = hashlib.new(algo)
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            hasher.update(block)
    return hasher.hexdigest()


def checksum_ok(path: Path, sha256: str | None, md5: str | None,
                size: int | None = None) -> bool:
    """Whether ``path`` matches the given size and checksum(s); ``True`` when none is given.
    The size is compared first, so a file of another size is refused without being read."""
    if size is not None and path.stat().st_size != size:
        return False
    if sha256 and digest(path, "sha256") != sha256:
        return False
    return not (md5 and digest(path, "md5") != md5)


def _pin_ok(path: Path, pin: RemotePin) -> bool:
    return checksum_ok(path, pin.sha256, pin.md5, pin.size)


def remote_ok(fetched: Path, spec: FileSpec) -> bool:
    """Whether a fetched file is one of the copies ``spec`` pins (any of its ``remote_pins``,
    or its single ``remote_*`` pin)."""
    if spec.remote_pins:
        return any(_pin_ok(fetched, pin) for pin in spec.remote_pins)
    return checksum_ok(fetched, spec.remote_sha256, spec.remote_md5, spec.remote_size)


def gunzip_checked(fetched: Path, target: Path, size: int | None, sha256: str | None) -> None:
    """Decompress ``fetched`` onto ``target`` through a temporary file, stopping as soon as
    the output passes ``size`` (or :data:`MAX_UNPACKED`); ``target`` is replaced only when
    the output has that size and SHA-256, else :class:`DataError` and nothing is replaced."""
    limit = size if size is not None else MAX_UNPACKED
    hasher = hashlib.sha256()
    written = 0
    try:
        with gzip.open(fetched, "rb") as src, atomic_open(target, "wb") as dst:
            while block := src.read(_CHUNK):
                written += len(block)
                if written > limit:
                    raise DataError(f"{fetched}: unpacks to more than the {limit:,} bytes "
                                    f"{target.name} may have; stopped, nothing written")
                hasher.update(block)
                dst.write(block)
            if size is not None and written != size:
                raise DataError(f"{fetched}: unpacks to {written:,} bytes, not the pinned "
                                f"{size:,} of {target.name}; nothing written")
            if sha256 and hasher.hexdigest() != sha256:
                raise DataError(f"{fetched}: unpacks to a file whose SHA-256 is not the "
                                f"pinned one of {target.name}; nothing written")
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{fetched}: not a readable gzip file ({exc}); nothing written") \
            from exc


def copy_into(source: Path, target: Path) -> None:
    """Copy ``source`` onto ``target`` through a ``mkstemp`` file beside it (a link at the
    target is replaced, never written through)."""
    with open(source, "rb") as src, atomic_open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, _CHUNK)


def no_links_filter(root: Path) -> Callable[[tarfile.TarInfo, str], tarfile.TarInfo | None]:
    """A ``tarfile`` extraction filter for ``root``: Python's ``data`` filter (no member
    outside ``root``, no absolute or escaping link, no device), after removing a link found
    on disk at the member's path, which extraction would otherwise write through."""
    def keep(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        target = Path(dest) / member.name
        inside = Path(os.path.realpath(target.parent)).is_relative_to(os.path.realpath(dest))
        if inside and target.is_symlink():
            target.unlink()  # the link only, never what it names
        return tarfile.data_filter(member, dest)
    return keep


def bounded_members(archive: tarfile.TarFile, what: str,
                    limits: ArchiveLimits = ARCHIVE_LIMITS) -> list[tarfile.TarInfo]:
    """The members of ``archive``, read one header at a time and stopped with
    :class:`~sharpness.limits.LimitExceeded` at the first limit passed (a tar member unpacks
    to exactly the size its header states, so counting headers bounds the unpacking)."""
    budget = Budget(limits, what)
    members = []
    for member in archive:
        budget.entry(member.name, member.size if member.isfile() else 0)
        members.append(member)
    return members


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False

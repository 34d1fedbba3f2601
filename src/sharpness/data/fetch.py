"""Finding a verified copy of a data set: local copy, then mirror, then download, then a clear error.

Every candidate is checked against the registry's pins before it is used; a copy that fails
is reported, removed and fetched again from the next source, never used. What is checked:

* a file with its own pin (SHA-256, MD5, size in the registry) is re-hashed every time;
* a file unpacked from an archive that has no pin of its own (the JPEG copy of CIFAR-10) is
  checked against the archive it came from: the archive is kept beside it, must match its own
  pinned SHA-256, and every member it holds must equal the file on disk. The check is redone
  every time, from the pins.

``.sharpness-verified.json`` in a data folder is the record of the last check (each file's
size, modification time and SHA-256, the archive it came from and that archive's pinned
SHA-256), written after a check passed: a cache of a check the pipeline can redo, never a
certificate. A stamp that does not match the files, or that someone wrote by hand, changes
nothing: verification never reads it.

A file tracked by git (the committed subsets in ``data/embedded/``) is never deleted or
replaced: a damaged one stops with an error that says how to restore it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from sharpness.data.checkout import tracked_by_git
from sharpness.data.links import outward_links, refuse_outward
from sharpness.data.registry import DatasetSpec, FileSpec, get_spec
from sharpness.data.unpack import (
    bounded_members,
    checksum_ok,
    copy_into,
    digest,
    gunzip_checked,
    no_links_filter,
    remote_ok,
    same_file,
)
from sharpness.errors import DataError
from sharpness.io import atomic_write_json, new_file_mode, read_json
from sharpness.runs.environment import now_iso
from sharpness.runs.lock import run_lock

log = logging.getLogger(__name__)

MIRROR_ENV = "SHARPNESS_DATA_MIRROR"
STAMP = ".sharpness-verified.json"
#: names the one folder whose data files are accepted without their checksums (the
#: synthetic files of the paper smoke test, say): every data set found at or under it loads
#: without its hash check, and its provenance says so; nothing else changes (the files are
#: still read as data, never unpickled; docs/security.md)
UNVERIFIED_ENV = "SHARPNESS_UNVERIFIED_DATA"
#: the checkout's data folder: its ``embedded/`` holds the committed subsets, which a job
#: loads from there when the data root has none (:mod:`sharpness.data.embedded`)
CHECKOUT_DATA = Path(__file__).resolve().parents[3] / "data"


def unverified_folder() -> Path | None:
    """The folder ``SHARPNESS_UNVERIFIED_DATA`` names (resolved), or None when unset; a value
    that names no folder is refused with :class:`DataError`."""
    value = os.environ.get(UNVERIFIED_ENV)
    if not value:
        return None
    folder = Path(value).expanduser()
    if not folder.is_dir():
        raise DataError(f"{UNVERIFIED_ENV}={value!r} names no folder: it must name the one "
                        "data folder whose files are accepted without their checksums")
    return folder.resolve()


def unverified_reason(folder: str | os.PathLike[str]) -> str | None:
    """Why the data in ``folder`` is not checked against its pins (it lies at or under the
    folder ``SHARPNESS_UNVERIFIED_DATA`` names), or None when it is checked."""
    allowed = unverified_folder()
    if allowed is None or not Path(folder).resolve().is_relative_to(allowed):
        return None
    return f"files under {allowed} ({UNVERIFIED_ENV})"


def _pinned(spec: FileSpec) -> bool:
    """Whether the unpacked file itself has a pin (else it is checked through its archive)."""
    return bool(spec.sha256 or spec.md5)


def _kept_archive(root: Path, spec: FileSpec) -> Path:
    """Where the archive of an unpinned member is kept (beside the files it unpacked)."""
    return root / _remote_name(spec)


def _archive_members_match(root: Path, archive: Path) -> bool:
    """Whether every regular file of ``archive`` is on disk under ``root`` with its bytes."""
    try:
        with tarfile.open(archive) as tar:
            for member in tar:
                if not member.isfile():
                    continue
                target = root / member.name
                handle = tar.extractfile(member)
                if handle is None or not target.is_file() \
                        or target.stat().st_size != member.size:
                    return False
                member_hash = hashlib.sha256()
                while block := handle.read(1 << 20):
                    member_hash.update(block)
                if member_hash.hexdigest() != digest(target, "sha256"):
                    return False
    except (OSError, tarfile.TarError):
        return False
    return True


def _file_ok(root: Path, spec: FileSpec) -> bool:
    """Whether ``root/spec.path`` is the registry's file, checked now from the pins (never
    from the stamp)."""
    target = root / spec.path
    if not target.is_file():
        return False
    if _pinned(spec):
        return checksum_ok(target, spec.sha256, spec.md5, spec.size)
    if spec.unpack != "untar" or not (spec.remote_sha256 or spec.remote_md5):
        return False  # nothing pinned to check it against
    # No pin of the unpacked file: redo the check through the pinned archive kept beside it
    # (every member of it, so an edited sibling of the named file is caught too).
    archive = _kept_archive(root, spec)
    return (archive.is_file()
            and checksum_ok(archive, spec.remote_sha256, spec.remote_md5, spec.remote_size)
            and _archive_members_match(root, archive))


def committed_copy(spec: DatasetSpec, root: Path) -> Path | None:
    """The folder of a verified copy of committed subset ``spec`` (``subdir: embedded``): under
    ``root``, else the checkout's, as its loader finds it; None when neither verifies or
    ``spec`` is not a committed subset."""
    if spec.subdir != "embedded":
        return None
    return next((folder for folder in (root / spec.subdir, CHECKOUT_DATA / spec.subdir)
                 if not verify(spec, folder)), None)


def copy_files(spec: DatasetSpec, root: Path) -> list[str]:
    """The files of the copy of ``spec`` in ``root`` that :func:`verify` reads, relative to
    ``root``: each pinned file; for a file checked through its kept archive, that archive
    and every file it holds; for a layout-checked set, every file under ``root`` (links to
    files are read through; a linked folder is :class:`DataError`: name its real place)."""
    if spec.required_dirs:
        return _every_file(root)
    names = {f.path for f in spec.files}
    for fspec in spec.files:
        if not _pinned(fspec):
            archive = _kept_archive(root, fspec)
            names.add(archive.name)
            with tarfile.open(archive) as tar:
                names.update(m.name for m in bounded_members(tar, str(archive)) if m.isfile())
    return sorted(names)


def _every_file(root: Path) -> list[str]:
    """Every file under ``root`` (relative), the stamp left out."""
    found = []
    for parent, dirs, files in os.walk(root):
        for name in dirs:
            if (Path(parent) / name).is_symlink():
                raise DataError(f"{Path(parent) / name} is a linked folder: give the data "
                                "folder as its real location")
        found += [str((Path(parent) / n).relative_to(root)) for n in files
                  if n != STAMP]
    return sorted(found)


def verify(spec: DatasetSpec, root: Path) -> list[str]:
    """Problems with the copy in ``root`` (empty list: verified)."""
    if spec.required_dirs:
        return [f"missing folder {root / d}" for d in spec.required_dirs
                if not (root / d).is_dir()]
    return [f"{root / f.path}: " + ("missing" if not (root / f.path).exists()
                                     else "checksum mismatch")
            for f in spec.files if not _file_ok(root, f)]


def _unpack(fetched: Path, spec: FileSpec, root: Path) -> None:
    """Make ``root/spec.path`` from a fetched file, checked first (:mod:`sharpness.data.unpack`);
    the stamp is written only once the result verifies."""
    if not remote_ok(fetched, spec):
        raise DataError(f"{fetched}: not a pinned copy (size or checksum differ: corrupted "
                        "or wrong file); not unpacked")
    if spec.unpack == "copy" and not checksum_ok(fetched, spec.sha256, spec.md5, spec.size):
        raise DataError(f"{fetched}: checksum mismatch (corrupted or wrong file)")
    target = root / spec.path
    target.parent.mkdir(parents=True, exist_ok=True)
    unpacked = [spec.path]
    if spec.unpack == "gunzip":
        gunzip_checked(fetched, target, spec.size, spec.sha256)
    elif spec.unpack == "untar":
        with tarfile.open(fetched) as archive:
            members = bounded_members(archive, str(fetched))  # entries and sizes bounded
            refuse_outward(root, [m.name for m in members], "unpack members")
            archive.extractall(root, members=members, filter=no_links_filter(root))
            unpacked = sorted(m.name for m in members if m.isfile())
        if not _pinned(spec):  # its members are checked against it later: keep it
            kept = _kept_archive(root, spec)
            if not same_file(fetched, kept):
                copy_into(fetched, kept)
    else:
        copy_into(fetched, target)
    if not _file_ok(root, spec):
        raise DataError(f"{target}: does not match its pin after unpacking {fetched}")
    _write_stamp(root, spec, fetched, unpacked)


def _write_stamp(root: Path, spec: FileSpec, fetched: Path, unpacked: list[str]) -> None:
    """Record the check just passed in ``root/.sharpness-verified.json``: each unpacked file's
    size, modification time and SHA-256 and the archive's pinned hash. A record of what was
    checked, not a certificate: :func:`verify` never reads it."""
    stamp = root / STAMP
    try:
        old = read_json(stamp) if stamp.exists() else {}
    except (OSError, ValueError):
        old = {}
    files = old.get("files") if isinstance(old.get("files"), dict) else {}
    files = {k: v for k, v in files.items() if isinstance(v, dict)}  # older stamps: dropped
    for name in unpacked:
        stat = (root / name).stat()
        files[name] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                       "sha256": digest(root / name, "sha256")}
    archives = old.get("archives") if isinstance(old.get("archives"), dict) else {}
    archives[_remote_name(spec)] = {"sha256": spec.remote_sha256, "md5": spec.remote_md5,
                                    "size": spec.remote_size, "source": str(fetched),
                                    "members": unpacked if spec.unpack == "untar" else None,
                                    "checked": now_iso()}
    atomic_write_json(stamp, {"note": "record of the last check; never read to verify",
                              "files": dict(sorted(files.items())), "archives": archives})


def record_check(spec: DatasetSpec, root: Path, source: Path, files: list[str]) -> None:
    """Write the stamp of a copy of ``spec`` in ``root`` that came whole from ``source`` (a
    data bundle) and verifies now (:func:`verify` is asked first; a copy that does not verify
    is :class:`DataError` and no stamp is written): ``files`` are recorded as checked, as a
    download's unpacked files are."""
    problems = verify(spec, root)
    if problems:
        raise DataError(f"{spec.name}: the copy in {root} does not verify: "
                        + "; ".join(problems))
    for i, fspec in enumerate(spec.files):
        _write_stamp(root, fspec, source, files if i == 0 else [])


def _remote_name(spec: FileSpec) -> str:
    return spec.remote or Path(spec.path).name


def in_mirror(spec: DatasetSpec, mirror: Path) -> bool:
    """Whether ``mirror`` holds a candidate for every file of ``spec`` (found, not yet
    checked: they are checked against the pins when fetched)."""
    return bool(spec.files) and all(
        any((mirror / layout.format(name=spec.name, remote=_remote_name(f))).is_file()
            for layout in spec.mirror_layouts) for f in spec.files)


def _from_mirror(spec: DatasetSpec, root: Path, mirror: Path) -> bool:
    for fspec in spec.files:
        if _file_ok(root, fspec):
            continue
        candidates = [mirror / layout.format(name=spec.name, remote=_remote_name(fspec))
                      for layout in spec.mirror_layouts]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            log.info("%s: %s not in mirror %s", spec.name, _remote_name(fspec), mirror)
            return False
        try:
            _unpack(found, fspec, root)
        except DataError as exc:
            log.warning("%s: mirror copy rejected: %s", spec.name, exc)
            return False
    return not verify(spec, root)


def download_url(url: str, dest: Path, desc: str | None = None, timeout: float = 30.0) -> Path:
    """Download ``url`` to ``dest`` with a progress bar (atomic: a partial file is removed)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, os.fdopen(fd, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=desc or dest.name,
                      mininterval=1.0) as bar:
                while block := response.read(1 << 16):
                    out.write(block)
                    bar.update(len(block))
        os.chmod(tmp, new_file_mode())  # mkstemp's 0600 would hide the data from a group
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest


def _from_download(spec: DatasetSpec, root: Path, opener: Callable[..., Path]) -> bool:
    if not spec.urls:
        return False
    with tempfile.TemporaryDirectory(dir=root.parent) as tmpdir:
        for fspec in spec.files:
            if _file_ok(root, fspec):
                continue
            for base in spec.urls:
                url = base if base.endswith(_remote_name(fspec)) else base + _remote_name(fspec)
                try:
                    fetched = opener(url, Path(tmpdir) / _remote_name(fspec),
                                     desc=f"{spec.name}: {_remote_name(fspec)}")
                    _unpack(fetched, fspec, root)
                    break
                except (urllib.error.URLError, OSError, DataError, ValueError) as exc:
                    log.warning("%s: download from %s failed: %s", spec.name, url, exc)
            else:
                return False
    return not verify(spec, root)


def missing_message(spec: DatasetSpec, root: Path, mirror: Path | None) -> str:
    """What to put where, for a data set that could not be found or fetched."""
    lines = [f"data set {spec.name!r} ({spec.title}) is not available."]
    if spec.required_dirs:
        lines.append(f"Put it in {root}/ so that these folders exist: "
                     + ", ".join(spec.required_dirs) + ".")
    else:
        lines.append(f"Put these files in {root}/:")
        lines += [f"  {f.path}" + (f"  (sha256 {f.sha256})" if f.sha256
                                     else f"  (md5 {f.md5})" if f.md5 else "")
                  + (f"  (from {f.remote}, {f.unpack}"
                     + (f"; its sha256 {f.remote_sha256}" if f.remote_sha256 else "") + ")"
                     if f.unpack != "copy" else "")
                  for f in spec.files]
    lines.append(f"or set data.mirror in the config (or {MIRROR_ENV}) to a folder holding "
                 + ", ".join(sorted({_remote_name(f) for f in spec.files})) + " "
                 f"(mirror tried: {mirror or 'none'}).")
    if spec.urls:
        lines.append("Official source: " + ", ".join(spec.urls))
    if spec.notes:
        lines.append(spec.notes)
    return "\n".join(lines)


def resolve(name: str, root: str | os.PathLike[str] = "data", *,
            mirror: str | os.PathLike[str] | None = None, download: bool = True,
            opener: Callable[..., Path] = download_url,
            user_path: str | os.PathLike[str] | None = None) -> Path:
    """Return the folder of a verified copy of data set ``name``.

    Order: ``<root>/<name>/`` if it verifies, else the mirror folder (``mirror`` or the
    ``SHARPNESS_DATA_MIRROR`` variable), else the official download (if ``download``), else a
    :class:`~sharpness.errors.DataError` that says what to put where. ``user_path`` replaces
    the folder for data sets the user provides (ImageNet).
    """
    spec = get_spec(name)
    folder = Path(user_path) if user_path else Path(root) / (spec.subdir or name)
    reason = unverified_reason(folder)
    if reason:  # the one folder named unverified: present is enough, and provenance says so
        absent = [str(folder / f.path) for f in spec.files if not (folder / f.path).exists()]
        absent += [str(folder / d) for d in spec.required_dirs if not (folder / d).is_dir()]
        if not absent:
            log.warning("%s: checksums NOT checked: %s", name, reason)
            return folder
        raise DataError(f"{name}: {UNVERIFIED_ENV} is set but {', '.join(absent)} missing")
    if not verify(spec, folder):
        return folder
    if spec.user_provided and not spec.urls:  # nothing to fetch: say what to put where
        return _fetch(spec, folder, mirror, download, opener)
    # one fetcher per folder: two jobs (or `data prepare` beside a training job) that find
    # the copy missing at once would otherwise delete and rewrite each other's files
    with run_lock(folder, what="data folder"):
        if not verify(spec, folder):  # another process fetched it while this one waited
            return folder
        return _fetch(spec, folder, mirror, download, opener)


def _fetch(spec: DatasetSpec, folder: Path, mirror: str | os.PathLike[str] | None,
           download: bool, opener: Callable[..., Path]) -> Path:
    """Replace what is wrong in ``folder`` from the mirror or the download (lock held)."""
    name = spec.name
    problems = verify(spec, folder)
    for link in outward_links(folder):  # reported and left alone (sharpness.data.links)
        log.warning("%s: %s is a link leading out of %s; left alone", name, link, folder)
    # nothing is deleted or written through such a link: every path this may touch is checked
    refuse_outward(folder, [f.path for f in spec.files], "delete or write")
    if folder.exists() and any((folder / f.path).exists() for f in spec.files):
        rejected = [folder / f.path for f in spec.files
                    if (folder / f.path).exists() and not _file_ok(folder, f)]
        # the committed subsets count as committed wherever the data root is; any other file
        # is asked of the project's checkout only (sharpness.data.checkout)
        tracked = [p for p in rejected if spec.subdir == "embedded" or tracked_by_git(p)]
        if tracked:  # the checkout's own file: never deleted, never replaced from a mirror
            raise DataError(
                f"{name}: {', '.join(map(str, tracked))} does not match its pinned checksum "
                f"({'; '.join(problems)}), and it is a file tracked by git: it is not deleted "
                f"or replaced. Restore the committed copy with `git -C "
                f"{tracked[0].parent} checkout -- {' '.join(p.name for p in tracked)}` "
                f"(`git status` shows what changed).")
        log.warning("%s: local copy rejected (%s); fetching again", name, "; ".join(problems))
        for path in rejected:
            path.unlink()
    if spec.user_provided and not spec.urls:
        raise DataError(missing_message(spec, folder, None))
    folder.mkdir(parents=True, exist_ok=True)
    mirror_dir = Path(mirror) if mirror else (Path(os.environ[MIRROR_ENV])
                                              if os.environ.get(MIRROR_ENV) else None)
    if mirror_dir is not None and mirror_dir.is_dir() and _from_mirror(spec, folder, mirror_dir):
        log.info("%s: verified copy from mirror %s", name, mirror_dir)
        return folder
    if download and _from_download(spec, folder, opener):
        log.info("%s: downloaded and verified", name)
        return folder
    raise DataError(missing_message(spec, folder, mirror_dir))

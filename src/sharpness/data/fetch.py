"""Finding a verified copy of a data set: local copy, then mirror, then download, then a clear error.

Every candidate is checked against the registry's checksums before it is used; a copy that
fails is reported, removed and fetched again from the next source, never used.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from sharpness.data.registry import DatasetSpec, FileSpec, get_spec
from sharpness.errors import DataError
from sharpness.io import atomic_write_json, new_file_mode, read_json
from sharpness.runlock import run_lock

log = logging.getLogger(__name__)

MIRROR_ENV = "SHARPNESS_DATA_MIRROR"
STAMP = ".sharpness-verified.json"
#: set to a reason (e.g. "synthetic files of the paper smoke test") to accept data files
#: without their checksums; every loaded data set then says so in its provenance
UNVERIFIED_ENV = "SHARPNESS_UNVERIFIED_DATA"


def unverified_reason() -> str | None:
    """The reason checksum checks are off (``SHARPNESS_UNVERIFIED_DATA``), or None."""
    return os.environ.get(UNVERIFIED_ENV) or None


def _digest(path: Path, algo: str) -> str:
    digest = hashlib.new(algo)
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def checksum_ok(path: Path, sha256: str | None, md5: str | None) -> bool:
    """Whether ``path`` matches the given checksum(s); ``True`` when none is given."""
    if sha256 and _digest(path, "sha256") != sha256:
        return False
    return not (md5 and _digest(path, "md5") != md5)


def _file_ok(root: Path, spec: FileSpec) -> bool:
    target = root / spec.path
    if not target.is_file():
        return False
    if spec.sha256 or spec.md5:
        return checksum_ok(target, spec.sha256, spec.md5)
    # No published checksum of the unpacked file: accept only what this module verified
    # (the archive's checksum) when it unpacked it, and only while the file still has the
    # SHA-256 recorded then (an edited or truncated file is not reused).
    stamp = root / STAMP
    if not stamp.exists():
        return False
    content = read_json(stamp)
    recorded = content.get("files", {})
    if not isinstance(recorded, dict):  # an older stamp without hashes: verify again
        return False
    members = content.get("archives", {}).get(spec.path, [spec.path])
    return all(recorded.get(m) is not None and (root / m).is_file()
               and recorded[m] == _digest(root / m, "sha256") for m in [spec.path, *members])


def verify(spec: DatasetSpec, root: Path) -> list[str]:
    """Problems with the copy in ``root`` (empty list: verified)."""
    if spec.required_dirs:
        return [f"missing folder {root / d}" for d in spec.required_dirs
                if not (root / d).is_dir()]
    return [f"{root / f.path}: " + ("missing" if not (root / f.path).exists()
                                     else "checksum mismatch")
            for f in spec.files if not _file_ok(root, f)]


def _unpack(fetched: Path, spec: FileSpec, root: Path) -> None:
    if not checksum_ok(fetched, spec.remote_sha256, spec.remote_md5):
        raise DataError(f"{fetched}: checksum mismatch (corrupted or wrong file)")
    target = root / spec.path
    target.parent.mkdir(parents=True, exist_ok=True)
    members: list[str] = []
    if spec.unpack == "gunzip":
        tmp = target.with_name(target.name + ".part")
        with gzip.open(fetched, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.replace(tmp, target)
    elif spec.unpack == "untar":
        with tarfile.open(fetched) as archive:
            archive.extractall(root, filter="data")
            members = sorted(m.name for m in archive.getmembers() if m.isfile())
    else:
        tmp = target.with_name(target.name + ".part")
        shutil.copyfile(fetched, tmp)
        os.replace(tmp, target)
    if spec.unpack != "copy" and not (spec.sha256 or spec.md5):
        stamp = root / STAMP
        old = read_json(stamp) if stamp.exists() else {}
        files = old.get("files", {}) if isinstance(old.get("files"), dict) else {}
        archives = old.get("archives", {})
        unpacked = members if spec.unpack == "untar" else [spec.path]
        for member in unpacked:  # every unpacked file, keyed by its content
            files[member] = _digest(root / member, "sha256")
        archives[spec.path] = unpacked
        atomic_write_json(stamp, {"files": dict(sorted(files.items())), "archives": archives,
                                  "source": str(fetched)})


def _remote_name(spec: FileSpec) -> str:
    return spec.remote or Path(spec.path).name


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
        lines += [f"  {f.path}" + (f"  (sha256 {f.sha256})" if f.sha256 else "")
                  + (f"  (from {f.remote}, {f.unpack})" if f.unpack != "copy" else "")
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
    reason = unverified_reason()
    if reason:  # a test fixture's synthetic files: present is enough, and provenance says so
        absent = [str(folder / f.path) for f in spec.files if not (folder / f.path).exists()]
        absent += [str(folder / d) for d in spec.required_dirs if not (folder / d).is_dir()]
        if not absent:
            log.warning("%s: checksums NOT checked (%s=%s)", name, UNVERIFIED_ENV, reason)
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
    if folder.exists() and any((folder / f.path).exists() for f in spec.files):
        log.warning("%s: local copy rejected (%s); fetching again", name, "; ".join(problems))
        for fspec in spec.files:
            if (folder / fspec.path).exists() and not _file_ok(folder, fspec):
                (folder / fspec.path).unlink()
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

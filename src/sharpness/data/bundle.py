"""One archive of the data sets and pretrained weights a plan needs, for a machine without network.

:func:`write_bundle` (``sharpness data bundle``) packs one tar (gzip when its name ends in
``.gz``):

* ``MANIFEST.json``, first: the format, the data sets it holds (each with its folder under the
  data root), the weight files, and every other member's path, size and SHA-256;
* ``data/<folder>/...``: each data set's copy as it lies under the data root: the files
  :func:`~sharpness.data.fetch.verify` reads (:func:`~sharpness.data.fetch.copy_files`),
  packed only once the copy verifies against the registry's pins; it is found as a job finds
  it (:func:`~sharpness.data.fetch.resolve`: the local copy, the mirror, the download when
  allowed; the committed subsets also from the checkout). A set that cannot be found stops
  the bundle, every such set named with what to put where;
* ``weights/<file>``: each pinned weight file from the torch hub cache, checked against its
  pin (downloaded first when allowed).

:func:`read_bundle` (``sharpness data unbundle``) trusts nothing in it: the members are
counted, one header at a time, against :data:`BUNDLE_LIMITS` before anything is written
(:func:`~sharpness.data.unpack.bounded_members`); a member that is not a regular file (a
link, a device), whose name leaves its folder (``../x``, an absolute path) or that the
manifest does not list is refused; every file is streamed into a staging folder beside its
destination, hashed, and compared with the manifest's size and SHA-256; every data set is
then verified there against the registry's own pins (a manifest can be forged, the pins
cannot) and every weight file against its pin. Only when all of that passed are the files
moved into place (``os.replace``: a file under its final name is whole or absent), never
through a link leading out of the data folder, never over a file tracked by git that
differs; then each data set's stamp is written as after a download. A refusal leaves nothing
under the final names.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from sharpness.data import fetch, weights
from sharpness.data.checkout import tracked_by_git
from sharpness.data.links import refuse_outward
from sharpness.data.registry import DatasetSpec, get_spec, on_disk
from sharpness.data.unpack import bounded_members, digest
from sharpness.errors import DataError
from sharpness.io import atomic_open
from sharpness.limits import ArchiveLimits, load_json
from sharpness.runs.lock import run_lock

MANIFEST = "MANIFEST.json"
FORMAT = "sharpness-data-bundle/1"
DATA, WEIGHTS = "data", "weights"
#: the most a bundle may unpack to unless told otherwise (``--max-gb``): entries, bytes one
#: file may have (the largest pinned file, ViT-B/16's weights, has 0.35 GB), bytes in all
BUNDLE_LIMITS = ArchiveLimits(entries=500_000, member_bytes=4 << 30, total_bytes=64 << 30)
#: the most the manifest may have (a line per file: ImageNet's 1.3 M files fit)
MANIFEST_BYTES = 256 << 20
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Entry:
    """One file of a bundle: its member name, size in bytes and SHA-256."""

    path: str
    size: int
    sha256: str


@dataclass
class Manifest:
    """What a bundle holds: data set -> folder under the data root, weight key -> file name,
    and every file with its size and SHA-256."""

    datasets: dict[str, str] = field(default_factory=dict)
    weights: dict[str, str] = field(default_factory=dict)
    files: list[Entry] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The manifest as written (``format`` first)."""
        return {"format": FORMAT, "datasets": self.datasets, "weights": self.weights,
                "files": [asdict(e) for e in self.files]}

    @classmethod
    def from_json(cls, value: Any, what: str) -> Manifest:
        """A manifest read back, its shape checked (one :class:`DataError` line when not)."""
        bad = DataError(f"{what}: not a {FORMAT} manifest; refused, nothing written")
        if not isinstance(value, dict) or value.get("format") != FORMAT:
            raise bad
        datasets, weights_, files = (value.get(k) for k in ("datasets", "weights", "files"))
        if not (isinstance(datasets, dict) and isinstance(weights_, dict)
                and isinstance(files, list)
                and all(isinstance(k, str) and isinstance(v, str)
                        for d in (datasets, weights_) for k, v in d.items())):
            raise bad
        try:
            entries = [Entry(str(f["path"]), int(f["size"]), str(f["sha256"])) for f in files]
        except (KeyError, TypeError, ValueError) as err:
            raise bad from err
        if not all(e.size >= 0 and len(e.sha256) == 64 for e in entries):
            raise bad
        return cls(dict(datasets), dict(weights_), entries)


def folder_of(spec: DatasetSpec) -> str:
    """The folder of ``spec``'s copy under the data root."""
    return spec.subdir or spec.name


# -- writing ----------------------------------------------------------------------------------

def _data_folder(name: str, root: Path, mirror: Path | None, download: bool,
                 user_path: str | None) -> Path:
    """The folder of a verified copy of ``name`` (as :func:`fetch.resolve` finds it; a
    committed subset missing under ``root`` is taken from the checkout)."""
    committed = fetch.committed_copy(get_spec(name), root)
    if committed is not None:
        return committed
    folder = fetch.resolve(name, root, mirror=mirror, download=download, user_path=user_path)
    reason = fetch.unverified_reason(folder)
    if reason:
        raise DataError(f"{name}: its copy in {folder} is not checked against its pins "
                        f"({reason}): a bundle carries verified copies only")
    return folder


def _weight_file(key: str, download: bool) -> Path:
    """The pinned weight file ``key`` in the torch hub cache, checked (downloaded first when
    absent and ``download``)."""
    pin = weights.PINNED[key]
    path = weights.hub_checkpoints() / pin.file_name
    if not path.is_file():
        if not download:
            raise DataError(weights.missing_weights(pin, path, "not in the torch hub cache "
                                                               "and downloads are off"))
        try:
            why = weights.download_checked(pin, path)
        except OSError as err:  # URLError is an OSError
            raise DataError(weights.missing_weights(pin, path, f"download failed: {err}")) \
                from err
        if why is not None:
            raise DataError(f"{pin.url}: the download is not the pinned file: {why}")
    why = weights.problem(path, pin)
    if why is not None:
        raise DataError(f"{path} is not the pinned {pin.title}: {why}; it is not bundled")
    return path


def gather(datasets: Iterable[str], weight_keys: Iterable[str], root: Path, *,
           mirror: Path | None = None, download: bool = True,
           user_paths: Mapping[str, str] | None = None
           ) -> tuple[Manifest, list[tuple[str, Path]]]:
    """The manifest's sets and weights, and each member name with the file it is read from;
    :class:`DataError` naming every data set or weight file that cannot be found."""
    manifest, sources, problems = Manifest(), [], {}
    for name in on_disk(datasets):
        spec = get_spec(name)
        try:
            folder = _data_folder(name, root, mirror, download, (user_paths or {}).get(name))
            files = fetch.copy_files(spec, folder)
        except (DataError, OSError, tarfile.TarError) as err:
            problems[name] = str(err)
            continue
        manifest.datasets[name] = folder_of(spec)
        sources += [(f"{DATA}/{folder_of(spec)}/{rel}", folder / rel) for rel in files]
    for key in sorted(set(weight_keys)):
        try:
            path = _weight_file(key, download)
        except (DataError, KeyError) as err:
            problems[key] = str(err)
            continue
        manifest.weights[key] = path.name
        sources.append((f"{WEIGHTS}/{path.name}", path))
    if problems:
        raise DataError(f"cannot bundle: missing {', '.join(problems)}; for each, what to put "
                        "where:\n\n" + "\n\n".join(problems.values()))
    return manifest, sorted(set(sources))


class _Hashing:
    """A file read through, hashed as it is read (what is packed is what was hashed)."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle, self.hasher = handle, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        block = self.handle.read(size)
        self.hasher.update(block)
        return block


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    return info


def write_bundle(out: Path, datasets: Iterable[str], weight_keys: Iterable[str], root: Path, *,
                 mirror: Path | None = None, download: bool = True,
                 user_paths: Mapping[str, str] | None = None) -> Manifest:
    """Write the bundle of ``datasets`` and ``weight_keys`` to ``out`` (atomically: a failed
    bundle leaves nothing under its name), each found as :func:`gather` finds it."""
    manifest, sources = gather(datasets, weight_keys, root, mirror=mirror, download=download,
                               user_paths=user_paths)
    manifest.files = [Entry(arc, path.stat().st_size, digest(path, "sha256"))
                      for arc, path in sources]
    head = json.dumps(manifest.as_json(), indent=1).encode()
    with atomic_open(out, "wb") as handle, \
            tarfile.open(fileobj=handle, mode="w:gz" if out.name.endswith(".gz") else "w") as tar:
        tar.addfile(_info(MANIFEST, len(head)), fileobj=io.BytesIO(head))
        for entry, (_, path) in zip(manifest.files, sources, strict=True):
            with open(path, "rb") as src:
                reader = _Hashing(src)
                tar.addfile(_info(entry.path, entry.size), fileobj=reader)
            if reader.hasher.hexdigest() != entry.sha256:
                raise DataError(f"{path} changed while it was bundled; nothing written")
    return manifest


# -- reading ----------------------------------------------------------------------------------

def _parts(name: str, what: str) -> tuple[str, ...]:
    """The parts of member name ``name``, refused when it could leave its folder."""
    parts = PurePosixPath(name).parts
    if (not parts or name.startswith("/") or "\\" in name or "\x00" in name
            or any(p in ("", ".", "..") for p in parts) or parts[0] not in (DATA, WEIGHTS)
            or len(parts) < 2):
        raise DataError(f"{what}: member {name!r} is not a path under data/ or weights/ "
                        "(an absolute path or one leaving its folder); refused, nothing "
                        "written")
    return parts


def _read_manifest(tar: tarfile.TarFile, members: list[tarfile.TarInfo],
                   what: str) -> Manifest:
    heads = [m for m in members if m.name == MANIFEST]
    if len(heads) != 1 or not heads[0].isreg() or heads[0].size > MANIFEST_BYTES:
        raise DataError(f"{what}: no single {MANIFEST} of at most {MANIFEST_BYTES:,} bytes; "
                        "not a data bundle; refused, nothing written")
    handle = tar.extractfile(heads[0])
    assert handle is not None  # a regular member
    manifest = Manifest.from_json(load_json(handle.read(), f"{what}: {MANIFEST}",
                                            max_bytes=MANIFEST_BYTES), what)
    for name, folder in manifest.datasets.items():
        if folder_of(get_spec(name)) != folder:
            raise DataError(f"{what}: the manifest puts {name} in {folder!r}, not in its "
                            f"registry folder {folder_of(get_spec(name))!r}; refused")
    for key, file in manifest.weights.items():
        if key not in weights.PINNED or weights.PINNED[key].file_name != file:
            raise DataError(f"{what}: weight file {key}={file!r} is not a pinned one; refused")
    return manifest


def _allowed(parts: tuple[str, ...], manifest: Manifest) -> bool:
    if parts[0] == WEIGHTS:
        return len(parts) == 2 and parts[1] in manifest.weights.values()
    return len(parts) > 2 and parts[1] in manifest.datasets.values()


def _checked_members(members: list[tarfile.TarInfo], manifest: Manifest,
                     what: str) -> dict[str, tarfile.TarInfo]:
    """Each manifest file's member, every member checked: a regular file, a safe name the
    manifest lists (under a listed set's folder or a listed weight file), of its size."""
    sizes = {e.path: e.size for e in manifest.files}
    if len(sizes) != len(manifest.files):
        raise DataError(f"{what}: the manifest lists a file twice; refused, nothing written")
    found: dict[str, tarfile.TarInfo] = {}
    for member in members:
        if member.name == MANIFEST:
            continue
        if not member.isreg():
            kind = "link" if member.issym() or member.islnk() else "folder" \
                if member.isdir() else "special file"
            raise DataError(f"{what}: member {member.name!r} is a {kind}; a bundle holds "
                            "regular files only (links are never followed); refused, "
                            "nothing written")
        parts = _parts(member.name, what)
        if member.name not in sizes or member.name in found or not _allowed(parts, manifest):
            raise DataError(f"{what}: member {member.name!r} is not in its manifest (or twice "
                            "in the archive); refused, nothing written")
        if member.size != sizes[member.name]:
            raise DataError(f"{what}: member {member.name!r} has {member.size:,} bytes, the "
                            f"manifest {sizes[member.name]:,}; refused, nothing written")
        found[member.name] = member
    absent = sorted(set(sizes) - set(found))
    if absent:
        raise DataError(f"{what}: {len(absent)} file(s) of the manifest are not in the "
                        f"archive ({', '.join(absent[:3])}); refused, nothing written")
    return found


def _stage(tar: tarfile.TarFile, member: tarfile.TarInfo, entry: Entry, target: Path,
           what: str) -> None:
    """Stream ``member`` to ``target`` (a fresh file in the staging folder), hashing it;
    :class:`DataError` when its bytes are not the manifest's."""
    source = tar.extractfile(member)
    assert source is not None  # a regular member
    target.parent.mkdir(parents=True, exist_ok=True)
    hasher, size = hashlib.sha256(), 0
    with source, open(target, "xb") as out:
        while block := source.read(_CHUNK):
            size += len(block)
            if size > entry.size:
                break
            hasher.update(block)
            out.write(block)
    if size != entry.size or hasher.hexdigest() != entry.sha256:
        raise DataError(f"{what}: {entry.path}: its bytes are not those its manifest lists "
                        "(SHA-256 or size differ: tampered or damaged); refused, nothing "
                        "written")


@contextlib.contextmanager
def _staging(base: Path, needed: bool = True) -> Iterator[Path]:
    """A fresh folder beside the destination (same file system: a move is a rename); none
    (``base`` itself, untouched) when nothing goes there."""
    if not needed:
        yield base
        return
    base.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".sharpness-unbundle-", dir=base))
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _verify_staged(manifest: Manifest, stage: Path, weight_stage: Path, what: str) -> None:
    """Every data set in the staging folder verifies against the registry's pins and holds
    every data file staged; every weight file matches its pin."""
    claimed = set()
    for name, folder in manifest.datasets.items():
        spec = get_spec(name)
        problems = fetch.verify(spec, stage / folder)
        if problems:
            raise DataError(f"{what}: data set {name} does not verify against its registry "
                            f"pins ({'; '.join(problems)}); refused, nothing written")
        claimed |= {f"{DATA}/{folder}/{rel}" for rel in fetch.copy_files(spec, stage / folder)}
    extra = sorted(e.path for e in manifest.files
                   if e.path.startswith(f"{DATA}/") and e.path not in claimed)
    if extra:
        raise DataError(f"{what}: {', '.join(extra[:3])} belong(s) to no data set it holds; "
                        "refused, nothing written")
    for key, file in manifest.weights.items():
        why = weights.problem(weight_stage / file, weights.PINNED[key])
        if why is not None:
            raise DataError(f"{what}: weights/{file} is not the pinned file ({why}); refused, "
                            "nothing written")


@dataclass
class _Move:
    staged: Path
    base: Path
    rel: str
    same: bool = False  # the final file already has these bytes: left as it is


def _check_moves(moves: list[_Move], entries: list[Entry], what: str) -> None:
    """Before anything moves: no destination reached through a link leading out of its
    folder, no folder in a file's place, no differing file tracked by git replaced."""
    for move, entry in zip(moves, entries, strict=True):
        refuse_outward(move.base, [move.rel], "write")
        final = move.base / move.rel
        if final.is_dir() and not final.is_symlink():
            raise DataError(f"{what}: {final} is a folder where {entry.path} goes; refused, "
                            "nothing written")
        if final.is_file() and not final.is_symlink():
            move.same = digest(final, "sha256") == entry.sha256
            if not move.same and tracked_by_git(final):
                raise DataError(f"{what}: {final} is a file tracked by git that differs from "
                                f"the bundle's; it is not replaced (restore it with `git "
                                f"checkout`); nothing written")


def read_bundle(archive: Path, root: Path, weights_dir: Path | None = None,
                limits: ArchiveLimits = BUNDLE_LIMITS) -> Manifest:
    """Unpack the bundle ``archive``: data sets under ``root``, weight files into
    ``weights_dir`` (the torch hub cache by default); everything checked before anything is
    moved into place (the module's docstring). Returns its manifest."""
    what = str(archive)
    weights_dir = weights_dir or weights.hub_checkpoints()
    if not archive.is_file():
        raise DataError(f"{what}: no such file")
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = bounded_members(tar, what, limits)
            manifest = _read_manifest(tar, members, what)
            found = _checked_members(members, manifest, what)
            _room(manifest, root, weights_dir, what)
            with _staging(root, bool(manifest.datasets)) as stage, \
                    _staging(weights_dir, bool(manifest.weights)) as weight_stage:
                moves = [_Move(stage / "/".join(p[1:]), root, "/".join(p[1:]))
                         if p[0] == DATA else _Move(weight_stage / p[1], weights_dir, p[1])
                         for p in (_parts(e.path, what) for e in manifest.files)]
                try:
                    for entry, move in zip(manifest.files, moves, strict=True):
                        _stage(tar, found[entry.path], entry, move.staged, what)
                except DataError:
                    raise
                except OSError as err:  # e.g. a file listed where another one's folder goes
                    raise DataError(f"{what}: cannot unpack it ({err}); refused, nothing "
                                    "written") from err
                _verify_staged(manifest, stage, weight_stage, what)
                _place(manifest, moves, root, archive)
    except (tarfile.TarError, EOFError) as err:
        raise DataError(f"{what}: not a readable tar archive ({err}); nothing written") \
            from err
    return manifest


def _room(manifest: Manifest, root: Path, weights_dir: Path, what: str) -> None:
    """Refuse up front a bundle the destination's disk cannot hold."""
    need = {root: 0, weights_dir: 0}
    for e in manifest.files:
        need[root if e.path.startswith(f"{DATA}/") else weights_dir] += e.size
    for base, size in need.items():
        probe = next(p for p in (base, *base.parents) if p.exists())
        free = shutil.disk_usage(probe).free
        if size > free:
            raise DataError(f"{what}: needs {size / 2**30:.2f} GiB under {base}, {free / 2**30:.2f}"
                            " GiB free; refused, nothing written")


def _place(manifest: Manifest, moves: list[_Move], root: Path, archive: Path) -> None:
    """Move the checked files into place (each data set's folder locked meanwhile), then write
    each data set's stamp."""
    _check_moves(moves, manifest.files, str(archive))
    folders = sorted(set(manifest.datasets.values()))
    with contextlib.ExitStack() as locks:
        for folder in folders:
            locks.enter_context(run_lock(root / folder, what="data folder"))
        for move in moves:
            final = move.base / move.rel
            if not move.same:
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(move.staged, final)
        for name, folder in manifest.datasets.items():
            spec = get_spec(name)
            if spec.files:
                fetch.record_check(spec, root / folder, archive.resolve(),
                                   fetch.copy_files(spec, root / folder))


def describe(manifest: Manifest) -> str:
    """One line: what a bundle holds."""
    size = sum(e.size for e in manifest.files)
    return (f"{len(manifest.datasets)} data set(s) ({', '.join(sorted(manifest.datasets))}), "
            f"{len(manifest.weights)} weight file(s), {len(manifest.files)} files, "
            f"{size / 2**20:,.1f} MiB")

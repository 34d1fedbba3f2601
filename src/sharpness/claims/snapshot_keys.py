"""The public keys behind a committed ledger's data, committed beside it, so any clone rebuilds it.

A snapshot's data archive (``docs/claims_X.figures.tar.gz``, :mod:`sharpness.claims.snapshot_data`)
holds signed records (:mod:`sharpness.runs.signing`), and a record is trusted only when its key
is: on a fresh clone no key is, and the promise "the data behind each ledger rebuilds it" would
hold only on the machine that signed them. So the public keys that signed the archive's records
are committed beside it (``docs/claims_X.public_keys``, one hex key a line, written by
``sharpness claims snapshot --data``), and ``sharpness claims build --figures ARCHIVE`` trusts
them **for that archive only** (:func:`figures_source`: while that build reads it) and **only
when git vouches for the file**: it is tracked by the checkout holding it and equal to its
committed blob (:func:`committed_problem`). Trust thus comes from git, never from a file a
writer of ``results/`` (or anyone with the archive) can replace; a key file that is not
committed, or edited since, is ignored with a message, and a record signed by any key not
listed is refused as before.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sharpness.claims.registration_checks import checkout_of, git_output
from sharpness.claims.snapshot_data import SUFFIX, unpack
from sharpness.errors import SharpnessError
from sharpness.runs.provenance import record_edited
from sharpness.runs.signing import FIELD, SCHEME, trusting

KEYS_SUFFIX = ".public_keys"


def keys_path(archive: str | Path) -> Path:
    """``docs/claims_X.figures.tar.gz`` (or ``docs/claims_X.csv``) ->
    ``docs/claims_X.public_keys``."""
    archive = Path(archive)
    stem = archive.name.removesuffix(SUFFIX).removesuffix(".csv")
    return archive.with_name(stem + KEYS_SUFFIX)


def signers(archive: str | Path) -> list[str]:
    """The public keys (hex) of every intact record in ``archive`` (its content id and
    signature as written; whether the key is trusted is not asked here), sorted."""
    keys = set()
    with tarfile.open(archive, mode="r:gz") as tar:
        for member in tar.getmembers():
            if not (member.isfile() and member.name.endswith(".json")):
                continue
            handle = tar.extractfile(member)
            try:
                record = json.loads(handle.read() if handle else b"")
            except ValueError:
                continue
            if record_edited(record, trust=False) is None:
                block = record.get(FIELD) or {}
                if block.get("scheme") == SCHEME:
                    keys.add(str(block.get("public_key")).lower())
    return sorted(keys)


def write_keys(archive: str | Path) -> Path:
    """Write ``<archive stem>.public_keys``: the keys that signed ``archive``'s records."""
    out = keys_path(archive)
    lines = [f"# public keys that signed the records of {Path(archive).name}; trusted for that",
             "# archive only, and only as committed (sharpness.claims.snapshot_keys)",
             *signers(archive)]
    out.write_text("\n".join(lines) + "\n")
    return out


def read_keys(path: Path) -> set[str]:
    """The hex keys a key file lists (``#`` lines are comments)."""
    return {line.strip().lower() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")}


def committed_problem(path: Path) -> str | None:
    """Why git does not vouch for ``path`` (None: it is tracked by the checkout holding it
    and equal to the blob its last commit wrote)."""
    checkout = checkout_of(path.parent)
    if checkout is None:
        return f"{path} is not in a git checkout"
    rel = path.resolve().relative_to(checkout[1]).as_posix()
    last = git_output(checkout, "log", "-1", "--format=%H", "--", rel)
    if not last:
        return f"{rel} is not committed"
    blob = git_output(checkout, "rev-parse", f"{last}:{rel}")
    here = git_output(checkout, "hash-object", str(path.resolve()))
    if not blob or blob != here:
        return f"{rel} differs from the file committed in {last[:7]}"
    return None


def archive_keys(archive: Path) -> set[str]:
    """The keys committed beside ``archive`` that git vouches for (empty, with a message on
    stderr, when the file is absent, uncommitted or edited)."""
    path = keys_path(archive)
    if not path.is_file():
        return set()
    problem = committed_problem(path)
    if problem:
        print(f"sharpness claims: {path} is not trusted ({problem}): only a committed key file "
              "vouches for an archive's records", file=sys.stderr)
        return set()
    return read_keys(path)


@contextlib.contextmanager
def figures_source(figures: Path, out: str | None) -> Iterator[Path]:
    """The folder a build reads: ``figures`` itself, or a snapshot's archive unpacked, its
    committed keys trusted while the block runs (and nowhere else)."""
    if not (figures.is_file() and figures.name.endswith(".tar.gz")):
        yield figures
        return
    if not out:
        raise SharpnessError(f"--figures {figures} is a snapshot's data archive: give --out "
                             "(where CLAIMS.md and claims.csv go)")
    # unpacked into a temporary folder removed on every exit, a refusal included
    with tempfile.TemporaryDirectory(prefix="claims-data-") as tmp, \
            trusting(archive_keys(figures)):
        yield unpack(figures, tmp)

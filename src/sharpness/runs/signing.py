"""Signed records: whoever can write ``results/`` still cannot forge a record without a key.

Every provenance record (a run's ``provenance.json``, a figure's or table's sidecar) and every
``cache_key.json`` is signed when it is written, with an Ed25519 key (the ``cryptography``
package) kept outside the results tree. The signature covers every field of the record (the
canonical JSON of all of it but the ``signature`` field itself), so nothing in it can be
changed, the hashes it holds included, without the key. The signature block names the public
key it verifies with; a record is trusted only when that key is trusted here: the public key
of this machine's own signing key, and any listed in ``SHARPNESS_TRUSTED_KEYS``.

**The key** is ``$SHARPNESS_SIGNING_KEY`` when set, else
``$XDG_CONFIG_HOME/sharpness/signing_key`` (``~/.config/sharpness/signing_key``), created on
first use with mode 0600 in a folder of mode 0700. A key path under the project's
``results/`` or ``figures/`` is refused, links resolved first (``results/`` itself may be a
link): a key beside the records would sign forgeries too. A key file that others can read is
reported (a warning) each time it is loaded.

**Receiving results**: ``sharpness key`` prints this machine's public key (``--out FILE``
writes it, never under ``results/`` or ``figures/``); whoever receives a results folder keeps
that file outside their own ``results/`` and ``figures/``: as a ``*.pub`` file in their trust
folder (``~/.config/sharpness/trusted/``, :func:`trust_folder`), or listed in
``SHARPNESS_TRUSTED_KEYS`` (paths, separated by ``:``); ``sharpness audit`` then checks every
record against it. A trusted-key file inside an output tree (links resolved) is
refused: whoever can write ``results/`` could replace it and re-sign edited records.

**Scoped trust**: :func:`trusting` adds keys for the duration of one block, in this context
only: ``sharpness claims build --figures ARCHIVE`` trusts the keys committed beside a ledger's
data archive while it reads that archive (:mod:`sharpness.claims.snapshot_keys`), and nowhere
else.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import logging
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sharpness.errors import SharpnessError
from sharpness.io import open_regular, to_json

KEY_ENV = "SHARPNESS_SIGNING_KEY"
TRUST_ENV = "SHARPNESS_TRUSTED_KEYS"
TRUST_DIR_ENV = "SHARPNESS_TRUSTED_DIR"
FIELD = "signature"
SCHEME = "ed25519"
#: output trees a key must never be kept in (relative to the working folder and the checkout)
OUTPUT_TREES = ("results", "figures")
#: keys trusted for one block only (:func:`trusting`)
_SCOPED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("sharpness_scoped_trust",
                                                                         default=frozenset())

log = logging.getLogger(__name__)


class SigningKeyRefused(SharpnessError):
    """The signing key's path is inside an output tree, or the key cannot be used."""


def output_tree_of(path: Path) -> Path | None:
    """The output tree (``results/`` or ``figures/`` of the working folder or of the checkout)
    that ``path`` lies in, or ``None``. Both sides are compared as written and with every link
    resolved, so neither a ``results/`` that is a link nor a path that leads into it through
    one escapes the check."""
    checkout = Path(__file__).resolve().parents[3]
    trees = {t for base in (Path.cwd(), checkout) for name in OUTPUT_TREES
             for t in ((base / name).absolute(), Path(os.path.realpath(base / name)))}
    path = path.absolute()
    for here in (path, path.parent.resolve() / path.name, Path(os.path.realpath(path))):
        for tree in sorted(trees):
            if here.is_relative_to(tree):
                return tree
    return None


def key_path() -> Path:
    """Where this machine's signing key is (see the module docstring); refused under
    ``results/`` or ``figures/``, links resolved."""
    value = os.environ.get(KEY_ENV)
    if value:
        path = Path(value).expanduser()
    else:
        config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        path = Path(config) / "sharpness" / "signing_key"
    path = path.absolute()
    tree = output_tree_of(path)
    if tree is not None:
        raise SigningKeyRefused(
            f"the signing key {path} ({KEY_ENV}) is inside {tree}: a key kept "
            "beside the records it signs would sign forged ones too. Name a path "
            f"outside {', '.join(OUTPUT_TREES)} (the default is "
            "~/.config/sharpness/signing_key).")
    return path


def _create(path: Path) -> None:
    """Write a new key at ``path`` (mode 0600), never replacing one another process made."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
    fd, tmp = tempfile.mkstemp(prefix=".signing_key.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
        os.link(tmp, path)  # fails if another process made one meanwhile: that one is kept
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


@functools.cache
def _load(path: Path, _mtime_ns: int) -> Any:
    from cryptography.hazmat.primitives import serialization

    fd = open_regular(path, os.O_RDONLY)  # a link at the key's name is refused
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & 0o077:
        log.warning("the signing key %s can be read or written by others (mode %o): whoever "
                    "reads it can sign forged records as you; run `chmod 600 %s`",
                    path, mode, path)
    with os.fdopen(fd, "rb") as handle:
        key = serialization.load_pem_private_key(handle.read(), password=None)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyRefused(f"{path} is not an Ed25519 private key")
    return key


def private_key(create: bool = True) -> Any | None:
    """This machine's signing key (made on first use when ``create``); ``None`` when there is
    none and ``create`` is false."""
    path = key_path()
    if not path.exists():
        if not create:
            return None
        _create(path)
    return _load(path, path.stat().st_mtime_ns)


def public_hex(key: Any) -> str:
    """The raw public key of a private key, in hex (what a signature block names)."""
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(serialization.Encoding.Raw,
                                         serialization.PublicFormat.Raw).hex()


def own_public_key(create: bool = True) -> str | None:
    """This machine's public key in hex (``None`` without a key when not ``create``)."""
    key = private_key(create)
    return None if key is None else public_hex(key)


@contextlib.contextmanager
def trusting(keys: Iterable[str]) -> Iterator[None]:
    """Trust ``keys`` (hex) too while the block runs, in this context only."""
    token = _SCOPED.set(_SCOPED.get() | {str(k).strip().lower() for k in keys})
    try:
        yield
    finally:
        _SCOPED.reset(token)


def trust_folder() -> Path:
    """The user's folder of trusted public keys (every ``*.pub`` file in it is trusted):
    ``$SHARPNESS_TRUSTED_DIR`` when set, else ``$XDG_CONFIG_HOME/sharpness/trusted``
    (``~/.config/sharpness/trusted``), beside the signing key, outside any results."""
    value = os.environ.get(TRUST_DIR_ENV)
    if value:
        return Path(value).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "sharpness" / "trusted"


def _trust_files() -> list[tuple[str, str]]:
    """``(file, where it was named)`` for every trusted-key file: those ``SHARPNESS_TRUSTED_KEYS``
    lists, then the ``*.pub`` files of :func:`trust_folder`."""
    named = [(n, TRUST_ENV) for n in os.environ.get(TRUST_ENV, "").split(os.pathsep) if n]
    folder = trust_folder()
    if folder.is_dir():
        named += [(str(p), str(folder)) for p in sorted(folder.glob("*.pub"))]
    return named


def trusted_keys() -> set[str]:
    """The public keys records are trusted from: this machine's own, each one in the files
    ``SHARPNESS_TRUSTED_KEYS`` lists and in the ``*.pub`` files of the user's trust folder
    (one hex key a line), and those of an enclosing :func:`trusting` block; a file inside
    ``results/`` or ``figures/`` (links resolved) or one that cannot be read is refused."""
    keys = set(_SCOPED.get())
    own = own_public_key(create=False)
    if own:
        keys.add(own)
    for name, where in _trust_files():
        tree = output_tree_of(Path(name).expanduser())
        if tree is not None:
            raise SigningKeyRefused(
                f"{where} names {name}, which is inside {tree}: whoever can write there "
                "could replace it and re-sign edited records. Keep trusted public keys "
                "outside results/ and figures/ (e.g. ~/.config/sharpness/trusted/).")
        try:
            text = Path(name).expanduser().read_text()
        except OSError as exc:
            raise SigningKeyRefused(f"{where} names {name}, which cannot be read "
                                    f"({exc})") from exc
        keys.update(line.strip().lower() for line in text.splitlines()
                    if line.strip() and not line.startswith("#"))
    return keys


def payload(record: dict[str, Any]) -> bytes:
    """The bytes a record's signature covers: every field but the signature, as canonical
    JSON of the record as its file holds it."""
    body = json.loads(to_json({k: v for k, v in record.items() if k != FIELD}))
    return json.dumps(body, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def sign(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its ``signature`` field (set on the dict in place, and returned)."""
    key = private_key()
    record[FIELD] = {"scheme": SCHEME, "public_key": public_hex(key),
                     "value": key.sign(payload(record)).hex()}
    return record


def signature_problem(record: Any, trust: bool = True) -> str | None:
    """Why ``record``'s signature does not vouch for it (``None``: it is signed, every field
    as signed, by a trusted key): unsigned, a mismatch (edited after signing), or a key that
    is not trusted here (not checked when ``trust`` is false: whether the record is intact
    as its signer wrote it, whoever that was)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    block = record.get(FIELD) if isinstance(record, dict) else None
    if not isinstance(block, dict) or block.get("scheme") != SCHEME:
        return ("UNSIGNED: it carries no signature (written by hand, or by code older than "
                "signed records: rebuild it)")
    try:
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(str(block.get("public_key"))))
        public.verify(bytes.fromhex(str(block.get("value"))), payload(record))
    except (ValueError, TypeError, InvalidSignature):
        return ("SIGNATURE MISMATCH: its content is not what was signed (edited after it "
                "was written)")
    key = str(block.get("public_key")).lower()
    if trust and key not in trusted_keys():
        return (f"UNKNOWN KEY: signed by public key {key[:16]}..., which is not trusted here "
                f"(add its public key file to {TRUST_ENV} if you trust who made it)")
    return None

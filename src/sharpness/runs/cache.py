"""One cache policy for every artifact a later call may pick up instead of computing it.

A reusable artifact (a gradient flow, a training run folder with its checkpoint and
``final.json``, a sweep's runs) is stored with the *key* it was made from:

* the fully resolved settings (every value the computation reads, the resolved device
  included), and
* a *code fingerprint*: the SHA-256 of the source files of exactly the ``sharpness`` modules
  the computation imports (found by reading their ``import`` statements, so a file edited but
  not committed counts as it is on disk: the dirty diff is included), plus the versions of the
  packages that decide the numbers (torch, numpy, scipy, ...).

The policy is: **reuse only on an exact key match; otherwise recompute from scratch and say
why in the log.** :func:`claim_dir` applies it to a folder: it returns ``True`` when the
folder already holds artifacts of this key (reuse them, or resume from their checkpoint),
else removes the stale files, records the new key and returns ``False``.

A cached *file* is also checked for damage before it is used (:mod:`sharpness.runs.seal`: its
SHA-256 is recorded in the same ``cache_key.json``). ``cache_key.json`` is signed when written
(:func:`write_key`); a key whose signature fails (unsigned, edited, or another machine's
untrusted key) is never reused.

The same fingerprint is what the Snakemake rules carry as a param (:func:`code_fingerprint`),
so editing a module reruns exactly the jobs whose command imports it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from sharpness.io import atomic_write_json
from sharpness.runs.signing import sign, signature_problem

log = logging.getLogger(__name__)

PACKAGE = "sharpness"
KEY_FILE = "cache_key.json"
#: Packages whose versions decide the numbers (part of every code fingerprint).
NUMERIC_PACKAGES = ("torch", "torchvision", "numpy", "scipy", "matplotlib", "seaborn",
                    "grad-cam", "scikit-learn")


# -- the source closure ------------------------------------------------------------------------

def package_dir() -> Path:
    """The folder of the ``sharpness`` package in use (the sources actually imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the sharpness package cannot be found on sys.path")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _module_file(name: str, root: Path) -> Path | None:
    """Source file of module ``sharpness.x.y`` under ``root`` (a module or a package)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path, name: str, root: Path, top_level: bool = False) -> set[str]:
    """The ``sharpness`` modules ``path`` imports anywhere (top level or inside functions), or
    at its top level only."""
    stat = path.stat()  # parsed once per version of the file
    return set(_imports_cached(path, name, root, top_level, stat.st_mtime_ns, stat.st_size))


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in ``body`` and in the blocks nested in it (imports are statements,
    so expressions need not be visited: several times faster than ``ast.walk``)."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                stack.extend(reversed([b for b in block if isinstance(b, ast.AST)]))


@functools.cache
def _imports_cached(path: Path, name: str, root: Path, top_level: bool, _mtime_ns: int,
                    _size: int) -> frozenset[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in (tree.body if top_level else _statements(tree.body)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            # ``from sharpness.x import y`` may import the submodule ``sharpness.x.y``
            found.update(f"{module}.{alias.name}" for alias in node.names)
    if is_package and any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__"
                          for n in tree.body):
        # a package that imports its submodules on first use (PEP 562): which one a caller
        # reaches is decided at run time, so every submodule counts
        found.update(f"{name}.{p.stem}" for p in path.parent.glob("*.py")
                     if p.name != "__init__.py")
    return frozenset(m for m in found if m.split(".")[0] == PACKAGE and _module_file(m, root))


def _closure(roots: tuple[str, ...], root: Path) -> tuple[Path, ...]:
    """Files of the modules ``roots`` import, transitively, plus their parent packages.

    An explicitly imported package is followed into its ``__init__``'s imports; a parent
    package that is only run because a submodule was imported is hashed as a file, its
    re-exports not followed (they are not called by the importing code)."""
    todo = list(roots)
    followed: set[str] = set()
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        if name in followed:
            continue
        path = _module_file(name, root)
        if path is None:
            raise ValueError(f"code fingerprint: no module {name!r} under {root}")
        followed.add(name)
        files.add(path)
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = _module_file(".".join(parts[:i]), root)
            if parent is not None:
                files.add(parent)
        todo.extend(sorted(_imports(path, name, root) - followed))
    return tuple(sorted(files))


def source_files(*roots: str, shallow: Sequence[str] = ()) -> list[Path]:
    """The source files of ``roots`` and every ``sharpness`` module they import, plus each
    ``shallow`` module with only what it imports at its top level (a CLI module that imports
    each action's library inside that action's function: the action's library is a root)."""
    root = package_dir()
    names = set(roots)
    for name in shallow:
        path = _module_file(name, root)
        if path is None:
            raise ValueError(f"code fingerprint: no module {name!r} under {root}")
        names |= _imports(path, name, root, top_level=True)
    files = set(_closure(tuple(sorted(names)), root))
    files.update(_module_file(name, root) for name in shallow)  # type: ignore[misc]
    return sorted(files)


def _sha256_file(path: Path) -> str:
    stat = path.stat()  # an edited file has a new mtime or size, so a new cache entry
    return _sha256_cached(str(path), stat.st_mtime_ns, stat.st_size)


@functools.cache
def _sha256_cached(path: str, _mtime_ns: int, _size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def code_manifest(*roots: str, shallow: Sequence[str] = ()) -> dict[str, str]:
    """``{path relative to the package: sha256}`` of the files :func:`source_files` lists."""
    root = package_dir()
    return {str(p.relative_to(root.parent)): _sha256_file(p)
            for p in source_files(*roots, shallow=shallow)}


def numeric_versions() -> dict[str, str | None]:
    """Installed versions of :data:`NUMERIC_PACKAGES` (``None`` when absent)."""
    return dict(_numeric_versions())


@functools.cache
def _numeric_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in NUMERIC_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def code_fingerprint(*roots: str, shallow: Sequence[str] = ()) -> str:
    """SHA-256 of the sources of ``roots`` (transitively, as on disk) and the package versions.

    ``roots`` are module names, e.g. ``"sharpness.eos.sweep"``; ``shallow`` modules count by
    their own file only. Two trees give the same fingerprint exactly when those files are
    byte-identical and the versions agree."""
    return manifest_fingerprint(code_manifest(*roots, shallow=shallow))


def loaded_code_manifest() -> dict[str, str]:
    """``{path: sha256}`` of every ``sharpness`` module loaded in this process: the code a
    record's numbers could have come from (part of its content-addressed id)."""
    root = package_dir()
    out = {}
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != PACKAGE:
            continue
        file = getattr(module, "__file__", None)
        if not file:
            continue
        path = Path(file).resolve()
        if path.is_file() and path.is_relative_to(root):
            out[str(path.relative_to(root.parent))] = _sha256_file(path)
    return dict(sorted(out.items()))


def manifest_fingerprint(manifest: Mapping[str, str]) -> str:
    """The fingerprint of a manifest of source files plus the package versions."""
    payload = {"files": dict(manifest), "packages": numeric_versions()}
    return hashlib.sha256(canonical(payload).encode()).hexdigest()


def callable_modules(*objects: Any) -> list[str]:
    """The ``sharpness`` modules defining ``objects`` (functions or instances), for keys."""
    out = set()
    for obj in objects:
        if obj is None:
            continue
        module = getattr(obj, "__module__", None) or type(obj).__module__  # instance: class's
        if module and module.split(".")[0] == PACKAGE:
            out.add(module)
    return sorted(out)


# -- keys ----------------------------------------------------------------------------------------

def _plain(obj: Any) -> Any:
    """numpy scalars/arrays and paths as JSON values (without importing numpy here)."""
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if hasattr(obj, "tolist"):  # numpy arrays and scalars
        return obj.tolist()
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serialisable")


def canonical(obj: Any) -> str:
    """Compact, sorted JSON (the form every key and id is hashed from)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_plain,
                      ensure_ascii=False)


def cache_key(kind: str, settings: Mapping[str, Any], code_roots: Sequence[str]
              ) -> dict[str, Any]:
    """The key of an artifact: kind, resolved settings, code fingerprint and their digest."""
    settings = json.loads(canonical(settings))
    body = {"kind": kind, "settings": settings, "code": code_fingerprint(*code_roots),
            "code_roots": sorted(set(code_roots))}
    return {**body, "digest": hashlib.sha256(canonical(body).encode()).hexdigest()}


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as ``{"a.b.c": value}`` (lists and scalars are leaves), so two settings
    can be compared key by key in a log line or an audit."""
    if isinstance(obj, Mapping) and obj:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: obj}


def why_differs(stored: Mapping[str, Any] | None, key: Mapping[str, Any]) -> str:
    """A one-line reason why a stored key is not ``key`` (for the log)."""
    if stored is None:
        return "no cache key stored (made by older code or interrupted before it started)"
    reasons = []
    if stored.get("kind") != key.get("kind"):
        reasons.append(f"kind {stored.get('kind')!r} -> {key.get('kind')!r}")
    old, new = flatten(stored.get("settings", {})), flatten(key.get("settings", {}))
    changed = sorted(k for k in set(old) | set(new) if old.get(k, "<unset>") != new.get(k,
                                                                                  "<unset>"))
    if changed:
        shown = ", ".join(f"{k}: {old.get(k, '<unset>')!r} -> {new.get(k, '<unset>')!r}"
                          for k in changed[:6])
        more = f" (+{len(changed) - 6} more)" if len(changed) > 6 else ""
        reasons.append(f"settings differ: {shown}{more}")
    if stored.get("code") != key.get("code"):
        reasons.append(f"code changed (fingerprint {str(stored.get('code'))[:12]} -> "
                       f"{str(key.get('code'))[:12]})")
    return "; ".join(reasons) or "keys differ"


def read_key(directory: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The key stored in ``directory`` (``None`` when absent or unreadable)."""
    path = Path(directory) / KEY_FILE
    try:
        with open(path) as handle:
            stored = json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None
    return stored if isinstance(stored, dict) else None


def claim_dir(directory: str | os.PathLike[str], key: Mapping[str, Any], *,
              stale: Iterable[str], what: str) -> bool:
    """Make ``directory`` hold artifacts of ``key``.

    Returns ``True`` when it already does (its files may be reused or resumed from).
    Otherwise removes the ``stale`` files and folders (names inside ``directory``) that an
    earlier key left, writes ``key`` to ``cache_key.json``, logs why at WARNING when something
    stale was there, and returns ``False``."""
    directory = Path(directory)
    stored = read_key(directory)
    forged = signature_problem(stored) if stored is not None else None
    if stored is not None and stored.get("digest") == key["digest"] and forged is None:
        return True
    if forged is not None:
        log.warning("%s in %s is not reused: its %s is not the one this pipeline signed "
                    "(%s)", what, directory, KEY_FILE, forged)
    present = [name for name in stale if (directory / name).exists()]
    if present:
        log.warning("%s in %s is not reused, recomputing from scratch: %s (removing %s)",
                    what, directory, why_differs(stored, key), ", ".join(present))
    for name in present:
        target = directory / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    write_key(directory, dict(key))
    return False


def write_key(directory: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Write ``cache_key.json`` in ``directory``, signed (:mod:`sharpness.runs.signing`: every
    field, the sealed files' hashes included, so none can be rewritten without the key)."""
    atomic_write_json(Path(directory) / KEY_FILE, sign(record))

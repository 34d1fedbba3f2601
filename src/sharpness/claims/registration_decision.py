"""The whole decision, registered: what else than a predicate and its parameters decides a verdict.

A verdict is decided by more than a predicate's code and parameters: the modules it runs in
(Holm's correction in ``ledger``, the sanity rule in ``rules`` and ``evidence.records``, the
independence check, the signed-record readers of ``runs``), every field of its claim (``kind``
puts it in or out of its paper's Holm family, ``runs`` applies the ``min_runs`` and smoke
standards, ``items`` say what it reads), the Holm families themselves, and the parameters each
input was built from. A registration holds all of it, and a build lists any difference:

* :func:`decision_files`: the SHA-256 of every source file (and data file other than
  ``claims.yaml`` and ``rules.yaml``, which are registered field by field) of the ``claims`` and
  ``evidence`` packages and of every ``sharpness`` module they import, directly or through
  each other (found by reading their ``import`` statements, never by running them);
  :func:`decision_changes` names each that differs ("decision code changed: ...");
* :func:`claim_fields` / :func:`field_changes`: kind, runs, trained, items, paper and
  whether it sets its items' level, per claim;
* :func:`families` / :func:`family_changes`: the claim ids of each paper's Holm family;
* :func:`item_params` / :func:`input_changes`: per item, the resolved config block that sets
  it, compared with the parameters the item's provenance sidecar recorded (a figure built under
  a ``--configfile`` overlay records other values: "built from other parameters than
  registered: alphas [0.1, 1.0] → [0.1]");
* :func:`registration_substitution`: a ``--registration FILE`` of another profile or seed
  offset than the build's is named.

The registered code of a changed module is not kept, so a code deviation cannot be evaluated
the registered way: the ledger lists it with the verdicts of today's code.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sharpness.claims.model import Claim, ItemData
from sharpness.claims.registration_checks import config_block, sha_of
from sharpness.runs.cache import flatten

#: the packages whose code decides a verdict; every sharpness module they import is added
DECISION_PACKAGES = ("claims", "evidence")
#: data files registered field by field elsewhere (claims: per claim; rules: the rules)
FIELDWISE = ("claims/claims.yaml", "claims/rules.yaml")
#: what a claim is besides its predicate and parameters
FIELDS = ("paper", "kind", "runs", "trained", "items", "sets_level", "test")


def _package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def _imported_files(path: Path, root: Path) -> set[Path]:
    """The ``sharpness`` source files ``path`` imports (``from sharpness.x import y`` names
    either the module ``x.y`` or a name in ``x``)."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sharpness"):
            names.add(str(node.module))
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("sharpness"))
    found = set()
    for name in names:
        parts = name.split(".")[1:]
        if not parts:
            continue
        rel = Path(*parts)
        for candidate in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
            if candidate.is_file():
                found.add(candidate)
    return found


def decision_files(package: Path | None = None) -> dict[str, str]:
    """``{"sharpness/<path>": SHA-256}`` of every file that can decide a verdict."""
    root = package or _package_root()
    todo = [p for d in DECISION_PACKAGES for p in (root / d).rglob("*")
            if p.suffix in (".py", ".yaml") and "__pycache__" not in p.parts
            and p.relative_to(root).as_posix() not in FIELDWISE]
    todo.append(root / "__init__.py")
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        if path.suffix == ".py":
            todo += _imported_files(path, root)
    return {f"sharpness/{p.relative_to(root).as_posix()}": hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(seen)}


def decision_changes(record: Mapping[str, Any], now: Mapping[str, str] | None = None
                     ) -> list[str]:
    """What differs between the registered decision files and today's (``now``: default,
    :func:`decision_files`); a registration without them says so."""
    then = record.get("decision_files")
    if not isinstance(then, Mapping):
        return ["decision code not registered (a registration older than decision "
                "fingerprints): register again"]
    now = decision_files() if now is None else now
    changed = sorted(f for f in set(then) | set(now) if then.get(f) != now.get(f))
    if not changed:
        return []
    shown = ", ".join(changed[:6]) + (f" (+{len(changed) - 6})" if len(changed) > 6 else "")
    return [f"decision code changed: {shown}"]


def claim_fields(claim: Claim) -> dict[str, Any]:
    """Every field of a claim that decides its row, besides its code and parameters."""
    return {"paper": claim.paper, "kind": claim.kind, "runs": bool(claim.runs),
            "trained": bool(claim.trained), "items": list(claim.items),
            "sets_level": bool(claim.sets_level),
            "test": claim.test.__name__ if claim.test is not None else None}


def field_changes(entry: Mapping[str, Any], claim: Claim) -> list[str]:
    """Each field of ``claim`` that differs from its registration ``entry``."""
    then = entry.get("fields")
    if not isinstance(then, Mapping):
        return ["claim fields not registered (a registration older than them)"]
    now = claim_fields(claim)
    return [f"{k} changed: {then.get(k)!r} → {now[k]!r}" for k in FIELDS
            if then.get(k) != now[k]]


def registered_claim(claim: Claim, entry: Mapping[str, Any]) -> Claim:
    """``claim`` with its registered fields and parameters (today's code: the registered code
    is not kept)."""
    from dataclasses import replace

    then = dict(entry.get("fields") or {})
    changes: dict[str, Any] = {"params": dict(entry.get("params") or claim.params)}
    for key in ("paper", "kind", "runs", "trained", "sets_level"):
        if key in then:
            changes[key] = then[key]
    if "items" in then:
        changes["items"] = tuple(then["items"])
    return replace(claim, **changes)


def families(claims: Sequence[Claim]) -> dict[str, list[str]]:
    """Each paper's Holm family: its rows of kind ``claim`` with a predicate."""
    out: dict[str, list[str]] = {}
    for claim in claims:
        if claim.kind == "claim" and claim.test is not None:
            out.setdefault(claim.paper, []).append(claim.id)
    return {paper: sorted(ids) for paper, ids in sorted(out.items())}


def family_changes(record: Mapping[str, Any], claims: Sequence[Claim]) -> list[str]:
    """How each paper's Holm family differs from the registered one."""
    then = record.get("families")
    if not isinstance(then, Mapping):
        return ["Holm families not registered (a registration older than them)"]
    now = families(claims)
    out = []
    for paper in sorted(set(then) | set(now)):
        before, after = set(then.get(paper) or ()), set(now.get(paper) or ())
        if before != after:
            moved = [f"+{i}" for i in sorted(after - before)] + \
                    [f"−{i}" for i in sorted(before - after)]
            out.append(f"Holm family of {paper} changed: {' '.join(moved)}")
    return out


def item_params(config: Mapping[str, Any], claims: Sequence[Claim]) -> dict[str, Any]:
    """``{"blocks": {sha: block}, "items": {item: sha}}``: the resolved config block that sets
    each item the claims read (:func:`~sharpness.claims.registration_checks.config_block`),
    each distinct block stored once."""
    blocks: dict[str, Any] = {}
    items: dict[str, str] = {}
    for item in sorted({i for c in claims for i in c.items}):
        block = config_block(config, item)
        key = sha_of(block)
        blocks.setdefault(key, block)
        items[item] = key
    return {"blocks": blocks, "items": items}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def input_changes(record: Mapping[str, Any], data: Mapping[str, ItemData | None]
                  ) -> dict[str, list[str]]:
    """item -> each parameter its provenance recorded that differs from the registered
    config block's value (keys the sidecar records and the block sets: what the producer
    was given). Items not built, or a registration without ``item_params``, give nothing."""
    registered = record.get("item_params")
    if not isinstance(registered, Mapping):
        return {}
    blocks, items = registered.get("blocks") or {}, registered.get("items") or {}
    out: dict[str, list[str]] = {}
    for item, d in data.items():
        block = blocks.get(items.get(item))
        if d is None or not isinstance(block, Mapping):
            continue
        then, now = flatten(block), flatten(d.params or {})
        diff = [f"{k} {then[k]!r} → {now[k]!r}" for k in sorted(set(then) & set(now))
                if not _same(then[k], now[k])]
        if diff:
            out[item] = diff
    return out


def registration_substitution(record: Mapping[str, Any], profile: str, seed_offset: int,
                              registration_file: Path) -> str | None:
    """Why the registration a build was given is not the one of its profile and seed offset
    (None: it is that profile's file, ``docs/registration/<profile>[-seedN].json``)."""
    from sharpness.claims.registration_files import registration_path

    expected = registration_path(profile, seed_offset=seed_offset)
    problems = []
    if record.get("profile") != profile:
        problems.append(f"it registers profile {record.get('profile')!r}, the build is "
                        f"{profile!r}")
    if Path(registration_file).resolve() != Path(expected).resolve():
        problems.append(f"--registration {registration_file} is not {expected}, the "
                        "registration of this profile and seed offset")
    return "; ".join(problems) or None

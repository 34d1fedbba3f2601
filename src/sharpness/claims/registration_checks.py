"""What a registration fixes beyond the predicates, and the checks a build makes against it.

* :func:`item_facts`: per item a claim reads, the SHA-256 of the profile config's block that
  sets it (``<paper>.<item>``, else the paper's whole block), so a changed setting of an item a
  claim reads is a deviation of that claim (:func:`config_changes`);
* :func:`code_files`: the SHA-256 of every source file of the package at registration; an
  item's provenance sidecar records the files its producer loaded, and a producer file that
  differs from the registered one is a deviation of every claim reading the item
  (:func:`producer_changes`; the claims package itself is covered by the predicate and helper
  hashes);
* :func:`git_check`: with git, run with an explicit ``--git-dir``/``--work-tree`` of the
  checkout that holds the registration (never inside a data folder), the commit that last
  wrote the registration file, whether the file equals that commit's blob and whether that
  commit is older than the first item the run built;
* :func:`re_registered`: the claims that are new, or whose parameters, stated predicate,
  kind, runs, items, rules or items' design changed since a ledger of the profile committed
  under ``docs/`` was run (its run's commit, read from git; :func:`committed_looks`): such a
  row was re-registered after its data were seen, and the ledger says so.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from sharpness.claims.model import Claim, ItemData
from sharpness.data.checkout import clean_env
from sharpness.runs.environment import SAFE_GIT_OPTIONS

#: where the claims live in the checkout (read at a past commit by :func:`re_registered`)
CLAIMS_YAML = "src/sharpness/claims/claims.yaml"
#: the committed ledgers whose runs :func:`re_registered` reads (their records name the commit)
SNAPSHOTS = "docs/claims_*.record.json"


def sha_of(obj: Any) -> str:
    """SHA-256 of an object's canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str,
                                     separators=(",", ":")).encode()).hexdigest()


def config_block(config: Mapping[str, Any], item: str) -> Any:
    """The block of a resolved profile config that sets ``item`` (``paper/id``): the
    ``paper.id`` block when there is one, else the paper's, else the whole config."""
    paper, _, name = item.partition("/")
    block = config.get(paper)
    if isinstance(block, Mapping):
        return block.get(name, block)
    return config


def item_facts(config: Mapping[str, Any], claims: Sequence[Claim]) -> dict[str, str]:
    """``{item: SHA-256 of its config block}`` for every item the claims read."""
    items = sorted({i for c in claims for i in c.items})
    return {item: sha_of(config_block(config, item)) for item in items}


def code_files(package: Path | None = None) -> dict[str, str]:
    """``{"sharpness/<path>.py": SHA-256}`` of every source file of the package."""
    root = package or Path(__file__).resolve().parents[1]
    return {f"sharpness/{p.relative_to(root).as_posix()}":
            hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def config_changes(record: Mapping[str, Any], config: Mapping[str, Any] | None,
                   claims: Sequence[Claim]) -> dict[str, list[str]]:
    """claim id -> the items it reads whose config block differs from the registered one
    (``config``: the resolved profile config now; None: not compared)."""
    registered = record.get("items")
    if config is None or not isinstance(registered, Mapping):
        return {}
    now = item_facts(config, claims)
    out: dict[str, list[str]] = {}
    for claim in claims:
        changed = [i for i in claim.items if registered.get(i) != now.get(i)]
        if changed:
            out[claim.id] = [f"config of {i} changed" for i in changed]
    return out


def producer_changes(record: Mapping[str, Any], data: Mapping[str, ItemData | None],
                     claims: Sequence[Claim]) -> dict[str, list[str]]:
    """claim id -> the items it reads whose producer loaded a source file other than the
    registered one (the claims package left out: its code is hashed per predicate)."""
    registered = record.get("code_files")
    if not isinstance(registered, Mapping):
        return {}
    changed_items: dict[str, list[str]] = {}
    for item, d in data.items():
        files = getattr(d, "code_files", None) or {}
        diff = sorted(f for f, h in files.items() if not f.startswith("sharpness/claims/")
                      and registered.get(f) != h)
        if diff:
            changed_items[item] = diff
    out: dict[str, list[str]] = {}
    for claim in claims:
        what = [f"producer code of {i} changed: {', '.join(changed_items[i][:3])}"
                + (f" (+{len(changed_items[i]) - 3})" if len(changed_items[i]) > 3 else "")
                for i in claim.items if i in changed_items]
        if what:
            out[claim.id] = what
    return out


def checkout_of(path: Path) -> tuple[Path, Path] | None:
    """``(git dir, work tree)`` of the checkout holding ``path`` (a ``.git`` folder, or a
    worktree's ``.git`` file naming it), or None outside a checkout."""
    here = Path(path).resolve()
    for folder in (here, *here.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot, folder
        if dot.is_file():
            line = dot.read_text().strip()
            if line.startswith("gitdir:"):
                return Path(line.split(":", 1)[1].strip()), folder
    return None


def git_output(checkout: tuple[Path, Path], *args: str) -> str | None:
    git_dir, work_tree = checkout
    try:
        done = subprocess.run(["git", f"--git-dir={git_dir}", f"--work-tree={work_tree}",
                               *SAFE_GIT_OPTIONS, *args], cwd=work_tree, env=clean_env(),
                              capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def first_started(data: Mapping[str, ItemData | None]) -> str | None:
    """The earliest start over the items: each item's is the earliest job behind it (its
    sidecar's ``first_started``: the training runs its figure read, through the chain of
    inputs), so this is the run's first job, or None."""
    times = [d.started for d in data.values() if d is not None and getattr(d, "started", None)]
    return min(times, key=_when) if times else None


def _when(text: str) -> datetime:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def git_check(reg_file: Path, data: Mapping[str, ItemData | None]) -> dict[str, Any]:
    """Whether the registration file was committed before the run and is the committed file:
    ``{commit, committed, first_job, blob_equal, before_run, problem}`` (``problem``: None, or
    why the registration is not the one committed before the run)."""
    out: dict[str, Any] = {"commit": None, "committed": None, "first_job": first_started(data),
                           "blob_equal": None, "before_run": None, "problem": None}
    checkout = checkout_of(reg_file)
    if checkout is None:
        out["problem"] = f"{reg_file} is not in a git checkout: its commit cannot be checked"
        return out
    rel = Path(reg_file).resolve().relative_to(checkout[1]).as_posix()
    last = git_output(checkout, "log", "-1", "--format=%H%x09%cI", "--", rel)
    if not last:
        out["problem"] = f"{rel} is not committed"
        return out
    out["commit"], out["committed"] = last.split("\t")
    blob = git_output(checkout, "rev-parse", f"{out['commit']}:{rel}")
    here = git_output(checkout, "hash-object", str(Path(reg_file).resolve()))
    out["blob_equal"] = bool(blob) and blob == here
    if not out["blob_equal"]:
        out["problem"] = f"{rel} differs from the file committed in {out['commit'][:7]}"
    elif out["first_job"]:
        out["before_run"] = _when(out["committed"]) < _when(out["first_job"])
        if not out["before_run"]:
            out["problem"] = (f"{rel} was committed ({out['committed']}) after the run's first "
                              f"item was built ({out['first_job']})")
    return out


def _claims_at(checkout: tuple[Path, Path], commit: str) -> dict[str, dict[str, Any]]:
    text = git_output(checkout, "show", f"{commit}:{CLAIMS_YAML}")
    try:
        entries = yaml.safe_load(text or "") or []
    except yaml.YAMLError:
        return {}
    return {str(e.get("id")): e for e in entries if isinstance(e, Mapping)}


def committed_looks(profile: str, anchor: Path) -> list[dict[str, Any]]:
    """Every look of ``profile`` whose ledger was ever committed under ``docs/`` (read from
    git at every commit that wrote a snapshot record): ``{ledger, run, seed_offset,
    registration}``, one per run commit, newest first. Empty outside a checkout."""
    checkout = checkout_of(anchor)
    if checkout is None:
        return []
    commits = (git_output(checkout, "log", "--format=%H", "--", SNAPSHOTS) or "").split()
    looks: dict[str, dict[str, Any]] = {}
    for commit in commits:
        names = (git_output(checkout, "ls-tree", "--name-only", commit, "docs/") or "").split()
        for name in names:
            if not (name.startswith("docs/claims_") and name.endswith(".record.json")):
                continue
            try:
                rec = json.loads(git_output(checkout, "show", f"{commit}:{name}") or "{}")
            except json.JSONDecodeError:
                continue
            if rec.get("profile") == profile and rec.get("git_commit"):
                looks.setdefault(str(rec["git_commit"]), {
                    "ledger": name.removesuffix(".record.json") + ".csv",
                    "run": str(rec["git_commit"]),
                    "seed_offset": int(rec.get("seed_offset") or 0),
                    "registration": rec.get("registration")})
    return list(looks.values())


def _yaml_at(checkout: tuple[Path, Path], commit: str, path: str) -> Any:
    try:
        return yaml.safe_load(git_output(checkout, "show", f"{commit}:{path}") or "")
    except yaml.YAMLError:
        return None


#: a claim's fields as claims.yaml states them, with their defaults
CLAIM_FIELDS = {"kind": "claim", "runs": False, "trained": False}


def _changed_since(claim: Claim, old: Mapping[str, Any] | None) -> list[str]:
    """How ``claim`` differs from its claims.yaml entry at a look's commit."""
    if old is None:
        return ["new row"]
    out = []
    # an entry of the time before parameters were registered is compared on its predicate
    if "params" in old and dict(old["params"] or {}) != dict(claim.params):
        out.append("parameters")
    if " ".join(str(old.get("predicate")).split()) != " ".join(claim.predicate.split()):
        out.append("predicate")
    stated = {**CLAIM_FIELDS, **old}
    stated["runs"] = bool(old.get("runs", old.get("trained", False)))  # trained implies runs
    out += [key for key in CLAIM_FIELDS if stated[key] != getattr(claim, key)]
    if "items" in old and tuple(old["items"] or ()) != tuple(claim.items):
        out.append("items")
    return out


def re_registered(claims: Sequence[Claim], profile: str, anchor: Path) -> dict[str, str]:
    """claim id -> the committed ledger of ``profile`` whose run (at its commit) decided the
    claim otherwise than today's registration would: a row new since, its parameters, stated
    predicate, kind, runs or items changed, the profile's rules changed (rows about runs), or
    the design of an item it reads (its config block in ``workflow/config/<profile>.yaml``,
    seeds and counts included) changed. ``anchor``: a path in the checkout. Empty outside a
    checkout."""
    checkout = checkout_of(anchor)
    if checkout is None:
        return {}
    from sharpness.claims.rules import FIELDS, rules_for

    rules_now = {k: v for k, v in vars(rules_for(profile)).items() if k in FIELDS}
    config_path = f"workflow/config/{profile}.yaml"
    config_now = _yaml_at(checkout, "HEAD", config_path)
    out: dict[str, str] = {}
    for look in committed_looks(profile, anchor):
        run = look["run"]
        then = _claims_at(checkout, run)
        if not then:
            continue
        table = _yaml_at(checkout, run, "src/sharpness/claims/rules.yaml")
        rules_then = ({**(table.get("default") or {}), **(table.get(profile) or {})}
                      if isinstance(table, Mapping) else None)
        rules_moved = sorted(k for k in rules_now if rules_then is not None
                             and k in rules_then and rules_then[k] != rules_now[k])
        config_then = _yaml_at(checkout, run, config_path)
        for claim in claims:
            if claim.id in out:
                continue
            why = _changed_since(claim, then.get(claim.id))
            if rules_moved and (claim.runs or claim.trained):
                why.append("rules (" + ", ".join(
                    f"{k} {rules_then[k]!r} → {rules_now[k]!r}" for k in rules_moved) + ")")
            if isinstance(config_then, Mapping) and isinstance(config_now, Mapping):
                why += [f"design of {i}" for i in claim.items
                        if sha_of(config_block(config_then, i)) != sha_of(config_block(config_now, i))]
            if why:
                out[claim.id] = f"{look['ledger']} (run at {run[:7]}): {', '.join(why)}"
    return out

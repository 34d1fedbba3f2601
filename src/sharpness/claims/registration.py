"""Registration before data: what every verdict of a profile is decided by, fixed before the run.

``sharpness claims register --profile P`` writes ``docs/registration/P.json`` (``P-seedN.json``
for a run with ``--config seed_offset=N``; :func:`registration`): for every claim of
``claims.yaml`` a hash of its predicate's code and its registered parameters (the parameters
themselves too, so that the verdict under them can be computed later), the profile's seed rules
(``rules.yaml``), the seeds (moved by the offset, as the run will use them) and sizes of the
resolved profile config, the commit and the date. Committed before the run it registers, it is
the record the ledger is compared with: :func:`deviations` lists each claim whose predicate code
or parameters changed since, :func:`deviation_rows` evaluates such a claim both ways, and
:func:`~sharpness.claims.registration_report.seed_offset_mismatch` names a run whose seeds are
not the registered ones.

The code hash is of the predicate function's own source, parsed and dumped without comments,
docstrings or layout (:func:`code_hash`), with the values a factory bound into it (e.g. the
data set of a Grad-CAM claim); :func:`helpers_hash` covers the functions of the claims and
evidence packages it calls, directly or through each other (readers, intervals, count rules), so
a change there is a deviation too (a registration written before that hash existed lists every claim as "helpers
not registered"). It also holds each item's config block and the package's source files
(:mod:`sharpness.claims.registration_checks`), so a changed setting or producer is a deviation,
and the rules: a build under other rules (``--min-seeds``) lists them as a deviation, with the
verdicts the registered rules give. The rest of the decision (the modules that can decide, every
field of a claim, the Holm families, the parameters each input's provenance records) is
registered and compared by :mod:`sharpness.claims.registration_decision`.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
import json
import textwrap
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from sharpness.claims.ledger import adjust_multiplicity, evaluate_claim
from sharpness.claims.looks import look_entry
from sharpness.claims.model import Claim, ItemData, Predicate
from sharpness.claims.registration_checks import (
    code_files,
    config_changes,
    item_facts,
    producer_changes,
    re_registered,
)
from sharpness.claims.registration_decision import (
    claim_fields,
    decision_changes,
    decision_files,
    families,
    family_changes,
    field_changes,
    input_changes,
    item_params,
    registered_claim,
)
from sharpness.claims.rules import SeedRules, rules_for
from sharpness.errors import SharpnessError
from sharpness.mappings import offset_seeds
from sharpness.runs.environment import code_version, now_iso

#: keys of a profile config that hold seeds, and those that size its runs (recorded by path)
SEED_KEYS = ("seed", "seeds", "lt_seed", "seed_offset")
SIZE_KEYS = ("n", "train_size", "epochs", "steps", "max_steps", "rounds", "width", "hidden",
             "batch_size", "per_class", "imbalance_factors", "lr_factors", "alphas")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


@lru_cache(maxsize=4096)
def code_hash(test: Predicate) -> str:
    """SHA-256 of the predicate's code, normalised: its source parsed and dumped (comments,
    docstrings and layout do not count), and the values a factory closed over."""
    source = textwrap.dedent(inspect.getsource(test))
    dumped = ast.dump(_strip_docstrings(ast.parse(source)), include_attributes=False)
    cells = [repr(c.cell_contents) for c in (test.__closure__ or ())
             if not callable(c.cell_contents)]
    return hashlib.sha256((dumped + "\n" + "\n".join(cells)).encode()).hexdigest()


#: helpers are hashed when they live in these packages: the claims code and what it decides with
#: (the statistics, train records and reported numbers it shares with the figures)
HELPER_PACKAGES = ("sharpness.claims", "sharpness.evidence")


@lru_cache(maxsize=4096)
def _called_functions(fn: Callable[..., Any]) -> list[Callable[..., Any]]:
    """The plain functions of :data:`HELPER_PACKAGES` that ``fn`` names (globals it reads,
    callables a factory bound into it)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return []
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    found = [fn.__globals__.get(name) for name in sorted(names)]
    found += [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())
              if callable(c.cell_contents)]
    return [f for f in found if inspect.isfunction(f)
            and str(getattr(f, "__module__", "")).startswith(HELPER_PACKAGES)]


def helpers(test: Predicate) -> dict[str, Callable[..., Any]]:
    """Every helper the predicate calls, directly or through another helper, in the claims
    and evidence packages (:data:`HELPER_PACKAGES`), by module and name (what
    :func:`helpers_hash` hashes; a test finds the rows a statistic decides by it)."""
    seen: dict[str, Callable[..., Any]] = {}
    todo = list(_called_functions(test))
    while todo:
        fn = todo.pop()
        key = f"{fn.__module__}.{fn.__qualname__}"
        if key in seen or fn is test:
            continue
        seen[key] = fn
        todo += _called_functions(fn)
    return seen


def helpers_hash(test: Predicate) -> str:
    """SHA-256 over every helper the predicate calls (:func:`helpers`), each normalised as
    :func:`code_hash` does:
    a change in a shared helper (a reader, an interval, a count rule) is a deviation too."""
    hashed = [(fn.__qualname__, code_hash(fn)) for fn in helpers(test).values()]
    return hashlib.sha256(_canonical(sorted(hashed)).encode()).hexdigest()


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))


def params_hash(params: Mapping[str, Any]) -> str:
    """SHA-256 of a claim's registered parameters (canonical JSON)."""
    return hashlib.sha256(_canonical(dict(params)).encode()).hexdigest()


def claim_entry(claim: Claim) -> dict[str, Any]:
    """What the registration holds of one claim."""
    return {"test": claim.test.__name__ if claim.test is not None else None,
            "code": code_hash(claim.test) if claim.test is not None else None,
            "helpers": helpers_hash(claim.test) if claim.test is not None else None,
            "params": dict(claim.params), "params_hash": params_hash(claim.params),
            "kind": claim.kind, "runs": claim.runs, "fields": claim_fields(claim)}


def config_facts(config: Mapping[str, Any]) -> dict[str, Any]:
    """The seeds and sizes of a resolved profile config, by dotted path, and its hash."""
    seeds: dict[str, Any] = {}
    sizes: dict[str, Any] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                where = f"{path}.{key}" if path else str(key)
                if key in SEED_KEYS or str(key).endswith("_seed"):
                    seeds[where] = value
                elif key in SIZE_KEYS and not isinstance(value, Mapping):
                    sizes[where] = value
                walk(value, where)
        elif isinstance(node, list):
            for k, value in enumerate(node):
                walk(value, f"{path}[{k}]")

    walk(config, "")
    return {"sha256": hashlib.sha256(_canonical(config).encode()).hexdigest(),
            "seed_offset": int(config.get("seed_offset", 0) or 0), "seeds": seeds,
            "sizes": sizes}


def load_profile_config(path: str | Path) -> dict[str, Any]:
    """A whole profile's config file (``workflow/config/<profile>.yaml``) as the workflow
    resolves it: the file itself (a whole profile replaces quick.yaml)."""
    path = Path(path)
    if not path.is_file():
        raise SharpnessError(f"{path}: no such profile config")
    return yaml.safe_load(path.read_text()) or {}


def _body(profile: str, claims: Sequence[Claim], config: Mapping[str, Any],
          config_path: str) -> dict[str, Any]:
    """What a registration holds of ``config`` (seeds moved by its ``seed_offset``)."""
    resolved = copy.deepcopy(dict(config))
    offset_seeds(resolved)  # the seeds the run will use, as the Snakefile moves them
    return {"profile": profile, "rules": vars(rules_for(profile)),
            "config": {"path": config_path, **config_facts(resolved)},
            "claims": {c.id: claim_entry(c) for c in claims},
            "items": item_facts(resolved, claims), "code_files": code_files(),
            "decision_files": decision_files(), "families": families(claims),
            "item_params": item_params(resolved, claims)}


def registration(profile: str, claims: Sequence[Claim], config: Mapping[str, Any],
                 config_path: str = "", checkout: Path | None = None,
                 confirmatory: int = 0) -> dict[str, Any]:
    """The registration of ``profile``: rules, config facts and every claim's code and
    parameters, each item's config block and the package's source files; with ``checkout``
    (a path in the git checkout) the rows re-registered after a committed ledger's data and
    the looks already committed; its look (:mod:`sharpness.claims.looks`: the decision id and
    the seed offset it derives; ``confirmatory``: K ≥ 1 registers look K at that offset); ``id`` hashes
    that content (the same content registered twice has one id),
    ``git_commit``/``dirty``/``registered`` say when and from what it was written."""
    unmoved = {k: v for k, v in config.items() if k != "seed_offset"}  # the seeds left out
    look = look_entry(_body(profile, claims, unmoved, config_path), profile, checkout,
                      confirmatory)
    if confirmatory:
        config = {**config, "seed_offset": look["confirmatory_offset"]}
    body = _body(profile, claims, config, config_path)
    body["re_registered_after_data"] = (re_registered(claims, profile, checkout)
                                        if checkout is not None else {})
    body["look"] = look
    code = code_version()
    # the registrations themselves are not the code they register: a second profile written
    # right after the first is registered from a clean tree too
    changed = [f for f in code.get("dirty_files") or [] if not f.startswith("docs/registration/")]
    dirty = None if code.get("dirty") is None else bool(changed)
    return {"id": hashlib.sha256(_canonical(body).encode()).hexdigest()[:16], **body,
            "git_commit": code.get("git_commit"), "dirty": dirty,
            "registered": now_iso()}


def read_registration(path: str | Path) -> dict[str, Any]:
    """A registration file, refused when its content no longer matches its id."""
    path = Path(path)
    record = json.loads(path.read_text())
    # registrations written before items, producer code and re-registrations were recorded
    # hold only the first four keys: their id is over those
    body = {k: record.get(k) for k in BODY if k in record or k in BODY[:4]}
    if hashlib.sha256(_canonical(body).encode()).hexdigest()[:16] != record.get("id"):
        raise SharpnessError(f"{path}: its content does not match its id {record.get('id')} "
                             "(edited by hand?); register again with `sharpness claims "
                             "register`")
    return record


#: the keys of a registration its id is computed over
BODY = ("profile", "rules", "config", "claims", "items", "code_files",
        "re_registered_after_data", "decision_files", "families", "item_params", "look")


def rules_changes(record: Mapping[str, Any], rules: SeedRules | None) -> list[str]:
    """Each seed rule the build decides by that differs from the registered one (a
    ``--min-seeds`` on the command line, an edited ``rules.yaml``)."""
    then = record.get("rules") or {}
    if rules is None or not then:
        return []
    now = {k: v for k, v in vars(rules).items() if k != "profile"}
    return [f"{k} {then.get(k)!r} → {v!r}" for k, v in sorted(now.items()) if then.get(k) != v]


def deviations(record: Mapping[str, Any], claims: Sequence[Claim],
               rules: SeedRules | None = None, config: Mapping[str, Any] | None = None,
               data: Mapping[str, ItemData | None] | None = None) -> list[dict[str, Any]]:
    """Each claim whose predicate code, helpers, parameters, items' config (``config``: the
    resolved profile config now) or items' producer code (``data``: their sidecars) differ
    from the registration, or that the registration does not know: ``{id, what: [...],
    registered_params}``; first, the rules the build decides by (``rules``) when they differ
    from the registered ones (id ``rules``)."""
    out = []
    changed_rules = rules_changes(record, rules)
    if changed_rules:
        out.append({"id": "rules", "what": ["rules changed: " + ", ".join(changed_rules)],
                    "registered_params": None})
    for name, what in (("decision code", decision_changes(record)),
                       ("holm families", family_changes(record, claims))):
        if what:
            out.append({"id": name, "what": what, "registered_params": None})
    inputs = input_changes(record, data or {})
    configs = config_changes(record, config, claims)
    producers = producer_changes(record, data or {}, claims)
    known = record.get("claims") or {}
    for claim in claims:
        entry = known.get(claim.id)
        if entry is None:
            out.append({"id": claim.id, "what": ["not registered"], "registered_params": None})
            continue
        now = claim_entry(claim)
        what = []
        if now["code"] != entry.get("code"):
            what.append("predicate code changed")
        if "helpers" not in entry:
            what.append("helpers not registered (a registration older than helper hashing)")
        elif now["helpers"] != entry["helpers"]:
            what.append("helper code changed")
        what += field_changes(entry, claim)
        what += configs.get(claim.id, []) + producers.get(claim.id, [])
        what += [f"input {i} built from other parameters than registered: "
                 + ", ".join(inputs[i][:4]) for i in claim.items if i in inputs]
        if now["params_hash"] != entry.get("params_hash"):
            changed = sorted(k for k in set(now["params"]) | set(entry.get("params") or {})
                             if now["params"].get(k) != (entry.get("params") or {}).get(k))
            what.append("parameters changed: " + ", ".join(
                f"{k} {(entry.get('params') or {}).get(k)!r} → {now['params'].get(k)!r}"
                for k in changed))
        if what:
            out.append({"id": claim.id, "what": what,
                        "registered_params": entry.get("params"), "entry": entry})
    return out


def deviation_rows(record: Mapping[str, Any], claims: Sequence[Claim],
                   raw: Sequence[Mapping[str, Any]], data: Mapping[str, ItemData | None],
                   profile: str, rules: SeedRules, config: Mapping[str, Any] | None = None
                   ) -> list[dict[str, Any]]:
    """Every deviation with its verdict both ways, each after the profile's multiplicity
    correction: ``verdict_now`` (the ledger's) and ``verdict_registered`` (the claim under its
    registered parameters, the other rows as they are; with the current code, since a changed
    predicate's registered code is not kept: its row says the code changed). ``raw``: the
    ledger's rows before the correction, in claim order; ``data``: item -> its numbers."""

    alpha = 1 - rules.level
    final = [dict(r) for r in raw]
    adjust_multiplicity(final, alpha)
    index = {str(r["id"]): k for k, r in enumerate(raw)}
    by_id = {c.id: c for c in claims}
    out = []
    for dev in deviations(record, claims, rules, config, data):
        k = index.get(dev["id"])
        then = None
        if dev["registered_params"] is not None and k is not None:
            alt = [dict(r) for r in raw]
            try:
                alt[k] = evaluate_claim(registered_claim(by_id[dev["id"]], dev["entry"]),
                                        data, profile, rules)
            except SharpnessError as err:  # today's predicate needs a parameter added since
                alt[k] = {**alt[k], "verdict": f"(not computable: {err})", "p_raw": None}
            adjust_multiplicity(alt, alpha)
            then = alt[k]
        if dev["id"] == "rules":
            then = {"verdict": _under_registered_rules(record, claims, data, profile, final)}
        out.append({**dev, "verdict_now": final[k]["verdict"] if k is not None else None,
                    "p_adj_now": final[k].get("p_adj") if k is not None else None,
                    "verdict_registered": then["verdict"] if then else None,
                    "p_adj_registered": then.get("p_adj") if then else None})
    return out


def _under_registered_rules(record: Mapping[str, Any], claims: Sequence[Claim],
                            data: Mapping[str, ItemData | None], profile: str,
                            final: Sequence[Mapping[str, Any]]) -> str:
    """The rows whose verdict the registered rules give otherwise (after Holm's correction)."""
    then_rules = SeedRules(**{k: v for k, v in (record.get("rules") or {}).items()
                              if k in SeedRules.__dataclass_fields__})
    alt = [evaluate_claim(c, data, profile, then_rules) for c in claims]
    adjust_multiplicity(alt, 1 - then_rules.level)
    moved = [f"{a['id']} {a['verdict']}" for a, b in zip(alt, final, strict=True)
             if a["verdict"] != b["verdict"]]
    return ("under the registered rules: " + ", ".join(moved)) if moved else \
        "the same verdicts under the registered rules"

"""The ledger's rows, read from ``claims.yaml``: each claim in words beside the name of the
predicate (code in ``sharpness.claims.<paper>``) that decides it.

The words live in data so that a claim is reworded, or a new one listed, without touching the
code that tests it; the loader refuses a row whose predicate does not exist, a predicate no row
uses, a duplicate id and an unknown field, naming each.
"""

from __future__ import annotations

from collections import Counter
from importlib import resources
from typing import Any

import yaml

from sharpness.claims import (
    eos,
    lesam,
    lesam_dynamics,
    lesam_paper_scale,
    minorfirst,
    minorfirst_networks,
)
from sharpness.claims.model import KINDS, Claim, Predicate, takes
from sharpness.claims.rules import FIELDS as RULE_FIELDS
from sharpness.errors import SharpnessError

PAPERS = ("minorfirst", "lesam", "eos")  # ledger order
FIELDS = {"id", "paper", "source", "claim", "predicate", "items", "test", "paper_only",
          "sets_level", "kind", "trained", "runs", "params"}


def predicates() -> dict[str, dict[str, Predicate]]:
    """``{paper: {name: predicate}}`` from each paper module's ``PREDICATES``."""

    return {"minorfirst": {**minorfirst.PREDICATES, **minorfirst_networks.PREDICATES},
            "lesam": {**lesam.PREDICATES, **lesam_dynamics.PREDICATES,
                      **lesam_paper_scale.PREDICATES},
            "eos": eos.PREDICATES}


def load_claims(rows: list[dict[str, Any]] | None = None) -> list[Claim]:
    """Every claim of ``claims.yaml`` (or of ``rows``), in ledger order, each bound to its
    predicate. For the packaged file, a predicate no row names is an error too."""
    packaged = rows is None
    if rows is None:
        text = resources.files("sharpness.claims").joinpath("claims.yaml").read_text("utf-8")
        rows = yaml.safe_load(text)
    tests = predicates()
    claims, used = [], set()
    for row in rows:
        where = f"claims.yaml, claim {row.get('id')!r}"
        unknown = set(row) - FIELDS
        if unknown:
            raise SharpnessError(f"{where}: unknown field(s) {sorted(unknown)}")
        if row.get("paper") not in tests:
            raise SharpnessError(f"{where}: paper must be one of {list(PAPERS)}")
        test = None
        if "test" in row:
            test = tests[row["paper"]].get(row["test"])
            if test is None:
                raise SharpnessError(f"{where}: no predicate {row['test']!r} in "
                                     f"sharpness.claims.{row['paper']}.PREDICATES")
            used.add((row["paper"], row["test"]))
            params = {k: v for k, v in (row.get("params") or {}).items() if k != "rules"}
            overrides = set((row.get("params") or {}).get("rules") or {})
            if overrides - RULE_FIELDS:
                raise SharpnessError(f"{where}: params.rules: unknown key(s) "
                                     f"{sorted(overrides - RULE_FIELDS)}")
            if takes(test, "params") != bool(params):
                raise SharpnessError(
                    f"{where}: predicate {row['test']!r} "
                    + ("reads registered params but the row has none" if not params else
                       "takes no params, yet the row registers some"))
        kind = row.get("kind", "claim")
        if kind not in KINDS:
            raise SharpnessError(f"{where}: kind must be one of {list(KINDS)}, not {kind!r}")
        claims.append(Claim(row["id"], row["paper"], row["source"], row["claim"],
                            row["predicate"], tuple(row["items"]), test,
                            row.get("paper_only"), bool(row.get("sets_level", True)), kind,
                            bool(row.get("trained", False)),
                            bool(row.get("runs", row.get("trained", False))),
                            dict(row.get("params") or {})))
    dup = [k for k, n in Counter(c.id for c in claims).items() if n > 1]
    if dup:
        raise SharpnessError(f"claims.yaml: duplicate claim ids {dup}")
    unused = sorted(f"{p}.{n}" for p in tests for n in tests[p] if (p, n) not in used)
    if unused and packaged:
        raise SharpnessError(f"claims.yaml: predicates no claim uses: {unused}")
    order = {p: i for i, p in enumerate(PAPERS)}
    return sorted(claims, key=lambda c: order[c.paper])  # stable: file order within a paper

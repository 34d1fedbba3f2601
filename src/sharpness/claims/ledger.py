"""Evaluate every claim on the figures' numbers and write the ledger (Markdown, CSV, JSON).

:func:`evaluate` runs each claim's predicate on the CSVs under ``figures/`` and returns one
row per claim; :func:`write_ledger` writes ``CLAIMS.md``, ``claims.csv`` and ``claims.json``;
:func:`evidence_level` gives the evidence level of one item from the claims that read it
(used by :func:`sharpness.plots.save_figure` / ``save_table`` to stamp title and caption).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sharpness import escape
from sharpness.claims.catalog import load_claims
from sharpness.claims.model import (
    EVIDENCE,
    LEVELS,
    SMOKE,
    WEAK,
    Claim,
    ItemData,
    Result,
    load_item,
)
from sharpness.claims.rules import SeedRules, rules_for
from sharpness.errors import SharpnessError
from sharpness.evidence.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_RUN,
    SUPPORTED,
    VERDICTS,
    holm,
)
from sharpness.io import atomic_write_text

PAPERS = ("minorfirst", "lesam", "eos")
COLUMNS = ["id", "paper", "source", "claim", "predicate", "value", "verdict", "level",
           "estimate", "low", "high", "note", "items", "provenance", "kind", "n", "p_raw",
           "p_adj", "to_settle"]


def all_claims() -> list[Claim]:
    """Every claim of the three papers and every catalog check, in ledger order
    (``claims.yaml``, see :mod:`sharpness.claims.catalog`)."""

    return load_claims()


def _row(claim: Claim, **fields: Any) -> dict[str, Any]:
    row = {"id": claim.id, "paper": claim.paper, "source": claim.source, "claim": claim.claim,
           "predicate": claim.predicate, "value": "", "verdict": NOT_RUN, "level": "",
           "estimate": None, "low": None, "high": None, "note": "",
           "items": ";".join(claim.items), "provenance": "", "kind": claim.kind, "n": None,
           "p_raw": None, "p_adj": None, "to_settle": ""}
    row.update(fields)
    return row


def evaluate_claim(claim: Claim, data: Mapping[str, ItemData | None], profile: str,
                   rules: SeedRules | None = None) -> dict[str, Any]:
    """One ledger row: the claim's predicate on ``data`` (item -> its numbers, or None); a
    trained-network claim is decided under ``rules`` (default: the profile's)."""
    if claim.paper_only and profile != "paper":
        return _row(claim, value="(no quick-scale setting)",
                    note=f"profile {profile}: {claim.paper_only}")
    missing = [item for item in claim.items if data.get(item) is None]
    if missing or claim.test is None:
        what = ", ".join(f"figures/{m}.csv" for m in missing) or "no predicate"
        return _row(claim, value="(not built)",
                    note=f"{what} not built in this run; `snakemake figures/<item>` builds it")
    items = {item: data[item] for item in claim.items}
    rules = rules or rules_for(profile)
    try:
        result = claim.call(items, rules)  # type: ignore[arg-type]
    except (KeyError, ValueError, IndexError, TypeError) as err:
        raise SharpnessError(f"claim {claim.id} ({', '.join(claim.items)}): its predicate "
                             f"failed on the CSV: {type(err).__name__}: {err}") from err
    prov = ";".join(f"{item}={d.provenance_id or 'missing'}" for item, d in items.items()
                    if d is not None)
    min_runs_standard(claim, result, rules)
    smoke_standard(claim, result, rules)
    if claim.params.get("replicates"):  # what the row counts as independent runs, and why
        result.note = "; ".join(x for x in (
            result.note, f"replicates (registered): {claim.params['replicates']}") if x)
    if claim.params.get("exempt"):  # a seeded single draw, exempt with its measured spread
        result.note = "; ".join(x for x in (
            result.note, f"single draw, exempt (registered): {claim.params['exempt']}") if x)
    return _row(claim, value=result.value, verdict=result.verdict, level=result.level,
                estimate=result.estimate, low=result.low, high=result.high, note=result.note,
                provenance=prov, n=result.n, p_raw=result.p_value)


def min_runs_standard(claim: Claim, result: Result, rules: SeedRules) -> None:
    """The one standard of every decided row about trained networks or optimizer runs
    (``claim.runs``): it decides only on at least ``rules.min_runs`` independent runs (seeds,
    initialisations or settings, as its predicate counts them in ``result.n``); with fewer
    the row is inconclusive and says so. Changes ``result`` in place."""
    if not claim.runs or result.verdict not in (SUPPORTED, CONTRADICTED):
        return
    if result.n is not None and result.n >= rules.min_runs:
        return
    have = "an unstated number of" if result.n is None else str(result.n)
    result.note = "; ".join(x for x in (
        f"was {result.verdict} on {have} independent run(s) < the {rules.min_runs} every "
        "decided row about trained networks needs: inconclusive", result.note) if x)
    result.verdict, result.level = INCONCLUSIVE, WEAK


def smoke_standard(claim: Claim, result: Result, rules: SeedRules) -> None:
    """A smoke profile (``rules.smoke``, the quick profile) is no evidence: a decided row about
    runs, and a paper's claim it would contradict, is ``inconclusive`` at level ``smoke`` and
    says what it was; every other row about runs is at level ``smoke`` too (an inconclusive
    row of a smoke run is no weak evidence either). Changes ``result`` in place."""
    if not rules.smoke:
        return
    if result.verdict not in (SUPPORTED, CONTRADICTED):
        if claim.runs and result.verdict != NOT_RUN:
            result.level = SMOKE
        return
    if not claim.runs and not (claim.kind == "claim" and result.verdict == CONTRADICTED):
        return
    result.note = "; ".join(x for x in (
        f"smoke profile ({rules.profile}): was {result.verdict}; a smoke run neither supports "
        "nor refutes the paper: inconclusive (smoke)", result.note) if x)
    result.verdict, result.level = INCONCLUSIVE, SMOKE


def adjust_multiplicity(rows: list[dict[str, Any]], alpha: float) -> None:
    """Holm's correction per paper over its claim rows that were tested (kind ``claim``): every
    row that carries a raw p-value (interval and exact count tests alike), inconclusive or not,
    and every inconclusive row tested on runs without one (as p = 1, so a family never shrinks
    by the rows that came out inconclusive): each row with a p-value gets ``p_adj``, and a decided row
    whose adjusted p-value is not below ``alpha`` becomes inconclusive (named in its note).
    Rows in place."""
    for paper in dict.fromkeys(str(r.get("paper")) for r in rows):
        family = [r for r in rows if r.get("kind") == "claim" and str(r.get("paper")) == paper
                  and (_finite(r.get("p_raw")) or _tested(r))]
        ps = [float(r["p_raw"]) if _finite(r.get("p_raw")) else 1.0 for r in family]
        for row, adj in zip(family, holm(ps), strict=True):
            if not _finite(row.get("p_raw")):
                continue  # counted in the family (p = 1), no p-value of its own to adjust
            row["p_adj"] = adj
            if row["verdict"] in (SUPPORTED, CONTRADICTED) and not adj < alpha:
                row["note"] = "; ".join(x for x in (
                    f"was {row['verdict']} at p = {float(row['p_raw']):.3g}; Holm-adjusted over "
                    f"the {len(family)} tested claims of {paper} p = {adj:.3g} ≥ α = "
                    f"{alpha:.2g}: inconclusive", row["note"]) if x)
                row["verdict"], row["level"] = INCONCLUSIVE, WEAK


def _tested(row: Mapping[str, Any]) -> bool:
    """An inconclusive row whose predicate ran on runs (it states their number) but gave no
    p-value: it was tested all the same, so it stays in its paper's Holm family as p = 1."""
    n = row.get("n")
    return row.get("verdict") == INCONCLUSIVE and _finite(n) and float(n) >= 1


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def load_items(figures: str | Path, claims: Sequence[Claim]) -> dict[str, ItemData | None]:
    """Every item the claims read, from ``figures`` (None: not built)."""
    return {item: load_item(figures, item) for claim in claims for item in claim.items}


def evaluate(figures: str | Path, profile: str, claims: Sequence[Claim] | None = None,
             rules: SeedRules | None = None, adjust: bool = True) -> list[dict[str, Any]]:
    """Every claim's row, reading the items under ``figures`` (trained-network claims under
    ``rules``, default: the profile's :func:`~sharpness.claims.rules.rules_for`), after
    Holm's correction (:func:`adjust_multiplicity`; ``adjust=False``: the raw rows)."""
    rules = rules or rules_for(profile)
    claims = list(claims) if claims is not None else all_claims()
    data = load_items(figures, claims)
    rows = [evaluate_claim(claim, data, profile, rules) for claim in claims]
    if adjust:
        adjust_multiplicity(rows, 1 - rules.level)
    return rows


def evidence_level(item: str, data: ItemData, claims: Sequence[Claim] | None = None
                   ) -> tuple[str, str]:
    """``(level, reason)`` of one item from the claims that read only this item.

    The level is the strongest one given by its level-setting claims (``evidence`` if one of
    them is decided, ``weak`` if all are inconclusive, ``smoke`` where a predicate says the
    numbers cannot bear on the claim); an item no such claim reads is ``weak``. A figure does
    not know its profile: trained-network claims are read under the ``default`` rules."""
    claims = list(claims) if claims is not None else all_claims()
    rules = rules_for("default")
    mine = [c for c in claims if c.items == (item,) and c.sets_level and c.test is not None
            and not c.paper_only]
    if not mine:
        return WEAK, "no claim of the ledger is decided by this item alone"
    results = []
    for claim in mine:
        try:
            result = claim.call({item: data}, rules)
            min_runs_standard(claim, result, rules)  # the one standard stamps figures too
            results.append((claim, result))
        except Exception:  # noqa: BLE001 - a level is best effort; the ledger itself raises
            results.append((claim, None))
    scored = [(LEVELS.index(r.level), c, r) for c, r in results if r is not None]
    if not scored:
        return SMOKE, "its claims could not be evaluated on these numbers"
    best = min(scored, key=lambda t: t[0])
    _, claim, res = best
    return str(res.level), f"{claim.id}: {res.verdict}"


def tally_key(row: Mapping[str, Any]) -> str:
    """The line of the counts a row is tallied under: its paper, or ``<paper> (checks)`` for
    a check of the pipeline (not one of the paper's claims)."""
    return f"{row['paper']} (checks)" if row.get("kind") == "check" else str(row["paper"])


def counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """paper -> verdict -> number of claims (the paper's claims and this project's
    extensions); checks of the pipeline are tallied apart, under ``<paper> (checks)``."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        per = out.setdefault(tally_key(row), {v: 0 for v in VERDICTS})
        per[str(row["verdict"])] += 1
    return out


def _p_text(row: Mapping[str, Any]) -> str:
    """``0.012 → 0.048`` (raw p-value, Holm-adjusted), ``0.3`` without an adjustment, or ``""``."""
    if not _finite(row.get("p_raw")):
        return ""
    raw = f"{float(row['p_raw']):.2g}"
    return f"{raw} → {float(row['p_adj']):.2g}" if _finite(row.get("p_adj")) else raw


def markdown(rows: Sequence[Mapping[str, Any]], profile: str, header: str = "",
             rules: SeedRules | None = None, footer: str = "") -> str:
    """The ledger as Markdown: counts, then one table per paper."""
    lines = ["# Claims ledger", ""]
    if header:
        lines += [header, ""]
    lines += [f"Profile: `{profile}`. Every row is computed from the CSVs under `figures/` "
              "(never from a caption) by the predicate in `sharpness.claims`. Verdicts: "
              "`supported` / `contradicted` need the interval (or, for deterministic "
              "simulations, the tolerance) to decide; `inconclusive at this scale` otherwise; "
              "`not run in this profile` names the profile and the cost that would settle it. "
              "Evidence levels (`evidence` / `weak` / `smoke`) are defined in "
              "`figures/README.md`. Claims about trained networks are decided under this "
              f"profile's seed rules: {(rules or rules_for(profile)).text()}. Rows of kind "
              "`check` test the pipeline's own construction and are counted apart from the "
              "paper's claims; `extension` rows are this project's, not the paper's.", "",
              "| paper | " + " | ".join(VERDICTS) + " |",
              "|---|" + "---:|" * len(VERDICTS)]
    tally = counts(rows)
    for paper, per in tally.items():
        lines.append(f"| {paper} | " + " | ".join(str(per[v]) for v in VERDICTS) + " |")
    for paper in dict.fromkeys(str(r["paper"]) for r in rows):
        lines += ["", f"## {paper}", "",
                  "| id | kind | claim | predicate | measured | verdict | level | n | p (raw → "
                  "Holm) | figures (provenance) | note | to settle |",
                  "|---|---|---|---|---|---|---|---:|---|---|---|---|"]
        for r in rows:
            if r["paper"] != paper:
                continue
            figs = r["provenance"] or r["items"]
            cells = [escape.markdown("" if x is None else x) for x in (
                r["id"], r.get("kind", "claim"), f"{r['claim']} ({r['source']})",
                r["predicate"], r["value"], r["verdict"], r["level"],
                "" if r.get("n") is None else r["n"], _p_text(r), figs.replace(";", "; "),
                r["note"], r.get("to_settle", ""))]
            cells[5] = f"**{cells[5]}**"  # the ledger's own emphasis, around escaped text
            lines.append("| " + " | ".join(cells) + " |")
    if footer:
        lines += ["", footer.rstrip("\n")]
    return "\n".join(lines) + "\n"


def to_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in COLUMNS})
    return buffer.getvalue()


def write_ledger(rows: Sequence[Mapping[str, Any]], out_md: str | Path, profile: str,
                 header: str = "", rules: SeedRules | None = None, footer: str = "",
                 extra: Mapping[str, Any] | None = None) -> list[Path]:
    """Write ``CLAIMS.md`` (``footer``: a closing section, e.g. the deviations from the
    registration) and, beside it, ``claims.csv`` and ``claims.json`` (``extra``: more
    top-level keys)."""
    out_md = Path(out_md)
    out_csv = out_md.with_name("claims.csv")
    out_json = out_md.with_name("claims.json")
    rules = rules or rules_for(profile)
    atomic_write_text(out_md, markdown(rows, profile, header, rules, footer))
    atomic_write_text(out_csv, to_csv(rows))
    atomic_write_text(out_json, json.dumps({"profile": profile, "rules": vars(rules),
                                            **dict(extra or {}), "counts": counts(rows),
                                            "claims": list(rows)}, indent=1, default=str)
                      + "\n")
    return [out_md, out_csv, out_json]


__all__ = ["EVIDENCE", "LEVELS", "PAPERS", "SMOKE", "WEAK", "adjust_multiplicity", "all_claims",
           "counts", "evaluate", "evaluate_claim", "evidence_level", "load_items", "markdown",
           "min_runs_standard", "smoke_standard", "tally_key", "to_csv", "write_ledger"]

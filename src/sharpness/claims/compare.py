"""A second look: which rows of two ledgers (e.g. two runs of a profile with different seeds)
moved, in verdict or evidence level.

:func:`compare_ledgers` reads two ``claims.csv`` row lists; a ledger written before the
``n``/``p_raw``/``p_adj``/``to_settle`` columns existed is read too (the missing cells are
empty). A move from ``supported`` to ``contradicted`` (or back) is a *reversal*: the two runs
disagree on the direction, which no amount of seeds explains away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sharpness.evidence.stats import CONTRADICTED, SUPPORTED

DECIDED = (SUPPORTED, CONTRADICTED)


def compare_ledgers(first: Sequence[Mapping[str, Any]], second: Sequence[Mapping[str, Any]]
                    ) -> list[dict[str, Any]]:
    """Every claim whose verdict or level differs between the two ledgers (or that only one
    has), in the first ledger's order, with both adjusted p-values (empty where a ledger has
    none) and ``reversal``: supported in one and contradicted in the other."""
    b = {str(r["id"]): r for r in second}
    seen = set()
    out = []
    for ra in first:
        cid = str(ra["id"])
        seen.add(cid)
        rb = b.get(cid)
        if rb is None:
            out.append(_moved(cid, ra, None))
            continue
        if ra.get("verdict") != rb.get("verdict") or (ra.get("level") or "") != \
                (rb.get("level") or ""):
            out.append(_moved(cid, ra, rb))
    out += [_moved(str(r["id"]), None, r) for r in second if str(r["id"]) not in seen]
    return out


def _moved(cid: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None
           ) -> dict[str, Any]:
    def get(row: Mapping[str, Any] | None, key: str) -> str:
        return "" if row is None or row.get(key) is None else str(row.get(key))

    va, vb = get(a, "verdict"), get(b, "verdict")
    return {"id": cid, "verdict_a": va or "(absent)", "verdict_b": vb or "(absent)",
            "level_a": get(a, "level"), "level_b": get(b, "level"),
            "p_adj_a": get(a, "p_adj"), "p_adj_b": get(b, "p_adj"),
            "n_a": get(a, "n"), "n_b": get(b, "n"),
            "estimate_a": _interval(a), "estimate_b": _interval(b),
            "reversal": {va, vb} == set(DECIDED)}


def _interval(row: Mapping[str, Any] | None) -> str:
    """``estimate [low, high]`` of a row (an effect and its interval, or a count rule's share
    and its exact interval), ``–`` where the row has none."""
    if row is None:
        return "–"
    try:
        est = float(row.get("estimate") or "nan")
    except ValueError:
        return "–"
    if est != est:
        return "–"
    try:
        low, high = float(row.get("low") or "nan"), float(row.get("high") or "nan")
    except ValueError:
        low = high = float("nan")
    return f"{est:+.3g}" + (f" [{low:+.3g}, {high:+.3g}]" if low == low and high == high else "")


def _p(text: str) -> str:
    try:
        return f"{float(text):.3g}"
    except ValueError:
        return "–"


def compare_text(moved: Sequence[Mapping[str, Any]], first: str, second: str,
                 heading: bool = True) -> str:
    """The moves as a Markdown table (A: ``first``, B: ``second``), reversals counted first;
    ``heading``: the title line (none inside a generated block)."""
    reversals = [m["id"] for m in moved if m["reversal"]]
    lines = ([f"# Ledger comparison: A = `{first}`, B = `{second}`", ""] if heading else []) + [
             f"{len(moved)} row(s) moved in verdict or level; {len(reversals)} reversed "
             "direction (supported ↔ contradicted)" + (f": {', '.join(reversals)}"
                                                       if reversals else "") + ".", ""]
    if moved:
        lines += ["| id | verdict A | verdict B | level A | level B | estimate [interval] A | "
                  "estimate [interval] B | adjusted p A | adjusted p B | n A | n B |",
                  "|---|---|---|---|---|---|---|---:|---:|---:|---:|"]
        for m in moved:
            lines.append(f"| {m['id']} | {m['verdict_a']} | {m['verdict_b']} | "
                         f"{m['level_a'] or '–'} | {m['level_b'] or '–'} | {m['estimate_a']} | "
                         f"{m['estimate_b']} | {_p(m['p_adj_a'])} | {_p(m['p_adj_b'])} | "
                         f"{m['n_a'] or '–'} | {m['n_b'] or '–'} |")
    return "\n".join(lines) + "\n"

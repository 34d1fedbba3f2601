"""Confirmatory and exploratory looks: seeds drawn from the registration, never seen before.

A look's rules could have been fitted to its data if its seeds existed when they were frozen.
So confirmatory look K (1, 2, ...) runs at the seed offset its registration derives
(:func:`confirmatory_offset`): the first 31 bits of the SHA-256 of ``<decision id>/look<K>``,
where the decision id hashes the registration's content computed without the seeds
(:func:`decision_id`: everything that decides a verdict, at seed offset 0, leaving out the
dates, the commit and the list of rows re-registered after data). Any change to what decides a
verdict gives other seeds, and two looks of one decision get two unrelated offsets;
``sharpness claims register --profile evidence --confirmatory K`` registers look K
(``docs/registration/evidence-seedN.json``).

:func:`look_status` decides, at build time, whether a look is confirmatory: it runs at its
registration's derived offset, and its seeds overlap none of a look already seen (each
committed ledger of the profile in git history built under another registration, and the
looks the registration listed when it was written). Otherwise it is exploratory, and
:func:`mark_rows` says so on every row of the ledger.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sharpness.claims.registration_checks import committed_looks

#: how many bits of the decision id make the offset (seeds stay below 2**32 for numpy)
OFFSET_BITS = 31
#: what a decision id leaves out: when and from what it was written, and the history
NOT_DECIDING = ("re_registered_after_data", "look")


def decision_id(body: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a registration body at seed offset 0, less :data:`NOT_DECIDING`."""
    kept = {k: v for k, v in body.items() if k not in NOT_DECIDING}
    text = json.dumps(kept, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def confirmatory_offset(decision: str, look: int = 1) -> int:
    """The seed offset of confirmatory look ``look`` of a decision: the first
    :data:`OFFSET_BITS` bits of SHA-256(``<decision>/look<look>``)."""
    digest = hashlib.sha256(f"{decision}/look{int(look)}".encode()).hexdigest()
    return int(digest[:8], 16) >> (32 - OFFSET_BITS)


def look_entry(body_at_zero: Mapping[str, Any], profile: str, anchor: Path | None,
               look: int = 0) -> dict[str, Any]:
    """What a registration holds of its look: the decision id, the look's number (0: not a
    confirmatory look), the offset it derives (look 1's when 0), and the looks of the profile
    already committed when it was written."""
    decision = decision_id(body_at_zero)
    used = committed_looks(profile, anchor) if anchor is not None else []
    return {"decision_id": decision, "look": int(look),
            "confirmatory_offset": confirmatory_offset(decision, max(1, int(look))),
            "used": [{k: u[k] for k in ("ledger", "seed_offset", "registration")}
                     for u in used]}


def _numbers(node: Any) -> list[int]:
    if isinstance(node, Mapping):
        return [x for v in node.values() for x in _numbers(v)]
    if isinstance(node, list):
        return [x for v in node for x in _numbers(v)]
    return [int(node)] if isinstance(node, (int, float)) and not isinstance(node, bool) else []


def seed_span(record: Mapping[str, Any]) -> int:
    """The largest seed the profile names at offset 0 (two looks whose offsets differ by no
    more than it share seeds)."""
    config = record.get("config") or {}
    offset = int(config.get("seed_offset") or 0)
    seeds = {k: v for k, v in (config.get("seeds") or {}).items() if k != "seed_offset"}
    return max([n - offset for n in _numbers(seeds)] or [0])


def look_status(record: Mapping[str, Any] | None, seed_offset: int,
                anchor: Path | None) -> dict[str, Any]:
    """``{confirmatory: bool, why: str}`` of a look at ``seed_offset`` built under ``record``
    (``anchor``: a path in the checkout whose history lists the committed looks)."""
    if record is None:
        return {"confirmatory": False, "why": "no registration"}
    look = record.get("look") or {}
    want = look.get("confirmatory_offset")
    registered = int((record.get("config") or {}).get("seed_offset") or 0)
    if want is None or not look.get("look"):
        return {"confirmatory": False, "why": f"registration {record.get('id')} derives no "
                "confirmatory look (register one with --confirmatory K)"}
    if int(seed_offset) != want or registered != want:
        return {"confirmatory": False, "why": f"seed offset {int(seed_offset)} (registered "
                f"{registered}) is not {want}, the offset registration {record.get('id')} "
                "derives"}
    span = seed_span(record)
    seen = [u for u in (look.get("used") or []) + (committed_looks(str(record.get("profile")),
                                                                   anchor) if anchor else [])
            if u.get("registration") != record.get("id")]
    for used in seen:
        if abs(int(used.get("seed_offset") or 0) - int(seed_offset)) <= span:
            return {"confirmatory": False, "why": f"its seeds overlap those of "
                    f"{used.get('ledger')} (seed offset {used.get('seed_offset')}), already seen"}
    return {"confirmatory": True, "why": f"look {look.get('look')} at seed offset {want}, "
            "derived from registration "
            f"{record.get('id')} (decision id {str(look.get('decision_id'))[:16]}); no earlier "
            "look used these seeds"}


def mark_rows(rows: Sequence[dict[str, Any]], status: Mapping[str, Any]) -> None:
    """Say on every row of an exploratory look that it is one (notes, in place)."""
    if status.get("confirmatory"):
        return
    for row in rows:
        row["note"] = "; ".join(x for x in (f"exploratory look ({status['why']})",
                                            row.get("note")) if x)

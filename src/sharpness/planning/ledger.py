"""The plan in the claims ledger: which plan (and seeds) settled each verdict, what it cost,
and the sequential rule's verdict where seeds were added one look at a time.

``sharpness claims build --plan plans/plan.json`` calls :func:`annotate` on the ledger rows:
each claim of the plan gets ``plan=<id>`` in its provenance, its GPU-hours (``gpu_hours``,
``gpu_hours_source``: recorded / measured / estimate, at expected steps or the step caps)
in the JSON ledger and in its note (with its price at the step caps where that is more); a
claim whose seeds were chosen sequentially keeps a decided verdict only if the
group-sequential boundary was crossed (else ``inconclusive``), so the error rate the ledger
quotes is the design's, not that of a fixed-size test looked at several times.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sharpness.cost import hours_text
from sharpness.errors import SharpnessError
from sharpness.evidence.stats import CONTRADICTED, INCONCLUSIVE, SUPPORTED
from sharpness.planning.claims_plan import plan_id


def load_plan(path: str | Path) -> dict[str, Any]:
    """A plan record, its content id checked."""

    path = Path(path)
    if not path.is_file():
        raise SharpnessError(f"--plan {path}: no such file (write one with `sharpness plan`)")
    record = json.loads(path.read_text())
    if not isinstance(record, dict) or "id" not in record or "claims" not in record:
        raise SharpnessError(f"--plan {path}: not a plan record (no 'id' or 'claims')")
    if plan_id(record) != record["id"]:
        raise SharpnessError(f"--plan {path}: its content does not match its id "
                             f"{record['id']} (edited by hand?); rewrite it with "
                             f"`sharpness plan`")
    return record


def annotate(rows: Sequence[Mapping[str, Any]], record: Mapping[str, Any]
             ) -> list[dict[str, Any]]:
    """The ledger rows with the plan's provenance, GPU-hours and sequential verdicts."""

    out = []
    sequential = record.get("sequential", {})
    for row in rows:
        row = dict(row)
        entry = record["claims"].get(row["id"])
        if entry is None or not entry.get("planned"):
            out.append(row)
            continue
        row["gpu_hours"] = entry["gpu_hours"]
        row["gpu_hours_source"] = entry["hours_source"]
        row["provenance"] = ";".join(x for x in (row.get("provenance"), f"plan={record['id']}")
                                     if x)
        seeds = ", ".join(f"{path.split('.')[-2]} {len(v)} seeds"
                          for path, v in (entry.get("seeds") or {}).items())
        hours = hours_text(entry["gpu_hours"], cap=entry.get("cap_hours"))
        notes = [f"GPU-hours {hours} ({entry['hours_source']}), plan "
                 f"{record['id']}" + (f" ({seeds})" if seeds else "")]
        seq = sequential.get(row["id"])
        if seq:
            last = seq["looks"][-1]
            notes.append(f"sequential seeds: {seq['design']['rule']}; stopped at "
                         f"{last['seeds']} seeds ({last['decision']}, |T| "
                         f"{abs(last['t']):.2f} vs {last['boundary']:.2f})")
            if last["decision"] != "decided" and row["verdict"] in (SUPPORTED, CONTRADICTED):
                notes.append(f"the fixed 95% interval alone said {row['verdict']}")
                row["verdict"] = INCONCLUSIVE
                row["level"] = "weak"
        row["note"] = "; ".join(x for x in (row.get("note"), *notes) if x)
        out.append(row)
    return out

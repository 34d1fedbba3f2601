"""The seed spread a claim is planned with, from its own scale, and where it comes from.

In order: a pilot at paper scale (a ledger built by the paper profile, its paired interval
read back as ``se · √n``), a cited spread of the same recipe (``spreads.yaml`` beside this
module, named by the claim's ``spread:`` in ``reads.yaml``). A ledger of another profile
(quick, evidence) is never used: its networks, subsets and epochs are not the paper's, and
neither is their spread. ``None``: no spread at the claim's scale (the plan then buys the
standard's minimum and marks the claim sequential).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml
from scipy import stats as st

from sharpness.planning.reads import reads
from sharpness.planning.sequential import CI_TEXT

#: the profile whose ledger rows may give a spread (a pilot at the paper's own scale)
PAPER_SCALE = "paper"


@dataclass(frozen=True)
class Spread:
    """Standard deviation over seeds of a paired difference, and its source in words;
    ``sd_se``: the same spread if the cited ± is a standard error of its ``seeds`` seeds
    (``sd · √seeds``; None for a measured pilot, whose spread has one reading)."""

    sd: float
    source: str
    sd_se: float | None = None

    @property
    def conservative(self) -> float:
        """The larger of the two readings: seeds are bought for it."""
        return max(self.sd, self.sd_se or self.sd)


@functools.lru_cache(maxsize=1)
def cited_spreads() -> dict[str, dict[str, Any]]:
    """``spreads.yaml``: recipe key -> {sd: [a, b], seeds, recipe, source}, checked."""
    text = resources.files("sharpness.planning").joinpath("spreads.yaml").read_text("utf-8")
    data = yaml.safe_load(text) or {}
    for key, entry in data.items():
        missing = {"sd", "seeds", "recipe", "source"} - set(entry or {})
        if missing:
            raise ValueError(f"sharpness/planning/spreads.yaml: {key}: lacks {sorted(missing)}")
        sds = entry["sd"]
        if not (isinstance(sds, list) and len(sds) == 2 and all(float(s) > 0 for s in sds)):
            raise ValueError(f"sharpness/planning/spreads.yaml: {key}: sd must be two positive "
                             f"numbers (the two arms' std over seeds), got {sds!r}")
        if not str(entry["source"]).strip():
            raise ValueError(f"sharpness/planning/spreads.yaml: {key}: empty source")
    return data


def spread_keys(claim_id: str) -> list[str]:
    """The recipe keys ``reads.yaml`` names for the claim's spread (``spread:``)."""
    keys = reads().get(claim_id, {}).get("spread") or []
    return [str(k) for k in ([keys] if isinstance(keys, str) else keys)]


def cited_spread(claim_id: str) -> Spread | None:
    """The largest cited spread of the recipes ``reads.yaml`` names for the claim (None: none
    named, or none of them has an entry in ``spreads.yaml``)."""
    found = []
    for key in spread_keys(claim_id):
        entry = cited_spreads().get(key)
        if entry is None:
            continue
        a, b = (float(s) for s in entry["sd"])
        sd = math.hypot(a, b)
        se = sd * math.sqrt(int(entry["seeds"]))  # the ± read as an SE of its seeds
        found.append(Spread(sd, f"sd {sd:.2f} of the difference from ±{a:g} and ±{b:g} over "
                                f"{entry['seeds']} seeds read as SDs, {se:.2f} read as SEs of "
                                f"{entry['seeds']} seeds (seeds bought for the larger), "
                                f"{entry['recipe']} ({entry['source']})", se))
    return max(found, key=lambda s: s.conservative) if found else None


def pilot_spread(claim_id: str, ledger: Mapping[str, Mapping[str, Any]] | None,
                 profile: str | None) -> Spread | None:
    """The spread of the claim's paired interval in a paper-scale ledger (``profile`` as its
    record says); None for a ledger of any other profile or without an interval."""
    if not ledger or profile != PAPER_SCALE:
        return None
    row = ledger.get(claim_id)
    if row is None:
        return None
    match = CI_TEXT.search(str(row.get("value", "")))
    try:
        low, high = float(row["low"]), float(row["high"])
    except (KeyError, TypeError, ValueError):
        return None
    if match is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    level, n = float(match.group(1)) / 100, int(match.group(2))
    if n < 2:
        return None
    sd = (high - low) / 2 / float(st.t.ppf(0.5 + level / 2, n - 1)) * math.sqrt(n)
    return Spread(sd, f"sd {sd:.2f} measured over {n} seeds by a pilot at paper scale "
                      f"({claim_id}, paper-profile ledger)")


def claim_spread(claim_id: str, ledger: Mapping[str, Mapping[str, Any]] | None = None,
                 profile: str | None = None) -> Spread | None:
    """The spread the claim is planned with (see the module)."""
    return pilot_spread(claim_id, ledger, profile) or cited_spread(claim_id)

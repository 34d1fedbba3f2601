"""How many seeds a claim needs, and which runs its predicate reads.

A claim is planned for a stated power (80 % by default) at an effect size the paper reports
(:mod:`sharpness.evidence.reported`) and a per-seed spread measured by an earlier ledger (the
evidence ledger's paired interval of the claim, or of the row ``reads.yaml`` names): the seeds
are :func:`sharpness.evidence.stats.seeds_to_settle` of that effect and spread, never an assumed
standardised effect. Without a reported effect or a measured spread the power is unknown, and
the claim is not counted as settled. ``reads.yaml`` (beside this module) holds, per claim, the
runs its predicate reads, the effect and the row whose spread it borrows.
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

from sharpness.evidence.reported import reported
from sharpness.evidence.stats import MAX_SEEDS, paired_t_power, seeds_to_settle
from sharpness.planning import DEFAULT_POWER
from sharpness.planning.sequential import CI_TEXT


@functools.lru_cache(maxsize=1)
def reads() -> dict[str, dict[str, Any]]:
    """``reads.yaml``: claim id -> {runs, effect, sd_from}."""

    text = resources.files("sharpness.planning").joinpath("reads.yaml").read_text("utf-8")
    data = yaml.safe_load(text) or {}
    for cid, spec in data.items():
        unknown = set(spec) - {"runs", "effect", "sd_from"}
        if unknown:
            raise ValueError(f"sharpness/planning/reads.yaml: {cid}: unknown keys "
                             f"{sorted(unknown)}")
    return data


def reads_run(claim_id: str, group: str, label: str) -> bool:
    """Whether the claim's predicate reads the lesam training run of ``group``/``label``
    (a selector names its ``labels`` or the labels it ``exclude``s; a claim ``reads.yaml``
    does not restrict reads every run of its items)."""
    selectors = reads().get(claim_id, {}).get("runs")
    if selectors is None:
        return True
    return any(s["group"] == group and ("labels" not in s or label in s["labels"])
               and label not in s.get("exclude", ()) for s in selectors)


def reported_effect(claim_id: str) -> tuple[float, str] | None:
    """(difference in points, its source in words) the claim is planned to detect."""

    spec = reads().get(claim_id, {}).get("effect")
    if not spec:
        return None
    entry = reported(spec["item"], spec["key"])
    if entry is None or entry.get("value") is None:
        raise ValueError(f"sharpness/planning/reads.yaml: {claim_id}: no reported value "
                         f"{spec['item']}/{spec['key']} in paper_reported.yaml")
    why = f"; {spec['why']}" if spec.get("why") else ""
    return float(entry["value"]), f"paper: {entry['text']} ({entry['source']}{why})"


def measured_sd(claim_id: str, ledger: Mapping[str, Mapping[str, Any]] | None
                ) -> tuple[float, str] | None:
    """Per-seed standard deviation of the paired difference, from the ledger row of the
    claim (or of its ``sd_from``): ``se · √n`` of its t interval. None without one."""

    if not ledger:
        return None
    row_id = reads().get(claim_id, {}).get("sd_from", claim_id)
    row = ledger.get(row_id)
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
    se = (high - low) / 2 / float(st.t.ppf(0.5 + level / 2, n - 1))
    return se * math.sqrt(n), f"sd {se * math.sqrt(n):.2f} measured over {n} seeds ({row_id}, " \
                              f"evidence ledger, at that profile's scale)"


@dataclass
class Design:
    """The seeds a claim is planned with and the power they give."""

    seeds: int | None        # seeds per arm (None: as the profile has them, power unknown)
    power: float             # expected power at ``seeds`` (0 when unknown)
    settled: bool            # reaches the stated power
    basis: str               # how the power was found, in words
    effect: str = ""         # the effect size and its source


def design(claim_id: str, profile_seeds: int, ledger: Mapping[str, Mapping[str, Any]] | None,
           *, alpha: float = 0.05, power: float = DEFAULT_POWER, min_seeds: int = 3,
           max_seeds: int = MAX_SEEDS) -> Design:
    """Seeds for a seeded comparison to reach ``power`` at the reported effect and the
    measured spread (see the module); ``profile_seeds``: the seeds the profile runs now."""
    effect = reported_effect(claim_id)
    sd = measured_sd(claim_id, ledger)
    if effect is None:  # at least the independent runs the ledger's standard asks for
        seeds = max(profile_seeds, min_seeds)
        return Design(seeds if seeds > profile_seeds else None, 0.0, False,
                      f"{seeds} seeds (the standard's minimum {min_seeds}); no effect size "
                      "reported by the paper for this claim: power unknown, not counted as "
                      "settled")
    if sd is None:
        return Design(None, 0.0, False, f"{profile_seeds} seeds; no measured seed spread "
                      "(no paired interval in the --ledger rows): power unknown",
                      f"{effect[0]:g} points, {effect[1]}")
    n = seeds_to_settle(effect[0], sd[0], alpha, power, min_seeds, max_seeds)
    what = f"{effect[0]:g} points, {effect[1]}"
    if n is None:
        crit = float(st.t.ppf(1 - alpha / 2, max_seeds - 1))
        got = paired_t_power(effect[0] / sd[0], max_seeds, crit)
        return Design(max_seeds, got, False, f"t test: more than {max_seeds} seeds for "
                      f"{power:.0%} power at d = {effect[0] / sd[0]:.2f} ({sd[1]})", what)
    crit = float(st.t.ppf(1 - alpha / 2, n - 1))
    got = paired_t_power(effect[0] / sd[0], n, crit)
    return Design(n, got, got >= power - 1e-9, f"t test, {n} seeds for {power:.0%} power at "
                  f"d = {effect[0] / sd[0]:.2f} ({sd[1]})", what)

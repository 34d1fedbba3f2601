"""How many seeds a claim needs, and the probability that its whole rule decides.

A seeded claim is planned at an effect size the paper reports (:mod:`sharpness.evidence.reported`,
named in ``reads.yaml``) and a seed spread of its own scale (:mod:`sharpness.planning.spread`:
a paper-scale pilot or a cited spread of the same recipe; never a CPU profile's). Its power is
the **claim-level** probability that the ledger's rule decides it: every part the claim needs
(one paired comparison per network, data set, domain or variant it reads) must show its
interval on the claim's side, and the row's p-value (that of its weakest part) must stay
below alpha after Holm's correction over the family of interval-decided paper claims
(:func:`sharpness.claims.ledger.adjust_multiplicity`). That probability is simulated
(:func:`claim_power`: numpy, seeded). Without a reported effect or a spread at the claim's
scale the power is unknown: the plan buys the standard's minimum and marks the claim
sequential (:mod:`sharpness.planning.sequential` adds seeds after that pilot).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as st

from sharpness.evidence.reported import reported
from sharpness.evidence.stats import MAX_SEEDS
from sharpness.planning import DEFAULT_POWER
from sharpness.planning.reads import reads, reads_run
from sharpness.planning.spread import Spread, claim_spread, spread_keys

__all__ = ["SEQUENTIAL", "Design", "claim_power", "design", "holm_family", "reads",
           "reads_run", "reported_effect"]

#: how a claim without a spread at its scale is marked
SEQUENTIAL = "sequential: add seeds after the pilot"
#: simulated comparisons per power estimate (Monte-Carlo standard error <= 0.011)
SIMULATIONS = 2000


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


def holm_family() -> int:
    """Rows of Holm's family in the ledger: the paper's claims (kind ``claim``) about trained
    networks, the rows decided by paired intervals."""
    from sharpness.claims.ledger import all_claims  # lazy: the whole claims registry

    return max(1, sum(1 for c in all_claims() if c.kind == "claim" and c.trained))


def claim_power(effect: float, sd: float, seeds: int, *, parts: int = 1, family: int = 1,
                alpha: float = 0.05, sims: int = SIMULATIONS, seed: int = 0) -> float:
    """Probability that a claim of ``parts`` paired comparisons, each of true mean difference
    ``effect`` and per-seed spread ``sd`` over ``seeds`` seeds, is decided: every part's
    two-sided t test on the claim's side, and the row's p-value (the largest of its parts')
    below ``alpha`` after Holm's correction over ``family`` rows (the other rows drawn as
    nulls, uniform p-values: the claim is not credited with the others' power)."""
    if seeds < 2:
        return 0.0
    rng = np.random.default_rng(seed)
    shape = (sims, parts)
    mean = effect + sd / np.sqrt(seeds) * rng.standard_normal(shape)
    s = sd * np.sqrt(rng.chisquare(seeds - 1, shape) / (seeds - 1))
    t = mean / (s / np.sqrt(seeds))
    p = 2 * st.t.sf(np.abs(t), seeds - 1)
    right_side = np.all(t > 0, axis=1)
    row = p.max(axis=1)
    if family > 1:
        others = rng.uniform(size=(sims, family - 1))
        allp = np.concatenate([row[:, None], others], axis=1)
        order = np.argsort(allp, axis=1)
        ranked = np.take_along_axis(allp, order, axis=1) * (family - np.arange(family))
        adjusted = np.minimum(np.maximum.accumulate(ranked, axis=1), 1.0)
        rank = np.argmax(order == 0, axis=1)
        row = adjusted[np.arange(sims), rank]
    return float(np.mean(right_side & (row < alpha)))


@dataclass
class Design:
    """The seeds a claim is planned with and the power they give."""

    seeds: int | None        # seeds per arm (None: as the profile has them)
    power: float             # claim-level power at ``seeds`` (0 when unknown)
    settled: bool            # reaches the stated power
    basis: str               # how the power was found, in words
    effect: str = ""         # the effect size and its source
    spread: str = ""         # the seed spread and its source (or why there is none)
    sequential: bool = False  # bought at the minimum; seeds follow the pilot
    readings: dict[str, float] = field(default_factory=dict)  # power per effect x reading
    #: (seeds, power, readings) under the SD reading of a cited ±, when it asks fewer seeds
    #: than the conservative (SE) reading: what the plan buys where the budget allows no more
    fallback: tuple[int, float, dict[str, float]] | None = None


def design(claim_id: str, profile_seeds: int, ledger: Mapping[str, Mapping[str, Any]] | None,
           *, alpha: float = 0.05, power: float = DEFAULT_POWER, min_seeds: int = 3,
           max_seeds: int = MAX_SEEDS, parts: int = 1, family: int = 1,
           ledger_profile: str | None = None) -> Design:
    """Seeds for a seeded claim to reach ``power`` (claim-level, :func:`claim_power`) at the
    reported effect and the spread at its scale; ``profile_seeds``: the seeds the profile runs
    now; ``ledger``/``ledger_profile``: a ledger and the profile that built it (a pilot)."""
    effect = reported_effect(claim_id)
    spread: Spread | None = claim_spread(claim_id, ledger, ledger_profile)
    seeds = max(profile_seeds, min_seeds)
    minimum = Design(seeds if seeds > profile_seeds else None, 0.0, False, "", sequential=True)
    what = f"{effect[0]:g} points, {effect[1]}" if effect else ""
    if effect is None:
        minimum.basis = (f"{seeds} seeds (the standard's minimum {min_seeds}); no effect size "
                         f"reported by the paper for this claim: power unknown; {SEQUENTIAL}")
        minimum.spread = "–"
        return minimum
    if spread is None:
        minimum.basis = (f"{seeds} seeds (the standard's minimum {min_seeds}); no seed spread "
                         f"at paper scale: power unknown; {SEQUENTIAL}")
        minimum.effect = what
        keys = ", ".join(spread_keys(claim_id)) or "none named"
        minimum.spread = (f"none at paper scale: no paper-scale pilot ledger, no entry in "
                          f"planning/spreads.yaml for {keys}; a CPU profile's spread is not "
                          "carried to paper scale")
        return minimum

    def at(n: int, eff: float | None = None, sd: float | None = None) -> float:
        return claim_power(effect[0] if eff is None else eff,
                           spread.conservative if sd is None else sd, n, parts=parts,
                           family=family, alpha=alpha)

    how = (f"simulated: all {parts} part(s) at Holm over {family} claims, "
           f"d = {effect[0] / spread.conservative:.2f}")
    if at(max_seeds) < power:
        return Design(max_seeds, at(max_seeds), False, f"{how}: more than {max_seeds} seeds "
                      f"for {power:.0%}", what, spread.source)
    low = fewest(lambda n: at(n) >= power, max(seeds, 2), max_seeds)
    got = at(low)
    table = readings(lambda eff, sd: at(low, eff, sd), effect[0], spread)
    out = Design(low, got, got >= power,
                 f"{how}: {low} seeds for {power:.0%} under the conservative reading; "
                 f"{describe(table)}", what, spread.source, readings=table)
    if spread.sd_se is not None and spread.sd < spread.conservative:
        # the seeds the SD reading asks: bought where the budget does not allow the larger
        few = fewest(lambda n: at(n, sd=spread.sd) >= power, max(seeds, 2), low)
        if few < low:
            out.fallback = (few, at(few, sd=spread.sd),
                            readings(lambda eff, sd: at(few, eff, sd), effect[0], spread))
    return out


def fewest(reaches: Callable[[int], bool], low: int, high: int) -> int:
    """The fewest seeds in [low, high] for which ``reaches`` holds (it holds at ``high``;
    the power rises with the seeds: common random numbers per count)."""
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if reaches(mid) else (mid + 1, high)
    return low


def readings(power_at: Callable[[float, float], float], effect: float, spread: Spread
             ) -> dict[str, float]:
    """Claim-level power at the paper's effect and at half of it, with the cited ± read as a
    standard deviation and as a standard error of its seeds (one reading for a pilot)."""
    sds = {"± as SD": spread.sd}
    if spread.sd_se is not None:
        sds["± as SE"] = spread.sd_se
    return {f"{name}, {label}": power_at(eff, sd)
            for name, eff in (("effect", effect), ("half effect", effect / 2))
            for label, sd in sds.items()}


def describe(table: Mapping[str, float]) -> str:
    """The power readings in words, for the plan's table."""
    return "power " + ", ".join(f"{p:.2f} at {k}" for k, p in table.items())

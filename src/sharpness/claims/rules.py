"""The statistical rules every trained-network claim is decided by, in one place.

A claim about trained networks compares two arms (two optimizers, or a variant and its
default) run with the same seeds. :func:`paired_verdict` decides it under the profile's
:class:`SeedRules`:

1. **Sanity.** Every run must have trained before it counts: its final train loss below
   ``(1 − loss_margin) · ln C`` and its final train accuracy above ``1/C + acc_margin``
   (``C`` classes). A seed whose run fails in *either* arm is dropped from *both* arms (the
   pair is broken) and named in the row with its reason. A run without a training record
   cannot be checked and does not count either.
2. **Exclusions.** When more than ``max_excluded`` of the seeds are dropped the row is
   ``inconclusive``: what is left is a selection, not a sample.
   A seed counts only when its runs' records prove it independent: its seed label, initial
   weights and data order differ from every counted seed's, in each arm (a copy under
   another label is counted once); a seed whose record carries no fingerprint leaves the row
   ``inconclusive``, named in its note, and nothing is read from the numbers
   (:mod:`sharpness.claims.independence`). Differences with zero spread are refused too.
3. **Seeds.** ``supported`` / ``contradicted`` need at least ``min_seeds`` paired seeds and a
   Student-t interval (at ``level``) that excludes 0; ``supported`` needs it wholly beyond
   the row's registered smallest effect of interest (``params.rules.sesoi``, in the row's
   unit: a tight cluster just past 0 is no verdict; a row that registers none decides
   nothing, one that registers 0 states why in ``sesoi_reason``); with fewer the row is ``inconclusive``
   and says how many seeds :func:`~sharpness.evidence.stats.seeds_to_settle` estimates would
   settle a difference of the observed size and spread.
4. **Smoke.** In a smoke profile (``smoke: true``, the quick profile) no trained-network row
   decides: its level is ``smoke`` and its verdict ``inconclusive``, whatever the interval.
5. **Training level.** The row reports each arm's mean train loss and accuracy beside the
   effect, so a gap in training is read beside the gap in the claim.

The rules of each profile live in ``rules.yaml`` beside this module; ``sharpness claims build
--min-seeds N`` overrides the minimum for one build.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Protocol

import numpy as np
import yaml

from sharpness.claims.independence import Distinct, distinct_by_records, zero_spread
from sharpness.claims.model import EVIDENCE, SMOKE, WEAK, Result
from sharpness.errors import SharpnessError
from sharpness.evidence.records import TrainRecord
from sharpness.evidence.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    combine,
    decide,
    observed_effect,
    paired_differences,
    seeds_to_settle,
    t_interval,
    t_pvalue,
)

#: what a run must show to count as trained: its train loss and accuracy (the default), or its
#: train accuracy alone (a method whose reported loss is not the plain cross-entropy on the
#: train set, e.g. GLMC's re-balanced head read on the long-tailed set)
SANITY = ("loss_and_accuracy", "accuracy")


@dataclass(frozen=True)
class SeedRules:
    """The rules a profile decides trained-network claims by (see the module docstring)."""

    profile: str = "default"
    min_seeds: int = 3
    level: float = 0.95
    power: float = 0.8
    loss_margin: float = 0.1
    acc_margin: float = 0.1
    max_excluded: float = 0.34
    smoke: bool = False
    min_runs: int = 3
    sanity: str = "loss_and_accuracy"
    #: the smallest paired difference of interest, in the row's own unit (accuracy points, a
    #: share): registered per row (``params.rules.sesoi``); None: not registered, no verdict
    sesoi: float | None = None
    #: why a row registers ``sesoi: 0`` (no smallest effect beyond zero): required then
    sesoi_reason: str = ""

    def __post_init__(self) -> None:
        if self.min_seeds < 2:
            raise SharpnessError(f"claims rules ({self.profile}): min_seeds {self.min_seeds} "
                                 "must be at least 2 (an interval needs two seeds)")
        if self.min_runs < 1:
            raise SharpnessError(f"claims rules ({self.profile}): min_runs {self.min_runs} "
                                 "must be at least 1")
        if self.sanity not in SANITY:
            raise SharpnessError(f"claims rules ({self.profile}): sanity {self.sanity!r} must "
                                 f"be one of {list(SANITY)}")
        if self.sesoi is not None and not (math.isfinite(self.sesoi) and self.sesoi >= 0):
            raise SharpnessError(f"claims rules ({self.profile}): sesoi {self.sesoi} must be "
                                 "a finite number ≥ 0")
        if self.sesoi == 0 and not self.sesoi_reason.strip():
            raise SharpnessError(f"claims rules ({self.profile}): sesoi 0 needs its reason "
                                 "(sesoi_reason): why no smallest effect beyond zero")
        for key in ("level", "power", "loss_margin", "acc_margin", "max_excluded"):
            value = getattr(self, key)
            if not 0 <= value < 1:
                raise SharpnessError(f"claims rules ({self.profile}): {key} {value} must be "
                                     "in [0, 1)")

    def text(self) -> str:
        """The rules in one line, for the ledger's header."""
        return (f"≥ {self.min_seeds} paired seeds, {self.level:.0%} t interval; a run counts "
                f"when train loss < {1 - self.loss_margin:g}·ln C and train accuracy > 1/C + "
                f"{self.acc_margin:g}; > {self.max_excluded:.0%} of seeds excluded: "
                f"inconclusive; a row about trained networks or optimizer runs decides on "
                f"≥ {self.min_runs} independent runs proven by their records; a paired "
                f"interval must clear the row's registered smallest effect of interest; "
                f"interval-decided claims are "
                f"Holm-corrected at α = {1 - self.level:.2g}"
                + ("; smoke profile: trained-network rows never decide" if self.smoke else ""))


FIELDS = {f for f in SeedRules.__dataclass_fields__ if f != "profile"}


@lru_cache(maxsize=1)
def _profiles() -> dict[str, dict[str, Any]]:
    text = resources.files("sharpness.claims").joinpath("rules.yaml").read_text("utf-8")
    data = yaml.safe_load(text) or {}
    for name, entry in data.items():
        unknown = set(entry or {}) - FIELDS
        if unknown:
            raise SharpnessError(f"claims/rules.yaml, profile {name!r}: unknown key(s) "
                                 f"{sorted(unknown)}; known: {sorted(FIELDS)}")
    return data


def rules_for(profile: str, **overrides: Any) -> SeedRules:
    """The rules of ``profile``: ``rules.yaml``'s ``default`` entry, its entry for the profile
    on top (a profile it does not name gets the default), then ``overrides`` (None values
    ignored)."""
    table = _profiles()
    entry = {**(table.get("default") or {}), **(table.get(profile) or {})}
    entry.update({k: v for k, v in overrides.items() if v is not None})
    unknown = set(entry) - FIELDS
    if unknown:
        raise SharpnessError(f"claims rules: unknown key(s) {sorted(unknown)}")
    return SeedRules(profile=profile, **entry)


# --- the verdict -------------------------------------------------------------------------------
@dataclass
class Arm:
    """One arm of a paired comparison: its per-seed values and (optionally) training records;
    ``records=None`` means the producer wrote none, so no run of the arm can be checked."""

    name: str
    values: Mapping[int, float]
    records: Mapping[int, TrainRecord] | None = None


def _level_text(arm: Arm, seeds: Iterable[int]) -> str:
    if not arm.records:
        return f"{arm.name}: no training record"
    recs = [arm.records[s] for s in seeds if s in arm.records]
    loss = [r.loss for r in recs if r.loss is not None]
    acc = [r.acc for r in recs if r.acc is not None]
    if not loss or not acc:
        return f"{arm.name}: no training record"
    return f"{arm.name}: train loss {np.mean(loss):.3f}, train acc {100 * np.mean(acc):.1f} %"


def _replicates(a: Arm, b: Arm, paired: list[int]) -> Distinct:
    """The seeds of a paired comparison their records prove distinct: a seed's fingerprints
    are those of its run in each arm (initial weights, data order, and the id of its record
    where the figure's row names it: two seed labels on one record are one run); a seed
    either of whose runs has no record, or a record without fingerprints, is unproven.
    Nothing is read from the numbers."""
    def prints(s: int) -> list[tuple[str, str, str]] | None:
        recs = [(arm.name, (arm.records or {}).get(s)) for arm in (a, b)]
        if any(r is None or not r.proven for _, r in recs):
            return None
        return [(k, name, str(getattr(r, k))) for name, r in recs
                for k in ("init", "order", "run") if k != "run" or r.run]

    return distinct_by_records((s, prints(s)) for s in paired)


def paired_verdict(a: Arm, b: Arm, what: str, rules: SeedRules, direction: int = 1,
                   digits: int = 2, unit: str = "points") -> Result:
    """The verdict of "``a − b`` is > 0" (``direction=1``) or "< 0" over the seeds both arms
    ran, under ``rules`` (module docstring)."""
    paired = sorted(set(a.values) & set(b.values))
    found = _replicates(a, b, paired)
    # the seeds read: those proven distinct and those no record proves (these keep the row
    # from deciding; its interval and p-value, which stays in the Holm family, are stated)
    seeds = [s for s in paired if s in set(found.read)]
    excluded: dict[int, str] = {}
    for s in seeds:
        reasons = []
        for arm in (a, b):  # every arm's failure is named, not only the first
            rec = (arm.records or {}).get(s)
            why = (rec.failure(rules.loss_margin, rules.acc_margin,
                               check_loss=rules.sanity != "accuracy") if rec is not None
                   else "no training record")
            if why is not None:
                reasons.append(f"{arm.name} {why}")
        if reasons:
            excluded[s] = ", ".join(reasons)
    kept = [s for s in seeds if s not in excluded]
    diffs = paired_differences({s: a.values[s] for s in kept}, {s: b.values[s] for s in kept})
    iv = t_interval(diffs, rules.level, unit="seeds")
    means = (np.mean([a.values[s] for s in kept]) if kept else float("nan"),
             np.mean([b.values[s] for s in kept]) if kept else float("nan"))
    notes: list[str] = [found.note()] if found.note() else []
    if set(a.values) != set(b.values):
        notes.append(f"paired on the {len(seeds)} seed(s) both arms ran "
                     f"({len(a.values)} vs {len(b.values)})")
    if excluded:
        notes.append("excluded from both arms: " + "; ".join(
            f"seed {s} ({why})" for s, why in excluded.items()))
    verdict = decide(iv, direction)
    sesoi = rules.sesoi
    if verdict == SUPPORTED and sesoi is not None and not (
            (iv.low > sesoi) if direction > 0 else (iv.high < -sesoi)):
        verdict = INCONCLUSIVE
        notes.append(f"past 0 but not wholly beyond the smallest effect of interest "
                     f"{direction * sesoi:+g}{' ' + unit if unit else ''}: no verdict")
    too_many = bool(seeds) and len(excluded) > rules.max_excluded * len(seeds)
    if not found.decides:
        verdict = INCONCLUSIVE  # the note names the seeds no record proves
    elif not seeds:
        verdict = INCONCLUSIVE
        notes.append("no seed in both arms")
    elif too_many:
        verdict = INCONCLUSIVE
        notes.append(f"{len(excluded)}/{len(seeds)} seeds excluded (more than "
                     f"{rules.max_excluded:.0%}): inconclusive")
    elif iv.n < rules.min_seeds:
        verdict = INCONCLUSIVE
        notes.append(f"{iv.n} paired seed(s) < the {rules.min_seeds} this profile requires")
    elif zero_spread(diffs):
        verdict = INCONCLUSIVE
        notes.append("the paired differences have zero spread (identical in every seed), "
                     "which independent runs do not give: refused")
    if sesoi is None:
        verdict = INCONCLUSIVE
        notes.append("no smallest effect of interest registered (params.rules.sesoi): "
                     "no verdict")
    elif sesoi == 0:
        notes.append(f"smallest effect of interest 0: {rules.sesoi_reason}")
    if verdict == INCONCLUSIVE and iv.n >= 2:
        mean, sd, _ = observed_effect(diffs)
        need = seeds_to_settle(mean, sd, 1 - rules.level, rules.power, rules.min_seeds)
        if need is not None:
            notes.append(f"about {need} paired seeds would settle a difference of this size "
                         f"and spread ({rules.power:.0%} power, {1 - rules.level:.0%} "
                         "two-sided)")
    # runs that did not train cannot bear on the claim: the numbers are a smoke test
    level = EVIDENCE if verdict != INCONCLUSIVE else SMOKE if too_many else WEAK
    if rules.smoke:
        verdict, level = INCONCLUSIVE, SMOKE
        notes.insert(0, f"smoke profile ({rules.profile}): trained-network rows never decide")
    training = "; " + "; ".join(_level_text(arm, kept) for arm in (a, b))
    value = (f"{what}: {a.name} {means[0]:.{digits}f} vs {b.name} {means[1]:.{digits}f}; "
             f"paired difference {iv.text(digits)}{' ' + unit if unit else ''}{training}")
    # the test of the claimed effect: against the smallest effect of interest, never smaller
    # than the test against 0 (a shifted two-sided test of a row on the other side would be
    # smaller, and ease the Holm correction of the rows beside it); against 0 when the
    # interval contradicts the claim, as the interval is read
    shift = direction * (sesoi or 0.0) if verdict != CONTRADICTED else 0.0
    p_value = float("nan") if zero_spread(diffs) else max(
        t_pvalue(diffs), t_pvalue(np.asarray(diffs) - shift))
    return Result(verdict, value, level=level,
                  estimate=iv.estimate if iv.n else None,
                  low=iv.low if iv.has_interval else None,
                  high=iv.high if iv.has_interval else None, note="; ".join(notes), n=iv.n,
                  p_value=p_value if math.isfinite(p_value) else None)


def combine_results(results: Mapping[str, Result], rules: SeedRules) -> Result:
    """One row from several paired comparisons (each named): supported when all are,
    contradicted when any is; the level is the weakest of the parts, ``n`` the fewest runs.

    The row's p-value is that of the part that decides (:func:`row_pvalue`)."""

    verdict = combine([r.verdict for r in results.values()])
    levels = [r.level for r in results.values()]
    level = SMOKE if SMOKE in levels else (EVIDENCE if verdict != INCONCLUSIVE else WEAK)
    if rules.smoke:
        verdict, level = INCONCLUSIVE, SMOKE
    notes = list(dict.fromkeys(f"{k}: {r.note}" for k, r in results.items() if r.note))
    ns = [r.n for r in results.values() if r.n is not None]
    p_value = row_pvalue(results.values())
    # the headline interval is that of the part whose p-value the row carries
    part = next((r for r in results.values() if r.p_value is not None and p_value is not None
                 and math.isclose(min(1.0, r.p_value * (len(results) if verdict ==
                                                        CONTRADICTED else 1)), p_value)),
                None)
    return Result(verdict, "; ".join(f"[{k}] {r.value} ({r.verdict})"
                                     for k, r in results.items()),
                  level=level, note="; ".join(notes), n=min(ns) if ns else None,
                  p_value=p_value, estimate=part.estimate if part else None,
                  low=part.low if part else None, high=part.high if part else None)


class Decided(Protocol):
    """A part of a row: a predicate's :class:`Result` or one test (its verdict and p-value)."""

    @property
    def verdict(self) -> str: ...

    @property
    def p_value(self) -> float | None: ...


def row_pvalue(parts: Iterable[Decided]) -> float | None:
    """The p-value of a row made of several interval tests, from the part that decides:

    * some part contradicts the claim: the smallest p-value among the contradicting parts,
      times the number of parts (Bonferroni within the row: any one part may decide);
    * otherwise (every part must hold for ``supported``): the largest p-value of the parts
      (the intersection-union test: the row is as strong as its weakest part).

    None when no part has a p-value."""
    parts = list(parts)
    ps = [r.p_value for r in parts if r.p_value is not None]
    if not ps:
        return None
    against = [r.p_value for r in parts if r.verdict == CONTRADICTED and r.p_value is not None]
    if against:
        return min(1.0, min(against) * len(parts))
    return max(ps)



@dataclass(frozen=True)
class OverRunsEffect:
    """The smallest effect of interest a test over runs registers (``params.sesoi``: a ratio
    past the bound, :func:`~sharpness.evidence.stats.threshold_test`'s ``margin``), read by
    :func:`over_runs_effect`."""

    margin: float       # the registered ratio (0 when none is registered)
    registered: bool    # whether the row registers one: without, it decides nothing
    note: str           # what the row's note says about it ("" for a positive one)

    def apply(self, out: Result) -> Result:
        """``out`` (a row decided by threshold tests) under this registration: inconclusive,
        with why, when none is registered; its note states a registered 0 and its reason."""
        if not self.registered:
            out.verdict = INCONCLUSIVE
        if self.note:
            out.note = "; ".join(x for x in (out.note, self.note) if x)
        return out


def over_runs_effect(params: Mapping[str, Any]) -> OverRunsEffect:
    """The smallest effect of interest of a row decided by a threshold test over runs, from
    its parameters: ``sesoi`` (a finite ratio ≥ 0); 0 needs its reason (``sesoi_reason``:
    why any run past the bound is the claim), else :class:`SharpnessError`, as for the seed
    rules. A row that registers none decides nothing (a tight cluster just past the bound,
    10.5, 10.6, 10.7 against 10, would otherwise be a verdict)."""
    raw = params.get("sesoi")
    if raw is None:
        return OverRunsEffect(0.0, False, "no smallest effect of interest registered "
                                          "(params.sesoi): no verdict")
    try:
        margin = float(raw)
    except (TypeError, ValueError):
        margin = float("nan")
    if not (math.isfinite(margin) and margin >= 0):
        raise SharpnessError(f"sesoi {raw!r} must be a finite ratio >= 0")
    reason = str(params.get("sesoi_reason") or "").strip()
    if margin == 0 and not reason:
        raise SharpnessError("sesoi 0 needs its reason (sesoi_reason): why any run "
                             "past the bound is the claim")
    return OverRunsEffect(margin, True, f"smallest effect of interest 0: {reason}"
                          if margin == 0 else "")

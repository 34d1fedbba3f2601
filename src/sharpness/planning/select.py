"""Which claims to settle within a GPU budget: a budgeted set-union knapsack, solved greedily.

Each claim needs a set of runs (the runs behind its figures and tables); a run costs GPU-hours
once, however many claims read it (one ResNet-18 SAM run serves four lesam items). Choosing
runs to maximise the expected number of settled claims (a claim's value is the power with
which its verdict is expected to be decided) under a budget is the *set-union knapsack*
problem, NP-hard in general. :func:`greedy` picks, again and again, the claim whose runs buy
the most value per GPU-hour **given the runs already chosen**:

    gain(c) = sum of the values of every claim that becomes fully covered by adding runs(c)
    ratio(c) = gain(c) / marginal GPU-hours of runs(c)    (free claims first, by value)

so shared runs are paid once and a claim whose runs are all bought already comes free. Its
result is compared with the best single affordable claim (the usual safeguard of budgeted
greedy algorithms, Khuller, Moss & Naor 1999) and the better one is returned.
:func:`brute_force` enumerates every subset (small instances, for tests).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

Run = Hashable


@dataclass(frozen=True)
class Candidate:
    """A claim with the runs it needs and its value (expected power of its verdict)."""

    claim: str
    runs: frozenset[Run]
    value: float


@dataclass
class Pick:
    """One step of the plan: the claim picked, the runs it added, what they cost, and every
    claim the step settled (the picked one and those it brought along for free)."""

    claim: str
    new_runs: frozenset[Run]
    hours: float
    settled: tuple[str, ...]


def _cost(runs: frozenset[Run], prices: Mapping[Run, float]) -> float:
    return math.fsum(prices[r] for r in runs)


def covered(cands: Sequence[Candidate], runs: frozenset[Run]) -> list[Candidate]:
    """The candidates whose runs are all in ``runs``."""
    return [c for c in cands if c.runs <= runs]


def value_of(cands: Sequence[Candidate], runs: frozenset[Run]) -> float:
    """Summed value of the candidates ``runs`` covers."""
    return math.fsum(c.value for c in covered(cands, runs))


def greedy(cands: Sequence[Candidate], prices: Mapping[Run, float], budget: float, *,
           start: frozenset[Run] = frozenset()) -> list[Pick]:
    """The plan as an ordered list of picks (cheapest information first); see the module.
    ``start``: runs bought already (by an earlier pass), paid out of ``budget``."""
    if start:
        return _greedy(cands, prices, budget, start=start)
    plan = _greedy(cands, prices, budget)
    single = _best_single(cands, prices, budget)
    plan_runs = frozenset().union(*(p.new_runs for p in plan)) if plan else frozenset()
    if single is not None and value_of(cands, single.new_runs) > value_of(cands, plan_runs):
        free = [p for p in plan if p.hours == 0]
        return _greedy(cands, prices, budget, start=single.new_runs, first=[*free, single])
    return plan


def _greedy(cands: Sequence[Candidate], prices: Mapping[Run, float], budget: float, *,
            start: frozenset[Run] = frozenset(), first: Sequence[Pick] = ()) -> list[Pick]:
    chosen, spent = frozenset(start), _cost(frozenset(start), prices)
    plan = list(first)
    done = {name for p in plan for name in p.settled}
    while True:
        best: tuple[float, float] | None = None
        best_pick: Pick | None = None
        for c in cands:
            if c.claim in done:
                continue
            new = c.runs - chosen
            hours = _cost(new, prices)
            if spent + hours > budget + 1e-9:
                continue
            after = chosen | new
            settled = tuple(o.claim for o in cands if o.claim not in done and o.runs <= after)
            gain = math.fsum(o.value for o in cands if o.claim in settled)
            ratio = gain / hours if hours > 0 else float("inf")
            key = (ratio, gain)  # ties: more value, then the first in ledger order
            if best is None or key > best:
                best, best_pick = key, Pick(c.claim, new, hours, settled)
        if best_pick is None:
            return plan
        plan.append(best_pick)
        chosen |= best_pick.new_runs
        spent += best_pick.hours
        done.update(best_pick.settled)


def _best_single(cands: Sequence[Candidate], prices: Mapping[Run, float], budget: float
                 ) -> Pick | None:
    best: Pick | None = None
    best_value = -1.0
    for c in cands:
        hours = _cost(c.runs, prices)
        if hours == 0 or hours > budget + 1e-9:
            continue
        settled = tuple(o.claim for o in covered(cands, c.runs))
        value = value_of(cands, c.runs)
        if value > best_value:
            best, best_value = Pick(c.claim, c.runs, hours, settled), value
    return best


def brute_force(cands: Sequence[Candidate], prices: Mapping[Run, float], budget: float
                ) -> tuple[float, frozenset[Run]]:
    """The optimum over every subset of claims: (value, runs). Exponential; for tests."""
    best = (0.0, frozenset[Run]())
    for k in range(1, len(cands) + 1):
        for subset in itertools.combinations(cands, k):
            runs = frozenset().union(*(c.runs for c in subset))
            if _cost(runs, prices) <= budget + 1e-9:
                value = value_of(cands, runs)
                if value > best[0] + 1e-12:
                    best = (value, runs)
    return best

"""How a plan spends its budget: settled claims first, per GPU-hour, then what is left.

Three passes of the greedy set-union knapsack (:func:`sharpness.planning.select.greedy`),
each starting from the runs the passes before it bought, so a run is paid once:

1. the claims settled at their stated power under the **conservative** reading of their seed
   spread (a cited ± read as the standard error of its seeds), the CPU-only, deterministic and
   timing claims among them; the value of a claim is its power, and the greedy buys the most
   settled claims per GPU-hour until nothing more fits;
2. the claims still left whose **SD reading** of the cited ± reaches the power with fewer
   seeds (:attr:`sharpness.planning.power.Design.fallback`): bought at those seeds where the
   budget allows no more, and said so in their row (their power under the SE reading stays
   printed beside it);
3. with what is left, the claims whose power is unknown (no effect or no spread at their
   scale), cheapest first, at the standard's minimum: pilots for sequential seeds. They
   count nothing.

:func:`leftover` says in words why the budget left is not spent: what the cheapest claim left
out would add, at which seeds, against what is left.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from sharpness.planning.power import Design, describe
from sharpness.planning.restrict import RunKey
from sharpness.planning.select import Candidate, Pick, greedy

#: how a claim bought at the SD reading's seeds is marked in its row
SD_ONLY = "bought at the SD reading's seeds"


def _runs(picks: Sequence[Pick]) -> frozenset[RunKey]:
    return frozenset().union(*(p.new_runs for p in picks)) if picks else frozenset()


def choose(needs: Mapping[str, Any], designs: Mapping[str, Design],
           runs_at: Callable[[Any, int], Any], prices: Mapping[RunKey, float], budget: float
           ) -> tuple[list[Pick], dict[str, Any], dict[str, Design]]:
    """The picks of the three passes (see the module) and each claim's needs and design as
    bought (a claim of pass 2 at its SD-reading seeds); ``runs_at(needs, seeds)``: a claim's
    needs with its seed lists at ``seeds`` seeds."""
    needs, designs = dict(needs), dict(designs)
    first = [Candidate(cid, n.runs, designs[cid].power) for cid, n in needs.items()
             if designs[cid].settled]
    picks = greedy(first, prices, budget)
    done = {cid for p in picks for cid in p.settled}
    alt_needs, alt_designs, second = {}, {}, []
    for cid, n in needs.items():
        d = designs[cid]
        if cid in done or d.fallback is None or not n.seed_paths:
            continue
        seeds, power, table = d.fallback
        alt_needs[cid] = runs_at(n, seeds)
        alt_designs[cid] = replace(d, seeds=seeds, power=power, settled=True, readings=table,
                                   basis=f"{SD_ONLY} ({seeds}; the conservative reading's "
                                         f"{d.seeds} do not fit the budget): {describe(table)}")
        second.append(Candidate(cid, alt_needs[cid].runs, power))
    more = greedy(second, prices, budget, start=_runs(picks)) if second else []
    for pick in more:
        for cid in pick.settled:
            needs[cid], designs[cid] = alt_needs[cid], alt_designs[cid]
    picks += more
    done |= {cid for p in more for cid in p.settled}
    chosen = _runs(picks)
    rest = sorted((cid for cid in needs if cid not in done),
                  key=lambda cid: math.fsum(prices[r] for r in needs[cid].runs - chosen))
    third = [Candidate(cid, needs[cid].runs, 0.0) for cid in rest]
    picks += greedy(third, prices, budget, start=chosen) if third else []
    return picks, needs, designs


def leftover(budget: float, spent: float, left: Sequence[Any]) -> str:
    """Why the budget left is not spent, in words (``left``: the plan's lines left out)."""
    from sharpness.cost.price import hours_text

    free = budget - spent
    if not left:
        return f"Unspent: {hours_text(free)} GPU-hours; every claim is bought."
    cheapest = min(left, key=lambda ln: ln.added_hours)
    settled = [ln for ln in left if ln.settled]
    text = (f"Unspent: {hours_text(free)} GPU-hours ({100 * spent / budget:.0f} % of the "
            f"budget spent) because no claim left out fits in it: the cheapest would add "
            f"{hours_text(cheapest.added_hours)} ({cheapest.claim})"
            if budget > 0 else "No GPU budget: only the CPU-only claims are built")
    if settled and budget > 0:
        best = min(settled, key=lambda ln: ln.added_hours)
        seeds = "/".join(str(n) for n in sorted({len(v) for v in best.seeds.values()}))
        text += (f"; the cheapest one that would be settled at its power, {best.claim}, "
                 f"would add {hours_text(best.added_hours)}"
                 + (f" at {seeds} seeds" if seeds else ""))
    return text + "."

"""The budgeted choice of claims: a hand-checked instance and brute force on random ones."""

from __future__ import annotations

import numpy as np
import pytest

from sharpness.planning.select import Candidate, brute_force, greedy, value_of


def _runs(plan):
    return frozenset().union(*(p.new_runs for p in plan)) if plan else frozenset()


def test_hand_instance_shares_runs_and_matches_brute_force():
    # r1 2 h, r2 3 h, r3 4.5 h, r4 10 h; budget 6.
    prices = {"r1": 2.0, "r2": 3.0, "r3": 4.5, "r4": 10.0}
    cands = [Candidate("A", frozenset({"r1"}), 1.0),
             Candidate("B", frozenset({"r1", "r2"}), 1.0),
             Candidate("C", frozenset({"r3"}), 1.0),
             Candidate("D", frozenset(), 1.0),
             Candidate("E", frozenset({"r4"}), 1.0)]
    plan = greedy(cands, prices, 6.0)
    # by hand: D is free; A buys 1 per 2 h (0.5/h), B then needs only r2 (1 per 3 h) and
    # fits (5 h); C (4.5 h) no longer fits, E never does. {r1, r3} would be 6.5 h > 6.
    assert [p.claim for p in plan] == ["D", "A", "B"]
    assert sum(p.hours for p in plan) == 5.0
    best, _ = brute_force(cands, prices, 6.0)
    assert value_of(cands, _runs(plan)) == best == 3.0


def test_a_shared_run_is_paid_once():
    prices = {"big": 10.0, "x": 1.0}
    cands = [Candidate(f"t{i}", frozenset({"big"}), 0.5) for i in range(4)]
    cands.append(Candidate("small", frozenset({"x"}), 1.0))
    plan = greedy(cands, prices, 10.5)
    # four claims on one 10 h run (value 2 for 10 h) beat nothing; with 'small' it is 11 h
    settled = {c for p in plan for c in p.settled}
    assert settled == {"t0", "t1", "t2", "t3"}
    assert sum(p.hours for p in plan) == 10.0


def test_greedy_against_brute_force_on_random_instances():
    rng = np.random.default_rng(0)
    ratios = []
    for _ in range(150):
        runs = [f"r{i}" for i in range(6)]
        prices = {r: float(rng.uniform(0.5, 5)) for r in runs}
        cands = [Candidate(f"c{j}", frozenset(r for r in runs if rng.random() < 0.35),
                           float(rng.uniform(0.1, 1))) for j in range(7)]
        budget = float(rng.uniform(2, 12))
        plan = greedy(cands, prices, budget)
        spent = sum(prices[r] for r in _runs(plan))
        assert spent <= budget + 1e-9
        assert abs(spent - sum(p.hours for p in plan)) < 1e-9  # each run paid once
        best, _ = brute_force(cands, prices, budget)
        got = value_of(cands, _runs(plan))
        assert got <= best + 1e-9
        ratios.append(got / best if best else 1.0)
    ratios = np.array(ratios)
    # greedy is a heuristic (the problem is NP-hard): on these instances it is optimal in
    # most and never far off
    # (measured: optimal in 139 of 150, mean ratio 0.993, worst 0.82)
    assert (ratios > 1 - 1e-9).mean() >= 0.85, ratios.mean()
    assert ratios.mean() >= 0.97
    assert ratios.min() >= 0.75


_TIE = """
from sharpness.planning.select import Candidate, greedy
prices = {"a1": 0.1, "a2": 0.2, "a3": 0.3, "b1": 0.6}
cands = [Candidate("A", frozenset({"a1", "a2", "a3"}), 1.0), Candidate("B", frozenset({"b1"}), 1.0)]
print(greedy(cands, prices, 0.6)[0].claim)
"""


@pytest.mark.e2e  # commands in fresh interpreters under other hash seeds
def test_a_tie_goes_the_same_way_whatever_the_hash_seed() -> None:
    """A costs 0.1 + 0.2 + 0.3 and B 0.6: a tie, which goes to the first in ledger order (A).
    Summed in a set's order, A's cost is 0.6000000000000001 under some hash seeds and B wins
    there; the planner sums exactly, so the plan (and its id) is the same in every process."""
    import os
    import subprocess
    import sys

    picks = set()
    for seed in range(8):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = subprocess.run([sys.executable, "-c", _TIE], env=env, capture_output=True,
                             text=True, check=True)
        picks.add(out.stdout.strip())
    assert picks == {"A"}

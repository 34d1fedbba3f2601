"""Sequential seeds: the group-sequential rule stops early on a large effect, runs to the
maximum on none, stops for budget, and its type-I error over simulated comparisons is the
alpha it states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sharpness.evidence.stats import INCONCLUSIVE, SUPPORTED, decide, t_interval
from sharpness.planning.driver import final_verdict, run_sequential, seed_overlay, seeds_for
from sharpness.planning.sequential import Design, t_from_row, type1_rate


def _row(diffs):
    """A ledger row as a paired-seed predicate writes it (t interval over seeds)."""
    iv = t_interval(diffs)
    return {"id": "x", "value": f"LE-SAM − SAM {iv.text()}", "verdict": decide(iv),
            "estimate": iv.estimate, "low": iv.low, "high": iv.high}


def _simulate(design, per_seed, budget=math.inf, hours_per_seed=1.0):
    ran = []

    def run_seeds(n):
        ran.append(n)

    def read_row():
        return _row(per_seed[: ran[-1]])
    looks = run_sequential(design, run_seeds=run_seeds, read_row=read_row,
                           hours_per_seed=hours_per_seed, budget=budget)
    return looks, ran


@pytest.mark.parametrize("spending", ["pocock", "obf"])
def test_large_effect_stops_at_three_seeds(spending):
    rng = np.random.default_rng(1)
    diffs = 5.0 + 0.01 * rng.standard_normal(10)  # d = 500
    looks, ran = _simulate(Design(3, 10, 1, 0.05, spending), diffs)
    assert ran == [3]
    assert looks[-1].decision == "decided"
    assert final_verdict(looks) == SUPPORTED


def test_no_effect_runs_to_the_maximum_and_is_inconclusive():
    rng = np.random.default_rng(2)
    diffs = rng.standard_normal(10)
    looks, ran = _simulate(Design(3, 10), diffs)
    assert ran == list(range(3, 11))
    assert looks[-1].decision == "stop: maximum"
    assert final_verdict(looks) == INCONCLUSIVE


def test_fixed_interval_alone_would_decide_where_the_rule_does_not():
    # at 3 seeds this effect excludes 0 from the plain 95% t interval but is far below the
    # sequential boundary: the rule adds seeds instead of deciding
    diffs = [1.0, 1.2, 1.4]
    row = _row(diffs)
    assert row["verdict"] == SUPPORTED
    design = Design(3, 10)
    t, n = t_from_row(row)
    assert n == 3 and abs(t - np.mean(diffs) / (np.std(diffs, ddof=1) / math.sqrt(3))) < 1e-9
    assert design.judge(t, 3, row["verdict"]).decision == "continue"


def test_budget_stops_the_extension():
    rng = np.random.default_rng(3)
    diffs = 0.3 + rng.standard_normal(10)
    looks, ran = _simulate(Design(3, 10), diffs, budget=3.5, hours_per_seed=1.0)
    assert ran == [3]
    assert looks[-1].decision == "stop: budget"
    assert final_verdict(looks) == INCONCLUSIVE


def test_excluded_seeds_use_the_stricter_boundary():
    design = Design(3, 10)
    assert design.boundary(2) == math.inf
    assert design.boundary(4) == design.boundaries[1] > design.boundaries[2]
    assert design.judge(1e9, 5, SUPPORTED, n_used=2).decision == "continue"


@pytest.mark.parametrize("spending", ["pocock", "obf"])
def test_type1_error_of_4000_null_comparisons_is_alpha(spending):
    design = Design(3, 10, 1, 0.05, spending)
    rate = type1_rate(design, comparisons=4000, seed=17)
    mc = 2.58 * math.sqrt(0.05 * 0.95 / 4000)  # 99% Monte-Carlo band
    assert rate <= 0.05 + mc
    assert rate >= 0.05 - mc  # and it spends what it states (not needlessly conservative)
    # looking at the plain 95% interval at every look would not hold alpha
    naive = Design(3, 10, 1, 0.05, spending)
    from scipy import stats
    naive.boundaries = tuple(float(stats.t.ppf(0.975, n - 1)) for n in naive.looks)
    assert type1_rate(naive, comparisons=4000, seed=17) > 0.05 + mc


def test_driver_decisions_match_the_vectorised_rule():
    """The driver's path (ledger row -> T -> boundary) decides as the simulation does."""
    design = Design(3, 6)
    rng = np.random.default_rng(5)
    for _ in range(60):
        diffs = 0.8 * rng.standard_normal() + rng.standard_normal(6)
        looks, ran = _simulate(design, diffs)
        ts = [np.mean(diffs[:n]) / (np.std(diffs[:n], ddof=1) / math.sqrt(n))
              for n in design.looks]
        cross = [abs(t) >= c for t, c in zip(ts, design.boundaries, strict=True)]
        expect = design.looks[cross.index(True)] if any(cross) else design.looks[-1]
        assert ran[-1] == expect


def test_seed_overlay_extends_the_profile_seeds():
    assert seeds_for([0, 1, 2], 5) == [0, 1, 2, 3, 4]
    assert seeds_for([7, 3], 3) == [7, 3, 8]
    out = seed_overlay({"lesam.groups.g.seeds": [0, 1, 2], "gradcam.seeds": [0, 1, 2]}, 4)
    assert out == {"lesam": {"groups": {"g": {"seeds": [0, 1, 2, 3]}}},
                   "gradcam": {"seeds": [0, 1, 2, 3]}}


def test_bad_design_is_refused():
    with pytest.raises(ValueError, match="min seeds"):
        Design(1, 10)
    with pytest.raises(ValueError, match="spending"):
        Design(3, 10, spending="haybittle")


def test_a_row_without_an_interval_is_named_in_the_look():
    def read_row():
        return {"id": "x", "value": "one seed", "verdict": INCONCLUSIVE}
    looks = run_sequential(Design(3, 4), run_seeds=lambda n: None, read_row=read_row,
                           hours_per_seed=0.0)
    assert [lk.seeds for lk in looks] == [3, 4]
    assert final_verdict(looks) == INCONCLUSIVE
    assert "no t interval over seeds" in looks[-1].note

"""Claim-level power by simulation, and seed spreads only from the claim's own scale."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from sharpness.evidence.stats import paired_t_power
from sharpness.planning import spread as spread_mod
from sharpness.planning.power import claim_power, design


@pytest.mark.parametrize(("d", "n"), [(0.5, 10), (1.0, 6), (1.5, 4)])
def test_one_part_without_a_family_is_the_paired_t_test(d, n):
    # the simulation of one unadjusted part matches the noncentral-t power (within ~3 se)
    exact = paired_t_power(d, n, float(stats.t.ppf(0.975, n - 1)))
    sims = 4000
    got = claim_power(d, 1.0, n, sims=sims)
    assert abs(got - exact) < 3 * math.sqrt(exact * (1 - exact) / sims) + 0.01


def test_every_part_and_holm_lower_the_claims_power():
    one = claim_power(1.0, 1.0, 8)
    three = claim_power(1.0, 1.0, 8, parts=3)
    holm = claim_power(1.0, 1.0, 8, parts=3, family=20)
    assert one > three > holm > 0
    seeded = [claim_power(1.0, 1.0, 8, seed=s) for s in (3, 3, 4)]
    assert seeded[0] == seeded[1] != seeded[2]  # the seed, not global state, draws it
    assert claim_power(-1.0, 1.0, 8) < 0.05  # the wrong side never supports the claim


def test_the_seeds_are_the_fewest_that_reach_the_power():
    row = {"value": "+1.0 [+0.0, +2.0] (95% CI, n=5 seeds) points", "low": 0.0, "high": 2.0}
    d = design("ls-imagenet-r50", 3, {"ls-imagenet-r50": row}, parts=2, family=10,
               ledger_profile="paper")
    sd = 1.0 / float(stats.t.ppf(0.975, 4)) * math.sqrt(5)
    assert d.power >= 0.8 and d.settled
    assert claim_power(0.71, sd, d.seeds - 1, parts=2, family=10) < 0.8
    assert "2 part(s) at Holm over 10 claims" in d.basis


def test_a_cited_spread_names_its_source_and_a_cpu_spread_is_refused(monkeypatch):
    entry = {"sd": [0.3, 0.4], "seeds": 5, "recipe": "ResNet-50 ImageNet 90 epochs",
             "source": "somebody/repo README.md table 2"}
    monkeypatch.setattr(spread_mod, "cited_spreads", lambda: {"imagenet_resnet50": entry})
    d = design("ls-imagenet-r50", 3, None)
    assert "somebody/repo README.md table 2" in d.spread and "sd 0.50" in d.spread
    assert d.settled and not d.sequential
    # an evidence-profile ledger gives no spread: the cited one is used, never the CPU one
    row = {"value": "+1.0 [-9.0, +11.0] (95% CI, n=5 seeds) points", "low": -9.0, "high": 11.0}
    same = design("ls-imagenet-r50", 3, {"ls-imagenet-r50": row}, ledger_profile="evidence")
    assert same.seeds == d.seeds and same.spread == d.spread


def test_without_a_spread_the_minimum_and_sequential(monkeypatch):
    monkeypatch.setattr(spread_mod, "cited_spreads", lambda: {})
    d = design("ls-imagenet-r50", 3, None)
    assert (d.seeds, d.power, d.settled, d.sequential) == (None, 0.0, False, True)
    assert "sequential: add seeds after the pilot" in d.basis
    assert "imagenet_resnet50" in d.spread  # the recipe whose entry would settle it


def test_a_spread_entry_without_its_source_is_refused(monkeypatch):
    from sharpness.planning import spread

    text = "x:\n  sd: [0.1, 0.2]\n  seeds: 3\n  recipe: r\n"

    class Files:
        def joinpath(self, _name):
            return self

        def read_text(self, _enc):
            return text

    monkeypatch.setattr(spread.resources, "files", lambda _pkg: Files())
    spread.cited_spreads.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"spreads.yaml: x: lacks \['source'\]"):
            spread.cited_spreads()
    finally:
        spread.cited_spreads.cache_clear()

"""Seeds at real power (both readings of a cited ±, the effect and half of it) and a plan that
spends its budget: settled claims first, the SD reading's seeds where the budget allows no
more, pilots with what is left, and the leftover said in words."""

from __future__ import annotations

import math

import pytest

from sharpness.planning import claims_plan as cp
from sharpness.planning import output as plan_output
from sharpness.planning.power import claim_power, design, holm_family
from sharpness.planning.spend import SD_ONLY, leftover
from sharpness.planning.spread import cited_spread, cited_spreads
from tests.catalog import CLAIMS as ALL_CLAIMS

CLAIMS = {c.id: c for c in ALL_CLAIMS}


@pytest.fixture(scope="module")
def paper(repo):
    from sharpness.config.profiles import load_profile

    return load_profile([str(repo / "workflow/config/paper.yaml")], None)


def test_a_cited_spread_has_both_readings():
    """±0.06 and ±0.14 over 3 seeds (CIFAR-100 PyramidNet): as SDs the difference's spread
    is their root sum of squares, as SEs of 3 seeds √3 times that."""
    entry = cited_spreads()["cifar100_pyramid"]
    s = cited_spread("ls-cifar100-pyramid")
    assert s is not None and s.sd == pytest.approx(math.hypot(*entry["sd"]))
    assert s.sd_se == pytest.approx(s.sd * math.sqrt(3)) and s.conservative == s.sd_se
    assert "read as SEs of 3 seeds" in s.source


def test_seeds_reach_the_power_under_the_conservative_reading():
    family = holm_family()
    d = design("ls-cifar100", 3, None, family=family)
    s = cited_spread("ls-cifar100")
    assert s is not None and d.settled and d.seeds is not None
    assert claim_power(1.34, s.sd_se, d.seeds, family=family) >= 0.8
    assert claim_power(1.34, s.sd_se, d.seeds - 1, family=family) < 0.8
    table = d.readings
    assert set(table) == {"effect, ± as SD", "effect, ± as SE", "half effect, ± as SD",
                          "half effect, ± as SE"}
    assert table["effect, ± as SD"] >= table["effect, ± as SE"] >= table["half effect, ± as SE"]
    assert table["effect, ± as SD"] >= table["half effect, ± as SD"]
    assert "under the conservative reading" in d.basis and "at half effect, ± as SE" in d.basis
    # where the SD reading asks fewer seeds, they are kept as the fallback the plan buys
    # when the budget allows no more (here it does not: 3 seeds are too few either way)
    assert d.fallback is None
    pyr = design("ls-cifar100-pyramid", 3, None, family=family)
    assert pyr.fallback is not None and pyr.seeds is not None
    assert pyr.fallback[0] < pyr.seeds and pyr.fallback[1] >= 0.8


def test_the_cifar100_rows_use_the_papers_cifar100_gain():
    for cid in ("ls-cifar100", "ls-cifar100-wrn", "ls-cifar100-pyramid"):
        d = design(cid, 3, None)
        assert d.effect.startswith("1.34 points") and "CIFAR-100" in d.effect, cid


def _plan(paper, budget):
    claims = [CLAIMS["eos-band"], CLAIMS["ls-cifar100-pyramid"], CLAIMS["ls-robust"]]
    designed = cp.designed_needs(claims, paper)
    prices = {r: 1.0 for n in designed[0].values() for r in n.runs}
    plan = cp.make_plan(claims, paper, budget, prices, dict.fromkeys(prices, "test"),
                        pricing="test", designed=designed)
    return plan, {ln.claim: ln for ln in plan.lines}, designed


def test_the_sd_reading_is_bought_where_the_budget_allows_no_more(paper):
    """At one GPU-hour a run: eos-band's 11 settings, then ls-cifar100-pyramid at the
    conservative reading's seeds if they fit, else at the SD reading's, then the pilot of
    ls-robust (power unknown) with what is left."""
    _, lines, designed = _plan(paper, 1000)
    d = designed[1]["ls-cifar100-pyramid"]
    assert d.fallback is not None
    big, small = 2 * d.seeds, 2 * d.fallback[0]  # SAM and LE-SAM per seed
    assert lines["ls-cifar100-pyramid"].runs == big
    assert not lines["ls-cifar100-pyramid"].basis.startswith(SD_ONLY)
    plan, lines, _ = _plan(paper, 11 + big - 1)
    pyr = lines["ls-cifar100-pyramid"]
    assert lines["eos-band"].planned and pyr.planned and pyr.settled and pyr.runs == small
    assert pyr.basis.startswith(SD_ONLY) and "± as SE" in pyr.basis
    assert [len(v) for v in pyr.seeds.values()] == [d.fallback[0]]
    text = plan_output.render(plan)
    assert "only under the SD reading of the cited ±" in text
    # ls-robust (power unknown) is bought last, with what is left, and never counted
    robust = lines["ls-robust"]
    assert not robust.settled
    plan, lines, _ = _plan(paper, 11 + small - 1)
    assert not lines["ls-cifar100-pyramid"].planned


def test_leftover_says_what_it_could_not_buy_and_why(paper):
    plan, lines, _ = _plan(paper, 12)
    left = [ln for ln in plan.lines if not ln.planned]
    text = leftover(plan.budget, plan.hours, left)
    assert text.startswith(f"Unspent: {plan.budget - plan.hours:.1f} GPU-hours")
    assert "no claim left out fits in it" in text and "ls-cifar100-pyramid" in text
    assert "would be settled at its power" in text
    assert leftover(10, 10, []) == "Unspent: 0 GPU-hours; every claim is bought."

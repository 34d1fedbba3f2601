"""The plan spends a GPU budget at the expected price of full-batch eos runs and states their
price at the step caps beside it."""

from __future__ import annotations

import pytest

from sharpness.claims.ledger import all_claims
from sharpness.planning import claims_plan as cp
from sharpness.planning import output as plan_output
from sharpness.planning.ledger import annotate
from sharpness.planning.power import Design


@pytest.fixture(scope="module")
def paper(repo):
    from sharpness.config.profiles import load_profile

    config = load_profile([str(repo / "workflow/config/paper.yaml")], None)
    claims = [c for c in all_claims() if c.id in ("eos-band-all", "eos-measures")]
    return config, claims, cp.claim_runs(claims, config)


def test_an_eos_row_shows_the_expected_price_and_the_cap(paper):
    """Each of eos-band-all's 15 runs (every setting) expected at 1 GPU-hour, 10 at its caps: a
    budget of 20 buys it (the choice spends the expected 15), and its row and the header say
    both."""
    config, claims, needs = paper
    band = next(c for c in claims if c.id == "eos-band-all")
    runs = needs["eos-band-all"].runs
    prices, caps = dict.fromkeys(runs, 1.0), dict.fromkeys(runs, 10.0)
    designed = ({"eos-band-all": needs["eos-band-all"]},
                {"eos-band-all": Design(None, 1.0, True, "deterministic")}, config)
    plan = cp.make_plan([band], config, 20, prices, dict.fromkeys(runs, "test"),
                        pricing="test", designed=designed, caps=caps)
    line, = plan.lines
    assert line.planned and line.gpu_hours == 15.0 and line.cap_hours == 150.0
    text = plan_output.render(plan)
    assert "| eos-band-all | 15 | – | – | 15.0 (≤ 150.0 at the step cap) (test) |" in text
    assert "15.0 GPU-hours expected, at most 150.0 at the step caps" in text
    record = plan.record(["paper.yaml"])
    assert record["gpu_hours_at_step_caps"] == 150.0
    row = {"id": "eos-band-all", "verdict": "supported", "provenance": "", "note": ""}
    assert "GPU-hours 15.0 (≤ 150.0 at the step cap) (test)" in annotate([row], record)[0]["note"]
    # at the caps alone (no expected count) the price is an upper limit, marked as before
    at_caps = cp.make_plan([band], config, 200, caps, dict.fromkeys(runs, "test"),
                           pricing="test", designed=designed)
    assert "| eos-band-all | 15 | – | – | ≤ 150.0 (test) |" in plan_output.render(at_caps)


@pytest.mark.workflow
def test_why_eos_band_all_is_not_bought_at_1000_gpu_hours(paper):
    """At the analytic prices of the paper profile, 1,000 GPU-hours buy eos-measures at its
    expected price but not eos-band-all (every setting): what it adds exceeds what is left,
    and nearly all of its expected price is runs that stay at their step caps (the ViT settings, whose P at
    5,000 examples is beyond max_steps or unmeasured, and the settings never measured)."""
    from sharpness.planning.prices import run_prices

    config, claims, needs = paper
    prices = run_prices(config, method="analytic",
                        only=needs["eos-band-all"].runs | needs["eos-measures"].runs)
    band, measures = needs["eos-band-all"].runs, needs["eos-measures"].runs
    expected = sum(prices.hours[r] for r in band)
    assert expected < sum(prices.caps[r] for r in band)
    assert sum(prices.hours[r] for r in measures) < 1000 < sum(prices.hours[r] for r in
                                                               measures | band)
    at_caps = sum(prices.hours[r] for r in band if prices.hours[r] >= 0.99 * prices.caps[r])
    assert at_caps > 0.95 * expected
    assert {r for r in band if prices.hours[r] >= 0.99 * prices.caps[r]} >= {
        ("eos", "setting/cifar5k_vit_ce"), ("eos", "setting/cifar5k_vit_mse")}

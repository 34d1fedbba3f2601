"""Every test over runs registers its smallest effect of interest (issue 48, point 4): the
rows decided by a threshold test over runs read it through one rule
(:func:`sharpness.claims.rules.over_runs_effect`), so a tight cluster just past the bound
(10.5, 10.6, 10.7 against 10) is no verdict, a row that registers none decides nothing and a
registered 0 states its reason."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sharpness.claims.ledger import evaluate_claim
from sharpness.claims.model import Claim, ItemData
from sharpness.claims.registration import helpers
from sharpness.claims.rules import over_runs_effect
from sharpness.errors import SharpnessError
from sharpness.evidence.stats import INCONCLUSIVE, SUPPORTED
from tests.catalog import CLAIMS as ALL_CLAIMS
from tests.claims import fixtures as fx

CLAIMS = {c.id: c for c in ALL_CLAIMS}


def _threshold_rows() -> list[Claim]:
    """The rows about runs whose predicate calls the threshold test over runs, found from
    their code (the helper scan is by name: a deterministic row whose local variable shares
    a predicate's name, `band` in eos-toy-tradeoff, is not a test over runs)."""
    return [c for c in CLAIMS.values() if c.test is not None and c.runs and any(
        key.endswith(".threshold_test") for key in helpers(c.test))]


def _with(claim: Claim, **params: Any) -> Claim:
    """``claim`` with its parameters changed (``None``: the key removed)."""
    merged = {**claim.params, **params}
    return dataclasses.replace(claim, params={k: v for k, v in merged.items() if v is not None})


def test_every_threshold_row_registers_its_smallest_effect() -> None:
    rows = _threshold_rows()
    assert {"ls-signal-sam", "ls-signal-curvature", "ls-signal-curvature-eval",
            "eos-band"} <= {c.id for c in rows}
    for c in rows:
        # the row reads it through the one rule (a row reading params["sesoi"] by hand, or
        # passing a margin of its own, would escape the checks below)
        assert any(key.endswith(".over_runs_effect") for key in helpers(c.test)), c.id
        effect = over_runs_effect(c.params)
        assert effect.registered and (effect.margin > 0 or c.params.get("sesoi_reason")), c.id


def test_the_rule_refuses_what_is_not_a_registration() -> None:
    assert not over_runs_effect({}).registered
    assert over_runs_effect({"sesoi": 0.5}).margin == 0.5
    zero = over_runs_effect({"sesoi": 0, "sesoi_reason": "any run past the bound is the claim"})
    assert zero.registered and "any run past the bound" in zero.note
    with pytest.raises(SharpnessError, match="sesoi 0 needs its reason"):
        over_runs_effect({"sesoi": 0})
    with pytest.raises(SharpnessError, match="finite ratio"):
        over_runs_effect({"sesoi": -0.1})


def _signal_sam(medians: list[float]) -> dict[str, ItemData]:
    """fig_signal whose SAM runs' early ⟨g,ε⟩ / |½εᵀHε| are ``medians`` (one per run)."""
    data = fx.signal(False, seeds=len(medians))
    df = data["lesam/fig_signal"].rows
    for seed, med in enumerate(medians):
        sam = (df["optimizer"] == "sam") & (df["seed"] == seed)
        df.loc[sam, "curvature"] = df.loc[sam, "g_dot_eps"] / med
    return data


def test_a_tight_cluster_just_past_the_bound_is_no_verdict_in_its_row() -> None:
    """ls-signal-sam (bound 10): medians 10.5, 10.6, 10.7 are supported by the bare t test;
    the registered smallest effect (a ratio of 1.5) makes them no verdict, and 30, 40, 50
    still decide."""
    claim = CLAIMS["ls-signal-sam"]
    tight = _signal_sam([10.5, 10.6, 10.7])
    row = evaluate_claim(claim, tight, "paper")
    assert row["verdict"] == INCONCLUSIVE and row["p_raw"] is not None, row["value"]
    reason = {"sesoi": 0, "sesoi_reason": "a test of the registration rule only"}
    bare = evaluate_claim(_with(claim, **reason), tight, "paper")
    assert bare["verdict"] == SUPPORTED  # what the sesoi refuses
    assert "smallest effect of interest 0: a test of the registration rule only" in bare["note"]
    assert evaluate_claim(claim, _signal_sam([30.0, 40.0, 50.0]), "paper")["verdict"] == SUPPORTED


@pytest.mark.parametrize(("cid", "build"), [
    ("ls-signal-sam", lambda: fx.signal(False)),
    ("ls-signal-curvature", lambda: fx.signal(False)),
    ("ls-signal-curvature-eval", lambda: fx.signal_eval(False)),
    ("eos-band", lambda: fx.phase(False)),
], ids=["ls-signal-sam", "ls-signal-curvature", "ls-signal-curvature-eval", "eos-band"])
def test_a_threshold_row_without_its_smallest_effect_decides_nothing(cid, build) -> None:
    claim = CLAIMS[cid]
    assert evaluate_claim(claim, build(), "paper")["verdict"] == SUPPORTED
    row = evaluate_claim(_with(claim, sesoi=None), build(), "paper")
    assert row["verdict"] == INCONCLUSIVE, row["value"]
    assert "no smallest effect of interest registered (params.sesoi)" in row["note"]
